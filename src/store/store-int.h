/*
 * store-int.h — internals shared by the files of src/store/ only.  Nothing
 * outside src/store/ may include this (or sqlite3.h).
 */
#ifndef LQ_STORE_INT_H
#define LQ_STORE_INT_H

#include <sqlite3.h>

#include "store/store.h"

#define STORE_STMT_CACHE 48

struct store {
	sqlite3 *db;
	char *path;
	int txn_depth;
	/* the lease this handle writes under (store_hold_lease); job 0: none */
	int64_t lease_job, lease_token;
	char *lease_owner;
	int lease_checked;	/* checked in the open transaction */
	/* prepared statements reused across calls, keyed by their SQL text */
	struct {
		const char *sql;
		sqlite3_stmt *stmt;
	} cache[STORE_STMT_CACHE];
};

/* The raw handle, for the files of src/store/. */
sqlite3 *store_db(struct store *st);

/*
 * Fills err from the connection's last error: "CALL failed on PATH: msg".
 * SQLITE_BUSY/LOCKED map to LQ_RETRY, everything else to LQ_FAILED.
 */
enum lq_status store_sql_error(struct store *st, const char *call,
    struct lq_error *err);

/* Prepares sql; on failure fills err and returns NULL. */
sqlite3_stmt *store_prepare(struct store *st, const char *sql,
    struct lq_error *err);

/*
 * Like store_prepare, for SQL that is a string literal: the statement is
 * kept in the store and reused (preparing costs more than a small INSERT).
 * Release it with store_done(), never sqlite3_finalize().
 */
sqlite3_stmt *store_prepare_cached(struct store *st, const char *sql,
    struct lq_error *err);
/* Resets a cached statement and clears its bindings for the next use. */
void store_done(sqlite3_stmt *s);

/*
 * Steps a cached statement that returns no rows (INSERT, UPDATE, DELETE)
 * to completion and releases it; `what` names it in the error.
 */
enum lq_status store_step_done(struct store *st, sqlite3_stmt *s,
    const char *what, struct lq_error *err);

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

/* Binds a text or NULL. */
void store_bind_text(sqlite3_stmt *s, int i, const char *v);
/* Copy of a column's text, or NULL. */
char *store_column_text(sqlite3_stmt *s, int i);

#endif
