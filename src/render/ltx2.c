/*
 * ltx2.c — one LTX-2 job end to end: diffusers' LTX2Pipeline.__call__
 * (pipelines/ltx2/pipeline_ltx2.py at 58eb52c), text-to-audio+video with
 * prompt_embeds supplied, and a checkpoint of both streams after every
 * step.
 *
 *   prompt_embeds (+ negative) -> LTX2TextConnectors on cat([neg, pos])
 *   -> per step: the CFG pass (2B rows), the STG pass and the
 *      modality-isolation pass (positive rows), guidance on x0 for each
 *      stream (scheduler_apply_guidance_x0), one Euler step each
 *   -> audio: denormalise (packed), unpack, AutoencoderKLLTX2Audio.decode,
 *      LTX2Vocoder -> waveform [B, channels, samples]
 *   -> video: unpack, decode noise mixed in BEFORE denormalising (unlike
 *      LTX-Video), AutoencoderKLLTX2Video.decode, postprocess
 *   -> one MP4 per video with its AAC track, a contact sheet, save_tensors.
 *
 * As for LTX-Video (render.c), the latents live on the host between steps
 * and a checkpoint is the exact bytes the next step starts from: the
 * video's packed [B, S, C] followed by the audio's packed [B, L, C·M], in
 * one row, so both streams commit in one transaction.
 *
 * On a device mesh (issue 15 item 6, doc/mesh.md) the transformer runs on
 * every rank at once: the data axis splits the step's rows (videos × the
 * passes, job_ltx2_passes), the context axis both streams' tokens
 * (ltx2_transformer_set_context); the host state and everything else are
 * as on one device, so the bits are too.
 *
 * Not here yet (refused by preflight): a text encoder (Gemma 3:
 * prompt_embeds only), image-to-video, noise_scale > 0.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "core/digest.h"
#include "core/fault.h"
#include "core/file.h"
#include "core/json.h"
#include "core/log.h"
#include "core/util.h"
#include "gpu/gpu.h"
#include "media/media.h"
#include "model/diffusers.h"
#include "model/hash.h"
#include "model/safetensors.h"
#include "nn/ltx2_audio_vae.h"
#include "nn/ltx2_connectors.h"
#include "nn/ltx2_transformer.h"
#include "nn/ltx2_vocoder.h"
#include "nn/ltxv_vae.h"
#include "nn/plan.h"
#include "nn/weights.h"
#include "render/render-int.h"
#include "sampler/latents.h"
#include "sampler/rng.h"
#include "sampler/scheduler.h"
#include "store/checkpoints.h"
#include "store/jobs.h"
#include "store/models.h"

/*
 * One rank of the job's mesh (render_mesh): its transformer (the same
 * weights), its rows [row0, row0 + rows) of a step's row list and its
 * tokens of each stream, and their host staging.
 */
struct l2_rank {
	struct ltx2_transformer *m;
	int data;			/* its data coordinate */
	int row0, rows;
	int tok0, toks;			/* video tokens */
	int atok0, atoks;		/* audio tokens */
	float *vin, *ain;		/* [rows, toks, C], [rows, atoks, D] */
	float *vout, *aout;
};

struct l2 {
	const struct render_job_ctx *c;
	const struct job_config *jc;
	struct diffusers_ltx2_model *dm;
	struct ltx2_transformer_config tcfg;
	struct ltxv_vae_config vcfg;
	struct render_mesh mesh;	/* the job's devices */
	struct l2_rank *ranks;		/* one per mesh rank, while denoising */
	/* context > 1: each data coordinate's groups, video and audio */
	struct ltxv_cp_group **cp, **acp;
	struct gpu_ctx *gpu;		/* mesh rank 0's (borrowed) */
	struct st_file *noise;		/* noise: FILE, or NULL */
	struct scheduler_config sched_cfg;
	struct scheduler_schedule sched;
	char model_digest[DIGEST_HEX_SIZE];
	char device_fingerprint[DIGEST_HEX_SIZE];
	int N;				/* num_inference_steps */

	/* geometry */
	int B, T, CL, Cc;		/* batch, text tokens, stacked features,
					 * connector output channels */
	struct latents_shape vs;	/* video latents [B, C, F, H, W] */
	int S, C;			/* packed video [B, S, C] */
	int64_t AC, L, M, D;		/* audio [B, AC, L, M], packed D = AC·M */
	size_t nv, na;			/* floats of each stream's state */
	int cfg, stg, iso;		/* the passes run per step */
	int rows;			/* CFG pass rows: 2B or B */
	int R;				/* a step's rows: B × job_ltx2_passes */

	/* host state and buffers */
	float *video, *audio;		/* [B, S, C], [B, L, D] */
	float *vtext, *atext, *tmask;	/* [rows, T, Cc] x2, [rows, T] */
	/* a step's outputs, [R, ...]: the CFG pass's rows (unconditional
	 * first), then the STG pass's, then the isolation pass's */
	float *vall, *aall;
	float *vout, *aout;		/* [rows, ...] CFG pass outputs (in all) */
	float *vstg, *astg, *viso, *aiso;	/* [B, ...] (in all) */
	float *vg, *ag;			/* guided velocities [B, ...] */
	float *ts;			/* [R] timesteps (= sigma) */
	float *traj;			/* [N, nv + na] with save_tensors */
	struct nn_plan plan;		/* the memory plan (nn_plan_ltx2) */
};

/* Frees the ranks' transformers and staging, and the context groups. */
static void
ranks_free(struct l2 *r)
{
	for (int i = 0; r->ranks != NULL && i < r->mesh.n_ranks; i++) {
		struct l2_rank *k = &r->ranks[i];
		ltx2_transformer_free(k->m);
		free(k->vin);
		free(k->ain);
		free(k->vout);
		free(k->aout);
	}
	free(r->ranks);
	r->ranks = NULL;
	for (int d = 0; r->cp != NULL && d < r->mesh.data; d++) {
		ltxv_cp_group_free(r->cp[d]);
		ltxv_cp_group_free(r->acp[d]);
	}
	free(r->cp);
	free(r->acp);
	r->cp = r->acp = NULL;
}

static void
l2_free(struct l2 *r)
{
	float *bufs[] = { r->video, r->audio, r->vtext, r->atext, r->tmask,
	    r->vall, r->aall, r->vg, r->ag, r->ts, r->traj };
	for (size_t i = 0; i < LQ_ARRAY_LEN(bufs); i++)
		free(bufs[i]);
	ranks_free(r);
	st_file_close(r->noise);
	scheduler_schedule_free(&r->sched);
	render_mesh_close(&r->mesh);
	diffusers_ltx2_free(r->dm);
}

static enum lq_status
phase(struct l2 *r, const char *name, int step, struct lq_error *err)
{
	return render_enter_phase(r->c->st, r->c->job, r->c->opt, name, step,
	    r->N, err);
}

static char *
job_path(const struct l2 *r, const char *p)
{
	return job_resolve_path(r->c->base_dir, p);
}

/* A config.json of a component folder, parsed. */
static enum lq_status
read_config(const char *dir, cJSON **out, struct lq_error *err)
{
	char *p = xasprintf("%s/config.json", dir);
	enum lq_status s = diffusers_load_json(p, out, err);
	free(p);
	return s;
}

/*
 * Opens the model, pins and checks its identity, parses the transformer's
 * and the VAE's configs, and sizes everything from the job.
 */
static enum lq_status
phase_load(struct l2 *r, struct lq_error *err)
{
	const struct render_job_ctx *c = r->c;
	const struct job_config *jc = r->jc;
	enum lq_status s;
	if ((s = phase(r, "load", -1, err)) != LQ_OK)
		return s;
	if ((s = model_ref_open_ltx2(c->ref, &r->dm, err)) != LQ_OK)
		return s;
	struct model_hash_cache cache = {c->st, store_file_hash_lookup,
	    store_file_hash_record};
	if ((s = model_ref_identity_ltx2(r->dm, &cache, r->model_digest,
	    err)) != LQ_OK)
		return s;
	if ((s = render_pin_model(c->st, c->job, r->dm->root, r->model_digest,
	    err)) != LQ_OK)
		return s;
	if ((s = scheduler_config_load(r->dm->scheduler.config_path,
	    &r->sched_cfg, err)) != LQ_OK)
		return s;
	cJSON *j = NULL;
	if ((s = read_config(r->dm->transformer.dir, &j, err)) == LQ_OK)
		s = diffusers_parse_ltx2_transformer(j, r->dm->transformer.config_path,
		    &r->tcfg, err);
	cJSON_Delete(j);
	j = NULL;
	if (s == LQ_OK && (s = read_config(r->dm->vae.dir, &j, err)) == LQ_OK)
		s = diffusers_parse_vae(j, r->dm->vae.config_path, &r->vcfg, err);
	cJSON_Delete(j);
	if (s != LQ_OK)
		return s;

	/* the text: the embeddings file decides the batch and the length */
	if (jc->prompt_embeds == NULL)
		return error_set(err, LQ_FAILED, "LQ-RUN-EMBEDS", "job %lld: "
		    "LTX-2 renders from prompt_embeds (latentq has no Gemma 3 "
		    "text encoder)", (long long)c->job->id);
	char *p = job_path(r, jc->prompt_embeds);
	struct st_file *f = NULL;
	s = st_file_open(p, &f, err);
	free(p);
	if (s != LQ_OK)
		return s;
	const struct st_tensor *e = st_file_find(f, "prompt_embeds");
	if (e == NULL || e->ndim != 3) {
		st_file_close(f);
		return error_set(err, LQ_FAILED, "LQ-RUN-EMBEDS", "%s has no "
		    "prompt_embeds [B, T, C·L]", jc->prompt_embeds);
	}
	r->B = (int)e->shape[0];
	r->T = (int)e->shape[1];
	r->CL = (int)e->shape[2];
	st_file_close(f);
	r->Cc = r->dm->connectors_config.caption_channels;

	/* the video latents: LTX2Pipeline.prepare_latents */
	struct job_latent_shape ls;
	if (job_latent_shape(jc, r->vcfg.spatial_compression_ratio,
	    r->vcfg.temporal_compression_ratio, 1, 1, &ls) != 0)
		return error_set(err, LQ_FAILED, "LQ-RUN-GEOM", "%" PRId64 "x%"
		    PRId64 " with %" PRId64 " frames does not fit the model "
		    "(VAE spatial %d, temporal %d)", jc->height, jc->width,
		    jc->num_frames, r->vcfg.spatial_compression_ratio,
		    r->vcfg.temporal_compression_ratio);
	r->vs = (struct latents_shape){
		.batch = r->B, .channels = r->tcfg.in_channels,
		.frames = ls.frames, .height = ls.height, .width = ls.width,
		.patch_size = 1, .patch_size_t = 1,
	};
	r->S = (int)latents_seq_len(&r->vs);
	r->C = (int)latents_token_dim(&r->vs);
	/* the audio latents: __call__ step 4 and prepare_audio_latents */
	const struct ltx2_audio_vae_config *ac = &r->dm->audio_vae_config;
	r->L = latents_audio_num_frames((int)jc->num_frames, jc->frame_rate,
	    ac->sample_rate, ac->mel_hop_length, 4);
	r->AC = ac->latent_channels;
	r->M = (ac->mel_bins > 0 ? ac->mel_bins : 64) / 4;
	r->D = r->AC * r->M;
	if (r->L < 1 || r->D != r->tcfg.audio_in_channels)
		return error_set(err, LQ_FAILED, "LQ-RUN-GEOM", "the audio "
		    "latents [%d, %" PRId64 ", %" PRId64 ", %" PRId64 "] do not "
		    "fit the transformer's audio_in_channels %d", r->B, r->AC,
		    r->L, r->M, r->tcfg.audio_in_channels);
	r->nv = (size_t)r->B * r->S * r->C;
	r->na = (size_t)r->B * r->L * r->D;

	/* the passes: do_classifier_free_guidance, _spatio_temporal_
	 * guidance, _modality_isolation_guidance */
	struct job_ltx2_passes ps;
	r->R = r->B * job_ltx2_passes(jc, &ps);
	r->cfg = ps.cfg;
	r->stg = ps.stg;
	r->iso = ps.iso;
	r->rows = r->cfg ? 2 * r->B : r->B;
	r->N = (int)jc->num_inference_steps;
	if ((s = scheduler_set_timesteps(&r->sched_cfg, r->N, r->S, &r->sched,
	    err)) != LQ_OK)
		return s;
	if (jc->noise != NULL) {
		char *np = job_path(r, jc->noise);
		s = st_file_open(np, &r->noise, err);
		free(np);
		if (s != LQ_OK)
			return s;
	}
	size_t pv = r->nv / (size_t)r->B, pa = r->na / (size_t)r->B;
	r->video = xcalloc(r->nv, sizeof(float));
	r->audio = xcalloc(r->na, sizeof(float));
	r->vtext = xcalloc((size_t)r->rows * r->T * r->Cc, sizeof(float));
	r->atext = xcalloc((size_t)r->rows * r->T * r->Cc, sizeof(float));
	r->tmask = xcalloc((size_t)r->rows * r->T, sizeof(float));
	r->vall = xcalloc((size_t)r->R * pv, sizeof(float));
	r->aall = xcalloc((size_t)r->R * pa, sizeof(float));
	r->vout = r->vall;
	r->aout = r->aall;
	r->vstg = r->vout + (size_t)r->rows * pv;
	r->astg = r->aout + (size_t)r->rows * pa;
	r->viso = r->vstg + (r->stg ? r->nv : 0);
	r->aiso = r->astg + (r->stg ? r->na : 0);
	r->vg = xcalloc(r->nv, sizeof(float));
	r->ag = xcalloc(r->na, sizeof(float));
	r->ts = xcalloc((size_t)r->R, sizeof(float));
	if (jc->save_tensors != NULL)
		r->traj = xcalloc((size_t)r->N * (r->nv + r->na), sizeof(float));
	return LQ_OK;
}

static enum lq_status
phase_compile(struct l2 *r, struct lq_error *err)
{
	enum lq_status s;
	if ((s = phase(r, "compile", -1, err)) != LQ_OK)
		return s;
	/* --device, or main's LATENTQ_DEVICE default (cmd_globals) */
	if ((s = render_mesh_open(r->c->st, r->c->job,
	    r->c->opt->warm, r->c->opt->device,
	    &r->jc->mesh, &r->mesh, err)) != LQ_OK)
		return s;
	r->gpu = r->mesh.ranks[0].gpu;
	render_device_fingerprint(r->gpu, NULL, r->device_fingerprint);
	return render_mesh_warmup(&r->mesh, render_precision(r->c->jc), err);
}

/*
 * The memory plan for this job on this device (nn_plan_ltx2, what
 * preflight asked), recorded as a "plan" event before anything large is
 * allocated; the phases load each component alone, as it counts them.
 */
static enum lq_status
make_plan(struct l2 *r, struct lq_error *err)
{
	const struct device_caps *caps = gpu_ctx_caps(r->gpu);
	const struct diffusers_component *comp[5] = {&r->dm->transformer,
	    &r->dm->vae, &r->dm->audio_vae, &r->dm->vocoder,
	    &r->dm->connectors};
	/* the loaders' prefixes: the VAEs upload decoder.* only */
	static const char *const prefix[5] = {NULL, "decoder.", "decoder.",
	    NULL, NULL};
	struct nn_weights_layout w[5];
	enum lq_status s = LQ_OK;

	memset(w, 0, sizeof(w));
	for (int i = 0; i < 5 && s == LQ_OK; i++) {
		struct st_set *set = NULL;
		if ((s = st_set_open(comp[i]->dir, &set, err)) == LQ_OK)
			s = nn_weights_plan(set, prefix[i], NULL, caps,
			    &w[i].resident, err);
		st_set_close(set);
	}
	if (s != LQ_OK)
		return s;
	struct nn_plan_ltx2_request rq = {
		.model = r->dm, .transformer = &r->tcfg, .vae = &r->vcfg,
		.w_transformer = &w[0], .w_vae = &w[1], .w_audio_vae = &w[2],
		.w_vocoder = &w[3], .w_connectors = &w[4],
		.batch = r->B, .guidance = r->cfg,
		.use_cross_timestep = r->jc->use_cross_timestep,
		.num_frames = (int)r->jc->num_frames,
		.height = (int)r->jc->height, .width = (int)r->jc->width,
		.frame_rate = r->jc->frame_rate, .max_sequence_length = r->T,
		.caps = caps,
	};
	nn_plan_ltx2(&rq, &r->plan);
	cJSON *j = nn_plan_to_json(&r->plan);
	char *detail = cJSON_PrintUnformatted(j);
	cJSON_Delete(j);
	s = store_add_event(r->c->st, r->c->job->id, "plan", detail, err);
	free(detail);
	return s;
}

/* The measured high-water mark of device memory (gpu_ctx_memory) as the
 * job's "peak_device_bytes" event, beside the plan's. */
static enum lq_status
record_peak(struct l2 *r, struct lq_error *err)
{
	uint64_t peak = 0;
	char detail[160];

	gpu_ctx_memory(r->gpu, NULL, &peak);
	snprintf(detail, sizeof(detail), "{\"peak_device_bytes\":%" PRIu64
	    ",\"planned_peak_device_bytes\":%" PRIu64 "}", peak,
	    r->plan.peak_device_bytes);
	return store_add_event(r->c->st, r->c->job->id, "peak_device_bytes",
	    detail, err);
}

/* One [B, T, ...] tensor of the embeddings file as floats, or NULL. */
static float *
embeds_tensor(const struct st_file *f, const char *name, int64_t want)
{
	const struct st_tensor *t = st_file_find(f, name);
	if (t == NULL || st_tensor_numel(t) != want)
		return NULL;
	return st_tensor_to_f32(t);
}

/*
 * The connectors on cat([negative, positive]) (or the positive alone
 * without CFG): video and audio caption features and the returned mask.
 */
static enum lq_status
phase_encode_text(struct l2 *r, struct lq_error *err)
{
	const struct job_config *jc = r->jc;
	enum lq_status s;
	if ((s = phase(r, "encode-text", -1, err)) != LQ_OK)
		return s;
	char *p = job_path(r, jc->prompt_embeds);
	struct st_file *f = NULL;
	s = st_file_open(p, &f, err);
	free(p);
	if (s != LQ_OK)
		return s;
	int64_t ne = (int64_t)r->B * r->T * r->CL, nm = (int64_t)r->B * r->T;
	float *pe = embeds_tensor(f, "prompt_embeds", ne);
	float *pm = embeds_tensor(f, "prompt_attention_mask", nm);
	float *ng = r->cfg ? embeds_tensor(f, "negative_prompt_embeds", ne) :
	    NULL;
	float *nmk = r->cfg ? embeds_tensor(f, "negative_prompt_attention_mask",
	    nm) : NULL;
	st_file_close(f);
	if (pe == NULL || pm == NULL || (r->cfg && (ng == NULL || nmk == NULL))) {
		free(pe);
		free(pm);
		free(ng);
		free(nmk);
		return error_set(err, LQ_FAILED, "LQ-RUN-EMBEDS", "%s needs "
		    "prompt_embeds [%d, %d, %d] and prompt_attention_mask [%d, "
		    "%d]%s", jc->prompt_embeds, r->B, r->T, r->CL, r->B, r->T,
		    r->cfg ? ", and their negative_ pair for guidance" : "");
	}
	size_t row = (size_t)r->T * r->CL;
	float *hs = xmalloc((size_t)r->rows * row * sizeof(float));
	int64_t *mask = xmalloc((size_t)r->rows * r->T * sizeof(int64_t));
	int64_t *mout = xmalloc((size_t)r->rows * r->T * sizeof(int64_t));
	for (int i = 0; i < r->rows; i++) {
		int neg = r->cfg && i < r->B;
		int b = r->cfg ? i % r->B : i;
		memcpy(hs + (size_t)i * row, (neg ? ng : pe) + (size_t)b * row,
		    row * sizeof(float));
		for (int t = 0; t < r->T; t++)
			mask[(size_t)i * r->T + t] = (int64_t)(neg ? nmk :
			    pm)[(size_t)b * r->T + t];
	}
	free(pe);
	free(pm);
	free(ng);
	free(nmk);
	struct ltx2_connectors *cn = NULL;
	if ((s = ltx2_connectors_load(r->gpu, r->dm->connectors.dir, &cn,
	    err)) == LQ_OK) {
		struct ltx2_connectors_args a = {
			.text_encoder_hidden_states = hs, .attention_mask = mask,
			.B = r->rows, .T = r->T,
		};
		ltx2_connectors_call_init(&a.call);
		struct ltx2_connectors_out o = {r->vtext, r->atext, mout};
		s = ltx2_connectors_forward(cn, &a, &o, NULL, err);
	}
	ltx2_connectors_free(cn);
	for (size_t i = 0; s == LQ_OK && i < (size_t)r->rows * r->T; i++)
		r->tmask[i] = (float)mout[i];
	free(hs);
	free(mask);
	free(mout);
	return s;
}

/* A draw of the job's noise (render_draw). */
static enum lq_status
draw(const struct l2 *r, const char *name, int ndim, const int64_t *shape,
    uint32_t purpose, float *out, struct lq_error *err)
{
	return render_draw(r->noise, r->jc->noise, r->jc->seed, name, purpose,
	    ndim, shape, out, err);
}

/* The latents the loop starts from: a checkpoint, else the draws. */
static enum lq_status
initial_latents(struct l2 *r, int *start, struct lq_error *err)
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
	size_t bytes = (r->nv + r->na) * sizeof(float);
	if (found) {
		if (cp.size != bytes || strcmp(cp.dtype, "F32") != 0 ||
		    cp.step > r->N || cp.step < 1) {
			s = error_set(err, LQ_FAILED, "LQ-RUN-CKPT", "checkpoint of "
			    "step %d has %zu bytes of %s, expected %zu of F32",
			    cp.step, cp.size, cp.dtype, bytes);
			store_checkpoint_clear(&cp);
			return s;
		}
		memcpy(r->video, cp.latent, r->nv * sizeof(float));
		memcpy(r->audio, (const char *)cp.latent + r->nv * sizeof(float),
		    r->na * sizeof(float));
		*start = cp.step;
		store_checkpoint_clear(&cp);
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
	/* randn_tensor draws: the video first, then the audio */
	int64_t vshape[5] = {r->vs.batch, r->vs.channels, r->vs.frames,
	    r->vs.height, r->vs.width};
	int64_t ashape[4] = {r->B, r->AC, r->L, r->M};
	float *v = xmalloc(r->nv * sizeof(float));
	float *a = xmalloc(r->na * sizeof(float));
	s = draw(r, "video_latents_noise", 5, vshape,
	    RNG_PURPOSE_INITIAL_LATENTS, v, err);
	if (s == LQ_OK)
		s = draw(r, "audio_latents_noise", 4, ashape,
		    RNG_PURPOSE_AUDIO_LATENTS, a, err);
	if (s == LQ_OK) {
		latents_pack(&r->vs, v, r->video);
		latents_pack_audio(a, r->B, r->AC, r->L, r->M, r->audio);
	}
	free(v);
	free(a);
	return s;
}

/*
 * One transformer pass over `rows` rows starting at text row `t0`, of
 * `toks` video and `atoks` audio tokens each (a context rank's shard of
 * the grid and of the audio's r->L frames).
 */
static enum lq_status
dit(struct l2 *r, struct ltx2_transformer *m, int rows, int t0, int toks,
    int atoks, const float *vin, const float *ain, float *vout, float *aout,
    int isolate, int stg, struct lq_error *err)
{
	const struct job_config *jc = r->jc;
	size_t tr = (size_t)r->T * r->Cc;
	struct ltx2_transformer_args a = {
		.hidden_states = vin, .audio_hidden_states = ain,
		.encoder_hidden_states = r->vtext + (size_t)t0 * tr,
		.audio_encoder_hidden_states = r->atext + (size_t)t0 * tr,
		.timestep = r->ts, .sigma = r->ts,
		.encoder_attention_mask = r->tmask + (size_t)t0 * r->T,
		.audio_encoder_attention_mask = r->tmask + (size_t)t0 * r->T,
		.B = rows, .N = toks, .L = atoks, .T = r->T, .Ta = r->T,
		.num_frames = (int)r->vs.frames, .height = (int)r->vs.height,
		.width = (int)r->vs.width, .fps = jc->frame_rate,
		.audio_num_frames = (int)r->L,
	};
	ltx2_transformer_call_init(&a.call);
	a.call.use_cross_timestep = jc->use_cross_timestep;
	a.call.isolate_modalities = isolate;
	if (stg) {
		if (jc->n_stg_blocks > LTX2_TRANSFORMER_MAX_STG)
			return error_set(err, LQ_FAILED, "LQ-RUN-CFG", "%zu "
			    "spatio_temporal_guidance_blocks; at most %d",
			    jc->n_stg_blocks, LTX2_TRANSFORMER_MAX_STG);
		a.call.n_stg = (int)jc->n_stg_blocks;
		for (size_t i = 0; i < jc->n_stg_blocks; i++)
			a.call.stg_blocks[i] = (int)jc->stg_blocks[i];
	}
	struct ltx2_transformer_out o = {vout, aout};
	return ltx2_transformer_forward(m, &a, &o, NULL, err);
}

/*
 * Each rank's share of a step's r->R rows (R / data per data coordinate,
 * in the order of r->vall) and of both streams' tokens (S / context and
 * L / context per context coordinate; preflight's LQ-MESH-006 / -004 keep
 * them whole), its transformer on its device, its context group, and host
 * staging.
 */
static enum lq_status
ranks_load(struct l2 *r, struct lq_error *err)
{
	const struct render_mesh *mh = &r->mesh;
	int P = mh->context;
	enum lq_status s;
	if (r->R % mh->data != 0)
		return error_set(err, LQ_FAILED, "LQ-MESH-006", "%d transformer "
		    "rows (%d videos × %d passes) do not split over data %d",
		    r->R, r->B, r->R / r->B, mh->data);
	if (r->S % P != 0 || r->L % P != 0)
		return error_set(err, LQ_FAILED, "LQ-MESH-004", "context %d does "
		    "not divide the video's %d tokens and the audio's %" PRId64,
		    P, r->S, r->L);
	int rpd = r->R / mh->data, tpc = r->S / P, apc = (int)r->L / P;
	if (P > 1) {
		r->cp = xcalloc((size_t)mh->data, sizeof(*r->cp));
		r->acp = xcalloc((size_t)mh->data, sizeof(*r->acp));
		for (int d = 0; d < mh->data; d++)
			if ((s = ltxv_cp_group_create(P, rpd, r->S,
			    r->tcfg.inner_dim, &r->cp[d], err)) != LQ_OK ||
			    (s = ltxv_cp_group_create(P, rpd, r->L,
			    r->tcfg.audio_inner_dim, &r->acp[d], err)) != LQ_OK)
				return s;
	}
	r->ranks = xcalloc((size_t)mh->n_ranks, sizeof(*r->ranks));
	for (int i = 0; i < mh->n_ranks; i++) {
		struct l2_rank *k = &r->ranks[i];
		const struct render_mesh_rank *mr = &mh->ranks[i];
		k->data = mr->data;
		k->row0 = mr->data * rpd;
		k->rows = rpd;
		k->tok0 = mr->context * tpc;
		k->toks = tpc;
		k->atok0 = mr->context * apc;
		k->atoks = apc;
		if ((s = ltx2_transformer_load(mr->gpu, r->dm->transformer.dir,
		    &k->m, err)) != LQ_OK)
			return s;
		ltx2_transformer_set_precision(k->m, render_precision(r->c->jc));
		if (r->cp != NULL && (s = ltx2_transformer_set_context(k->m,
		    r->cp[k->data], r->acp[k->data], mr->context, err)) != LQ_OK)
			return s;
		k->vin = xcalloc((size_t)rpd * tpc * r->C, sizeof(float));
		k->vout = xcalloc((size_t)rpd * tpc * r->C, sizeof(float));
		k->ain = xcalloc((size_t)rpd * apc * r->D, sizeof(float));
		k->aout = xcalloc((size_t)rpd * apc * r->D, sizeof(float));
	}
	return LQ_OK;
}

/*
 * One rank's part of a step: its rows of each pass (the CFG pass's rows
 * [0, rows), the STG pass's, the isolation pass's, as r->vall orders
 * them), each a forward of its tokens of video row (row mod B), into its
 * rows and tokens of r->vall / r->aall.  The ranks of a context group
 * have the same rows, so they make the same calls.
 */
static enum lq_status
rank_step(void *ud, int rank, struct lq_error *err)
{
	struct l2 *r = ud;
	struct l2_rank *k = &r->ranks[rank];
	int t_row = r->cfg ? r->B : 0;	/* the positive text rows */
	/* the passes: first row, rows, text row of the first, flags */
	const struct { int j0, n, t0, isolate, stg; } pass[3] = {
		{ 0, r->rows, 0, 0, 0 },
		{ r->rows, r->stg ? r->B : 0, t_row, 0, 1 },
		{ r->rows + (r->stg ? r->B : 0), r->iso ? r->B : 0, t_row, 1, 0 },
	};
	enum lq_status s = LQ_OK;
	for (int p = 0; p < 3 && s == LQ_OK; p++) {
		int a = pass[p].j0 > k->row0 ? pass[p].j0 : k->row0;
		int b = pass[p].j0 + pass[p].n < k->row0 + k->rows ?
		    pass[p].j0 + pass[p].n : k->row0 + k->rows;
		if (a >= b)
			continue;
		for (int j = a; j < b; j++) {
			int v = j % r->B;	/* its video */
			render_mesh_share(r->video, r->S, k->vin + (size_t)(j - a) *
			    k->toks * r->C, v, 1, k->tok0, k->toks, r->C, 1);
			render_mesh_share(r->audio, r->L, k->ain + (size_t)(j - a) *
			    k->atoks * r->D, v, 1, k->atok0, k->atoks, r->D, 1);
		}
		s = dit(r, k->m, b - a, pass[p].t0 + (a - pass[p].j0), k->toks,
		    k->atoks, k->vin, k->ain, k->vout, k->aout,
		    pass[p].isolate, pass[p].stg, err);
		if (s != LQ_OK)
			break;
		render_mesh_share(r->vall, r->S, k->vout, a, b - a, k->tok0,
		    k->toks, r->C, 0);
		render_mesh_share(r->aall, r->L, k->aout, a, b - a, k->atok0,
		    k->atoks, r->D, 0);
	}
	return s;
}

/* A failed rank's context groups must not wait for it. */
static void
rank_abort(void *ud, int rank)
{
	struct l2 *r = ud;
	if (r->cp != NULL) {
		ltxv_cp_group_abort(r->cp[r->ranks[rank].data]);
		ltxv_cp_group_abort(r->acp[r->ranks[rank].data]);
	}
}

static enum lq_status
phase_denoise(struct l2 *r, struct lq_error *err)
{
	const struct render_job_ctx *c = r->c;
	const struct job_config *jc = r->jc;
	enum lq_status s;
	int start = 0;
	if ((s = phase(r, "denoise", -1, err)) != LQ_OK)
		return s;
	if ((s = initial_latents(r, &start, err)) != LQ_OK)
		return s;
	if ((s = ranks_load(r, err)) != LQ_OK)
		return s;
	struct scheduler_guidance_x0 gv = {jc->guidance_scale, jc->stg_scale,
	    jc->modality_scale, jc->guidance_rescale};
	struct scheduler_guidance_x0 ga = {jc->audio_guidance_scale,
	    jc->audio_stg_scale, jc->audio_modality_scale,
	    jc->audio_guidance_rescale};
	size_t pv = r->nv / (size_t)r->B, pa = r->na / (size_t)r->B;
	int keep = jc->save_tensors != NULL ? 0 : c->opt->keep_checkpoints;
	int64_t cp_shape[2] = {1, (int64_t)(r->nv + r->na)};
	float *blob = xmalloc((r->nv + r->na) * sizeof(float));
	for (int k = start; k < r->N && s == LQ_OK; k++) {
		float t = r->sched.timesteps[k];
		float sg = r->sched.sigmas[k], sn = r->sched.sigmas[k + 1];
		for (int i = 0; i < r->R; i++)
			r->ts[i] = t;
		/* the passes over the mesh (latent_model_input = cat([latents]
		 * * 2) with CFG: each row reads its video's latents) */
		if ((s = render_mesh_run(&r->mesh, rank_step, rank_abort, r,
		    err)) != LQ_OK)
			break;
		scheduler_apply_guidance_x0(r->vg, r->video, (size_t)r->B, pv, sg,
		    r->vout, r->cfg, r->stg ? r->vstg : NULL,
		    r->iso ? r->viso : NULL, &gv);
		scheduler_apply_guidance_x0(r->ag, r->audio, (size_t)r->B, pa, sg,
		    r->aout, r->cfg, r->stg ? r->astg : NULL,
		    r->iso ? r->aiso : NULL, &ga);
		scheduler_step_euler(r->video, r->vg, r->nv, sg, sn);
		scheduler_step_euler(r->audio, r->ag, r->na, sg, sn);
		fault_slow(c->job->name, "denoise", k + 1, c->opt->attempt);
		int64_t bad = latents_find_nonfinite(r->video, r->nv);
		if (bad < 0 && (bad = latents_find_nonfinite(r->audio, r->na)) >= 0)
			bad += (int64_t)r->nv;
		if (fault_nan(c->job->name, k + 1, c->opt->attempt))
			bad = 0;
		if (bad >= 0) {
			error_set(err, LQ_FAILED, "LQ-RUN-NAN", "the latents after "
			    "step %d/%d have a non-finite value at index %" PRId64
			    " (of video then audio)", k + 1, r->N, bad);
			error_set_hint(err, "the last finite checkpoint (step %d) "
			    "is kept; check the model and guidance settings", k);
			s = LQ_FAILED;
			break;
		}
		memcpy(blob, r->video, r->nv * sizeof(float));
		memcpy(blob + r->nv, r->audio, r->na * sizeof(float));
		if (r->traj != NULL)
			memcpy(r->traj + (size_t)k * (r->nv + r->na), blob,
			    (r->nv + r->na) * sizeof(float));
		struct store_checkpoint_new cp = {
			.job_id = c->job->id, .step = k + 1, .sigma = sn,
			.dtype = "F32", .ndim = 2, .shape = cp_shape,
			.latent = blob, .size = (r->nv + r->na) * sizeof(float),
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
	ranks_free(r);	/* the decoders have the devices alone */
	return s;
}

/* Reads a tensor of a component's weights (latents_mean, latents_std). */
static float *
component_tensor(const char *dir, const char *name, int64_t want,
    struct lq_error *err)
{
	struct st_set *set = NULL;
	if (st_set_open(dir, &set, err) != LQ_OK)
		return NULL;
	const struct st_tensor *t = st_set_find(set, name);
	float *v = t != NULL && st_tensor_numel(t) == want ?
	    st_tensor_to_f32(t) : NULL;
	if (v == NULL)
		error_set(err, LQ_FAILED, "LQ-NN-WMISS", "%s has no %s of %"
		    PRId64 " values", dir, name, want);
	st_set_close(set);
	return v;
}

/*
 * The audio: denormalised packed with the audio VAE's buffers, unpacked,
 * decoded to a mel spectrogram, then the vocoder.  *wave is [B, ch,
 * samples] (caller frees) at the vocoder's output_sampling_rate (an
 * LTX2VocoderWithBWE's: after its bandwidth extension).
 */
static enum lq_status
decode_audio(struct l2 *r, float **wave, int64_t wshape[3],
    struct lq_error *err)
{
	enum lq_status s;
	*wave = NULL;
	float *mean = component_tensor(r->dm->audio_vae.dir, "latents_mean",
	    r->D, err);
	float *std = mean ? component_tensor(r->dm->audio_vae.dir,
	    "latents_std", r->D, err) : NULL;
	if (std == NULL) {
		free(mean);
		return LQ_FAILED;
	}
	float *x = xmalloc(r->na * sizeof(float));
	float *z = xmalloc(r->na * sizeof(float));
	memcpy(x, r->audio, r->na * sizeof(float));
	latents_denormalize_audio(x, r->B * r->L, r->D, mean, std);
	latents_unpack_audio(x, r->B, r->AC, r->L, r->M, z);
	free(x);
	free(mean);
	free(std);
	struct ltx2_audio_vae *av = NULL;
	struct ltx2_vocoder *voc = NULL;
	struct gpu_buffer *bz = NULL, *bm = NULL, *bw = NULL;
	struct gpu_tensor tz, tm, tw;
	int64_t zs[4] = {r->B, r->AC, r->L, r->M}, ms[4];
	if ((s = ltx2_audio_vae_load(r->gpu, r->dm->audio_vae.dir, &av, err)) ==
	    LQ_OK) {
		ltx2_audio_vae_output_shape(av, zs, ms);
		if ((s = render_upload(r->gpu, 4, zs, z, &bz, &tz, err)) == LQ_OK &&
		    (s = render_upload(r->gpu, 4, ms, NULL, &bm, &tm, err)) == LQ_OK)
			s = ltx2_audio_vae_decode(av, &tz, &tm, NULL, err);
	}
	ltx2_audio_vae_free(av);
	gpu_buffer_free(bz);
	free(z);
	if (s == LQ_OK &&
	    (s = ltx2_vocoder_load(r->gpu, r->dm->vocoder.dir, &voc, err)) ==
	    LQ_OK) {
		ltx2_vocoder_output_shape(voc, ms, wshape);
		size_t n = (size_t)(wshape[0] * wshape[1] * wshape[2]);
		*wave = xmalloc(n * sizeof(float));
		if ((s = render_upload(r->gpu, 3, wshape, NULL, &bw, &tw, err)) == LQ_OK &&
		    (s = ltx2_vocoder_forward(voc, &tm, &tw, NULL, err)) == LQ_OK)
			s = gpu_tensor_download_f32(r->gpu, &tw, *wave, err);
	}
	ltx2_vocoder_free(voc);
	gpu_buffer_free(bm);
	gpu_buffer_free(bw);
	if (s != LQ_OK) {
		free(*wave);
		*wave = NULL;
	}
	return s;
}

/* The decoder's injected noise, from the noise file or latentq's RNG. */
struct inject {
	const struct l2 *r;
	int draws;
};

static enum lq_status
fill_inject(void *ud, const char *module, int k, int height, int width,
    float *out, struct lq_error *err)
{
	struct inject *in = ud;
	char name[256];
	snprintf(name, sizeof(name), "%s#%d", module, k);
	int64_t shape[2] = {height, width};
	return draw(in->r, name, 2, shape,
	    RNG_PURPOSE_INJECTED_NOISE(in->draws++), out, err);
}

/*
 * The video: unpacked, the decode noise mixed in before denormalising
 * (LTX2Pipeline, unlike LTXPipeline), decoded with the decode timestep,
 * postprocessed to video_np and uint8 [B, F, H, W, 3] (caller frees).
 */
static enum lq_status
decode_video(struct l2 *r, float **np, uint8_t **u8, int64_t os[5],
    struct lq_error *err)
{
	const struct job_config *jc = r->jc;
	enum lq_status s;
	*np = NULL;
	*u8 = NULL;
	size_t n = r->nv;
	float *z = xmalloc(n * sizeof(float));
	latents_unpack(&r->vs, r->video, z);
	struct ltxv_vae *vae = NULL;
	if ((s = ltxv_vae_load(r->gpu, r->dm->vae.dir, &vae, err)) != LQ_OK) {
		free(z);
		return s;
	}
	const struct ltxv_vae_config *vc = ltxv_vae_config(vae);
	float *dts = xcalloc((size_t)r->B, sizeof(float));
	if (vc->timestep_conditioning) {
		int64_t shape[5] = {r->vs.batch, r->vs.channels, r->vs.frames,
		    r->vs.height, r->vs.width};
		float *noise = xmalloc(n * sizeof(float));
		float *scales = xmalloc((size_t)r->B * sizeof(float));
		s = draw(r, "decode_noise", 5, shape, RNG_PURPOSE_DECODE_NOISE,
		    noise, err);
		for (int b = 0; b < r->B; b++) {
			scales[b] = (float)jc->decode_noise_scale;
			dts[b] = (float)jc->decode_timestep;
		}
		if (s == LQ_OK)
			latents_mix_noise(z, noise, (size_t)r->B, n / (size_t)r->B,
			    scales);
		free(scales);
		free(noise);
	}
	if (s == LQ_OK && (ltxv_vae_latents_mean(vae) == NULL ||
	    ltxv_vae_latents_std(vae) == NULL))
		s = error_set(err, LQ_FAILED, "LQ-NN-WMISS", "%s has no "
		    "latents_mean / latents_std", r->dm->vae.dir);
	if (s == LQ_OK)
		latents_denormalize(&r->vs, z, ltxv_vae_latents_mean(vae),
		    ltxv_vae_latents_std(vae), vc->scaling_factor);
	int64_t zs[5] = {r->vs.batch, r->vs.channels, r->vs.frames,
	    r->vs.height, r->vs.width};
	ltxv_vae_output_shape(vae, zs, os);
	struct gpu_buffer *bz = NULL, *bo = NULL;
	struct gpu_tensor tz, to;
	size_t no = (size_t)(os[0] * os[1] * os[2] * os[3] * os[4]);
	float *raw = xmalloc(no * sizeof(float));
	if (s == LQ_OK && (s = render_upload(r->gpu, 5, zs, z, &bz, &tz, err)) ==
	    LQ_OK && (s = render_upload(r->gpu, 5, os, NULL, &bo, &to, err)) == LQ_OK) {
		struct inject in = {r, 0};
		struct ltxv_vae_noise noise = {fill_inject, &in};
		struct ltxv_vae_decode_args a = {
			.z = &tz, .decode_timestep = vc->timestep_conditioning ?
			    dts : NULL, .noise = &noise,
		};
		if ((s = ltxv_vae_decode(vae, &a, &to, NULL, err)) == LQ_OK)
			s = gpu_tensor_download_f32(r->gpu, &to, raw, err);
	}
	gpu_buffer_free(bz);
	gpu_buffer_free(bo);
	ltxv_vae_free(vae);
	free(dts);
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
phase_decode_and_write(struct l2 *r, char **output, struct lq_error *err)
{
	const struct render_job_ctx *c = r->c;
	const struct job_config *jc = r->jc;
	enum lq_status s;
	if ((s = phase(r, "decode", r->N, err)) != LQ_OK)
		return s;
	float *wave = NULL, *np = NULL;
	uint8_t *u8 = NULL;
	int64_t ws[3] = {0}, os[5] = {0};
	if ((s = decode_audio(r, &wave, ws, err)) == LQ_OK)
		s = decode_video(r, &np, &u8, os, err);
	if (s == LQ_OK)
		s = phase(r, "encode-video", r->N, err);
	int F = (int)os[2], H = (int)os[3], W = (int)os[4];
	/* the audio's provenance beside the rest */
	char rate[16], chans[16], samples[24];
	int sample_rate = r->dm->audio_sample_rate;
	snprintf(rate, sizeof(rate), "%d", sample_rate);
	snprintf(chans, sizeof(chans), "%d", (int)ws[1]);
	snprintf(samples, sizeof(samples), "%" PRId64, ws[2]);
	const struct media_tag tags[] = {
		{"latentq_pipeline", "LTX2Pipeline"},
		{"latentq_audio_sample_rate", rate},
		{"latentq_audio_channels", chans},
		{"latentq_audio_samples", samples},
	};
	struct media_audio *au = xcalloc((size_t)r->B, sizeof(*au));
	for (int b = 0; s == LQ_OK && b < r->B; b++)
		au[b] = (struct media_audio){
			.sample_rate = sample_rate,
			.channels = (int)ws[1], .samples = ws[2],
			.pcm = wave + (size_t)b * ws[1] * ws[2],
		};
	struct render_videos rv = {r->B, F, H, W, u8, r->model_digest, tags,
	    LQ_ARRAY_LEN(tags), au};
	if (s == LQ_OK)
		s = render_write_videos(c, &rv, output, err);
	free(au);
	if (s == LQ_OK && jc->save_tensors != NULL) {
		/* named as the goldens name them */
		size_t per = r->nv + r->na;
		float *vt = xmalloc((size_t)r->N * r->nv * sizeof(float));
		float *at = xmalloc((size_t)r->N * r->na * sizeof(float));
		for (int k = 0; k < r->N; k++) {
			memcpy(vt + (size_t)k * r->nv, r->traj + (size_t)k * per,
			    r->nv * sizeof(float));
			memcpy(at + (size_t)k * r->na, r->traj + (size_t)k * per +
			    r->nv, r->na * sizeof(float));
		}
		struct st_writer *w = st_writer_new();
		int64_t vls[4] = {r->N, r->B, r->S, r->C};
		int64_t als[4] = {r->N, r->B, r->L, r->D};
		int64_t vs[5] = {os[0], F, H, W, 3};
		st_writer_add(w, "video_latents_after_step", ST_F32, 4, vls, vt);
		st_writer_add(w, "audio_latents_after_step", ST_F32, 4, als, at);
		st_writer_add(w, "video_np", ST_F32, 5, vs, np);
		st_writer_add(w, "video_uint8", ST_U8, 5, vs, u8);
		st_writer_add(w, "audio_waveform", ST_F32, 3, ws, wave);
		s = render_write_tensors(c, w, err);
		st_writer_free(w);
		free(vt);
		free(at);
	}
	free(wave);
	free(np);
	free(u8);
	return s;
}

enum lq_status
render_ltx2(const struct render_job_ctx *c, struct lq_error *err)
{
	struct l2 r;
	memset(&r, 0, sizeof(r));
	r.c = c;
	r.jc = c->jc;
	r.N = (int)c->jc->num_inference_steps;
	char *output = NULL;
	enum lq_status s = phase_load(&r, err);
	if (s == LQ_OK)
		s = phase_compile(&r, err);
	if (s == LQ_OK)
		s = make_plan(&r, err);
	if (s == LQ_OK)
		s = phase_encode_text(&r, err);
	if (s == LQ_OK)
		s = phase_denoise(&r, err);
	if (s == LQ_OK)
		s = phase_decode_and_write(&r, &output, err);
	if (s == LQ_OK)
		s = record_peak(&r, err);
	if (s == LQ_OK)
		s = store_set_output(c->st, c->job->id, output, err);
	free(output);
	l2_free(&r);
	return s;
}
