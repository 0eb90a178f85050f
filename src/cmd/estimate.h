/*
 * estimate.h — how long a job will take, from this installation's own
 * history (the done jobs in the queue database), for `status --json`
 * and `status --watch`:
 *   1. the median run time of done jobs of the same shape (height, width,
 *      num_frames, num_inference_steps);
 *   2. else a least-squares fit of run time against
 *      pixels × frames × steps over all done jobs (two sizes at least);
 *   3. else unknown (-1).
 * A done job's run time is jobs.run_seconds: the wall time of its
 * attempts, claim to end.  A running job with a committed step in this
 * attempt is measured by its own pace instead.
 *
 * Ownership: struct estimate_history is filled by estimate_history_load
 * and freed by estimate_history_free.
 */
#ifndef LQ_CMD_ESTIMATE_H
#define LQ_CMD_ESTIMATE_H

#include <stddef.h>

#include "core/error.h"

struct store;
struct store_job;

struct estimate_sample {
	long long height, width, frames, steps;
	double seconds;
};

struct estimate_history {
	struct estimate_sample *v;
	size_t n;
};

/* Reads every done job with a recorded run time. */
enum lq_status estimate_history_load(struct store *st,
    struct estimate_history *h, struct lq_error *err);
void estimate_history_free(struct estimate_history *h);

/* A job's shape from its config; 0 when the config lacks one. */
int estimate_job_shape(const struct store_job *j, struct estimate_sample *out);

/* Seconds a whole run of this shape takes (rules 1-2 above), or -1. */
double estimate_total(const struct estimate_history *h,
    const struct estimate_sample *shape);

/*
 * Seconds per denoising step of a running job, measured from its current
 * attempt (claimed_at, claim_step, step), or -1 when it has no committed
 * step in this attempt yet.
 */
double estimate_step_seconds(const struct store_job *j, double now);

/*
 * Seconds left for a job: 0 when it has ended; for a running job its own
 * pace times the steps left when known, else the history's total scaled
 * by the fraction of steps left (less the time this attempt has run, for
 * a running job); -1 when unknown.
 */
double estimate_remaining(const struct estimate_history *h,
    const struct store_job *j, double now);

#endif
