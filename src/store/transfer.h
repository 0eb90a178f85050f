/*
 * transfer.h — records that move between queues and hosts: the request
 * of a job for `latentq export`; jobs that come from another queue
 * (`latentq import`) — a job row with the state, progress and history it
 * had there, and its events with their original times; and the lookup of
 * an output by digest for `latentq verify`.
 *
 * An imported job enters the state machine of jobs.h at the state it had,
 * except that a job that was running there comes in queued (its lease
 * belonged to another queue): queued, done, rejected, cancelled and
 * poisoned are kept as they are.
 *
 * Ownership: inputs are borrowed for the call.  Errors as in store.h; a
 * failed call changes nothing (callers group the calls of one bundle in
 * store_begin / store_commit).
 */
#ifndef LQ_STORE_TRANSFER_H
#define LQ_STORE_TRANSFER_H

#include <stdint.h>

#include "core/error.h"
#include "store/jobs.h"
#include "store/store.h"

struct store_job_import {
	int64_t request_id;		/* from store_add_request */
	const char *name;
	enum job_state state;		/* RUNNING is recorded as QUEUED */
	const char *config_json, *config_digest;
	const char *model_digests;	/* may be NULL */
	int64_t priority;
	int max_attempts, attempts, step, total_steps;
	const char *phase, *error_code, *error_message;	/* may be NULL */
	const char *output_path;	/* on this host; may be NULL */
	double created_at;		/* Unix seconds, as on the other queue */
	double finished_at;		/* 0 = not finished */
};

/* Records the job; *id gets its id here.  No event is added. */
enum lq_status store_import_job(struct store *st,
    const struct store_job_import *job, int64_t *id, struct lq_error *err);

/* Appends an event with its original time `at` (Unix seconds). */
enum lq_status store_import_event(struct store *st, int64_t job_id, double at,
    const char *kind, const char *detail, struct lq_error *err);

/* A request row as recorded, for export.  Owns its strings. */
struct store_request_row {
	char *manifest_path, *manifest_digest, *request_json;
	int entry_index, line;
};
void store_request_row_clear(struct store_request_row *r);

/* Loads request `id`; LQ_FAILED (LQ-JOB-001) if there is none. */
enum lq_status store_get_request(struct store *st, int64_t id,
    struct store_request_row *out, struct lq_error *err);

/*
 * Calls fn(job_id, config_digest, path) for every recorded artifact whose
 * BLAKE2b-256 is `digest` (oldest first); fn returns nonzero to stop.
 */
enum lq_status store_find_artifacts_by_digest(struct store *st,
    const char *digest,
    int (*fn)(int64_t job_id, const char *job_name, const char *config_digest,
    const char *path, void *ud), void *ud, struct lq_error *err);

/*
 * The oldest recorded artifact at `path` (and, when digest is not NULL,
 * of that BLAKE2b-256) of a job other than `self`: its job's id into *id
 * (0 when there is none) and name into name (n bytes).  Two jobs writing
 * one file: render_commit_artifact warns, cmd_check_outputs keeps it.
 */
enum lq_status store_find_other_artifact(struct store *st, const char *path,
    const char *digest, int64_t self, int64_t *id, char *name, size_t n,
    struct lq_error *err);

#endif
