/*
 * cmd.h — the command table (as tmux's cmd-*.c).  Each subcommand lives in
 * src/cmd/<name>.c and exports one `const struct cmd_entry cmd_<name>_entry`;
 * cmd.c lists them.  An exec function parses its own options with
 * getopt_long (argv[0] is the command name) and returns an exit status
 * from the one table in core/exit.def (sysexits: EXIT_USAGE 64,
 * EXIT_DATAERR 65, EXIT_NOINPUT 66, EXIT_UNAVAILABLE 69, EXIT_SOFTWARE 70,
 * EXIT_IOERR 74, EXIT_TEMPFAIL 75; EXIT_RUNTIME 1 where none fits).
 *
 * Global options are parsed by main.c into `struct cmd_globals`, which
 * commands borrow read-only.  Only commands whose entry sets `creates_db`
 * (submit, render, run, model) create a missing queue database; the others
 * fail on one with EXIT_NOINPUT.
 */
#ifndef LQ_CMD_CMD_H
#define LQ_CMD_CMD_H

#include <stdint.h>
#include <stdio.h>

#include "core/error.h"
#include "core/exit.h"

struct cmd_globals {
	const char *db_path;	/* resolved queue database path */
	const char *device;	/* --device / LATENTQ_DEVICE, may be NULL */
	int verbose;		/* count of -v; -1 for -q */
	int creates_db;		/* the command's entry may create the database */
};

struct cmd_entry {
	const char *name;
	const char *alias;	/* may be NULL */
	const char *usage;	/* arguments after the name, e.g. "[--json] JOB" */
	const char *summary;	/* one line for `latentq --help` */
	int hidden;		/* internal commands not listed in help */
	int creates_db;		/* may create a missing queue database */
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
 * Opens the queue database named by the global options (creating it only
 * for a command with creates_db); on failure prints the error and returns
 * NULL, and cmd_open_status() then gives the exit status for it
 * (lq_exit_for_error: 66 for a missing database, 74 for one that cannot be
 * opened, 65 for a newer schema).  Close with store_close().
 */
struct store *cmd_open_store(const struct cmd_globals *g);
int cmd_open_status(void);

/*
 * For commands that only read (status, show, list): the database opened
 * read-only (STORE_READ_ONLY), so they work on a file of mode 0444 or in a
 * read-only folder.  A database that does not exist is refused as by
 * cmd_open_store (EXIT_NOINPUT); cmd_open_status() gives the status.
 */
struct store *cmd_open_store_readonly(const struct cmd_globals *g);

/*
 * For workers and submit: opened with PRAGMA quick_check first
 * (STORE_READ_WRITE_CHECKED).  On failure prints the error, sets *rc to the
 * exit status (EXIT_IOERR for a damaged database) and returns NULL.
 */
struct store *cmd_open_store_checked(const struct cmd_globals *g, int *rc);

struct store_job;
/*
 * A job's last error as one line for a table cell or `show`:
 * "CODE (grade): message", control characters (newlines) turned into
 * spaces, a trailing " [CODE]" dropped, and cut at a word boundary with
 * "…" to at most `width` bytes (0: no limit).  Caller-owned; NULL when the
 * job has no last error.
 */
char *cmd_last_error(const struct store_job *j, size_t width);

/*
 * Outputs are checked, not assumed: each done job among ids[0..n) (every
 * done job when ids is NULL) whose recorded output is missing or changed
 * (size, and BLAKE2b-256 with `digests`) is queued again (store_redo_job)
 * with a "redo" line on stdout unless quiet: a re-decode when its final
 * checkpoint is kept, else a new render.  Errors are printed.
 */
void cmd_check_outputs(struct store *st, const int64_t *ids, size_t n,
    int digests, int quiet);

/* Exit status for a failed command (see lq_exit_for_error). */
int cmd_exit_for_error(const struct lq_error *err);

/*
 * A user string (job name, error message, path) made safe for a terminal by
 * util_escape_control.  The result is owned by a small ring: valid until
 * CMD_ESC_SLOTS further calls, so one printf may take several.  NULL gives
 * "".  For human-readable output only; JSON output is escaped by cJSON.
 */
#define CMD_ESC_SLOTS 8
const char *cmd_esc(const char *s);

#endif
