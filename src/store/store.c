/*
 * store.c — opening the queue database, migrations, transactions, and the
 * small caches (pipeline, text).  See store.h.
 *
 * Migrations are the files schema/NNNN_*.sql, embedded at build time in
 * order; file NNNN brings the database to schema version NNNN (SQLite's
 * user_version; PostgreSQL's latentq_migrations rows).  A backend that
 * cannot share a file's statements has its own version of that file in
 * schema/BACKEND/ (the driver's variants).  Each one runs in its own
 * transaction with the version bump, so a crash mid-upgrade leaves the
 * previous version intact.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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
	return st->drv->error(st, call, err);
}

struct store_stmt *
store_prepare(struct store *st, const char *sql, struct lq_error *err)
{
	return st->drv->prepare(st, sql, 0, err);
}

void
store_finalize(struct store_stmt *s)
{
	if (s != NULL)
		s->st->drv->finalize(s);
}

struct store_stmt *
store_prepare_cached(struct store *st, const char *sql, struct lq_error *err)
{
	size_t i;
	for (i = 0; i < STORE_STMT_CACHE && st->cache[i].sql != NULL; i++)
		if (st->cache[i].sql == sql || strcmp(st->cache[i].sql, sql) == 0)
			return st->cache[i].stmt;
	struct store_stmt *s = st->drv->prepare(st, sql, 1, err);
	if (s == NULL)
		return NULL;
	LQ_ASSERT(i < STORE_STMT_CACHE);	/* raise STORE_STMT_CACHE */
	st->cache[i].sql = sql;
	st->cache[i].stmt = s;
	return s;
}

void
store_done(struct store_stmt *s)
{
	s->st->drv->reset(s);
}

int
store_step(struct store_stmt *s)
{
	return s->st->drv->step(s);
}

enum lq_status
store_step_done(struct store *st, struct store_stmt *s, const char *what,
    struct lq_error *err)
{
	int rc = store_step(s);
	if (rc != STORE_DONE) {
		/* the error before the reset, which may clear it */
		enum lq_status r = rc == STORE_ERROR ?
		    store_sql_error(st, what, err) :
		    error_set(err, LQ_FAILED, "LQ-DB-001", "%s on %s returned "
		    "rows", what, st->path);
		store_done(s);
		return r;
	}
	store_done(s);
	return LQ_OK;
}

enum lq_status
store_step_id(struct store *st, struct store_stmt *s, const char *what,
    int64_t *id, struct lq_error *err)
{
	int rc = store_step(s);
	if (rc == STORE_ROW) {
		*id = store_column_int64(s, 0);
		rc = store_step(s);
	}
	enum lq_status r = LQ_OK;
	if (rc == STORE_ERROR)
		r = store_sql_error(st, what, err);
	store_done(s);
	return r;
}

int64_t
store_changes(struct store *st)
{
	return st->drv->changes(st);
}

enum lq_status
store_exec(struct store *st, const char *sql, struct lq_error *err)
{
	return st->drv->exec(st, sql, err);
}

void
store_bind_int64(struct store_stmt *s, int i, int64_t v)
{
	s->st->drv->bind_int64(s, i, v);
}

void
store_bind_int(struct store_stmt *s, int i, int v)
{
	s->st->drv->bind_int64(s, i, v);
}

void
store_bind_double(struct store_stmt *s, int i, double v)
{
	s->st->drv->bind_double(s, i, v);
}

void
store_bind_text(struct store_stmt *s, int i, const char *v)
{
	s->st->drv->bind_text(s, i, v);
}

void
store_bind_blob(struct store_stmt *s, int i, const void *p, size_t n)
{
	s->st->drv->bind_blob(s, i, p, n);
}

void
store_bind_null(struct store_stmt *s, int i)
{
	s->st->drv->bind_null(s, i);
}

int
store_column_is_null(struct store_stmt *s, int i)
{
	return s->st->drv->column_is_null(s, i);
}

int64_t
store_column_int64(struct store_stmt *s, int i)
{
	return s->st->drv->column_int64(s, i);
}

int
store_column_int(struct store_stmt *s, int i)
{
	return (int)s->st->drv->column_int64(s, i);
}

double
store_column_double(struct store_stmt *s, int i)
{
	return s->st->drv->column_double(s, i);
}

const char *
store_column_str(struct store_stmt *s, int i)
{
	return s->st->drv->column_text(s, i);
}

char *
store_column_text(struct store_stmt *s, int i)
{
	const char *t = store_column_str(s, i);
	return t != NULL ? xstrdup(t) : NULL;
}

const void *
store_column_blob(struct store_stmt *s, int i)
{
	return s->st->drv->column_blob(s, i);
}

size_t
store_column_bytes(struct store_stmt *s, int i)
{
	return s->st->drv->column_bytes(s, i);
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
	return st->drv->schema_version(st);
}

/* LQ-DB-002: the database's schema is newer than this binary's. */
static enum lq_status
schema_too_new(struct store *st, int have, struct lq_error *err)
{
	error_set(err, LQ_FAILED, "LQ-DB-002",
	    "queue database %s has schema version %d, newer than this "
	    "latentq knows (%d)", st->path, have, store_schema_latest());
	error_set_hint(err, "use a newer latentq, or another database "
	    "with --db");
	return LQ_FAILED;
}

static enum lq_status
migrate(struct store *st, struct lq_error *err)
{
	int have = store_schema_version(st);
	int latest = store_schema_latest();
	if (have < 0)
		return store_sql_error(st, "PRAGMA user_version", err);
	if (have > latest)
		return schema_too_new(st, have, err);
	for (const struct embed_file *f = store_migrations; f->name; f++) {
		int version = atoi(f->name);
		if (version <= have)
			continue;
		if (migration_limit >= 0 && version > migration_limit)
			break;
		enum lq_status s = store_begin(st, err);
		if (s != LQ_OK)
			return s;
		if (st->drv->lock_schema != NULL &&
		    (s = st->drv->lock_schema(st, err)) != LQ_OK) {
			store_rollback(st);
			return s;
		}
		/* Re-check under the write lock: another process may have migrated. */
		if (store_schema_version(st) >= version) {
			store_rollback(st);
			continue;
		}
		const struct embed_file *v = st->drv->variants != NULL ?
		    embed_find(st->drv->variants, f->name) : NULL;
		const char *sql = (const char *)(v != NULL ? v : f)->data;
		if ((s = store_exec(st, sql, err)) != LQ_OK ||
		    (s = st->drv->set_schema_version(st, version, err)) != LQ_OK) {
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

static enum lq_status open_read_write(const char *path, int check,
    struct store **out, struct lq_error *err);

char *
store_file_uri(const char *path, const char *query)
{
	struct strbuf sb = {0};
	strbuf_append(&sb, "file:", 5);
	for (const char *p = path; *p; p++) {
		if (*p == '%' || *p == '?' || *p == '#')
			strbuf_printf(&sb, "%%%02X", (unsigned char)*p);
		else
			strbuf_append(&sb, p, 1);
	}
	char *s = strbuf_release(&sb);
	char *uri = sqlite3_mprintf("%s?%s", s, query);
	free(s);
	return uri;
}

/* sqlite3_open_v2 read-only, `immutable` through the URI parameter. */
static int
open_ro_handle(const char *path, int immutable, sqlite3 **db)
{
	char *uri = store_file_uri(path, immutable ? "mode=ro&immutable=1" :
	    "mode=ro");
	int rc = sqlite3_open_v2(uri, db, SQLITE_OPEN_READONLY |
	    SQLITE_OPEN_URI | SQLITE_OPEN_FULLMUTEX, NULL);
	sqlite3_free(uri);
	return rc;
}

/* Read-only: nothing is created, no pragma writes, no migration. */
static enum lq_status
open_readonly(const char *path, struct store **out, struct lq_error *err)
{
	struct store *st = xcalloc(1, sizeof(*st));
	st->drv = &store_driver_sqlite;
	st->path = xstrdup(path);
	*out = NULL;
	int rc = open_ro_handle(path, 0, &st->db);
	if (rc == SQLITE_OK && store_schema_version(st) < 0) {
		/*
		 * A WAL database in a read-only folder, with no -shm beside
		 * it: SQLite cannot create the shared-memory file, so the
		 * read fails (SQLITE_READONLY_CANTINIT / CANTOPEN).  Nobody
		 * can be writing it there (a writer needs the -wal and -shm
		 * files), so it is read as immutable instead.
		 */
		int primary = sqlite3_errcode(st->db) & 0xff;
		if (primary == SQLITE_READONLY || primary == SQLITE_CANTOPEN) {
			sqlite3_close_v2(st->db);
			st->db = NULL;
			rc = open_ro_handle(path, 1, &st->db);
		}
	}
	if (rc != SQLITE_OK) {
		error_set(err, LQ_FAILED, "LQ-DB-005",
		    "cannot open queue database %s read-only: %s", path,
		    st->db ? sqlite3_errmsg(st->db) : sqlite3_errstr(rc));
		store_close(st);
		return LQ_FAILED;
	}
	sqlite3_busy_timeout(st->db, BUSY_TIMEOUT_MS);
	int have = store_schema_version(st);
	if (have < 0) {
		enum lq_status s = store_sql_error(st, "PRAGMA user_version", err);
		store_close(st);
		return s;
	}
	if (have > store_schema_latest()) {
		schema_too_new(st, have, err);
		store_close(st);
		return LQ_FAILED;
	}
	if (have < store_schema_latest()) {
		error_set(err, LQ_FAILED, "LQ-DB-005",
		    "queue database %s has schema version %d; this latentq "
		    "reads version %d and cannot migrate a read-only database",
		    path, have, store_schema_latest());
		error_set_hint(err, "open it once with write access (latentq "
		    "submit or run)");
		store_close(st);
		return LQ_FAILED;
	}
	*out = st;
	return LQ_OK;
}

/*
 * A PostgreSQL queue: connect, then as open_read_write / open_readonly.
 * A database without latentq's tables is "no queue" when it must exist
 * (must_exist, or read-only); otherwise it is migrated like a new file.
 * quick_check has no PostgreSQL counterpart to run here: the server checks
 * its own pages (data checksums), so STORE_READ_WRITE_CHECKED is plain
 * read-write.
 */
static enum lq_status
open_postgresql(const char *conninfo, enum store_mode mode, int must_exist,
    struct store **out, struct lq_error *err)
{
	struct store *st = xcalloc(1, sizeof(*st));
	*out = NULL;
	enum lq_status s = store_pg_connect(st, conninfo, err);
	int have = s == LQ_OK ? store_schema_version(st) : 0;
	if (s != LQ_OK)
		;
	else if (have < 0)
		s = store_sql_error(st, "SELECT latentq_migrations", err);
	else if (have > store_schema_latest())
		s = schema_too_new(st, have, err);
	else if (have == 0 && (must_exist || mode == STORE_READ_ONLY)) {
		s = error_set(err, LQ_FAILED, "LQ-DB-NOENT", "no queue in "
		    "database %s (it has no latentq tables)", st->path);
		error_set_hint(err, "`latentq submit` or `latentq render` creates "
		    "one; or name another with -d or LATENTQ_DB");
	} else if (mode == STORE_READ_ONLY && have < store_schema_latest()) {
		s = error_set(err, LQ_FAILED, "LQ-DB-005", "queue database %s has "
		    "schema version %d; this latentq reads version %d and does "
		    "not migrate for a read-only command", st->path, have,
		    store_schema_latest());
		error_set_hint(err, "run latentq submit or run once against it");
	} else if (mode == STORE_READ_ONLY)
		s = store_exec(st, "SET default_transaction_read_only = on", err);
	else
		s = migrate(st, err);
	if (s != LQ_OK) {
		store_close(st);
		return s;
	}
	*out = st;
	return LQ_OK;
}

enum lq_status
store_open_mode(const char *path, enum store_mode mode, struct store **out,
    struct lq_error *err)
{
	if (store_is_postgresql(path))
		return open_postgresql(path, mode, 0, out, err);
	if (mode == STORE_READ_ONLY)
		return open_readonly(path, out, err);
	return open_read_write(path, mode == STORE_READ_WRITE_CHECKED, out,
	    err);
}

enum lq_status
store_open(const char *path, struct store **out, struct lq_error *err)
{
	return store_open_mode(path, STORE_READ_WRITE, out, err);
}

/* store_open; with `check`, PRAGMA quick_check before anything is written
 * (migrations included). */
static enum lq_status
open_read_write(const char *path, int check, struct store **out,
    struct lq_error *err)
{
	struct store *st = xcalloc(1, sizeof(*st));
	st->drv = &store_driver_sqlite;
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
	    (check && (s = store_check(st, 1, NULL, err)) != LQ_OK) ||
	    (s = migrate(st, err)) != LQ_OK) {
		store_close(st);
		return s;
	}
	*out = st;
	return LQ_OK;
}

enum lq_status
store_open_existing(const char *path, struct store **out,
    struct lq_error *err)
{
	struct stat sb;
	*out = NULL;
	if (store_is_postgresql(path))
		return open_postgresql(path, STORE_READ_WRITE, 1, out, err);
	if (stat(path, &sb) != 0 && errno == ENOENT) {
		error_set(err, LQ_FAILED, "LQ-DB-NOENT", "no queue database at %s",
		    path);
		error_set_hint(err, "`latentq submit` or `latentq render` creates "
		    "one; or name another with -d or LATENTQ_DB");
		return LQ_FAILED;
	}
	return store_open(path, out, err);
}

void
store_close(struct store *st)
{
	if (st == NULL)
		return;
	for (size_t i = 0; i < STORE_STMT_CACHE; i++)
		store_finalize(st->cache[i].stmt);
	if (st->drv != NULL)
		st->drv->close(st);
	free(st->lease_owner);
	free(st->path);
	free(st);
}

enum lq_status
store_begin(struct store *st, struct lq_error *err)
{
	if (st->txn_depth++ > 0)
		return LQ_OK;
	enum lq_status s = store_exec(st, st->drv->begin_sql, err);
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
		struct lq_error ignored;
		error_clear(&ignored);
		store_exec(st, "ROLLBACK", &ignored);
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
	struct lq_error ignored;
	error_clear(&ignored);
	store_exec(st, "ROLLBACK", &ignored);
}

enum lq_status
store_get_pipeline_cache(struct store *st, const char *fingerprint, void **blob,
    size_t *size, struct lq_error *err)
{
	*blob = NULL;
	*size = 0;
	struct store_stmt *s = store_prepare(st,
	    "SELECT data FROM pipeline_cache WHERE fingerprint = ?", err);
	if (s == NULL)
		return err->status;
	store_bind_text(s, 1, fingerprint);
	int rc = store_step(s);
	if (rc == STORE_ROW) {
		size_t n = store_column_bytes(s, 0);
		*blob = xmalloc(n);
		memcpy(*blob, store_column_blob(s, 0), n);
		*size = n;
	}
	store_finalize(s);
	if (rc != STORE_ROW && rc != STORE_DONE)
		return store_sql_error(st, "SELECT pipeline_cache", err);
	return LQ_OK;
}

enum lq_status
store_put_pipeline_cache(struct store *st, const char *fingerprint,
    const void *blob, size_t size, struct lq_error *err)
{
	struct store_stmt *s = store_prepare(st,
	    "INSERT INTO pipeline_cache(fingerprint, data, created_at) "
	    "VALUES (?, ?, ?) ON CONFLICT(fingerprint) DO UPDATE SET "
	    "data = excluded.data, created_at = excluded.created_at", err);
	if (s == NULL)
		return err->status;
	store_bind_text(s, 1, fingerprint);
	store_bind_blob(s, 2, blob, size);
	store_bind_double(s, 3, util_now());
	int rc = store_step(s);
	store_finalize(s);
	if (rc != STORE_DONE)
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
	struct store_stmt *s = store_prepare(st,
	    "SELECT data, shape FROM text_cache WHERE encoder_digest = ? AND "
	    "tokens_digest = ?", err);
	if (s == NULL)
		return err->status;
	store_bind_text(s, 1, encoder_digest);
	store_bind_text(s, 2, tokens_digest);
	int rc = store_step(s);
	if (rc == STORE_ROW) {
		size_t n = store_column_bytes(s, 0);
		*data = xmalloc(n);
		memcpy(*data, store_column_blob(s, 0), n);
		*size = n;
		if (shape != NULL)
			*shape = store_column_text(s, 1);
	}
	store_finalize(s);
	if (rc != STORE_ROW && rc != STORE_DONE)
		return store_sql_error(st, "SELECT text_cache", err);
	return LQ_OK;
}

enum lq_status
store_put_text_cache(struct store *st, const char *encoder_digest,
    const char *tokens_digest, const char *dtype, const char *shape,
    const void *data, size_t size, struct lq_error *err)
{
	struct store_stmt *s = store_prepare(st,
	    "INSERT INTO text_cache(encoder_digest, tokens_digest, "
	    "dtype, shape, data, created_at) VALUES (?, ?, ?, ?, ?, ?) "
	    "ON CONFLICT(encoder_digest, tokens_digest) DO UPDATE SET "
	    "dtype = excluded.dtype, shape = excluded.shape, "
	    "data = excluded.data, created_at = excluded.created_at", err);
	if (s == NULL)
		return err->status;
	store_bind_text(s, 1, encoder_digest);
	store_bind_text(s, 2, tokens_digest);
	store_bind_text(s, 3, dtype);
	store_bind_text(s, 4, shape);
	store_bind_blob(s, 5, data, size);
	store_bind_double(s, 6, util_now());
	int rc = store_step(s);
	store_finalize(s);
	if (rc != STORE_DONE)
		return store_sql_error(st, "INSERT text_cache", err);
	return LQ_OK;
}
