/* cmd.c — the command table and lookup (see cmd.h). */
#include <stdarg.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>

#include "cmd/cmd.h"
#include "core/util.h"
#include "core/digest.h"
#include "store/checkpoints.h"
#include "store/jobs.h"
#include "store/store.h"
#include "store/transfer.h"

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

static int open_status = EXIT_IOERR;

int
cmd_open_status(void)
{
	return open_status;
}

struct store *
cmd_open_store(const struct cmd_globals *g)
{
	struct store *st = NULL;
	struct lq_error err;
	error_clear(&err);
	enum lq_status r = g->creates_db ? store_open(g->db_path, &st, &err) :
	    store_open_existing(g->db_path, &st, &err);
	if (r != LQ_OK) {
		error_print(&err, stderr);
		open_status = cmd_exit_for_error(&err);
		return NULL;
	}
	return st;
}

struct store *
cmd_open_store_readonly(const struct cmd_globals *g)
{
	if (!store_is_postgresql(g->db_path) && access(g->db_path, F_OK) != 0)
		return cmd_open_store(g);
	struct store *st = NULL;
	struct lq_error err;
	error_clear(&err);
	if (store_open_mode(g->db_path, STORE_READ_ONLY, &st, &err) != LQ_OK) {
		error_print(&err, stderr);
		open_status = cmd_exit_for_error(&err);
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
		/* a damaged database (LQ-DB-004) is EXIT_IOERR by the table */
		*rc = open_status = cmd_exit_for_error(&err);
		return NULL;
	}
	return st;
}

int
cmd_exit_for_error(const struct lq_error *err)
{
	return lq_exit_for_error(err);
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
char *
cmd_last_error(const struct store_job *j, size_t width)
{
	if (j->error_message == NULL && j->error_code == NULL)
		return NULL;
	const char *code = j->error_code ? j->error_code : "";
	char *msg = xstrdup(j->error_message ? j->error_message : "");
	/* older records end with error_format's " [CODE]": the code is shown */
	size_t len = strlen(msg), cl = strlen(code);
	if (cl > 0 && len >= cl + 3 && msg[len - 1] == ']' &&
	    strncmp(msg + len - cl - 3, " [", 2) == 0 &&
	    strncmp(msg + len - cl - 1, code, cl) == 0)
		msg[len - cl - 3] = '\0';
	/* and some begin with it ("LQ-X: ...", preflight's "error LQ-X: ") */
	const char *body = msg;
	if (cl > 0) {
		if (strncmp(body, "error ", 6) == 0 && strncmp(body + 6, code, cl) == 0)
			body += 6;
		if (strncmp(body, code, cl) == 0 && body[cl] == ':')
			body += cl + 1;
		while (*body == ' ')
			body++;
	}
	char *out;
	if (cl > 0 && j->error_grade != NULL)
		out = xasprintf("%s (%s)%s%s", code, j->error_grade,
		    *body ? ": " : "", body);
	else if (cl > 0)
		out = xasprintf("%s%s%s", code, *body ? ": " : "", body);
	else
		out = xstrdup(body);
	free(msg);
	/* one line: control characters become spaces, runs of them one */
	char *w = out;
	for (const char *r = out; *r; r++) {
		unsigned char c = (unsigned char)*r;
		if (c < 0x20 || c == 0x7f) {
			if (w > out && w[-1] != ' ')
				*w++ = ' ';
		} else {
			*w++ = (char)c;
		}
	}
	*w = '\0';
	len = strlen(out);
	if (width > 4 && len > width) {
		/* "…" is 3 bytes; cut at the last space before the limit */
		size_t cut = width - 3;
		while (cut > width / 2 && out[cut] != ' ')
			cut--;
		if (out[cut] != ' ')
			cut = width - 3;
		while (cut > 0 && ((unsigned char)out[cut] & 0xc0) == 0x80)
			cut--;	/* never inside a UTF-8 sequence */
		while (cut > 0 && out[cut - 1] == ' ')
			cut--;
		memcpy(out + cut, "\xe2\x80\xa6", 4);
	}
	return out;
}

/* A done job's outputs that are missing or changed (paths, problems). */
struct redo_ctx {
	const struct store_job *job;
	size_t n;
	char **path;
	const char **problem;
};

static void
note_bad_output(const struct store_artifact *a, const char *problem, void *ud)
{
	struct redo_ctx *c = ud;
	c->path = xrealloc(c->path, (c->n + 1) * sizeof(*c->path));
	c->problem = xrealloc(c->problem, (c->n + 1) * sizeof(*c->problem));
	c->path[c->n] = xstrdup(a->path);
	c->problem[c->n++] = problem;
}

/*
 * 1 when the changed file at `path` is another job's recorded output of
 * the same path (two jobs writing one file: the later render replaced
 * the earlier's), that job's id in *id and its name in name (n bytes):
 * re-decoding over it would only start the two jobs taking turns.
 */
static int
held_by_other(struct store *st, int64_t self, const char *path,
    int64_t *id, char *name, size_t n)
{
	char cur[DIGEST_HEX_SIZE];
	struct lq_error err;
	error_clear(&err);
	*id = 0;
	return digest_file(path, cur, &err) == LQ_OK &&
	    store_find_other_artifact(st, path, cur, self, id, name, n,
	    &err) == LQ_OK && *id != 0;
}

static int
newest_step(const struct store_checkpoint *cp, void *ud)
{
	*(int *)ud = cp->step;
	return 1;
}

static int
collect_done(const struct store_job *j, void *ud)
{
	struct { int64_t *v; size_t n; } *ids = ud;
	ids->v = xrealloc(ids->v, (ids->n + 1) * sizeof(int64_t));
	ids->v[ids->n++] = j->id;
	return 0;
}

void
cmd_check_outputs(struct store *st, const int64_t *ids, size_t n, int digests,
    int quiet)
{
	struct { int64_t *v; size_t n; } all = {NULL, 0};
	if (ids == NULL) {
		struct lq_error err;
		error_clear(&err);
		if (store_list_jobs(st, JOB_STATE_DONE, collect_done, &all, &err) !=
		    LQ_OK)
			error_print(&err, stderr);
		ids = all.v;
		n = all.n;
	}
	for (size_t i = 0; i < n; i++) {
		struct store_job j;
		struct lq_error err;
		error_clear(&err);
		if (store_get_job(st, ids[i], &j, &err) != LQ_OK)
			continue;
		struct redo_ctx c = {&j, 0, NULL, NULL};
		int bad = 0, last = 0;
		char problem[600] = "";
		if (j.state == JOB_STATE_DONE &&
		    store_check_artifacts(st, j.id, digests, note_bad_output, &c,
		    &bad, &err) == LQ_OK) {
			bad = 0;
			for (size_t k = 0; k < c.n; k++) {
				int64_t hid;
				char hname[128];
				if (strcmp(c.problem[k], "changed") == 0 &&
				    held_by_other(st, j.id, c.path[k], &hid, hname,
				    sizeof(hname))) {
					if (!quiet)
						printf("kept      %-6lld %-24s %s holds "
						    "job %lld (%s)'s output, the same "
						    "path: not re-decoding over it\n",
						    (long long)j.id, cmd_esc(j.name),
						    cmd_esc(c.path[k]), (long long)hid,
						    cmd_esc(hname));
					continue;
				}
				if (bad++ == 0)
					snprintf(problem, sizeof(problem), "%s %s",
					    c.path[k], c.problem[k]);
			}
		}
		if (bad > 0 && err.status == LQ_OK &&
		    store_list_checkpoints(st, j.id, newest_step, &last, &err) ==
		    LQ_OK && store_redo_job(st, j.id, problem, &err) == LQ_OK) {
			if (!quiet)
				printf("redo      %-6lld %-24s %s: %s\n", (long long)j.id,
				    cmd_esc(j.name), problem, last == j.total_steps ?
				    "re-decoding from its final checkpoint" :
				    "no final checkpoint kept; rendering it again");
		} else if (err.status != LQ_OK) {
			error_print(&err, stderr);
		}
		for (size_t k = 0; k < c.n; k++)
			free(c.path[k]);
		free(c.path);
		free(c.problem);
		store_job_clear(&j);
	}
	free(all.v);
	fflush(stdout);
}

