/*
 * render-int.h — what render.c and the LTX-2 render (ltx2.c) share: the
 * job being rendered, its parsed config and where it came from.  Private
 * to src/render/.
 */
#ifndef LQ_RENDER_RENDER_INT_H
#define LQ_RENDER_RENDER_INT_H

#include <cjson/cJSON.h>

#include <stdint.h>

#include "core/digest.h"
#include "core/error.h"
#include "core/file.h"
#include "gpu/caps.h"
#include "gpu/gpu.h"
#include "manifest/job.h"
#include "model/ref.h"
#include "model/safetensors.h"
#include "render/render.h"
#include "store/store.h"

/* One job handed to a pipeline's render, every pointer borrowed. */
struct render_job_ctx {
	struct store *st;
	const struct store_job *job;
	const char *owner;
	const struct render_options *opt;
	const struct job_config *jc;	/* parsed from config */
	const cJSON *config;
	const char *base_dir;		/* the manifest's folder */
	const struct model_ref *ref;	/* the model, resolved (URLs fetched) */
};

/*
 * Enters a phase of a job's render: the store's progress row (step of
 * `total`, so a crash names where it was), a "phase" event, and the fault
 * injection hook at the phase's start (core/fault.h: an "oom" rule makes
 * this fail with LQ_RETRY, LQ-GPU-OOM).  Store errors as returned.
 */
enum lq_status render_enter_phase(struct store *st,
    const struct store_job *job, const struct render_options *opt,
    const char *phase, int step, int total, struct lq_error *err);

/*
 * A random draw of shape[ndim] floats into `out` named `name` (upstream's
 * name, latentq-manifest(5) `noise`): the noise file's tensor when `noise`
 * holds one (of exactly that shape, else LQ_FAILED LQ-RUN-NOISE naming both
 * shapes, field "noise"; `noise_path` names the file), else latentq's
 * normal(seed, purpose, i) (sampler/rng.h).
 */
enum lq_status render_draw(const struct st_file *noise, const char *noise_path,
    uint64_t seed, const char *name, uint32_t purpose, int ndim,
    const int64_t *shape, float *out, struct lq_error *err);

/*
 * A file_commit hook (core/file.h) for a job's outputs: the finished
 * temporary is renamed into place and recorded as an artifact of `kind`
 * in one step under the job's lease (store_commit_artifact), so a worker
 * that lost the job writes nothing.  ud is a struct render_artifact.
 */
struct render_artifact {
	struct store *st;
	int64_t job_id;
	const char *kind;	/* "mp4", "contact_sheet", "tensors", ... */
};
enum lq_status render_commit_artifact(void *ud, struct file_temp *t,
    const char *code, struct lq_error *err);

/*
 * Checks the model's identity `digest` (of the folder `root`, for
 * messages) against the one the job pinned at submit and pins it when none
 * was: a digest pinned by a latentq older than the identity (schema 0002)
 * is trusted once and re-pinned; another digest is this host's fault, not
 * the job's: LQ_FATAL LQ-RUN-MODEL-HOST gives the job back untouched.
 */
enum lq_status render_pin_model(struct store *st, const struct store_job *job,
    const char *root, const char *digest, struct lq_error *err);

/*
 * The device fingerprint a checkpoint records and a resume must match
 * (unless --resume-anywhere): BLAKE2b-256 of the device's name, UUID,
 * driver version, latentq's version and, unless it is "shader", the
 * kernel variant (gpu_ctx_kernel_variant: the host-GEMM path on a CPU
 * device gives other bits than the shaders).
 */
void render_device_fingerprint(const struct gpu_ctx *gpu,
    char out[DIGEST_HEX_SIZE]);

/* mkdir -p of the folder `path` is in (LQ-IO-004 naming the folder). */
enum lq_status render_make_parent_dirs(const char *path, struct lq_error *err);

/*
 * LTX2Pipeline.__call__ (diffusers pipelines/ltx2/pipeline_ltx2.py) for
 * one job of an LTX2Pipeline model: text-to-audio+video from
 * prompt_embeds, a checkpoint of both streams after every step, one MP4
 * per video with its AAC track.  Returns as render_job (render.h).
 */
enum lq_status render_ltx2(const struct render_job_ctx *c,
    struct lq_error *err);

#endif
