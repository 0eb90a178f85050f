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
 * On a device mesh (doc/mesh.md) the transformer runs on every rank at
 * once, as for LTX-2 (ltx2.c): the data axis splits a step's rows (the
 * unconditional rows, then the conditional ones, B each), the context
 * axis the patched tokens (wan_transformer_set_context: Ulysses, the
 * output whole on every rank); the scheduler, the checkpoints and the VAE
 * run on rank 0's device, so the bits are one device's.
 *
 * Not here (refused by preflight, named in latentq-manifest(5)): the
 * UMT5 text encoder (prompt_embeds only), image-to-video, Wan 2.2's
 * two-expert MoE (diffusers_open_wan), VAE tiling.
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
#include "nn/ltxv_transformer.h"
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

/*
 * A rank's rows of one text: rows [j0, j0 + n) of a step's row list
 * (with CFG the unconditional rows [0, B), then the conditional [B, 2B);
 * without, the conditional [0, B)), videos j0 mod B on, and its device
 * buffers: the latents in, the text, the velocity out.
 */
struct wan_seg {
	int j0, n;
	struct gpu_buffer *bx, *bt, *bo;
	struct gpu_tensor tx, tt, to;
};

/* One rank of the job's mesh (render_mesh): its transformer (the same
 * weights), its coordinates and its rows' segments (at most one per
 * text). */
struct wan_rank {
	struct wan_transformer *m;
	struct gpu_ctx *gpu;		/* the mesh's (borrowed) */
	int data, context;
	int nseg;
	struct wan_seg seg[2];
};

struct wan {
	const struct render_job_ctx *c;
	const struct job_config *jc;
	struct diffusers_wan_model *dm;
	struct wan_transformer_config tcfg;
	struct wan_vae_config vcfg;
	struct unipc_config sched_cfg;
	struct unipc_schedule sched;
	struct unipc_state state;
	struct render_mesh mesh;	/* the job's devices */
	struct wan_rank *ranks;		/* one per mesh rank, while denoising */
	struct ltxv_cp_group **cp;	/* context > 1: one per data coordinate */
	struct gpu_ctx *gpu;		/* mesh rank 0's (borrowed) */
	struct st_file *noise;		/* noise: FILE, or NULL */
	char model_digest[DIGEST_HEX_SIZE];
	char device_fingerprint[DIGEST_HEX_SIZE];
	int N;				/* num_inference_steps */
	int cfg;			/* do_classifier_free_guidance */
	int R;				/* a step's rows: B, or 2B with CFG */

	int B, T, Tn, D;		/* batch, text lengths, text_dim */
	struct latents_shape ls;	/* [B, C, F, H, W] */
	size_t nv;			/* floats of the latents */
	size_t ns;			/* floats of the packed UniPC state */

	float *latents;			/* [B, C, F, H, W] */
	float *text, *ntext;		/* [B, T, D], [B, Tn, D] */
	float *vpred;			/* [2B, ...]: uncond rows, then cond */
	float *vrows;			/* a step's rows in vpred: vpred with
					 * CFG, else its cond rows */
	float *guided;			/* [B, ...] */
	float *ts;			/* [R] timesteps */
	float *traj;			/* [N, nv + ns] with save_tensors */
};

/* Frees the ranks' transformers and buffers, and the context groups. */
static void
ranks_free(struct wan *r)
{
	for (int i = 0; r->ranks != NULL && i < r->mesh.n_ranks; i++) {
		struct wan_rank *k = &r->ranks[i];
		for (int g = 0; g < k->nseg; g++) {
			gpu_buffer_free(k->seg[g].bx);
			gpu_buffer_free(k->seg[g].bt);
			gpu_buffer_free(k->seg[g].bo);
		}
		wan_transformer_free(k->m);
	}
	free(r->ranks);
	r->ranks = NULL;
	for (int d = 0; r->cp != NULL && d < r->mesh.data; d++)
		ltxv_cp_group_free(r->cp[d]);
	free(r->cp);
	r->cp = NULL;
}

static void
wan_free(struct wan *r)
{
	float *bufs[] = { r->latents, r->text, r->ntext, r->vpred, r->guided,
	    r->ts, r->traj };
	for (size_t i = 0; i < LQ_ARRAY_LEN(bufs); i++)
		free(bufs[i]);
	ranks_free(r);
	st_file_close(r->noise);
	unipc_state_free(&r->state);
	unipc_schedule_free(&r->sched);
	render_mesh_close(&r->mesh);
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
	r->R = r->cfg ? 2 * r->B : r->B;
	r->latents = xcalloc(r->nv, sizeof(float));
	r->vpred = xcalloc(2 * r->nv, sizeof(float));
	r->vrows = r->cfg ? r->vpred : r->vpred + r->nv;
	r->guided = xcalloc(r->nv, sizeof(float));
	r->ts = xcalloc((size_t)r->R, sizeof(float));
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
	/* --device, or main's LATENTQ_DEVICE default (cmd_globals) */
	if ((s = render_mesh_open(r->c->st, r->c->job, r->c->opt->warm,
	    r->c->opt->device, &r->jc->mesh, &r->mesh, err)) != LQ_OK)
		return s;
	r->gpu = r->mesh.ranks[0].gpu;
	char sched[512];
	unipc_config_describe(&r->sched_cfg, sched, sizeof(sched));
	render_device_fingerprint(r->gpu, sched, r->device_fingerprint);
	return render_mesh_warmup(&r->mesh, render_precision(r->jc), err);
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

/*
 * Each rank's rows of a step's r->R (R / data per data coordinate; the
 * ranks of a context group share them) cut at the text boundary into
 * segments, its transformer on its device (with its context group when
 * context > 1: each rank computes its tokens, every rank gets the whole
 * output), and the segments' device buffers, the text uploaded once.
 * LQ-MESH-006 when the rows do not split over data (preflight refuses it
 * first), the transformer's errors otherwise.
 */
static enum lq_status
ranks_load(struct wan *r, struct lq_error *err)
{
	const struct render_mesh *mh = &r->mesh;
	int P = mh->context;
	enum lq_status s;
	if (r->R % mh->data != 0)
		return error_set(err, LQ_FAILED, "LQ-MESH-006", "%d transformer "
		    "rows (%d videos × %d) do not split over data %d", r->R,
		    r->B, r->R / r->B, mh->data);
	int rpd = r->R / mh->data;
	int Fp = (int)r->ls.frames / r->tcfg.patch_size[0];
	int64_t toks = (int64_t)Fp * (r->ls.height / r->tcfg.patch_size[1]) *
	    (r->ls.width / r->tcfg.patch_size[2]);
	if (P > 1) {
		r->cp = xcalloc((size_t)mh->data, sizeof(*r->cp));
		for (int d = 0; d < mh->data; d++)
			if ((s = ltxv_cp_group_create(P, rpd < r->B ? rpd : r->B,
			    toks, r->tcfg.inner_dim, &r->cp[d], err)) != LQ_OK)
				return s;
	}
	struct wan_transformer_shape shp = {
		.B = rpd < r->B ? rpd : r->B, .F = (int)r->ls.frames,
		.H = (int)r->ls.height, .W = (int)r->ls.width,
		.T = r->T > r->Tn ? r->T : r->Tn, .context = P,
		.streaming = NN_WEIGHTS_RESIDENT,
	};
	r->ranks = xcalloc((size_t)mh->n_ranks, sizeof(*r->ranks));
	for (int i = 0; i < mh->n_ranks; i++) {
		struct wan_rank *k = &r->ranks[i];
		const struct render_mesh_rank *mr = &mh->ranks[i];
		k->gpu = mr->gpu;
		k->data = mr->data;
		k->context = mr->context;
		if ((s = wan_transformer_load(mr->gpu, r->dm->transformer.dir,
		    &k->m, err)) != LQ_OK)
			return s;
		wan_transformer_set_precision(k->m, render_precision(r->jc));
		if (r->cp != NULL && (s = wan_transformer_set_context(k->m,
		    r->cp[k->data], k->context, err)) != LQ_OK)
			return s;
		if ((s = wan_transformer_reserve(k->m, &shp, err)) != LQ_OK)
			return s;
		/* its rows [a, b), cut where the text changes (row B) */
		int a = k->data * rpd, b = a + rpd;
		for (int j0 = a; j0 < b; ) {
			int end = r->cfg && j0 < r->B && b > r->B ? r->B : b;
			struct wan_seg *g = &k->seg[k->nseg++];
			g->j0 = j0;
			g->n = end - j0;
			int uncond = r->cfg && j0 < r->B;
			int T = uncond ? r->Tn : r->T;
			const float *text = (uncond ? r->ntext : r->text) +
			    (size_t)(j0 % r->B) * (size_t)T * (size_t)r->D;
			int64_t xs[5] = {g->n, r->ls.channels, r->ls.frames,
			    r->ls.height, r->ls.width};
			int64_t ts[3] = {g->n, T, r->D};
			if ((s = render_upload(mr->gpu, 5, xs, NULL, &g->bx, &g->tx,
			    err)) != LQ_OK ||
			    (s = render_upload(mr->gpu, 5, xs, NULL, &g->bo, &g->to,
			    err)) != LQ_OK ||
			    (s = render_upload(mr->gpu, 3, ts, text, &g->bt, &g->tt,
			    err)) != LQ_OK)
				return s;
			j0 = end;
		}
	}
	return LQ_OK;
}

/*
 * One rank's part of a step: a forward per segment of its rows, each
 * row reading its video's latents; context rank 0 of each group writes
 * the (whole) velocities into r->vrows.
 */
static enum lq_status
rank_step(void *ud, int rank, struct lq_error *err)
{
	struct wan *r = ud;
	struct wan_rank *k = &r->ranks[rank];
	size_t per = r->nv / (size_t)r->B;
	enum lq_status s = LQ_OK;
	for (int i = 0; i < k->nseg && s == LQ_OK; i++) {
		struct wan_seg *g = &k->seg[i];
		int v0 = g->j0 % r->B;	/* the segment's videos are v0.. */
		struct wan_transformer_args a = {
			.hidden_states = &g->tx, .encoder_hidden_states = &g->tt,
			.timestep = r->ts + g->j0,
		};
		if ((s = gpu_tensor_upload_f32(k->gpu, &g->tx, r->latents +
		    (size_t)v0 * per, err)) != LQ_OK ||
		    (s = wan_transformer_forward(k->m, &a, &g->to, NULL, err)) !=
		    LQ_OK)
			break;
		if (k->context == 0)
			s = gpu_tensor_download_f32(k->gpu, &g->to, r->vrows +
			    (size_t)g->j0 * per, err);
	}
	return s;
}

/* A failed rank's context group must not wait for it. */
static void
rank_abort(void *ud, int rank)
{
	struct wan *r = ud;
	if (r->cp != NULL)
		ltxv_cp_group_abort(r->cp[r->ranks[rank].data]);
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
	if (start < r->N && (s = ranks_load(r, err)) != LQ_OK) {
		ranks_free(r);
		return s;
	}
	int keep = jc->save_tensors != NULL ? 0 : c->opt->keep_checkpoints;
	int64_t cp_shape[2] = {1, (int64_t)(r->nv + r->ns)};
	float *blob = xmalloc((r->nv + r->ns) * sizeof(float));
	/* noise_pred (cond) in rows B.., noise_uncond in rows 0..B-1 of
	 * vpred, as scheduler_apply_guidance reads cat([uncond, cond]) */
	for (int k = start; k < r->N && s == LQ_OK; k++) {
		/* timestep = t.expand(B): the int64 timestep as the model's
		 * float input */
		for (int b = 0; b < r->R; b++)
			r->ts[b] = (float)r->sched.timesteps[k];
		if ((s = render_mesh_run(&r->mesh, rank_step, rank_abort, r,
		    err)) != LQ_OK)
			break;
		const float *v = r->vpred + r->nv;	/* noise_pred */
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
	ranks_free(r);	/* the decoder has rank 0's device alone */
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
