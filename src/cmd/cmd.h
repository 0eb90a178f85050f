/*
 * cmd.h — the command table (as tmux's cmd-*.c).  Each subcommand lives in
 * src/cmd/<name>.c and exports one `const struct cmd_entry cmd_<name>_entry`;
 * cmd.c lists them.  An exec function parses its own options with
 * getopt_long (argv[0] is the command name) and returns an exit status:
 *
 *   0   success                       65  EX_DATAERR: input rejected
 *   1   failure (runtime)             70  EX_SOFTWARE: internal error
 *   2   usage error                   74  EX_IOERR: the database is damaged
 *                                     75  EX_TEMPFAIL: interrupted, resumable
 *
 * Global options are parsed by main.c into `struct cmd_globals`, which
 * commands borrow read-only.
 */
#ifndef LQ_CMD_CMD_H
#define LQ_CMD_CMD_H

#include <stdio.h>

#include "core/error.h"

#define EXIT_USAGE 2
#define EXIT_DATAERR 65
#define EXIT_SOFTWARE 70
#define EXIT_IOERR 74
#define EXIT_TEMPFAIL 75

struct cmd_globals {
	const char *db_path;	/* resolved queue database path */
	const char *device;	/* --device / LATENTQ_DEVICE, may be NULL */
	int verbose;		/* count of -v; -1 for -q */
};

struct cmd_entry {
	const char *name;
	const char *alias;	/* may be NULL */
	const char *usage;	/* arguments after the name, e.g. "[--json] JOB" */
	const char *summary;	/* one line for `latentq --help` */
	int hidden;		/* internal commands not listed in help */
	int (*exec)(const struct cmd_globals *g, int argc, char **argv);
};

/* Every entry, declared from commands.def. */
#define CMD(x) extern const struct cmd_entry cmd_##x##_entry;
#include "cmd/commands.def"
#undef CMD

/* The table, NULL-terminated. */
extern const struct cmd_entry *const cmd_table[];

/*
 * Finds a command by exact name, alias or unique prefix.  On failure prints
 * "unknown command" or "ambiguous command: candidates" to stderr and returns
 * NULL.
 */
const struct cmd_entry *cmd_find(const char *name);

/* Prints "usage: latentq NAME USAGE" to fp. */
void cmd_usage(const struct cmd_entry *entry, FILE *fp);

/*
 * Standard handling for a bad option or argument count: prints the message
 * (if any) and the usage to stderr and returns EXIT_USAGE.
 */
int cmd_misuse(const struct cmd_entry *entry, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

struct store;
/*
 * Opens the queue database named by the global options; on failure prints
 * the error and returns NULL.  Close with store_close().
 */
struct store *cmd_open_store(const struct cmd_globals *g);

/*
 * For commands that only read (status, show, list): the database opened
 * read-only (STORE_READ_ONLY), so they work on a file of mode 0444 or in a
 * read-only folder.  A database that does not exist yet is created by a
 * read-write open instead (an empty queue, as before).
 */
struct store *cmd_open_store_readonly(const struct cmd_globals *g);

/*
 * For workers and submit: opened with PRAGMA quick_check first
 * (STORE_READ_WRITE_CHECKED).  On failure prints the error, sets *rc to the
 * exit status (EXIT_IOERR for a damaged database) and returns NULL.
 */
struct store *cmd_open_store_checked(const struct cmd_globals *g, int *rc);

/* Exit status for a failed lq_status: 75 for RETRY, 1 otherwise. */
int cmd_exit_for(enum lq_status status);

/*
 * A user string (job name, error message, path) made safe for a terminal by
 * util_escape_control.  The result is owned by a small ring: valid until
 * CMD_ESC_SLOTS further calls, so one printf may take several.  NULL gives
 * "".  For human-readable output only; JSON output is escaped by cJSON.
 */
#define CMD_ESC_SLOTS 8
const char *cmd_esc(const char *s);

#endif
