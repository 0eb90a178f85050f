/*
 * ltxv_vae.c — AutoencoderKLLTXVideo's decoder on Vulkan (diffusers
 * models/autoencoders/autoencoder_kl_ltx.py: LTXVideoDecoder3d,
 * LTXVideoMidBlock3d, LTXVideoUpBlock3d, LTXVideoResnetBlock3d,
 * LTXVideoUpsampler3d, LTXVideoCausalConv3d).
 *
 * Activations live in five equal "slots" carved from the pool once per
 * decode: two ping-pong slots hold a stage's input and output, three hold
 * temporaries; every tensor is a view of a slot with the shape of the
 * moment.  The slot size is the largest activation of the whole decode, so
 * the pool is sized once per latent shape and nothing is allocated while
 * decoding.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "gpu/ops.h"
#include "nn/ltxv_embed.h"
#include "nn/ltxv_vae.h"
#include "nn/ltxv_vae_int.h"
#include "nn/plan.h"
#include "nn/weights.h"

#define TPROJ_DIM 256	/* PixArtAlphaCombinedTimestepSizeEmbeddings' Timesteps(256) */

struct vae_temb {		/* PixArtAlphaCombinedTimestepSizeEmbeddings */
	struct gpu_tensor l1_w, l1_b, l2_w, l2_b;
	int dim;
};

struct vae_block {
	char path[64];
	int cin, cout;
	int has_te;
	struct vae_temb te;
	int has_conv_in;
	struct vae_resnet conv_in;
	int up, residual, factor, up_in, up_out;
	struct gpu_tensor up_w, up_b;
	int nres;
	struct vae_resnet *res;
};

struct ltxv_vae {
	struct gpu_ctx *ctx;
	struct ltxv_vae_config cfg;
	struct nn_weights *w;
	struct gpu_cmd *cmd;
	struct gpu_tensor conv_in_w, conv_in_b, conv_out_w, conv_out_b;
	struct vae_block mid;
	struct vae_block up[DIFFUSERS_MAX_BLOCKS];
	int nup;
	int tc;
	struct vae_temb te;
	struct gpu_tensor sst;			/* decoder.scale_shift_table [2, C] */
	float timestep_scale_multiplier;
	float *latents_mean, *latents_std;
	int cmax;				/* widest block */
	/* reserved */
	struct gpu_pool *pool;
	int rB, rF, rH, rW;
	float *h_noise;				/* host scratch for one field */
};

#define SHAPE(...) ((const int64_t[]){ __VA_ARGS__ })

/* Reads `dir`/config.json with model/diffusers.h's parser (upstream
 * defaults, class and value checks). */
static enum lq_status
parse_config(const char *dir, struct ltxv_vae_config *c, struct lq_error *err)
{
	char *path = xasprintf("%s/config.json", dir);
	cJSON *root = NULL;
	enum lq_status st;

	st = diffusers_load_json(path, &root, err);
	if (st == LQ_OK)
		st = diffusers_parse_vae(root, path, c, err);
	cJSON_Delete(root);
	free(path);
	return st;
}

/* ---- weights ---- */

static enum lq_status
wgetw(struct nn_weights *w, struct gpu_tensor *out, int ndim,
    const int64_t *shape, struct lq_error *err, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

static enum lq_status
wgetw(struct nn_weights *w, struct gpu_tensor *out, int ndim,
    const int64_t *shape, struct lq_error *err, const char *fmt, ...)
{
	char name[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(name, sizeof(name), fmt, ap);
	va_end(ap);
	return nn_weights_get(w, name, ndim, shape, out, err);
}

#define wget(v, ...) wgetw((v)->w, __VA_ARGS__)

static enum lq_status
load_temb(struct ltxv_vae *v, struct vae_temb *t, const char *path, int dim,
    struct lq_error *err)
{
	enum lq_status st;

	t->dim = dim;
	if ((st = wget(v, &t->l1_w, 2, SHAPE(dim, TPROJ_DIM), err,
	    "%s.timestep_embedder.linear_1.weight", path)) ||
	    (st = wget(v, &t->l1_b, 1, SHAPE(dim), err,
	    "%s.timestep_embedder.linear_1.bias", path)) ||
	    (st = wget(v, &t->l2_w, 2, SHAPE(dim, dim), err,
	    "%s.timestep_embedder.linear_2.weight", path)) ||
	    (st = wget(v, &t->l2_b, 1, SHAPE(dim), err,
	    "%s.timestep_embedder.linear_2.bias", path)))
		return st;
	return LQ_OK;
}

enum lq_status
ltxv_vae_resnet_load(struct nn_weights *v, struct vae_resnet *r,
    const char *path, int cin, int cout, int inject, int tc, int ltx2,
    struct lq_error *err)
{
	const char *sc = ltx2 ? "conv_shortcut" : "conv_shortcut.conv";

	enum lq_status st;

	snprintf(r->path, sizeof(r->path), "%s", path);
	r->cin = cin;
	r->cout = cout;
	r->inject = inject;
	r->tc = tc;
	if ((st = wgetw(v, &r->conv1_w, 5, SHAPE(cout, cin, 3, 3, 3), err,
	    "%s.conv1.conv.weight", path)) ||
	    (st = wgetw(v, &r->conv1_b, 1, SHAPE(cout), err, "%s.conv1.conv.bias", path)) ||
	    (st = wgetw(v, &r->conv2_w, 5, SHAPE(cout, cout, 3, 3, 3), err,
	    "%s.conv2.conv.weight", path)) ||
	    (st = wgetw(v, &r->conv2_b, 1, SHAPE(cout), err, "%s.conv2.conv.bias", path)))
		return st;
	if (cin != cout) {
		if ((st = wgetw(v, &r->norm3_w, 1, SHAPE(cin), err, "%s.norm3.weight", path)) ||
		    (st = wgetw(v, &r->norm3_b, 1, SHAPE(cin), err, "%s.norm3.bias", path)) ||
		    (st = wgetw(v, &r->short_w, 5, SHAPE(cout, cin, 1, 1, 1), err,
		    "%s.%s.weight", path, sc)) ||
		    (st = wgetw(v, &r->short_b, 1, SHAPE(cout), err,
		    "%s.%s.bias", path, sc)))
			return st;
	}
	if (inject) {
		if ((st = wgetw(v, &r->pcs1, 3, SHAPE(cin, 1, 1), err,
		    "%s.per_channel_scale1", path)) ||
		    (st = wgetw(v, &r->pcs2, 3, SHAPE(cin, 1, 1), err,
		    "%s.per_channel_scale2", path)))
			return st;
		r->pcs1 = gpu_tensor_reshape(&r->pcs1, 1, SHAPE(cin));
		r->pcs2 = gpu_tensor_reshape(&r->pcs2, 1, SHAPE(cin));
	}
	if (tc && (st = wgetw(v, &r->sst, 2, SHAPE(4, cin), err,
	    "%s.scale_shift_table", path)))
		return st;
	return LQ_OK;
}

static enum lq_status
load_weights(struct ltxv_vae *v, struct lq_error *err)
{
	const struct ltxv_vae_config *c = &v->cfg;
	int C0 = c->dec_conv_in_out, cur;
	char path[96];
	enum lq_status st;

	v->tc = c->timestep_conditioning;
	if ((st = wget(v, &v->conv_in_w, 5, SHAPE(C0, c->latent_channels, 3, 3, 3),
	    err, "decoder.conv_in.conv.weight")) ||
	    (st = wget(v, &v->conv_in_b, 1, SHAPE(C0), err, "decoder.conv_in.conv.bias")))
		return st;
	/* mid block */
	snprintf(v->mid.path, sizeof(v->mid.path), "decoder.mid_block");
	v->mid.cin = v->mid.cout = C0;
	v->mid.nres = c->dec_mid_layers;
	v->mid.res = xcalloc((size_t)(v->mid.nres + 1), sizeof(*v->mid.res));
	if (v->tc) {
		v->mid.has_te = 1;
		if ((st = load_temb(v, &v->mid.te, "decoder.mid_block.time_embedder",
		    4 * C0, err)))
			return st;
	}
	for (int j = 0; j < v->mid.nres; j++) {
		snprintf(path, sizeof(path), "decoder.mid_block.resnets.%d", j);
		if ((st = ltxv_vae_resnet_load(v->w, &v->mid.res[j], path, C0, C0,
		    c->dec_mid_inject_noise, v->tc, c->ltx2, err)))
			return st;
	}
	v->cmax = C0;
	cur = C0;
	v->nup = c->dec_n_up;
	for (int i = 0; i < v->nup; i++) {
		const struct ltxv_vae_up_block *u = &c->dec_up[i];
		struct vae_block *b = &v->up[i];

		snprintf(b->path, sizeof(b->path), "decoder.up_blocks.%d", i);
		b->cin = u->in_channels;
		b->cout = u->out_channels;
		if (v->tc && u->has_conv_in) {
			/* Upstream hands the raw timestep to conv_in's resnet
			 * and crashes; no released decoder does this. */
			error_set(err, LQ_FAILED, "LQ-NN-CONFIG",
			    "%s: a timestep-conditioned up block that changes "
			    "channels (%d -> %d) cannot run upstream", b->path,
			    u->in_channels, u->out_channels);
			error_set_field(err, "decoder_block_out_channels");
			return LQ_FAILED;
		}
		if (u->has_conv_in) {
			if (cur != u->in_channels)
				goto mismatch;
			b->has_conv_in = 1;
			snprintf(path, sizeof(path), "%s.conv_in", b->path);
			if ((st = ltxv_vae_resnet_load(v->w, &b->conv_in, path, u->in_channels,
			    u->out_channels, u->inject_noise, v->tc, c->ltx2, err)))
				return st;
			cur = u->out_channels;
		}
		if (v->tc) {
			b->has_te = 1;
			snprintf(path, sizeof(path), "%s.time_embedder", b->path);
			if ((st = load_temb(v, &b->te, path, 4 * u->in_channels, err)))
				return st;
		}
		if (u->spatio_temporal_scale) {
			if (cur != u->upsampler_in)
				goto mismatch;
			b->up = 1;
			b->residual = u->upsample_residual;
			b->factor = u->upsample_factor;
			b->up_in = u->upsampler_in;
			b->up_out = u->upsampler_out;
			if ((st = wget(v, &b->up_w, 5, SHAPE(b->up_out, b->up_in, 3, 3, 3),
			    err, "%s.upsamplers.0.conv.conv.weight", b->path)) ||
			    (st = wget(v, &b->up_b, 1, SHAPE(b->up_out), err,
			    "%s.upsamplers.0.conv.conv.bias", b->path)))
				return st;
			if (b->up_in > v->cmax)
				v->cmax = b->up_in;
			cur = u->out_channels;
		}
		if (cur != u->out_channels)
			goto mismatch;
		b->nres = u->num_layers;
		b->res = xcalloc((size_t)(b->nres + 1), sizeof(*b->res));
		for (int j = 0; j < b->nres; j++) {
			snprintf(path, sizeof(path), "%s.resnets.%d", b->path, j);
			if ((st = ltxv_vae_resnet_load(v->w, &b->res[j], path, u->out_channels,
			    u->out_channels, u->inject_noise, v->tc, c->ltx2, err)))
				return st;
		}
		if (b->cin > v->cmax)
			v->cmax = b->cin;
		if (b->cout > v->cmax)
			v->cmax = b->cout;
		continue;
mismatch:
		error_set(err, LQ_FAILED, "LQ-NN-CONFIG",
		    "%s receives %d channels but is built for in %d / out %d "
		    "(upsample_factor %d): upstream cannot run this config",
		    b->path, cur, u->in_channels, u->out_channels,
		    u->upsample_factor);
		error_set_field(err, "decoder_block_out_channels");
		return LQ_FAILED;
	}
	if ((st = wget(v, &v->conv_out_w, 5, SHAPE(c->dec_conv_out_out, cur, 3, 3, 3),
	    err, "decoder.conv_out.conv.weight")) ||
	    (st = wget(v, &v->conv_out_b, 1, SHAPE(c->dec_conv_out_out), err,
	    "decoder.conv_out.conv.bias")))
		return st;
	if (v->tc) {
		const struct st_tensor *m;

		if ((st = load_temb(v, &v->te, "decoder.time_embedder", 2 * cur, err)) ||
		    (st = wget(v, &v->sst, 2, SHAPE(2, cur), err, "decoder.scale_shift_table")))
			return st;
		m = nn_weights_host(v->w, "decoder.timestep_scale_multiplier");
		if (m == NULL || st_tensor_numel(m) != 1) {
			error_set(err, LQ_FAILED, "LQ-NN-WMISS",
			    "weight decoder.timestep_scale_multiplier is missing "
			    "or not a scalar in %s", nn_weights_path(v->w));
			return LQ_FAILED;
		} else {
			float *f = st_tensor_to_f32(m);

			v->timestep_scale_multiplier = f[0];
			free(f);
		}
	}
	{
		const struct st_tensor *m = nn_weights_host(v->w, "latents_mean");
		const struct st_tensor *s = nn_weights_host(v->w, "latents_std");

		if (m && st_tensor_numel(m) == c->latent_channels)
			v->latents_mean = st_tensor_to_f32(m);
		if (s && st_tensor_numel(s) == c->latent_channels)
			v->latents_std = st_tensor_to_f32(s);
	}
	return LQ_OK;
}

static void
free_block(struct vae_block *b)
{
	free(b->res);
}

void
ltxv_vae_free(struct ltxv_vae *v)
{
	if (v == NULL)
		return;
	gpu_cmd_free(v->cmd);
	gpu_pool_free(v->pool);
	nn_weights_free(v->w);
	free_block(&v->mid);
	for (int i = 0; i < DIFFUSERS_MAX_BLOCKS; i++)
		free_block(&v->up[i]);
	free(v->latents_mean);
	free(v->latents_std);
	free(v->h_noise);
	free(v);
}

enum lq_status
ltxv_vae_load(struct gpu_ctx *ctx, const char *dir, struct ltxv_vae **out,
    struct lq_error *err)
{
	struct ltxv_vae *v = xcalloc(1, sizeof(*v));
	enum lq_status st;

	*out = NULL;
	v->ctx = ctx;
	st = parse_config(dir, &v->cfg, err);
	if (st == LQ_OK && v->cfg.patch_size_t != 1) {
		st = error_set(err, LQ_FAILED, "LQ-NN-CONFIG",
		    "patch_size_t %d is not supported (upstream's decoder "
		    "unpatchify assumes 1)", v->cfg.patch_size_t);
		error_set_field(err, "patch_size_t");
	}
	if (st == LQ_OK)
		st = nn_weights_load(ctx, dir, "decoder.", &v->w, err);
	if (st == LQ_OK)
		st = load_weights(v, err);
	if (st == LQ_OK)
		st = gpu_cmd_create(ctx, &v->cmd, err);
	if (st != LQ_OK) {
		ltxv_vae_free(v);
		return st;
	}
	*out = v;
	return LQ_OK;
}

const struct ltxv_vae_config *
ltxv_vae_config(const struct ltxv_vae *v)
{
	return &v->cfg;
}

const float *
ltxv_vae_latents_mean(const struct ltxv_vae *v)
{
	return v->latents_mean;
}

const float *
ltxv_vae_latents_std(const struct ltxv_vae *v)
{
	return v->latents_std;
}


/* Largest activation (elements) of a decode of [B, *, F, H, W]: the size
 * of each of the five slots. */
static int64_t
slot_numel(const struct ltxv_vae_config *c, int64_t B, int64_t F, int64_t H,
    int64_t W)
{
	int64_t mx = B * c->latent_channels * F * H * W;

#define SEE(ch) do { int64_t n_ = B * (ch) * F * H * W; if (n_ > mx) mx = n_; } while (0)
	SEE(c->dec_conv_in_out);
	for (int i = 0; i < c->dec_n_up; i++) {
		const struct ltxv_vae_up_block *u = &c->dec_up[i];

		if (u->has_conv_in) {
			SEE(u->out_channels);
			SEE(u->in_channels);
		}
		if (u->spatio_temporal_scale) {
			SEE(u->upsampler_out);	/* conv output before depth-to-space */
			SEE(u->upsampler_in);
			F = 2 * F - 1;
			H *= 2;
			W *= 2;
		}
		SEE(u->out_channels);
	}
	SEE(c->dec_conv_out_out);
#undef SEE
	return mx;
}

/* The widest block (channels), which sizes the time-embedding rows. */
static int
widest(const struct ltxv_vae_config *c)
{
	int cmax = c->dec_conv_in_out;

	for (int i = 0; i < c->dec_n_up; i++) {
		const struct ltxv_vae_up_block *u = &c->dec_up[i];

		if (u->spatio_temporal_scale && u->upsampler_in > cmax)
			cmax = u->upsampler_in;
		if (u->in_channels > cmax)
			cmax = u->in_channels;
		if (u->out_channels > cmax)
			cmax = u->out_channels;
	}
	return cmax;
}

/*
 * The tensors one decode of [B, *, F, H, W] carves from the pool, in
 * decode's order (bytes; caller frees): five slots, the time-embedding
 * features and rows, then every injected noise field in upstream's draw
 * order (draw_noise).  *largest gets the slot's bytes.
 */
static uint64_t *
pool_carves(const struct ltxv_vae_config *c, int64_t B, int64_t F, int64_t H,
    int64_t W, int *n)
{
	int cap = 16 + 2 * (c->dec_mid_layers + 1), k = 0;
	int64_t cmax = widest(c), mx = slot_numel(c, B, F, H, W);
	uint64_t *b;

	for (int i = 0; i < c->dec_n_up; i++)
		cap += 2 * (c->dec_up[i].num_layers + 1);
	b = xmalloc(sizeof(*b) * (size_t)cap);
	for (int i = 0; i < 5; i++)
		b[k++] = (uint64_t)mx * 4;
	b[k++] = (uint64_t)B * TPROJ_DIM * 4;
	for (int i = 0; i < 3; i++)
		b[k++] = (uint64_t)B * 4 * cmax * 4;	/* thid, temb, ss */
	if (c->dec_mid_inject_noise)
		for (int j = 0; j < 2 * c->dec_mid_layers; j++)
			b[k++] = (uint64_t)H * W * 4;
	for (int i = 0; i < c->dec_n_up; i++) {
		const struct ltxv_vae_up_block *u = &c->dec_up[i];

		if (u->has_conv_in && u->inject_noise)
			for (int j = 0; j < 2; j++)
				b[k++] = (uint64_t)H * W * 4;
		if (u->spatio_temporal_scale) {
			H *= 2;
			W *= 2;
		}
		if (u->inject_noise)
			for (int j = 0; j < 2 * u->num_layers; j++)
				b[k++] = (uint64_t)H * W * 4;
	}
	LQ_ASSERT(k <= cap);
	*n = k;
	return b;
}

/* Pool capacity for a decode of latents [B, *, F, H, W]. */
static uint64_t
pool_bytes(const struct ltxv_vae_config *c, const struct device_caps *caps,
    int64_t B, int64_t F, int64_t H, int64_t W)
{
	int n;
	uint64_t *b = pool_carves(c, B, F, H, W, &n);
	uint64_t cap = gpu_pool_plan(caps, b, n);

	free(b);
	return cap;
}

/* ltxv_vae_output_shape from the config alone. */
static void
output_shape(const struct ltxv_vae_config *c, const int64_t z[5],
    int64_t out[5])
{
	int64_t F = z[2], H = z[3], W = z[4];

	for (int i = 0; i < c->dec_n_up; i++)
		if (c->dec_up[i].spatio_temporal_scale) {
			F = 2 * F - 1;
			H *= 2;
			W *= 2;
		}
	out[0] = z[0];
	out[1] = c->out_channels;
	out[2] = F;
	out[3] = H * c->patch_size;
	out[4] = W * c->patch_size;
}

void
ltxv_vae_plan(const struct ltxv_vae_config *c,
    const struct nn_weights_layout *w, const struct device_caps *caps,
    int B, int F, int H, int W, const struct ltxv_vae_tiling *tiling,
    struct nn_plan_bytes *out)
{
	int64_t z[5] = { B, c->latent_channels, F, H, W }, call[5];
	int tile[3];
	int64_t zt[5], o[5], ot[5];
	uint64_t video, tile_out, slot;

	memset(out, 0, sizeof(*out));
	/* the largest decoder call the decode makes (its own tile dispatch) */
	ltxv_vae_tiling_call(c, z, tiling, call);
	tile[0] = (int)call[2];
	tile[1] = (int)call[3];
	tile[2] = (int)call[4];
	if (w != NULL)
		out->weights = w->resident.device;
	out->activations = pool_bytes(c, caps, B, tile[0], tile[1], tile[2]);
	zt[0] = B;
	zt[1] = c->latent_channels;
	zt[2] = tile[0];
	zt[3] = tile[1];
	zt[4] = tile[2];
	output_shape(c, z, o);
	output_shape(c, zt, ot);
	video = (uint64_t)(o[0] * o[1] * o[2] * o[3] * o[4]) * 4;
	tile_out = (uint64_t)(ot[0] * ot[1] * ot[2] * ot[3] * ot[4]) * 4;
	/* the largest decoder call's latent and decoded sample */
	out->io = gpu_buffer_plan_size((uint64_t)(zt[0] * zt[1] * zt[2] *
	    zt[3] * zt[4]) * 4) + gpu_buffer_plan_size(tile_out);
	/* the video read back as f32 (two temporal tiles of it when decoded
	 * frame range by frame range), and one noise field of scratch */
	out->host = (tile[0] < F ? 2 * (uint64_t)(o[0] * o[1] * ot[2] * o[3] *
	    o[4]) * 4 : video) + (uint64_t)o[3] * (uint64_t)o[4] * 4;
	slot = (uint64_t)slot_numel(c, B, tile[0], tile[1], tile[2]) * 4;
	out->largest = slot > tile_out ? slot : tile_out;
	snprintf(out->largest_what, sizeof(out->largest_what), "%s",
	    slot > tile_out ? "the VAE decoder's largest activation" :
	    (tile[0] == F && tile[1] == H && tile[2] == W) ?
	    "the decoded video" : "a decoded tile");
	if (w != NULL && w->resident.largest > out->largest) {
		out->largest = w->resident.largest;
		snprintf(out->largest_what, sizeof(out->largest_what),
		    "weight %s", w->resident.largest_name);
	}
}

void
ltxv_vae_output_shape(const struct ltxv_vae *v, const int64_t z[5],
    int64_t out[5])
{
	output_shape(&v->cfg, z, out);
}

enum lq_status
ltxv_vae_reserve(struct ltxv_vae *v, int B, int F, int H, int W,
    struct lq_error *err)
{
	size_t bytes;
	enum lq_status st;

	if (v->pool && B <= v->rB && F <= v->rF && H <= v->rH && W <= v->rW)
		return LQ_OK;
	if (v->pool) {
		B = B > v->rB ? B : v->rB;
		F = F > v->rF ? F : v->rF;
		H = H > v->rH ? H : v->rH;
		W = W > v->rW ? W : v->rW;
	}
	bytes = (size_t)pool_bytes(&v->cfg, gpu_ctx_caps(v->ctx), B, F, H, W);
	gpu_pool_free(v->pool);
	v->pool = NULL;
	st = gpu_pool_create(v->ctx, bytes, &v->pool, err);
	if (st != LQ_OK)
		return st;
	v->rB = B;
	v->rF = F;
	v->rH = H;
	v->rW = W;
	free(v->h_noise);
	/* the largest field is at the final resolution */
	{
		int64_t fz[5] = { B, 1, F, H, W }, o[5];

		ltxv_vae_output_shape(v, fz, o);
		v->h_noise = xmalloc(sizeof(float) * (size_t)(o[3] * o[4] /
		    (v->cfg.patch_size * v->cfg.patch_size) + 1));
	}
	return LQ_OK;
}

void
ltxv_vae_memory(const struct ltxv_vae *v, size_t *weights,
    size_t *pool_capacity, size_t *pool_peak)
{
	*weights = nn_weights_device_bytes(v->w);
	*pool_capacity = v->pool ? gpu_pool_capacity(v->pool) : 0;
	*pool_peak = v->pool ? gpu_pool_peak(v->pool) : 0;
}

/* ---- decode ---- */

struct gpu_tensor
ltxv_vae_view5(const struct gpu_tensor *slot, int64_t B, int64_t C, int64_t F,
    int64_t H, int64_t W)
{
	int64_t shp[5] = { B, C, F, H, W };

	LQ_ASSERT(B * C * F * H * W <= gpu_tensor_numel(slot));
	return gpu_tensor_make(slot->buf, slot->offset, GPU_F32, 5, shp);
}

/* A contiguous view of any shape at the start of a small scratch tensor. */
static struct gpu_tensor
viewn(const struct gpu_tensor *t, int ndim, const int64_t *shp)
{
	struct gpu_tensor v = gpu_tensor_make(t->buf, t->offset, GPU_F32, ndim, shp);

	LQ_ASSERT(gpu_tensor_numel(&v) <= gpu_tensor_numel(t));
	return v;
}

/* Row k of a [B, K, C] tensor as a [B, C] view (row stride K*C). */
static struct gpu_tensor
row(const struct gpu_tensor *tab, int k)
{
	struct gpu_tensor r = gpu_tensor_slice(tab, 1, k, 1);

	r.ndim = 2;
	r.shape[1] = tab->shape[2];
	r.stride[0] = tab->stride[0];
	r.stride[1] = tab->stride[2];
	for (int i = 2; i < GPU_MAX_DIMS; i++) {
		r.shape[i] = 1;
		r.stride[i] = 0;
	}
	return r;
}

#define view5 ltxv_vae_view5

struct ops_conv3d_params
ltxv_vae_conv3_params(int causal, int stride_t, int stride_h, int stride_w)
{
	struct ops_conv3d_params p;

	memset(&p, 0, sizeof(p));
	p.stride[0] = stride_t;
	p.stride[1] = stride_h;
	p.stride[2] = stride_w;
	if (causal) {
		p.pad_t[0] = 2;
		p.pad_t[1] = 0;
	} else {
		p.pad_t[0] = 1;
		p.pad_t[1] = 1;
	}
	p.pad_h[0] = p.pad_h[1] = p.pad_w[0] = p.pad_w[1] = 1;
	p.t_mode = OPS_PAD_REPLICATE;
	p.s_mode = OPS_PAD_ZERO;
	return p;
}

/* The decoder's k3 convs (LTXVideoCausalConv3d / LTX2VideoCausalConv3d
 * with the run's causal flag and spatial padding mode). */
static struct ops_conv3d_params
conv3_params(const struct vae_run *run)
{
	struct ops_conv3d_params p = ltxv_vae_conv3_params(run->causal, 1, 1, 1);

	p.s_mode = run->s_mode;
	return p;
}

struct ops_conv3d_params
ltxv_vae_conv1_params(void)
{
	struct ops_conv3d_params p;

	memset(&p, 0, sizeof(p));
	p.stride[0] = p.stride[1] = p.stride[2] = 1;
	p.t_mode = OPS_PAD_REPLICATE;
	p.s_mode = OPS_PAD_ZERO;
	return p;
}

#define OP(x) do { if ((st = (x)) != LQ_OK) return st; } while (0)

/* temb = linear_2(SiLU(linear_1(features))) into run->temb as [B, dim]. */
static enum lq_status
time_embed(struct vae_run *run, const struct vae_temb *te,
    struct gpu_tensor *out)
{
	struct gpu_tensor h = viewn(&run->thid, 2, SHAPE(run->B, te->dim));
	enum lq_status st;

	*out = viewn(&run->temb, 2, SHAPE(run->B, te->dim));
	OP(ops_linear(run->cmd, &h, &run->tfeat, &te->l1_w, &te->l1_b, OPS_ACT_SILU));
	return ops_linear(run->cmd, out, &h, &te->l2_w, &te->l2_b, OPS_ACT_NONE);
}

/*
 * LTXVideoResnetBlock3d.forward(x, temb) from slot `xs` into slot `ys`
 * (slots 2, 3, 4 are scratch).  x is [B, cin, F, H, W].
 */
enum lq_status
ltxv_vae_resnet_forward(struct vae_run *run, const struct vae_resnet *r,
    int xs, int ys, int64_t F, int64_t H, int64_t W,
    const struct gpu_tensor *temb)
{
	struct gpu_cmd *cmd = run->cmd;
	struct ops_conv3d_params p3 = conv3_params(run);
	struct ops_conv3d_params p1 = ltxv_vae_conv1_params();
	int64_t B = run->B;
	struct gpu_tensor x = view5(&run->slot[xs], B, r->cin, F, H, W);
	struct gpu_tensor hn = view5(&run->slot[2], B, r->cin, F, H, W);
	struct gpu_tensor c1 = view5(&run->slot[3], B, r->cout, F, H, W);
	struct gpu_tensor y = view5(&run->slot[ys], B, r->cout, F, H, W);
	struct gpu_tensor ss, shift1, scale1, shift2, scale2;
	enum lq_status st;

	if (r->tc) {
		/* temb.unflatten(1, (4, -1)) + scale_shift_table ->
		 * shift_1, scale_1, shift_2, scale_2 */
		ss = viewn(&run->ss, 3, SHAPE(B, 4, r->cin));
		OP(ops_add_table(cmd, &ss, &r->sst, temb));
		shift1 = row(&ss, 0);
		scale1 = row(&ss, 1);
		shift2 = row(&ss, 2);
		scale2 = row(&ss, 3);
	}
	OP(ops_rms_norm_channels(cmd, &hn, &x, NULL, 1e-8f));
	if (r->tc)
		OP(ops_channel_affine(cmd, &hn, &hn, &scale1, &shift1, 1.0f));
	OP(ops_silu(cmd, &hn, &hn));
	OP(ops_conv3d(cmd, &c1, &hn, &r->conv1_w, &r->conv1_b, &p3));
	if (r->inject)
		OP(ops_add_noise_channels(cmd, &c1, &r->noise[0], &r->pcs1));
	OP(ops_rms_norm_channels(cmd, &c1, &c1, NULL, 1e-8f));
	if (r->tc)
		OP(ops_channel_affine(cmd, &c1, &c1, &scale2, &shift2, 1.0f));
	OP(ops_silu(cmd, &c1, &c1));
	OP(ops_conv3d(cmd, &y, &c1, &r->conv2_w, &r->conv2_b, &p3));
	if (r->inject)
		OP(ops_add_noise_channels(cmd, &y, &r->noise[1], &r->pcs2));
	if (r->short_w.buf) {
		/* norm3 = LayerNorm over channels (affine, resnet_norm_eps),
		 * then the 1x1x1 conv_shortcut. */
		struct gpu_tensor s1 = view5(&run->slot[2], B, r->cin, F, H, W);
		struct gpu_tensor s2 = view5(&run->slot[4], B, r->cout, F, H, W);

		OP(ops_layer_norm_channels(cmd, &s1, &x, &r->norm3_w, &r->norm3_b,
		    run->eps));
		OP(ops_conv3d(cmd, &s2, &s1, &r->short_w, &r->short_b, &p1));
		OP(ops_add(cmd, &y, &y, &s2));
	} else {
		OP(ops_add(cmd, &y, &y, &x));
	}
	return LQ_OK;
}

/*
 * LTXVideoUpsampler3d (stride 2, 2, 2): conv to up_out channels,
 * depth-to-space, drop the first frame; residual: depth-to-space of the
 * input tiled 8/factor times along channels, first frame dropped, added.
 */
static enum lq_status
upsample(struct vae_run *run, const struct vae_block *b, int xs, int ys,
    int64_t F, int64_t H, int64_t W)
{
	struct gpu_cmd *cmd = run->cmd;
	struct ops_conv3d_params p3 = conv3_params(run);
	int64_t B = run->B, Co = b->up_out / 8, F2 = 2 * F - 1;
	struct gpu_tensor x = view5(&run->slot[xs], B, b->up_in, F, H, W);
	struct gpu_tensor c = view5(&run->slot[2], B, b->up_out, F, H, W);
	struct gpu_tensor d = view5(&run->slot[3], B, Co, 2 * F, 2 * H, 2 * W);
	struct gpu_tensor y = view5(&run->slot[ys], B, Co, F2, 2 * H, 2 * W);
	struct gpu_tensor ds = gpu_tensor_slice(&d, 2, 1, F2);
	enum lq_status st;

	OP(ops_conv3d(cmd, &c, &x, &b->up_w, &b->up_b, &p3));
	OP(ops_depth_to_space(cmd, &d, &c, 2, 2, 2, 0));
	if (!b->residual)
		return ops_copy(cmd, &y, &ds);
	{
		int64_t c8 = b->up_in / 8, R = Co / c8;
		struct gpu_tensor r = view5(&run->slot[4], B, c8, 2 * F, 2 * H, 2 * W);
		struct gpu_tensor rs = gpu_tensor_slice(&r, 2, 1, F2);
		int64_t shp[6] = { B, R, c8, F2, 2 * H, 2 * W };
		struct gpu_tensor y6 = gpu_tensor_reshape(&y, 6, shp);
		struct gpu_tensor a6 = ds, r6 = rs;

		LQ_ASSERT(R * c8 == Co);
		OP(ops_depth_to_space(cmd, &r, &x, 2, 2, 2, 0));
		/* [B, R*c8, ...] -> [B, R, c8, ...]; the residual repeats
		 * (whole-block copies) along R with stride 0. */
		a6.ndim = r6.ndim = 6;
		for (int k = 5; k >= 3; k--) {
			a6.shape[k] = ds.shape[k - 1];
			a6.stride[k] = ds.stride[k - 1];
			r6.shape[k] = rs.shape[k - 1];
			r6.stride[k] = rs.stride[k - 1];
		}
		a6.shape[0] = r6.shape[0] = B;
		a6.stride[0] = ds.stride[0];
		r6.stride[0] = rs.stride[0];
		a6.shape[1] = r6.shape[1] = R;
		a6.stride[1] = c8 * ds.stride[1];
		r6.stride[1] = 0;
		a6.shape[2] = r6.shape[2] = c8;
		a6.stride[2] = ds.stride[1];
		r6.stride[2] = rs.stride[1];
		return ops_add(cmd, &y6, &a6, &r6);
	}
}

/* Draws (through the callback) and uploads every noise field, in
 * upstream's call order, into pool tensors. */
static enum lq_status
draw_noise_one(struct vae_run *run, struct vae_resnet *r, int64_t H,
    int64_t W, const struct ltxv_vae_noise *src, struct lq_error *err)
{
	struct ltxv_vae *v = run->v;
	enum lq_status st;

	if (!r->inject)
		return LQ_OK;
	if (src == NULL || src->fill == NULL) {
		error_set(err, LQ_FAILED, "LQ-NN-INPUT",
		    "%s injects noise but no noise source was given", r->path);
		error_set_hint(err, "supply the fields %s#0 / %s#1", r->path,
		    r->path);
		return LQ_FAILED;
	}
	for (int k = 0; k < 2; k++) {
		st = gpu_pool_tensor(v->pool, GPU_F32, 2, SHAPE(H, W), &r->noise[k], err);
		if (st != LQ_OK)
			return st;
		st = src->fill(src->ud, r->path, k, (int)H, (int)W, v->h_noise, err);
		if (st != LQ_OK)
			return st;
		st = gpu_tensor_upload(v->ctx, &r->noise[k], v->h_noise, err);
		if (st != LQ_OK)
			return st;
	}
	return LQ_OK;
}

static enum lq_status
draw_noise(struct vae_run *run, int64_t H, int64_t W,
    const struct ltxv_vae_noise *src, struct lq_error *err)
{
	struct ltxv_vae *v = run->v;
	enum lq_status st;

	for (int j = 0; j < v->mid.nres; j++)
		if ((st = draw_noise_one(run, &v->mid.res[j], H, W, src, err)))
			return st;
	for (int i = 0; i < v->nup; i++) {
		struct vae_block *b = &v->up[i];

		if (b->has_conv_in &&
		    (st = draw_noise_one(run, &b->conv_in, H, W, src, err)))
			return st;
		if (b->up) {
			H *= 2;
			W *= 2;
		}
		for (int j = 0; j < b->nres; j++)
			if ((st = draw_noise_one(run, &b->res[j], H, W, src, err)))
				return st;
	}
	return LQ_OK;
}

#undef OP
#define OP(x) do { if ((st = (x)) != LQ_OK) goto out; } while (0)
#define DUMP(name, t) OP(nn_dump_tensor(dump, cmd, (name), &(t), err))

enum lq_status
ltxv_vae_decode(struct ltxv_vae *v, const struct ltxv_vae_decode_args *args,
    const struct gpu_tensor *sample, const struct nn_dump *dump,
    struct lq_error *err)
{
	const struct gpu_tensor *z = args->z;
	struct gpu_cmd *cmd = v->cmd;
	struct vae_run run;
	int64_t B, F, H, W, want[5], mx;
	int s = 0;
	size_t mark = 0;
	char name[96];
	float *tf = NULL;
	enum lq_status st;

	if (z->ndim != 5 || z->shape[1] != v->cfg.latent_channels) {
		char buf[96];

		gpu_tensor_describe(z, buf, sizeof(buf));
		return error_set(err, LQ_FAILED, "LQ-NN-SHAPE",
		    "ltxv vae: z is %s, expected [B, %d, F, H, W]", buf,
		    v->cfg.latent_channels);
	}
	B = z->shape[0];
	F = z->shape[2];
	H = z->shape[3];
	W = z->shape[4];
	ltxv_vae_output_shape(v, z->shape, want);
	if (sample->ndim != 5 || memcmp(sample->shape, want, sizeof(want)) != 0) {
		char buf[96];

		gpu_tensor_describe(sample, buf, sizeof(buf));
		return error_set(err, LQ_FAILED, "LQ-NN-SHAPE",
		    "ltxv vae: sample is %s, expected [%lld, %lld, %lld, %lld, %lld]",
		    buf, (long long)want[0], (long long)want[1], (long long)want[2],
		    (long long)want[3], (long long)want[4]);
	}
	if (v->tc && args->decode_timestep == NULL)
		return error_set(err, LQ_FAILED, "LQ-NN-INPUT",
		    "ltxv vae: the decoder is timestep-conditioned and needs "
		    "decode_timestep");
	if (strcmp(v->cfg.decoder_spatial_padding_mode, "reflect") == 0 &&
	    (H < 2 || W < 2)) {
		/* torch's reflect padding needs pad < size; the latent is
		 * the smallest grid the decoder pads */
		error_set(err, LQ_FAILED, "LQ-NN-SHAPE",
		    "z is %lld x %lld (H x W): decoder_spatial_padding_mode "
		    "\"reflect\" pads by 1 and needs a latent of at least 2 x 2",
		    (long long)H, (long long)W);
		error_set_field(err, "z");
		error_set_hint(err, "decode at least 2 latent rows and columns "
		    "(%d pixels)", 2 * v->cfg.spatial_compression_ratio);
		return LQ_FAILED;
	}
	st = ltxv_vae_reserve(v, (int)B, (int)F, (int)H, (int)W, err);
	if (st != LQ_OK)
		return st;

	memset(&run, 0, sizeof(run));
	run.v = v;
	run.cmd = cmd;
	run.dump = dump;
	run.B = B;
	/* LTX2VideoDecoder3d.forward: causal = causal or self.is_causal */
	run.causal = args->causal || v->cfg.decoder_causal;
	run.s_mode = strcmp(v->cfg.decoder_spatial_padding_mode, "reflect") == 0 ?
	    OPS_PAD_REFLECT : OPS_PAD_ZERO;
	run.eps = (float)v->cfg.resnet_norm_eps;
	mx = slot_numel(&v->cfg, B, F, H, W);
	mark = gpu_pool_mark(v->pool);
	gpu_cmd_begin(cmd);
	for (int i = 0; i < 5; i++)
		OP(gpu_pool_tensor(v->pool, GPU_F32, 1, SHAPE(mx), &run.slot[i], err));
	OP(gpu_pool_tensor(v->pool, GPU_F32, 2, SHAPE(B, TPROJ_DIM), &run.tfeat, err));
	OP(gpu_pool_tensor(v->pool, GPU_F32, 1, SHAPE(B * 4 * v->cmax), &run.thid, err));
	OP(gpu_pool_tensor(v->pool, GPU_F32, 1, SHAPE(B * 4 * v->cmax), &run.temb, err));
	OP(gpu_pool_tensor(v->pool, GPU_F32, 1, SHAPE(B * 4 * v->cmax), &run.ss, err));
	OP(draw_noise(&run, H, W, args->noise, err));
	if (v->tc) {
		/* temb = decode_timestep * timestep_scale_multiplier (float32),
		 * then the 256-d sinusoid every embedder starts from. */
		float *t = xmalloc(sizeof(float) * (size_t)B);

		tf = xmalloc(sizeof(float) * (size_t)B * TPROJ_DIM);
		for (int64_t b = 0; b < B; b++)
			t[b] = args->decode_timestep[b] * v->timestep_scale_multiplier;
		ltxv_timestep_features(t, (int)B, TPROJ_DIM, tf);
		free(t);
		OP(gpu_tensor_upload(v->ctx, &run.tfeat, tf, err));
	}

	{
		struct ops_conv3d_params p3 = conv3_params(&run);
		struct gpu_tensor h = view5(&run.slot[s], B, v->cfg.dec_conv_in_out, F, H, W);

		OP(ops_conv3d(cmd, &h, z, &v->conv_in_w, &v->conv_in_b, &p3));
		DUMP("decoder.conv_in", h);
	}
	/* mid block */
	{
		struct gpu_tensor temb;

		if (v->mid.has_te) {
			OP(time_embed(&run, &v->mid.te, &temb));
			DUMP("decoder.mid_block.time_embedder", temb);
		}
		for (int j = 0; j < v->mid.nres; j++) {
			OP(ltxv_vae_resnet_forward(&run, &v->mid.res[j], s, 1 - s, F, H, W,
			    v->mid.has_te ? &temb : NULL));
			s = 1 - s;
		}
		if (dump) {
			struct gpu_tensor h = view5(&run.slot[s], B, v->mid.cout, F, H, W);

			DUMP("decoder.mid_block", h);
		}
	}
	for (int i = 0; i < v->nup; i++) {
		const struct vae_block *b = &v->up[i];
		struct gpu_tensor temb;

		if (b->has_conv_in) {
			OP(ltxv_vae_resnet_forward(&run, &b->conv_in, s, 1 - s, F, H, W, NULL));
			s = 1 - s;
		}
		if (b->has_te) {
			OP(time_embed(&run, &b->te, &temb));
			snprintf(name, sizeof(name), "decoder.up_blocks.%d.time_embedder", i);
			DUMP(name, temb);
		}
		if (b->up) {
			OP(upsample(&run, b, s, 1 - s, F, H, W));
			s = 1 - s;
			F = 2 * F - 1;
			H *= 2;
			W *= 2;
			if (dump) {
				struct gpu_tensor h = view5(&run.slot[s], B,
				    b->up_out / 8, F, H, W);

				snprintf(name, sizeof(name),
				    "decoder.up_blocks.%d.upsamplers.0", i);
				DUMP(name, h);
			}
		}
		for (int j = 0; j < b->nres; j++) {
			OP(ltxv_vae_resnet_forward(&run, &b->res[j], s, 1 - s, F, H, W,
			    b->has_te ? &temb : NULL));
			s = 1 - s;
		}
		if (dump) {
			struct gpu_tensor h = view5(&run.slot[s], B, b->cout, F, H, W);

			snprintf(name, sizeof(name), "decoder.up_blocks.%d", i);
			DUMP(name, h);
		}
	}
	{
		int64_t C = v->cfg.dec_conv_out_in, p = v->cfg.patch_size;
		struct gpu_tensor h = view5(&run.slot[s], B, C, F, H, W);
		struct gpu_tensor o = view5(&run.slot[2], B, v->cfg.dec_conv_out_out, F, H, W);
		struct ops_conv3d_params p3 = conv3_params(&run);

		OP(ops_rms_norm_channels(cmd, &h, &h, NULL, 1e-8f));
		if (dump && v->cfg.ltx2) {
			/* LTX-2's PerChannelRMSNorm works channels-first */
			DUMP("decoder.norm_out", h);
		} else if (dump) {
			/* upstream's norm_out sees channels-last */
			static const int perm[5] = { 0, 2, 3, 4, 1 };
			struct gpu_tensor hp = gpu_tensor_permute(&h, perm);
			struct gpu_tensor cl = gpu_tensor_make(run.slot[3].buf,
			    run.slot[3].offset, GPU_F32, 5, hp.shape);

			OP(ops_copy(cmd, &cl, &hp));
			DUMP("decoder.norm_out", cl);
		}
		if (v->tc) {
			struct gpu_tensor temb, ss, shift, scale;

			OP(time_embed(&run, &v->te, &temb));
			DUMP("decoder.time_embedder", temb);
			ss = viewn(&run.ss, 3, SHAPE(B, 2, C));
			OP(ops_add_table(cmd, &ss, &v->sst, &temb));
			shift = row(&ss, 0);
			scale = row(&ss, 1);
			OP(ops_channel_affine(cmd, &h, &h, &scale, &shift, 1.0f));
		}
		OP(ops_silu(cmd, &h, &h));
		OP(ops_conv3d(cmd, &o, &h, &v->conv_out_w, &v->conv_out_b, &p3));
		/* unpatchify: channel c*p*p + pw*p + ph (width sub-position
		 * slower) -> pixel (h*p + ph, w*p + pw) */
		OP(ops_depth_to_space(cmd, sample, &o, 1, (int)p, (int)p, 1));
	}
	st = gpu_cmd_submit(cmd, err);
out:
	/* an op's failure is the command's sticky error: report it (the f32
	 * LTX-0.9 upsampler's 226 MB weight used to fail here with an empty
	 * message) */
	if (st != LQ_OK && err != NULL && err->status == LQ_OK)
		(void)gpu_cmd_status(cmd, err);
	free(tf);
	gpu_pool_reset(v->pool, mark);
	return st;
}

/* ---- tiled and frame-wise decoding (AutoencoderKLLTXVideo.tiled_decode,
 * _temporal_tiled_decode, blend_v / blend_h / blend_t) ---- */

const char *const ltxv_vae_tiling_names[] = {
	"use_tiling", "use_framewise_decoding",
	"tile_sample_min_height", "tile_sample_min_width",
	"tile_sample_min_num_frames", "tile_sample_stride_height",
	"tile_sample_stride_width", "tile_sample_stride_num_frames", NULL,
};

/* The attribute behind name i of ltxv_vae_tiling_names. */
static int *
tiling_field(struct ltxv_vae_tiling *t, int i)
{
	int *f[] = {
		&t->use_tiling, &t->use_framewise_decoding,
		&t->tile_sample_min_height, &t->tile_sample_min_width,
		&t->tile_sample_min_num_frames, &t->tile_sample_stride_height,
		&t->tile_sample_stride_width, &t->tile_sample_stride_num_frames,
	};

	return f[i];
}

void
ltxv_vae_tiling_init(struct ltxv_vae_tiling *t)
{
	memset(t, 0, sizeof(*t));
	t->tile_sample_min_height = 512;
	t->tile_sample_min_width = 512;
	t->tile_sample_min_num_frames = 16;
	t->tile_sample_stride_height = 448;
	t->tile_sample_stride_width = 448;
	t->tile_sample_stride_num_frames = 8;
}

enum lq_status
ltxv_vae_tiling_set(struct ltxv_vae_tiling *t, const char *name,
    const char *value, struct lq_error *err)
{
	for (int i = 0; ltxv_vae_tiling_names[i]; i++) {
		char *end;
		long v;

		if (strcmp(name, ltxv_vae_tiling_names[i]) != 0)
			continue;
		if (i < 2) {
			if (strcmp(value, "true") == 0 || strcmp(value, "1") == 0)
				v = 1;
			else if (strcmp(value, "false") == 0 || strcmp(value, "0") == 0)
				v = 0;
			else {
				error_set(err, LQ_FAILED, "LQ-NN-TILING",
				    "%s: \"%s\" is not a boolean", name, value);
				error_set_field(err, "%s", name);
				error_set_hint(err, "write %s=true or %s=false",
				    name, name);
				return LQ_FAILED;
			}
		} else {
			v = strtol(value, &end, 10);
			if (end == value || *end != '\0' || v < 1 || v > 1 << 20) {
				error_set(err, LQ_FAILED, "LQ-NN-TILING",
				    "%s: \"%s\" is not a size in 1 .. %d", name,
				    value, 1 << 20);
				error_set_field(err, "%s", name);
				error_set_hint(err, "sizes are pixels or frames, "
				    "e.g. %s=%d", name, i < 5 ? 512 : 448);
				return LQ_FAILED;
			}
		}
		*tiling_field(t, i) = (int)v;
		return LQ_OK;
	}
	error_set(err, LQ_FAILED, "LQ-NN-TILING",
	    "\"%s\" is not a VAE tiling attribute", name);
	error_set_field(err, "%s", name);
	error_set_hint(err, "use one of use_tiling, use_framewise_decoding, "
	    "tile_sample_min_height|width|num_frames, "
	    "tile_sample_stride_height|width|num_frames");
	return LQ_FAILED;
}

/* Number of upsampling up blocks (each doubles F-1, H and W). */
static int
config_ups(const struct ltxv_vae_config *c)
{
	int u = 0;

	for (int i = 0; i < c->dec_n_up; i++)
		u += c->dec_up[i].spatio_temporal_scale != 0;
	return u;
}

enum lq_status
ltxv_vae_tiling_check(const struct ltxv_vae_config *c,
    const struct ltxv_vae_tiling *t, struct lq_error *err)
{
	int s = c->spatial_compression_ratio, r = c->temporal_compression_ratio;
	struct { const char *name; int v, ratio; } sz[] = {
		{ "tile_sample_min_height", t->tile_sample_min_height, s },
		{ "tile_sample_min_width", t->tile_sample_min_width, s },
		{ "tile_sample_min_num_frames", t->tile_sample_min_num_frames, r },
		{ "tile_sample_stride_height", t->tile_sample_stride_height, s },
		{ "tile_sample_stride_width", t->tile_sample_stride_width, s },
		{ "tile_sample_stride_num_frames", t->tile_sample_stride_num_frames, r },
	};

	if (!t->use_tiling && !t->use_framewise_decoding)
		return LQ_OK;
	if ((1 << config_ups(c)) * c->patch_size != s ||
	    (1 << config_ups(c)) != r) {
		error_set(err, LQ_FAILED, "LQ-NN-TILING",
		    "the decoder scales by %d x %d but the config says "
		    "spatial_compression_ratio %d, temporal_compression_ratio "
		    "%d: tiles would not line up", (1 << config_ups(c)) *
		    c->patch_size, 1 << config_ups(c), s, r);
		error_set_field(err, "spatial_compression_ratio");
		return LQ_FAILED;
	}
	for (int i = 0; i < 6; i++) {
		if (sz[i].v >= sz[i].ratio)
			continue;
		error_set(err, LQ_FAILED, "LQ-NN-TILING",
		    "%s %d is below the VAE's compression ratio %d (a tile "
		    "must hold one latent cell)", sz[i].name, sz[i].v,
		    sz[i].ratio);
		error_set_field(err, "%s", sz[i].name);
		error_set_hint(err, "use %d or a larger multiple of %d",
		    sz[i].ratio, sz[i].ratio);
		return LQ_FAILED;
	}
	for (int i = 0; i < 3; i++) {
		if (sz[i + 3].v <= sz[i].v)
			continue;
		error_set(err, LQ_FAILED, "LQ-NN-TILING",
		    "%s %d is larger than %s %d (tiles would leave gaps)",
		    sz[i + 3].name, sz[i + 3].v, sz[i].name, sz[i].v);
		error_set_field(err, "%s", sz[i + 3].name);
		error_set_hint(err, "use a stride of at most %d", sz[i].v);
		return LQ_FAILED;
	}
	return LQ_OK;
}

/* Half of v rounded down to a multiple of ratio, at least ratio. */
static int
half_size(int v, int ratio)
{
	int h = v / 2 / ratio * ratio;

	return h < ratio ? ratio : h;
}

int
ltxv_vae_tiling_shrink(const struct ltxv_vae_config *c,
    struct ltxv_vae_tiling *t)
{
	struct ltxv_vae_tiling o = *t;
	int s = c->spatial_compression_ratio, r = c->temporal_compression_ratio;

	t->use_tiling = t->use_framewise_decoding = 1;
	t->tile_sample_min_height = half_size(o.tile_sample_min_height, s);
	t->tile_sample_min_width = half_size(o.tile_sample_min_width, s);
	t->tile_sample_min_num_frames = half_size(o.tile_sample_min_num_frames, r);
	t->tile_sample_stride_height = half_size(o.tile_sample_stride_height, s);
	t->tile_sample_stride_width = half_size(o.tile_sample_stride_width, s);
	t->tile_sample_stride_num_frames =
	    half_size(o.tile_sample_stride_num_frames, r);
	if (t->tile_sample_stride_height > t->tile_sample_min_height)
		t->tile_sample_stride_height = t->tile_sample_min_height;
	if (t->tile_sample_stride_width > t->tile_sample_min_width)
		t->tile_sample_stride_width = t->tile_sample_min_width;
	if (t->tile_sample_stride_num_frames > t->tile_sample_min_num_frames)
		t->tile_sample_stride_num_frames = t->tile_sample_min_num_frames;
	return memcmp(&o, t, sizeof(o)) != 0;
}

enum lq_status
ltxv_vae_tiling_from_json(const cJSON *v, enum ltxv_vae_tiling_mode *mode,
    struct ltxv_vae_tiling *t, struct lq_error *err)
{
	const cJSON *e;

	ltxv_vae_tiling_init(t);
	*mode = LTXV_VAE_TILING_AUTO;
	if (v == NULL || cJSON_IsNull(v) ||
	    (cJSON_IsString(v) && strcmp(v->valuestring, "auto") == 0))
		return LQ_OK;
	if (cJSON_IsString(v) && strcmp(v->valuestring, "off") == 0) {
		*mode = LTXV_VAE_TILING_OFF;
		return LQ_OK;
	}
	if (!cJSON_IsObject(v)) {
		error_set(err, LQ_FAILED, "LQ-NN-TILING",
		    "vae_tiling is neither auto, off nor a mapping");
		error_set_field(err, "vae_tiling");
		return LQ_FAILED;
	}
	*mode = LTXV_VAE_TILING_SET;
	t->use_tiling = t->use_framewise_decoding = 1;
	cJSON_ArrayForEach(e, v) {
		char num[32];
		enum lq_status st;

		if (cJSON_IsNull(e))
			continue;
		if (cJSON_IsBool(e))
			snprintf(num, sizeof(num), "%s", cJSON_IsTrue(e) ? "true" :
			    "false");
		else if (cJSON_IsNumber(e) && e->valuedouble == (double)(long)e->valuedouble)
			snprintf(num, sizeof(num), "%ld", (long)e->valuedouble);
		else
			snprintf(num, sizeof(num), "?");
		st = ltxv_vae_tiling_set(t, e->string, num, err);
		if (st != LQ_OK) {
			error_set_field(err, "vae_tiling.%s", e->string);
			return st;
		}
	}
	return LQ_OK;
}

void
ltxv_vae_tiling_describe(const struct ltxv_vae_tiling *t, char *buf, size_t n)
{
	int k = 0;

	if (!t->use_tiling && !t->use_framewise_decoding) {
		snprintf(buf, n, "untiled");
		return;
	}
	buf[0] = '\0';
	if (t->use_tiling)
		k = snprintf(buf, n, "spatial %dx%d/%dx%d",
		    t->tile_sample_min_height, t->tile_sample_min_width,
		    t->tile_sample_stride_height, t->tile_sample_stride_width);
	if (t->use_framewise_decoding && k >= 0 && (size_t)k < n)
		snprintf(buf + k, n - (size_t)k, "%stemporal %d/%d",
		    k ? " " : "", t->tile_sample_min_num_frames,
		    t->tile_sample_stride_num_frames);
}

/* Latent tile geometry of a decode (upstream's tile_latent_* values and
 * which path _decode takes). */
struct tile_plan {
	int temporal, spatial;		/* paths taken */
	int64_t lmin_h, lmin_w, lmin_f, lstr_h, lstr_w, lstr_f;
	int blend_h, blend_w, blend_f;	/* sample units */
	int str_h, str_w, str_f;	/* sample strides */
};

static void
tile_plan(const struct ltxv_vae_config *c, const int64_t z[5],
    const struct ltxv_vae_tiling *t, struct tile_plan *p)
{
	int s = c->spatial_compression_ratio, r = c->temporal_compression_ratio;

	memset(p, 0, sizeof(*p));
	if (t == NULL)
		return;
	p->lmin_h = t->tile_sample_min_height / s;
	p->lmin_w = t->tile_sample_min_width / s;
	p->lmin_f = t->tile_sample_min_num_frames / r;
	p->lstr_h = t->tile_sample_stride_height / s;
	p->lstr_w = t->tile_sample_stride_width / s;
	p->lstr_f = t->tile_sample_stride_num_frames / r;
	p->blend_h = t->tile_sample_min_height - t->tile_sample_stride_height;
	p->blend_w = t->tile_sample_min_width - t->tile_sample_stride_width;
	p->blend_f = t->tile_sample_min_num_frames -
	    t->tile_sample_stride_num_frames;
	p->str_h = t->tile_sample_stride_height;
	p->str_w = t->tile_sample_stride_width;
	p->str_f = t->tile_sample_stride_num_frames;
	p->temporal = t->use_framewise_decoding && z[2] > p->lmin_f;
	/* inside a temporal tile the spatial test is repeated on the tile:
	 * same H and W, so the same answer */
	p->spatial = t->use_tiling && (z[4] > p->lmin_w || z[3] > p->lmin_h);
}

static int64_t
min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

/* Latent size of the largest decoder call of a plan. */
static void
largest_call(const int64_t z[5], const struct tile_plan *p, int64_t out[5])
{
	memcpy(out, z, 5 * sizeof(*out));
	if (p->temporal)
		out[2] = min64(z[2], p->lmin_f + 1);
	if (p->spatial) {
		out[3] = min64(z[3], p->lmin_h);
		out[4] = min64(z[4], p->lmin_w);
	}
}

void
ltxv_vae_tiling_call(const struct ltxv_vae_config *c, const int64_t z[5],
    const struct ltxv_vae_tiling *t, int64_t out[5])
{
	struct tile_plan p;

	tile_plan(c, z, t, &p);
	largest_call(z, &p, out);
}

static void
piece_shape(struct vae_piece *p, int64_t B, int64_t C, int64_t F, int64_t H,
    int64_t W)
{
	size_t n = (size_t)(B * C * F * H * W);

	if (n > p->cap) {
		free(p->x);
		p->x = xmalloc(n * sizeof(float));
		p->cap = n;
	}
	p->B = B;
	p->C = C;
	p->F = p->Fs = F;
	p->H = H;
	p->W = W;
}

static float *
at(const struct vae_piece *p, int64_t b, int64_t c, int64_t f, int64_t h,
    int64_t w)
{
	return p->x + ((((b * p->C + c) * p->Fs + f) * p->H + h) * p->W + w);
}

/*
 * The blend of one row / column / frame, as upstream writes it:
 *   b[y] = a[-E + y] * (1 - y / E) + b[y] * (y / E)
 * Python computes the weights in double; torch multiplies float32 tensors
 * by them as float32 scalars, each product rounded, then adds.
 */
static void
blend_weights(int y, int E, float *wa, float *wb)
{
	*wa = (float)(1.0 - (double)y / (double)E);
	*wb = (float)((double)y / (double)E);
}

/* blend_v: the height axis; a and b share B, C, F and W. */
static void
blend_v(const struct vae_piece *a, struct vae_piece *b, int extent)
{
	int64_t E = min64(min64(a->H, b->H), extent);

	for (int64_t y = 0; y < E; y++) {
		float wa, wb;

		blend_weights((int)y, (int)E, &wa, &wb);
		for (int64_t n = 0; n < b->B; n++)
			for (int64_t c = 0; c < b->C; c++)
				for (int64_t f = 0; f < b->F; f++) {
					const float *pa = at(a, n, c, f, a->H - E + y, 0);
					float *pb = at(b, n, c, f, y, 0);

					for (int64_t x = 0; x < b->W; x++) {
						float u = pa[x] * wa, v = pb[x] * wb;

						pb[x] = u + v;
					}
				}
	}
}

/* blend_h: the width axis; a and b share B, C, F and H. */
static void
blend_h(const struct vae_piece *a, struct vae_piece *b, int extent)
{
	int64_t E = min64(min64(a->W, b->W), extent);

	for (int64_t x = 0; x < E; x++) {
		float wa, wb;

		blend_weights((int)x, (int)E, &wa, &wb);
		for (int64_t n = 0; n < b->B; n++)
			for (int64_t c = 0; c < b->C; c++)
				for (int64_t f = 0; f < b->F; f++)
					for (int64_t y = 0; y < b->H; y++) {
						float u = *at(a, n, c, f, y, a->W - E + x) * wa;
						float v = *at(b, n, c, f, y, x) * wb;

						*at(b, n, c, f, y, x) = u + v;
					}
	}
}

/* blend_t: the frame axis; a and b share B, C, H and W. */
static void
blend_t(const struct vae_piece *a, struct vae_piece *b, int extent)
{
	int64_t E = min64(min64(a->F, b->F), extent), hw = b->H * b->W;

	for (int64_t x = 0; x < E; x++) {
		float wa, wb;

		blend_weights((int)x, (int)E, &wa, &wb);
		for (int64_t n = 0; n < b->B; n++)
			for (int64_t c = 0; c < b->C; c++) {
				const float *pa = at(a, n, c, a->F - E + x, 0, 0);
				float *pb = at(b, n, c, x, 0, 0);

				for (int64_t i = 0; i < hw; i++) {
					float u = pa[i] * wa, v = pb[i] * wb;

					pb[i] = u + v;
				}
			}
	}
}

/* Copies src[:, :, :, 0:h, 0:w] into dst[:, :, :, y0:y0+h, x0:x0+w]. */
static void
place(struct vae_piece *dst, const struct vae_piece *src, int64_t y0, int64_t x0,
    int64_t h, int64_t w)
{
	for (int64_t n = 0; n < src->B; n++)
		for (int64_t c = 0; c < src->C; c++)
			for (int64_t f = 0; f < src->F; f++)
				for (int64_t y = 0; y < h; y++)
					memcpy(at(dst, n, c, f, y0 + y, x0),
					    at(src, n, c, f, y, 0),
					    (size_t)w * sizeof(float));
}

/* The piece helpers, for the encoder's tiling (ltxv_vae_int.h). */
void
ltxv_vae_piece_shape(struct vae_piece *p, int64_t B, int64_t C, int64_t F,
    int64_t H, int64_t W)
{
	piece_shape(p, B, C, F, H, W);
}

float *
ltxv_vae_piece_at(const struct vae_piece *p, int64_t b, int64_t c, int64_t f,
    int64_t h, int64_t w)
{
	return at(p, b, c, f, h, w);
}

void
ltxv_vae_blend_v(const struct vae_piece *a, struct vae_piece *b, int extent)
{
	blend_v(a, b, extent);
}

void
ltxv_vae_blend_h(const struct vae_piece *a, struct vae_piece *b, int extent)
{
	blend_h(a, b, extent);
}

void
ltxv_vae_blend_t(const struct vae_piece *a, struct vae_piece *b, int extent)
{
	blend_t(a, b, extent);
}

void
ltxv_vae_piece_place(struct vae_piece *dst, const struct vae_piece *src,
    int64_t y0, int64_t x0, int64_t h, int64_t w)
{
	place(dst, src, y0, x0, h, w);
}

/* One tiled decode in progress. */
struct tiled {
	struct ltxv_vae *v;
	const struct ltxv_vae_decode_args *args;
	const float *z;
	int64_t zs[5];
	struct tile_plan p;
	struct gpu_buffer *bz, *bo;	/* the largest call's latent / sample */
	float *hz;			/* host latent of one call */
	int calls;			/* decoder calls so far */
	struct ltxv_vae_noise noise;	/* k counted over the whole call */
	int64_t out_frames;		/* (F - 1) * r + 1 with temporal tiles */
};

static enum lq_status
tiled_noise(void *ud, const char *module, int k, int height, int width,
    float *out, struct lq_error *err)
{
	struct tiled *td = ud;
	const struct ltxv_vae_noise *in = td->args->noise;

	if (in == NULL || in->fill == NULL)
		return error_set(err, LQ_FAILED, "LQ-NN-INPUT",
		    "%s injects noise but no noise source was given", module);
	return in->fill(in->ud, module, 2 * td->calls + k, height, width, out,
	    err);
}

/* self.decoder(z[:, :, f0:f0+nf, h0:h0+nh, w0:w0+nw], temb) into *out. */
static enum lq_status
decoder_call(struct tiled *td, int64_t f0, int64_t nf, int64_t h0, int64_t nh,
    int64_t w0, int64_t nw, struct vae_piece *out, struct lq_error *err)
{
	struct ltxv_vae *v = td->v;
	int64_t B = td->zs[0], C = td->zs[1], F = td->zs[2], H = td->zs[3],
	    W = td->zs[4];
	int64_t cs[5] = { B, C, nf, nh, nw }, os[5];
	struct gpu_tensor tz, to;
	struct ltxv_vae_decode_args a = *td->args;
	float *d = td->hz;
	enum lq_status st;

	for (int64_t b = 0; b < B; b++)
		for (int64_t c = 0; c < C; c++)
			for (int64_t f = 0; f < nf; f++)
				for (int64_t y = 0; y < nh; y++) {
					memcpy(d, td->z + (((b * C + c) * F + f0 + f) *
					    H + h0 + y) * W + w0,
					    (size_t)nw * sizeof(float));
					d += nw;
				}
	output_shape(&v->cfg, cs, os);
	tz = gpu_tensor_make(td->bz, 0, GPU_F32, 5, cs);
	to = gpu_tensor_make(td->bo, 0, GPU_F32, 5, os);
	a.z = &tz;
	a.noise = &td->noise;
	if ((st = gpu_tensor_upload_f32(v->ctx, &tz, td->hz, err)) != LQ_OK ||
	    (st = ltxv_vae_decode(v, &a, &to, NULL, err)) != LQ_OK)
		return st;
	td->calls++;
	piece_shape(out, os[0], os[1], os[2], os[3], os[4]);
	return gpu_tensor_download_f32(v->ctx, &to, out->x, err);
}

/*
 * tiled_decode of z[:, :, f0:f0+nf] into *out (cropped to H*s x W*s):
 * rows of tiles, each blended in place with the tile above (blend_v) and
 * then the one to its left (blend_h), both already blended, then cropped
 * to the stride and placed.  Only the previous row of tiles is kept.
 */
static enum lq_status
spatial_tiled(struct tiled *td, int64_t f0, int64_t nf, struct vae_piece *out,
    struct lq_error *err)
{
	const struct tile_plan *p = &td->p;
	int64_t H = td->zs[3], W = td->zs[4];
	int64_t ncol = (W + p->lstr_w - 1) / p->lstr_w;
	int s = td->v->cfg.spatial_compression_ratio;
	struct vae_piece *prev = xcalloc((size_t)ncol, sizeof(*prev));
	struct vae_piece *cur = xcalloc((size_t)ncol, sizeof(*cur));
	int64_t y0 = 0;
	enum lq_status st = LQ_OK;
	int first = 1;

	for (int64_t i = 0; i < H && st == LQ_OK; i += p->lstr_h) {
		int64_t x0 = 0, rowh = 0;

		for (int64_t j = 0, col = 0; j < W; j += p->lstr_w, col++) {
			struct vae_piece *t = &cur[col];
			int64_t h, w;

			st = decoder_call(td, f0, nf, i, min64(p->lmin_h, H - i), j,
			    min64(p->lmin_w, W - j), t, err);
			if (st != LQ_OK)
				break;
			if (first && col == 0)
				piece_shape(out, t->B, t->C, t->F, H * s, W * s);
			if (i > 0)
				blend_v(&prev[col], t, p->blend_h);
			if (j > 0)
				blend_h(&cur[col - 1], t, p->blend_w);
			h = min64(min64(p->str_h, t->H), out->H - y0);
			w = min64(min64(p->str_w, t->W), out->W - x0);
			if (h > 0 && w > 0)
				place(out, t, y0, x0, h, w);
			x0 += min64(p->str_w, t->W);
			rowh = min64(p->str_h, t->H);
		}
		first = 0;
		y0 += rowh;
		{
			struct vae_piece *sw = prev;

			prev = cur;
			cur = sw;
		}
	}
	for (int64_t c = 0; c < ncol; c++) {
		free(prev[c].x);
		free(cur[c].x);
	}
	free(prev);
	free(cur);
	return st;
}

/* One temporal tile (or the whole latent): spatially tiled or one call. */
static enum lq_status
decode_frames(struct tiled *td, int64_t f0, int64_t nf, struct vae_piece *out,
    struct lq_error *err)
{
	if (td->p.spatial)
		return spatial_tiled(td, f0, nf, out, err);
	return decoder_call(td, f0, nf, 0, td->zs[3], 0, td->zs[4], out, err);
}

static enum lq_status
emit(struct tiled *td, const struct ltxv_vae_sink *sink, int64_t f0,
    int64_t n, const struct vae_piece *x, struct lq_error *err)
{
	if (f0 >= td->out_frames)
		return LQ_OK;
	n = min64(n, td->out_frames - f0);
	if (n <= 0)
		return LQ_OK;
	return sink->frames(sink->ud, f0, n, x->x, x->Fs, err);
}

enum lq_status
ltxv_vae_decode_tiled(struct ltxv_vae *v, const struct ltxv_vae_decode_args *args,
    const float *z, const int64_t zs[5], const struct ltxv_vae_tiling *t,
    const struct ltxv_vae_sink *sink, struct lq_error *err)
{
	struct tiled td;
	struct ltxv_vae_tiling none;
	struct vae_piece a = { 0 }, b = { 0 };
	int64_t call[5], os[5];
	enum lq_status st;

	if (t == NULL) {
		ltxv_vae_tiling_init(&none);
		t = &none;
	}
	if ((st = ltxv_vae_tiling_check(&v->cfg, t, err)) != LQ_OK)
		return st;
	if (zs[1] != v->cfg.latent_channels)
		return error_set(err, LQ_FAILED, "LQ-NN-SHAPE",
		    "ltxv vae: z has %lld channels, expected %d",
		    (long long)zs[1], v->cfg.latent_channels);
	memset(&td, 0, sizeof(td));
	td.v = v;
	td.args = args;
	td.z = z;
	memcpy(td.zs, zs, sizeof(td.zs));
	tile_plan(&v->cfg, zs, t, &td.p);
	td.noise.fill = tiled_noise;
	td.noise.ud = &td;
	output_shape(&v->cfg, zs, os);
	td.out_frames = td.p.temporal ?
	    (zs[2] - 1) * v->cfg.temporal_compression_ratio + 1 : os[2];
	largest_call(zs, &td.p, call);
	output_shape(&v->cfg, call, os);
	td.hz = xmalloc(sizeof(float) * (size_t)(call[0] * call[1] * call[2] *
	    call[3] * call[4]));
	/* the pool exactly for the largest call: a retry with smaller tiles
	 * must give device memory back */
	if (v->pool && (v->rB != call[0] || v->rF != call[2] ||
	    v->rH != call[3] || v->rW != call[4])) {
		gpu_pool_free(v->pool);
		v->pool = NULL;
	}
	if ((st = ltxv_vae_reserve(v, (int)call[0], (int)call[2], (int)call[3],
	    (int)call[4], err)) != LQ_OK ||
	    (st = gpu_buffer_create(v->ctx, sizeof(float) * (size_t)(call[0] *
	    call[1] * call[2] * call[3] * call[4]), &td.bz, err)) != LQ_OK ||
	    (st = gpu_buffer_create(v->ctx, sizeof(float) * (size_t)(os[0] *
	    os[1] * os[2] * os[3] * os[4]), &td.bo, err)) != LQ_OK)
		goto out;
	if (!td.p.temporal) {
		if ((st = decode_frames(&td, 0, zs[2], &a, err)) == LQ_OK)
			st = emit(&td, sink, 0, a.F, &a, err);
		goto out;
	}
	/* _temporal_tiled_decode: tiles of lmin_f + 1 latent frames every
	 * lstr_f; tiles k >= 1 drop their last decoded frame, are blended
	 * with the previous (already blended) tile and keep `stride`
	 * frames; tile 0 keeps stride + 1. */
	{
		struct vae_piece *prev = &a, *cur = &b;
		int64_t f_out = 0;

		for (int64_t i = 0; i < zs[2]; i += td.p.lstr_f) {
			int64_t keep;

			st = decode_frames(&td, i, min64(td.p.lmin_f + 1, zs[2] - i),
			    cur, err);
			if (st != LQ_OK)
				goto out;
			if (i > 0) {
				/* decoded[:, :, :-1], in place: the frame
				 * stride stays Fs */
				cur->F--;
				blend_t(prev, cur, td.p.blend_f);
				keep = min64(td.p.str_f, cur->F);
			} else {
				keep = min64(td.p.str_f + 1, cur->F);
			}
			if ((st = emit(&td, sink, f_out, keep, cur, err)) != LQ_OK)
				goto out;
			f_out += keep;
			{
				struct vae_piece *sw = prev;

				prev = cur;
				cur = sw;
			}
		}
	}
out:
	gpu_buffer_free(td.bz);
	gpu_buffer_free(td.bo);
	free(td.hz);
	free(a.x);
	free(b.x);
	return st;
}
