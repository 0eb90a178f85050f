/*
 * store-int.h — internals shared by the files of src/store/ only.  Nothing
 * outside src/store/ may include this (or sqlite3.h).
 */
#ifndef LQ_STORE_INT_H
#define LQ_STORE_INT_H

#include <sqlite3.h>

#include "core/embed.h"
#include "store/store.h"

#define STORE_STMT_CACHE 64

/*
 * The driver seam.  Every file of src/store/ speaks SQL through these
 * functions, never through sqlite3_* (integrity.c excepted: quick_check,
 * recover and repair are SQLite's own machinery).  One driver per backend:
 * store_driver_sqlite (lite.c) and store_driver_postgresql (pg.c).
 *
 * A driver gets SQL in what the two dialects share: `?` or `?N`
 * placeholders, ON CONFLICT, RETURNING; a SELECT in a write transaction
 * may end in " FOR UPDATE" or " FOR UPDATE SKIP LOCKED" (PostgreSQL's row
 * locks; the SQLite driver drops them, its write lock already excludes
 * other writers).  A driver whose server spells something otherwise
 * rewrites it in prepare.
 *
 * Statements: store_prepare* returns one; bind (1-based indices), then
 * store_step until STORE_DONE; columns (0-based) are readable while the
 * last step returned STORE_ROW and point into the statement (borrowed
 * until the next step, reset or finalize).  A cached statement is released
 * with store_done, any other with store_finalize.  On STORE_ERROR the
 * driver has kept the error for store_sql_error.
 */
enum { STORE_ERROR = -1, STORE_DONE = 0, STORE_ROW = 1 };

struct store_stmt {
	struct store *st;	/* the store it was prepared on (borrowed) */
};

struct store_driver {
	const char *name;	/* "sqlite", "postgresql" */
	/* SQL that opens a write transaction (store_begin) */
	const char *begin_sql;
	/*
	 * Migrations whose statements this backend cannot share: an entry
	 * named like a file of schema/ replaces it (NULL-name terminated;
	 * NULL: none).  From schema/BACKEND/.
	 */
	const struct embed_file *variants;
	/* persistent: kept for reuse (the statement cache) */
	struct store_stmt *(*prepare)(struct store *st, const char *sql,
	    int persistent, struct lq_error *err);
	void (*finalize)(struct store_stmt *s);
	void (*reset)(struct store_stmt *s);	/* and clears the bindings */
	int (*step)(struct store_stmt *s);	/* STORE_ROW, _DONE, _ERROR */
	void (*bind_int64)(struct store_stmt *s, int i, int64_t v);
	void (*bind_double)(struct store_stmt *s, int i, double v);
	/* v NULL: a NULL of type text */
	void (*bind_text)(struct store_stmt *s, int i, const char *v);
	void (*bind_blob)(struct store_stmt *s, int i, const void *p, size_t n);
	void (*bind_null)(struct store_stmt *s, int i);
	int (*column_is_null)(struct store_stmt *s, int i);
	int64_t (*column_int64)(struct store_stmt *s, int i);
	double (*column_double)(struct store_stmt *s, int i);
	const char *(*column_text)(struct store_stmt *s, int i);
	const void *(*column_blob)(struct store_stmt *s, int i);
	size_t (*column_bytes)(struct store_stmt *s, int i);
	/* SQL text without results, possibly several statements */
	enum lq_status (*exec)(struct store *st, const char *sql,
	    struct lq_error *err);
	/* rows changed by the last INSERT/UPDATE/DELETE stepped to DONE */
	int64_t (*changes)(struct store *st);
	/* fills err from the last error (store_sql_error) */
	enum lq_status (*error)(struct store *st, const char *call,
	    struct lq_error *err);
	/* schema version recorded in the database; -1 on error */
	int (*schema_version)(struct store *st);
	/*
	 * In a migration's transaction, before the version is read again:
	 * excludes other migrators (NULL: the write lock already does).
	 */
	enum lq_status (*lock_schema)(struct store *st, struct lq_error *err);
	/*
	 * In a write transaction: excludes other submitters until it ends,
	 * so that submit's look for a live job of the same config and its
	 * INSERT are one step (NULL: the write lock already does).
	 */
	enum lq_status (*lock_submit)(struct store *st, struct lq_error *err);
	/* records `version` in the open transaction */
	enum lq_status (*set_schema_version)(struct store *st, int version,
	    struct lq_error *err);
	void (*close)(struct store *st);
};

extern const struct store_driver store_driver_sqlite;
extern const struct store_driver store_driver_postgresql;

/*
 * Connects st (path unset, drv unset) to the PostgreSQL server that
 * conninfo (a URL or keyword/value string) names; on failure err says
 * why (LQ_RETRY if the server may just be unreachable) and st must still
 * be closed.  st->path gets the conninfo without its password.
 */
enum lq_status store_pg_connect(struct store *st, const char *conninfo,
    struct lq_error *err);

struct store {
	const struct store_driver *drv;
	sqlite3 *db;		/* the SQLite driver's connection */
	struct store_pg *pg;	/* the PostgreSQL driver's (pg.c) */
	char *path;
	int txn_depth;
	/* the lease this handle writes under (store_hold_lease); job 0: none */
	int64_t lease_job, lease_token;
	char *lease_owner;
	int lease_checked;	/* checked in the open transaction */
	/* prepared statements reused across calls, keyed by their SQL text */
	struct {
		const char *sql;
		struct store_stmt *stmt;
	} cache[STORE_STMT_CACHE];
};

/*
 * "file:PATH?QUERY" with PATH percent-encoded where a URI needs it ('%',
 * '?', '#'); sqlite3_free() it.  For SQLITE_OPEN_URI opens and ATTACH.
 */
char *store_file_uri(const char *path, const char *query);

/* The raw handle, for the files of src/store/. */
sqlite3 *store_db(struct store *st);

/*
 * Fills err from the connection's last error: "CALL failed on PATH: msg".
 * A busy or locked database maps to LQ_RETRY; a full or failing disk to
 * LQ_RETRY with STORE_CODE_STORAGE; everything else to LQ_FAILED.
 */
enum lq_status store_sql_error(struct store *st, const char *call,
    struct lq_error *err);

/* Prepares sql; on failure fills err and returns NULL.  store_finalize it. */
struct store_stmt *store_prepare(struct store *st, const char *sql,
    struct lq_error *err);
void store_finalize(struct store_stmt *s);

/*
 * Like store_prepare, for SQL that is a string literal: the statement is
 * kept in the store and reused (preparing costs more than a small INSERT).
 * Release it with store_done(), never store_finalize().
 */
struct store_stmt *store_prepare_cached(struct store *st, const char *sql,
    struct lq_error *err);
/* Resets a cached statement and clears its bindings for the next use. */
void store_done(struct store_stmt *s);

/* One step: STORE_ROW, STORE_DONE or STORE_ERROR (then store_sql_error). */
int store_step(struct store_stmt *s);

/*
 * Steps a cached statement that returns no rows (INSERT, UPDATE, DELETE)
 * to completion and releases it; `what` names it in the error.
 */
enum lq_status store_step_done(struct store *st, struct store_stmt *s,
    const char *what, struct lq_error *err);

/*
 * Steps a cached "INSERT ... RETURNING id" and releases it: *id gets the
 * new row's id.
 */
enum lq_status store_step_id(struct store *st, struct store_stmt *s,
    const char *what, int64_t *id, struct lq_error *err);

/* Rows changed by the last INSERT, UPDATE or DELETE. */
int64_t store_changes(struct store *st);

/*
 * Opens a write transaction (store_begin) for a write to job_id's records
 * and, when this handle holds a lease on that job (store_hold_lease),
 * checks in the same transaction that the lease is still this one: state
 * running, same owner, same lease_token.  If it is not, nothing is left
 * open and err is LQ-JOB-005 (LQ_FAILED): the caller writes nothing.
 */
enum lq_status store_begin_fenced(struct store *st, int64_t job_id,
    struct lq_error *err);

/* Executes SQL text without results. */
enum lq_status store_exec(struct store *st, const char *sql,
    struct lq_error *err);

/*
 * Bindings (1-based).  Text and blobs are borrowed until the statement has
 * been stepped; a NULL text binds SQL NULL.
 */
void store_bind_int64(struct store_stmt *s, int i, int64_t v);
void store_bind_int(struct store_stmt *s, int i, int v);
void store_bind_double(struct store_stmt *s, int i, double v);
void store_bind_text(struct store_stmt *s, int i, const char *v);
void store_bind_blob(struct store_stmt *s, int i, const void *p, size_t n);
void store_bind_null(struct store_stmt *s, int i);

/* Columns (0-based) of the current row; NULL reads as 0 or NULL. */
int store_column_is_null(struct store_stmt *s, int i);
int64_t store_column_int64(struct store_stmt *s, int i);
int store_column_int(struct store_stmt *s, int i);
double store_column_double(struct store_stmt *s, int i);
/* borrowed text, or NULL */
const char *store_column_str(struct store_stmt *s, int i);
/* Copy of a column's text, or NULL. */
char *store_column_text(struct store_stmt *s, int i);
const void *store_column_blob(struct store_stmt *s, int i);
size_t store_column_bytes(struct store_stmt *s, int i);

#endif
