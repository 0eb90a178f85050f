/*
 * jobs.h — requests, jobs, leases and events in the queue database.
 *
 * Job lifecycle (enforced in jobs.c; every transition checks the state it
 * leaves, so a stale worker cannot finish a job someone else owns):
 *
 *                 store_add_job                 store_add_job (preflight failed)
 *                      │                                 │
 *                      ▼                                 ▼
 *   store_retry_job ┌────────┐ store_cancel_job  ┌──────────┐
 *   ┌──────────────▶│ queued │──────────────┐    │ rejected │ (terminal)
 *   │               └────────┘              │    └──────────┘
 *   │        store_claim_job │  ▲           ▼
 *   │                        ▼  │ store_requeue_job (crash, retry, signal,
 *   │               ┌─────────┐ │   host fault; lease expiry: failures <
 *   │               │ running │─┘   max_attempts)
 *   │               └─────────┘──────────────┐ store_cancel_job
 *   │  store_finish_job │  │ store_requeue_job (failures = max)
 *   │                   ▼  │  / store_fail_job       ▼
 *   │             ┌──────┐ │                  ┌───────────┐
 *   │             │ done │ └────────┐         │ cancelled │──┐
 *   │             └──────┘ store_redo_job (its output is missing or
 *   │               → queued            changed: rendered again)
 *   │                               ▼         └───────────┘  │
 *   │                         ┌──────────┐                   │
 *   └─────────────────────────│ poisoned │◀──────────────────┘
 *        store_retry_job      └──────────┘   (retry goes to queued)
 *
 * Attempts and failures (issue 21): `attempts` counts every claim;
 * `failures` counts the job's own faults (a crash: a signal or an
 * unexpected exit of its worker) since it last made progress, and only
 * failures poison it (failures reaching max_attempts).  Progress is a
 * checkpoint committed by the attempt (jobs.step beyond claim_step): a
 * crash after progress restarts the count at 1, anything else after
 * progress at 0.  A lost lease, an interruption (SIGTERM), a RETRY-graded
 * error and a host fault never count; a host fault also gives the attempt
 * back.  Every requeue records a "requeued" (or "poisoned") event whose
 * detail names the reason (job_requeue_reason_name), the code, the
 * failures and whether the attempt made progress.
 *
 * Leases: a claim sets lease_owner and lease_expires; the owner renews it
 * with store_renew_lease.  store_claim_job first returns every running job
 * whose lease expired (or whose owner on this host is provably dead) to
 * queued, as a JOB_REQUEUE_LEASE_LOST requeue — then claims.
 *
 * Fencing: every claim increments the job's lease_token.  A worker binds
 * its store handle to the claim it renders under with store_hold_lease;
 * from then on each write of that job's records on the handle (checkpoint,
 * artifact, progress, event, model pin, output path, done, poisoned) runs
 * in a transaction that first checks that the job is still running under
 * that owner and token.  A worker whose lease was lost (reaped after its
 * supervisor died or its lease expired, taken over, cancelled) therefore
 * writes nothing: the write fails with JOB_CODE_LEASE_LOST (LQ-JOB-005)
 * and changes no row.
 * Ownership passes only through a transaction that changes lease_owner /
 * lease_token, so the row is the one truth; expiry alone does not fence
 * (a lapsed lease that nobody reaped is still the holder's).
 *
 * Ownership: struct store_job owns its strings; store_job_clear frees them.
 */
#ifndef LQ_STORE_JOBS_H
#define LQ_STORE_JOBS_H

#include <stdint.h>

#include "core/error.h"
#include "store/store.h"

enum job_state {
	JOB_STATE_QUEUED,
	JOB_STATE_RUNNING,
	JOB_STATE_DONE,
	JOB_STATE_REJECTED,
	JOB_STATE_CANCELLED,
	JOB_STATE_POISONED,
};

const char *job_state_name(enum job_state s);
/* Returns 0 and sets *out, or -1 for an unknown name. */
int job_state_parse(const char *name, enum job_state *out);

struct store_request {
	const char *manifest_path;
	const char *manifest_digest;
	int entry_index;
	int line;
	const char *request_json;	/* the entry as written */
};

/* Records a request; *id gets its row id. */
enum lq_status store_add_request(struct store *st,
    const struct store_request *req, int64_t *id, struct lq_error *err);

struct store_job_new {
	int64_t request_id;
	const char *name;
	enum job_state state;		/* QUEUED or REJECTED */
	const char *config_json;	/* canonical JSON */
	const char *config_digest;
	const char *model_digests;	/* JSON or NULL */
	int64_t priority;	/* queue order, higher first; |v| <= 2^53 (manifest) */
	int max_attempts;
	int total_steps;
	const char *output_path;	/* may be NULL */
	const char *error_code;		/* REJECTED: the first error */
	const char *error_message;
};

/* Adds a job (and a "submitted" or "rejected" event); *id gets its id. */
enum lq_status store_add_job(struct store *st, const struct store_job_new *job,
    int64_t *id, struct lq_error *err);

struct store_job {
	int64_t id, request_id;
	char *name;
	enum job_state state;
	char *config_json, *config_digest, *model_digests;
	int64_t priority;
	int attempts, max_attempts, step, total_steps;
	char *lease_owner;
	int64_t lease_token;		/* which claim (see Fencing above) */
	double lease_expires, not_before;	/* 0 when NULL */
	char *phase, *error_code, *error_message, *output_path;
	double created_at, updated_at, finished_at;
	int failures;			/* job faults since the last progress */
	int claim_step;			/* step when the current attempt began */
	double claimed_at, started_at;	/* this attempt, the first; 0 if none */
	double run_seconds;		/* wall time of the ended attempts */
	char *error_grade;		/* "retry", "failed", "fatal" or NULL */
	/* from the request */
	char *manifest_path, *request_json;
	int request_line;
};
void store_job_clear(struct store_job *job);

/* The code of a fenced write refused because the lease is not held. */
#define JOB_CODE_LEASE_LOST "LQ-JOB-005"

/* One claim of a job: its holder and fencing token (borrowed strings). */
struct store_lease {
	int64_t job_id;
	const char *owner;		/* store_lease_owner_self of the supervisor */
	int64_t token;			/* jobs.lease_token the claim set */
};

/*
 * Binds this store handle to `lease` (copied; NULL unbinds): later writes
 * of lease->job_id's records through this handle are fenced (see Fencing
 * above) and fail with LQ-JOB-005 once the lease is no longer this one.
 */
void store_hold_lease(struct store *st, const struct store_lease *lease);

/* Loads job `id`; LQ_FAILED (LQ-JOB-001) if there is none. */
enum lq_status store_get_job(struct store *st, int64_t id,
    struct store_job *out, struct lq_error *err);

/*
 * Finds a job by a user's reference: a number is an id, anything else the
 * newest job of that name.  LQ_FAILED (LQ-JOB-001) naming `ref` if none.
 */
enum lq_status store_find_job(struct store *st, const char *ref,
    struct store_job *out, struct lq_error *err);

/*
 * The newest job with this config digest that is queued, running or done,
 * for idempotent submit: *id = 0 when there is none.  In a write
 * transaction it also keeps other submitters out until the transaction
 * ends (on PostgreSQL an advisory lock; SQLite's write lock already does),
 * so a job inserted after finding none is the only one of its config even
 * when several hosts submit the same manifest at once.
 */
enum lq_status store_find_live_job(struct store *st, const char *config_digest,
    int64_t *id, enum job_state *state, struct lq_error *err);

/*
 * 1 when the job's config_json is the text its config_digest names
 * (BLAKE2b-256 of the canonical JSON, as submit wrote both); 0 when the
 * record was changed outside latentq, so neither a render nor a resume
 * may trust it (render_job's LQ-RUN-CFG, store_check's record check).
 */
int store_job_config_intact(const struct store_job *job);

/*
 * Calls fn for every job (ordered by id), optionally restricted to one
 * state (filter < 0 for all).  fn returns nonzero to stop.  The job passed
 * is borrowed for the call only.
 */
enum lq_status store_list_jobs(struct store *st, int filter,
    int (*fn)(const struct store_job *job, void *ud), void *ud,
    struct lq_error *err);

/*
 * Atomically claims the best claimable job (queued, not_before passed,
 * highest priority, then lowest id), optionally only among ids[0..n):
 * state → running, attempts + 1, lease to `owner` for lease_seconds.
 * *claimed = 0 (and out untouched) when nothing is claimable.  Returns
 * expired leases to the queue first (see above).
 */
enum lq_status store_claim_job(struct store *st, const char *owner,
    double lease_seconds, const int64_t *ids, size_t n,
    struct store_job *out, int *claimed, struct lq_error *err);

/*
 * When will a queued job (among ids[0..n) when ids != NULL) next be
 * claimable?  *at = the earliest not_before (0 when one is claimable now),
 * or -1 when no job is queued.  Also counts running jobs (leased to anyone)
 * into *running (may be NULL).
 */
enum lq_status store_next_claimable(struct store *st, const int64_t *ids,
    size_t n, double *at, int *running, struct lq_error *err);

/* Extends the lease; LQ_FAILED (LQ-JOB-003) if `owner` no longer holds it. */
enum lq_status store_renew_lease(struct store *st, int64_t id,
    const char *owner, double lease_seconds, struct lq_error *err);

/* Running job's progress (phase may be NULL, step < 0, to keep them). */
enum lq_status store_set_progress(struct store *st, int64_t id,
    const char *phase, int step, int total_steps, struct lq_error *err);

/* Records the job's main output file (path as written to disk). */
enum lq_status store_set_output(struct store *st, int64_t id,
    const char *output_path, struct lq_error *err);

/*
 * Digests pinned before the model identity of model/ref.h (schema 0002)
 * carry this prefix in jobs.model_digests, checkpoints.model_digest and
 * models.digest: they were computed another way and can be compared with
 * nothing.  store_repin_legacy_model_digest replaces a job's legacy pin,
 * and the same value on its checkpoints, by `digest` in one transaction
 * (so a job queued before the upgrade renders, and resumes, once).
 */
#define STORE_LEGACY_DIGEST_PREFIX "legacy:"
enum lq_status store_repin_legacy_model_digest(struct store *st, int64_t id,
    const char *legacy, const char *digest, struct lq_error *err);

/*
 * Pins the digest of the model files a job renders with, the first time
 * (when none is pinned yet); later renders and resumes compare with it.
 */
enum lq_status store_pin_model_digest(struct store *st, int64_t id,
    const char *digest, struct lq_error *err);

/* running → done, by the lease owner (fenced when a lease is held). */
enum lq_status store_finish_job(struct store *st, int64_t id, const char *owner,
    const char *output_path, struct lq_error *err);

/* Why a running job goes back to the queue (see "Attempts" above). */
enum job_requeue_reason {
	JOB_REQUEUE_CRASH,	/* the job's fault: counts a failure */
	JOB_REQUEUE_RETRY,	/* a RETRY-graded error: backoff, no failure */
	JOB_REQUEUE_INTERRUPTED,/* SIGTERM / preemption: no failure */
	JOB_REQUEUE_HOST,	/* this host cannot render: attempt given back */
	JOB_REQUEUE_LEASE_LOST,	/* its worker vanished (reaped lease) */
};
/* "crash", "retry", "interrupted", "host", "lease_lost". */
const char *job_requeue_reason_name(enum job_requeue_reason r);

/*
 * running → queued (not claimable for backoff_seconds), or → poisoned when
 * the failures reach max_attempts (only JOB_REQUEUE_CRASH counts one);
 * records code, grade (LQ_OK for none) and message as the last error and
 * a "requeued"/"poisoned" event naming the reason.  *new_state (may be
 * NULL) gets the state it went to.  LQ-JOB-002 when `owner` does not hold
 * the job.
 */
enum lq_status store_requeue_job(struct store *st, int64_t id,
    const char *owner, double backoff_seconds, enum job_requeue_reason reason,
    const char *code, enum lq_status grade, const char *message,
    enum job_state *new_state, struct lq_error *err);

/*
 * This process's lease owner, "host:pid:starttime:bootid", into buf: the
 * host is LATENTQ_HOST if set (':' becomes '_'), else gethostname();
 * starttime is field 22 of /proc/self/stat, bootid the kernel's
 * /proc/sys/kernel/random/boot_id.  Together they name one process of one
 * boot of one host, which no pid reuse or reboot repeats.
 */
void store_lease_owner_self(char *buf, size_t n);

/*
 * Is this lease owner (store_lease_owner_self; the older
 * "host:pid:starttime" too) a process of this host that provably no longer
 * exists: another boot, or no such process now?  0 for another host's
 * owner (undecidable: its lease expiry decides).
 */
int store_lease_owner_dead(const char *owner);

/* running → poisoned at once (an error retrying cannot fix). */
enum lq_status store_fail_job(struct store *st, int64_t id, const char *owner,
    const char *code, const char *message, struct lq_error *err);

/* queued or running → cancelled, last error cleared.  Else LQ-JOB-002. */
enum lq_status store_cancel_job(struct store *st, int64_t id,
    struct lq_error *err);

/*
 * poisoned or cancelled → queued with attempts, failures and the last
 * error cleared.  Else LQ-JOB-002.
 */
enum lq_status store_retry_job(struct store *st, int64_t id,
    struct lq_error *err);

/*
 * done → queued because its recorded output is missing or changed: the
 * job's artifact rows are forgotten, a "redo" event {reason} recorded, and
 * its checkpoints kept (a final one makes the render a re-decode).
 * LQ-JOB-002 for a job that is not done.
 */
enum lq_status store_redo_job(struct store *st, int64_t id, const char *reason,
    struct lq_error *err);

/* Appends an event; detail is JSON text or NULL. */
enum lq_status store_add_event(struct store *st, int64_t job_id,
    const char *kind, const char *detail, struct lq_error *err);

/* Calls fn(at, kind, detail) for each event of a job in order. */
enum lq_status store_list_events(struct store *st, int64_t job_id,
    int (*fn)(double at, const char *kind, const char *detail, void *ud),
    void *ud, struct lq_error *err);

#endif
