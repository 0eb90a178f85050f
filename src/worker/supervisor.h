/*
 * supervisor.h — `latentq run`: claim jobs and render each in a child
 * process, so that a crash of the child (a driver segfault, an OOM kill)
 * costs one attempt of one job, never the queue.
 *
 * The supervisor never initialises Vulkan.  Per job it:
 *   claims it (store_claim_job) with a lease owned by "host:pid:starttime";
 *   spawns `latentq exec-job` (this binary, /proc/self/exe) with the job's
 *   stderr piped back, relaying it and keeping its tail;
 *   renews the lease every LEASE/4 seconds while the child works, and stops
 *   the child if the lease is lost (the job was cancelled);
 *   when the child ends, records what happened as an event and moves the job:
 *     exit 0   → the child marked it done
 *     exit 65  → the child marked it poisoned (an error retrying cannot fix)
 *     exit 75  → interrupted by a signal to the supervisor: queued again,
 *                the attempt refunded
 *     exit 70  → the worker cannot render on this host (no such device):
 *                queued again, attempt refunded, and the supervisor stops
 *     exit 74  → the disk of the outputs or of the database is full or
 *                failing (ENOSPC, EDQUOT, EIO): queued again, attempt
 *                refunded (the last checkpoint is kept, so the next run
 *                resumes), and the supervisor stops with 74
 *     exit 77  → the child found the job no longer leased to it (taken
 *                over, cancelled, reaped): it wrote nothing, and nothing
 *                is recorded — the job is its new holder's
 *     other exit or a signal → "crashed" event (signal, phase, step, stderr
 *                tail); queued with exponential backoff while attempts
 *                remain, else poisoned.  A crash in the compile phase is
 *                retried once with LATENTQ_NO_PIPELINE_CACHE=1 without
 *                counting the attempt.
 * The child is the supervisor's alone: it gets PR_SET_PDEATHSIG(SIGKILL)
 * right after fork (and exits at once if the supervisor already died before
 * that), so killing the supervisor kills its render; and every write it
 * makes is fenced by the claim's lease token (store/jobs.h), so even a
 * child that outlived its lease writes nothing.
 * SIGINT/SIGTERM: the child is asked (SIGTERM) to finish its step and
 * checkpoint; a second signal kills it (SIGKILL).  Either way the job stays
 * resumable and the supervisor exits 75.
 */
#ifndef LQ_WORKER_SUPERVISOR_H
#define LQ_WORKER_SUPERVISOR_H

#include <stddef.h>
#include <stdint.h>

struct store;

/* exec-job exit statuses with a meaning of their own (see above). */
#define SUPERVISOR_EXIT_STORAGE 74	/* EX_IOERR */
#define SUPERVISOR_EXIT_LEASE_LOST 77	/* EX_NOPERM */

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
	int verbose;
};

struct supervisor_result {
	int done, poisoned, crashed, retried, interrupted, failed_data;
};

/*
 * Runs the loop.  Returns the exit status `latentq run` should end with:
 * 0 every job it ran ended done; 1 some ended poisoned; 65 some ended
 * poisoned because their input was bad (LQ_FAILED data errors);
 * 74 stopped because storage is exhausted (jobs resumable);
 * 75 interrupted (jobs resumable).  res may be NULL.
 */
int supervisor_run(struct store *st, const struct supervisor_options *opt,
    struct supervisor_result *res);

/* This process's lease-owner string "host:pid:starttime" into buf. */
void supervisor_owner(char *buf, size_t n);

#endif
