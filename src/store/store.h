/*
 * store.h — latentq's queue database: an SQLite file, or a PostgreSQL
 * database that many hosts share (store_is_postgresql names which; both
 * behind the same functions and job states).  The only module that speaks
 * SQL; everything else sees these functions.
 *
 * Ownership: a `struct store` is opened by store_open and closed by
 * store_close; it is not thread-safe (one per thread or process).  Structs
 * filled by store_* getters own their strings; release them with the
 * matching *_clear function.  Every function that can fail takes a
 * caller-owned `struct lq_error` and returns its status: LQ_RETRY when the
 * database stayed busy past the busy timeout (LQ-DB-001) or its disk is
 * full or failing (SQLITE_FULL, SQLITE_IOERR: STORE_CODE_STORAGE, the
 * message naming errno; PostgreSQL's SQLSTATE class 53), or, on
 * PostgreSQL, when the server cannot be reached or a lock or serialization
 * conflict aborted the transaction (LQ-DB-001; the next call reconnects),
 * LQ_FAILED otherwise.  A failed call leaves the
 * database as it was (each call is one transaction).
 */
#ifndef LQ_STORE_STORE_H
#define LQ_STORE_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

struct store;

/* Error code of a write that failed because the database's disk is full. */
#define STORE_CODE_STORAGE "LQ-DB-007"

/*
 * Does `db` (a -d / LATENTQ_DB value) name a PostgreSQL database rather
 * than an SQLite file?  True for postgresql:// and postgres:// URLs and
 * libpq keyword/value strings ("host=/run/pg dbname=queue"); any other
 * text is a path.
 */
int store_is_postgresql(const char *db);

/*
 * Opens (creating if needed) the database at `path`, turns on WAL, foreign
 * keys and a busy timeout, and applies the embedded migrations in schema/
 * whose number exceeds PRAGMA user_version.  A PostgreSQL `path`
 * (store_is_postgresql) connects instead; the database must exist, and its
 * version is the newest row of latentq_migrations.  A database whose user_version
 * is newer than this binary knows is refused (LQ_FAILED, code LQ-DB-002).
 */
enum lq_status store_open(const char *path, struct store **out,
    struct lq_error *err);
void store_close(struct store *st);

enum store_mode {
	STORE_READ_WRITE,	/* store_open */
	/*
	 * store_open, then PRAGMA quick_check: a database that fails it is
	 * refused (LQ_FAILED, code LQ-DB-004, the first problems in the
	 * message) before anything is written.  For workers and submit.
	 */
	STORE_READ_WRITE_CHECKED,
	/*
	 * SQLITE_OPEN_READONLY: for status, show, list.  Works on a file of
	 * mode 0444 and in a read-only folder; nothing is created, migrated
	 * or changed.  A database that does not exist, or whose schema is
	 * older than this binary's, is refused (LQ-DB-005).
	 */
	STORE_READ_ONLY,
};

/* store_open with a mode; STORE_READ_WRITE is store_open itself. */
enum lq_status store_open_mode(const char *path, enum store_mode mode,
    struct store **out, struct lq_error *err);

/*
 * Runs PRAGMA quick_check (quick = 1: O(N), skips index/table agreement)
 * or PRAGMA integrity_check (quick = 0) on an open store; with quick = 0,
 * then the record check on both backends: every checkpoint verified as a
 * resume verifies it (store_verify_checkpoints: dtype, shape, latent
 * digest).  LQ_OK when the database is sound; LQ_FAILED with code
 * LQ-DB-004 and the first problem in err otherwise.  *problems (may be
 * NULL) gets a caller-owned text of every line reported (at most 100), or
 * NULL when sound.  PostgreSQL has no page check here: the server checks
 * its own pages.
 */
enum lq_status store_check(struct store *st, int quick, char **problems,
    struct lq_error *err);

/* What store_repair copied, per table. */
struct store_repair_table {
	char name[64];
	int64_t copied;		/* rows written to the new database */
	int64_t unreadable;	/* rowid ranges skipped after a read error */
	int64_t dropped;	/* copied rows removed: they named a lost parent */
};

/*
 * Copies what is readable of the database at `src` into a NEW database at
 * `dst` (refused if it exists): the new one gets this binary's schema, then
 * every table is copied row by row in rowid order, columns the two schemas
 * share.  A read error (a corrupt page) skips ahead in rowid until rows
 * read again, so one bad page costs the rows on it, not the rest of the
 * table.  Rows whose foreign keys name a row that was lost are dropped.
 * src is opened read-only and never changed.  *tables (caller frees) gets
 * one entry per table, *n their count.  On failure dst is removed.
 */
enum lq_status store_repair(const char *src, const char *dst,
    struct store_repair_table **tables, size_t *n, struct lq_error *err);

/*
 * store_open for commands that only read or change an existing queue
 * (status, show, list, cancel, the worker child): a path that does not
 * exist is LQ_FAILED with code LQ-DB-NOENT naming it, and nothing is
 * created; an existing database is opened (and migrated) as store_open.
 */
enum lq_status store_open_existing(const char *path, struct store **out,
    struct lq_error *err);

/* Schema version of the open database, and the newest this binary knows. */
int store_schema_version(struct store *st);
int store_schema_latest(void);

/*
 * For upgrade tests: later store_open calls apply migrations only up to
 * `version` (-1 restores "all").  Not for production use.
 */
void store_set_migration_limit(int version);

/* Path the store was opened with (borrowed). */
const char *store_path(const struct store *st);

/*
 * Explicit transactions, for callers that group several store calls
 * (submit of a whole manifest).  store_begin takes the write lock at once
 * (BEGIN IMMEDIATE); nested calls are counted and only the outermost
 * commits.  store_rollback undoes the whole group.
 */
enum lq_status store_begin(struct store *st, struct lq_error *err);
enum lq_status store_commit(struct store *st, struct lq_error *err);
void store_rollback(struct store *st);

/*
 * Pipeline cache blobs, keyed by a device/driver/SPIR-V/version
 * fingerprint.  store_get_pipeline_cache returns LQ_OK with *blob = NULL
 * when there is no entry; *blob is caller-owned (free()).
 */
enum lq_status store_get_pipeline_cache(struct store *st,
    const char *fingerprint, void **blob, size_t *size, struct lq_error *err);
enum lq_status store_put_pipeline_cache(struct store *st,
    const char *fingerprint, const void *blob, size_t size,
    struct lq_error *err);

/*
 * Text-embedding cache keyed by (encoder digest, token-ids digest).  Get
 * returns LQ_OK with *data = NULL on a miss; data is caller-owned.
 * `shape` is a JSON array text, dtype a name such as "F32".
 */
enum lq_status store_get_text_cache(struct store *st, const char *encoder_digest,
    const char *tokens_digest, void **data, size_t *size, char **shape,
    struct lq_error *err);
enum lq_status store_put_text_cache(struct store *st, const char *encoder_digest,
    const char *tokens_digest, const char *dtype, const char *shape,
    const void *data, size_t size, struct lq_error *err);

#endif
