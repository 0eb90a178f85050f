/*
 * integrity.c — noticing and surviving a damaged queue database: PRAGMA
 * quick_check / integrity_check (SQLite's pages), the record check of both
 * backends (every checkpoint verified as a resume verifies it), and a
 * repair that copies what is readable into a new database.
 *
 * Debian 12's libsqlite3 (3.40) does not export the sqlite3_recover API
 * (it lives in ext/recover/, compiled into the sqlite3 shell's .recover
 * only), so store_repair takes the older route that the SQLite docs
 * describe for a damaged file: read each table through SQL, row by row,
 * and step over what cannot be read.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/util.h"
#include "store/checkpoints.h"
#include "store/jobs.h"
#include "store/store-int.h"

#define CHECK_MAX_LINES 100

/* SQLite's page check: PRAGMA quick_check or integrity_check. */
static enum lq_status
check_pages(struct store *st, int quick, char **problems, struct lq_error *err)
{
	char sql[48];
	snprintf(sql, sizeof(sql), "PRAGMA %s(%d)", quick ? "quick_check" :
	    "integrity_check", CHECK_MAX_LINES);
	sqlite3_stmt *s = NULL;
	int rc = sqlite3_prepare_v2(st->db, sql, -1, &s, NULL);
	struct strbuf sb = {0};
	int ok = 0, lines = 0;
	while (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
		const char *line = (const char *)sqlite3_column_text(s, 0);
		if (line == NULL)
			continue;
		if (lines == 0 && strcmp(line, "ok") == 0)
			ok = 1;
		strbuf_printf(&sb, "%s%s", lines ? "\n" : "", line);
		lines++;
	}
	if (rc == SQLITE_ROW || rc == SQLITE_DONE)
		rc = SQLITE_OK;
	/* SQLITE_CORRUPT (or NOTADB) from the check itself is a verdict too */
	const char *why = rc != SQLITE_OK ? sqlite3_errmsg(st->db) : NULL;
	char *text = strbuf_release(&sb);
	sqlite3_finalize(s);
	if (rc == SQLITE_OK && ok && lines == 1) {
		free(text);
		return LQ_OK;
	}
	int primary = sqlite3_errcode(st->db) & 0xff;
	if (rc != SQLITE_OK && (primary == SQLITE_BUSY || primary == SQLITE_LOCKED)) {
		free(text);
		return store_sql_error(st, sql, err);
	}
	if (why != NULL && text[0] == '\0') {
		free(text);
		text = xstrdup(why);
	}
	/* the first line in the message: the rest may be long */
	size_t first = strcspn(text, "\n");
	error_set(err, LQ_FAILED, "LQ-DB-004", "queue database %s fails its "
	    "integrity check (%s): %.*s%s", st->path, quick ? "quick_check" :
	    "integrity_check", (int)(first > 300 ? 300 : first), text,
	    text[first] ? " ..." : "");
	error_set_hint(err, "nothing was written to it; `latentq check "
	    "--repair` copies what is readable into a new database");
	if (problems)
		*problems = text;
	else
		free(text);
	return LQ_FAILED;
}

struct record_problems {
	struct strbuf text;
	int lines;
};

static void
note_checkpoint(int64_t job_id, int step, const char *problem, void *ud)
{
	struct record_problems *p = ud;
	if (p->lines++ < CHECK_MAX_LINES)
		strbuf_printf(&p->text, "%scheckpoint at step %d of job %lld: "
		    "%s", p->lines > 1 ? "\n" : "", step, (long long)job_id,
		    problem);
}

/* a job whose config is not the text its digest names */
static int
note_config(const struct store_job *job, void *ud)
{
	struct record_problems *p = ud;
	/* a job preflight rejected has no config to check */
	if (job->config_digest == NULL || job->config_digest[0] == '\0' ||
	    store_job_config_intact(job))
		return 0;
	if (p->lines++ < CHECK_MAX_LINES)
		strbuf_printf(&p->text, "%sjob %lld: its config is not the one "
		    "its digest %.12s names (changed outside latentq)",
		    p->lines > 1 ? "\n" : "", (long long)job->id,
		    job->config_digest);
	return 0;
}

/*
 * The record check, the same on both backends: what a worker verifies
 * before it resumes from a checkpoint, for every checkpoint, and before
 * it renders a job, for every job's config.
 */
static enum lq_status
check_records(struct store *st, char **problems, struct lq_error *err)
{
	struct record_problems p = {{0}, 0};
	int bad = 0;
	enum lq_status r = store_verify_checkpoints(st, note_checkpoint, &p,
	    &bad, err);
	int before = p.lines;
	if (r == LQ_OK)
		r = store_list_jobs(st, -1, note_config, &p, err);
	int configs = p.lines - before;
	if (r != LQ_OK || (bad == 0 && configs == 0)) {
		free(p.text.buf);
		return r;
	}
	/* the message names the checkpoints when any is corrupted (the
	 * text lists them first), else the configs */
	int n = bad > 0 ? bad : configs;
	char *text = strbuf_release(&p.text);
	size_t first = strcspn(text, "\n");
	error_set(err, LQ_FAILED, "LQ-DB-004", "queue database %s fails its "
	    "record check: %d %s%s %s: %.*s%s", st->path, n, bad > 0 ?
	    "checkpoint" : "job config", n == 1 ? " is" : "s are", bad > 0 ?
	    "corrupted" : "changed", (int)first, text,
	    text[first] ? " ..." : "");
	if (bad > 0)
		error_set_hint(err, "a worker resumes such a job from its newest "
		    "intact checkpoint (or step 0) and records a "
		    "checkpoint_corrupt event; the storage under the database "
		    "may be failing");
	else
		error_set_hint(err, "a worker refuses to render such a job "
		    "(LQ-RUN-CFG); submit its manifest again (--again) to "
		    "render it from a config latentq wrote");
	if (problems)
		*problems = text;
	else
		free(text);
	return LQ_FAILED;
}

enum lq_status
store_check(struct store *st, int quick, char **problems, struct lq_error *err)
{
	if (problems)
		*problems = NULL;
	/* PostgreSQL checks its own pages (data checksums, WAL replay) */
	enum lq_status r = st->db != NULL ? check_pages(st, quick, problems,
	    err) : LQ_OK;
	if (r != LQ_OK || quick)
		return r;
	return check_records(st, problems, err);
}

/* ---- repair ---------------------------------------------------------- */

/* 1 when `table` of connection db has a column `col`. */
static int
has_column(sqlite3 *db, const char *table, const char *col)
{
	sqlite3_stmt *s = NULL;
	int found = 0;
	if (sqlite3_prepare_v2(db, "SELECT 1 FROM pragma_table_info(?1) WHERE "
	    "name = ?2", -1, &s, NULL) == SQLITE_OK) {
		sqlite3_bind_text(s, 1, table, -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 2, col, -1, SQLITE_STATIC);
		found = sqlite3_step(s) == SQLITE_ROW;
	}
	sqlite3_finalize(s);
	return found;
}

/* Columns of `table` in dst that src has too, quoted and comma-separated;
 * *n gets their count.  NULL when none. */
static char *
common_columns(sqlite3 *dst, sqlite3 *src, const char *table, int *n)
{
	sqlite3_stmt *s = NULL;
	struct strbuf sb = {0};
	*n = 0;
	if (sqlite3_prepare_v2(dst, "SELECT name FROM pragma_table_info(?1) "
	    "ORDER BY cid", -1, &s, NULL) == SQLITE_OK) {
		sqlite3_bind_text(s, 1, table, -1, SQLITE_STATIC);
		while (sqlite3_step(s) == SQLITE_ROW) {
			const char *c = (const char *)sqlite3_column_text(s, 0);
			if (!has_column(src, table, c))
				continue;
			strbuf_printf(&sb, "%s\"%s\"", *n ? ", " : "", c);
			(*n)++;
		}
	}
	sqlite3_finalize(s);
	char *r = strbuf_release(&sb);
	if (*n == 0) {
		free(r);
		return NULL;
	}
	return r;
}

/*
 * The largest rowid worth probing for: max(rowid) when the table's last
 * leaf reads, else the file's size in bytes (no table of this schema holds
 * more rows than that).
 */
static int64_t
rowid_bound(sqlite3 *src, const char *table)
{
	char *sql = xasprintf("SELECT max(rowid) FROM \"%s\"", table);
	sqlite3_stmt *s = NULL;
	int64_t max = -1;
	if (sqlite3_prepare_v2(src, sql, -1, &s, NULL) == SQLITE_OK &&
	    sqlite3_step(s) == SQLITE_ROW)
		max = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	free(sql);
	if (max >= 0)
		return max;
	s = NULL;
	int64_t size = 0;
	if (sqlite3_prepare_v2(src, "SELECT page_count * page_size FROM "
	    "pragma_page_count, pragma_page_size", -1, &s, NULL) == SQLITE_OK &&
	    sqlite3_step(s) == SQLITE_ROW)
		size = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return size > 0 ? size : INT64_C(1) << 32;
}

/*
 * Copies `table` of connection src into dst row by row in rowid order.  After a
 * read error the scan restarts past the failing rowid, probing ahead in
 * growing steps until a row reads again (a corrupt page holds a run of
 * consecutive rowids).  Insert errors other than a constraint are fatal.
 */
static enum lq_status
copy_table(struct store *dst, sqlite3 *src, const char *table,
    struct store_repair_table *t, struct lq_error *err)
{
	sqlite3 *db = dst->db;
	int ncols;
	char *cols = common_columns(db, src, table, &ncols);
	if (cols == NULL)
		return LQ_OK;
	char *sel = xasprintf("SELECT rowid, %s FROM \"%s\" WHERE rowid >= ? "
	    "ORDER BY rowid", cols, table);
	struct strbuf ins = {0};
	strbuf_printf(&ins, "INSERT OR IGNORE INTO \"%s\"(rowid, %s) "
	    "VALUES (?", table, cols);
	for (int i = 0; i < ncols; i++)
		strbuf_printf(&ins, ", ?");
	strbuf_printf(&ins, ")");
	sqlite3_stmt *r = NULL, *w = NULL;
	enum lq_status st = LQ_OK;
	if (sqlite3_prepare_v2(src, sel, -1, &r, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, ins.buf, -1, &w, NULL) != SQLITE_OK) {
		/* the table's schema row itself is unreadable: nothing to copy */
		t->unreadable++;
		goto out;
	}
	int64_t bound = rowid_bound(src, table);
	int64_t from = INT64_MIN;
	for (;;) {
		sqlite3_reset(r);
		sqlite3_bind_int64(r, 1, from);
		int rc;
		int64_t last = from;
		int any = 0;
		while ((rc = sqlite3_step(r)) == SQLITE_ROW) {
			last = sqlite3_column_int64(r, 0);
			any = 1;
			sqlite3_reset(w);
			for (int i = 0; i <= ncols; i++)
				sqlite3_bind_value(w, i + 1,
				    sqlite3_column_value(r, i));
			int wrc = sqlite3_step(w);
			int wp = wrc & 0xff;
			if (wrc != SQLITE_DONE && wp != SQLITE_CONSTRAINT) {
				st = store_sql_error(dst, "INSERT (repair)", err);
				goto out;
			}
			if (wrc == SQLITE_DONE && sqlite3_changes(db) > 0)
				t->copied++;
		}
		if (rc == SQLITE_DONE)
			break;
		/* values of a row whose overflow page failed also surface
		 * here, as the scan's error */
		/* a read error: skip ahead past the last row read */
		t->unreadable++;
		int64_t next = any || from != INT64_MIN ? last + 1 : 1;
		int64_t step = 1;
		int found = 0;
		while (next <= bound) {
			sqlite3_reset(r);
			sqlite3_bind_int64(r, 1, next);
			int prc = sqlite3_step(r);
			if (prc == SQLITE_ROW || prc == SQLITE_DONE) {
				found = prc == SQLITE_ROW;
				break;
			}
			next += step;
			if (step < (INT64_C(1) << 40))
				step *= 2;
		}
		if (!found)
			break;
		from = next;
	}
out:
	sqlite3_finalize(r);
	sqlite3_finalize(w);
	free(ins.buf);
	free(sel);
	free(cols);
	return st;
}

/* Deletes rows whose foreign keys name a lost parent, until none do. */
static enum lq_status
drop_orphans(struct store *dst, struct store_repair_table *tables, size_t n,
    struct lq_error *err)
{
	for (int round = 0; round < 16; round++) {
		sqlite3_stmt *s = NULL;
		if (sqlite3_prepare_v2(dst->db, "PRAGMA foreign_key_check",
		    -1, &s, NULL) != SQLITE_OK)
			return store_sql_error(dst, "PRAGMA foreign_key_check", err);
		int found = 0;
		while (sqlite3_step(s) == SQLITE_ROW) {
			const char *tab = (const char *)sqlite3_column_text(s, 0);
			int64_t rowid = sqlite3_column_int64(s, 1);
			char *del = xasprintf("DELETE FROM \"%s\" WHERE "
			    "rowid = %lld", tab, (long long)rowid);
			if (sqlite3_exec(dst->db, del, NULL, NULL, NULL) ==
			    SQLITE_OK && sqlite3_changes(dst->db) > 0) {
				found = 1;
				for (size_t i = 0; i < n; i++) {
					if (strcmp(tables[i].name, tab) == 0) {
						tables[i].dropped++;
						tables[i].copied--;
					}
				}
			}
			free(del);
		}
		sqlite3_finalize(s);
		if (!found)
			return LQ_OK;
	}
	return LQ_OK;
}

enum lq_status
store_repair(const char *src, const char *dst_path,
    struct store_repair_table **tables, size_t *n, struct lq_error *err)
{
	*tables = NULL;
	*n = 0;
	if (store_is_postgresql(src) || store_is_postgresql(dst_path)) {
		error_set(err, LQ_FAILED, "LQ-DB-006", "repair copies SQLite "
		    "files, and a PostgreSQL database was named");
		error_set_hint(err, "PostgreSQL recovers itself from its WAL; "
		    "use pg_dump / pg_restore for copies");
		return LQ_FAILED;
	}
	struct stat sb;
	if (stat(dst_path, &sb) == 0 || errno != ENOENT)
		return error_set(err, LQ_FAILED, "LQ-DB-006", "%s already "
		    "exists; the repaired copy goes to a new file", dst_path);
	if (access(src, R_OK) != 0)
		return error_set(err, LQ_FAILED, "LQ-DB-006", "cannot read %s: "
		    "%s", src, strerror(errno));
	struct store *dst = NULL;
	enum lq_status s = store_open(dst_path, &dst, err);
	if (s != LQ_OK) {
		unlink(dst_path);
		return s;
	}
	/* src on its own read-only connection: its errors are the rows it
	 * loses, never the new database's */
	char *uri = store_file_uri(src, "mode=ro");
	sqlite3 *sdb = NULL;
	int rc = sqlite3_open_v2(uri, &sdb, SQLITE_OPEN_READONLY |
	    SQLITE_OPEN_URI, NULL);
	sqlite3_free(uri);
	struct store_repair_table *t = NULL;
	size_t nt = 0;
	if (rc != SQLITE_OK) {
		s = error_set(err, LQ_FAILED, "LQ-DB-006", "cannot open %s: %s",
		    src, sdb ? sqlite3_errmsg(sdb) : sqlite3_errstr(rc));
		goto fail;
	}
	if ((s = store_exec(dst, "PRAGMA foreign_keys = OFF", err)) != LQ_OK)
		goto fail;
	/* the tables of this binary's schema, in creation order */
	sqlite3_stmt *q = NULL;
	if (sqlite3_prepare_v2(dst->db, "SELECT name FROM sqlite_schema "
	    "WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY rowid",
	    -1, &q, NULL) != SQLITE_OK) {
		s = store_sql_error(dst, "SELECT sqlite_schema", err);
		goto fail;
	}
	while (sqlite3_step(q) == SQLITE_ROW) {
		t = xrealloc(t, (nt + 1) * sizeof(*t));
		memset(&t[nt], 0, sizeof(*t));
		snprintf(t[nt].name, sizeof(t[nt].name), "%s",
		    (const char *)sqlite3_column_text(q, 0));
		nt++;
	}
	sqlite3_finalize(q);
	if ((s = store_begin(dst, err)) != LQ_OK)
		goto fail;
	for (size_t i = 0; i < nt; i++) {
		if ((s = copy_table(dst, sdb, t[i].name, &t[i], err)) != LQ_OK) {
			store_rollback(dst);
			goto fail;
		}
	}
	if ((s = drop_orphans(dst, t, nt, err)) != LQ_OK ||
	    (s = store_commit(dst, err)) != LQ_OK)
		goto fail;
	sqlite3_close_v2(sdb);
	sdb = NULL;
	if ((s = store_exec(dst, "PRAGMA foreign_keys = ON", err)) != LQ_OK ||
	    (s = store_check(dst, 0, NULL, err)) != LQ_OK)
		goto fail;
	store_close(dst);
	*tables = t;
	*n = nt;
	return LQ_OK;
fail:
	sqlite3_close_v2(sdb);
	free(t);
	store_close(dst);
	unlink(dst_path);
	char *wal = xasprintf("%s-wal", dst_path), *shm = xasprintf("%s-shm",
	    dst_path);
	unlink(wal);
	unlink(shm);
	free(wal);
	free(shm);
	return s;
}
