/*
 * models.h — the models, model_files and file_hashes tables
 * (schema/0001_init.sql): registered model folders with their per-file
 * BLAKE2b-256 digests, and the hash cache keyed by (path, size, mtime,
 * inode) so unchanged files are not re-read.
 *
 * Ownership: struct store_model owns its strings and file array; release
 * with store_model_clear (store_models_free for a list).  Errors as in
 * store.h (LQ_RETRY when busy, LQ_FAILED otherwise; each call one
 * transaction).
 */
#ifndef LQ_STORE_MODELS_H
#define LQ_STORE_MODELS_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "store/store.h"

/*
 * Hash cache.  store_get_file_hash sets *found = 1 and hex when a row for
 * `path` has exactly this size, mtime (ns) and inode; otherwise *found = 0.
 * store_put_file_hash inserts or replaces the row for `path`.
 */
enum lq_status store_get_file_hash(struct store *st, const char *path, int64_t size,
    int64_t mtime_ns, int64_t inode, char hex[65], int *found, struct lq_error *err);
enum lq_status store_put_file_hash(struct store *st, const char *path, int64_t size,
    int64_t mtime_ns, int64_t inode, const char *hex, struct lq_error *err);

/*
 * The same as callbacks for model/hash.h's struct model_hash_cache, with
 * ctx = the struct store *:
 *   struct model_hash_cache c = {st, store_file_hash_lookup, store_file_hash_record};
 * A database error is logged as a warning and treated as a cache miss (the
 * file is then simply re-read), never as a failure.
 */
int store_file_hash_lookup(void *st, const char *path, int64_t size, int64_t mtime_ns,
    int64_t inode, char hex[65]);
void store_file_hash_record(void *st, const char *path, int64_t size, int64_t mtime_ns,
    int64_t inode, const char *hex);

/*
 * A registered model's folder by name, as model/ref.h's resolver callback
 * takes it (ctx = the struct store *): caller-owned path, or NULL when no
 * model has that name (a database error is logged and counts as unknown).
 */
char *store_model_path_resolve(void *st, const char *name);

struct store_model_file {
	char *relpath;
	int64_t size, mtime_ns, inode;
	char blake2b[65];
};

struct store_model {
	int64_t id;
	char *name;		/* may be NULL */
	char *path;		/* absolute folder */
	char *family;		/* "ltxv" */
	char *config_json;	/* model_index.json + component configs */
	char *digest;		/* over the sorted file list (model/hash.h) */
	double added_at;
	struct store_model_file *files;	/* sorted by relpath; NULL in lists */
	size_t nfiles;
};

void store_model_clear(struct store_model *m);
void store_models_free(struct store_model *v, size_t n);

/*
 * Adds a model, or replaces the one registered for the same path (its id,
 * and so the jobs that refer to it, are kept) with its whole file list.  A
 * name already used by another folder fails with LQ-DB-010 naming both.
 */
enum lq_status store_put_model(struct store *st, const struct store_model *m, int64_t *id,
    struct lq_error *err);
/* By name, else by path (absolute); *found = 0 when neither matches.
 * Files are loaded. */
enum lq_status store_find_model(struct store *st, const char *name_or_path,
    struct store_model *out, int *found, struct lq_error *err);
enum lq_status store_get_model(struct store *st, int64_t id, struct store_model *out,
    int *found, struct lq_error *err);
/* Every model without files, ordered by name then path. */
enum lq_status store_list_models(struct store *st, struct store_model **out, size_t *n,
    struct lq_error *err);
/* Replaces a model's file list and digest (after `model verify --update`). */
enum lq_status store_update_model_files(struct store *st, int64_t id, const char *digest,
    const struct store_model_file *files, size_t n, struct lq_error *err);

#endif
