/*
 * supervisor.h — `latentq run`: claim jobs and render each in a child
 * process, so that a crash of the child (a driver segfault, an OOM kill)
 * costs one attempt of one job, never the queue.
 *
 * The supervisor never initialises Vulkan.  Per job it:
 *   claims it (store_claim_job) with a lease owned by "host:pid:start:boot";
 *   spawns `latentq exec-job` (this binary, /proc/self/exe) with the job's
 *   stderr piped back, relaying it and keeping its tail — or, unless
 *   LATENTQ_WARM_WORKER=0, hands the job to the serving child it started
 *   for an earlier job (`exec-job --serve`, worker/protocol.h), which kept
 *   its devices and pipelines; a fresh one when there is none, or it died;
 *   renews the lease every LEASE/4 seconds while the child works, and stops
 *   the child if the lease is lost (the job was cancelled);
 *   when the child ends, records what happened and moves the job, as the
 *     worker protocol says (worker/protocol.h: the child's exit statuses
 *     and its worker_error report), counting attempts and failures as
 *     store/jobs.h says: a crash counts a failure (a crash in the compile
 *     phase is first retried once with LATENTQ_NO_PIPELINE_CACHE=1, not
 *     counted); an interruption, a RETRY error, a lost lease never do; a
 *     host fault gives the job back untouched and stops the supervisor, and
 *     so does a full or failing disk (the job resumes from its last
 *     checkpoint on the next run).
 * The child is the supervisor's alone: it gets PR_SET_PDEATHSIG(SIGKILL)
 * right after fork (and exits at once if the supervisor already died before
 * that), so killing the supervisor kills its render; and every write it
 * makes is fenced by the claim's lease token (store/jobs.h), so even a
 * child that outlived its lease writes nothing.
 * SIGINT/SIGTERM: the child is asked (SIGTERM) to finish its step and
 * checkpoint; if it has not ended within supervisor_stop_seconds() (or at a
 * second signal) it is killed (SIGKILL), so its step in progress is lost
 * and the job resumes from the step before.  Either way the lease is given
 * back at once and the supervisor exits 75.
 */
#ifndef LQ_WORKER_SUPERVISOR_H
#define LQ_WORKER_SUPERVISOR_H

#include <stddef.h>
#include <stdint.h>

struct store;

enum supervisor_mode {
	SUPERVISOR_ONCE,	/* until no claimable or backing-off job remains */
	SUPERVISOR_FOLLOW,	/* keep waiting for new jobs */
};

struct supervisor_options {
	enum supervisor_mode mode;
	int max_jobs;			/* stop after this many claims; 0 = no limit */
	const int64_t *only_ids;	/* restrict to these jobs (render); NULL = all */
	size_t n_ids;
	const char *db_path;		/* passed to the child */
	const char *device;		/* passed to the child */
	int keep_checkpoints;		/* passed to the child (-1: default) */
	int resume_anywhere;
	int allow_download;	/* the child may fetch a job's model URLs */
	int verbose;
	const char *webhook;		/* --webhook: also notify this URL */
};

struct supervisor_result {
	int done, poisoned, crashed, retried, interrupted, failed_data;
};

/*
 * Runs the loop.  Returns the exit status `latentq run` should end with
 * (core/exit.def): 0 every job it ran ended done; 1 some ended poisoned
 * by crashes; 65 some ended poisoned because their input was bad
 * (LQ_FAILED errors); 69 this host cannot render (the job given back);
 * 74 the queue database failed, or the disk of the outputs or of the
 * database is full or failing (jobs resumable); 75 interrupted (jobs
 * resumable).  res may
 * be NULL.
 */
int supervisor_run(struct store *st, const struct supervisor_options *opt,
    struct supervisor_result *res);

/*
 * Seconds between SIGTERM and the end of `run` at most (plus the time to
 * record it): $LATENTQ_STOP_SECONDS, default 20 — under the 25-30 s that
 * Kubernetes, GCE and Slurm grant before SIGKILL.  Stated in latentq(1).
 */
double supervisor_stop_seconds(void);

/* This process's lease owner (store_lease_owner_self) into buf. */
void supervisor_owner(char *buf, size_t n);

#endif
