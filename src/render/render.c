/*
 * render.c — one job, end to end (see render.h): the LTXPipeline.__call__
 * loop of diffusers (pipelines/ltx/pipeline_ltx.py) with a checkpoint after
 * every step.
 *
 * What runs where: the transformer, the T5 encoder and the VAE decoder run
 * on the Vulkan device (src/nn/); the scheduler, guidance, the Euler step,
 * packing and post-processing run on the CPU in float32 exactly as upstream
 * (src/sampler/), so the latent after each step is a host array that is
 * checkpointed as is.  The latent never lives only on the device, which is
 * what makes resume bit-exact: step k+1 starts from the very bytes that were
 * committed after step k.
 *
 * Everything is allocated before the denoising loop; the loop allocates
 * nothing.
 *
 * On a device mesh (issue 16, doc/mesh.md) the transformer runs on every
 * rank at once, each on its rows (data) and tokens (context); the host
 * arrays and everything else are as on one device, so the bits are too.
 */
#include <errno.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "config.h"
#include "core/codes.h"
#include "core/digest.h"
#include "core/fault.h"
#include "core/file.h"
#include "core/json.h"
#include "core/log.h"
#include "core/util.h"
#include "gpu/gpu.h"
#include "manifest/job.h"
#include "media/media.h"
#include "model/diffusers.h"
#include "model/safetensors.h"
#include "nn/ltxv_transformer.h"
#include "nn/ltxv_upsampler.h"
#include "nn/ltxv_vae.h"
#include "nn/ltxv_vae_encoder.h"
#include "nn/plan.h"
#include "nn/t5.h"
#include "model/hash.h"
#include "model/lora.h"
#include "model/ref.h"
#include "net/layout.h"
#include "nn/weights.h"
#include "store/models.h"
#include "render/render.h"
#include "render/render-int.h"
#include "sampler/latents.h"
#include "sampler/rng.h"
#include "sampler/scheduler.h"
#include "store/checkpoints.h"
#include "store/jobs.h"
#include "store/store.h"
#include "text/prompt.h"
#include "text/tokenizer.h"

volatile sig_atomic_t render_interrupted;

/*
 * What one rank of the job's mesh (render_mesh, render-int.h; issue 16,
 * doc/mesh.md) holds: its own transformer (the same weights), input/output
 * buffers and host staging, to run the transformer on its rows (data) and
 * its tokens (context); everything else (text encoder, scheduler,
 * guidance, VAE) runs on rank 0, whose ctx is r->gpu.
 */
struct mesh_rank {
	struct render *r;
	int data;			/* its data coordinate */
	struct gpu_ctx *gpu;		/* the mesh's (borrowed) */
	struct ltxv_transformer *transformer;
	struct gpu_buffer *buf_in, *buf_text, *buf_out;
	int row0, rows;			/* transformer rows [row0, row0+rows) */
	int tok0, toks;			/* video tokens [tok0, tok0+toks) */
	float *in, *out;		/* [rows, toks, C] host staging */
	float *tt;			/* [rows, toks] per-token timesteps */
	struct ltxv_transformer_args args;	/* per step */
};

/* Everything one render holds; released by render_free. */
struct render {
	struct store *st;
	const struct store_job *job;
	const char *owner;
	const struct render_options *opt;
	struct job_config whole;	/* the job's config (owns its arrays) */
	/*
	 * The stage being rendered (stage_setup): jc is the job's config for
	 * a one-stage job (stage 0), else job_stage_config's view of stage 1
	 * or 2 (borrowed from `whole`).  Everything below marked "the
	 * stage's" is set up again for each stage; step_base is what its
	 * checkpoints' steps are counted on from (stage 2: stage 1's
	 * num_inference_steps, schema 0006).
	 */
	struct job_config jc;
	int stage, n_stages, step_base;
	/* a two-stage job's stage 2 starts from these latents [B, S, C] (the
	 * upsampler's output, or its checkpoint); NULL before */
	float *upsampled;
	/* its stage 1's final latents, unpacked, for save_tensors */
	float *stage1_out;
	struct latents_shape shape1;
	/* the newest checkpoint (store_load_checkpoint), once per render */
	struct store_checkpoint resume;
	int resume_found;
	cJSON *config;
	char *base_dir;			/* the manifest's folder */

	struct diffusers_model *dm;
	struct render_mesh mesh;	/* the job's devices */
	struct gpu_ctx *gpu;		/* mesh rank 0's (borrowed) */
	struct mesh_rank *ranks;	/* one per mesh rank */
	int n_ranks, data, context;	/* the mesh's */
	struct ltxv_cp_group **cp;	/* one per data coordinate, context > 1 */
	struct ltxv_vae *vae;
	struct ltxv_vae_encoder *enc;	/* image-to-video, while encoding */
	struct st_file *noise;		/* noise: FILE, or NULL */
	struct scheduler_config sched_cfg;
	struct scheduler_schedule sched;
	char model_digest[DIGEST_HEX_SIZE];
	char device_fingerprint[DIGEST_HEX_SIZE];

	/* the stage's: */
	struct latents_shape shape;	/* unpacked latent geometry */
	int B, S, C, T, Cc;		/* batch, tokens, channels, text len, caption ch */
	int cfg;			/* classifier-free guidance on */
	float *latents;			/* [B, S, C] host: the state */
	float *model_in;		/* [2B or B, S, C] */
	float *velocity;		/* [2B or B, S, C] */
	float *guided;			/* [B, S, C] */
	float *text;			/* [2B or B, T, Cc] */
	float *mask;			/* [2B or B, T] */
	float *timesteps;		/* [2B or B] */
	/* image-to-video (LTXImageToVideoPipeline): tokens of latent frame
	 * 0 per sample (conditioning_mask 1), 0 without an image; the
	 * per-token timesteps t * (1 - mask) [2B or B, S] */
	int64_t cond_tokens;
	float *timestep_tokens;
	/* LTXConditionPipeline (job_condition_pipeline): the step the loop
	 * starts at (denoise_strength's get_timesteps; 0 without) and the
	 * video_coords [3, S] the transformer gets */
	int first_step;
	float *video_coords;
	/* conditions: conditioning_mask [S] (the strength on the tokens of
	 * latent frame 0, cond_tokens of them), the latents right after
	 * prepare_latents [B, S, C] (init_latents, for image_cond_noise),
	 * and that noise: every step run's [steps run, B, S, C] */
	float *cond_mask;
	float *init_latents;
	float *icn;
	float *trajectory;		/* [steps, B, S, C] when save_tensors */
	char *name_shown;		/* job name, control characters escaped */
	struct nn_plan plan;		/* nn/plan.h, for the device in use */
	struct nn_weights_layout w_transformer;	/* the plan's weight layout */
	enum ltxv_vae_tiling_mode vae_tiling_mode;	/* the job's vae_tiling */
};

/* Frees the ranks' transformers, buffers and staging (their ctxs stay). */
static void
ranks_free_networks(struct render *r)
{
	for (int i = 0; i < r->n_ranks; i++) {
		struct mesh_rank *k = &r->ranks[i];

		ltxv_transformer_free(k->transformer);
		gpu_buffer_free(k->buf_in);
		gpu_buffer_free(k->buf_text);
		gpu_buffer_free(k->buf_out);
		free(k->in);
		free(k->out);
		free(k->tt);
		k->transformer = NULL;
		k->buf_in = k->buf_text = k->buf_out = NULL;
		k->in = k->out = k->tt = NULL;
	}
	for (int d = 0; r->cp != NULL && d < r->data; d++)
		ltxv_cp_group_free(r->cp[d]);
	free(r->cp);
	r->cp = NULL;
}

static void
render_free(struct render *r)
{
	ranks_free_networks(r);
	ltxv_vae_free(r->vae);
	ltxv_vae_encoder_free(r->enc);
	st_file_close(r->noise);
	free(r->timestep_tokens);
	free(r->video_coords);
	free(r->cond_mask);
	free(r->init_latents);
	free(r->icn);
	free(r->ranks);
	render_mesh_close(&r->mesh);
	diffusers_free(r->dm);
	scheduler_schedule_free(&r->sched);
	free(r->latents);
	free(r->model_in);
	free(r->velocity);
	free(r->guided);
	free(r->text);
	free(r->mask);
	free(r->timesteps);
	free(r->trajectory);
	free(r->upsampled);
	free(r->stage1_out);
	store_checkpoint_clear(&r->resume);
	free(r->name_shown);
	free(r->base_dir);
	job_config_free(&r->whole);
	cJSON_Delete(r->config);
}

/* Enters a phase (render_enter_phase) of the job's steps. */
static enum lq_status
enter_phase(struct render *r, const char *phase, int step,
    struct lq_error *err)
{
	return render_enter_phase(r->st, r->job, r->opt, phase, step,
	    (int)r->jc.num_inference_steps, err);
}

/* Resolves a path of the job against the manifest's folder. */
static char *
job_path(const struct render *r, const char *p)
{
	return job_resolve_path(r->base_dir, p);
}

/*
 * Digest of one component folder through the store's file-hash cache
 * (unchanged files are not re-read).
 */
static enum lq_status
folder_digest(struct store *st, const char *dir, char hex[DIGEST_HEX_SIZE],
    struct lq_error *err)
{
	struct model_hash_cache cache = {st, store_file_hash_lookup,
	    store_file_hash_record};
	struct model_digest d;
	enum lq_status s = model_hash_folder(dir, &cache, 0, &d, err);
	if (s != LQ_OK)
		return s;
	snprintf(hex, DIGEST_HEX_SIZE, "%s", d.digest);
	model_digest_clear(&d);
	return LQ_OK;
}

/*
 * Folders named by URL (model/ref.h) must be complete in the cache: with
 * --allow-download they are fetched now (net/layout.h; a host whose cache
 * preflight filled fetches nothing); without it the job is given back
 * untouched for a host that has them or may fetch them (LQ_FATAL, as
 * worker_exit_for maps it: EXIT_UNAVAILABLE).
 */
static enum lq_status
fetch_model_urls(struct render *r, struct lq_error *err)
{
	const char *const *keys = job_model_keys;
	const char *vals[JOB_MODEL_KEYS];
	job_model_values(&r->jc, vals);
	for (size_t i = 0; i < JOB_MODEL_KEYS; i++) {
		if (vals[i] == NULL || !model_ref_is_url(vals[i]) ||
		    model_ref_cache_complete(vals[i]))
			continue;
		if (!r->opt->allow_download) {
			char *dir = model_ref_cache_dir(vals[i]);
			error_set(err, LQ_FATAL, "LQ-RUN-DOWNLOAD", "job %lld's %s "
			    "is %s, which this host has not downloaded (no "
			    "complete copy in %s); the job is left for a host that "
			    "has it or may download it", (long long)r->job->id,
			    keys[i], vals[i], dir);
			free(dir);
			error_set_hint(err, "run with --allow-download, or fetch "
			    "it here with `latentq model pull`");
			return LQ_FATAL;
		}
		enum lq_status s = net_layout_fetch_url(vals[i], i == 0 ? NULL :
		    keys[i], err);
		if (s != LQ_OK)
			return s;
	}
	return LQ_OK;
}

/*
 * Opens the job's model (model/ref.h): a registered name, a folder or a
 * URL's cache folder, with component overrides, relative paths against
 * the manifest's folder.
 */
static enum lq_status
open_model(struct render *r, struct lq_error *err)
{
	const struct job_config *jc = &r->jc;
	enum lq_status fs = fetch_model_urls(r, err);
	if (fs != LQ_OK)
		return fs;
	struct model_ref_resolver res = {r->st, store_model_path_resolve};
	struct model_ref ref;
	enum lq_status s = model_ref_resolve(jc->model, jc->transformer, jc->vae,
	    jc->text_encoder, jc->scheduler, r->base_dir, &res, &ref, err);
	if (s == LQ_OK)
		s = model_ref_open(&ref, &r->dm, err);
	model_ref_clear(&ref);
	return s;
}

static enum lq_status stage_setup(struct render *r, int stage,
    struct lq_error *err);

static enum lq_status
phase_load(struct render *r, struct lq_error *err)
{
	enum lq_status s;
	if ((s = enter_phase(r, "load", -1, err)) != LQ_OK)
		return s;
	struct job_config *jc = &r->jc;
	if ((s = open_model(r, err)) != LQ_OK)
		return s;
	if (!r->dm->transformer.present || !r->dm->vae.present ||
	    !r->dm->scheduler.present)
		return error_set(err, LQ_FAILED, "LQ-RUN-MODEL", "model %s lacks a "
		    "transformer, vae or scheduler", r->dm->root);
	struct model_hash_cache cache = {r->st, store_file_hash_lookup,
	    store_file_hash_record};
	if ((s = model_ref_identity(r->dm, &cache, r->model_digest, err)) !=
	    LQ_OK)
		return s;
	if ((s = render_pin_model(r->st, r->job, r->dm->root, r->model_digest,
	    err)) != LQ_OK)
		return s;
	if ((s = scheduler_config_load(r->dm->scheduler.config_path,
	    &r->sched_cfg, err)) != LQ_OK)
		return s;
	if (jc->noise != NULL) {
		char *p = job_path(r, jc->noise);
		s = st_file_open(p, &r->noise, err);
		free(p);
		if (s != LQ_OK)
			return s;
	}
	return stage_setup(r, r->n_stages == 2 ? 1 : 0, err);
}

/*
 * The stage's geometry, schedule and condition arrays (the fields of
 * struct render marked "the stage's"), for stage 0 (a one-stage job), 1
 * or 2; what an earlier stage held is released.  The buffers the
 * transformer loop uses are load_networks'.
 */
static enum lq_status
stage_setup(struct render *r, int stage, struct lq_error *err)
{
	enum lq_status s;
	struct job_config *jc = &r->jc;

	r->stage = stage;
	if (stage == 0) {
		r->jc = r->whole;
		r->step_base = 0;
	} else {
		job_stage_config(&r->whole, stage, &r->jc);
		r->step_base = stage == 2 ?
		    (int)r->whole.num_inference_steps : 0;
	}
	scheduler_schedule_free(&r->sched);
	free(r->video_coords);
	free(r->cond_mask);
	free(r->init_latents);
	free(r->icn);
	r->video_coords = r->cond_mask = r->init_latents = r->icn = NULL;
	r->cond_tokens = 0;
	r->first_step = 0;
	const struct ltxv_transformer_config *tc = &r->dm->transformer_config;
	const struct ltxv_vae_config *vc = &r->dm->vae_config;
	struct job_latent_shape ls;
	if (job_latent_shape(jc, vc->spatial_compression_ratio,
	    vc->temporal_compression_ratio, tc->patch_size, tc->patch_size_t,
	    &ls) != 0)
		return error_set(err, LQ_FAILED, "LQ-RUN-GEOM", "%" PRId64 "x%"
		    PRId64 " with %" PRId64 " frames does not fit the model "
		    "(VAE spatial %d, temporal %d; patch %d, patch_t %d)",
		    jc->height, jc->width, jc->num_frames,
		    vc->spatial_compression_ratio, vc->temporal_compression_ratio,
		    tc->patch_size, tc->patch_size_t);
	if (ls.batch < 1)
		return error_set(err, LQ_FAILED, "LQ-RUN-CFG", "per_device_batch_"
		    "size %g × mesh.data %" PRId64 " is not a whole batch",
		    jc->per_device_batch_size, jc->mesh.data);
	if (job_rows_per_device(jc, NULL) == 0)
		return error_set(err, LQ_FAILED, "LQ-MESH-006", "per_device_"
		    "batch_size %g is not a whole number of transformer rows "
		    "(%d per video) on each of mesh.data %" PRId64 " devices",
		    jc->per_device_batch_size, job_cfg_rows(jc), jc->mesh.data);
	r->shape = (struct latents_shape){
		.batch = ls.batch, .channels = tc->in_channels,
		.frames = ls.frames, .height = ls.height, .width = ls.width,
		.patch_size = tc->patch_size, .patch_size_t = tc->patch_size_t,
	};
	r->B = (int)ls.batch;
	r->T = (int)jc->max_sequence_length;
	if (jc->prompt_embeds != NULL) {
		/* the embeddings file decides the batch and the text length */
		char *p = job_path(r, jc->prompt_embeds);
		struct st_file *f = NULL;
		s = st_file_open(p, &f, err);
		free(p);
		if (s != LQ_OK)
			return s;
		const struct st_tensor *e = st_file_find(f, "prompt_embeds");
		if (e != NULL && e->ndim == 3) {
			r->B = (int)e->shape[0];
			r->T = (int)e->shape[1];
		}
		st_file_close(f);
		if (e == NULL)
			return error_set(err, LQ_FAILED, "LQ-RUN-EMBEDS", "%s has no "
			    "prompt_embeds tensor", jc->prompt_embeds);
		r->shape.batch = r->B;
	}
	r->S = (int)latents_seq_len(&r->shape);
	r->C = (int)latents_token_dim(&r->shape);
	if (jc->image != NULL || jc->n_conditions > 0) {
		/* the conditioning mask is 1 (a condition's strength) on
		 * latent frame 0; packed, that is the first (H/p)(W/p) tokens
		 * of each sample when p_t = 1 */
		if (r->shape.patch_size_t != 1)
			return error_set(err, LQ_FAILED, "LQ-RUN-IMAGE", "image: "
			    "the transformer's patch_size_t is %lld; image-to-"
			    "video needs 1 (latent frame 0 as whole tokens)",
			    (long long)r->shape.patch_size_t);
		r->cond_tokens = (r->shape.height / r->shape.patch_size) *
		    (r->shape.width / r->shape.patch_size);
	}
	r->Cc = tc->caption_channels;
	r->cfg = job_cfg_rows(jc) == 2;
	if (!job_condition_pipeline(jc))
		return scheduler_set_timesteps(&r->sched_cfg,
		    (int)jc->num_inference_steps, r->S, &r->sched, err);
	/* LTXConditionPipeline: the full schedule (the scheduler keeps it;
	 * the per-token step looks its sigmas up), run from first_step */
	if ((s = scheduler_set_timesteps_condition(&r->sched_cfg,
	    (int)jc->num_inference_steps, &r->sched, err)) != LQ_OK)
		return s;
	r->first_step = scheduler_denoise_start((int)jc->num_inference_steps,
	    jc->denoise_strength);
	r->video_coords = xmalloc(3 * (size_t)r->S * sizeof(float));
	latents_video_coords(&r->shape, vc->spatial_compression_ratio,
	    vc->temporal_compression_ratio, jc->frame_rate, r->video_coords);
	if (jc->n_conditions > 0) {
		/* condition_latent_frames_mask[:, :1] = strength, gathered per
		 * token (frame_index 0: no extra condition tokens) */
		r->cond_mask = xcalloc((size_t)r->S, sizeof(float));
		for (int64_t j = 0; j < r->cond_tokens; j++)
			r->cond_mask[j] = (float)jc->conditions[0].strength;
		size_t n = (size_t)r->B * r->S * r->C;
		if (jc->image_cond_noise_scale > 0) {
			r->init_latents = xmalloc(n * sizeof(float));
			r->icn = xmalloc((size_t)(jc->num_inference_steps -
			    r->first_step) * n * sizeof(float));
		}
	}
	return LQ_OK;
}

/* The job's mesh (render_mesh_open) and one share per rank. */
static enum lq_status
open_mesh(struct render *r, struct lq_error *err)
{
	/* --device, or main's LATENTQ_DEVICE default (cmd_globals) */
	enum lq_status s = render_mesh_open(r->st, r->job, r->opt->warm,
	    r->opt->device, &r->jc.mesh, &r->mesh, err);
	if (s != LQ_OK)
		return s;
	r->data = r->mesh.data;
	r->context = r->mesh.context;
	r->n_ranks = r->mesh.n_ranks;
	r->ranks = xcalloc((size_t)r->n_ranks, sizeof(*r->ranks));
	for (int i = 0; i < r->n_ranks; i++) {
		r->ranks[i].r = r;
		r->ranks[i].data = r->mesh.ranks[i].data;
		r->ranks[i].gpu = r->mesh.ranks[i].gpu;
	}
	r->gpu = r->ranks[0].gpu;
	return LQ_OK;
}

static enum lq_status
phase_compile(struct render *r, struct lq_error *err)
{
	enum lq_status s;
	if ((s = enter_phase(r, "compile", -1, err)) != LQ_OK)
		return s;
	if ((s = open_mesh(r, err)) != LQ_OK)
		return s;
	render_device_fingerprint(r->gpu, NULL, r->device_fingerprint);
	return render_mesh_warmup(&r->mesh, render_precision(&r->jc), err);
}

/* Copies row `src` [T, D] (and mask) into the text batch at row b. */
static void
put_text_row(struct render *r, int b, const float *embeds, const void *mask,
    int mask_is_i64)
{
	memcpy(r->text + (size_t)b * r->T * r->Cc, embeds,
	    (size_t)r->T * r->Cc * sizeof(float));
	for (int t = 0; t < r->T; t++)
		r->mask[(size_t)b * r->T + t] = mask_is_i64 ?
		    (float)((const int64_t *)mask)[t] : ((const float *)mask)[t];
}

/* prompt_embeds: FILE (diffusers' argument names). */
static enum lq_status
text_from_file(struct render *r, const char *path, struct lq_error *err)
{
	struct st_file *f = NULL;
	enum lq_status s = st_file_open(path, &f, err);
	if (s != LQ_OK)
		return s;
	const char *names[2][2] = {
		{"negative_prompt_embeds", "negative_prompt_attention_mask"},
		{"prompt_embeds", "prompt_attention_mask"},
	};
	for (int which = r->cfg ? 0 : 1; which < 2; which++) {
		const struct st_tensor *e = st_file_find(f, names[which][0]);
		const struct st_tensor *m = st_file_find(f, names[which][1]);
		if (e == NULL || m == NULL) {
			s = error_set(err, LQ_FAILED, "LQ-RUN-EMBEDS", "%s has no %s "
			    "and %s%s", path, names[which][0], names[which][1],
			    which == 0 ? " (needed for guidance_scale > 1)" : "");
			break;
		}
		if (e->ndim != 3 || e->shape[0] != r->B || e->shape[1] != r->T ||
		    e->shape[2] != r->Cc || m->ndim != 2 || m->shape[0] != r->B ||
		    m->shape[1] != r->T) {
			s = error_set(err, LQ_FAILED, "LQ-RUN-EMBEDS", "%s: %s must be "
			    "[%d, %d, %d] and its mask [%d, %d]", path,
			    names[which][0], r->B, r->T, r->Cc, r->B, r->T);
			break;
		}
		float *ef = st_tensor_to_f32(e);
		float *mf = m->dtype == ST_I64 ? NULL : st_tensor_to_f32(m);
		for (int b = 0; b < r->B; b++) {
			int row = r->cfg ? which * r->B + b : b;
			if (mf != NULL)
				put_text_row(r, row, ef + (size_t)b * r->T * r->Cc,
				    mf + (size_t)b * r->T, 0);
			else
				put_text_row(r, row, ef + (size_t)b * r->T * r->Cc,
				    (const int64_t *)m->data + (size_t)b * r->T, 1);
		}
		free(ef);
		free(mf);
	}
	st_file_close(f);
	return s;
}

static enum lq_status
phase_encode_text(struct render *r, struct lq_error *err)
{
	enum lq_status s;
	if ((s = enter_phase(r, "encode-text", -1, err)) != LQ_OK)
		return s;
	int rows = r->cfg ? 2 * r->B : r->B;
	r->text = xcalloc((size_t)rows * r->T * r->Cc, sizeof(float));
	r->mask = xcalloc((size_t)rows * r->T, sizeof(float));
	if (r->jc.prompt_embeds != NULL) {
		char *p = job_path(r, r->jc.prompt_embeds);
		s = text_from_file(r, p, err);
		free(p);
		return s;
	}
	if (!r->dm->text_encoder.present || !r->dm->tokenizer.present)
		return error_set(err, LQ_FAILED, "LQ-RUN-TEXT", "model %s has no "
		    "text encoder or tokenizer; give the job prompt_embeds",
		    r->dm->root);
	struct text_tokenizer *tok = NULL;
	struct t5_encoder *t5 = NULL;
	if ((s = text_tokenizer_load(r->dm->tokenizer.dir, &tok, err)) != LQ_OK)
		return s;
	if ((s = t5_encoder_load(r->gpu, r->dm->text_encoder.dir, &t5, err)) !=
	    LQ_OK) {
		text_tokenizer_free(tok);
		return s;
	}
	/* The encoder's identity for the embedding cache: its folder's digest. */
	char enc_digest[DIGEST_HEX_SIZE];
	if ((s = folder_digest(r->st, r->dm->text_encoder.dir, enc_digest, err)) !=
	    LQ_OK) {
		t5_encoder_free(t5);
		text_tokenizer_free(tok);
		return s;
	}
	struct text_encoder_iface enc = text_encoder_from_t5(t5, enc_digest);
	struct text_embed_cache cache = text_embed_cache_from_store(r->st);
	struct text_prompt_request req = {
		.prompt = r->jc.prompt, .negative_prompt = r->jc.negative_prompt,
		.max_sequence_length = r->T, .do_classifier_free_guidance = r->cfg,
		.truncate = r->jc.truncate,
	};
	struct text_prompt_embeds e;
	memset(&e, 0, sizeof(e));
	s = text_prompt_encode(tok, &enc, &cache, &req, &e, err);
	if (s == LQ_WARN) {
		error_print(err, stderr);
		error_clear(err);
		s = LQ_OK;
	}
	if (s == LQ_OK && e.D != r->Cc)
		s = error_set(err, LQ_FAILED, "LQ-RUN-TEXT", "the text encoder's "
		    "d_model %d is not the transformer's caption_channels %d", e.D,
		    r->Cc);
	if (s == LQ_OK) {
		for (int b = 0; b < r->B; b++) {
			if (r->cfg)
				put_text_row(r, b, e.negative_prompt_embeds,
				    e.negative_prompt_attention_mask, 1);
			put_text_row(r, r->cfg ? r->B + b : b, e.prompt_embeds,
			    e.prompt_attention_mask, 1);
		}
		char detail[128];
		snprintf(detail, sizeof(detail), "{\"cache_hits\":%d,"
		    "\"encoder_calls\":%d}", e.cache_hits, e.encoder_calls);
		struct lq_error e2;
		error_clear(&e2);
		store_add_event(r->st, r->job->id, "text_encoded", detail, &e2);
	}
	text_prompt_embeds_release(&e);
	t5_encoder_free(t5);
	text_tokenizer_free(tok);
	return s;
}

/*
 * Each rank's share of the transformer's `rows` rows and r->S tokens
 * (job_rows_per_device rows per data coordinate, r->S / context tokens
 * per context coordinate; preflight's LQ-MESH-006 / -004 keep both
 * whole), its context group, activations, buffers and host staging.  The
 * decoder is loaded, and its activations reserved, when it decodes
 * (phase_decode), for the tiles the plan chose.
 */
static enum lq_status
mesh_reserve(struct render *r, int rows, struct lq_error *err)
{
	enum lq_status s;
	if (rows % r->data != 0 || r->S % r->context != 0)
		return error_set(err, LQ_FAILED, "LQ-MESH-006", "%d transformer "
		    "rows and %d tokens do not split over data %d × context %d",
		    rows, r->S, r->data, r->context);
	int rpd = rows / r->data, tpc = r->S / r->context;
	if (r->context > 1) {
		r->cp = xcalloc((size_t)r->data, sizeof(*r->cp));
		for (int d = 0; d < r->data; d++)
			if ((s = ltxv_cp_group_create(r->context, rpd, r->S,
			    r->dm->transformer_config.inner_dim, &r->cp[d],
			    err)) != LQ_OK)
				return s;
	}
	for (int i = 0; i < r->n_ranks; i++) {
		struct mesh_rank *k = &r->ranks[i];
		k->row0 = k->data * rpd;
		k->rows = rpd;
		k->tok0 = r->mesh.ranks[i].context * tpc;
		k->toks = tpc;
		if (r->cp != NULL && (s = ltxv_transformer_set_context(
		    k->transformer, r->cp[k->data], r->mesh.ranks[i].context,
		    err)) != LQ_OK)
			return s;
		if ((s = ltxv_transformer_reserve(k->transformer, rpd, tpc, r->T,
		    err)) != LQ_OK)
			return s;
		size_t lat = (size_t)rpd * tpc * r->C * sizeof(float);
		size_t txt = (size_t)rpd * r->T * r->Cc * sizeof(float);
		if ((s = gpu_buffer_create(k->gpu, lat, &k->buf_in, err)) != LQ_OK ||
		    (s = gpu_buffer_create(k->gpu, lat, &k->buf_out, err)) !=
		    LQ_OK ||
		    (s = gpu_buffer_create(k->gpu, txt, &k->buf_text, err)) != LQ_OK)
			return s;
		k->in = xcalloc((size_t)rpd * tpc * r->C, sizeof(float));
		k->out = xcalloc((size_t)rpd * tpc * r->C, sizeof(float));
		if (r->cond_tokens > 0)
			k->tt = xcalloc((size_t)rpd * tpc, sizeof(float));
	}
	return LQ_OK;
}

static enum lq_status
load_networks(struct render *r, struct lq_error *err)
{
	enum lq_status s;
	/* loras: [{path, scale}] fused into the transformer at load */
	size_t nl = r->jc.n_loras;
	struct lora **loras = xcalloc(nl + 1, sizeof(*loras));
	double *scales = xcalloc(nl + 1, sizeof(*scales));
	size_t opened = 0;
	s = LQ_OK;
	for (size_t i = 0; i < nl && s == LQ_OK; i++) {
		char *p = job_path(r, r->jc.loras[i].path);
		scales[i] = r->jc.loras[i].scale;
		if ((s = lora_open(p, &loras[i], err)) == LQ_OK)
			opened++;
		free(p);
	}
	struct nn_lora_set ls = {loras, scales, opened, 0};
	/* weight_streaming: as the plan chose (make_plan: on / off as the
	 * job asks, auto when the resident weights do not fit) */
	int rows = r->cfg ? 2 * r->B : r->B;
	struct ltxv_transformer_opts topts = {
		.streaming = r->plan.streaming == NN_WEIGHTS_STREAMED,
	};
	/* every rank its own copy of the weights (LoRAs fused alike) */
	for (int i = 0; s == LQ_OK && i < r->n_ranks; i++) {
		ls.fused = 0;
		s = ltxv_transformer_load_opts(r->ranks[i].gpu,
		    r->dm->transformer.dir, nl > 0 ? &ls : NULL, &topts,
		    &r->ranks[i].transformer, err);
		if (s == LQ_OK)
			ltxv_transformer_set_precision(r->ranks[i].transformer,
			    render_precision(&r->jc));
	}
	for (size_t i = 0; i < opened; i++)
		lora_free(loras[i]);
	free(loras);
	free(scales);
	if (s != LQ_OK)
		return s;
	if (nl > 0) {
		char detail[64];
		snprintf(detail, sizeof(detail), "{\"loras\":%zu,\"pairs_fused\":%d}",
		    nl, ls.fused);
		if ((s = store_add_event(r->st, r->job->id, "lora_fused", detail,
		    err)) != LQ_OK)
			return s;
	}
	{
		enum nn_plan_choice mode = NN_PLAN_AUTO;
		char detail[256];
		(void)nn_plan_choice_parse(r->jc.weight_streaming, &mode);
		snprintf(detail, sizeof(detail), "{\"mode\":\"%s\","
		    "\"streaming\":%s,\"resident_weight_bytes\":%zu,"
		    "\"streamed_weight_bytes\":%zu,\"activation_bytes\":%"
		    PRIu64 "}", nn_plan_choice_name(mode),
		    ltxv_transformer_streaming(r->ranks[0].transformer, NULL,
		    NULL) ?
		    "true" : "false", r->w_transformer.resident.device,
		    r->w_transformer.streamed.device,
		    r->plan.transformer.activations);
		if ((s = store_add_event(r->st, r->job->id, "weight_streaming",
		    detail, err)) != LQ_OK)
			return s;
	}
	if ((s = mesh_reserve(r, rows, err)) != LQ_OK)
		return s;
	size_t n = (size_t)r->B * r->S * r->C;
	/* the stage's (stage 1's go when stage 2 loads) */
	free(r->latents);
	free(r->guided);
	free(r->model_in);
	free(r->velocity);
	free(r->timesteps);
	free(r->timestep_tokens);
	free(r->trajectory);
	r->timestep_tokens = NULL;
	r->trajectory = NULL;
	r->latents = xcalloc(n, sizeof(float));
	r->guided = xcalloc(n, sizeof(float));
	r->model_in = xcalloc((size_t)rows * r->S * r->C, sizeof(float));
	r->velocity = xcalloc((size_t)rows * r->S * r->C, sizeof(float));
	r->timesteps = xcalloc((size_t)rows, sizeof(float));
	if (r->cond_tokens > 0)
		r->timestep_tokens = xcalloc((size_t)rows * r->S, sizeof(float));
	if (r->jc.save_tensors != NULL && r->stage != 1)	/* the last stage's */
		r->trajectory = xcalloc((size_t)(r->jc.num_inference_steps -
		    r->first_step) * n, sizeof(float));
	if (log_get_level() >= LOG_LEVEL_INFO && r->opt->progress_tty == 0) {
		size_t tw, tp, tk;
		ltxv_transformer_memory(r->ranks[0].transformer, &tw, &tp, &tk);
		log_debug("device memory: transformer %zu + %zu bytes", tw, tp);
	}
	return LQ_OK;
}

/*
 * The memory plan for this job on this device (nn/plan.h, the functions
 * preflight asked), recorded as a "plan" event before anything large is
 * allocated.  The phases follow it: the text encoder, the transformer and
 * the VAE decoder are each on the device alone.
 */
static enum lq_status
make_plan(struct render *r, struct lq_error *err)
{
	const struct device_caps *caps = gpu_ctx_caps(r->gpu);
	struct nn_weights_layout *wt = &r->w_transformer, wv;
	struct st_set *set = NULL, *text = NULL;
	struct lq_error e;
	enum lq_status s;

	memset(wt, 0, sizeof(*wt));
	memset(&wv, 0, sizeof(wv));
	error_clear(&e);
	/* the loaders lay the weights out with these same functions */
	if ((s = st_set_open(r->dm->transformer.dir, &set, err)) == LQ_OK)
		s = ltxv_transformer_weights_layout(set, caps, wt, err);
	st_set_close(set);
	set = NULL;
	if (s == LQ_OK && (s = st_set_open(r->dm->vae.dir, &set, err)) == LQ_OK)
		s = nn_weights_plan(set, "decoder.", NULL, caps, &wv.resident, err);
	st_set_close(set);
	if (s != LQ_OK)
		return s;
	int embeds = r->jc.prompt_embeds != NULL;
	if (!embeds && r->dm->text_encoder.present)
		(void)st_set_open(r->dm->text_encoder.dir, &text, &e);
	struct nn_plan_request rq = {
		.transformer = &r->dm->transformer_config,
		.vae = &r->dm->vae_config,
		.text_encoder = !embeds && r->dm->text_encoder.present ?
		    &r->dm->text_encoder_config : NULL,
		.w_transformer = wt,
		.w_vae = &wv,
		.text_set = text,
		.batch = r->B,
		.guidance = r->cfg,
		.data = r->data,
		.context = r->context,
		/* a two-stage job's transformer and decoder run at stage 2's
		 * size, the larger (the upsampler and encoder are not in the
		 * plan yet) */
		.num_frames = r->jc.num_frames,
		.height = r->n_stages == 2 ? r->whole.second_stage.height :
		    r->jc.height,
		.width = r->n_stages == 2 ? r->whole.second_stage.width :
		    r->jc.width,
		.max_sequence_length = r->T,
		.caps = caps,
	};
	if ((s = ltxv_vae_tiling_from_json(r->jc.vae_tiling, &r->vae_tiling_mode,
	    &rq.tiling, err)) != LQ_OK)
		return s;
	rq.vae_tiling = r->vae_tiling_mode == LTXV_VAE_TILING_AUTO ? NN_PLAN_AUTO :
	    r->vae_tiling_mode == LTXV_VAE_TILING_OFF ? NN_PLAN_OFF : NN_PLAN_ON;
	if (nn_plan_choice_parse(r->jc.weight_streaming, &rq.weight_streaming))
		return error_set(err, LQ_FAILED, "LQ-RUN-CFG", "weight_streaming "
		    "\"%s\" is not auto, on or off", r->jc.weight_streaming);
	nn_plan_render(&rq, &r->plan);
	st_set_close(text);
	cJSON *j = nn_plan_to_json(&r->plan);
	char *detail = cJSON_PrintUnformatted(j);
	cJSON_Delete(j);
	s = store_add_event(r->st, r->job->id, "plan", detail, err);
	free(detail);
	return s;
}

/* The measured high-water mark of device memory (gpu_ctx_memory) as the
 * job's "peak_device_bytes" event, beside the plan's. */
static enum lq_status
record_peak(struct render *r, struct lq_error *err)
{
	uint64_t peak = 0;
	char detail[160];

	if (r->gpu == NULL)
		return LQ_OK;
	gpu_ctx_memory(r->gpu, NULL, &peak);
	snprintf(detail, sizeof(detail), "{\"peak_device_bytes\":%" PRIu64
	    ",\"planned_peak_device_bytes\":%" PRIu64 "}", peak,
	    r->plan.peak_device_bytes);
	return store_add_event(r->st, r->job->id, "peak_device_bytes", detail,
	    err);
}

/*
 * The name of the stage's draw `base` in a noise: file: as is in a one-stage
 * job, "stage1.<base>" / "stage2.<base>" in a two-stage one (issue 14 item 3).
 */
static void
stage_noise_name(const struct render *r, const char *base, char *out,
    size_t size)
{
	if (r->stage == 0)
		snprintf(out, size, "%s", base);
	else
		snprintf(out, size, "stage%d.%s", r->stage, base);
}

/*
 * A random draw of `n` floats named `name` (upstream's name, see
 * latentq-manifest(5) `noise`): the noise file's tensor when it holds one
 * (of exactly `ndim` / `shape`, else LQ-RUN-NOISE naming both shapes), else
 * latentq's normal(seed, purpose, i).  In a two-stage job the name carries
 * the stage's prefix (stage_noise_name) and stage 2 draws from its own
 * purposes (RNG_PURPOSE_OF_STAGE).
 */
static enum lq_status
draw(const struct render *r, const char *base, int ndim, const int64_t *shape,
    uint32_t purpose, float *out, struct lq_error *err)
{
	char name[256];
	stage_noise_name(r, base, name, sizeof(name));
	return render_draw(r->noise, r->jc.noise, r->jc.seed, name,
	    RNG_PURPOSE_OF_STAGE(r->stage, purpose), ndim, shape, out, err);
}

/*
 * An image's latent, the same math in both pipelines that encode one:
 * LTXImageToVideoPipeline.prepare_latents (pipelines/ltx/
 * pipeline_ltx_image2video.py; the job's `image`, sampled per video:
 * batch = B, noise posterior_noise) and LTXConditionPipeline.prepare_latents
 * (pipeline_ltx_condition.py; a condition's image, encoded once:
 * batch = 1, noise condition_posterior_noise).  The image is
 * VideoProcessor.preprocess'd (uint8 / 255 * 2 - 1, [1, 3, H, W]), encoded
 * as a one-frame video, its latent_dist *sampled* with the draw `noise`
 * [batch, C, 1, h, w] (retrieve_latents), then _normalize_latents with the
 * VAE's latents_mean / latents_std and upstream's default scaling factor
 * 1.0.  Writes out [batch, C, 1, h, w].  The image must already have the
 * job's size (latentq does not resample; see latentq-manifest(5) `image`),
 * except in stage 1 of a two-stage job, which resizes it as upstream does
 * (media_resize_lanczos)
 * and the digest preflight recorded (`want`, may be NULL); `field` names
 * the key in errors.
 */
static enum lq_status
image_latents(struct render *r, const char *image, const char *want,
    const char *field, const char *noise, uint32_t purpose, int64_t batch,
    float *out, struct lq_error *err)
{
	enum lq_status s;
	char *path = job_path(r, image);
	uint8_t *rgb = NULL;
	int h = 0, w = 0;

	if ((s = enter_phase(r, "encode-image", 0, err)) != LQ_OK ||
	    (s = ltxv_vae_encoder_load(r->gpu, r->dm->vae.dir, &r->enc, err)) !=
	    LQ_OK) {
		free(path);
		return s;
	}
	char have[DIGEST_HEX_SIZE];
	s = digest_file(path, have, err);
	if (s == LQ_OK && want != NULL && strcmp(want, have) != 0) {
		error_set(err, LQ_FAILED, "LQ-RUN-IMAGE", "image %s changed since "
		    "the job was submitted (digest %.16s…, now %.16s…)", path,
		    want, have);
		error_set_field(err, "%s", field);
		error_set_hint(err, "restore the image, or submit the job again "
		    "with --again to render from the new one");
		s = LQ_FAILED;
	}
	if (s == LQ_OK)
		s = media_read_image(path, &rgb, &h, &w, err);
	if (s == LQ_OK && r->stage == 1 && (h != r->jc.height ||
	    w != r->jc.width)) {
		/* the recipe gives stage 1 the full-size condition and
		 * VideoProcessor.preprocess resizes it (PIL LANCZOS) */
		uint8_t *small = xmalloc((size_t)(r->jc.height * r->jc.width *
		    3));
		media_resize_lanczos(rgb, h, w, small, (int)r->jc.height,
		    (int)r->jc.width);
		free(rgb);
		rgb = small;
		h = (int)r->jc.height;
		w = (int)r->jc.width;
	}
	if (s == LQ_OK && (h != r->jc.height || w != r->jc.width)) {
		error_set(err, LQ_FAILED, "LQ-RUN-IMAGE", "image %s is %dx%d "
		    "(width x height); the job renders %" PRId64 "x%" PRId64,
		    path, w, h, r->jc.width, r->jc.height);
		error_set_field(err, "%s", field);
		error_set_hint(err, "give an image of exactly the job's width x "
		    "height (latentq does not resample it), or set width: %d "
		    "and height: %d", w, h);
		s = LQ_FAILED;
	}
	free(path);
	if (s != LQ_OK) {
		free(rgb);
		return s;
	}
	int64_t H = h, W = w, x_shape[5] = {1, 3, 1, H, W}, lat[5];
	size_t hw = (size_t)(H * W);
	float *x = xmalloc(3 * hw * sizeof(float));
	/* PIL -> np.float32 / 255 -> 2x - 1, HWC -> CHW */
	for (size_t i = 0; i < hw; i++)
		for (int c = 0; c < 3; c++) {
			float v = (float)rgb[i * 3 + (size_t)c] / 255.0f;
			x[(size_t)c * hw + i] = 2.0f * v - 1.0f;
		}
	free(rgb);
	if ((s = ltxv_vae_encoder_latent_shape(r->enc, x_shape, lat, err)) !=
	    LQ_OK) {
		free(x);
		return s;
	}
	int64_t C = lat[1], S = lat[2] * lat[3] * lat[4];
	if (lat[2] != 1 || lat[3] != r->shape.height || lat[4] != r->shape.width ||
	    C != r->shape.channels) {
		free(x);
		return error_set(err, LQ_FAILED, "LQ-RUN-IMAGE", "the VAE encodes "
		    "the image to [%lld, %lld, %lld, %lld], not the job's latent "
		    "frame [%lld, 1, %lld, %lld]", (long long)lat[1],
		    (long long)lat[2], (long long)lat[3], (long long)lat[4],
		    (long long)r->shape.channels, (long long)r->shape.height,
		    (long long)r->shape.width);
	}
	struct gpu_buffer *bx = NULL;
	float *par = xmalloc(2 * (size_t)(C * S) * sizeof(float));
	float *mean = xmalloc((size_t)(C * S) * sizeof(float));
	float *std = xmalloc((size_t)(C * S) * sizeof(float));
	if ((s = gpu_buffer_create(r->gpu, 3 * hw * sizeof(float), &bx, err)) ==
	    LQ_OK) {
		struct gpu_tensor tx = gpu_tensor_make(bx, 0, GPU_F32, 5, x_shape);
		if ((s = gpu_tensor_upload_f32(r->gpu, &tx, x, err)) == LQ_OK)
			s = ltxv_vae_encode(r->enc, &tx, par, NULL, err);
	}
	gpu_buffer_free(bx);
	free(x);
	int64_t pshape[5] = {batch, C, 1, lat[3], lat[4]};
	if (s == LQ_OK) {
		ltxv_latent_dist(par, 1, C, S, mean, NULL, std);
		s = draw(r, noise, 5, pshape, purpose, out, err);
	}
	if (s == LQ_OK) {
		struct latents_shape one = {batch, C, 1, lat[3], lat[4], 1, 1};
		for (int64_t b = 0; b < batch; b++)
			ltxv_latent_dist_sample(mean, std, out + b * C * S, C * S,
			    out + b * C * S);
		/* _normalize_latents(x, latents_mean, latents_std): its
		 * scaling_factor argument keeps the default 1.0 here */
		latents_normalize(&one, out, ltxv_vae_encoder_latents_mean(r->enc),
		    ltxv_vae_encoder_latents_std(r->enc), 1.0);
	}
	free(par);
	free(mean);
	free(std);
	/* the encoder is needed once per render */
	ltxv_vae_encoder_free(r->enc);
	r->enc = NULL;
	return s;
}

/* prepare_latents' randn: initial_noise [B, C, F, h, w] into z (unpacked). */
static enum lq_status
draw_initial_noise(const struct render *r, float *z, struct lq_error *err)
{
	const struct latents_shape *sh = &r->shape;
	int64_t shape[5] = {sh->batch, sh->channels, sh->frames, sh->height,
	    sh->width};

	return draw(r, "initial_noise", 5, shape, RNG_PURPOSE_INITIAL_LATENTS, z,
	    err);
}

/*
 * A render's first latents without `latents:` (LTXPipeline /
 * LTXImageToVideoPipeline.prepare_latents): initial_noise [B, C, F, h, w]
 * (the noise file's, else latentq's RNG), with an image its latent on
 * frame 0 (init * mask + noise * (1 - mask) is exactly that), packed.
 */
static enum lq_status
fresh_latents(struct render *r, struct lq_error *err)
{
	const struct latents_shape *sh = &r->shape;
	size_t n = latents_numel(sh);
	float *z = xmalloc(n * sizeof(float));
	enum lq_status s = draw_initial_noise(r, z, err);
	if (s == LQ_OK && r->jc.image != NULL) {
		size_t per = (size_t)(sh->height * sh->width);
		float *img = xmalloc((size_t)(sh->batch * sh->channels) * per *
		    sizeof(float));
		/* preflight recorded the image's digest in the config */
		s = image_latents(r, r->jc.image, json_get_string(r->config,
		    "image_digest", NULL), "image", "posterior_noise",
		    RNG_PURPOSE_POSTERIOR_NOISE, r->B, img, err);
		for (int64_t bc = 0; s == LQ_OK && bc < sh->batch * sh->channels;
		    bc++)
			memcpy(z + (size_t)bc * (size_t)sh->frames * per,
			    img + (size_t)bc * per, per * sizeof(float));
		free(img);
	}
	if (s == LQ_OK)
		latents_pack(sh, z, r->latents);
	free(z);
	return s;
}

/* `latents: FILE` packed into out [B, S, C] (latents_import's shapes). */
static enum lq_status
supplied_latents(struct render *r, float *out, struct lq_error *err)
{
	char *p = job_path(r, r->jc.latents);
	struct st_file *f = NULL;
	enum lq_status s = st_file_open(p, &f, err);
	free(p);
	if (s != LQ_OK)
		return s;
	const struct st_tensor *t = st_file_find_or_only(f, "latents");
	if (t == NULL) {
		st_file_close(f);
		return error_set(err, LQ_FAILED, "LQ-LAT-002", "%s has no "
		    "tensor named latents", r->jc.latents);
	}
	float *data = st_tensor_to_f32(t);
	s = latents_import(&r->shape, t->ndim, t->shape, data, out, err);
	free(data);
	st_file_close(f);
	return s;
}

/*
 * LTXConditionPipeline.prepare_latents (pipelines/ltx/
 * pipeline_ltx_condition.py), packed into out [B, S, C]:
 * initial_noise [B, C, F, h, w] is ALWAYS drawn first; with `latents:`
 * and denoise_strength < 1 the supplied (normalised) latents are noised
 * to latent_sigma = sigmas[first_step]: sigma * noise + (1 - sigma) *
 * latents; else the noise is the latents (upstream ignores latents= at
 * denoise_strength 1; preflight refuses that job); stage 2 of a two-stage
 * job refines r->upsampled instead of a file.  Then the condition
 * (one image at frame_index 0): its latent (image_latents, batch 1, the
 * draw condition_posterior_noise) is lerped into latent frame 0 of every
 * video with its strength (torch.lerp).
 */
static enum lq_status
condition_latents(struct render *r, float *out, struct lq_error *err)
{
	const struct latents_shape *sh = &r->shape;
	size_t n = latents_numel(sh);
	float *z = xmalloc(n * sizeof(float));
	enum lq_status s = draw_initial_noise(r, z, err);
	if (s == LQ_OK && (r->jc.latents != NULL || r->upsampled != NULL) &&
	    r->jc.denoise_strength < 1) {
		/* noised as unpacked [B, C, F, h, w], elementwise */
		float *given = xmalloc(n * sizeof(float));
		if (r->upsampled != NULL)	/* a two-stage job's stage 2 */
			memcpy(out, r->upsampled, n * sizeof(float));
		if ((s = r->upsampled != NULL ? LQ_OK :
		    supplied_latents(r, out, err)) == LQ_OK) {
			latents_unpack(sh, out, given);
			latents_noise_to_sigma(given, z, n,
			    r->sched.sigmas[r->first_step]);
			memcpy(z, given, n * sizeof(float));
		}
		free(given);
	}
	if (s == LQ_OK && r->jc.n_conditions > 0) {
		const struct job_condition *c = &r->jc.conditions[0];
		size_t per = (size_t)(sh->height * sh->width);
		float *cond = xmalloc((size_t)sh->channels * per * sizeof(float));
		const cJSON *cj = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(
		    r->config, "conditions"), 0);
		s = image_latents(r, c->image, json_get_string(cj, "image_digest",
		    NULL), "conditions[0].image", "condition_posterior_noise",
		    RNG_PURPOSE_CONDITION_POSTERIOR, 1, cond, err);
		/* latents[:, :, :1] = torch.lerp(latents[:, :, :1], cond, s) */
		float w = (float)c->strength;
		for (int64_t b = 0; s == LQ_OK && b < sh->batch; b++)
			for (int64_t ch = 0; ch < sh->channels; ch++) {
				float *f0 = z + ((size_t)(b * sh->channels + ch) *
				    (size_t)sh->frames) * per;
				for (size_t i = 0; i < per; i++)
					f0[i] = latents_lerp(f0[i],
					    cond[(size_t)ch * per + i], w);
			}
		free(cond);
	}
	if (s == LQ_OK)
		latents_pack(sh, z, out);
	free(z);
	return s;
}

/*
 * The job's newest intact checkpoint, once per render (store_load_checkpoint
 * against this render's config, model and device), into r->resume.
 */
static enum lq_status
load_resume(struct render *r, struct lq_error *err)
{
	struct store_resume_key key = {
		.config_digest = r->job->config_digest,
		.model_digest = r->model_digest,
		.device_fingerprint = r->device_fingerprint,
		.resume_anywhere = r->opt->resume_anywhere,
	};
	int skipped = 0;
	enum lq_status s = store_load_checkpoint(r->st, r->job->id, &key,
	    &r->resume, &r->resume_found, &skipped, err);
	if (s != LQ_OK)
		return s;
	if (skipped > 0)
		log_warn("job %lld: skipped %d checkpoint(s) that did not verify",
		    (long long)r->job->id, skipped);
	if (r->resume_found && r->n_stages == 1 && r->resume.stage != 0)
		return error_set(err, LQ_FAILED, "LQ-RUN-CKPT", "checkpoint of "
		    "step %d is of stage %d; the job has one stage",
		    r->resume.step, r->resume.stage);
	if (r->resume_found && r->n_stages == 2 && r->resume.stage != 1 &&
	    r->resume.stage != 2)
		return error_set(err, LQ_FAILED, "LQ-RUN-CKPT", "checkpoint of "
		    "step %d has stage %d; a two-stage job's are of stage 1 or 2",
		    r->resume.step, r->resume.stage);
	return LQ_OK;
}

/*
 * A two-stage job's upsampled latents (stage 2's start) from the checkpoint
 * phase_upsample recorded, at stage 2's first_step.
 */
static enum lq_status
upsampled_from_store(struct render *r, struct lq_error *err)
{
	size_t n = (size_t)r->B * r->S * r->C;
	int at = r->step_base + r->first_step;
	free(r->upsampled);
	r->upsampled = xmalloc(n * sizeof(float));
	return store_fill_trajectory(r->st, r->job->id, r->upsampled,
	    n * sizeof(float), at - 1, at, err);
}

/*
 * The stage's initial latents: its checkpoint (r->resume, when of this
 * stage), else a supplied file, the upsampled latents (stage 2) or
 * latentq's noise.
 */
static enum lq_status
initial_latents(struct render *r, int *start_step, struct lq_error *err)
{
	size_t n = (size_t)r->B * r->S * r->C;
	enum lq_status s;
	const struct store_checkpoint *cp = &r->resume;
	int here = r->resume_found && cp->stage == r->stage;
	int local = here ? cp->step - r->step_base : 0;
	if (here && (cp->size != n * sizeof(float) ||
	    strcmp(cp->dtype, "F32") != 0 ||
	    local > r->jc.num_inference_steps || local < r->first_step ||
	    (local == r->first_step && r->stage != 2)))
		return error_set(err, LQ_FAILED, "LQ-RUN-CKPT", "checkpoint of "
		    "step %d (stage %d) has %zu bytes of %s, expected %zu of F32 "
		    "after one of steps %d..%d", cp->step, cp->stage, cp->size,
		    cp->dtype, n * sizeof(float), r->step_base + r->first_step +
		    1, r->step_base + (int)r->jc.num_inference_steps);
	if (here && local == r->first_step) {
		/* stage 2 killed before its first step: from the upsampled
		 * latents phase_upsample recorded */
		free(r->upsampled);
		r->upsampled = xmalloc(n * sizeof(float));
		memcpy(r->upsampled, cp->latent, n * sizeof(float));
		here = 0;
		char detail[64];
		snprintf(detail, sizeof(detail), "{\"stage\":2,\"step\":%d}", local);
		store_add_event(r->st, r->job->id, "resumed", detail, err);
	}
	if (here) {
		memcpy(r->latents, cp->latent, cp->size);
		*start_step = local;
		/* image_cond_noise puts noise on init_latents every step: the
		 * prepared latents again (the same draws, so the same bits) */
		if (r->init_latents != NULL) {
			if (r->stage == 2 && r->upsampled == NULL &&
			    (s = upsampled_from_store(r, err)) != LQ_OK)
				return s;
			if ((s = condition_latents(r, r->init_latents, err)) !=
			    LQ_OK)
				return s;
		}
		char detail[64];
		if (r->stage == 0)
			snprintf(detail, sizeof(detail), "{\"step\":%d}", local);
		else
			snprintf(detail, sizeof(detail), "{\"stage\":%d,"
			    "\"step\":%d}", r->stage, local);
		store_add_event(r->st, r->job->id, "resumed", detail, err);
		log_info("job %lld %s: resuming after step %d/%d%s",
		    (long long)r->job->id, r->job->name, local,
		    (int)r->jc.num_inference_steps, r->stage == 2 ?
		    " of stage 2" : r->stage == 1 ? " of stage 1" : "");
		if (r->trajectory == NULL)
			return LQ_OK;
		return store_fill_trajectory(r->st, r->job->id, r->trajectory,
		    n * sizeof(float), r->step_base + r->first_step, cp->step,
		    err);
	}
	*start_step = r->first_step;
	if (job_condition_pipeline(&r->jc)) {
		if ((s = condition_latents(r, r->latents, err)) == LQ_OK &&
		    r->init_latents != NULL)
			memcpy(r->init_latents, r->latents, n * sizeof(float));
		return s;
	}
	if (r->jc.latents != NULL)
		return supplied_latents(r, r->latents, err);
	return fresh_latents(r, err);
}

static void
show_progress(struct render *r, int step, double t0, int first)
{
	if (log_get_level() < LOG_LEVEL_INFO)	/* -q */
		return;
	int N = r->jc.num_inference_steps;
	double dt = util_monotonic() - t0;
	int done = step - first;
	double per = done > 0 ? dt / done : 0;
	double eta = per * (N - step);
	if (r->name_shown == NULL)	/* once, not per step */
		r->name_shown = util_escape_control(r->job->name);
	const char *name = r->name_shown;
	if (r->opt->progress_tty) {
		log_progress("%s  step %d/%d  %.2f s/step  ETA %.0fs", name,
		    step, N, per, eta);
		if (step == N)
			log_clear_progress();
	} else {
		fprintf(stderr, "latentq: job %lld %s: step %d/%d (%.2f s/step, "
		    "ETA %.0f s)\n", (long long)r->job->id, name, step, N,
		    per, eta);
	}
}

/* Rank k's rows and tokens of a host [.., S, w] array into (gather 1)
 * or out of (0) its [rows, toks, w] staging. */
static void
mesh_share(const struct render *r, const struct mesh_rank *k, float *whole,
    float *share, int w, int gather)
{
	render_mesh_share(whole, r->S, share, k->row0, k->rows, k->tok0,
	    k->toks, w, gather);
}

/* One rank's transformer forward on its share: upload, run, download. */
static enum lq_status
rank_forward(void *ud, int rank, struct lq_error *err)
{
	struct render *r = ud;
	struct mesh_rank *k = &r->ranks[rank];
	int64_t shape[3] = {k->rows, k->toks, r->C};
	struct gpu_tensor t_in = gpu_tensor_make(k->buf_in, 0, GPU_F32, 3, shape);
	struct gpu_tensor t_out = gpu_tensor_make(k->buf_out, 0, GPU_F32, 3,
	    shape);
	struct gpu_tensor t_text = gpu_tensor_make(k->buf_text, 0, GPU_F32, 3,
	    (int64_t[]){k->rows, r->T, r->Cc});
	enum lq_status s;

	k->args.hidden_states = &t_in;
	k->args.encoder_hidden_states = &t_text;
	s = gpu_tensor_upload_f32(k->gpu, &t_in, k->in, err);
	if (s == LQ_OK)
		s = ltxv_transformer_forward(k->transformer, &k->args, &t_out,
		    NULL, err);
	if (s == LQ_OK)
		s = gpu_tensor_download_f32(k->gpu, &t_out, k->out, err);
	return s;
}

/* A failed rank's context group must not wait for it. */
static void
rank_abort(void *ud, int rank)
{
	struct render *r = ud;
	if (r->cp != NULL)
		ltxv_cp_group_abort(r->cp[r->ranks[rank].data]);
}

/*
 * The transformer on r->model_in → r->velocity over the mesh: each rank
 * its rows and tokens, all at once (render_mesh_run), context groups
 * exchanging inside forward.  A failure is the first failing rank's own
 * error (not another's LQ-NN-MESH).
 */
static enum lq_status
mesh_forward(struct render *r, struct lq_error *err)
{
	for (int i = 0; i < r->n_ranks; i++) {
		struct mesh_rank *k = &r->ranks[i];
		mesh_share(r, k, r->model_in, k->in, r->C, 1);
		if (k->tt != NULL)
			mesh_share(r, k, r->timestep_tokens, k->tt, 1, 1);
	}
	enum lq_status s = render_mesh_run(&r->mesh, rank_forward, rank_abort, r,
	    err);
	if (s != LQ_OK)
		return s;
	for (int i = 0; i < r->n_ranks; i++)
		mesh_share(r, &r->ranks[i], r->velocity, r->ranks[i].out, r->C, 0);
	return LQ_OK;
}

static enum lq_status
phase_denoise(struct render *r, struct lq_error *err)
{
	enum lq_status s;
	int start = 0;
	if ((s = enter_phase(r, "denoise", -1, err)) != LQ_OK)
		return s;
	if ((s = initial_latents(r, &start, err)) != LQ_OK)
		return s;
	int rows = r->cfg ? 2 * r->B : r->B;
	size_t n = (size_t)r->B * r->S * r->C;
	const struct ltxv_vae_config *vc = &r->dm->vae_config;
	double rope[3] = {
		vc->temporal_compression_ratio / r->jc.frame_rate,
		vc->spatial_compression_ratio, vc->spatial_compression_ratio,
	};
	/* each rank's text rows, once (replicated over context) */
	for (int i = 0; i < r->n_ranks; i++) {
		struct mesh_rank *k = &r->ranks[i];
		struct gpu_tensor t_text = gpu_tensor_make(k->buf_text, 0, GPU_F32,
		    3, (int64_t[]){k->rows, r->T, r->Cc});
		if ((s = gpu_tensor_upload_f32(k->gpu, &t_text, r->text +
		    (size_t)k->row0 * r->T * r->Cc, err)) != LQ_OK)
			return s;
		k->args = (struct ltxv_transformer_args){
			.timestep = r->timesteps + k->row0,
			.timestep_tokens = k->tt,
			.encoder_attention_mask = r->mask + (size_t)k->row0 * r->T,
			.num_frames = (int)r->shape.frames,
			.height = (int)r->shape.height, .width = (int)r->shape.width,
			.rope_interpolation_scale = rope,
			.video_coords = r->video_coords,
		};
	}
	int N = r->jc.num_inference_steps;
	double t0 = util_monotonic();
	int64_t cp_shape[3] = {r->B, r->S, r->C};
	int keep = r->opt->keep_checkpoints;
	if (r->jc.save_tensors != NULL)
		keep = 0;	/* every step's latent is an output */
	if (r->n_stages == 2)
		keep = 0;	/* stage 1's final and the upsampled latents stay */
	if (r->icn != NULL) {
		/* image_cond_noise: one [B, S, C] draw per step run */
		int64_t ishape[4] = {N - r->first_step, r->B, r->S, r->C};
		if ((s = draw(r, "image_cond_noise", 4, ishape,
		    RNG_PURPOSE_IMAGE_COND_NOISE, r->icn, err)) != LQ_OK)
			return s;
	}
	for (int k = start; k < N; k++) {
		double step_t0 = util_monotonic();
		float t = r->sched.timesteps[k];
		for (int i = 0; i < rows; i++)
			r->timesteps[i] = t;
		if (r->icn != NULL)
			latents_image_cond_noise(r->latents, r->init_latents,
			    r->icn + (size_t)(k - r->first_step) * n, r->cond_mask,
			    (size_t)r->B, (size_t)r->S, (size_t)r->C,
			    r->jc.image_cond_noise_scale, t);
		if (r->cond_mask != NULL) {
			/* LTXConditionPipeline: timestep = min(t, (1 -
			 * conditioning_mask) * 1000) per token */
			for (int i = 0; i < rows; i++)
				for (int j = 0; j < r->S; j++) {
					float a = 1.0f - r->cond_mask[j];
					a = a * 1000.0f;
					r->timestep_tokens[(size_t)i * r->S + j] =
					    t < a ? t : a;
				}
		} else if (r->timestep_tokens != NULL)
			/* image-to-video: timestep = t * (1 - conditioning_mask)
			 * per token, 0 on latent frame 0 */
			for (int i = 0; i < rows; i++)
				for (int j = 0; j < r->S; j++)
					r->timestep_tokens[(size_t)i * r->S + j] =
					    t * (j < r->cond_tokens ? 0.0f : 1.0f);
		/* latent_model_input = cat([latents] * 2) with guidance */
		memcpy(r->model_in, r->latents, n * sizeof(float));
		if (r->cfg)
			memcpy(r->model_in + n, r->latents, n * sizeof(float));
		if ((s = mesh_forward(r, err)) != LQ_OK)
			return s;
		const float *v = r->velocity;
		if (r->cfg) {
			scheduler_apply_guidance(r->guided, r->velocity, (size_t)r->B,
			    (size_t)r->S * r->C, r->jc.guidance_scale,
			    r->jc.guidance_rescale);
			v = r->guided;
		}
		if (r->video_coords != NULL) {
			/* LTXConditionPipeline: scheduler.step with
			 * per_token_timesteps = timestep[:B] */
			size_t per = (size_t)r->S * r->C;
			for (int b = 0; b < r->B; b++)
				scheduler_step_tokens(&r->sched, r->latents + b * per,
				    v + b * per, (size_t)r->S, (size_t)r->C,
				    r->cond_mask != NULL ? r->timestep_tokens +
				    (size_t)b * r->S : NULL, t, r->cond_mask,
				    (float)r->sched_cfg.num_train_timesteps);
		} else if (r->cond_tokens == 0) {
			scheduler_step_euler(r->latents, v, n, r->sched.sigmas[k],
			    r->sched.sigmas[k + 1]);
		} else {
			/* scheduler.step on latent frames 1.. only; frame 0
			 * (the image) is concatenated back unchanged */
			size_t skip = (size_t)r->cond_tokens * r->C;
			size_t per = (size_t)r->S * r->C;
			for (int b = 0; b < r->B; b++)
				scheduler_step_euler(r->latents + b * per + skip,
				    v + b * per + skip, per - skip,
				    r->sched.sigmas[k], r->sched.sigmas[k + 1]);
		}
		/* fault injection and checkpoints count steps across stages */
		int step = r->step_base + k + 1;
		fault_slow(r->job->name, "denoise", step, r->opt->attempt);
		if (fault_nan(r->job->name, step, r->opt->attempt))
			r->latents[n / 2] = NAN;
		int64_t bad = latents_find_nonfinite(r->latents, n);
		if (bad >= 0) {
			error_set(err, LQ_FAILED, "LQ-RUN-NAN", "the latent after step "
			    "%d/%d has a non-finite value at index %" PRId64 " (%g)",
			    k + 1, N, bad, (double)r->latents[bad]);
			error_set_hint(err, "the last finite checkpoint (step %d) is "
			    "kept; check the model and guidance settings", k);
			return LQ_FAILED;
		}
		if (r->trajectory != NULL)
			memcpy(r->trajectory + (size_t)(k - r->first_step) * n,
			    r->latents, n * sizeof(float));
		struct store_checkpoint_new cp = {
			.job_id = r->job->id, .step = step, .stage = r->stage,
			.sigma = r->sched.sigmas[k + 1], .dtype = "F32", .ndim = 3,
			.shape = cp_shape, .latent = r->latents,
			.size = n * sizeof(float),
			.config_digest = r->job->config_digest,
			.model_digest = r->model_digest,
			.device_fingerprint = r->device_fingerprint,
		};
		char digest[DIGEST_HEX_SIZE];
		double c0 = util_monotonic();
		if ((s = store_save_checkpoint(r->st, &cp, keep, digest, err)) !=
		    LQ_OK)
			return s;
		double c1 = util_monotonic();
		/* tests/bench/bench-render.sh reads these lines */
		log_debug("job %lld step %d: compute %.2f ms, checkpoint %.2f ms",
		    (long long)r->job->id, step, (c0 - step_t0) * 1e3,
		    (c1 - c0) * 1e3);
		if ((s = store_set_progress(r->st, r->job->id, "denoise", k + 1, N,
		    err)) != LQ_OK)
			return s;
		show_progress(r, k + 1, t0, start);
		if (fault_point(r->job->name, "denoise", step, r->opt->attempt))
			return error_set(err, LQ_RETRY, "LQ-GPU-OOM", "out of device "
			    "memory (injected) after step %d", step);
		if (render_interrupted && (k + 1 < N || r->stage == 1))
			return error_set(err, LQ_RETRY, "LQ-RUN-INT", "interrupted "
			    "after step %d/%d (checkpoint committed)", k + 1, N);
	}
	return LQ_OK;
}

/*
 * Between the stages of a two-stage job: LTXLatentUpsamplePipeline
 * (pipelines/ltx/pipeline_ltx_latent_upsample.py, output_type "latent") on
 * stage 1's final latents.  Denormalised (latents_std / scaling_factor,
 * latents_mean: the VAE's buffers), through LTXLatentUpsamplerModel
 * (second_stage.latent_upsampler), AdaIN toward the denormalised input with
 * adain_factor and tone mapping with tone_map_compression_ratio (each only
 * when > 0, as upstream), normalised again; then stage 2 is set up
 * (stage_setup) and the result, packed to its shape, is r->upsampled,
 * checkpointed as stage 2's step first_step (schema 0006) so a kill after
 * this never runs stage 1 or the upsampler again.  The transformer is
 * released first: the upsampler has the device alone.  Stage 1's latents
 * (unpacked) are kept in r->stage1_out for save_tensors.
 */
static enum lq_status
phase_upsample(struct render *r, struct lq_error *err)
{
	enum lq_status s;
	if ((s = enter_phase(r, "upsample", r->jc.num_inference_steps, err)) !=
	    LQ_OK)
		return s;
	ranks_free_networks(r);
	const struct latents_shape sh1 = r->shape;
	const struct ltxv_vae_config *vc = &r->dm->vae_config;
	size_t n1 = latents_numel(&sh1);
	float *x = xmalloc(n1 * sizeof(float));
	latents_unpack(&sh1, r->latents, x);
	r->shape1 = sh1;
	free(r->stage1_out);
	r->stage1_out = xmalloc(n1 * sizeof(float));
	memcpy(r->stage1_out, x, n1 * sizeof(float));

	/* latents_mean / latents_std: buffers of the VAE's weights */
	struct st_set *vs = NULL;
	float *mean = NULL, *std = NULL;
	if ((s = st_set_open(r->dm->vae.dir, &vs, err)) != LQ_OK) {
		free(x);
		return s;
	}
	const struct st_tensor *tm = st_set_find(vs, "latents_mean");
	const struct st_tensor *ts = st_set_find(vs, "latents_std");
	if (tm == NULL || ts == NULL || (int64_t)(tm->nbytes /
	    st_dtype_size(tm->dtype)) != sh1.channels || (int64_t)(ts->nbytes /
	    st_dtype_size(ts->dtype)) != sh1.channels) {
		st_set_close(vs);
		free(x);
		return error_set(err, LQ_FAILED, "LQ-RUN-MODEL", "the VAE %s has "
		    "no latents_mean / latents_std of %lld channels (the latent "
		    "upsampler pipeline denormalises with them)", r->dm->vae.dir,
		    (long long)sh1.channels);
	}
	mean = st_tensor_to_f32(tm);
	std = st_tensor_to_f32(ts);
	st_set_close(vs);
	latents_denormalize(&sh1, x, mean, std, vc->scaling_factor);

	struct ltxv_upsampler *u = NULL;
	struct gpu_buffer *bx = NULL, *by = NULL;
	int64_t in[5] = {sh1.batch, sh1.channels, sh1.frames, sh1.height,
	    sh1.width}, out[5];
	float *y = NULL;
	char *dir = job_path(r, r->whole.second_stage.latent_upsampler);
	s = ltxv_upsampler_load(r->gpu, dir, &u, err);
	free(dir);
	if (s == LQ_OK) {
		ltxv_upsampler_output_shape(u, in, out);
		size_t n2 = (size_t)(out[0] * out[1] * out[2] * out[3] * out[4]);
		y = xmalloc(n2 * sizeof(float));
		if ((s = gpu_buffer_create(r->gpu, n1 * sizeof(float), &bx,
		    err)) == LQ_OK && (s = gpu_buffer_create(r->gpu, n2 *
		    sizeof(float), &by, err)) == LQ_OK) {
			struct gpu_tensor tx = gpu_tensor_make(bx, 0, GPU_F32, 5,
			    in);
			struct gpu_tensor ty = gpu_tensor_make(by, 0, GPU_F32, 5,
			    out);
			if ((s = gpu_tensor_upload_f32(r->gpu, &tx, x, err)) ==
			    LQ_OK && (s = ltxv_upsampler_forward(u, &tx, &ty, NULL,
			    err)) == LQ_OK)
				s = gpu_tensor_download_f32(r->gpu, &ty, y, err);
		}
	}
	gpu_buffer_free(bx);
	gpu_buffer_free(by);
	ltxv_upsampler_free(u);
	if (s == LQ_OK)
		s = stage_setup(r, 2, err);
	if (s == LQ_OK && (out[0] != r->shape.batch || out[1] !=
	    r->shape.channels || out[2] != r->shape.frames || out[3] !=
	    r->shape.height || out[4] != r->shape.width))
		s = error_set(err, LQ_FAILED, "LQ-RUN-GEOM", "the latent upsampler "
		    "gives [%lld, %lld, %lld, %lld, %lld]; stage 2 (%" PRId64 "x%"
		    PRId64 ", %" PRId64 " frames) refines [%lld, %lld, %lld, %lld, "
		    "%lld]", (long long)out[0], (long long)out[1],
		    (long long)out[2], (long long)out[3], (long long)out[4],
		    r->jc.width, r->jc.height, r->jc.num_frames,
		    (long long)r->shape.batch, (long long)r->shape.channels,
		    (long long)r->shape.frames, (long long)r->shape.height,
		    (long long)r->shape.width);
	if (s == LQ_OK) {
		const struct job_second_stage *t = &r->whole.second_stage;
		int64_t bc = out[0] * out[1];
		int64_t per2 = out[2] * out[3] * out[4];
		int64_t per1 = (int64_t)n1 / (sh1.batch * sh1.channels);
		size_t n2 = (size_t)(bc * per2);
		if (t->adain_factor > 0)
			latents_adain_filter(y, x, out[0], out[1], per2, per1,
			    t->adain_factor);
		if (t->tone_map_compression_ratio > 0)
			latents_tone_map(y, n2, t->tone_map_compression_ratio);
		latents_normalize(&r->shape, y, mean, std, vc->scaling_factor);
		free(r->upsampled);
		r->upsampled = xmalloc(n2 * sizeof(float));
		latents_pack(&r->shape, y, r->upsampled);
		int64_t cp_shape[3] = {r->B, r->S, r->C};
		struct store_checkpoint_new cp = {
			.job_id = r->job->id,
			.step = r->step_base + r->first_step, .stage = 2,
			.sigma = r->sched.sigmas[r->first_step], .dtype = "F32",
			.ndim = 3, .shape = cp_shape, .latent = r->upsampled,
			.size = n2 * sizeof(float),
			.config_digest = r->job->config_digest,
			.model_digest = r->model_digest,
			.device_fingerprint = r->device_fingerprint,
		};
		s = store_save_checkpoint(r->st, &cp, 0, NULL, err);
	}
	if (s == LQ_OK && fault_point(r->job->name, "upsample",
	    r->step_base + r->first_step, r->opt->attempt))
		s = error_set(err, LQ_RETRY, "LQ-GPU-OOM", "out of device memory "
		    "(injected) after upsampling");
	free(x);
	free(y);
	free(mean);
	free(std);
	return s;
}

/*
 * A two-stage job resumed in stage 2: stage 1 and the upsampler do not run
 * again.  Stage 1's final latents (for save_tensors) and the upsampled ones
 * come from their checkpoints (steps num_inference_steps and, counted on,
 * stage 2's first_step), then stage 2 is set up.
 */
static enum lq_status
resume_stage2(struct render *r, struct lq_error *err)
{
	enum lq_status s = LQ_OK;
	r->shape1 = r->shape;
	if (r->jc.save_tensors != NULL) {
		size_t n1 = latents_numel(&r->shape1);
		int at = (int)r->jc.num_inference_steps;
		float *packed = xmalloc(n1 * sizeof(float));
		s = store_fill_trajectory(r->st, r->job->id, packed,
		    n1 * sizeof(float), at - 1, at, err);
		free(r->stage1_out);
		r->stage1_out = xmalloc(n1 * sizeof(float));
		latents_unpack(&r->shape1, packed, r->stage1_out);
		free(packed);
	}
	if (s == LQ_OK)
		s = stage_setup(r, 2, err);
	if (s == LQ_OK)
		s = upsampled_from_store(r, err);
	return s;
}

/* The decoder's injected noise: from decode_noise: FILE (every field
 * required), else from noise: FILE (the fields it holds), else latentq's
 * RNG. */
struct noise_source {
	struct render *r;
	struct st_file *file;
	int draws;
	int partial;		/* the file is noise:, missing fields drawn */
};

static enum lq_status
fill_noise(void *ud, const char *module, int k, int height, int width,
    float *out, struct lq_error *err)
{
	struct noise_source *ns = ud;
	int draw = ns->draws++;
	char base[240], name[256];
	snprintf(base, sizeof(base), "%s#%d", module, k);
	if (ns->partial)	/* noise: names carry the stage */
		stage_noise_name(ns->r, base, name, sizeof(name));
	else
		snprintf(name, sizeof(name), "%s", base);
	if (ns->file != NULL && (!ns->partial || st_file_find(ns->file, name))) {
		const struct st_tensor *t = st_file_find(ns->file, name);
		if (t == NULL || t->ndim != 2 || t->shape[0] != height ||
		    t->shape[1] != width)
			return error_set(err, LQ_FAILED, "LQ-RUN-NOISE", "%s: no "
			    "tensor %s of shape [%d, %d]", ns->partial ?
			    ns->r->jc.noise : ns->r->jc.decode_noise, name, height,
			    width);
		float *f = st_tensor_to_f32(t);
		memcpy(out, f, (size_t)height * width * sizeof(float));
		free(f);
		return LQ_OK;
	}
	rng_fill_normal(ns->r->jc.seed, RNG_PURPOSE_OF_STAGE(ns->r->stage,
	    RNG_PURPOSE_INJECTED_NOISE(draw)), 0, out, (size_t)height * width);
	return LQ_OK;
}


/*
 * Where the decoded frames go while the VAE decodes (ltxv_vae_sink): each
 * frame range is post-processed (VideoProcessor.postprocess_video) and
 * handed to one streaming MP4 writer per video, to the PNG frames folder,
 * and the contact sheet's frames are kept; the host holds one range, the
 * sheet's 16 frames and, only for save_tensors, the whole video.
 */
struct video_out {
	struct render *r;
	int64_t shape[5];		/* decoder output [B, 3, F, H, W] */
	int try_no;			/* decode try, from 1 (fault injection) */
	struct media_mp4 **mp4;		/* [B] */
	char **mp4_path;		/* [B] */
	char **frames_dir;		/* [B] or NULL */
	struct media_provenance prov;
	float *raw, *np;		/* one range: [B, 3, n, H, W], [B, n, H, W, 3] */
	uint8_t *u8;			/* [B, n, H, W, 3] */
	size_t range_cap;		/* frames the range buffers hold */
	int pick[16], npick;		/* contact sheet frames */
	uint8_t *sheet;			/* [B, npick, H, W, 3] */
	struct render_artifact mp4_c;	/* each MP4 is committed through */
	struct file_commit mp4_hook;	/* mp4_hook: render_commit_artifact */
	float *all_np;			/* save_tensors: [B, F, H, W, 3] */
	uint8_t *all_u8;
	int64_t done;			/* frames received */
};



/* Discards what a failed decode try wrote (the .part files). */
static void
video_out_abort(struct video_out *vo)
{
	for (int64_t b = 0; vo->mp4 && b < vo->shape[0]; b++) {
		media_mp4_abort(vo->mp4[b]);
		vo->mp4[b] = NULL;
	}
	vo->done = 0;
}

static void
video_out_free(struct video_out *vo)
{
	video_out_abort(vo);
	for (int64_t b = 0; b < vo->shape[0]; b++) {
		if (vo->mp4_path)
			free(vo->mp4_path[b]);
		if (vo->frames_dir)
			free(vo->frames_dir[b]);
	}
	free(vo->mp4);
	free(vo->mp4_path);
	free(vo->frames_dir);
	free(vo->raw);
	free(vo->np);
	free(vo->u8);
	free(vo->sheet);
	free(vo->all_np);
	free(vo->all_u8);
}

static void
video_out_init(struct video_out *vo, struct render *r, const int64_t shape[5])
{
	int64_t B = shape[0];
	memset(vo, 0, sizeof(*vo));
	vo->r = r;
	memcpy(vo->shape, shape, sizeof(vo->shape));
	vo->mp4_c = (struct render_artifact){r->st, r->job->id, "mp4"};
	vo->mp4_hook = (struct file_commit){render_commit_artifact, &vo->mp4_c};
	vo->prov = (struct media_provenance){
		.job = r->job->name, .prompt = r->jc.prompt,
		.negative_prompt = r->jc.negative_prompt, .has_seed = 1,
		.seed = r->jc.seed, .model_digest = r->model_digest,
		.config_digest = r->job->config_digest,
		.image_digest = json_get_string(r->config, "image_digest", NULL),
	};
	vo->mp4 = xcalloc((size_t)B, sizeof(*vo->mp4));
	vo->mp4_path = xcalloc((size_t)B, sizeof(*vo->mp4_path));
	for (int64_t b = 0; b < B; b++)
		vo->mp4_path[b] = job_output_path(&r->jc, r->base_dir, (int)b,
		    (int)B);
	if (r->jc.frames != NULL) {
		vo->frames_dir = xcalloc((size_t)B, sizeof(*vo->frames_dir));
		for (int64_t b = 0; b < B; b++)
			vo->frames_dir[b] = job_frames_path(&r->jc, r->base_dir,
			    (int)b, (int)B);
	}
	vo->npick = media_sheet_pick((int)shape[2], 16, vo->pick);
	vo->sheet = xmalloc((size_t)B * vo->npick * shape[3] * shape[4] * 3);
	if (r->jc.save_tensors != NULL) {
		size_t n = (size_t)(B * shape[2] * shape[3] * shape[4] * 3);
		vo->all_np = xmalloc(n * sizeof(float));
		vo->all_u8 = xmalloc(n);
	}
}

/* Opens one MP4 writer per video for a decode try. */
static enum lq_status
video_out_begin(struct video_out *vo, int try_no, struct lq_error *err)
{
	struct media_video_options opt = {.fps = vo->r->jc.frame_rate, .crf = -1,
	    .provenance = &vo->prov, .commit = &vo->mp4_hook};
	enum lq_status s = LQ_OK;
	vo->try_no = try_no;
	vo->done = 0;
	for (int64_t b = 0; b < vo->shape[0] && s == LQ_OK; b++)
		if ((s = render_make_parent_dirs(vo->mp4_path[b], err)) == LQ_OK)
			s = media_mp4_open(vo->mp4_path[b], (int)vo->shape[4],
			    (int)vo->shape[3], &opt, &vo->mp4[b], err);
	return s;
}

/* ltxv_vae_sink: frames f0 .. f0+n-1, the first n of x [B, 3, xf, H, W]. */
static enum lq_status
video_out_frames(void *ud, int64_t f0, int64_t n, const float *x,
    int64_t xf, struct lq_error *err)
{
	struct video_out *vo = ud;
	struct render *r = vo->r;
	int64_t B = vo->shape[0], C = vo->shape[1], F = vo->shape[2];
	int64_t H = vo->shape[3], W = vo->shape[4], hw = H * W;
	size_t fb = (size_t)hw * 3;
	enum lq_status s = LQ_OK;
	/* LATENTQ_FAULT oom@decode:N: this decode try runs out of device
	 * memory (as a decoder call would) when its first frames arrive */
	if (vo->done == 0 && fault_point(r->job->name, "decode", vo->try_no,
	    r->opt->attempt))
		return error_set(err, LQ_RETRY, "LQ-GPU-OOM", "out of device "
		    "memory (injected) in decode try %d", vo->try_no);
	LQ_ASSERT(f0 == vo->done && f0 + n <= F && C == 3);
	if ((size_t)n > vo->range_cap) {
		free(vo->raw);
		free(vo->np);
		free(vo->u8);
		vo->raw = xmalloc((size_t)(B * C * n * hw) * sizeof(float));
		vo->np = vo->all_np != NULL ?
		    xmalloc((size_t)(B * n) * fb * sizeof(float)) : NULL;
		vo->u8 = xmalloc((size_t)(B * n) * fb);
		vo->range_cap = (size_t)n;
	}
	for (int64_t b = 0; b < B; b++)
		for (int64_t c = 0; c < C; c++)
			memcpy(vo->raw + ((b * C + c) * n) * hw,
			    x + ((b * C + c) * xf) * hw,
			    (size_t)(n * hw) * sizeof(float));
	/* video_np only when save_tensors keeps it */
	latents_postprocess_video(vo->raw, B, n, H, W,
	    vo->all_np != NULL ? vo->np : NULL, vo->u8);
	for (int64_t b = 0; b < B && s == LQ_OK; b++) {
		const uint8_t *u8 = vo->u8 + (size_t)(b * n) * fb;
		struct media_frames fr = {(int)n, (int)H, (int)W, u8};
		s = media_mp4_write(vo->mp4[b], u8, (int)n, err);
		for (int i = 0; i < vo->npick; i++)
			if (vo->pick[i] >= f0 && vo->pick[i] < f0 + n)
				memcpy(vo->sheet + ((size_t)b * vo->npick + i) * fb,
				    u8 + (size_t)(vo->pick[i] - f0) * fb, fb);
		if (s == LQ_OK && vo->frames_dir != NULL) {
			char *probe = xasprintf("%s/x", vo->frames_dir[b]);
			if ((s = render_make_parent_dirs(probe, err)) == LQ_OK)
				s = media_write_frames_from(vo->frames_dir[b], &fr,
				    (int)f0, &vo->prov, err);
			free(probe);
		}
		if (vo->all_np != NULL) {
			memcpy(vo->all_np + (size_t)(b * F + f0) * fb,
			    vo->np + (size_t)(b * n) * fb, (size_t)n * fb *
			    sizeof(float));
			memcpy(vo->all_u8 + (size_t)(b * F + f0) * fb, u8,
			    (size_t)n * fb);
		}
	}
	vo->done += n;
	return s;
}

/*
 * The decode (AutoencoderKLLTXVideo.decode as LTXPipeline calls it), its
 * frames streamed into `vo`.  The tiling is the memory plan's (the job's
 * vae_tiling; auto: the plan's choice against the device), recorded in a
 * vae_tiling event.  A try that runs out of device memory is retried here, from the
 * same final latents, with smaller tiles (decode_retry events) until the
 * tiles cannot shrink; the denoising loop never runs again.
 */
static enum lq_status
phase_decode(struct render *r, struct video_out *vo, int64_t out_shape[5],
    struct lq_error *err)
{
	enum lq_status s;
	if ((s = enter_phase(r, "decode", r->jc.num_inference_steps, err)) != LQ_OK)
		return s;
	/* the transformer is done: the decoder gets the device alone */
	ranks_free_networks(r);
	if ((s = ltxv_vae_load(r->gpu, r->dm->vae.dir, &r->vae, err)) != LQ_OK)
		return s;
	const struct ltxv_vae_config *vc = &r->dm->vae_config;
	int64_t zs[5] = {r->shape.batch, r->shape.channels, r->shape.frames,
	    r->shape.height, r->shape.width};
	/* the tiling the memory plan chose (make_plan: the job's vae_tiling;
	 * auto: untiled when that fits, else the largest tiles that do) */
	struct ltxv_vae_tiling tiling = r->plan.tiling;
	{
		const struct nn_plan *p = &r->plan;
		char what[96], detail[320];
		ltxv_vae_tiling_describe(&tiling, what, sizeof(what));
		snprintf(detail, sizeof(detail), "{\"mode\":\"%s\",\"choice\":\"%s\","
		    "\"decode_bytes\":%" PRIu64 ",\"budget_bytes\":%" PRIu64
		    ",\"fits\":%s}", r->vae_tiling_mode == LTXV_VAE_TILING_AUTO ?
		    "auto" : r->vae_tiling_mode == LTXV_VAE_TILING_OFF ? "off" :
		    "set", what, p->phase_device[NN_PHASE_DECODE], p->budget,
		    p->budget == 0 || p->phase_device[NN_PHASE_DECODE] <=
		    p->budget ? "true" : "false");
		if ((s = store_add_event(r->st, r->job->id, "vae_tiling", detail,
		    err)) != LQ_OK)
			return s;
		log_debug("job %lld: vae decode %s", (long long)r->job->id, what);
	}

	size_t n = latents_numel(&r->shape);
	float *z = xmalloc(n * sizeof(float));
	latents_unpack(&r->shape, r->latents, z);
	latents_denormalize(&r->shape, z, ltxv_vae_latents_mean(r->vae),
	    ltxv_vae_latents_std(r->vae), vc->scaling_factor);
	struct st_file *noise_file = NULL;
	if (r->jc.decode_noise != NULL) {
		char *p = job_path(r, r->jc.decode_noise);
		s = st_file_open(p, &noise_file, err);
		free(p);
		if (s != LQ_OK) {
			free(z);
			return s;
		}
	}
	float *dts = xcalloc((size_t)r->B, sizeof(float));
	if (vc->timestep_conditioning) {
		/* z = (1 - s) * z + s * noise, noise drawn like torch.randn(z.shape) */
		float *noise = xmalloc(n * sizeof(float));
		const struct st_tensor *t = noise_file ?
		    st_file_find(noise_file, "decode_noise") : NULL;
		char dn[64];
		stage_noise_name(r, "decode_noise", dn, sizeof(dn));
		if (t == NULL && r->noise != NULL)
			t = st_file_find(r->noise, dn);
		if (t != NULL && (size_t)(t->nbytes / st_dtype_size(t->dtype)) == n) {
			float *f = st_tensor_to_f32(t);
			memcpy(noise, f, n * sizeof(float));
			free(f);
		} else {
			rng_fill_normal(r->jc.seed, RNG_PURPOSE_OF_STAGE(r->stage,
			    RNG_PURPOSE_DECODE_NOISE), 0, noise, n);
		}
		float *scales = xmalloc((size_t)r->B * sizeof(float));
		for (int b = 0; b < r->B; b++) {
			scales[b] = (float)r->jc.decode_noise_scale;
			dts[b] = (float)r->jc.decode_timestep;
		}
		latents_mix_noise(z, noise, (size_t)r->B, n / (size_t)r->B, scales);
		free(scales);
		free(noise);
	}
	ltxv_vae_output_shape(r->vae, zs, out_shape);
	video_out_init(vo, r, out_shape);
	struct ltxv_vae_sink sink = {video_out_frames, vo};
	for (int try_no = 1;; try_no++) {
		struct noise_source ns = {r, noise_file ? noise_file : r->noise, 0,
		    noise_file == NULL};
		struct ltxv_vae_noise noise = {fill_noise, &ns};
		struct ltxv_vae_decode_args a = {
			.decode_timestep = vc->timestep_conditioning ? dts : NULL,
			.noise = &noise,
		};
		if ((s = video_out_begin(vo, try_no, err)) == LQ_OK)
			s = ltxv_vae_decode_tiled(r->vae, &a, z, zs, &tiling, &sink,
			    err);
		if (s == LQ_OK)
			break;
		video_out_abort(vo);
		if (s != LQ_RETRY || error_code(err) != LQ_CODE_GPU_OOM)
			break;
		struct ltxv_vae_tiling smaller = tiling;
		if (!smaller.use_tiling || !smaller.use_framewise_decoding)
			smaller.use_tiling = smaller.use_framewise_decoding = 1;
		else if (!ltxv_vae_tiling_shrink(vc, &smaller))
			break;		/* already the smallest tiles */
		char what[96], detail[512];
		ltxv_vae_tiling_describe(&smaller, what, sizeof(what));
		snprintf(detail, sizeof(detail), "{\"try\":%d,\"choice\":\"%s\"}",
		    try_no + 1, what);
		log_warn("job %lld %s: decode ran out of device memory (%s); "
		    "decoding again from the final latents with %s",
		    (long long)r->job->id, r->job->name, err->message, what);
		struct lq_error e2;
		error_clear(&e2);
		if ((s = store_add_event(r->st, r->job->id, "decode_retry", detail,
		    &e2)) != LQ_OK) {
			*err = e2;
			break;
		}
		tiling = smaller;
		error_clear(err);
	}
	st_file_close(noise_file);
	free(dts);
	free(z);
	return s;
}



/*
 * Finishes the streamed outputs: closes each MP4 (flush, trailer, rename)
 * and records it, writes the contact sheet from the frames kept, and the
 * save_tensors file.
 */
static enum lq_status
phase_encode_video(struct render *r, struct video_out *vo,
    const int64_t out_shape[5], char **output, struct lq_error *err)
{
	enum lq_status s;
	if ((s = enter_phase(r, "encode-video", r->jc.num_inference_steps, err)) !=
	    LQ_OK)
		return s;
	int F = (int)out_shape[2], H = (int)out_shape[3], W = (int)out_shape[4];
	size_t fb = (size_t)H * W * 3;
	LQ_ASSERT(vo->done == F);
	for (int b = 0; b < r->B && s == LQ_OK; b++) {
		const char *mp4 = vo->mp4_path[b];
		struct media_frames sheet_frames = {vo->npick, H, W,
		    vo->sheet + (size_t)b * vo->npick * fb};
		struct render_artifact sheet_c = {r->st, r->job->id,
		    "contact_sheet"};
		struct file_commit sheet_hook = {render_commit_artifact, &sheet_c};
		/* the sheet's own pick of <= 16 frames from the npick kept
		 * is all of them, in order: the sheet of the whole video */
		struct media_sheet_options so = media_sheet_defaults;
		so.commit = &sheet_hook;
		char *sheet = job_path_sibling(mp4, ".sheet.png");
		/* closing commits the MP4 through vo->mp4_hook: renamed and
		 * recorded under the job's lease */
		s = media_mp4_close(vo->mp4[b], err);
		vo->mp4[b] = NULL;
		if (s == LQ_OK)
			s = media_write_contact_sheet(sheet, &sheet_frames, &so,
			    &vo->prov, NULL, NULL, err);
		if (s == LQ_OK) {
			log_info("job %lld %s: wrote %s and %s", (long long)r->job->id,
			    r->job->name, mp4, sheet);
			if (b == 0)
				*output = xstrdup(mp4);
		}
		free(sheet);
	}
	if (s != LQ_OK || r->jc.save_tensors == NULL)
		return s;
	/* save_tensors: named as the goldens name them */
	char *path = job_path(r, r->jc.save_tensors);
	struct st_writer *w = st_writer_new();
	int64_t ls[4] = {r->jc.num_inference_steps - r->first_step, r->B, r->S,
	    r->C};
	st_writer_add(w, "latents_after_step", ST_F32, 4, ls, r->trajectory);
	int64_t vs[5] = {out_shape[0], F, H, W, 3};
	st_writer_add(w, "video_np", ST_F32, 5, vs, vo->all_np);
	st_writer_add(w, "video_uint8", ST_U8, 5, vs, vo->all_u8);
	float *up = NULL;
	if (r->n_stages == 2) {
		/* the stages' hand-over, named as the two-stage golden's */
		const struct latents_shape *a = &r->shape1, *b = &r->shape;
		int64_t s1[5] = {a->batch, a->channels, a->frames, a->height,
		    a->width};
		int64_t s2[5] = {b->batch, b->channels, b->frames, b->height,
		    b->width};
		up = xmalloc(latents_numel(b) * sizeof(float));
		latents_unpack(b, r->upsampled, up);
		st_writer_add(w, "stage1.latents_out", ST_F32, 5, s1,
		    r->stage1_out);
		st_writer_add(w, "upsample.latents_out", ST_F32, 5, s2, up);
	}
	struct render_artifact tensors_c = {r->st, r->job->id, "tensors"};
	struct file_commit tensors_hook = {render_commit_artifact, &tensors_c};
	if ((s = render_make_parent_dirs(path, err)) == LQ_OK)
		s = st_writer_write_commit(w, path, &tensors_hook, err);
	st_writer_free(w);
	free(up);
	free(path);
	return s;
}

/*
 * A job whose model is an LTX2Pipeline renders through render_ltx2
 * (ltx2.c), a WanPipeline through render_wan (wan.c); *handled says
 * whether one did (then its status is returned).
 */
static enum lq_status
render_if_ltx2(struct render *r, int *handled, struct lq_error *err)
{
	*handled = 0;
	enum lq_status s = fetch_model_urls(r, err);
	if (s != LQ_OK)
		return s;
	const struct job_config *jc = &r->jc;
	struct model_ref_resolver res = {r->st, store_model_path_resolve};
	struct model_ref ref;
	if ((s = model_ref_resolve(jc->model, jc->transformer, jc->vae,
	    jc->text_encoder, jc->scheduler, r->base_dir, &res, &ref, err)) !=
	    LQ_OK)
		return s;
	if (model_ref_is_ltx2(&ref) || model_ref_is_wan(&ref)) {
		*handled = 1;
		struct render_job_ctx c = {r->st, r->job, r->owner, r->opt,
		    &r->jc, r->config, r->base_dir, &ref};
		s = model_ref_is_wan(&ref) ? render_wan(&c, err) :
		    render_ltx2(&c, err);
	}
	model_ref_clear(&ref);
	return s;
}

enum lq_status
render_job(struct store *st, const struct store_job *job, const char *owner,
    const struct render_options *opt, struct lq_error *err)
{
	struct render r;
	memset(&r, 0, sizeof(r));
	r.st = st;
	r.job = job;
	r.owner = owner;
	r.opt = opt;
	/* the checkpoints are keyed by config_digest: a config that is not
	 * the digest's text (edited in the database) must not resume them */
	if (!store_job_config_intact(job))
		return error_set(err, LQ_FAILED, "LQ-RUN-CFG", "job %lld's "
		    "config is not the one its digest names: changed outside "
		    "latentq, so neither rendered nor resumed",
		    (long long)job->id);
	r.config = cJSON_Parse(job->config_json);
	if (r.config == NULL)
		return error_set(err, LQ_FAILED, "LQ-RUN-CFG", "job %lld has no "
		    "valid config", (long long)job->id);
	char *mp = xstrdup(job->manifest_path ? job->manifest_path : ".");
	r.base_dir = xstrdup(dirname(mp));
	free(mp);
	enum lq_status s = job_config_from_json(r.config, &r.whole, err);
	r.jc = r.whole;		/* stage_setup narrows it to the stage */
	r.n_stages = job_two_stage(&r.whole) ? 2 : 1;
	if (s == LQ_OK && r.jc.model == NULL)
		s = error_set(err, LQ_FAILED, "LQ-RUN-CFG", "job %lld has no "
		    "model", (long long)job->id);
	if (s == LQ_OK && r.jc.output == NULL)
		s = error_set(err, LQ_FAILED, "LQ-RUN-CFG", "job %lld has no "
		    "output path", (long long)job->id);
	if (s == LQ_OK && r.jc.prompt == NULL && r.jc.prompt_embeds == NULL)
		s = error_set(err, LQ_FAILED, "LQ-RUN-CFG", "job %lld has "
		    "neither prompt nor prompt_embeds", (long long)job->id);
	/* values render_precision takes as checked: preflight's, but a
	 * config can come from elsewhere (an imported bundle, an edit) */
	enum gpu_precision prec;
	if (s == LQ_OK && r.jc.precision != NULL &&
	    gpu_precision_parse(r.jc.precision, &prec) != 0) {
		char vals[32];
		char *v = util_escape_control(r.jc.precision);
		s = error_set(err, LQ_FAILED, "LQ-RUN-CFG", "job %lld: "
		    "precision %s is not one of %s", (long long)job->id, v,
		    gpu_precision_list(vals, sizeof(vals)));
		free(v);
		error_set_field(err, "precision");
	}
	if (s == LQ_OK) {
		int handled = 0;
		s = render_if_ltx2(&r, &handled, err);
		if (handled || s != LQ_OK) {
			render_free(&r);
			return s;
		}
	}
	struct video_out vo;
	int64_t out_shape[5];
	memset(&vo, 0, sizeof(vo));
	char *output = NULL;
	/* Phases in the order of the memory plan: the text encoder, then the
	 * transformer, then the VAE decoder, each alone on the device. */
	if (s == LQ_OK)
		s = phase_load(&r, err);
	if (s == LQ_OK && (s = phase_compile(&r, err)) == LQ_OK)
		s = make_plan(&r, err);
	if (s == LQ_OK)
		s = phase_encode_text(&r, err);
	if (s == LQ_OK)
		s = load_resume(&r, err);
	/* a two-stage job: stage 1, the upsampler, stage 2 (from its
	 * checkpoints when stage 2 had begun) */
	int from2 = r.n_stages == 2 && r.resume_found && r.resume.stage == 2;
	if (s == LQ_OK && !from2 && (s = load_networks(&r, err)) == LQ_OK)
		s = phase_denoise(&r, err);
	if (s == LQ_OK && r.n_stages == 2)
		s = from2 ? resume_stage2(&r, err) : phase_upsample(&r, err);
	if (s == LQ_OK && r.n_stages == 2 &&
	    (s = load_networks(&r, err)) == LQ_OK)
		s = phase_denoise(&r, err);
	if (s == LQ_OK)
		s = phase_decode(&r, &vo, out_shape, err);
	if (s == LQ_OK)
		s = record_peak(&r, err);
	if (s == LQ_OK)
		s = phase_encode_video(&r, &vo, out_shape, &output, err);
	if (s == LQ_OK)
		s = store_set_output(st, job->id, output, err);
	free(output);
	video_out_free(&vo);
	render_free(&r);
	return s;
}
