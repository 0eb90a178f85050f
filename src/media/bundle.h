/*
 * bundle.h — latentq bundles: pax archives (libarchive; optionally gzip- or
 * zstd-compressed) that carry jobs from one queue to another.  The only
 * part of latentq that includes archive.h is src/media/bundle.c.
 *
 * A bundle holds, in this order:
 *   bundle.json   the index (see media_bundle_parse_index): format version,
 *                 latentq version, and per job its request as written,
 *                 validated config and digest, pinned model digest, state,
 *                 events, artifacts and checkpoint, each file with the
 *                 member it travels in, its size and BLAKE2b-256;
 *   bundle.sig    optional: an Ed25519 signature of bundle.json's digest
 *                 (core/sign.h);
 *   jobs/N/...    the outputs and checkpoints the index lists.
 * Every member is listed in the index exactly once, with its digest, so
 * signing bundle.json signs the whole bundle.
 *
 * Reading is as hostile as the safetensors reader: a member is refused
 * unless it is a regular file whose name is a relative path of plain
 * components (no "..", ".", empty component, leading "/", control
 * character or backslash), seen once, and no larger than the reader's
 * limit; symlinks, hard links, devices, FIFOs and folders are refused.
 *
 * Ownership: writers and readers are opaque, created by *_create / *_open
 * and released by media_bundle_commit / media_bundle_abort /
 * media_bundle_close (each exactly once).  A `struct media_bundle_index`
 * borrows its strings from the cJSON tree it holds; release it with
 * media_bundle_index_clear.  Errors fill the caller's struct lq_error and
 * return LQ_FAILED (LQ-BUNDLE-* codes, naming the file, member and rule).
 */
#ifndef LQ_MEDIA_BUNDLE_H
#define LQ_MEDIA_BUNDLE_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "core/digest.h"
#include "core/error.h"

/* The index's format version this binary writes and reads. */
#define MEDIA_BUNDLE_FORMAT_VERSION 1
/* Member names of the index and its signature. */
#define MEDIA_BUNDLE_INDEX "bundle.json"
#define MEDIA_BUNDLE_SIG "bundle.sig"
/* Default largest member import accepts (bytes): 64 GiB. */
#define MEDIA_BUNDLE_MEMBER_MAX ((int64_t)64 << 30)
/* Largest index or signature member (read into memory): 256 MiB. */
#define MEDIA_BUNDLE_INDEX_MAX ((int64_t)256 << 20)
/* Longest member name accepted (bytes). */
#define MEDIA_BUNDLE_NAME_MAX 1024

/* ---- writing ---- */

struct media_bundle_writer;

/*
 * Creates a bundle at `path`, written to "PATH.part" and renamed onto PATH
 * by media_bundle_commit.  The compression follows the extension: ".tar"
 * none, ".tar.gz" or ".tgz" gzip, ".tar.zst" zstd; any other name fails
 * (LQ-BUNDLE-001, naming the extension and the three choices).
 */
enum lq_status media_bundle_create(const char *path,
    struct media_bundle_writer **out, struct lq_error *err);

/* Adds a member from memory (mode 0644, mtime 0, owner 0:0). */
enum lq_status media_bundle_add_data(struct media_bundle_writer *w,
    const char *name, const void *data, size_t size, struct lq_error *err);

/*
 * Adds the file at `path` as member `name`.  The file must still have the
 * size and BLAKE2b-256 the index records for it (`size`, `digest`):
 * otherwise (a file changed after it was listed) LQ-BUNDLE-006 naming the
 * path.  The bundle is then unusable; abort it.
 */
enum lq_status media_bundle_add_file(struct media_bundle_writer *w,
    const char *name, const char *path, int64_t size, const char *digest,
    struct lq_error *err);

/* Finishes the archive, fsyncs it and renames it onto its path; frees w. */
enum lq_status media_bundle_commit(struct media_bundle_writer *w,
    struct lq_error *err);
/* Removes the .part file and frees w. */
void media_bundle_abort(struct media_bundle_writer *w);

/* ---- reading ---- */

struct media_bundle_reader;
struct media_bundle_index;

/*
 * Opens a bundle file (any of the three compressions, detected from the
 * data, not the name) or a bundle in memory (borrowed until close).
 * `max_member` (bytes; <= 0 for MEDIA_BUNDLE_MEMBER_MAX) bounds every
 * member but the index, which MEDIA_BUNDLE_INDEX_MAX bounds.
 */
enum lq_status media_bundle_open(const char *path, int64_t max_member,
    struct media_bundle_reader **out, struct lq_error *err);
enum lq_status media_bundle_open_memory(const void *data, size_t size,
    int64_t max_member, struct media_bundle_reader **out,
    struct lq_error *err);

/*
 * Moves to the next member and checks it (type, name, duplicates, size;
 * see above).  *name (borrowed until the next call) and *size describe it;
 * *done is 1 at the end of the archive.
 */
enum lq_status media_bundle_next(struct media_bundle_reader *r,
    const char **name, int64_t *size, int *done, struct lq_error *err);

/*
 * Reads up to n bytes of the current member; *got is 0 at its end.  A
 * member that holds more or fewer bytes than its header said fails.
 */
enum lq_status media_bundle_read(struct media_bundle_reader *r, void *buf,
    size_t n, size_t *got, struct lq_error *err);

/* Reads the whole current member into a caller-owned NUL-terminated buffer. */
enum lq_status media_bundle_read_all(struct media_bundle_reader *r,
    char **data, size_t *size, struct lq_error *err);

/*
 * Streams the current member into `path` (created with O_EXCL, fsynced),
 * hashing it; *digest gets its BLAKE2b-256.  On error the file is removed.
 */
enum lq_status media_bundle_extract(struct media_bundle_reader *r,
    const char *path, char digest[DIGEST_HEX_SIZE], struct lq_error *err);

void media_bundle_close(struct media_bundle_reader *r);

/*
 * Reads the head of a freshly opened bundle: the first member must be
 * bundle.json (LQ-BUNDLE-004 otherwise), parsed into *idx
 * (media_bundle_parse_index), with its BLAKE2b-256 in index_digest; a
 * bundle.sig right after it goes to *sig (caller-owned, NULL when the
 * bundle is unsigned).  The members after them follow with
 * media_bundle_next.
 */
enum lq_status media_bundle_read_head(struct media_bundle_reader *r,
    struct media_bundle_index *idx, char index_digest[DIGEST_HEX_SIZE],
    char **sig, size_t *sig_len, struct lq_error *err);

/*
 * Checks a member name by the rules above; returns NULL when it is
 * acceptable, else a static string saying which rule it breaks.
 */
const char *media_bundle_check_name(const char *name);

/* ---- the index ---- */

/* A file the index lists: which member carries it, its size and digest. */
struct media_bundle_file {
	const char *member;
	int64_t size;
	const char *digest;		/* 64 hex digits */
};

struct media_bundle_artifact {
	const char *kind;		/* "mp4", "contact_sheet", "tensors", ... */
	const char *path;		/* relative to the job's manifest folder */
	struct media_bundle_file file;
};

struct media_bundle_checkpoint {
	int step;
	double sigma;
	const char *dtype;
	int ndim;
	int64_t shape[8];
	const char *config_digest, *model_digest, *device_fingerprint;
	struct media_bundle_file file;
};

struct media_bundle_job {
	int64_t id;			/* on the exporting queue */
	const char *name, *state;
	const char *manifest_path, *manifest_digest, *request_json;
	int entry_index, line;
	const char *config_json, *config_digest;
	const char *model_digests;	/* NULL when none was pinned */
	int64_t priority;
	int max_attempts, attempts, step, total_steps;
	const char *phase, *error_code, *error_message, *output_path;
	double created_at, finished_at;
	const cJSON *events;		/* array of {at, kind, detail} */
	size_t n_artifacts;
	struct media_bundle_artifact *artifacts;
	int has_checkpoint;
	struct media_bundle_checkpoint checkpoint;
};

struct media_bundle_index {
	cJSON *root;
	int format_version;
	const char *latentq_version;
	size_t n_jobs;
	struct media_bundle_job *jobs;
};

/*
 * Parses and checks bundle.json: the format version must be
 * MEDIA_BUNDLE_FORMAT_VERSION, every field present with its type, every
 * config digest the BLAKE2b-256 of its config text, every artifact path
 * relative without "..", every member name acceptable and listed once.
 * LQ-BUNDLE-004 names the field (jobs[i].key) and the rule.  `out` is
 * zeroed first and left cleared on error.
 */
enum lq_status media_bundle_parse_index(const char *text, size_t len,
    struct media_bundle_index *out, struct lq_error *err);
void media_bundle_index_clear(struct media_bundle_index *idx);

/*
 * bundle.json's text for jobs[0..n) (the inverse of
 * media_bundle_parse_index; `events` of each job is copied): pretty JSON,
 * caller-owned.  latentq_version is PACKAGE_VERSION.
 */
char *media_bundle_format_index(const struct media_bundle_job *jobs,
    size_t n);

/*
 * Finds the file the index lists for member `name`, or NULL.  Borrowed
 * from idx.
 */
const struct media_bundle_file *media_bundle_find_member(
    const struct media_bundle_index *idx, const char *name);

#endif
