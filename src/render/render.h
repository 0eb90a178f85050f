/*
 * render.h — one job's render, in the process that owns its lease: load
 * the model, encode the prompt, denoise with a checkpoint after every
 * step (resuming from the newest valid checkpoint), decode, write the
 * outputs.  Runs in the child that `latentq run` (src/worker/) spawns.
 *
 * Phases, as reported to the store (jobs.phase) and to fault injection:
 *   load → compile → encode-text → denoise (step k) → decode → encode-video
 */
#ifndef LQ_RENDER_RENDER_H
#define LQ_RENDER_RENDER_H

#include <signal.h>

#include "core/error.h"

struct store;
struct store_job;

struct render_options {
	int keep_checkpoints;	/* newest K kept per job; 0 keeps all */
	int resume_anywhere;	/* resume a checkpoint made on another device */
	int allow_download;	/* fetch a model URL not yet in the cache
				 * (net/layout.h); else such a job is given
				 * back, LQ-RUN-DOWNLOAD */
	const char *device;	/* --device / LATENTQ_DEVICE (cmd_globals):
				 * slot indices or name fragments, a comma
				 * list for a mesh (gpu_devices_match);
				 * NULL = the first devices */
	int attempt;		/* the job's attempt number (for fault injection) */
	int progress_tty;	/* draw a progress line (else plain log lines) */
};

/*
 * Set from a SIGTERM/SIGINT handler: the render finishes its current step,
 * commits the checkpoint and returns LQ_RETRY with code LQ-RUN-INT.
 */
extern volatile sig_atomic_t render_interrupted;

/*
 * Renders `job` (state running, leased to `owner`).  Returns LQ_OK when
 * every output is written and recorded (the caller marks the job done);
 * LQ_RETRY for failures that may pass next time (device lost, out of
 * device memory, interrupted: err->code "LQ-RUN-INT"); LQ_FAILED for
 * failures retrying cannot fix (bad model files, a non-finite latent).
 * Checkpoints already committed stay in the store in every case.
 */
enum lq_status render_job(struct store *st, const struct store_job *job,
    const char *owner, const struct render_options *opt,
    struct lq_error *err);

#endif
