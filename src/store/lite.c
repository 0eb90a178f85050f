/*
 * lite.c — the SQLite driver behind the store's statement functions
 * (store-int.h).  The store's SQL is SQLite's dialect, so statements are
 * prepared as they are.  Opening, pragmas and the integrity checks stay in
 * store.c and integrity.c, which use the connection directly.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "store/store-int.h"

struct lite_stmt {
	struct store_stmt base;
	sqlite3_stmt *s;
};

#define LITE(x) (((struct lite_stmt *)(x))->s)

static struct store_stmt *
lite_prepare(struct store *st, const char *sql, int persistent,
    struct lq_error *err)
{
	sqlite3_stmt *s = NULL;
	if (sqlite3_prepare_v3(st->db, sql, -1, persistent ?
	    SQLITE_PREPARE_PERSISTENT : 0, &s, NULL) != SQLITE_OK) {
		store_sql_error(st, "sqlite3_prepare_v3", err);
		return NULL;
	}
	struct lite_stmt *ls = xcalloc(1, sizeof(*ls));
	ls->base.st = st;
	ls->s = s;
	return &ls->base;
}

static void
lite_finalize(struct store_stmt *s)
{
	sqlite3_finalize(LITE(s));
	free(s);
}

static void
lite_reset(struct store_stmt *s)
{
	sqlite3_reset(LITE(s));
	sqlite3_clear_bindings(LITE(s));
}

static int
lite_step(struct store_stmt *s)
{
	switch (sqlite3_step(LITE(s))) {
	case SQLITE_ROW:
		return STORE_ROW;
	case SQLITE_DONE:
		return STORE_DONE;
	default:
		return STORE_ERROR;
	}
}

/*
 * A failed bind is a bug (an index past the statement's parameters) or
 * SQLITE_NOMEM / SQLITE_TOOBIG, which the step reports again; it is
 * therefore not checked here.
 */
static void
lite_bind_int64(struct store_stmt *s, int i, int64_t v)
{
	sqlite3_bind_int64(LITE(s), i, v);
}

static void
lite_bind_double(struct store_stmt *s, int i, double v)
{
	sqlite3_bind_double(LITE(s), i, v);
}

static void
lite_bind_text(struct store_stmt *s, int i, const char *v)
{
	sqlite3_bind_text(LITE(s), i, v, -1, SQLITE_TRANSIENT);
}

static void
lite_bind_blob(struct store_stmt *s, int i, const void *p, size_t n)
{
	/* borrowed until the step (store-int.h): megabytes are not copied */
	sqlite3_bind_blob64(LITE(s), i, p, n, SQLITE_STATIC);
}

static void
lite_bind_null(struct store_stmt *s, int i)
{
	sqlite3_bind_null(LITE(s), i);
}

static int
lite_column_is_null(struct store_stmt *s, int i)
{
	return sqlite3_column_type(LITE(s), i) == SQLITE_NULL;
}

static int64_t
lite_column_int64(struct store_stmt *s, int i)
{
	return sqlite3_column_int64(LITE(s), i);
}

static double
lite_column_double(struct store_stmt *s, int i)
{
	return sqlite3_column_double(LITE(s), i);
}

static const char *
lite_column_text(struct store_stmt *s, int i)
{
	return (const char *)sqlite3_column_text(LITE(s), i);
}

static const void *
lite_column_blob(struct store_stmt *s, int i)
{
	return sqlite3_column_blob(LITE(s), i);
}

static size_t
lite_column_bytes(struct store_stmt *s, int i)
{
	return (size_t)sqlite3_column_bytes(LITE(s), i);
}

static enum lq_status
lite_exec(struct store *st, const char *sql, struct lq_error *err)
{
	char *msg = NULL;
	if (sqlite3_exec(st->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
		enum lq_status s = store_sql_error(st, "sqlite3_exec", err);
		sqlite3_free(msg);
		return s;
	}
	return LQ_OK;
}

static int64_t
lite_changes(struct store *st)
{
	return sqlite3_changes64(st->db);
}

static enum lq_status
lite_error(struct store *st, const char *call, struct lq_error *err)
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

/* PRAGMA user_version holds the schema version (store.c's migrations). */
static int
lite_schema_version(struct store *st)
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
lite_set_schema_version(struct store *st, int version, struct lq_error *err)
{
	char pragma[64];
	snprintf(pragma, sizeof(pragma), "PRAGMA user_version = %d", version);
	return lite_exec(st, pragma, err);
}

static void
lite_close(struct store *st)
{
	sqlite3_close_v2(st->db);
	st->db = NULL;
}

const struct store_driver store_driver_sqlite = {
	.name = "sqlite",
	/* takes the write lock at once: no upgrade deadlock between writers */
	.begin_sql = "BEGIN IMMEDIATE",
	.prepare = lite_prepare,
	.finalize = lite_finalize,
	.reset = lite_reset,
	.step = lite_step,
	.bind_int64 = lite_bind_int64,
	.bind_double = lite_bind_double,
	.bind_text = lite_bind_text,
	.bind_blob = lite_bind_blob,
	.bind_null = lite_bind_null,
	.column_is_null = lite_column_is_null,
	.column_int64 = lite_column_int64,
	.column_double = lite_column_double,
	.column_text = lite_column_text,
	.column_blob = lite_column_blob,
	.column_bytes = lite_column_bytes,
	.exec = lite_exec,
	.changes = lite_changes,
	.error = lite_error,
	.schema_version = lite_schema_version,
	.set_schema_version = lite_set_schema_version,
	.close = lite_close,
};
