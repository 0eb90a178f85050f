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
struct render_warm;

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
	struct render_warm *warm;	/* a serving worker's (render_warm_create):
				 * the job's devices come from it and go back
				 * to it; NULL: opened and freed by this job */
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

/*
 * What a serving worker (`exec-job --serve`, worker/protocol.h) keeps
 * between the jobs it renders: the last job's device mesh, each rank's
 * gpu ctx with its compiled pipelines (the seconds of startup: Vulkan's
 * instance and device, and pipeline creation, which on lavapipe only
 * Mesa's own disk cache shortens).  A job whose mesh asks for the same
 * --device spec, device count, data and context borrows it
 * (render_mesh_open, render-int.h) and gives it back at its end; any
 * other job frees it and opens its own, which is kept instead.  Model
 * weights are not kept: the memory plan (nn/plan.h) has the text
 * encoder, the transformer and the VAE each alone on the device, so they
 * are loaded per job as in a fresh process (the page cache keeps their
 * files).  Nothing of a job (latents, scheduler, store handle, lease) is
 * kept.  Outputs are byte-identical to a fresh process's
 * (tests/cli/warm.sh).
 *
 * `cache_st` is the store handle the kept ctxs load and save their
 * VkPipelineCache through (a job's own handle is closed with the job);
 * borrowed, it must outlive render_warm_free.
 */
struct render_warm *render_warm_create(struct store *cache_st);

/* Frees what is kept (saving the pipeline caches).  NULL is ok. */
void render_warm_free(struct render_warm *w);

/* 1 when w holds a mesh kept from its last job (NULL: 0). */
int render_warm_holds(const struct render_warm *w);

#endif
