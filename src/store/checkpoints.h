/*
 * checkpoints.h — per-step latent checkpoints and output artifacts in the
 * queue database.
 *
 * A checkpoint is the latent after `step` denoising steps, with what it
 * takes to trust it on resume: the BLAKE2b-256 of the blob, and the job
 * config digest, model digest and device fingerprint it was computed
 * with.  Saving is one transaction (durable when it returns: the store runs
 * WAL with synchronous=FULL); the lead may wrap it with other store calls
 * (progress) in an outer store_begin/store_commit.
 *
 * A job's checkpoints form one trajectory: saving step s drops any
 * checkpoint beyond s (left by an attempt that was abandoned there — a
 * corrupted or refused one), replaces an existing step s, then keeps the
 * newest `keep` (0 = all).
 *
 * Ownership: inputs are borrowed for the call.  A struct store_checkpoint
 * or store_artifact filled by a getter owns its memory; release it with
 * store_checkpoint_clear / store_artifact_clear.  Listing callbacks get a
 * record borrowed for the call only.  Errors as in store.h (LQ_RETRY when
 * the database stayed busy, LQ_FAILED otherwise); a failed call changes
 * nothing.
 */
#ifndef LQ_STORE_CHECKPOINTS_H
#define LQ_STORE_CHECKPOINTS_H

#include <stddef.h>
#include <stdint.h>

#include "core/digest.h"
#include "core/error.h"
#include "core/file.h"
#include "store/store.h"

#define STORE_CHECKPOINT_MAX_DIMS 8

struct store_checkpoint_new {
	int64_t job_id;
	int step;			/* steps completed, >= 0 */
	double sigma;			/* sigma reached after `step` steps */
	const char *dtype;		/* "F32", "F16", "BF16", ... */
	int ndim;			/* 1..STORE_CHECKPOINT_MAX_DIMS */
	const int64_t *shape;		/* e.g. packed [B, N, C] */
	const void *latent;		/* row-major, size bytes */
	size_t size;
	const char *config_digest;	/* the job's config digest */
	const char *model_digest;	/* digest over the model's files */
	const char *device_fingerprint;	/* which device kind computed it */
	int stage;			/* 0: one-stage job; 1, 2: that stage
					 * of a two-stage job (step counts on
					 * across stages: schema 0006) */
};

/*
 * Saves a checkpoint and prunes the job's older ones to the newest `keep`
 * (0 keeps all; the default is 2), all in one transaction, fenced
 * by the handle's lease (jobs.h: LQ-JOB-005 and nothing saved once the
 * lease is lost).
 * digest_out (may be NULL) gets the blob's BLAKE2b-256 hex.  For the known
 * float dtypes (F64, F32, F16, BF16) size must equal the shape's element
 * count times the element size (LQ-CKPT-005 otherwise).
 */
enum lq_status store_save_checkpoint(struct store *st,
    const struct store_checkpoint_new *cp, int keep,
    char digest_out[DIGEST_HEX_SIZE], struct lq_error *err);

struct store_checkpoint {
	int64_t job_id;
	int step;
	double sigma;
	char dtype[16];
	int ndim;
	int64_t shape[STORE_CHECKPOINT_MAX_DIMS];
	void *latent;			/* NULL in listings */
	size_t size;			/* blob bytes */
	char digest[DIGEST_HEX_SIZE];	/* as recorded */
	char *config_digest, *model_digest, *device_fingerprint;
	double created_at;		/* Unix seconds */
	int stage;			/* as saved (store_checkpoint_new) */
};
void store_checkpoint_clear(struct store_checkpoint *cp);

/* What a resuming worker has now; the checkpoint must match it. */
struct store_resume_key {
	const char *config_digest;
	const char *model_digest;
	const char *device_fingerprint;
	int resume_anywhere;		/* accept another device fingerprint */
};

/*
 * Finds where job `job_id` can resume: the newest checkpoint whose blob
 * still hashes to its recorded digest (and whose shape parses).  Each
 * newer one that fails is skipped for the previous, with a log warning
 * and a "checkpoint_corrupt" event {step, recorded, actual}; *skipped (may
 * be NULL) gets their count.
 *
 * The newest intact checkpoint must match `key`:
 *   config digest differs  → LQ_FAILED, LQ-CKPT-002
 *   model digest differs   → LQ_FAILED, LQ-CKPT-003 (model files changed)
 *   device differs         → LQ_FAILED, LQ-CKPT-004, unless
 *                            key->resume_anywhere: then accepted and a
 *                            "resume_anywhere" event {step, checkpoint_device,
 *                            device} is recorded
 * (older checkpoints are not tried: they come from the same run).
 * With key NULL (export) the newest intact checkpoint is returned
 * whatever it was computed with.
 *
 * On success *found is 1 and out holds the checkpoint (latent included),
 * or *found is 0 when the job has no intact checkpoint (start from step 0);
 * out is zeroed first and left cleared on error.
 */
enum lq_status store_load_checkpoint(struct store *st, int64_t job_id,
    const struct store_resume_key *key, struct store_checkpoint *out,
    int *found, int *skipped, struct lq_error *err);

/*
 * `latentq check`'s record check: verifies every checkpoint of the queue
 * as store_load_checkpoint does before resuming from it (readable dtype
 * and shape, latent digest equal to the recorded one), one latent in
 * memory at a time.  fn (may be NULL) is called for each that fails, with
 * its job, step and the problem in words (borrowed for the call); *bad
 * gets their count.  Writes nothing.
 */
enum lq_status store_verify_checkpoints(struct store *st,
    void (*fn)(int64_t job_id, int step, const char *problem, void *ud),
    void *ud, int *bad, struct lq_error *err);

/*
 * Calls fn for each checkpoint of the job, newest step first, without the
 * blob (latent NULL, size its length; digests not verified).  fn returns
 * nonzero to stop.
 */
enum lq_status store_list_checkpoints(struct store *st, int64_t job_id,
    int (*fn)(const struct store_checkpoint *cp, void *ud), void *ud,
    struct lq_error *err);

/*
 * `latentq prune`: for each done job (only job_id when > 0), deletes its
 * checkpoints, keeping the final one (step = total_steps) unless
 * `keep_final` is 0 — the one a missing output is re-decoded from.  With
 * `dry_run` nothing is deleted.  fn (may be NULL) is called per job with
 * what is (or would be) removed: count and bytes of latent.  One
 * transaction; *count and *bytes (may be NULL) get the totals.
 */
enum lq_status store_prune_checkpoints(struct store *st, int64_t job_id,
    int keep_final, int dry_run,
    void (*fn)(int64_t job_id, const char *name, int count, int64_t bytes,
    void *ud), void *ud, int *count, int64_t *bytes, struct lq_error *err);

/* Deletes every checkpoint of the job (a restart from scratch). */
enum lq_status store_delete_checkpoints(struct store *st, int64_t job_id,
    struct lq_error *err);

struct store_artifact {
	int64_t id, job_id;
	char *kind;			/* "mp4", "png", "contact_sheet", "tensors" */
	char *path;
	int64_t size;
	char digest[DIGEST_HEX_SIZE];
	double created_at;
};
void store_artifact_clear(struct store_artifact *a);

/*
 * Records an output file of a job; a row with the same job and path is
 * replaced (a retried job rewrites its files).  Fenced by the handle's
 * lease (jobs.h).
 */
enum lq_status store_add_artifact(struct store *st, int64_t job_id,
    const char *kind, const char *path, int64_t size, const char *digest,
    struct lq_error *err);

/*
 * Puts a finished temporary output in place and records it, as one step
 * under the job's lease: size and BLAKE2b-256 are read from t->fd (the
 * inode that is renamed, so they are the final file's), the data is
 * fsynced, then in one transaction the lease is checked (jobs.h,
 * Fencing), t->tmp is renamed onto t->path and the artifact row written.
 * A worker that lost its lease renames nothing (LQ-JOB-005).  Errors of
 * the file calls carry `code` (or LQ-IO-005, LQ_RETRY, for a full disk);
 * on error the temporary stays for the caller to discard, except after a
 * failed COMMIT, when the file is in place but not recorded (the next
 * attempt writes and records it again).  digest_out may be NULL.  Fits
 * struct file_commit through a small adapter (render.c).
 */
enum lq_status store_commit_artifact(struct store *st, int64_t job_id,
    const char *kind, struct file_temp *t, const char *code,
    char digest_out[DIGEST_HEX_SIZE], struct lq_error *err);

/*
 * Checks a job's recorded outputs against the files: fn is called for each
 * artifact that is missing or whose size (and, with `digests`, BLAKE2b-256)
 * differs, with problem "missing" or "changed".  *bad gets their count.
 */
enum lq_status store_check_artifacts(struct store *st, int64_t job_id,
    int digests, void (*fn)(const struct store_artifact *a,
    const char *problem, void *ud), void *ud, int *bad, struct lq_error *err);

/* Forgets a job's artifact rows (before it is rendered again). */
enum lq_status store_delete_artifacts(struct store *st, int64_t job_id,
    struct lq_error *err);

/* Calls fn for each artifact of the job in the order recorded. */
enum lq_status store_list_artifacts(struct store *st, int64_t job_id,
    int (*fn)(const struct store_artifact *a, void *ud), void *ud,
    struct lq_error *err);

/*
 * Copies the latents of steps first+1..`upto` of a job into
 * out[(step-first-1) * step_bytes ...], for `save_tensors` after a resume
 * (the render keeps every checkpoint of such a job; `first` is the step
 * its denoising started after: 0, or where denoise_strength starts it).  Each blob is verified against its digest;
 * a missing, short or corrupt one fails with LQ-CKPT-010 naming the step.
 */
enum lq_status store_fill_trajectory(struct store *st, int64_t job_id,
    float *out, size_t step_bytes, int first, int upto,
    struct lq_error *err);

#endif
