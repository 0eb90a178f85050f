/*
 * hash.h — BLAKE2b-256 digests of a model folder's files, with a cache.
 *
 * model_hash_folder lists every regular file under a folder (recursively,
 * following symlinks, skipping names that start with '.'), sorted by
 * relative path, and digests each one streamed (core/digest.h digest_file)
 * unless the cache already knows it by (absolute path, size, mtime in ns,
 * inode).  The folder digest is BLAKE2b-256 over the lines
 * "<relpath>\t<blake2b>\n" in that order, so it changes when any file is
 * added, removed, renamed or changed.
 *
 * The cache is a pair of callbacks so this module does not depend on the
 * store: the `model` command wires them to store_get_file_hash /
 * store_put_file_hash (src/store/models.h).
 *
 * Ownership: a model_digest owns its file list (model_digest_clear).
 */
#ifndef LQ_MODEL_HASH_H
#define LQ_MODEL_HASH_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "core/digest.h"
#include "core/error.h"

struct model_hash_cache {
	void *ctx;
	/* 1 and hex filled when the cache holds this exact file state, else 0 */
	int (*lookup)(void *ctx, const char *path, int64_t size, int64_t mtime_ns,
	    int64_t inode, char hex[DIGEST_HEX_SIZE]);
	/* records a fresh digest (errors are the callback's to report) */
	void (*store)(void *ctx, const char *path, int64_t size, int64_t mtime_ns,
	    int64_t inode, const char *hex);
};

struct model_file_digest {
	char *relpath;			/* "transformer/config.json" */
	char *path;			/* absolute */
	int64_t size, mtime_ns, inode;
	char blake2b[DIGEST_HEX_SIZE];
	int from_cache;			/* 1 when the cache answered */
};

struct model_digest {
	char *root;			/* absolute folder */
	struct model_file_digest *files;	/* sorted by relpath */
	size_t n;
	size_t n_cached, n_hashed;
	char digest[DIGEST_HEX_SIZE];	/* over all files, see above */
};

/*
 * Digests a folder.  cache may be NULL; with `force` the cache is not
 * consulted (but still updated).  On failure (folder unreadable, a file
 * vanishing or unreadable) err names the path and *out is cleared.
 */
enum lq_status model_hash_folder(const char *dir, const struct model_hash_cache *cache,
    int force, struct model_digest *out, struct lq_error *err);
/*
 * The same over only the files `keep` accepts (it gets each relpath, e.g.
 * "config.json" or "sub/x.bin", and returns 1 to keep it); NULL keeps all.
 * The digest is then over the kept files alone.
 */
enum lq_status model_hash_files(const char *dir, int (*keep)(const char *relpath),
    const struct model_hash_cache *cache, int force, struct model_digest *out,
    struct lq_error *err);
void model_digest_clear(struct model_digest *d);

/*
 * Pinning (jobs.model_digests, "{relpath: blake2b}"): adds every file of d
 * to the JSON object `obj` under key prefix + relpath (prefix may be "" or,
 * for a component override folder, e.g. "vae:").
 */
void model_digest_add_json(const struct model_digest *d, const char *prefix, cJSON *obj);

/*
 * Compares the files now (`now`, an object built as above) with the pinned
 * JSON text.  LQ_OK when equal; else LQ_FAILED, code LQ-MODEL-021, message
 * "model files changed since the job was validated: <key> changed (and N
 * more)", field = the first key, and every difference (changed / added /
 * removed key) in `changes` (caller frees each and the array; may be NULL).
 * Pinned text that is not a JSON object of strings: LQ-MODEL-022.
 */
enum lq_status model_digest_compare(const cJSON *now, const char *pinned_json,
    char ***changes, size_t *nchanges, struct lq_error *err);

/* Folder digest from (relpath, blake2b) pairs already sorted by relpath. */
void model_digest_combine(const char *const *relpaths, const char *const *hexes, size_t n,
    char out[DIGEST_HEX_SIZE]);

#endif
