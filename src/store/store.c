/*
 * store.c — opening the queue database, migrations, transactions, and the
 * small caches (pipeline, text).  See store.h.
 *
 * Migrations are the files schema/NNNN_*.sql, embedded at build time in
 * order; file NNNN brings the database to user_version NNNN.  Each one runs
 * in its own transaction with the user_version bump, so a crash mid-upgrade
 * leaves the previous version intact.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/embed.h"
#include "core/util.h"
#include "store/store-int.h"

extern const struct embed_file store_migrations[];

#define BUSY_TIMEOUT_MS 10000

static int migration_limit = -1;

void
store_set_migration_limit(int version)
{
	migration_limit = version;
}

sqlite3 *
store_db(struct store *st)
{
	return st->db;
}

const char *
store_path(const struct store *st)
{
	return st->path;
}

enum lq_status
store_sql_error(struct store *st, const char *call, struct lq_error *err)
{
	int code = sqlite3_extended_errcode(st->db);
	int primary = code & 0xff;
	if (primary == SQLITE_FULL || primary == SQLITE_IOERR) {
		/* A full or failing disk is not bad input: RETRY, naming errno
		 * (nothing of the failed transaction was committed). */
		int e = sqlite3_system_errno(st->db);
		if (e == 0 && primary == SQLITE_FULL)
			e = ENOSPC;	/* SQLite's unix VFS clears errno for FULL */
		error_set(err, LQ_RETRY, STORE_CODE_STORAGE, "%s failed on %s: %s"
		    "%s%s", call, st->path, sqlite3_errmsg(st->db),
		    e ? ": " : "", e ? strerror(e) : "");
		error_set_hint(err, "free space on the database's file system; "
		    "what was committed before is kept");
		return LQ_RETRY;
	}
	enum lq_status status = (primary == SQLITE_BUSY || primary == SQLITE_LOCKED)
	    ? LQ_RETRY : LQ_FAILED;
	return error_set(err, status, "LQ-DB-001", "%s failed on %s: %s", call,
	    st->path, sqlite3_errmsg(st->db));
}

sqlite3_stmt *
store_prepare(struct store *st, const char *sql, struct lq_error *err)
{
	sqlite3_stmt *s = NULL;
	if (sqlite3_prepare_v2(st->db, sql, -1, &s, NULL) != SQLITE_OK) {
		store_sql_error(st, "sqlite3_prepare_v2", err);
		return NULL;
	}
	return s;
}

sqlite3_stmt *
store_prepare_cached(struct store *st, const char *sql, struct lq_error *err)
{
	size_t i;
	for (i = 0; i < STORE_STMT_CACHE && st->cache[i].sql != NULL; i++)
		if (st->cache[i].sql == sql || strcmp(st->cache[i].sql, sql) == 0)
			return st->cache[i].stmt;
	sqlite3_stmt *s = NULL;
	if (sqlite3_prepare_v3(st->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &s,
	    NULL) != SQLITE_OK) {
		store_sql_error(st, "sqlite3_prepare_v3", err);
		return NULL;
	}
	LQ_ASSERT(i < STORE_STMT_CACHE);	/* raise STORE_STMT_CACHE */
	st->cache[i].sql = sql;
	st->cache[i].stmt = s;
	return s;
}

void
store_done(sqlite3_stmt *s)
{
	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
}

enum lq_status
store_step_done(struct store *st, sqlite3_stmt *s, const char *what,
    struct lq_error *err)
{
	int rc = sqlite3_step(s);
	store_done(s);
	if (rc != SQLITE_DONE)
		return store_sql_error(st, what, err);
	return LQ_OK;
}

enum lq_status
store_exec(struct store *st, const char *sql, struct lq_error *err)
{
	char *msg = NULL;
	if (sqlite3_exec(st->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
		enum lq_status s = store_sql_error(st, "sqlite3_exec", err);
		sqlite3_free(msg);
		return s;
	}
	return LQ_OK;
}

void
store_bind_text(sqlite3_stmt *s, int i, const char *v)
{
	if (v == NULL)
		sqlite3_bind_null(s, i);
	else
		sqlite3_bind_text(s, i, v, -1, SQLITE_TRANSIENT);
}

char *
store_column_text(sqlite3_stmt *s, int i)
{
	const unsigned char *t = sqlite3_column_text(s, i);
	return t != NULL ? xstrdup((const char *)t) : NULL;
}

int
store_schema_latest(void)
{
	int latest = 0;
	for (const struct embed_file *f = store_migrations; f->name; f++)
		latest = atoi(f->name);
	return latest;
}

int
store_schema_version(struct store *st)
{
	sqlite3_stmt *s = NULL;
	int v = -1;
	if (sqlite3_prepare_v2(st->db, "PRAGMA user_version", -1, &s, NULL) ==
	    SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
		v = sqlite3_column_int(s, 0);
	sqlite3_finalize(s);
	return v;
}

static enum lq_status
migrate(struct store *st, struct lq_error *err)
{
	int have = store_schema_version(st);
	int latest = store_schema_latest();
	if (have < 0)
		return store_sql_error(st, "PRAGMA user_version", err);
	if (have > latest) {
		error_set(err, LQ_FAILED, "LQ-DB-002",
		    "queue database %s has schema version %d, newer than this "
		    "latentq knows (%d)", st->path, have, latest);
		error_set_hint(err, "use a newer latentq, or another database "
		    "with --db");
		return LQ_FAILED;
	}
	for (const struct embed_file *f = store_migrations; f->name; f++) {
		int version = atoi(f->name);
		if (version <= have)
			continue;
		if (migration_limit >= 0 && version > migration_limit)
			break;
		enum lq_status s = store_begin(st, err);
		if (s != LQ_OK)
			return s;
		/* Re-check under the write lock: another process may have migrated. */
		if (store_schema_version(st) >= version) {
			store_rollback(st);
			continue;
		}
		char pragma[64];
		snprintf(pragma, sizeof(pragma), "PRAGMA user_version = %d", version);
		if ((s = store_exec(st, (const char *)f->data, err)) != LQ_OK ||
		    (s = store_exec(st, pragma, err)) != LQ_OK) {
			store_rollback(st);
			char *why = xstrdup(err->message);
			error_set(err, s, "LQ-DB-003", "migration %s: %.600s",
			    f->name, why);
			free(why);
			return s;
		}
		if ((s = store_commit(st, err)) != LQ_OK)
			return s;
	}
	return LQ_OK;
}

enum lq_status
store_open(const char *path, struct store **out, struct lq_error *err)
{
	struct store *st = xcalloc(1, sizeof(*st));
	st->path = xstrdup(path);
	*out = NULL;
	int rc = sqlite3_open_v2(path, &st->db,
	    SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
	    NULL);
	if (rc != SQLITE_OK) {
		error_set(err, LQ_FAILED, "LQ-DB-001",
		    "cannot open queue database %s: %s", path,
		    st->db ? sqlite3_errmsg(st->db) : sqlite3_errstr(rc));
		store_close(st);
		return LQ_FAILED;
	}
	sqlite3_busy_timeout(st->db, BUSY_TIMEOUT_MS);
	/*
	 * 64 KiB pages: a checkpointed latent is megabytes; with 4 KiB pages
	 * each commit costs several times more (measured in issue 8).  Only
	 * takes effect on a new, empty database, before WAL.
	 * synchronous=FULL: a committed checkpoint survives power loss.
	 */
	enum lq_status s;
	if ((s = store_exec(st, "PRAGMA page_size = 65536;", err)) != LQ_OK ||
	    (s = store_exec(st, "PRAGMA journal_mode = WAL;", err)) != LQ_OK ||
	    (s = store_exec(st, "PRAGMA synchronous = FULL;", err)) != LQ_OK ||
	    /* Debian's SQLite zeroes freed pages by default: pruning an old
	     * checkpoint then rewrites megabytes.  FAST still scrubs what it
	     * can without extra I/O. */
	    (s = store_exec(st, "PRAGMA secure_delete = FAST;", err)) != LQ_OK ||
	    (s = store_exec(st, "PRAGMA foreign_keys = ON;", err)) != LQ_OK ||
	    (s = migrate(st, err)) != LQ_OK) {
		store_close(st);
		return s;
	}
	*out = st;
	return LQ_OK;
}

void
store_close(struct store *st)
{
	if (st == NULL)
		return;
	for (size_t i = 0; i < STORE_STMT_CACHE; i++)
		sqlite3_finalize(st->cache[i].stmt);
	sqlite3_close_v2(st->db);
	free(st->lease_owner);
	free(st->path);
	free(st);
}

enum lq_status
store_begin(struct store *st, struct lq_error *err)
{
	if (st->txn_depth++ > 0)
		return LQ_OK;
	enum lq_status s = store_exec(st, "BEGIN IMMEDIATE", err);
	if (s != LQ_OK)
		st->txn_depth = 0;
	return s;
}

enum lq_status
store_commit(struct store *st, struct lq_error *err)
{
	LQ_ASSERT(st->txn_depth > 0);
	if (--st->txn_depth > 0)
		return LQ_OK;
	st->lease_checked = 0;
	enum lq_status s = store_exec(st, "COMMIT", err);
	if (s != LQ_OK) {
		sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
	}
	return s;
}

void
store_rollback(struct store *st)
{
	if (st->txn_depth == 0)
		return;
	st->txn_depth = 0;
	st->lease_checked = 0;
	sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
}

enum lq_status
store_get_pipeline_cache(struct store *st, const char *fingerprint, void **blob,
    size_t *size, struct lq_error *err)
{
	*blob = NULL;
	*size = 0;
	sqlite3_stmt *s = store_prepare(st,
	    "SELECT data FROM pipeline_cache WHERE fingerprint = ?", err);
	if (s == NULL)
		return err->status;
	store_bind_text(s, 1, fingerprint);
	int rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		size_t n = (size_t)sqlite3_column_bytes(s, 0);
		*blob = xmalloc(n);
		memcpy(*blob, sqlite3_column_blob(s, 0), n);
		*size = n;
	}
	sqlite3_finalize(s);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return store_sql_error(st, "SELECT pipeline_cache", err);
	return LQ_OK;
}

enum lq_status
store_put_pipeline_cache(struct store *st, const char *fingerprint,
    const void *blob, size_t size, struct lq_error *err)
{
	sqlite3_stmt *s = store_prepare(st,
	    "INSERT OR REPLACE INTO pipeline_cache(fingerprint, data, created_at) "
	    "VALUES (?, ?, ?)", err);
	if (s == NULL)
		return err->status;
	store_bind_text(s, 1, fingerprint);
	sqlite3_bind_blob64(s, 2, blob, size, SQLITE_TRANSIENT);
	sqlite3_bind_double(s, 3, util_now());
	int rc = sqlite3_step(s);
	sqlite3_finalize(s);
	if (rc != SQLITE_DONE)
		return store_sql_error(st, "INSERT pipeline_cache", err);
	return LQ_OK;
}

enum lq_status
store_get_text_cache(struct store *st, const char *encoder_digest,
    const char *tokens_digest, void **data, size_t *size, char **shape,
    struct lq_error *err)
{
	*data = NULL;
	*size = 0;
	if (shape != NULL)
		*shape = NULL;
	sqlite3_stmt *s = store_prepare(st,
	    "SELECT data, shape FROM text_cache WHERE encoder_digest = ? AND "
	    "tokens_digest = ?", err);
	if (s == NULL)
		return err->status;
	store_bind_text(s, 1, encoder_digest);
	store_bind_text(s, 2, tokens_digest);
	int rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		size_t n = (size_t)sqlite3_column_bytes(s, 0);
		*data = xmalloc(n);
		memcpy(*data, sqlite3_column_blob(s, 0), n);
		*size = n;
		if (shape != NULL)
			*shape = store_column_text(s, 1);
	}
	sqlite3_finalize(s);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return store_sql_error(st, "SELECT text_cache", err);
	return LQ_OK;
}

enum lq_status
store_put_text_cache(struct store *st, const char *encoder_digest,
    const char *tokens_digest, const char *dtype, const char *shape,
    const void *data, size_t size, struct lq_error *err)
{
	sqlite3_stmt *s = store_prepare(st,
	    "INSERT OR REPLACE INTO text_cache(encoder_digest, tokens_digest, "
	    "dtype, shape, data, created_at) VALUES (?, ?, ?, ?, ?, ?)", err);
	if (s == NULL)
		return err->status;
	store_bind_text(s, 1, encoder_digest);
	store_bind_text(s, 2, tokens_digest);
	store_bind_text(s, 3, dtype);
	store_bind_text(s, 4, shape);
	sqlite3_bind_blob64(s, 5, data, size, SQLITE_TRANSIENT);
	sqlite3_bind_double(s, 6, util_now());
	int rc = sqlite3_step(s);
	sqlite3_finalize(s);
	if (rc != SQLITE_DONE)
		return store_sql_error(st, "INSERT text_cache", err);
	return LQ_OK;
}
