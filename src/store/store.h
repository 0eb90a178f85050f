/*
 * store.h — latentq's queue database (SQLite).  The only module that speaks
 * SQL; everything else sees these functions.
 *
 * Ownership: a `struct store` is opened by store_open and closed by
 * store_close; it is not thread-safe (one per thread or process).  Structs
 * filled by store_* getters own their strings; release them with the
 * matching *_clear function.  Every function that can fail takes a
 * caller-owned `struct lq_error` and returns its status: LQ_RETRY when the
 * database stayed busy past the busy timeout (LQ-DB-001) or its disk is
 * full or failing (SQLITE_FULL, SQLITE_IOERR: STORE_CODE_STORAGE, the
 * message naming errno), LQ_FAILED otherwise.  A failed call leaves the
 * database as it was (each call is one transaction).
 */
#ifndef LQ_STORE_STORE_H
#define LQ_STORE_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

struct store;

/* Error code of a write that failed because the database's disk is full. */
#define STORE_CODE_STORAGE "LQ-DB-004"

/*
 * Opens (creating if needed) the database at `path`, turns on WAL, foreign
 * keys and a busy timeout, and applies the embedded migrations in schema/
 * whose number exceeds PRAGMA user_version.  A database whose user_version
 * is newer than this binary knows is refused (LQ_FAILED, code LQ-DB-002).
 */
enum lq_status store_open(const char *path, struct store **out,
    struct lq_error *err);
void store_close(struct store *st);

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
