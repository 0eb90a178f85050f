/*
 * plan.c — the job's memory plan (see plan.h): the components' own plan
 * functions put together in the order render.c runs them, the choices
 * of VAE tiling and weight streaming, and the smallest change that makes a
 * job fit.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gpu/gpu.h"
#include "nn/ltx2_audio_vae.h"
#include "nn/ltx2_connectors.h"
#include "nn/ltx2_transformer.h"
#include "nn/ltx2_vocoder.h"
#include "nn/ltxv_transformer.h"
#include "nn/ltxv_vae.h"
#include "nn/plan.h"
#include "nn/t5.h"
#include "sampler/latents.h"

uint64_t
nn_plan_bytes_device(const struct nn_plan_bytes *b)
{
	return b->weights + b->activations + b->io;
}

const char *
nn_plan_phase_name(enum nn_plan_phase p)
{
	static const char *const names[NN_PHASE_COUNT] = {
		"encode-text", "denoise", "decode",
	};

	return p >= 0 && p < NN_PHASE_COUNT ? names[p] : "?";
}

/* The device heap a job may use (gpu/caps.h); 0 = no budget. */
static uint64_t
budget_of(const struct device_caps *caps, double margin)
{
	return caps == NULL ? 0 : device_caps_memory_budget(caps, margin);
}

enum nn_weight_streaming
nn_plan_choose_streaming(enum nn_plan_choice c, uint64_t resident_phase_bytes,
    uint64_t budget)
{
	if (c == NN_PLAN_ON || (c == NN_PLAN_AUTO && budget > 0 &&
	    resident_phase_bytes > budget))
		return NN_WEIGHTS_STREAMED;
	return NN_WEIGHTS_RESIDENT;
}

const char *
nn_plan_choice_name(enum nn_plan_choice c)
{
	return c == NN_PLAN_ON ? "on" : c == NN_PLAN_OFF ? "off" : "auto";
}

int
nn_plan_choice_parse(const char *s, enum nn_plan_choice *out)
{
	static const enum nn_plan_choice all[3] = {NN_PLAN_AUTO, NN_PLAN_OFF,
	    NN_PLAN_ON};

	for (int i = 0; s != NULL && i < 3; i++)
		if (strcmp(s, nn_plan_choice_name(all[i])) == 0) {
			*out = all[i];
			return 0;
		}
	return -1;
}

/* One plan with the choices fixed. */
static void
plan_fixed(const struct nn_plan_request *r, int num_frames, int height,
    int width, const struct ltxv_vae_tiling *tiling,
    enum nn_weight_streaming streaming, struct nn_plan *p)
{
	const struct ltxv_vae_config *vc = r->vae;
	const struct ltxv_transformer_config *tc = r->transformer;
	int sr = vc->spatial_compression_ratio, tr = vc->temporal_compression_ratio;
	int F = (num_frames - 1) / (tr > 0 ? tr : 1) + 1;
	int H = height / (sr > 0 ? sr : 1), W = width / (sr > 0 ? sr : 1);
	int B = r->batch > 0 ? r->batch : 1;
	int rows = r->guidance ? 2 * B : B;
	int T = r->max_sequence_length > 0 ? r->max_sequence_length : 1;
	int N = F * H * W;
	/* one device's share of the transformer (render.c mesh_reserve) */
	int dp = r->data > 1 ? r->data : 1, cp = r->context > 1 ? r->context : 1;
	int rows_dev = (rows + dp - 1) / dp, N_dev = (N + cp - 1) / cp;
	uint64_t lat_host;

	memset(p, 0, sizeof(*p));
	p->budget = budget_of(r->caps, r->memory_margin);
	if (r->text_encoder != NULL)
		t5_encoder_plan(r->text_encoder, r->text_set, r->caps,
		    r->guidance ? 2 : 1, T, &p->text_encoder);
	ltxv_transformer_plan(tc, r->w_transformer, r->caps, rows_dev, N_dev, T,
	    streaming, NULL, &p->transformer);
	ltxv_vae_plan(vc, r->w_vae, r->caps, B, F, H, W, tiling, &p->vae);
	p->streaming = streaming;
	p->vae_tiled = tiling != NULL &&
	    (tiling->use_tiling || tiling->use_framewise_decoding);
	if (p->vae_tiled)
		p->tiling = *tiling;
	else
		ltxv_vae_tiling_init(&p->tiling);
	{
		int64_t z[5] = { B, vc->latent_channels, F, H, W }, call[5];

		ltxv_vae_tiling_call(vc, z, p->vae_tiled ? tiling : NULL, call);
		for (int i = 0; i < 3; i++)
			p->vae_tile[i] = (int)call[2 + i];
	}
	p->phase_device[NN_PHASE_ENCODE_TEXT] =
	    nn_plan_bytes_device(&p->text_encoder);
	p->phase_device[NN_PHASE_DENOISE] = nn_plan_bytes_device(&p->transformer);
	p->phase_device[NN_PHASE_DECODE] = nn_plan_bytes_device(&p->vae);
	p->peak_phase = NN_PHASE_ENCODE_TEXT;
	for (int i = 0; i < NN_PHASE_COUNT; i++)
		if (p->phase_device[i] > p->phase_device[p->peak_phase])
			p->peak_phase = (enum nn_plan_phase)i;
	p->peak_device_bytes = p->phase_device[p->peak_phase];
	/* render.c's own host arrays: latents and guided latents, the
	 * transformer's input and velocity rows, text rows and mask */
	lat_host = ((uint64_t)2 * B * N * tc->in_channels +
	    (uint64_t)2 * rows * N * tc->in_channels +
	    (uint64_t)rows * T * tc->caption_channels + (uint64_t)rows * T) * 4;
	p->host_bytes = p->text_encoder.host;
	if (p->transformer.host > p->host_bytes)
		p->host_bytes = p->transformer.host;
	if (p->vae.host > p->host_bytes)
		p->host_bytes = p->vae.host;
	/* a mesh: every device's transformer host scratch, and each context
	 * group's whole q, k, v, o (ltxv_cp_group) */
	if (dp * cp > 1)
		lat_host += (uint64_t)(dp * cp - 1) * p->transformer.host;
	if (cp > 1)
		lat_host += (uint64_t)dp * 4 * rows_dev * N * tc->inner_dim * 4;
	p->host_bytes += lat_host;
	p->fits = p->budget == 0 || p->peak_device_bytes <= p->budget;
}

static int
phase_fits(const struct nn_plan *p, enum nn_plan_phase ph)
{
	return p->budget == 0 || p->phase_device[ph] <= p->budget;
}

/* The decode phase fits: its bytes within the budget and its largest
 * buffer within what the device holds in one (ops split larger
 * bindings into dispatches, gpu/ops.h). */
static int
decode_fits(const struct nn_plan_request *r, const struct nn_plan *p)
{
	return phase_fits(p, NN_PHASE_DECODE) && (r->caps == NULL ||
	    p->vae.largest <= device_caps_max_tensor(r->caps));
}

/*
 * The plan with the job's choices: AUTO ones resolved to the cheapest that
 * fits (or the most frugal when nothing fits).
 */
static void
plan_choose(const struct nn_plan_request *r, enum nn_plan_choice tiling_c,
    enum nn_plan_choice stream_c, int num_frames, int height, int width,
    struct nn_plan *p)
{
	struct ltxv_vae_tiling t;
	enum nn_weight_streaming s;
	struct nn_plan dec;

	/* weights: the denoise phase alone decides */
	plan_fixed(r, num_frames, height, width, NULL, NN_WEIGHTS_RESIDENT, p);
	s = nn_plan_choose_streaming(stream_c,
	    p->phase_device[NN_PHASE_DENOISE], p->budget);
	if (s != NN_WEIGHTS_RESIDENT)
		plan_fixed(r, num_frames, height, width, NULL, s, p);
	/* tiling: the decode phase alone decides.  ON: the job's tiles;
	 * OFF: untiled; AUTO: untiled if that fits, else upstream's default
	 * tiles with both switches on, then each smaller step of
	 * ltxv_vae_tiling_shrink (the ladder a decode OOM retry climbs). */
	if (tiling_c == NN_PLAN_ON) {
		plan_fixed(r, num_frames, height, width, &r->tiling, s, p);
		return;
	}
	ltxv_vae_tiling_init(&t);
	plan_fixed(r, num_frames, height, width, &t, s, &dec);
	if (tiling_c == NN_PLAN_AUTO && !decode_fits(r, &dec)) {
		t.use_tiling = t.use_framewise_decoding = 1;
		for (;;) {
			plan_fixed(r, num_frames, height, width, &t, s, &dec);
			if (decode_fits(r, &dec) ||
			    !ltxv_vae_tiling_shrink(r->vae, &t))
				break;
		}
	}
	*p = dec;
}

void
nn_plan_render(const struct nn_plan_request *r, struct nn_plan *out)
{
	struct nn_plan alt;
	int tr, sr;

	memset(out, 0, sizeof(*out));
	if (r->transformer == NULL || r->vae == NULL || r->num_frames < 1 ||
	    r->height < 1 || r->width < 1)
		return;
	tr = r->vae->temporal_compression_ratio > 0 ?
	    r->vae->temporal_compression_ratio : 1;
	sr = r->vae->spatial_compression_ratio > 0 ?
	    r->vae->spatial_compression_ratio : 1;
	plan_choose(r, r->vae_tiling, r->weight_streaming, r->num_frames,
	    r->height, r->width, out);
	if (out->fits)
		return;

	/* The smallest change, in the order of plan.h. */
	if (r->vae_tiling != NN_PLAN_AUTO && !decode_fits(r, out)) {
		plan_choose(r, NN_PLAN_AUTO, r->weight_streaming, r->num_frames,
		    r->height, r->width, &alt);
		if (decode_fits(r, &alt) && (alt.fits ||
		    !phase_fits(out, NN_PHASE_DENOISE) == !phase_fits(&alt, NN_PHASE_DENOISE))) {
			snprintf(out->change_key, sizeof(out->change_key),
			    "vae_tiling");
			snprintf(out->change, sizeof(out->change),
			    "vae_tiling: auto (tiles of %dx%d pixels%s)",
			    alt.tiling.tile_sample_min_width,
			    alt.tiling.tile_sample_min_height,
			    alt.tiling.use_framewise_decoding ?
			    ", frame ranges" : "");
			if (alt.fits)
				return;
		}
	}
	if (r->weight_streaming == NN_PLAN_OFF &&
	    !phase_fits(out, NN_PHASE_DENOISE)) {
		plan_choose(r, r->vae_tiling, NN_PLAN_AUTO, r->num_frames,
		    r->height, r->width, &alt);
		if (phase_fits(&alt, NN_PHASE_DENOISE) && out->change[0] == '\0') {
			snprintf(out->change_key, sizeof(out->change_key),
			    "weight_streaming");
			snprintf(out->change, sizeof(out->change),
			    "weight_streaming: auto (two of %d blocks resident)",
			    r->w_transformer ? r->w_transformer->streamed.groups : 0);
			if (alt.fits)
				return;
		}
	}
	if (out->change[0] != '\0')
		return;
	if (r->text_encoder != NULL && !phase_fits(out, NN_PHASE_ENCODE_TEXT)) {
		/* no size change helps the text encoder: precomputed
		 * embeddings, then whatever the rest of the job needs */
		struct nn_plan_request rest = *r;
		double gib = (double)out->phase_device[NN_PHASE_ENCODE_TEXT] /
		    (double)(1ull << 30);

		rest.text_encoder = NULL;
		rest.text_set = NULL;
		nn_plan_render(&rest, &alt);
		if (!alt.fits && alt.change[0] == '\0')
			return;	/* nothing the job can change makes it fit */
		snprintf(out->change_key, sizeof(out->change_key),
		    "prompt_embeds");
		if (alt.fits)
			snprintf(out->change, sizeof(out->change),
			    "prompt_embeds: a file of precomputed embeddings (the "
			    "text encoder alone needs %.2f GiB)", gib);
		else
			snprintf(out->change, sizeof(out->change),
			    "prompt_embeds: a file of precomputed embeddings (the "
			    "text encoder alone needs %.2f GiB), and then %.200s",
			    gib, alt.change);
		return;
	}
	for (int nf = r->num_frames - tr; nf >= 1; nf -= tr) {
		plan_choose(r, r->vae_tiling, r->weight_streaming, nf,
		    r->height, r->width, &alt);
		if (alt.fits) {
			snprintf(out->change_key, sizeof(out->change_key),
			    "num_frames");
			snprintf(out->change, sizeof(out->change),
			    "num_frames: %d", nf);
			return;
		}
	}
	/* the smallest clip is still too large: shrink both sides */
	for (int k = 1; k < 64; k++) {
		double f = 1.0 - 0.05 * k;
		int h = (int)(r->height * f) / sr * sr;
		int w = (int)(r->width * f) / sr * sr;

		if (h < sr || w < sr)
			break;
		plan_choose(r, r->vae_tiling, r->weight_streaming, 1, h, w,
		    &alt);
		if (alt.fits) {
			snprintf(out->change_key, sizeof(out->change_key),
			    "height");
			snprintf(out->change, sizeof(out->change),
			    "height: %d, width: %d, num_frames: 1", h, w);
			return;
		}
	}
}

/* ---- LTX-2 ---- */

static void
ltx2_fixed(const struct nn_plan_ltx2_request *r, int num_frames, int height,
    int width, struct nn_plan *p)
{
	const struct ltxv_vae_config *vc = r->vae;
	const struct ltx2_transformer_config *tc = r->transformer;
	const struct diffusers_ltx2_model *m = r->model;
	const struct ltx2_audio_vae_config *ac = &m->audio_vae_config;
	int sr = vc->spatial_compression_ratio, tr = vc->temporal_compression_ratio;
	int F = (num_frames - 1) / (tr > 0 ? tr : 1) + 1;
	int H = height / (sr > 0 ? sr : 1), W = width / (sr > 0 ? sr : 1);
	int B = r->batch > 0 ? r->batch : 1;
	int rows = r->guidance ? 2 * B : B;
	int T = r->max_sequence_length > 0 ? r->max_sequence_length : 1;
	int64_t L = latents_audio_num_frames(num_frames, r->frame_rate,
	    ac->sample_rate, ac->mel_hop_length, 4);
	int64_t M = (ac->mel_bins > 0 ? ac->mel_bins : 64) / 4;
	int64_t z[4] = {B, ac->latent_channels, L > 0 ? L : 1, M}, mel[4];
	uint64_t nv = (uint64_t)F * H * W * tc->in_channels;
	uint64_t na = (uint64_t)z[2] * tc->audio_in_channels;

	memset(p, 0, sizeof(*p));
	p->ltx2 = 1;
	p->budget = budget_of(r->caps, r->memory_margin);
	ltx2_connectors_plan(&m->connectors_config, r->w_connectors, rows, T,
	    &p->connectors);
	{
		struct ltx2_transformer_shape ts = {
			.B = rows, .N = F * H * W, .L = (int)z[2], .T = T, .Ta = T,
			.use_cross_timestep = r->use_cross_timestep,
		};
		ltx2_transformer_plan(tc, r->w_transformer, r->caps, &ts,
		    &p->transformer);
	}
	ltx2_audio_vae_plan(ac, r->w_audio_vae, z, &p->audio_vae);
	ltx2_audio_vae_mel_shape(ac, z, mel);
	ltx2_vocoder_plan(&m->vocoder_config, m->vocoder_bwe ?
	    &m->vocoder_bwe_config : NULL, r->w_vocoder, r->caps, mel,
	    &p->vocoder);
	ltxv_vae_plan(vc, r->w_vae, r->caps, B, F, H, W, NULL, &p->vae);
	ltxv_vae_tiling_init(&p->tiling);
	p->vae_tile[0] = F;
	p->vae_tile[1] = H;
	p->vae_tile[2] = W;
	p->phase_device[NN_PHASE_ENCODE_TEXT] =
	    nn_plan_bytes_device(&p->connectors);
	p->phase_device[NN_PHASE_DENOISE] = nn_plan_bytes_device(&p->transformer);
	{
		/* the mel stays allocated from the audio VAE to the vocoder
		 * (both count it in their io); each decoder alone */
		uint64_t d[3] = {nn_plan_bytes_device(&p->audio_vae),
		    nn_plan_bytes_device(&p->vocoder), nn_plan_bytes_device(&p->vae)};
		for (int i = 0; i < 3; i++)
			if (d[i] > p->phase_device[NN_PHASE_DECODE])
				p->phase_device[NN_PHASE_DECODE] = d[i];
	}
	p->peak_phase = NN_PHASE_ENCODE_TEXT;
	for (int i = 0; i < NN_PHASE_COUNT; i++)
		if (p->phase_device[i] > p->phase_device[p->peak_phase])
			p->peak_phase = (enum nn_plan_phase)i;
	p->peak_device_bytes = p->phase_device[p->peak_phase];
	/* render/ltx2.c's host arrays: both streams' state, the CFG pass's
	 * inputs and outputs (rows), the STG / isolation / guided ones (B),
	 * both streams' text rows and the mask */
	p->host_bytes = p->connectors.host;
	if (p->transformer.host > p->host_bytes)
		p->host_bytes = p->transformer.host;
	if (p->vae.host > p->host_bytes)
		p->host_bytes = p->vae.host;
	if (p->vocoder.host > p->host_bytes)
		p->host_bytes = p->vocoder.host;
	p->host_bytes += 4 * ((uint64_t)B * (nv + na) * 4 +
	    (uint64_t)rows * (nv + na) * 2 + (uint64_t)rows * T *
	    (2 * (uint64_t)m->connectors_config.caption_channels + 1) + rows);
	p->fits = p->budget == 0 || p->peak_device_bytes <= p->budget;
}

void
nn_plan_ltx2(const struct nn_plan_ltx2_request *r, struct nn_plan *out)
{
	struct nn_plan alt;
	int tr, sr;

	memset(out, 0, sizeof(*out));
	if (r->model == NULL || r->transformer == NULL || r->vae == NULL ||
	    r->num_frames < 1 || r->height < 1 || r->width < 1 ||
	    r->frame_rate <= 0)
		return;
	tr = r->vae->temporal_compression_ratio > 0 ?
	    r->vae->temporal_compression_ratio : 1;
	sr = r->vae->spatial_compression_ratio > 0 ?
	    r->vae->spatial_compression_ratio : 1;
	ltx2_fixed(r, r->num_frames, r->height, r->width, out);
	if (out->fits)
		return;
	for (int nf = r->num_frames - tr; nf >= 1; nf -= tr) {
		ltx2_fixed(r, nf, r->height, r->width, &alt);
		if (alt.fits) {
			snprintf(out->change_key, sizeof(out->change_key),
			    "num_frames");
			snprintf(out->change, sizeof(out->change),
			    "num_frames: %d", nf);
			return;
		}
	}
	for (int k = 1; k < 64; k++) {
		double f = 1.0 - 0.05 * k;
		int h = (int)(r->height * f) / sr * sr;
		int w = (int)(r->width * f) / sr * sr;

		if (h < sr || w < sr)
			break;
		ltx2_fixed(r, 1 + tr, h, w, &alt);
		if (alt.fits) {
			snprintf(out->change_key, sizeof(out->change_key),
			    "height");
			snprintf(out->change, sizeof(out->change),
			    "height: %d, width: %d, num_frames: %d", h, w, 1 + tr);
			return;
		}
	}
}

static cJSON *
bytes_json(const struct nn_plan_bytes *b)
{
	cJSON *j = cJSON_CreateObject();

	cJSON_AddNumberToObject(j, "device_bytes", (double)nn_plan_bytes_device(b));
	cJSON_AddNumberToObject(j, "weights", (double)b->weights);
	cJSON_AddNumberToObject(j, "activations", (double)b->activations);
	cJSON_AddNumberToObject(j, "io", (double)b->io);
	cJSON_AddNumberToObject(j, "host_bytes", (double)b->host);
	cJSON_AddNumberToObject(j, "largest_binding", (double)b->largest);
	cJSON_AddStringToObject(j, "largest_what", b->largest_what);
	return j;
}

cJSON *
nn_plan_to_json(const struct nn_plan *p)
{
	cJSON *j = cJSON_CreateObject(), *ph, *c;

	cJSON_AddNumberToObject(j, "peak_device_bytes", (double)p->peak_device_bytes);
	cJSON_AddStringToObject(j, "peak_phase", nn_plan_phase_name(p->peak_phase));
	cJSON_AddNumberToObject(j, "host_bytes", (double)p->host_bytes);
	cJSON_AddNumberToObject(j, "budget_bytes", (double)p->budget);
	cJSON_AddBoolToObject(j, "fits", p->fits);
	if (p->vae_tiled) {
		cJSON *t = cJSON_AddObjectToObject(j, "vae_tiling");

		cJSON_AddBoolToObject(t, "use_tiling", p->tiling.use_tiling);
		cJSON_AddBoolToObject(t, "use_framewise_decoding",
		    p->tiling.use_framewise_decoding);
		cJSON_AddNumberToObject(t, "tile_sample_min_height",
		    p->tiling.tile_sample_min_height);
		cJSON_AddNumberToObject(t, "tile_sample_min_width",
		    p->tiling.tile_sample_min_width);
		cJSON_AddNumberToObject(t, "tile_sample_min_num_frames",
		    p->tiling.tile_sample_min_num_frames);
		cJSON_AddNumberToObject(t, "tile_sample_stride_height",
		    p->tiling.tile_sample_stride_height);
		cJSON_AddNumberToObject(t, "tile_sample_stride_width",
		    p->tiling.tile_sample_stride_width);
		cJSON_AddNumberToObject(t, "tile_sample_stride_num_frames",
		    p->tiling.tile_sample_stride_num_frames);
		cJSON *lt = cJSON_AddArrayToObject(t, "latent_tile");
		for (int i = 0; i < 3; i++)
			cJSON_AddItemToArray(lt, cJSON_CreateNumber(p->vae_tile[i]));
	} else {
		cJSON_AddBoolToObject(j, "vae_tiling", 0);
	}
	cJSON_AddStringToObject(j, "weight_streaming",
	    p->streaming == NN_WEIGHTS_STREAMED ? "streamed" : "resident");
	ph = cJSON_AddObjectToObject(j, "phases");
	for (int i = 0; i < NN_PHASE_COUNT; i++)
		cJSON_AddNumberToObject(ph, nn_plan_phase_name((enum nn_plan_phase)i),
		    (double)p->phase_device[i]);
	c = cJSON_AddObjectToObject(j, "components");
	if (p->ltx2) {
		cJSON_AddItemToObject(c, "connectors", bytes_json(&p->connectors));
		cJSON_AddItemToObject(c, "transformer", bytes_json(&p->transformer));
		cJSON_AddItemToObject(c, "audio_vae", bytes_json(&p->audio_vae));
		cJSON_AddItemToObject(c, "vocoder", bytes_json(&p->vocoder));
		cJSON_AddItemToObject(c, "vae", bytes_json(&p->vae));
	} else {
		cJSON_AddItemToObject(c, "text_encoder",
		    bytes_json(&p->text_encoder));
		cJSON_AddItemToObject(c, "transformer", bytes_json(&p->transformer));
		cJSON_AddItemToObject(c, "vae", bytes_json(&p->vae));
	}
	if (!p->fits) {
		cJSON_AddStringToObject(j, "change_key", p->change_key);
		cJSON_AddStringToObject(j, "change", p->change);
	}
	return j;
}
