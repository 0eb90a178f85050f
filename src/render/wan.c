/*
 * wan.c — one Wan 2.1 job end to end: diffusers' WanPipeline.__call__
 * (pipelines/wan/pipeline_wan.py at 58eb52c), text-to-video with
 * prompt_embeds supplied, and a checkpoint after every step.
 *
 *   prompt_embeds, negative_prompt_embeds (UMT5 hidden states, supplied)
 *   -> latents [B, C, F, H, W] (`latents: FILE`, else randn) in float32
 *   -> per step t (UniPC's integer timesteps): the transformer on the cond
 *      text, then (guidance_scale > 1) on the negative text, each a batch
 *      of B; guided = uncond + g (cond - uncond); UniPCMultistepScheduler
 *      .step (sampler/unipc.h)
 *   -> latents / (1 / latents_std) + latents_mean, AutoencoderKLWan.decode
 *      (nn/wan_vae.h), postprocess to video_np and uint8 [B, F, H, W, 3]
 *   -> one MP4 per video, a contact sheet, save_tensors.
 *
 * A checkpoint is the exact state the next step starts from: the latents
 * [B, C, F, H, W] followed by the UniPC state (unipc_state_pack: the x0
 * history, last_sample, the order counters), as one row of floats, so a
 * resume after any step continues bit for bit.  The device fingerprint
 * carries the resolved scheduler (unipc_config_describe after the job's
 * flow_shift) beside the gpu's kernel variants.
 *
 * Not here (refused by preflight, named in latentq-manifest(5)): the
 * UMT5 text encoder (prompt_embeds only), image-to-video, Wan 2.2's
 * two-expert MoE (diffusers_open_wan), VAE tiling, meshes.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/digest.h"
#include "core/fault.h"
#include "core/log.h"
#include "core/util.h"
#include "gpu/gpu.h"
#include "media/media.h"
#include "model/diffusers.h"
#include "model/hash.h"
#include "model/safetensors.h"
#include "nn/wan_transformer.h"
#include "nn/wan_vae.h"
#include "render/render-int.h"
#include "sampler/latents.h"
#include "sampler/rng.h"
#include "sampler/scheduler.h"
#include "sampler/unipc.h"
#include "store/checkpoints.h"
#include "store/jobs.h"
#include "store/models.h"

struct wan {
	const struct render_job_ctx *c;
	const struct job_config *jc;
	struct diffusers_wan_model *dm;
	struct wan_transformer_config tcfg;
	struct wan_vae_config vcfg;
	struct unipc_config sched_cfg;
	struct unipc_schedule sched;
	struct unipc_state state;
	struct gpu_ctx *gpu;
	struct st_file *noise;		/* noise: FILE, or NULL */
	char model_digest[DIGEST_HEX_SIZE];
	char device_fingerprint[DIGEST_HEX_SIZE];
	int N;				/* num_inference_steps */
	int cfg;			/* do_classifier_free_guidance */

	int B, T, Tn, D;		/* batch, text lengths, text_dim */
	struct latents_shape ls;	/* [B, C, F, H, W] */
	size_t nv;			/* floats of the latents */
	size_t ns;			/* floats of the packed UniPC state */

	float *latents;			/* [B, C, F, H, W] */
	float *text, *ntext;		/* [B, T, D], [B, Tn, D] */
	float *vpred;			/* [2B, ...]: uncond rows, then cond */
	float *guided;			/* [B, ...] */
	float *ts;			/* [B] timesteps */
	float *traj;			/* [N, nv + ns] with save_tensors */
};

static void
wan_free(struct wan *r)
{
	float *bufs[] = { r->latents, r->text, r->ntext, r->vpred, r->guided,
	    r->ts, r->traj };
	for (size_t i = 0; i < LQ_ARRAY_LEN(bufs); i++)
		free(bufs[i]);
	st_file_close(r->noise);
	unipc_state_free(&r->state);
	unipc_schedule_free(&r->sched);
	gpu_ctx_free(r->gpu);
	diffusers_wan_free(r->dm);
}

static enum lq_status
phase(struct wan *r, const char *name, int step, struct lq_error *err)
{
	return render_enter_phase(r->c->st, r->c->job, r->c->opt, name, step,
	    r->N, err);
}

static char *
job_path(const struct wan *r, const char *p)
{
	return job_resolve_path(r->c->base_dir, p);
}

/* One [B, T, D] tensor of the embeddings file, or LQ-RUN-EMBEDS. */
static enum lq_status
embeds(const struct wan *r, const struct st_file *f, const char *name,
    int *T, float **out, struct lq_error *err)
{
	const struct st_tensor *t = st_file_find(f, name);
	if (t == NULL || t->ndim != 3 || t->shape[0] != r->B ||
	    t->shape[2] != r->D || t->shape[1] < 1) {
		error_set(err, LQ_FAILED, "LQ-RUN-EMBEDS", "%s needs %s [%d, T, "
		    "%d] (UMT5 hidden states of the transformer's text_dim)",
		    r->jc->prompt_embeds, name, r->B, r->D);
		error_set_field(err, "prompt_embeds");
		return LQ_FAILED;
	}
	*T = (int)t->shape[1];
	*out = st_tensor_to_f32(t);
	return LQ_OK;
}

/*
 * Opens the model, pins its identity, reads the transformer's, the VAE's
 * and the scheduler's configs, the text, and sizes everything:
 * WanPipeline.prepare_latents's [B, C, (F - 1) / temporal + 1,
 * H / spatial, W / spatial] with the VAE config's scale factors.
 */
static enum lq_status
phase_load(struct wan *r, struct lq_error *err)
{
	const struct render_job_ctx *c = r->c;
	const struct job_config *jc = r->jc;
	enum lq_status s;
	if ((s = phase(r, "load", -1, err)) != LQ_OK)
		return s;
	if ((s = model_ref_open_wan(c->ref, &r->dm, err)) != LQ_OK)
		return s;
	struct model_hash_cache cache = {c->st, store_file_hash_lookup,
	    store_file_hash_record};
	if ((s = model_ref_identity_wan(r->dm, &cache, r->model_digest,
	    err)) != LQ_OK ||
	    (s = render_pin_model(c->st, c->job, r->dm->root, r->model_digest,
	    err)) != LQ_OK ||
	    (s = unipc_config_load(r->dm->scheduler.config_path,
	    &r->sched_cfg, err)) != LQ_OK ||
	    (jc->has_flow_shift && (s = unipc_config_set_flow_shift(
	    &r->sched_cfg, jc->flow_shift, err)) != LQ_OK) ||
	    (s = wan_transformer_read_config(r->dm->transformer.dir, &r->tcfg,
	    err)) != LQ_OK)
		return s;
	cJSON *j = NULL;
	if ((s = diffusers_load_json(r->dm->vae.config_path, &j, err)) ==
	    LQ_OK)
		s = diffusers_parse_wan_vae(j, r->dm->vae.config_path, &r->vcfg,
		    err);
	cJSON_Delete(j);
	if (s != LQ_OK)
		return s;

	/* the text decides the batch: prompt_embeds.shape[0] */
	if (jc->prompt_embeds == NULL)
		return error_set(err, LQ_FAILED, "LQ-RUN-EMBEDS", "job %lld: "
		    "Wan renders from prompt_embeds (latentq has no UMT5 text "
		    "encoder)", (long long)c->job->id);
	r->cfg = jc->guidance_scale > 1.0;
	r->D = r->tcfg.text_dim;
	char *p = job_path(r, jc->prompt_embeds);
	struct st_file *f = NULL;
	s = st_file_open(p, &f, err);
	free(p);
	if (s != LQ_OK)
		return s;
	const struct st_tensor *e = st_file_find(f, "prompt_embeds");
	r->B = e != NULL && e->ndim == 3 ? (int)e->shape[0] : 0;
	s = embeds(r, f, "prompt_embeds", &r->T, &r->text, err);
	if (s == LQ_OK && r->cfg)
		s = embeds(r, f, "negative_prompt_embeds", &r->Tn, &r->ntext,
		    err);
	st_file_close(f);
	if (s != LQ_OK)
		return s;

	const struct wan_vae_config *vc = &r->vcfg;
	int64_t tr = vc->scale_factor_temporal, sr = vc->scale_factor_spatial;
	if (jc->num_frames < 1 || (jc->num_frames - 1) % tr != 0 ||
	    jc->height % (sr * r->tcfg.patch_size[1]) != 0 ||
	    jc->width % (sr * r->tcfg.patch_size[2]) != 0)
		return error_set(err, LQ_FAILED, "LQ-RUN-GEOM", "%" PRId64 "x%"
		    PRId64 " with %" PRId64 " frames does not fit the model "
		    "(frames %" PRId64 "k + 1, sizes multiples of %" PRId64 " x "
		    "%d)", jc->height, jc->width, jc->num_frames, tr, sr,
		    r->tcfg.patch_size[1]);
	r->ls = (struct latents_shape){
		.batch = r->B, .channels = r->tcfg.in_channels,
		.frames = (jc->num_frames - 1) / tr + 1,
		.height = jc->height / sr, .width = jc->width / sr,
		.patch_size = 1, .patch_size_t = 1,
	};
	if ((s = wan_transformer_check_grid(&r->tcfg, (int)r->ls.frames,
	    (int)r->ls.height, (int)r->ls.width, err)) != LQ_OK)
		return s;
	if (vc->z_dim != r->tcfg.in_channels ||
	    r->tcfg.out_channels != r->tcfg.in_channels)
		return error_set(err, LQ_FAILED, "LQ-RUN-GEOM", "the VAE's "
		    "z_dim %d does not match the transformer's in_channels %d / "
		    "out_channels %d", vc->z_dim, r->tcfg.in_channels,
		    r->tcfg.out_channels);
	r->nv = latents_numel(&r->ls);

	r->N = (int)jc->num_inference_steps;
	if ((s = unipc_set_timesteps(&r->sched_cfg, r->N, &r->sched, err)) !=
	    LQ_OK)
		return s;
	unipc_state_init(&r->state, &r->sched_cfg, r->nv);
	r->ns = unipc_state_packed_size(&r->state) / sizeof(float);
	if (jc->noise != NULL) {
		char *np = job_path(r, jc->noise);
		s = st_file_open(np, &r->noise, err);
		free(np);
		if (s != LQ_OK)
			return s;
	}
	r->latents = xcalloc(r->nv, sizeof(float));
	r->vpred = xcalloc(2 * r->nv, sizeof(float));
	r->guided = xcalloc(r->nv, sizeof(float));
	r->ts = xcalloc((size_t)r->B, sizeof(float));
	if (jc->save_tensors != NULL)
		r->traj = xcalloc((size_t)r->N * (r->nv + r->ns), sizeof(float));
	return LQ_OK;
}

static enum lq_status
phase_compile(struct wan *r, struct lq_error *err)
{
	enum lq_status s;
	if ((s = phase(r, "compile", -1, err)) != LQ_OK)
		return s;
	struct gpu_ctx_opts o = {.device = r->c->opt->device};
	if ((s = gpu_ctx_create(&o, &r->gpu, err)) != LQ_OK)
		return s;
	char sched[512];
	unipc_config_describe(&r->sched_cfg, sched, sizeof(sched));
	render_device_fingerprint(r->gpu, sched, r->device_fingerprint);
	return gpu_ctx_warmup(r->gpu, render_precision(r->jc), err);
}

/*
 * The latents and scheduler state the loop starts from: a checkpoint
 * (latents then the packed UniPC state), else `latents: FILE` or a draw.
 */
static enum lq_status
initial_latents(struct wan *r, int *start, struct lq_error *err)
{
	const struct render_job_ctx *c = r->c;
	struct store_resume_key key = {
		.config_digest = c->job->config_digest,
		.model_digest = r->model_digest,
		.device_fingerprint = r->device_fingerprint,
		.resume_anywhere = c->opt->resume_anywhere,
	};
	struct store_checkpoint cp;
	int found = 0, skipped = 0;
	enum lq_status s = store_load_checkpoint(c->st, c->job->id, &key, &cp,
	    &found, &skipped, err);
	if (s != LQ_OK)
		return s;
	size_t bytes = (r->nv + r->ns) * sizeof(float);
	if (found) {
		if (cp.size != bytes || strcmp(cp.dtype, "F32") != 0 ||
		    cp.step > r->N || cp.step < 1) {
			s = error_set(err, LQ_FAILED, "LQ-RUN-CKPT", "checkpoint of "
			    "step %d has %zu bytes of %s, expected %zu of F32 "
			    "(latents and the UniPC state)", cp.step, cp.size,
			    cp.dtype, bytes);
			store_checkpoint_clear(&cp);
			return s;
		}
		memcpy(r->latents, cp.latent, r->nv * sizeof(float));
		s = unipc_state_unpack(&r->state, (const unsigned char *)
		    cp.latent + r->nv * sizeof(float), r->ns * sizeof(float),
		    err);
		if (s == LQ_OK && r->state.step_index != cp.step)
			s = error_set(err, LQ_FAILED, "LQ-RUN-CKPT", "checkpoint "
			    "of step %d holds the UniPC state of step %d",
			    cp.step, r->state.step_index);
		*start = cp.step;
		store_checkpoint_clear(&cp);
		if (s != LQ_OK)
			return s;
		char detail[64];
		snprintf(detail, sizeof(detail), "{\"step\":%d}", *start);
		store_add_event(c->st, c->job->id, "resumed", detail, err);
		log_info("job %lld %s: resuming after step %d/%d",
		    (long long)c->job->id, c->job->name, *start, r->N);
		if (r->traj == NULL)
			return LQ_OK;
		return store_fill_trajectory(c->st, c->job->id, r->traj, bytes,
		    0, *start, err);
	}
	*start = 0;
	int64_t shape[5] = {r->ls.batch, r->ls.channels, r->ls.frames,
	    r->ls.height, r->ls.width};
	if (r->jc->latents == NULL)
		return render_draw(r->noise, r->jc->noise, r->jc->seed,
		    "latents", RNG_PURPOSE_INITIAL_LATENTS, 5, shape,
		    r->latents, err);
	/* prepare_latents with latents=: cast to float32, shape as drawn */
	char *p = job_path(r, r->jc->latents);
	struct st_file *f = NULL;
	s = st_file_open(p, &f, err);
	free(p);
	if (s != LQ_OK)
		return s;
	const struct st_tensor *t = st_file_find_or_only(f, "latents");
	if (t == NULL || t->ndim != 5 || memcmp(t->shape, shape,
	    sizeof(shape)) != 0) {
		st_file_close(f);
		error_set(err, LQ_FAILED, "LQ-LAT-001", "%s: latents must be "
		    "[%" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 ", %"
		    PRId64 "] (B, C, F, H, W) for this job", r->jc->latents,
		    shape[0], shape[1], shape[2], shape[3], shape[4]);
		error_set_field(err, "latents");
		return LQ_FAILED;
	}
	float *v = st_tensor_to_f32(t);
	memcpy(r->latents, v, r->nv * sizeof(float));
	free(v);
	st_file_close(f);
	return LQ_OK;
}

/* One transformer pass of B rows over `text` [B, T, D] into out. */
static enum lq_status
dit(struct wan *r, struct wan_transformer *m, const struct gpu_tensor *x,
    const struct gpu_tensor *text, const struct gpu_tensor *o, float *out,
    struct lq_error *err)
{
	struct wan_transformer_args a = {
		.hidden_states = x, .encoder_hidden_states = text,
		.timestep = r->ts,
	};
	enum lq_status s = wan_transformer_forward(m, &a, o, NULL, err);
	if (s == LQ_OK)
		s = gpu_tensor_download_f32(r->gpu, o, out, err);
	return s;
}

static enum lq_status
phase_denoise(struct wan *r, struct lq_error *err)
{
	const struct render_job_ctx *c = r->c;
	const struct job_config *jc = r->jc;
	enum lq_status s;
	int start = 0;
	if ((s = phase(r, "denoise", -1, err)) != LQ_OK)
		return s;
	if ((s = initial_latents(r, &start, err)) != LQ_OK)
		return s;
	struct wan_transformer *m = NULL;
	struct gpu_buffer *bx = NULL, *bt = NULL, *bn = NULL, *bo = NULL;
	struct gpu_tensor tx, tt, tn, to;
	int64_t xs[5] = {r->ls.batch, r->ls.channels, r->ls.frames,
	    r->ls.height, r->ls.width};
	int64_t ts[3] = {r->B, r->T, r->D}, ns[3] = {r->B, r->Tn, r->D};
	struct wan_transformer_shape shp = {
		.B = r->B, .F = (int)r->ls.frames, .H = (int)r->ls.height,
		.W = (int)r->ls.width, .T = r->T > r->Tn ? r->T : r->Tn,
		.context = 1, .streaming = NN_WEIGHTS_RESIDENT,
	};
	if (start < r->N && (s = wan_transformer_load(r->gpu,
	    r->dm->transformer.dir, &m, err)) != LQ_OK)
		goto out;
	if (m != NULL)
		wan_transformer_set_precision(m, render_precision(jc));
	if (start < r->N &&
	    ((s = wan_transformer_reserve(m, &shp, err)) != LQ_OK ||
	    (s = render_upload(r->gpu, 5, xs, NULL, &bx, &tx, err)) != LQ_OK ||
	    (s = render_upload(r->gpu, 5, xs, NULL, &bo, &to, err)) != LQ_OK ||
	    (s = render_upload(r->gpu, 3, ts, r->text, &bt, &tt, err)) !=
	    LQ_OK ||
	    (r->cfg && (s = render_upload(r->gpu, 3, ns, r->ntext, &bn, &tn,
	    err)) != LQ_OK)))
		goto out;
	int keep = jc->save_tensors != NULL ? 0 : c->opt->keep_checkpoints;
	int64_t cp_shape[2] = {1, (int64_t)(r->nv + r->ns)};
	float *blob = xmalloc((r->nv + r->ns) * sizeof(float));
	/* noise_pred (cond) in rows B.., noise_uncond in rows 0..B-1, as
	 * scheduler_apply_guidance reads cat([uncond, cond]) */
	float *vcond = r->vpred + r->nv, *vuncond = r->vpred;
	for (int k = start; k < r->N && s == LQ_OK; k++) {
		/* timestep = t.expand(B): the int64 timestep as the model's
		 * float input */
		for (int b = 0; b < r->B; b++)
			r->ts[b] = (float)r->sched.timesteps[k];
		if ((s = gpu_tensor_upload_f32(r->gpu, &tx, r->latents, err)) !=
		    LQ_OK ||
		    (s = dit(r, m, &tx, &tt, &to, vcond, err)) != LQ_OK ||
		    (r->cfg && (s = dit(r, m, &tx, &tn, &to, vuncond, err)) !=
		    LQ_OK))
			break;
		const float *v = vcond;
		if (r->cfg) {
			/* noise_uncond + g * (noise_pred - noise_uncond) */
			scheduler_apply_guidance(r->guided, r->vpred,
			    (size_t)r->B, r->nv / (size_t)r->B,
			    jc->guidance_scale, 0.0);
			v = r->guided;
		}
		unipc_step(&r->sched_cfg, &r->sched, &r->state, v, r->latents);
		fault_slow(c->job->name, "denoise", k + 1, c->opt->attempt);
		int64_t bad = latents_find_nonfinite(r->latents, r->nv);
		if (fault_nan(c->job->name, k + 1, c->opt->attempt))
			bad = 0;
		if (bad >= 0) {
			error_set(err, LQ_FAILED, "LQ-RUN-NAN", "the latents after "
			    "step %d/%d have a non-finite value at index %" PRId64,
			    k + 1, r->N, bad);
			error_set_hint(err, "the last finite checkpoint (step %d) "
			    "is kept; check the model and guidance settings", k);
			s = LQ_FAILED;
			break;
		}
		memcpy(blob, r->latents, r->nv * sizeof(float));
		unipc_state_pack(&r->state, (unsigned char *)(blob + r->nv));
		if (r->traj != NULL)
			memcpy(r->traj + (size_t)k * (r->nv + r->ns), blob,
			    (r->nv + r->ns) * sizeof(float));
		struct store_checkpoint_new cp = {
			.job_id = c->job->id, .step = k + 1,
			.sigma = r->sched.sigmas[k + 1], .dtype = "F32",
			.ndim = 2, .shape = cp_shape, .latent = blob,
			.size = (r->nv + r->ns) * sizeof(float),
			.config_digest = c->job->config_digest,
			.model_digest = r->model_digest,
			.device_fingerprint = r->device_fingerprint,
		};
		char digest[DIGEST_HEX_SIZE];
		if ((s = store_save_checkpoint(c->st, &cp, keep, digest, err)) !=
		    LQ_OK ||
		    (s = store_set_progress(c->st, c->job->id, "denoise", k + 1,
		    r->N, err)) != LQ_OK)
			break;
		log_info("job %lld %s: step %d/%d", (long long)c->job->id,
		    c->job->name, k + 1, r->N);
		if (fault_point(c->job->name, "denoise", k + 1, c->opt->attempt)) {
			s = error_set(err, LQ_RETRY, "LQ-GPU-OOM", "out of device "
			    "memory (injected) after step %d", k + 1);
			break;
		}
		if (render_interrupted && k + 1 < r->N) {
			s = error_set(err, LQ_RETRY, "LQ-RUN-INT", "interrupted "
			    "after step %d/%d (checkpoint committed)", k + 1, r->N);
			break;
		}
	}
	free(blob);
out:
	gpu_buffer_free(bx);
	gpu_buffer_free(bt);
	gpu_buffer_free(bn);
	gpu_buffer_free(bo);
	wan_transformer_free(m);
	return s;
}

/*
 * The video: de-normalised with the VAE config's latents_mean / _std,
 * decoded, postprocessed to video_np and uint8 [B, F, H, W, 3] (caller
 * frees both).
 */
static enum lq_status
decode_video(struct wan *r, float **np, uint8_t **u8, int64_t os[5],
    struct lq_error *err)
{
	enum lq_status s;
	*np = NULL;
	*u8 = NULL;
	float *z = xmalloc(r->nv * sizeof(float));
	memcpy(z, r->latents, r->nv * sizeof(float));
	const struct wan_vae_config *vc = &r->vcfg;
	latents_denormalize_wan(&r->ls, z, vc->latents_mean, vc->latents_std);
	int64_t zs[5] = {r->ls.batch, r->ls.channels, r->ls.frames,
	    r->ls.height, r->ls.width};
	wan_vae_output_shape(vc, zs, os);
	size_t no = (size_t)(os[0] * os[1] * os[2] * os[3] * os[4]);
	float *raw = xmalloc(no * sizeof(float));
	struct wan_vae *vae = NULL;
	if ((s = wan_vae_load(r->gpu, r->dm->vae.dir, &vae, err)) == LQ_OK)
		s = wan_vae_decode_host(vae, z, zs, raw, err);
	wan_vae_free(vae);
	free(z);
	if (s == LQ_OK) {
		*np = xmalloc(no * sizeof(float));
		*u8 = xmalloc(no);
		latents_postprocess_video(raw, os[0], os[2], os[3], os[4], *np,
		    *u8);
	}
	free(raw);
	return s;
}

static enum lq_status
phase_decode_and_write(struct wan *r, char **output, struct lq_error *err)
{
	const struct render_job_ctx *c = r->c;
	enum lq_status s;
	if ((s = phase(r, "decode", r->N, err)) != LQ_OK)
		return s;
	float *np = NULL;
	uint8_t *u8 = NULL;
	int64_t os[5] = {0};
	s = decode_video(r, &np, &u8, os, err);
	if (s == LQ_OK)
		s = phase(r, "encode-video", r->N, err);
	int F = (int)os[2], H = (int)os[3], W = (int)os[4];
	char shift[32];
	snprintf(shift, sizeof(shift), "%.17g", r->sched_cfg.flow_shift);
	const struct media_tag tags[] = {
		{"latentq_pipeline", DIFFUSERS_WAN_PIPELINE},
		{"latentq_flow_shift", shift},
	};
	struct render_videos rv = {r->B, F, H, W, u8, r->model_digest, tags,
	    LQ_ARRAY_LEN(tags), NULL};
	if (s == LQ_OK)
		s = render_write_videos(c, &rv, output, err);
	if (s == LQ_OK && r->jc->save_tensors != NULL) {
		/* named as the goldens and diffusers name them */
		size_t per = r->nv + r->ns;
		float *lt = xmalloc((size_t)r->N * r->nv * sizeof(float));
		for (int k = 0; k < r->N; k++)
			memcpy(lt + (size_t)k * r->nv, r->traj + (size_t)k * per,
			    r->nv * sizeof(float));
		struct st_writer *w = st_writer_new();
		int64_t lts[6] = {r->N, r->ls.batch, r->ls.channels,
		    r->ls.frames, r->ls.height, r->ls.width};
		int64_t vs[5] = {os[0], F, H, W, 3};
		int64_t tsh[1] = {r->N};
		st_writer_add(w, "latents_after_step", ST_F32, 6, lts, lt);
		st_writer_add(w, "timesteps", ST_I64, 1, tsh,
		    r->sched.timesteps);
		st_writer_add(w, "video_np", ST_F32, 5, vs, np);
		st_writer_add(w, "video_uint8", ST_U8, 5, vs, u8);
		s = render_write_tensors(c, w, err);
		st_writer_free(w);
		free(lt);
	}
	free(np);
	free(u8);
	return s;
}

enum lq_status
render_wan(const struct render_job_ctx *c, struct lq_error *err)
{
	struct wan r;
	memset(&r, 0, sizeof(r));
	r.c = c;
	r.jc = c->jc;
	r.N = (int)c->jc->num_inference_steps;
	char *output = NULL;
	enum lq_status s = phase_load(&r, err);
	if (s == LQ_OK)
		s = phase_compile(&r, err);
	if (s == LQ_OK)
		s = phase_denoise(&r, err);
	if (s == LQ_OK)
		s = phase_decode_and_write(&r, &output, err);
	if (s == LQ_OK)
		s = store_set_output(c->st, c->job->id, output, err);
	free(output);
	wan_free(&r);
	return s;
}
