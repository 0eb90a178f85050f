/*
 * ltxv_vae_encoder.c — AutoencoderKLLTXVideo's encoder on Vulkan (diffusers
 * models/autoencoders/autoencoder_kl_ltx.py: LTXVideoEncoder3d,
 * LTXVideoDownBlock3D, LTXVideo095DownBlock3D, LTXVideoDownsampler3d,
 * LTXVideoMidBlock3d) and the posterior (models/autoencoders/vae.py:
 * DiagonalGaussianDistribution).
 *
 * The resnets and causal convolutions are the decoder's (ltxv_vae_int.h);
 * activations live in five equal slots of one pool as in the decoder, the
 * slot size being the largest activation of the whole encode (walk()).
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "gpu/ops.h"
#include "nn/ltxv_vae_encoder.h"
#include "nn/ltxv_vae_int.h"
#include "nn/weights.h"

enum enc_down {
	ENC_DOWN_NONE,
	ENC_DOWN_CONV,		/* LTXVideoCausalConv3d stride (2, 2, 2) */
	ENC_DOWN_S2D,		/* LTXVideoDownsampler3d */
};

struct enc_block {
	char path[64];
	int cin, cout;
	int nres;
	struct vae_resnet *res;		/* at cin */
	enum enc_down down;
	int st, sh, sw;			/* LTXVideoDownsampler3d stride */
	int conv_c;			/* its conv's channels: cout / prod */
	int group;			/* residual group size: cin*prod/cout */
	struct gpu_tensor down_w, down_b;
	int has_conv_out;		/* LTXVideoDownBlock3D cin -> cout */
	struct vae_resnet conv_out;
};

struct ltxv_vae_encoder {
	struct gpu_ctx *ctx;
	struct ltxv_vae_config cfg;
	struct nn_weights *w;
	struct gpu_cmd *cmd;
	struct gpu_tensor conv_in_w, conv_in_b, conv_out_w, conv_out_b;
	int nblocks;
	struct enc_block blk[DIFFUSERS_MAX_BLOCKS];
	int cmid, nmid;
	struct vae_resnet *mid;
	float *latents_mean, *latents_std;
	struct gpu_pool *pool;
};

#define SHAPE(...) ((const int64_t[]){ __VA_ARGS__ })

static enum lq_status
wget(struct ltxv_vae_encoder *e, struct gpu_tensor *out, int ndim,
    const int64_t *shape, struct lq_error *err, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

static enum lq_status
wget(struct ltxv_vae_encoder *e, struct gpu_tensor *out, int ndim,
    const int64_t *shape, struct lq_error *err, const char *fmt, ...)
{
	char name[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(name, sizeof(name), fmt, ap);
	va_end(ap);
	return nn_weights_get(e->w, name, ndim, shape, out, err);
}

static enum lq_status
config_fail(struct lq_error *err, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static enum lq_status
config_fail(struct lq_error *err, const char *field, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	error_set(err, LQ_FAILED, "LQ-NN-CONFIG", "%s", msg);
	error_set_field(err, "%s", field);
	return LQ_FAILED;
}

/* The block list of LTXVideoEncoder3d.__init__, then the weights. */
static enum lq_status
load_weights(struct ltxv_vae_encoder *e, struct lq_error *err)
{
	const struct ltxv_vae_config *c = &e->cfg;
	int p = c->patch_size, cin0 = c->in_channels * p * p;
	int is095 = c->is_ltx_095_encoder, cur, n;
	char path[96];
	enum lq_status st;

	n = c->n_block_out_channels - (is095 ? 1 : 0);
	cur = c->block_out_channels[0];
	if ((st = wget(e, &e->conv_in_w, 5, SHAPE(cur, cin0, 3, 3, 3), err,
	    "encoder.conv_in.conv.weight")) ||
	    (st = wget(e, &e->conv_in_b, 1, SHAPE(cur), err,
	    "encoder.conv_in.conv.bias")))
		return st;
	e->nblocks = n;
	for (int i = 0; i < n; i++) {
		struct enc_block *b = &e->blk[i];
		const char *dt = is095 ? c->downsample_type[i] : "conv";

		snprintf(b->path, sizeof(b->path), "encoder.down_blocks.%d", i);
		b->cin = cur;
		if (!is095)
			b->cout = i + 1 < n ? c->block_out_channels[i + 1] :
			    c->block_out_channels[i];
		else
			b->cout = c->block_out_channels[i + 1];
		b->nres = c->layers_per_block[i];
		b->res = xcalloc((size_t)b->nres + 1, sizeof(*b->res));
		for (int j = 0; j < b->nres; j++) {
			snprintf(path, sizeof(path), "%s.resnets.%d", b->path, j);
			if ((st = ltxv_vae_resnet_load(e->w, &b->res[j], path,
			    b->cin, b->cin, 0, 0, 0, err)))
				return st;
		}
		b->down = ENC_DOWN_NONE;
		if (c->spatio_temporal_scaling[i] && strcmp(dt, "conv") == 0) {
			b->down = ENC_DOWN_CONV;
			if ((st = wget(e, &b->down_w, 5, SHAPE(b->cin, b->cin, 3, 3, 3),
			    err, "%s.downsamplers.0.conv.weight", b->path)) ||
			    (st = wget(e, &b->down_b, 1, SHAPE(b->cin), err,
			    "%s.downsamplers.0.conv.bias", b->path)))
				return st;
		} else if (c->spatio_temporal_scaling[i]) {
			int prod;

			b->down = ENC_DOWN_S2D;
			b->st = strcmp(dt, "spatial") == 0 ? 1 : 2;
			b->sh = b->sw = strcmp(dt, "temporal") == 0 ? 1 : 2;
			prod = b->st * b->sh * b->sw;
			if (b->cout % prod != 0 || (b->cin * prod) % b->cout != 0)
				return config_fail(err, "block_out_channels",
				    "%s: a %s downsampler from %d to %d channels "
				    "needs the output a multiple of %d and a "
				    "divisor of %d", b->path, dt, b->cin, b->cout,
				    prod, b->cin * prod);
			b->conv_c = b->cout / prod;
			b->group = b->cin * prod / b->cout;
			if ((st = wget(e, &b->down_w, 5, SHAPE(b->conv_c, b->cin, 3, 3, 3),
			    err, "%s.downsamplers.0.conv.conv.weight", b->path)) ||
			    (st = wget(e, &b->down_b, 1, SHAPE(b->conv_c), err,
			    "%s.downsamplers.0.conv.conv.bias", b->path)))
				return st;
		}
		if (b->cin != b->cout && !is095) {
			b->has_conv_out = 1;
			snprintf(path, sizeof(path), "%s.conv_out", b->path);
			if ((st = ltxv_vae_resnet_load(e->w, &b->conv_out, path,
			    b->cin, b->cout, 0, 0, 0, err)))
				return st;
		} else if (b->cin != b->cout && b->down != ENC_DOWN_S2D) {
			/* upstream builds it but the next block receives cin
			 * channels and fails */
			return config_fail(err, "block_out_channels",
			    "%s (LTXVideo095DownBlock3D) keeps %d channels but "
			    "block_out_channels asks for %d: only its spatial / "
			    "temporal / spatiotemporal downsampler changes "
			    "channels", b->path, b->cin, b->cout);
		}
		cur = b->cout;
	}
	e->cmid = cur;
	e->nmid = c->layers_per_block[c->n_layers_per_block - 1];
	e->mid = xcalloc((size_t)e->nmid + 1, sizeof(*e->mid));
	for (int j = 0; j < e->nmid; j++) {
		snprintf(path, sizeof(path), "encoder.mid_block.resnets.%d", j);
		if ((st = ltxv_vae_resnet_load(e->w, &e->mid[j], path, cur, cur,
		    0, 0, 0, err)))
			return st;
	}
	if ((st = wget(e, &e->conv_out_w, 5, SHAPE(c->latent_channels + 1, cur,
	    3, 3, 3), err, "encoder.conv_out.conv.weight")) ||
	    (st = wget(e, &e->conv_out_b, 1, SHAPE(c->latent_channels + 1), err,
	    "encoder.conv_out.conv.bias")))
		return st;
	{
		const struct st_tensor *m = nn_weights_host(e->w, "latents_mean");
		const struct st_tensor *s = nn_weights_host(e->w, "latents_std");

		if (m && st_tensor_numel(m) == c->latent_channels)
			e->latents_mean = st_tensor_to_f32(m);
		if (s && st_tensor_numel(s) == c->latent_channels)
			e->latents_std = st_tensor_to_f32(s);
	}
	return LQ_OK;
}

void
ltxv_vae_encoder_free(struct ltxv_vae_encoder *e)
{
	if (e == NULL)
		return;
	gpu_cmd_free(e->cmd);
	gpu_pool_free(e->pool);
	nn_weights_free(e->w);
	for (int i = 0; i < DIFFUSERS_MAX_BLOCKS; i++)
		free(e->blk[i].res);
	free(e->mid);
	free(e->latents_mean);
	free(e->latents_std);
	free(e);
}

enum lq_status
ltxv_vae_encoder_load(struct gpu_ctx *ctx, const char *dir,
    struct ltxv_vae_encoder **out, struct lq_error *err)
{
	struct ltxv_vae_encoder *e = xcalloc(1, sizeof(*e));
	char *path = xasprintf("%s/config.json", dir);
	cJSON *root = NULL;
	enum lq_status st;

	*out = NULL;
	e->ctx = ctx;
	st = diffusers_load_json(path, &root, err);
	if (st == LQ_OK)
		st = diffusers_parse_vae(root, path, &e->cfg, err);
	if (st == LQ_OK && e->cfg.ltx2) {
		/* LTX2VideoEncoder3d (downsample types, reflect-capable
		 * padding) is not written yet: only its decoder is */
		st = error_set(err, LQ_FAILED, "LQ-MODEL-006",
		    "%s: _class_name AutoencoderKLLTX2Video: its encoder "
		    "(LTX2VideoEncoder3d) is not implemented; latentq decodes "
		    "with it (--component vae-decoder)", path);
		error_set_field(err, "_class_name");
	}
	cJSON_Delete(root);
	free(path);
	if (st == LQ_OK)
		st = nn_weights_load(ctx, dir, "encoder.", &e->w, err);
	if (st == LQ_OK)
		st = load_weights(e, err);
	if (st == LQ_OK)
		st = gpu_cmd_create(ctx, &e->cmd, err);
	if (st != LQ_OK) {
		ltxv_vae_encoder_free(e);
		return st;
	}
	*out = e;
	return LQ_OK;
}

const struct ltxv_vae_config *
ltxv_vae_encoder_config(const struct ltxv_vae_encoder *e)
{
	return &e->cfg;
}

const float *
ltxv_vae_encoder_latents_mean(const struct ltxv_vae_encoder *e)
{
	return e->latents_mean;
}

const float *
ltxv_vae_encoder_latents_std(const struct ltxv_vae_encoder *e)
{
	return e->latents_std;
}

static enum lq_status
shape_fail(struct lq_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static enum lq_status
shape_fail(struct lq_error *err, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return error_set(err, LQ_FAILED, "LQ-NN-SHAPE", "ltxv vae encoder: %s",
	    msg);
}

/*
 * Follows the shapes through the encoder for x [B, Cin, F, H, W]: the
 * latent shape (C = latent_channels) and the largest activation (elements,
 * every tensor a slot must hold).  The size rules are upstream's: the
 * patchify reshape needs H, W divisible by patch_size; the stride-2 conv
 * gives floor((n - 1) / 2) + 1; LTXVideoDownsampler3d's unflatten needs
 * (F + st - 1), H, W divisible by its stride.
 */
static enum lq_status
walk(const struct ltxv_vae_encoder *e, const int64_t x[5], int64_t lat[5],
    int64_t *max_numel, struct lq_error *err)
{
	const struct ltxv_vae_config *c = &e->cfg;
	int64_t B = x[0], F = x[2], H, W, p = c->patch_size, mx;

	if (x[1] != c->in_channels || B < 1 || F < 1 || x[3] < 1 || x[4] < 1)
		return shape_fail(err, "sample is [%lld, %lld, %lld, %lld, %lld], "
		    "expected [B, %d, F, H, W]", (long long)x[0], (long long)x[1],
		    (long long)x[2], (long long)x[3], (long long)x[4],
		    c->in_channels);
	if (x[3] % p || x[4] % p)
		return shape_fail(err, "height %lld and width %lld must be "
		    "multiples of patch_size %lld (e.g. %lld x %lld)",
		    (long long)x[3], (long long)x[4], (long long)p,
		    (long long)((x[3] + p - 1) / p * p),
		    (long long)((x[4] + p - 1) / p * p));
	H = x[3] / p;
	W = x[4] / p;
	mx = B * x[1] * F * x[3] * x[4];
#define SEE(ch, f, h, w) do { int64_t n_ = B * (ch) * (f) * (h) * (w); \
	if (n_ > mx) mx = n_; } while (0)
	SEE(c->block_out_channels[0], F, H, W);
	for (int i = 0; i < e->nblocks; i++) {
		const struct enc_block *b = &e->blk[i];

		SEE(b->cin, F, H, W);
		if (b->down == ENC_DOWN_CONV) {
			F = (F - 1) / 2 + 1;
			H = (H - 1) / 2 + 1;
			W = (W - 1) / 2 + 1;
		} else if (b->down == ENC_DOWN_S2D) {
			int64_t Fp = F + b->st - 1;

			SEE(b->cin, Fp, H, W);
			SEE(b->conv_c, Fp, H, W);
			if (Fp % b->st || H % b->sh || W % b->sw)
				return shape_fail(err, "%s's downsampler (stride "
				    "%d, %d, %d) receives %lld frames of %lld x "
				    "%lld latent cells: the frame count must be "
				    "odd and the height and width multiples of "
				    "the spatial strides (give the video 1 + a "
				    "multiple of %d frames and a size divisible "
				    "by %d)", b->path, b->st, b->sh, b->sw,
				    (long long)F, (long long)H, (long long)W,
				    c->temporal_compression_ratio,
				    c->spatial_compression_ratio);
			F = Fp / b->st;
			H /= b->sh;
			W /= b->sw;
			SEE(b->cin * b->st * b->sh * b->sw, F, H, W);
		}
		SEE(b->cin, F, H, W);
		SEE(b->cout, F, H, W);
	}
	SEE(e->cmid, F, H, W);
	SEE(c->latent_channels + 1, F, H, W);
#undef SEE
	lat[0] = B;
	lat[1] = c->latent_channels;
	lat[2] = F;
	lat[3] = H;
	lat[4] = W;
	if (max_numel)
		*max_numel = mx;
	return LQ_OK;
}

enum lq_status
ltxv_vae_encoder_latent_shape(const struct ltxv_vae_encoder *e,
    const int64_t x[5], int64_t out[5], struct lq_error *err)
{
	return walk(e, x, out, NULL, err);
}

void
ltxv_vae_encoder_memory(const struct ltxv_vae_encoder *e, size_t *weights,
    size_t *pool_capacity, size_t *pool_peak)
{
	*weights = nn_weights_device_bytes(e->w);
	*pool_capacity = e->pool ? gpu_pool_capacity(e->pool) : 0;
	*pool_peak = e->pool ? gpu_pool_peak(e->pool) : 0;
}

/* Group g of a [B, C*G, ...] tensor read as [B, C, G, ...]: the [B, C,
 * F, H, W] view of channels c*G + g. */
static struct gpu_tensor
group_view(const struct gpu_tensor *t, int64_t C, int64_t G, int64_t g)
{
	struct gpu_tensor v = *t;

	v.shape[1] = C;
	v.stride[1] = t->stride[1] * G;
	v.offset += (size_t)(g * t->stride[1]) * sizeof(float);
	return v;
}

#define OP(x) do { if ((st = (x)) != LQ_OK) goto out; } while (0)
#define DUMP(name, t) OP(nn_dump_tensor(dump, cmd, (name), &(t), err))

/*
 * LTXVideoDownsampler3d.forward from slot xs into slot ys: prepend st - 1
 * copies of frame 0, causal conv to conv_c channels, space-to-depth
 * (channel c*prod + t*(sh*sw) + h*sw + w), plus the space-to-depth of the
 * padded input averaged over groups of `group` consecutive channels.
 */
static enum lq_status
downsample_s2d(struct vae_run *run, const struct enc_block *b, int xs, int ys,
    int64_t F, int64_t H, int64_t W)
{
	struct gpu_cmd *cmd = run->cmd;
	int64_t B = run->B, Fp = F + b->st - 1, prod = b->st * b->sh * b->sw;
	int64_t Fo = Fp / b->st, Ho = H / b->sh, Wo = W / b->sw;
	struct gpu_tensor x = ltxv_vae_view5(&run->slot[xs], B, b->cin, F, H, W);
	struct gpu_tensor xp = x;
	struct gpu_tensor cv = ltxv_vae_view5(&run->slot[3], B, b->conv_c, Fp, H, W);
	struct gpu_tensor y = ltxv_vae_view5(&run->slot[ys], B, b->cout, Fo, Ho, Wo);
	struct gpu_tensor r = ltxv_vae_view5(&run->slot[4], B, b->cin * prod, Fo,
	    Ho, Wo);
	struct gpu_tensor acc;
	struct ops_conv3d_params p3 = ltxv_vae_conv3_params(run->causal, 1, 1, 1);
	enum lq_status st;

	if (b->st > 1) {
		struct gpu_tensor f0 = gpu_tensor_slice(&x, 2, 0, 1);

		xp = ltxv_vae_view5(&run->slot[2], B, b->cin, Fp, H, W);
		for (int k = 0; k < b->st - 1; k++) {
			struct gpu_tensor d = gpu_tensor_slice(&xp, 2, k, 1);

			if ((st = ops_copy(cmd, &d, &f0)))
				return st;
		}
		{
			struct gpu_tensor d = gpu_tensor_slice(&xp, 2, b->st - 1, F);

			if ((st = ops_copy(cmd, &d, &x)))
				return st;
		}
	}
	if ((st = ops_conv3d(cmd, &cv, &xp, &b->down_w, &b->down_b, &p3)) ||
	    (st = ops_space_to_depth(cmd, &y, &cv, b->st, b->sh, b->sw, 0)) ||
	    (st = ops_space_to_depth(cmd, &r, &xp, b->st, b->sh, b->sw, 0)))
		return st;
	/* residual.unflatten(1, (-1, group)).mean(dim=2), into slot 3 (the
	 * conv output is consumed) */
	acc = ltxv_vae_view5(&run->slot[3], B, b->cout, Fo, Ho, Wo);
	{
		struct gpu_tensor g0 = group_view(&r, b->cout, b->group, 0);

		if ((st = ops_copy(cmd, &acc, &g0)))
			return st;
	}
	for (int g = 1; g < b->group; g++) {
		struct gpu_tensor gg = group_view(&r, b->cout, b->group, g);

		if ((st = ops_add(cmd, &acc, &acc, &gg)))
			return st;
	}
	if (b->group > 1 &&
	    (st = ops_scale(cmd, &acc, &acc, 1.0f / (float)b->group, 0.0f)))
		return st;
	return ops_add(cmd, &y, &y, &acc);
}

enum lq_status
ltxv_vae_encode(struct ltxv_vae_encoder *e, const struct gpu_tensor *x,
    float *parameters, const struct nn_dump *dump, struct lq_error *err)
{
	const struct ltxv_vae_config *c = &e->cfg;
	struct gpu_cmd *cmd = e->cmd;
	struct vae_run run;
	int64_t lat[5], mx, B, F, H, W, p = c->patch_size, C = c->latent_channels;
	size_t mark = 0, bytes;
	float *host = NULL;
	struct gpu_tensor o;
	char name[96];
	int s = 0;
	enum lq_status st;

	if (x->ndim != 5)
		return shape_fail(err, "sample has %d dimensions, expected "
		    "[B, %d, F, H, W]", x->ndim, c->in_channels);
	if ((st = walk(e, x->shape, lat, &mx, err)))
		return st;
	bytes = (size_t)(5 * mx) * sizeof(float) + (size_t)8 * 256;
	if (e->pool == NULL || gpu_pool_capacity(e->pool) < bytes) {
		gpu_pool_free(e->pool);
		e->pool = NULL;
		if ((st = gpu_pool_create(e->ctx, bytes, &e->pool, err)))
			return st;
	}
	B = x->shape[0];
	F = x->shape[2];
	H = x->shape[3] / p;
	W = x->shape[4] / p;
	memset(&run, 0, sizeof(run));
	run.cmd = cmd;
	run.dump = dump;
	run.B = B;
	run.causal = c->encoder_causal;
	run.eps = (float)c->resnet_norm_eps;
	mark = gpu_pool_mark(e->pool);
	gpu_cmd_begin(cmd);
	for (int i = 0; i < 5; i++)
		OP(gpu_pool_tensor(e->pool, GPU_F32, 1, SHAPE(mx), &run.slot[i], err));
	{
		/* patchify: channel c*p*p + pw*p + ph (width sub-position
		 * slower), upstream's permute(0, 1, 3, 7, 5, 2, 4, 6) */
		struct gpu_tensor xpch = ltxv_vae_view5(&run.slot[1], B,
		    c->in_channels * p * p, F, H, W);
		struct gpu_tensor h = ltxv_vae_view5(&run.slot[0], B,
		    c->block_out_channels[0], F, H, W);
		struct ops_conv3d_params p3 = ltxv_vae_conv3_params(run.causal,
		    1, 1, 1);

		OP(ops_space_to_depth(cmd, &xpch, x, 1, (int)p, (int)p, 1));
		OP(ops_conv3d(cmd, &h, &xpch, &e->conv_in_w, &e->conv_in_b, &p3));
		DUMP("encoder.conv_in", h);
	}
	for (int i = 0; i < e->nblocks; i++) {
		const struct enc_block *b = &e->blk[i];

		for (int j = 0; j < b->nres; j++) {
			OP(ltxv_vae_resnet_forward(&run, &b->res[j], s, 1 - s, F,
			    H, W, NULL));
			s = 1 - s;
		}
		if (b->down == ENC_DOWN_CONV) {
			int64_t F2 = (F - 1) / 2 + 1, H2 = (H - 1) / 2 + 1;
			int64_t W2 = (W - 1) / 2 + 1;
			struct gpu_tensor xi = ltxv_vae_view5(&run.slot[s], B,
			    b->cin, F, H, W);
			struct gpu_tensor yo = ltxv_vae_view5(&run.slot[1 - s], B,
			    b->cin, F2, H2, W2);
			struct ops_conv3d_params p3 =
			    ltxv_vae_conv3_params(run.causal, 2, 2, 2);

			OP(ops_conv3d(cmd, &yo, &xi, &b->down_w, &b->down_b, &p3));
			s = 1 - s;
			F = F2;
			H = H2;
			W = W2;
		} else if (b->down == ENC_DOWN_S2D) {
			OP(downsample_s2d(&run, b, s, 1 - s, F, H, W));
			s = 1 - s;
			F = (F + b->st - 1) / b->st;
			H /= b->sh;
			W /= b->sw;
		}
		if (b->has_conv_out) {
			OP(ltxv_vae_resnet_forward(&run, &b->conv_out, s, 1 - s,
			    F, H, W, NULL));
			s = 1 - s;
		}
		if (dump) {
			struct gpu_tensor h = ltxv_vae_view5(&run.slot[s], B,
			    b->cout, F, H, W);

			snprintf(name, sizeof(name), "%s", b->path);
			DUMP(name, h);
		}
	}
	for (int j = 0; j < e->nmid; j++) {
		OP(ltxv_vae_resnet_forward(&run, &e->mid[j], s, 1 - s, F, H, W,
		    NULL));
		s = 1 - s;
	}
	{
		struct gpu_tensor h = ltxv_vae_view5(&run.slot[s], B, e->cmid, F, H, W);
		struct ops_conv3d_params p3 = ltxv_vae_conv3_params(run.causal,
		    1, 1, 1);

		DUMP("encoder.mid_block", h);
		OP(ops_rms_norm_channels(cmd, &h, &h, NULL, 1e-8f));
		if (dump) {
			static const int perm[5] = { 0, 2, 3, 4, 1 };
			struct gpu_tensor hp = gpu_tensor_permute(&h, perm);
			struct gpu_tensor cl = gpu_tensor_make(run.slot[2].buf,
			    run.slot[2].offset, GPU_F32, 5, hp.shape);

			OP(ops_copy(cmd, &cl, &hp));
			DUMP("encoder.norm_out", cl);
		}
		OP(ops_silu(cmd, &h, &h));
		o = ltxv_vae_view5(&run.slot[1 - s], B, C + 1, F, H, W);
		OP(ops_conv3d(cmd, &o, &h, &e->conv_out_w, &e->conv_out_b, &p3));
		DUMP("encoder.conv_out", o);
	}
	OP(gpu_cmd_submit(cmd, err));
	host = xmalloc(sizeof(float) * (size_t)gpu_tensor_numel(&o));
	OP(gpu_tensor_download_f32(e->ctx, &o, host, err));
	{
		/* torch.cat([h, h[:, -1:].repeat(1, C - 1, 1, 1, 1)], dim=1) */
		int64_t S = F * H * W;

		for (int64_t b = 0; b < B; b++) {
			const float *src = host + b * (C + 1) * S;
			float *dst = parameters + b * 2 * C * S;

			memcpy(dst, src, sizeof(float) * (size_t)((C + 1) * S));
			for (int64_t k = C + 1; k < 2 * C; k++)
				memcpy(dst + k * S, src + C * S,
				    sizeof(float) * (size_t)S);
		}
	}
out:
	if (st != LQ_OK && err != NULL && err->status == LQ_OK)
		(void)gpu_cmd_status(cmd, err);
	free(host);
	gpu_pool_reset(e->pool, mark);
	return st;
}

void
ltxv_latent_dist(const float *parameters, int64_t B, int64_t C, int64_t S,
    float *mean, float *logvar, float *std)
{
	for (int64_t b = 0; b < B; b++) {
		const float *pm = parameters + b * 2 * C * S;
		const float *pl = pm + C * S;

		for (int64_t i = 0; i < C * S; i++) {
			float lv = pl[i];

			/* torch.clamp(logvar, -30.0, 20.0) */
			lv = lv < -30.0f ? -30.0f : lv > 20.0f ? 20.0f : lv;
			if (mean)
				mean[b * C * S + i] = pm[i];
			if (logvar)
				logvar[b * C * S + i] = lv;
			if (std)
				std[b * C * S + i] = expf(0.5f * lv);
		}
	}
}

void
ltxv_latent_dist_sample(const float *mean, const float *std,
    const float *noise, int64_t n, float *out)
{
	for (int64_t i = 0; i < n; i++) {
		float t = std[i] * noise[i];

		out[i] = mean[i] + t;
	}
}
/* ---- tiled and frame-wise encoding (AutoencoderKLLTXVideo._encode,
 * tiled_encode, _temporal_tiled_encode with the decoder's blend_v / blend_h
 * / blend_t, ltxv_vae_int.h) ---- */

/* One encoder call on x[:, :, f0:f0+nf, h0:h0+nh, w0:w0+nw] (host, clipped
 * as Python slicing clips) into `out` [B, 2C, F', H', W']. */
static enum lq_status
encode_call(struct ltxv_vae_encoder *e, const float *x, const int64_t xs[5],
    int64_t f0, int64_t nf, int64_t h0, int64_t nh, int64_t w0, int64_t nw,
    struct vae_piece *out, struct lq_error *err)
{
	int64_t B = xs[0], C3 = xs[1], F = xs[2], H = xs[3], W = xs[4];
	int64_t cs[5], lat[5];
	struct gpu_buffer *buf = NULL;
	float *sub;
	enum lq_status st;

	nf = f0 + nf > F ? F - f0 : nf;
	nh = h0 + nh > H ? H - h0 : nh;
	nw = w0 + nw > W ? W - w0 : nw;
	cs[0] = B;
	cs[1] = C3;
	cs[2] = nf;
	cs[3] = nh;
	cs[4] = nw;
	if ((st = ltxv_vae_encoder_latent_shape(e, cs, lat, err)))
		return st;
	sub = xmalloc(sizeof(float) * (size_t)(B * C3 * nf * nh * nw));
	for (int64_t b = 0; b < B; b++)
		for (int64_t c = 0; c < C3; c++)
			for (int64_t f = 0; f < nf; f++)
				for (int64_t y = 0; y < nh; y++)
					memcpy(sub + (((b * C3 + c) * nf + f) * nh + y) * nw,
					    x + (((b * C3 + c) * F + f0 + f) * H + h0 + y) * W + w0,
					    sizeof(float) * (size_t)nw);
	ltxv_vae_piece_shape(out, B, 2 * lat[1], lat[2], lat[3], lat[4]);
	st = gpu_buffer_create(e->ctx, sizeof(float) * (size_t)(B * C3 * nf * nh *
	    nw), &buf, err);
	if (st == LQ_OK) {
		struct gpu_tensor t = gpu_tensor_make(buf, 0, GPU_F32, 5, cs);

		if ((st = gpu_tensor_upload_f32(e->ctx, &t, sub, err)) == LQ_OK)
			st = ltxv_vae_encode(e, &t, out->x, NULL, err);
	}
	gpu_buffer_free(buf);
	free(sub);
	return st;
}

/* tiled_encode on frames [f0, f0+nf) of x into `out` (latent units). */
static enum lq_status
spatial_tiled_encode(struct ltxv_vae_encoder *e, const float *x,
    const int64_t xs[5], int64_t f0, int64_t nf,
    const struct ltxv_vae_tiling *t, struct vae_piece *out,
    struct lq_error *err)
{
	int64_t H = xs[3], W = xs[4], s = e->cfg.spatial_compression_ratio;
	int64_t sh = t->tile_sample_stride_height, sw = t->tile_sample_stride_width;
	int64_t rows = (H + sh - 1) / sh, cols = (W + sw - 1) / sw;
	int64_t lsh = sh / s, lsw = sw / s;
	int bh = (int)(t->tile_sample_min_height / s - lsh);
	int bw = (int)(t->tile_sample_min_width / s - lsw);
	struct vae_piece *prev = xcalloc((size_t)cols, sizeof(*prev));
	struct vae_piece *cur = xcalloc((size_t)cols, sizeof(*cur));
	enum lq_status st = LQ_OK;
	int64_t lat_h = H / s, lat_w = W / s;

	for (int64_t i = 0; i < rows && st == LQ_OK; i++) {
		for (int64_t j = 0; j < cols && st == LQ_OK; j++) {
			st = encode_call(e, x, xs, f0, nf, i * sh,
			    t->tile_sample_min_height, j * sw,
			    t->tile_sample_min_width, &cur[j], err);
			if (st != LQ_OK)
				break;
			if (i == 0 && j == 0)
				ltxv_vae_piece_shape(out, cur[0].B, cur[0].C,
				    cur[0].F, lat_h, lat_w);
			if (i > 0)
				ltxv_vae_blend_v(&prev[j], &cur[j], bh);
			if (j > 0)
				ltxv_vae_blend_h(&cur[j - 1], &cur[j], bw);
		}
		/* crop each tile to the stride, concatenate, crop to
		 * H // s x W // s */
		for (int64_t j = 0; j < cols && st == LQ_OK; j++) {
			int64_t y0 = i * lsh, x0 = j * lsw;
			int64_t h = cur[j].H < lsh ? cur[j].H : lsh;
			int64_t w = cur[j].W < lsw ? cur[j].W : lsw;

			if (y0 >= lat_h || x0 >= lat_w)
				continue;
			if (y0 + h > lat_h)
				h = lat_h - y0;
			if (x0 + w > lat_w)
				w = lat_w - x0;
			ltxv_vae_piece_place(out, &cur[j], y0, x0, h, w);
		}
		{
			struct vae_piece *tmp = prev;

			prev = cur;
			cur = tmp;
		}
	}
	for (int64_t j = 0; j < cols; j++) {
		free(prev[j].x);
		free(cur[j].x);
	}
	free(prev);
	free(cur);
	return st;
}

/* tile[:, :, 1:] in place. */
static void
drop_first_frame(struct vae_piece *p)
{
	int64_t hw = p->H * p->W;

	for (int64_t bc = 0; bc < p->B * p->C; bc++)
		memmove(p->x + bc * (p->F - 1) * hw, p->x + (bc * p->F + 1) * hw,
		    sizeof(float) * (size_t)((p->F - 1) * hw));
	p->F -= 1;
	p->Fs = p->F;
}

/* _temporal_tiled_encode: tiles of tile_sample_min_num_frames + 1 frames
 * every tile_sample_stride_num_frames, each spatially tiled when
 * use_tiling and the video exceeds the spatial tile; tiles k >= 1 drop
 * their first latent frame and are blended (blend_t) with the previous,
 * already blended one; tile 0 keeps stride + 1 latent frames, later ones
 * stride; cropped to (F - 1) // r + 1. */
static enum lq_status
temporal_tiled_encode(struct ltxv_vae_encoder *e, const float *x,
    const int64_t xs[5], const struct ltxv_vae_tiling *t,
    struct vae_piece *out, struct lq_error *err)
{
	int64_t F = xs[2], H = xs[3], W = xs[4];
	int64_t r = e->cfg.temporal_compression_ratio;
	int64_t s = e->cfg.spatial_compression_ratio;
	int64_t lat_f = (F - 1) / r + 1, lstr = t->tile_sample_stride_num_frames / r;
	int bf = (int)(t->tile_sample_min_num_frames / r - lstr);
	int spatial = t->use_tiling && (H > t->tile_sample_min_height ||
	    W > t->tile_sample_min_width);
	struct vae_piece a, b, *prev = &a, *cur = &b;
	int64_t fo = 0;
	enum lq_status st = LQ_OK;

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	for (int64_t i = 0, k = 0; i < F && st == LQ_OK;
	    i += t->tile_sample_stride_num_frames, k++) {
		int64_t nf = t->tile_sample_min_num_frames + 1, keep;

		st = spatial ? spatial_tiled_encode(e, x, xs, i, nf, t, cur, err) :
		    encode_call(e, x, xs, i, nf, 0, H, 0, W, cur, err);
		if (st != LQ_OK)
			break;
		if (k == 0)
			ltxv_vae_piece_shape(out, cur->B, cur->C, lat_f, H / s, W / s);
		if (k > 0) {
			drop_first_frame(cur);
			ltxv_vae_blend_t(prev, cur, bf);
		}
		keep = k == 0 ? lstr + 1 : lstr;
		if (keep > cur->F)
			keep = cur->F;
		if (keep > lat_f - fo)
			keep = lat_f - fo;
		for (int64_t n = 0; n < out->B; n++)
			for (int64_t c = 0; c < out->C; c++)
				for (int64_t f = 0; f < keep; f++)
					memcpy(ltxv_vae_piece_at(out, n, c, fo + f, 0, 0),
					    ltxv_vae_piece_at(cur, n, c, f, 0, 0),
					    sizeof(float) * (size_t)(out->H * out->W));
		fo += keep;
		{
			struct vae_piece *tmp = prev;

			prev = cur;
			cur = tmp;
		}
	}
	free(a.x);
	free(b.x);
	return st;
}

enum lq_status
ltxv_vae_encode_tiled(struct ltxv_vae_encoder *e, const float *x,
    const int64_t xs[5], const struct ltxv_vae_tiling *t, float *parameters,
    struct lq_error *err)
{
	struct vae_piece out;
	int64_t lat[5];
	enum lq_status st;

	memset(&out, 0, sizeof(out));
	if ((st = ltxv_vae_encoder_latent_shape(e, xs, lat, err)) ||
	    (t && (st = ltxv_vae_tiling_check(&e->cfg, t, err))))
		return st;
	if (t && t->use_framewise_decoding && xs[2] > t->tile_sample_min_num_frames)
		st = temporal_tiled_encode(e, x, xs, t, &out, err);
	else if (t && t->use_tiling && (xs[4] > t->tile_sample_min_width ||
	    xs[3] > t->tile_sample_min_height))
		st = spatial_tiled_encode(e, x, xs, 0, xs[2], t, &out, err);
	else
		st = encode_call(e, x, xs, 0, xs[2], 0, xs[3], 0, xs[4], &out, err);
	if (st == LQ_OK)
		memcpy(parameters, out.x, sizeof(float) * (size_t)(out.B * out.C *
		    out.F * out.H * out.W));
	free(out.x);
	return st;
}
