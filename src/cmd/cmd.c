/* cmd.c — the command table and lookup (see cmd.h). */
#include <stdarg.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>

#include "cmd/cmd.h"
#include "core/util.h"
#include "store/store.h"

const struct cmd_entry *
cmd_find(const char *name)
{
	const struct cmd_entry *found = NULL;
	int matches = 0;
	size_t len = strlen(name);
	for (size_t i = 0; cmd_table[i] != NULL; i++) {
		const struct cmd_entry *e = cmd_table[i];
		if (strcmp(e->name, name) == 0 ||
		    (e->alias != NULL && strcmp(e->alias, name) == 0))
			return e;
	}
	for (size_t i = 0; cmd_table[i] != NULL; i++) {
		const struct cmd_entry *e = cmd_table[i];
		if (!e->hidden && len > 0 && strncmp(e->name, name, len) == 0) {
			found = e;
			matches++;
		}
	}
	if (matches == 1)
		return found;
	if (matches == 0) {
		fprintf(stderr, "latentq: unknown command: %s; see latentq --help\n",
		    name);
		return NULL;
	}
	fprintf(stderr, "latentq: ambiguous command: %s, could be:", name);
	for (size_t i = 0; cmd_table[i] != NULL; i++) {
		const struct cmd_entry *e = cmd_table[i];
		if (!e->hidden && strncmp(e->name, name, len) == 0)
			fprintf(stderr, " %s", e->name);
	}
	fputc('\n', stderr);
	return NULL;
}

void
cmd_usage(const struct cmd_entry *entry, FILE *fp)
{
	fprintf(fp, "usage: latentq %s%s%s\n", entry->name,
	    entry->usage[0] ? " " : "", entry->usage);
}

int
cmd_misuse(const struct cmd_entry *entry, const char *fmt, ...)
{
	if (fmt != NULL) {
		va_list ap;
		va_start(ap, fmt);
		fputs("latentq: ", stderr);
		vfprintf(stderr, fmt, ap);
		fputc('\n', stderr);
		va_end(ap);
	}
	cmd_usage(entry, stderr);
	return EXIT_USAGE;
}

struct store *
cmd_open_store(const struct cmd_globals *g)
{
	struct store *st = NULL;
	struct lq_error err;
	error_clear(&err);
	if (store_open(g->db_path, &st, &err) != LQ_OK) {
		error_print(&err, stderr);
		return NULL;
	}
	return st;
}

struct store *
cmd_open_store_readonly(const struct cmd_globals *g)
{
	if (access(g->db_path, F_OK) != 0)
		return cmd_open_store(g);
	struct store *st = NULL;
	struct lq_error err;
	error_clear(&err);
	if (store_open_mode(g->db_path, STORE_READ_ONLY, &st, &err) != LQ_OK) {
		error_print(&err, stderr);
		return NULL;
	}
	return st;
}

struct store *
cmd_open_store_checked(const struct cmd_globals *g, int *rc)
{
	struct store *st = NULL;
	struct lq_error err;
	error_clear(&err);
	enum lq_status s = store_open_mode(g->db_path, STORE_READ_WRITE_CHECKED,
	    &st, &err);
	if (s != LQ_OK) {
		error_print(&err, stderr);
		*rc = strcmp(err.code, "LQ-DB-004") == 0 ? EXIT_IOERR :
		    cmd_exit_for(s);
		return NULL;
	}
	return st;
}

int
cmd_exit_for(enum lq_status status)
{
	return status == LQ_RETRY ? EXIT_TEMPFAIL : 1;
}

const char *
cmd_esc(const char *s)
{
	static char *ring[CMD_ESC_SLOTS];
	static unsigned next;
	unsigned i = next++ % CMD_ESC_SLOTS;
	free(ring[i]);
	ring[i] = util_escape_control(s);
	return ring[i];
}
