/*
 * checkpoints.c — latent checkpoints (save with pruning, verified load,
 * listing) and artifacts.  See checkpoints.h.
 *
 * Blobs are bound with plain store_bind_blob (sqlite3_bind_blob): with the
 * SQLite store's 64 KiB pages that measured faster than incremental blob
 * I/O (issue 8).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "core/file.h"
#include "core/log.h"
#include "core/util.h"
#include "store/checkpoints.h"
#include "store/jobs.h"
#include "store/store-int.h"

/* Runs a statement to completion; for INSERT/UPDATE/DELETE. */
static enum lq_status
step_done(struct store *st, struct store_stmt *s, const char *what,
    struct lq_error *err)
{
	int rc = store_step(s);
	store_finalize(s);
	if (rc != STORE_DONE)
		return store_sql_error(st, what, err);
	return LQ_OK;
}

static size_t
dtype_size(const char *dtype)
{
	static const struct { const char *name; size_t size; } known[] = {
		{ "F64", 8 }, { "F32", 4 }, { "F16", 2 }, { "BF16", 2 },
	};
	for (size_t i = 0; i < LQ_ARRAY_LEN(known); i++)
		if (strcmp(dtype, known[i].name) == 0)
			return known[i].size;
	return 0;
}

static char *
shape_json(int ndim, const int64_t *shape)
{
	struct strbuf sb = { 0 };
	strbuf_append(&sb, "[", 1);
	for (int i = 0; i < ndim; i++)
		strbuf_printf(&sb, "%s%" PRId64, i ? "," : "", shape[i]);
	strbuf_append(&sb, "]", 1);
	return strbuf_release(&sb);
}

/* Parses "[a,b,...]"; 0 on success. */
static int
shape_parse(const char *text, int *ndim, int64_t *shape)
{
	cJSON *j = text ? cJSON_Parse(text) : NULL;
	int n = cJSON_IsArray(j) ? cJSON_GetArraySize(j) : -1;
	int ok = n >= 1 && n <= STORE_CHECKPOINT_MAX_DIMS;
	for (int i = 0; ok && i < n; i++) {
		const cJSON *e = cJSON_GetArrayItem(j, i);
		ok = cJSON_IsNumber(e) && e->valuedouble >= 0 &&
		    e->valuedouble == (double)(int64_t)e->valuedouble;
		if (ok)
			shape[i] = (int64_t)e->valuedouble;
	}
	cJSON_Delete(j);
	if (!ok)
		return -1;
	*ndim = n;
	return 0;
}

static enum lq_status
check_new(const struct store_checkpoint_new *cp, struct lq_error *err)
{
	LQ_ASSERT(cp->dtype && cp->latent && cp->config_digest &&
	    cp->model_digest && cp->device_fingerprint && cp->shape);
	if (cp->step < 0 || cp->ndim < 1 ||
	    cp->ndim > STORE_CHECKPOINT_MAX_DIMS || strlen(cp->dtype) >= 16)
		return error_set(err, LQ_FAILED, "LQ-CKPT-005",
		    "checkpoint of job %" PRId64 ": bad step %d, ndim %d or "
		    "dtype %s", cp->job_id, cp->step, cp->ndim, cp->dtype);
	size_t es = dtype_size(cp->dtype);
	if (es == 0)
		return LQ_OK;
	size_t count = 1;
	for (int i = 0; i < cp->ndim; i++) {
		if (cp->shape[i] < 0)
			count = SIZE_MAX;
		else
			count *= (size_t)cp->shape[i];
	}
	if (count == SIZE_MAX || count * es != cp->size) {
		char *sh = shape_json(cp->ndim, cp->shape);
		error_set(err, LQ_FAILED, "LQ-CKPT-005",
		    "checkpoint of job %" PRId64 " step %d: %zu bytes do not "
		    "hold a %s %s tensor", cp->job_id, cp->step, cp->size,
		    cp->dtype, sh);
		free(sh);
		return LQ_FAILED;
	}
	return LQ_OK;
}

enum lq_status
store_save_checkpoint(struct store *st, const struct store_checkpoint_new *cp,
    int keep, char digest_out[DIGEST_HEX_SIZE], struct lq_error *err)
{
	enum lq_status r = check_new(cp, err);
	if (r != LQ_OK)
		return r;
	LQ_ASSERT(keep >= 0);
	char digest[DIGEST_HEX_SIZE];
	digest_hex(cp->latent, cp->size, digest);
	char *shape = shape_json(cp->ndim, cp->shape);

	if ((r = store_begin_fenced(st, cp->job_id, err)) != LQ_OK) {
		free(shape);
		return r;
	}
	/* Whatever lies beyond this step belongs to an abandoned attempt. */
	/* the statements of every step: kept (store_prepare_cached) */
	struct store_stmt *s = store_prepare_cached(st,
	    "DELETE FROM checkpoints WHERE job_id = ? AND step > ?", err);
	if (s == NULL)
		goto fail;
	store_bind_int64(s, 1, cp->job_id);
	store_bind_int(s, 2, cp->step);
	if ((r = store_step_done(st, s, "DELETE checkpoints (later steps)",
	    err)) != LQ_OK)
		goto fail;

	s = store_prepare_cached(st,
	    "INSERT INTO checkpoints(job_id, step, sigma, dtype, "
	    "shape, latent, digest, config_digest, model_digest, "
	    "device_fingerprint, created_at, stage) "
	    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
	    "ON CONFLICT(job_id, step) DO UPDATE SET sigma = excluded.sigma, "
	    "dtype = excluded.dtype, shape = excluded.shape, "
	    "latent = excluded.latent, digest = excluded.digest, "
	    "config_digest = excluded.config_digest, "
	    "model_digest = excluded.model_digest, "
	    "device_fingerprint = excluded.device_fingerprint, "
	    "created_at = excluded.created_at, stage = excluded.stage", err);
	if (s == NULL)
		goto fail;
	store_bind_int64(s, 1, cp->job_id);
	store_bind_int(s, 2, cp->step);
	store_bind_double(s, 3, cp->sigma);
	store_bind_text(s, 4, cp->dtype);
	store_bind_text(s, 5, shape);
	store_bind_blob(s, 6, cp->latent, cp->size);
	store_bind_text(s, 7, digest);
	store_bind_text(s, 8, cp->config_digest);
	store_bind_text(s, 9, cp->model_digest);
	store_bind_text(s, 10, cp->device_fingerprint);
	store_bind_double(s, 11, util_now());
	store_bind_int(s, 12, cp->stage);
	if ((r = store_step_done(st, s, "INSERT checkpoints", err)) != LQ_OK)
		goto fail;

	if (keep > 0) {
		/* Drop every step at or below the (keep+1)-th newest. */
		s = store_prepare_cached(st,
		    "DELETE FROM checkpoints WHERE job_id = ?1 AND step <= "
		    "(SELECT step FROM checkpoints WHERE job_id = ?1 "
		    "ORDER BY step DESC LIMIT 1 OFFSET ?2)", err);
		if (s == NULL)
			goto fail;
		store_bind_int64(s, 1, cp->job_id);
		store_bind_int(s, 2, keep);
		if ((r = store_step_done(st, s, "DELETE checkpoints (prune)",
		    err)) != LQ_OK)
			goto fail;
	}
	if ((r = store_commit(st, err)) != LQ_OK) {
		free(shape);
		return r;
	}
	free(shape);
	if (digest_out != NULL)
		memcpy(digest_out, digest, DIGEST_HEX_SIZE);
	return LQ_OK;
fail:
	store_rollback(st);
	free(shape);
	return err->status;
}

void
store_checkpoint_clear(struct store_checkpoint *cp)
{
	free(cp->latent);
	free(cp->config_digest);
	free(cp->model_digest);
	free(cp->device_fingerprint);
	memset(cp, 0, sizeof(*cp));
}

/* Fills cp from a row (step, sigma, dtype, shape, digest, config, model,
 * device, created_at, size) without the blob; -1 if the shape or dtype is
 * unreadable. */
static int
row_to_checkpoint(struct store_stmt *s, int64_t job_id, struct store_checkpoint *cp)
{
	memset(cp, 0, sizeof(*cp));
	cp->job_id = job_id;
	cp->step = store_column_int(s, 0);
	cp->sigma = store_column_double(s, 1);
	const char *dtype = store_column_str(s, 2);
	snprintf(cp->dtype, sizeof(cp->dtype), "%s", dtype ? dtype : "");
	int bad = dtype == NULL || strlen(dtype) >= sizeof(cp->dtype) ||
	    shape_parse(store_column_str(s, 3), &cp->ndim,
	    cp->shape) != 0;
	const char *d = store_column_str(s, 4);
	snprintf(cp->digest, sizeof(cp->digest), "%s", d ? d : "");
	cp->config_digest = store_column_text(s, 5);
	cp->model_digest = store_column_text(s, 6);
	cp->device_fingerprint = store_column_text(s, 7);
	cp->created_at = store_column_double(s, 8);
	cp->size = (size_t)store_column_int64(s, 9);
	cp->stage = store_column_int(s, 10);
	return bad ? -1 : 0;
}

#define CHECKPOINT_COLUMNS "step, sigma, dtype, shape, digest, " \
	"config_digest, model_digest, device_fingerprint, created_at, " \
	"length(latent), stage"
/* the latent's column when ", latent" follows CHECKPOINT_COLUMNS */
#define CHECKPOINT_LATENT 11

struct skipped_ckpt {
	int step;
	char recorded[DIGEST_HEX_SIZE], actual[DIGEST_HEX_SIZE];
};

static enum lq_status
add_event_json(struct store *st, int64_t job_id, const char *kind,
    cJSON *detail, struct lq_error *err)
{
	char *text = cJSON_PrintUnformatted(detail);
	cJSON_Delete(detail);
	enum lq_status r = store_add_event(st, job_id, kind, text, err);
	cJSON_free(text);
	return r;
}

/*
 * The check a checkpoint passes before a job resumes from it, for a row
 * of CHECKPOINT_COLUMNS followed by the latent (CHECKPOINT_LATENT): fills cp as
 * row_to_checkpoint and actual with the latent's digest.  0: intact; -1:
 * unreadable shape or dtype; 1: the latent's digest differs from the
 * recorded one.
 */
static int
verify_row(struct store_stmt *s, int64_t job_id, struct store_checkpoint *cp,
    char actual[DIGEST_HEX_SIZE])
{
	int unreadable = row_to_checkpoint(s, job_id, cp) != 0;
	digest_hex(store_column_blob(s, CHECKPOINT_LATENT),
	    store_column_bytes(s, CHECKPOINT_LATENT), actual);
	if (unreadable)
		return -1;
	return strcmp(actual, cp->digest) == 0 ? 0 : 1;
}

/* What a verify_row result other than 0 means, in words. */
static const char *
verify_problem(int v)
{
	return v < 0 ? "unreadable shape or dtype" :
	    "blob digest differs from the recorded one";
}

enum lq_status
store_verify_checkpoints(struct store *st,
    void (*fn)(int64_t job_id, int step, const char *problem, void *ud),
    void *ud, int *bad, struct lq_error *err)
{
	*bad = 0;
	/* the keys first, then one latent at a time: PostgreSQL's driver
	 * holds a whole result in memory */
	struct store_stmt *s = store_prepare(st, "SELECT job_id, step FROM "
	    "checkpoints ORDER BY job_id, step", err);
	if (s == NULL)
		return err->status;
	struct { int64_t job_id; int step; } *keys = NULL;
	size_t n = 0;
	int rc;
	while ((rc = store_step(s)) == STORE_ROW) {
		keys = xrealloc(keys, (n + 1) * sizeof(*keys));
		keys[n].job_id = store_column_int64(s, 0);
		keys[n].step = store_column_int(s, 1);
		n++;
	}
	enum lq_status r = rc == STORE_DONE ? LQ_OK :
	    store_sql_error(st, "SELECT checkpoints", err);
	store_finalize(s);
	s = r == LQ_OK ? store_prepare(st, "SELECT " CHECKPOINT_COLUMNS
	    ", latent FROM checkpoints WHERE job_id = ? AND step = ?", err) :
	    NULL;
	if (s == NULL && r == LQ_OK)
		r = err->status;
	for (size_t i = 0; r == LQ_OK && i < n; i++) {
		store_bind_int64(s, 1, keys[i].job_id);
		store_bind_int(s, 2, keys[i].step);
		if ((rc = store_step(s)) == STORE_ROW) {
			struct store_checkpoint cp;
			char actual[DIGEST_HEX_SIZE];
			int v = verify_row(s, keys[i].job_id, &cp, actual);
			store_checkpoint_clear(&cp);
			if (v != 0) {
				(*bad)++;
				if (fn != NULL)
					fn(keys[i].job_id, keys[i].step,
					    verify_problem(v), ud);
			}
		} else if (rc != STORE_DONE) {	/* DONE: pruned meanwhile */
			r = store_sql_error(st, "SELECT checkpoints", err);
		}
		store_done(s);
	}
	store_finalize(s);
	free(keys);
	return r;
}

/* Checks the intact checkpoint against what the worker has now. */
static enum lq_status
check_match(const struct store_checkpoint *cp,
    const struct store_resume_key *key, int *anywhere, struct lq_error *err)
{
	*anywhere = 0;
	if (strcmp(cp->config_digest, key->config_digest) != 0) {
		error_set(err, LQ_FAILED, "LQ-CKPT-002",
		    "checkpoint at step %d of job %" PRId64 " was made with job "
		    "config %s, the job's config is now %s", cp->step,
		    cp->job_id, cp->config_digest, key->config_digest);
		error_set_hint(err, "the job's settings changed since it was "
		    "checkpointed; resubmit it as a new job");
		return LQ_FAILED;
	}
	if (strcmp(cp->model_digest, key->model_digest) != 0) {
		error_set(err, LQ_FAILED, "LQ-CKPT-003",
		    "checkpoint at step %d of job %" PRId64 " was made with "
		    "model %s, but the model files now digest to %s: the model "
		    "changed since the job started", cp->step, cp->job_id,
		    cp->model_digest, key->model_digest);
		error_set_hint(err, "restore the model files the job was "
		    "started with, or resubmit the job to start over");
		return LQ_FAILED;
	}
	if (strcmp(cp->device_fingerprint, key->device_fingerprint) != 0) {
		if (key->resume_anywhere) {
			*anywhere = 1;
			return LQ_OK;
		}
		error_set(err, LQ_FAILED, "LQ-CKPT-004",
		    "checkpoint at step %d of job %" PRId64 " was made on "
		    "device %s, this worker's device is %s; results could "
		    "differ from an uninterrupted render", cp->step,
		    cp->job_id, cp->device_fingerprint,
		    key->device_fingerprint);
		error_set_hint(err, "run the job on the original device, or "
		    "pass --resume-anywhere to continue here (recorded in the "
		    "job's events)");
		return LQ_FAILED;
	}
	return LQ_OK;
}

enum lq_status
store_load_checkpoint(struct store *st, int64_t job_id,
    const struct store_resume_key *key, struct store_checkpoint *out,
    int *found, int *skipped, struct lq_error *err)
{
	LQ_ASSERT(key == NULL || (key->config_digest && key->model_digest &&
	    key->device_fingerprint));
	memset(out, 0, sizeof(*out));
	*found = 0;
	if (skipped != NULL)
		*skipped = 0;
	struct store_stmt *s = store_prepare(st, "SELECT " CHECKPOINT_COLUMNS
	    ", latent FROM checkpoints WHERE job_id = ? ORDER BY step DESC",
	    err);
	if (s == NULL)
		return err->status;
	store_bind_int64(s, 1, job_id);

	struct skipped_ckpt *bad = NULL;
	size_t n_bad = 0;
	int rc;
	while ((rc = store_step(s)) == STORE_ROW) {
		char actual[DIGEST_HEX_SIZE];
		int v = verify_row(s, job_id, out, actual);
		if (v == 0) {
			const void *blob = store_column_blob(s,
			    CHECKPOINT_LATENT);
			size_t size = store_column_bytes(s, CHECKPOINT_LATENT);
			out->latent = xmalloc(size ? size : 1);
			memcpy(out->latent, blob, size);
			out->size = size;
			*found = 1;
			break;
		}
		bad = xrealloc(bad, (n_bad + 1) * sizeof(*bad));
		bad[n_bad].step = out->step;
		memcpy(bad[n_bad].recorded, out->digest, DIGEST_HEX_SIZE);
		snprintf(bad[n_bad].actual, sizeof(bad[n_bad].actual), "%s",
		    v < 0 ? "unreadable shape or dtype" : actual);
		n_bad++;
		log_warn("checkpoint at step %d of job %" PRId64 " is corrupted "
		    "(%s); trying the previous one", out->step, job_id,
		    verify_problem(v));
		store_checkpoint_clear(out);
	}
	enum lq_status r = LQ_OK;
	if (rc != STORE_ROW && rc != STORE_DONE)
		r = store_sql_error(st, "SELECT checkpoints", err);
	store_finalize(s);

	int anywhere = 0;
	if (r == LQ_OK && *found && key != NULL)
		r = check_match(out, key, &anywhere, err);
	/* Record what was skipped and any explicit choice, in one transaction. */
	if (r == LQ_OK && (n_bad > 0 || anywhere)) {
		if ((r = store_begin_fenced(st, job_id, err)) == LQ_OK) {
			for (size_t i = 0; r == LQ_OK && i < n_bad; i++) {
				cJSON *d = cJSON_CreateObject();
				cJSON_AddNumberToObject(d, "step", bad[i].step);
				cJSON_AddStringToObject(d, "recorded",
				    bad[i].recorded);
				cJSON_AddStringToObject(d, "actual",
				    bad[i].actual);
				r = add_event_json(st, job_id,
				    "checkpoint_corrupt", d, err);
			}
			if (r == LQ_OK && anywhere) {
				cJSON *d = cJSON_CreateObject();
				cJSON_AddNumberToObject(d, "step", out->step);
				cJSON_AddStringToObject(d, "checkpoint_device",
				    out->device_fingerprint);
				cJSON_AddStringToObject(d, "device",
				    key->device_fingerprint);
				r = add_event_json(st, job_id,
				    "resume_anywhere", d, err);
			}
			if (r == LQ_OK)
				r = store_commit(st, err);
			else
				store_rollback(st);
		}
	}
	free(bad);
	if (r != LQ_OK) {
		store_checkpoint_clear(out);
		*found = 0;
		return r;
	}
	if (skipped != NULL)
		*skipped = (int)n_bad;
	return LQ_OK;
}

enum lq_status
store_list_checkpoints(struct store *st, int64_t job_id,
    int (*fn)(const struct store_checkpoint *cp, void *ud), void *ud,
    struct lq_error *err)
{
	struct store_stmt *s = store_prepare(st, "SELECT " CHECKPOINT_COLUMNS
	    " FROM checkpoints WHERE job_id = ? ORDER BY step DESC", err);
	if (s == NULL)
		return err->status;
	store_bind_int64(s, 1, job_id);
	int rc = STORE_DONE, stop = 0;
	while (!stop && (rc = store_step(s)) == STORE_ROW) {
		struct store_checkpoint cp;
		row_to_checkpoint(s, job_id, &cp);
		stop = fn(&cp, ud);
		store_checkpoint_clear(&cp);
	}
	enum lq_status r = LQ_OK;
	if (!stop && rc != STORE_DONE)
		r = store_sql_error(st, "SELECT checkpoints", err);
	store_finalize(s);
	return r;
}

enum lq_status
store_delete_checkpoints(struct store *st, int64_t job_id,
    struct lq_error *err)
{
	enum lq_status r = store_begin_fenced(st, job_id, err);
	if (r != LQ_OK)
		return r;
	struct store_stmt *s = store_prepare(st,
	    "DELETE FROM checkpoints WHERE job_id = ?", err);
	if (s == NULL) {
		store_rollback(st);
		return err->status;
	}
	store_bind_int64(s, 1, job_id);
	if ((r = step_done(st, s, "DELETE checkpoints", err)) != LQ_OK) {
		store_rollback(st);
		return r;
	}
	return store_commit(st, err);
}

/* ---- artifacts ---- */

void
store_artifact_clear(struct store_artifact *a)
{
	free(a->kind);
	free(a->path);
	memset(a, 0, sizeof(*a));
}

/* DELETE + INSERT of the artifact row, inside the caller's transaction. */
static enum lq_status
put_artifact(struct store *st, int64_t job_id, const char *kind,
    const char *path, int64_t size, const char *digest, struct lq_error *err)
{
	enum lq_status r;
	struct store_stmt *s = store_prepare(st,
	    "DELETE FROM artifacts WHERE job_id = ? AND path = ?", err);
	if (s == NULL)
		return err->status;
	store_bind_int64(s, 1, job_id);
	store_bind_text(s, 2, path);
	if ((r = step_done(st, s, "DELETE artifacts", err)) != LQ_OK)
		return r;
	s = store_prepare(st,
	    "INSERT INTO artifacts(job_id, kind, path, size, digest, "
	    "created_at) VALUES (?, ?, ?, ?, ?, ?)", err);
	if (s == NULL)
		return err->status;
	store_bind_int64(s, 1, job_id);
	store_bind_text(s, 2, kind);
	store_bind_text(s, 3, path);
	store_bind_int64(s, 4, size);
	store_bind_text(s, 5, digest);
	store_bind_double(s, 6, util_now());
	return step_done(st, s, "INSERT artifacts", err);
}

enum lq_status
store_add_artifact(struct store *st, int64_t job_id, const char *kind,
    const char *path, int64_t size, const char *digest, struct lq_error *err)
{
	LQ_ASSERT(kind && path && digest);
	enum lq_status r = store_begin_fenced(st, job_id, err);
	if (r != LQ_OK)
		return r;
	if ((r = put_artifact(st, job_id, kind, path, size, digest, err)) !=
	    LQ_OK) {
		store_rollback(st);
		return r;
	}
	return store_commit(st, err);
}

enum lq_status
store_commit_artifact(struct store *st, int64_t job_id, const char *kind,
    struct file_temp *t, const char *code, char digest_out[DIGEST_HEX_SIZE],
    struct lq_error *err)
{
	LQ_ASSERT(kind && t->fd >= 0 && t->tmp && t->path);
	/* Size and digest of the very inode that is renamed, read before the
	 * write lock is taken (hashing under it would stall other workers). */
	int64_t size;
	char digest[DIGEST_HEX_SIZE];
	enum lq_status r = file_digest_fd(t->fd, t->tmp, &size, digest, err);
	if (r == LQ_OK)
		r = file_sync_temp(t, code, err);
	if (r != LQ_OK)
		return r;
	if ((r = store_begin_fenced(st, job_id, err)) != LQ_OK)
		return r;
	/* Renamed while holding the write lock after the lease check: no
	 * claim by another worker can come between the check and the file. */
	if ((r = file_rename_temp(t, code, err)) != LQ_OK ||
	    (r = put_artifact(st, job_id, kind, t->path, size, digest, err)) !=
	    LQ_OK) {
		store_rollback(st);
		return r;
	}
	if ((r = store_commit(st, err)) != LQ_OK)
		return r;
	if (digest_out != NULL)
		memcpy(digest_out, digest, DIGEST_HEX_SIZE);
	return LQ_OK;
}

enum lq_status
store_list_artifacts(struct store *st, int64_t job_id,
    int (*fn)(const struct store_artifact *a, void *ud), void *ud,
    struct lq_error *err)
{
	struct store_stmt *s = store_prepare(st,
	    "SELECT id, kind, path, size, digest, created_at FROM artifacts "
	    "WHERE job_id = ? ORDER BY id", err);
	if (s == NULL)
		return err->status;
	store_bind_int64(s, 1, job_id);
	int rc = STORE_DONE, stop = 0;
	while (!stop && (rc = store_step(s)) == STORE_ROW) {
		struct store_artifact a = { 0 };
		a.id = store_column_int64(s, 0);
		a.job_id = job_id;
		a.kind = store_column_text(s, 1);
		a.path = store_column_text(s, 2);
		a.size = store_column_int64(s, 3);
		const char *d = store_column_str(s, 4);
		snprintf(a.digest, sizeof(a.digest), "%s", d ? d : "");
		a.created_at = store_column_double(s, 5);
		stop = fn(&a, ud);
		store_artifact_clear(&a);
	}
	enum lq_status r = LQ_OK;
	if (!stop && rc != STORE_DONE)
		r = store_sql_error(st, "SELECT artifacts", err);
	store_finalize(s);
	return r;
}

enum lq_status
store_fill_trajectory(struct store *st, int64_t job_id, float *out,
    size_t step_bytes, int first, int upto, struct lq_error *err)
{
	struct store_stmt *s = store_prepare(st, "SELECT step, latent, digest FROM "
	    "checkpoints WHERE job_id = ? AND step BETWEEN ? AND ? ORDER BY step",
	    err);
	if (s == NULL)
		return err->status;
	store_bind_int64(s, 1, job_id);
	store_bind_int(s, 2, first + 1);
	store_bind_int(s, 3, upto);
	int want = first + 1, rc;
	while ((rc = store_step(s)) == STORE_ROW) {
		int step = store_column_int(s, 0);
		const void *blob = store_column_blob(s, 1);
		size_t n = store_column_bytes(s, 1);
		const char *digest = store_column_str(s, 2);
		char hex[DIGEST_HEX_SIZE];
		digest_hex(blob, n, hex);
		if (step != want || n != step_bytes || digest == NULL ||
		    strcmp(hex, digest) != 0)
			break;
		memcpy((char *)out + (size_t)(step - first - 1) * step_bytes, blob,
		    n);
		want++;
	}
	store_finalize(s);
	if (rc != STORE_ROW && rc != STORE_DONE)
		return store_sql_error(st, "SELECT checkpoints", err);
	if (want <= upto)
		return error_set(err, LQ_FAILED, "LQ-CKPT-010", "job %lld: the "
		    "checkpoint of step %d is missing or does not verify; "
		    "save_tensors needs every step", (long long)job_id, want);
	return LQ_OK;
}

enum lq_status
store_prune_checkpoints(struct store *st, int64_t job_id, int keep_final,
    int dry_run, void (*fn)(int64_t job_id, const char *name, int count,
    int64_t bytes, void *ud), void *ud, int *count, int64_t *bytes,
    struct lq_error *err)
{
	int total = 0;
	int64_t total_bytes = 0;
	enum lq_status r = store_begin(st, err);
	if (r != LQ_OK)
		return r;
	/* What goes: every checkpoint of a done job but (maybe) its newest,
	 * the one a re-render decodes from.  The newest, not the one at
	 * jobs.total_steps: a two-stage job's steps count on across stages
	 * (schema 0006), so its last ordinal is past stage 1's total. */
	static const char *const where = "FROM checkpoints c JOIN jobs j ON "
	    "j.id = c.job_id WHERE j.state = 'done' AND (?1 <= 0 OR j.id = ?1) "
	    "AND (?2 = 0 OR c.step <> (SELECT max(m.step) FROM checkpoints m "
	    "WHERE m.job_id = j.id))";
	char *sql = xasprintf("SELECT j.id, j.name, count(*), "
	    "sum(length(c.latent)) %s GROUP BY j.id ORDER BY j.id", where);
	struct store_stmt *s = store_prepare(st, sql, err);
	free(sql);
	if (s == NULL) {
		store_rollback(st);
		return err->status;
	}
	store_bind_int64(s, 1, job_id);
	store_bind_int(s, 2, keep_final ? 1 : 0);
	int rc;
	while ((rc = store_step(s)) == STORE_ROW) {
		int n = store_column_int(s, 2);
		int64_t b = store_column_int64(s, 3);
		total += n;
		total_bytes += b;
		if (fn != NULL)
			fn(store_column_int64(s, 0),
			    store_column_str(s, 1), n, b, ud);
	}
	store_finalize(s);
	if (rc != STORE_DONE) {
		r = store_sql_error(st, "SELECT checkpoints", err);
		store_rollback(st);
		return r;
	}
	if (!dry_run) {
		sql = xasprintf("DELETE FROM checkpoints WHERE (job_id, step) IN "
		    "(SELECT c.job_id, c.step %s)", where);
		s = store_prepare(st, sql, err);
		free(sql);
		if (s == NULL) {
			store_rollback(st);
			return err->status;
		}
		store_bind_int64(s, 1, job_id);
		store_bind_int(s, 2, keep_final ? 1 : 0);
		rc = store_step(s);
		store_finalize(s);
		if (rc != STORE_DONE) {
			r = store_sql_error(st, "DELETE checkpoints", err);
			store_rollback(st);
			return r;
		}
	}
	if ((r = store_commit(st, err)) != LQ_OK)
		return r;
	if (count != NULL)
		*count = total;
	if (bytes != NULL)
		*bytes = total_bytes;
	return LQ_OK;
}

struct check_ctx {
	void (*fn)(const struct store_artifact *a, const char *problem, void *ud);
	void *ud;
	int bad, digests;
};

static int
check_one(const struct store_artifact *a, void *ud)
{
	struct check_ctx *c = ud;
	struct stat sb;
	const char *problem = NULL;
	if (stat(a->path, &sb) != 0) {
		problem = "missing";
	} else if ((int64_t)sb.st_size != a->size) {
		problem = "changed";
	} else if (c->digests) {
		char digest[DIGEST_HEX_SIZE];
		struct lq_error e;
		error_clear(&e);
		if (digest_file(a->path, digest, &e) != LQ_OK)
			problem = "missing";
		else if (strcmp(digest, a->digest) != 0)
			problem = "changed";
	}
	if (problem != NULL) {
		c->bad++;
		if (c->fn != NULL)
			c->fn(a, problem, c->ud);
	}
	return 0;
}

enum lq_status
store_check_artifacts(struct store *st, int64_t job_id, int digests,
    void (*fn)(const struct store_artifact *a, const char *problem, void *ud),
    void *ud, int *bad, struct lq_error *err)
{
	struct check_ctx c = {fn, ud, 0, digests};
	enum lq_status r = store_list_artifacts(st, job_id, check_one, &c, err);
	if (bad != NULL)
		*bad = c.bad;
	return r;
}

enum lq_status
store_delete_artifacts(struct store *st, int64_t job_id, struct lq_error *err)
{
	struct store_stmt *s = store_prepare_cached(st,
	    "DELETE FROM artifacts WHERE job_id = ?", err);
	if (s == NULL)
		return err->status;
	store_bind_int64(s, 1, job_id);
	return store_step_done(st, s, "DELETE artifacts", err);
}
