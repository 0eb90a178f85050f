/*
 * transfer.c — jobs read for export and recorded from a bundle (see
 * transfer.h).
 */
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "store/transfer.h"
#include "store/store-int.h"

enum lq_status
store_import_job(struct store *st, const struct store_job_import *job,
    int64_t *id, struct lq_error *err)
{
	enum job_state state = job->state == JOB_STATE_RUNNING ?
	    JOB_STATE_QUEUED : job->state;
	struct store_stmt *s = store_prepare_cached(st,
	    "INSERT INTO jobs(request_id, name, state, config_json, "
	    "config_digest, model_digests, priority, attempts, max_attempts, "
	    "step, total_steps, phase, error_code, error_message, output_path, "
	    "created_at, updated_at, finished_at) "
	    "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) RETURNING id", err);
	if (s == NULL)
		return err->status;
	store_bind_int64(s, 1, job->request_id);
	store_bind_text(s, 2, job->name);
	store_bind_text(s, 3, job_state_name(state));
	store_bind_text(s, 4, job->config_json);
	store_bind_text(s, 5, job->config_digest);
	store_bind_text(s, 6, job->model_digests);
	store_bind_int64(s, 7, job->priority);
	store_bind_int(s, 8, job->attempts);
	store_bind_int(s, 9, job->max_attempts);
	store_bind_int(s, 10, job->step);
	store_bind_int(s, 11, job->total_steps);
	store_bind_text(s, 12, job->phase);
	store_bind_text(s, 13, job->error_code);
	store_bind_text(s, 14, job->error_message);
	store_bind_text(s, 15, job->output_path);
	store_bind_double(s, 16, job->created_at);
	store_bind_double(s, 17, util_now());
	if (job->finished_at > 0)
		store_bind_double(s, 18, job->finished_at);
	else
		store_bind_null(s, 18);
	return store_step_id(st, s, "INSERT jobs (import)", id, err);
}

enum lq_status
store_import_event(struct store *st, int64_t job_id, double at,
    const char *kind, const char *detail, struct lq_error *err)
{
	struct store_stmt *s = store_prepare_cached(st,
	    "INSERT INTO events(job_id, at, kind, detail) VALUES (?, ?, ?, ?)",
	    err);
	if (s == NULL)
		return err->status;
	store_bind_int64(s, 1, job_id);
	store_bind_double(s, 2, at);
	store_bind_text(s, 3, kind);
	store_bind_text(s, 4, detail);
	return store_step_done(st, s, "INSERT events (import)", err);
}

void
store_request_row_clear(struct store_request_row *r)
{
	free(r->manifest_path);
	free(r->manifest_digest);
	free(r->request_json);
	memset(r, 0, sizeof(*r));
}

enum lq_status
store_get_request(struct store *st, int64_t id, struct store_request_row *out,
    struct lq_error *err)
{
	memset(out, 0, sizeof(*out));
	struct store_stmt *s = store_prepare_cached(st,
	    "SELECT manifest_path, manifest_digest, request_json, entry_index, "
	    "coalesce(line, 0) FROM requests WHERE id = ?", err);
	if (s == NULL)
		return err->status;
	store_bind_int64(s, 1, id);
	int rc = store_step(s);
	enum lq_status r = LQ_OK;
	if (rc == STORE_ROW) {
		out->manifest_path = store_column_text(s, 0);
		out->manifest_digest = store_column_text(s, 1);
		out->request_json = store_column_text(s, 2);
		out->entry_index = store_column_int(s, 3);
		out->line = store_column_int(s, 4);
	} else if (rc == STORE_DONE) {
		r = error_set(err, LQ_FAILED, "LQ-JOB-001", "no request %lld",
		    (long long)id);
	} else {
		r = store_sql_error(st, "SELECT requests", err);
	}
	store_done(s);
	return r;
}

enum lq_status
store_find_artifacts_by_digest(struct store *st, const char *digest,
    int (*fn)(int64_t job_id, const char *job_name, const char *config_digest,
    const char *path, void *ud), void *ud, struct lq_error *err)
{
	struct store_stmt *s = store_prepare_cached(st,
	    "SELECT a.job_id, j.name, j.config_digest, a.path FROM artifacts a "
	    "JOIN jobs j ON j.id = a.job_id WHERE a.digest = ? ORDER BY a.id",
	    err);
	if (s == NULL)
		return err->status;
	store_bind_text(s, 1, digest);
	int rc;
	while ((rc = store_step(s)) == STORE_ROW)
		if (fn(store_column_int64(s, 0),
		    store_column_str(s, 1),
		    store_column_str(s, 2),
		    store_column_str(s, 3), ud) != 0) {
			rc = STORE_DONE;
			break;
		}
	enum lq_status r = LQ_OK;
	if (rc != STORE_DONE)
		r = store_sql_error(st, "SELECT artifacts", err);
	store_done(s);
	return r;
}

enum lq_status
store_find_other_artifact(struct store *st, const char *path,
    const char *digest, int64_t self, int64_t *id, char *name, size_t n,
    struct lq_error *err)
{
	struct store_stmt *s = store_prepare_cached(st, digest != NULL ?
	    "SELECT a.job_id, j.name FROM artifacts a JOIN jobs j ON j.id = "
	    "a.job_id WHERE a.path = ? AND a.job_id <> ? AND a.digest = ? "
	    "ORDER BY a.id LIMIT 1" :
	    "SELECT a.job_id, j.name FROM artifacts a JOIN jobs j ON j.id = "
	    "a.job_id WHERE a.path = ? AND a.job_id <> ? ORDER BY a.id "
	    "LIMIT 1", err);
	if (s == NULL)
		return err->status;
	store_bind_text(s, 1, path);
	store_bind_int64(s, 2, self);
	if (digest != NULL)
		store_bind_text(s, 3, digest);
	*id = 0;
	if (n > 0)
		name[0] = '\0';
	int rc = store_step(s);
	if (rc == STORE_ROW) {
		const char *nm = store_column_str(s, 1);
		*id = store_column_int64(s, 0);
		if (n > 0)
			snprintf(name, n, "%s", nm ? nm : "");
		rc = STORE_DONE;
	}
	enum lq_status r = LQ_OK;
	if (rc != STORE_DONE)
		r = store_sql_error(st, "SELECT artifacts", err);
	store_done(s);
	return r;
}
