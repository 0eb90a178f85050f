/*
 * render-int.h — what render.c and the LTX-2 render (ltx2.c) share: the
 * job being rendered, its parsed config and where it came from.  Private
 * to src/render/.
 */
#ifndef LQ_RENDER_RENDER_INT_H
#define LQ_RENDER_RENDER_INT_H

#include <cjson/cJSON.h>

#include <pthread.h>
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
 * The job's `precision` (gpu_cmd_set_precision), for its transformer
 * (every family's render calls the model's _set_precision with it).
 * Preflight refused any other value, and render_job any that reached the
 * queue another way (LQ-RUN-CFG); a config without the key reads f32.
 */
enum gpu_precision render_precision(const struct job_config *jc);

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
 * driver version, latentq's version, the kernel variants the gpu ctx
 * resolved to (gpu_ctx_variant) and `resolved` (may be NULL): the
 * pipeline's resolved options that change what runs and are in neither
 * the job's config digest nor the model's (the Wan render: the UniPC
 * config as unipc_config_describe gives it, after the job's flow_shift).
 * One option flipped, one fingerprint changed: the checkpoint is refused.
 */
struct gpu_ctx;
void render_device_fingerprint(const struct gpu_ctx *gpu,
    const char *resolved, char out[DIGEST_HEX_SIZE]);

/*
 * The job's videos as files: for each of B videos its MP4 at the job's
 * output path (job_output_path; its folder made), with the job's
 * provenance (name, prompts, seed, config digest, `model_digest`), the
 * extra container `tags` and, when `audio` is not NULL, audio[b] as its
 * AAC track; then its contact sheet beside it (.sheet.png).  Each file is
 * committed as an artifact of the job (mp4, contact_sheet) under its
 * lease.  *output gets the first MP4's path (caller frees).  Errors as
 * media_write_mp4 / media_write_contact_sheet; files already committed
 * stay.
 */
struct media_tag;
struct media_audio;
struct render_videos {
	int B, F, H, W;
	const uint8_t *u8;		/* [B, F, H, W, 3] */
	const char *model_digest;
	const struct media_tag *tags;
	size_t n_tags;
	const struct media_audio *audio;	/* [B] or NULL */
};
enum lq_status render_write_videos(const struct render_job_ctx *c,
    const struct render_videos *v, char **output, struct lq_error *err);

/*
 * Writes `w` at the job's save_tensors path (relative to its manifest;
 * the folder made) and commits it as the job's "tensors" artifact.
 * Errors as st_writer_write_commit.
 */
struct st_writer;
enum lq_status render_write_tensors(const struct render_job_ctx *c,
    struct st_writer *w, struct lq_error *err);

/*
 * A fresh f32 device tensor of shape[ndim] in its own buffer (*buf, the
 * caller frees it), filled from host floats x (NULL: left undefined).
 * LQ_RETRY on device OOM, else gpu errors.
 */
struct gpu_buffer;
struct gpu_tensor;
enum lq_status render_upload(struct gpu_ctx *ctx, int ndim,
    const int64_t *shape, const float *x, struct gpu_buffer **buf,
    struct gpu_tensor *t, struct lq_error *err);

/*
 * A job's device mesh (issue 16, doc/mesh.md), shared by every pipeline's
 * render (src/render/mesh.c): rank i = data coordinate × context +
 * context coordinate, on the i-th device slot --device / LATENTQ_DEVICE
 * names (gpu_devices_match); each rank its own gpu_ctx.  Rank 0's ctx
 * runs everything that is not sharded (text encoder, scheduler, VAE).
 */
struct render_mesh;
struct render_mesh_rank {
	struct render_mesh *mesh;
	int index;			/* rank */
	int slot;			/* device slot (gpu_devices_match) */
	int data, context;		/* mesh coordinates */
	struct gpu_ctx *gpu;		/* owned by the mesh */
	/* render_mesh_run's, per call */
	pthread_t thread;
	int started;
	enum lq_status status;
	struct lq_error err;
};
typedef enum lq_status (*render_mesh_fn)(void *ud, int rank,
    struct lq_error *err);
struct render_mesh {
	int n_ranks, data, context;	/* n_ranks = data × context */
	struct render_mesh_rank *ranks;	/* owned */
	struct render_warm *warm;	/* lent by a serving worker: close
					 * gives it back (NULL: frees it) */
	/* the render_mesh_run in progress */
	render_mesh_fn fn;
	void (*abort)(void *ud, int rank);
	void *ud;
};

/*
 * Opens the mesh of jc->mesh: the first mesh.devices slots --device /
 * LATENTQ_DEVICE (`spec`, NULL: every slot, discrete first) names, all of
 * one kind, one ctx for each rank of data × context (the tensor axis is
 * not split: its devices are required, and idle), each with the queue
 * database's pipeline cache (none with LATENTQ_NO_PIPELINE_CACHE).  Fewer
 * devices than the mesh, or devices of different kinds, is LQ_FATAL
 * LQ-RUN-MESH-HOST: the worker gives the job back untouched
 * (worker_exit_for: EXIT_UNAVAILABLE), never rendering a mesh on fewer
 * devices, as preflight's LQ-MESH-007 refuses it on this host.  Records
 * the devices_used event (each rank's slot, uuid and coordinates).  On
 * error *m may hold some ranks: render_mesh_close frees them.
 * With `warm` (a serving worker's, render.h; NULL: none): the mesh it
 * kept from its previous job when that one asked for the same spec,
 * devices, data and context (no device listed, no ctx created, the same
 * devices_used event, each ctx's peak reset), else what it kept is freed
 * and the mesh opened as above, its ctxs saving their pipeline cache
 * through warm's store; render_mesh_close gives the mesh back to warm.
 */
enum lq_status render_mesh_open(struct store *st, const struct store_job *job,
    struct render_warm *warm, const char *spec, const struct job_mesh *mesh,
    struct render_mesh *m, struct lq_error *err);

/* Warms every rank's ctx up for a job at precision prec (gpu_ctx_warmup)
 * and saves its pipeline cache (a failed save is not an error). */
enum lq_status render_mesh_warmup(struct render_mesh *m,
    enum gpu_precision prec, struct lq_error *err);

/* Frees the ranks' ctxs (last rank first), or gives a mesh lent by a
 * serving worker back to it; *m is zeroed. */
void render_mesh_close(struct render_mesh *m);

/*
 * fn(ud, rank, err) for every rank at once, one thread each (a ctx is used
 * by one thread; a mesh of one runs on the caller's thread).  A rank whose
 * fn fails, or whose thread does not start (LQ_RETRY LQ-RUN-RETRY), gets
 * abort(ud, rank) (may be NULL) from its own thread, so that its context
 * group's other ranks stop waiting for it.  Returns LQ_OK when every rank
 * did; else the first failing rank's own error, preferring one that is
 * not another rank's LQ-NN-MESH.  Allocates nothing.
 */
enum lq_status render_mesh_run(struct render_mesh *m, render_mesh_fn fn,
    void (*abort)(void *ud, int rank), void *ud, struct lq_error *err);

/*
 * Rows [row0, row0 + rows) × tokens [tok0, tok0 + toks) of a host array
 * [.., S, w] (`whole`) into (gather 1) or out of (0) a rank's staging
 * [rows, toks, w] (`share`): the data axis's rows and the context axis's
 * tokens of one stream.
 */
void render_mesh_share(float *whole, int64_t S, float *share, int64_t row0,
    int64_t rows, int64_t tok0, int64_t toks, int64_t w, int gather);

/* mkdir -p of the folder `path` is in (LQ-IO-004 naming the folder). */
enum lq_status render_make_parent_dirs(const char *path, struct lq_error *err);

/*
 * WanPipeline.__call__ (diffusers pipelines/wan/pipeline_wan.py) for one
 * job of a WanPipeline model: text-to-video from prompt_embeds, a
 * checkpoint of the latents and the UniPC scheduler's history after every
 * step, one MP4 per video.  Returns as render_job (render.h).
 */
enum lq_status render_wan(const struct render_job_ctx *c,
    struct lq_error *err);

/*
 * LTX2Pipeline.__call__ (diffusers pipelines/ltx2/pipeline_ltx2.py) for
 * one job of an LTX2Pipeline model: text-to-audio+video from
 * prompt_embeds, a checkpoint of both streams after every step, one MP4
 * per video with its AAC track.  Returns as render_job (render.h).
 */
enum lq_status render_ltx2(const struct render_job_ctx *c,
    struct lq_error *err);

#endif
