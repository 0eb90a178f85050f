/*
 * job.h — a job's config, typed: `struct job_config`, built once from the
 * validated config JSON (manifest.h's job->config, or the jobs table's
 * config_json) by job_config_from_json, and the values derived from it,
 * each computed by exactly one function here (job_batch, job_latent_shape,
 * the output paths).  Preflight, submit, render and the worker read a job
 * through this struct; cJSON stays at the edges.
 *
 * Defaults: a key absent from the JSON gets the default of its row in the
 * manifest key table (manifest/schema.c) and nowhere else.  Adding a key is
 * one row there, one field here (filled in job_config_from_json) and one
 * line in latentq-manifest(5).
 *
 * Ownership: the strings of a struct job_config are BORROWED from the JSON
 * it was built from (which must outlive it); the `loras` array is owned and
 * released by job_config_free (so are `conditions` and `stg_blocks`).  Paths returned by the job_*_path functions
 * are caller-owned (free()).
 */
#ifndef LQ_MANIFEST_JOB_H
#define LQ_MANIFEST_JOB_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "core/error.h"

struct job_lora {
	const char *path;	/* LoRA safetensors, resolved by the manifest */
	double scale;		/* strength it is fused with */
};

/* One LTXVideoCondition (pipelines/ltx/pipeline_ltx_condition.py). */
struct job_condition {
	const char *image;	/* PNG or JPEG, resolved by the manifest */
	int64_t frame_index;	/* video frame it conditions */
	double strength;	/* lerp weight and conditioning mask, 0..1 */
};

/*
 * `second_stage:` of a two-stage job (LTX-Video's two-stage recipe, issue 14
 * item 5): stage 1 is the job's own keys ending in latents, the latent
 * upsampler (LTXLatentUpsamplePipeline, pipelines/ltx/
 * pipeline_ltx_latent_upsample.py) doubles them, stage 2 refines them with
 * LTXConditionPipeline at denoise_strength and decodes.  A key left out
 * takes the table's default, or (num_inference_steps, guidance,
 * image_cond_noise_scale and the decode keys) the job's own value.
 */
struct job_second_stage {
	int present;				/* the job has second_stage */
	const char *latent_upsampler;		/* folder, resolved */
	double adain_factor, tone_map_compression_ratio;
	int64_t height, width;			/* stage 2's pixels */
	int64_t num_inference_steps;
	double denoise_strength;
	double guidance_scale, guidance_rescale;
	double image_cond_noise_scale;
	double decode_timestep, decode_noise_scale;
};

/* The device mesh (DESIGN "Devices and meshes"): devices = data × context
 * × tensor once preflight has resolved a -1 axis. */
struct job_mesh {
	int64_t devices, data, context, tensor;
};

/* One field per key of the table (latentq-manifest(5) names them). */
struct job_config {
	const char *name;			/* NULL: not written */
	const char *prompt, *negative_prompt;	/* prompt: "" when absent */
	const char *prompt_embeds;
	int64_t height, width, num_frames;	/* pixels, pixels, frames */
	double frame_rate;			/* frames per second */
	int64_t num_inference_steps;
	double guidance_scale, guidance_rescale;
	double decode_timestep, decode_noise_scale;
	uint64_t seed;
	const char *latents, *decode_noise;
	const char *noise;			/* safetensors of random draws */
	const char *image;			/* image-to-video: the first frame */
	/* LTXConditionPipeline (job_condition_pipeline): denoise_strength
	 * in (0, 1], 1 when absent; has_denoise_strength when written */
	double denoise_strength;
	int has_denoise_strength;
	struct job_condition *conditions;	/* owned */
	size_t n_conditions;
	double image_cond_noise_scale;
	/* LTX2Pipeline's guidance: each stream's CFG, STG and modality
	 * scales and rescale (the video's are guidance_scale and
	 * guidance_rescale); the audio ones as upstream resolves them (an
	 * audio value of 0 is the video's, `audio_x or x`, unless
	 * audio_scales_literal); the STG blocks (owned) */
	double stg_scale, modality_scale;
	double audio_guidance_scale, audio_stg_scale, audio_modality_scale;
	double audio_guidance_rescale;
	int audio_scales_literal;
	int64_t *stg_blocks;			/* owned */
	size_t n_stg_blocks;
	int use_cross_timestep;
	/* WanPipeline: the UniPC scheduler's flow_shift when has_flow_shift
	 * (written), else the scheduler config's */
	double flow_shift;
	int has_flow_shift;
	const char *model;			/* a folder or a registered name */
	const char *transformer, *vae, *text_encoder, *scheduler;
	const char *model_digest;		/* NULL: not pinned */
	struct job_lora *loras;			/* owned */
	size_t n_loras;
	int64_t max_sequence_length;		/* tokens */
	int truncate;
	struct job_mesh mesh;
	double per_device_batch_size;
	const char *weight_streaming;		/* "auto", "on" or "off" */
	const char *precision;			/* gpu_precision_parse's */
	const char *output, *frames, *save_tensors;	/* templates, expanded */
	const cJSON *vae_tiling;		/* borrowed; NULL: auto (see
						   ltxv_vae_tiling_from_json) */
	int64_t max_attempts, priority;
	struct job_second_stage second_stage;
	/* 0: the whole job; 1 or 2: a job_stage_config view of that stage */
	int stage;
};

/*
 * Fills *jc from a validated config object.  Absent keys (and a null
 * decode_noise_scale, which means decode_timestep as in diffusers) take the
 * key table's default.  A present key of the wrong type fails with
 * LQ_FAILED, code LQ-RUN-CFG, err's field = the key; *jc is then zeroed
 * (nothing to free).  On success free with job_config_free.
 */
enum lq_status job_config_from_json(const cJSON *config, struct job_config *jc,
    struct lq_error *err);

/* Releases what job_config_from_json allocated and zeroes *jc. */
void job_config_free(struct job_config *jc);

/*
 * The config one stage of a two-stage job renders with: stage 1 is *jc
 * itself (ending in latents, not decoded), stage 2 is *jc with
 * second_stage's height, width, num_inference_steps, denoise_strength,
 * guidance, image_cond_noise_scale and decode keys, and no `latents:`
 * (its latents are the upsampler's).  Both keep the conditions.  out->stage
 * is `stage` and out->second_stage is cleared.  A shallow copy: its strings
 * and arrays are BORROWED from jc, never job_config_free it.  jc must have
 * second_stage; stage is 1 or 2.
 */
void job_stage_config(const struct job_config *jc, int stage,
    struct job_config *out);

/* 1 when the job has `second_stage:` (the two-stage recipe). */
int job_two_stage(const struct job_config *jc);

/*
 * 1 when the job renders with diffusers' LTXConditionPipeline semantics
 * (pipelines/ltx/pipeline_ltx_condition.py: linear_quadratic_schedule,
 * per-token Euler step, video coordinates, the initial noise always
 * drawn) rather than LTXPipeline's: the job has denoise_strength or
 * conditions, or is a stage of a two-stage job (both stages are
 * LTXConditionPipeline calls in the recipe).
 */
int job_condition_pipeline(const struct job_config *jc);

/*
 * The keys that name model folders, in one order: "model", then the
 * component overrides "transformer", "vae", "text_encoder", "scheduler".
 * job_model_values gives a job's values for them (borrowed from jc; NULL
 * when absent).  Each may be a URL (model/ref.h model_ref_is_url).
 */
#define JOB_MODEL_KEYS 5
extern const char *const job_model_keys[JOB_MODEL_KEYS];
void job_model_values(const struct job_config *jc,
    const char *out[JOB_MODEL_KEYS]);

/*
 * Videos the job renders: per_device_batch_size × mesh.data.  Data
 * parallelism splits the batch over the data axis; context parallelism
 * splits each video's tokens and tensor parallelism its weights, so neither
 * adds videos (DESIGN "Devices and meshes"; issue 16: {devices 2, context
 * 2} renders what one device renders).  *exact (may be NULL) gets the
 * product before rounding.  Returns the product when it is a positive whole
 * number (within 1e-9), else 0: preflight refuses such a job (LQ-MESH-001).
 * A mesh axis below 1 (unresolved -1) counts as 1.
 */
int64_t job_batch(const struct job_config *jc, double *exact);

/*
 * Transformer rows per video: 2 (the conditional and the unconditional
 * half) when classifier-free guidance is on, else 1.  diffusers
 * LTXPipeline (pipelines/ltx/pipeline_ltx.py): do_classifier_free_guidance
 * = guidance_scale > 1, and the latents are torch.cat([latents] * 2).
 */
int job_cfg_rows(const struct job_config *jc);

/*
 * The data-parallel split (issue 16): the batch unit is the transformer
 * row (videos × job_cfg_rows), so one video with guidance is two rows and
 * per_device_batch_size 0.5 on data 2 gives each device one row.  Returns
 * the rows each device of the data axis runs, per_device_batch_size ×
 * job_cfg_rows, when job_batch is whole and that is a positive whole
 * number (within 1e-9); else 0: preflight refuses the job (LQ-MESH-006)
 * and the render never starts it.  *rows (may be NULL) gets the job's
 * rows (job_batch × job_cfg_rows; 0 when job_batch is 0).
 */
int64_t job_rows_per_device(const struct job_config *jc, int64_t *rows);

/*
 * job_rows_per_device for a pipeline of `per_video` transformer rows per
 * video (job_cfg_rows for LTX-Video, job_ltx2_passes for LTX-2): the rows
 * each device of the data axis runs, per_device_batch_size × per_video,
 * when job_batch is whole and that is a positive whole number; else 0.
 * *rows (may be NULL) gets job_batch × per_video.
 */
int64_t job_rows_per_device_of(const struct job_config *jc, int per_video,
    int64_t *rows);

/*
 * The transformer passes of one LTX2Pipeline step (diffusers
 * pipelines/ltx2/pipeline_ltx2.py): classifier-free guidance (cfg: the
 * unconditional and the conditional row of each video) when
 * guidance_scale or audio_guidance_scale > 1, spatio-temporal guidance
 * (stg: one perturbed row) when stg_scale or audio_stg_scale > 0, and
 * modality isolation (iso: one row without a2v / v2a) when
 * modality_scale or audio_modality_scale > 1.  Fills *p (may be NULL) and
 * returns the rows per video, (cfg ? 2 : 1) + stg + iso: the unit the
 * data axis splits (doc/mesh.md).
 */
struct job_ltx2_passes {
	int cfg, stg, iso;
};
int job_ltx2_passes(const struct job_config *jc, struct job_ltx2_passes *p);

/*
 * Latent geometry of the job's video, as LTXPipeline.prepare_latents sizes
 * it (pipelines/ltx/pipeline_ltx.py): frames = (num_frames - 1) / temporal
 * + 1, height / spatial, width / spatial (VAE compression ratios), and the
 * packed token count (frames / patch_t)(height / patch)(width / patch)
 * (_pack_latents).  batch = job_batch().
 */
struct job_latent_shape {
	int64_t batch, frames, height, width, tokens;
};

/*
 * Returns 0 and fills *out when the geometry is on the model's grid (every
 * size positive, height/width divisible by spatial × patch, num_frames - 1
 * by temporal and the latent frames by patch_t); -1 otherwise (*out
 * zeroed).  The ratios and patches are >= 1.
 */
int job_latent_shape(const struct job_config *jc, int spatial, int temporal,
    int patch, int patch_t, struct job_latent_shape *out);

/*
 * `p` (a path of the job) against base_dir (the manifest's folder): an
 * absolute path as is, else "<base_dir>/<p>".  NULL for a NULL p.
 */
char *job_resolve_path(const char *base_dir, const char *p);

/*
 * The MP4 of video `video` (0-based) of `n_videos`: `output` resolved
 * against base_dir; when n_videos > 1 its extension replaced by
 * "-<video>.mp4" ("out/a.mp4" → "out/a-1.mp4").  The template was expanded by the
 * manifest and is not expanded again.  NULL when the config has no output.
 */
char *job_output_path(const struct job_config *jc, const char *base_dir,
    int video, int n_videos);

/* The PNG frames folder of video `video`: `frames` resolved, with
 * "/<video>" appended when n_videos > 1; NULL without `frames`. */
char *job_frames_path(const struct job_config *jc, const char *base_dir,
    int video, int n_videos);

/* "dir/name.mp4" → "dir/name<suffix>" (the extension, if any, replaced). */
char *job_path_sibling(const char *path, const char *suffix);

#endif
