/*
 * wan_vae.c — AutoencoderKLWan's decoder and encoder on Vulkan (diffusers
 * models/autoencoders/autoencoder_kl_wan.py: WanCausalConv3d, WanRMS_norm,
 * WanResample, WanResidualBlock, WanAttentionBlock, WanMidBlock, WanUpBlock,
 * WanDecoder3d, WanEncoder3d, AutoencoderKLWan._decode / _encode).
 *
 * Both halves are a flat list of layers (resnets, the mid block's
 * attention, resamplers) between conv_in and norm_out + conv_out, built
 * from the config alone (build()) so that the memory plan, the pool and the
 * run walk the same list.  One chunk runs on five equal activation slots
 * (0 and 1 ping-pong between layers; 2 shortcut / tokens, 3 temporaries,
 * 4 the causal window) carved after the whole-call tensors and the feature
 * caches.
 *
 * The feature cache: every WanCausalConv3d with a temporal kernel runs on a
 * window [cache (K frames) | this chunk's input] with no temporal padding,
 * and keeps the window's last K frames as the next chunk's cache (zeros
 * before the first).  That is upstream's rule in one: its cache_x is the
 * input's last CACHE_T = 2 frames, or the previous cache's last frame and
 * the input's one frame, and frames it lacks are zero padding.  The
 * decoder's upsample3d time_conv skips chunk 0 (upstream's "Rep" marker)
 * and then runs the same rule from a zero cache; the encoder's downsample3d
 * keeps K = 1 frame (its cat of feat_cache[-1:] and the input, unpadded,
 * stride 2) and on chunk 0 only stores it.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "gpu/ops.h"
#include "nn/ltxv_transformer.h"
#include "nn/plan.h"
#include "nn/wan_vae.h"
#include "nn/weights.h"

#define CACHE_T 2		/* upstream's CACHE_T */
#define ENC_CHUNK 4		/* _encode's input frames per chunk after the first */
#define ATTN_MAX_DIM 256	/* ops_attention's head-dim limit; above it (or
				   with LATENTQ_NN_UNFUSED_ATTENTION=1) the
				   mid block's attention is matrix products */

enum { S_A, S_B, S_SC, S_TMP, S_WND, NSLOTS };

enum wan_kind {
	WAN_RES,		/* WanResidualBlock */
	WAN_ATTN,		/* WanAttentionBlock */
	WAN_UP2D, WAN_UP3D,	/* WanResample upsample2d / upsample3d */
	WAN_DOWN2D, WAN_DOWN3D,	/* WanResample downsample2d / downsample3d */
};

struct wan_conv {
	struct gpu_tensor w, b;
	int cache;		/* feature cache index; -1: none */
};

struct wan_layer {
	enum wan_kind kind;
	char path[96];
	int cin, cout;
	struct gpu_tensor g1, g2;		/* WanRMS_norm gammas as [C] */
	struct wan_conv conv1, conv2;		/* resample: Conv2d, time_conv */
	struct wan_conv shortcut;		/* w.buf NULL: identity */
	struct gpu_tensor qkv_w, qkv_b, proj_w, proj_b;
};

struct wan_half {
	struct gpu_ctx *ctx;
	struct wan_vae_config cfg;
	int decoder;
	const char *name;		/* "decoder" / "encoder" */
	int cin, c0, clast, cout;	/* conv_in in -> c0, norm_out clast -> cout */
	int nlayers;
	struct wan_layer *layers;
	int ncache;
	struct wan_conv conv_in, conv_out, quant;
	struct gpu_tensor norm_out_g;
	struct nn_weights *w, *wq;
	struct gpu_cmd *cmd;
	struct gpu_pool *pool;
};

struct wan_vae {
	struct wan_half h;
};

struct wan_vae_encoder {
	struct wan_half h;
};

#define SHAPE(...) ((const int64_t[]){ __VA_ARGS__ })

/* ---- the layer list (from the config alone) ---- */

static struct wan_layer *
add_layer(struct wan_layer *l, int *n, enum wan_kind kind, int cin, int cout,
    const char *fmt, ...) __attribute__((format(printf, 6, 7)));

static struct wan_layer *
add_layer(struct wan_layer *l, int *n, enum wan_kind kind, int cin, int cout,
    const char *fmt, ...)
{
	struct wan_layer *x = &l[(*n)++];
	va_list ap;

	memset(x, 0, sizeof(*x));
	x->kind = kind;
	x->cin = cin;
	x->cout = cout;
	x->conv1.cache = x->conv2.cache = x->shortcut.cache = -1;
	va_start(ap, fmt);
	vsnprintf(x->path, sizeof(x->path), fmt, ap);
	va_end(ap);
	return x;
}

/* Numbers the feature caches in upstream's feat_idx order. */
static void
number_caches(struct wan_half *h)
{
	int k = 0;

	h->conv_in.cache = k++;
	for (int i = 0; i < h->nlayers; i++) {
		struct wan_layer *l = &h->layers[i];

		if (l->kind == WAN_RES) {
			l->conv1.cache = k++;
			l->conv2.cache = k++;
		} else if (l->kind == WAN_UP3D || l->kind == WAN_DOWN3D) {
			l->conv2.cache = k++;
		}
	}
	h->conv_out.cache = k++;
	h->quant.cache = -1;
	h->ncache = k;
}

/* WanMidBlock(dim, num_layers=1): resnet, attention, resnet. */
static void
add_mid(struct wan_half *h, int c)
{
	add_layer(h->layers, &h->nlayers, WAN_RES, c, c,
	    "%s.mid_block.resnets.0", h->name);
	add_layer(h->layers, &h->nlayers, WAN_ATTN, c, c,
	    "%s.mid_block.attentions.0", h->name);
	add_layer(h->layers, &h->nlayers, WAN_RES, c, c,
	    "%s.mid_block.resnets.1", h->name);
}

/*
 * WanDecoder3d.__init__ (decoder) or WanEncoder3d.__init__ (encoder) as a
 * layer list.  Returns 0, or for the encoder the down block index of a
 * WanAttentionBlock that attn_scales asks for, + 1.
 */
static int
build(struct wan_half *h)
{
	const struct wan_vae_config *c = &h->cfg;
	int n = c->n_dim_mult, nrb = c->num_res_blocks;
	int cap = 4 + n * (nrb + 3) * 2;

	h->layers = xcalloc((size_t)cap, sizeof(*h->layers));
	h->nlayers = 0;
	if (h->decoder) {
		int dim = c->decoder_base_dim, dims[DIFFUSERS_MAX_BLOCKS + 1];

		/* dims = [dim * u for u in [dim_mult[-1]] + dim_mult[::-1]] */
		dims[0] = dim * c->dim_mult[n - 1];
		for (int i = 0; i < n; i++)
			dims[i + 1] = dim * c->dim_mult[n - 1 - i];
		h->cin = c->z_dim;
		h->c0 = dims[0];
		add_mid(h, dims[0]);
		for (int i = 0; i < n; i++) {
			int in = i > 0 ? dims[i] / 2 : dims[i], out = dims[i + 1];

			for (int j = 0; j <= nrb; j++)
				add_layer(h->layers, &h->nlayers, WAN_RES,
				    j == 0 ? in : out, out,
				    "decoder.up_blocks.%d.resnets.%d", i, j);
			if (i != n - 1) {
				/* temperal_upsample = temperal_downsample[::-1] */
				int up3 = c->temperal_downsample[
				    c->n_temperal_downsample - 1 - i];

				add_layer(h->layers, &h->nlayers,
				    up3 ? WAN_UP3D : WAN_UP2D, out, out / 2,
				    "decoder.up_blocks.%d.upsamplers.0", i);
			}
		}
		h->clast = dims[n];
		h->cout = c->out_channels;
	} else {
		int dim = c->base_dim, k = 0, in = dim, out = dim;
		double scale = 1.0;

		h->cin = c->in_channels;
		h->c0 = dim;
		for (int i = 0; i < n; i++) {
			in = i == 0 ? dim : dim * c->dim_mult[i - 1];
			out = dim * c->dim_mult[i];
			for (int j = 0; j < nrb; j++) {
				add_layer(h->layers, &h->nlayers, WAN_RES, in, out,
				    "encoder.down_blocks.%d", k++);
				for (int a = 0; a < c->n_attn_scales; a++)
					if (c->attn_scales[a] == scale)
						return k + 1;
				in = out;
			}
			if (i != n - 1) {
				add_layer(h->layers, &h->nlayers,
				    c->temperal_downsample[i] ? WAN_DOWN3D :
				    WAN_DOWN2D, out, out, "encoder.down_blocks.%d",
				    k++);
				scale /= 2.0;
			}
		}
		add_mid(h, out);
		h->clast = out;
		h->cout = 2 * c->z_dim;
	}
	LQ_ASSERT(h->nlayers <= cap);
	number_caches(h);
	return 0;
}

/* ---- shapes: one chunk's walk through the list ---- */

struct walk {
	int64_t B, T, H, W;
	int first;
	int fused;		/* ltxv_attention_opts' fused */
	int64_t slot[NSLOTS];	/* largest tensor each slot holds (elements) */
	int64_t *cache;		/* [ncache] elements, or NULL */
	int64_t scores;		/* one frame's attention scores, unfused */
};

/* A tensor [B, c, t, h, w] in slot `role`; S_A stands for both ping-pong
 * slots (a layer's input and output). */
static void
see(struct walk *k, int role, int64_t c, int64_t t, int64_t h, int64_t w)
{
	int64_t n = k->B * c * t * h * w;

	if (n > k->slot[role])
		k->slot[role] = n;
	if (role == S_A && n > k->slot[S_B])
		k->slot[S_B] = n;
}

/* A cached causal conv over the current T frames with a K-frame cache:
 * its window. */
static void
see_conv(struct walk *k, const struct wan_conv *cv, int K, int64_t cin)
{
	see(k, S_WND, cin, K + k->T, k->H, k->W);
	if (k->cache && cv->cache >= 0)
		k->cache[cv->cache] = k->B * cin * K * k->H * k->W;
}

static enum lq_status
walk_fail(const struct wan_half *h, struct lq_error *err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static enum lq_status
walk_fail(const struct wan_half *h, struct lq_error *err, const char *fmt, ...)
{
	char msg[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return error_set(err, LQ_FAILED, "LQ-NN-SHAPE", "wan vae %s: %s",
	    h->name, msg);
}

/* One chunk of k->T input frames at k->H x k->W through the half; leaves
 * the output's frames / size in k. */
static enum lq_status
walk_chunk(const struct wan_half *h, struct walk *k, struct lq_error *err)
{
	see(k, S_A, h->cin, k->T, k->H, k->W);
	see_conv(k, &h->conv_in, CACHE_T, h->cin);
	see(k, S_A, h->c0, k->T, k->H, k->W);
	for (int i = 0; i < h->nlayers; i++) {
		const struct wan_layer *l = &h->layers[i];

		switch (l->kind) {
		case WAN_RES:
			/* x, y; the shortcut; norm outputs and conv1's */
			see(k, S_A, l->cin, k->T, k->H, k->W);
			see(k, S_A, l->cout, k->T, k->H, k->W);
			see(k, S_SC, l->cout, k->T, k->H, k->W);
			see(k, S_TMP, l->cin, k->T, k->H, k->W);
			see(k, S_TMP, l->cout, k->T, k->H, k->W);
			see_conv(k, &l->conv1, CACHE_T, l->cin);
			see_conv(k, &l->conv2, CACHE_T, l->cout);
			break;
		case WAN_ATTN:
			/* x, y; tokens and the projection; norm and q; k, v
			 * and the output */
			see(k, S_A, l->cin, k->T, k->H, k->W);
			see(k, S_SC, l->cin, k->T, k->H, k->W);
			see(k, S_TMP, l->cin, k->T, k->H, k->W);
			see(k, S_WND, 3 * (int64_t)l->cin, k->T, k->H, k->W);
			if (l->cin > ATTN_MAX_DIM || !k->fused) {
				/* one frame's scores at a time */
				int64_t s = k->H * k->W * k->H * k->W;

				if (s > k->scores)
					k->scores = s;
			}
			break;
		case WAN_UP3D:
			see_conv(k, &l->conv2, CACHE_T, l->cin);
			if (!k->first) {
				/* time_conv's 2C channels; the interleaved frames */
				see(k, S_TMP, 2 * (int64_t)l->cin, k->T, k->H, k->W);
				see(k, S_SC, l->cin, 2 * k->T, k->H, k->W);
				k->T *= 2;
			}
			/* fall through */
		case WAN_UP2D:
			see(k, S_A, l->cin, k->T, k->H, k->W);
			k->H *= 2;
			k->W *= 2;
			/* one frame at a time: upsampled, convolved */
			see(k, S_WND, l->cin, 1, k->H, k->W);
			see(k, S_TMP, l->cout, 1, k->H, k->W);
			see(k, S_A, l->cout, k->T, k->H, k->W);
			break;
		case WAN_DOWN2D:
		case WAN_DOWN3D:
			if (k->H < 2 || k->W < 2)
				return walk_fail(h, err, "%s receives %lld x %lld "
				    "cells; its ZeroPad2d((0, 1, 0, 1)) + 3x3 "
				    "stride-2 conv needs at least 2 x 2 (give the "
				    "video a height and width of at least %d)",
				    l->path, (long long)k->H, (long long)k->W,
				    2 * h->cfg.spatial_ratio);
			see(k, S_A, l->cin, k->T, k->H, k->W);
			k->H = (k->H - 2) / 2 + 1;
			k->W = (k->W - 2) / 2 + 1;
			see(k, S_A, l->cout, k->T, k->H, k->W);
			if (l->kind == WAN_DOWN3D) {
				/* the spatial result, then its time_conv */
				see(k, S_TMP, l->cout, k->T, k->H, k->W);
				see_conv(k, &l->conv2, 1, l->cout);
				if (!k->first) {
					if (k->T < 2)
						return walk_fail(h, err, "%s's "
						    "time_conv receives %lld frame "
						    "of a chunk; its kernel 3, "
						    "stride 2 over [cached frame | "
						    "chunk] needs 2 (upstream "
						    "fails the same): "
						    "temperal_downsample asks "
						    "for more than the 4-frame "
						    "chunks allow", l->path,
						    (long long)k->T);
					k->T = (k->T - 2) / 2 + 1;
				}
			}
			break;
		}
	}
	see(k, S_A, h->clast, k->T, k->H, k->W);
	see_conv(k, &h->conv_out, CACHE_T, h->clast);
	see(k, S_A, h->cout, k->T, k->H, k->W);
	return LQ_OK;
}

/*
 * The pool of one call: the whole-call tensors (decoder: post_quant_conv's
 * output; encoder: the encoder's output and quant_conv's), the feature
 * caches, the five slots and the attention scores, in carving order
 * (bytes, caller frees).  shape: z [B, z_dim, F, H, W] (decoder) or x
 * [B, C, T, H, W] (encoder).  *lat gets the output's frames / size (the
 * decoder's sample, the encoder's latent) and slot[] each slot's
 * elements.
 */
static enum lq_status
carves(const struct wan_half *h, const int64_t shape[5], uint64_t **out,
    int *n, int64_t lat[5], int64_t slot[NSLOTS], struct lq_error *err)
{
	int64_t B = shape[0], F = shape[2], H = shape[3], W = shape[4];
	int64_t *cache = xcalloc((size_t)h->ncache, sizeof(*cache));
	int64_t chunks, Tn = h->decoder ? 1 : ENC_CHUNK, scores = 0;
	int64_t mx[NSLOTS] = { 0 };
	int64_t of = 0, oh = 0, ow = 0;
	struct ltxv_attention_opts att;
	uint64_t *b;
	int k = 0;
	enum lq_status st = LQ_OK;

	chunks = h->decoder ? F : 1 + (F - 1) / ENC_CHUNK;
	ltxv_attention_opts_from_env(&att);
	for (int pass = 0; pass < 2 && st == LQ_OK; pass++) {
		struct walk wk;

		if (pass == 1 && chunks < 2)
			break;
		memset(&wk, 0, sizeof(wk));
		wk.B = B;
		wk.T = pass == 0 ? 1 : Tn;
		wk.H = H;
		wk.W = W;
		wk.first = pass == 0;
		wk.fused = att.fused;
		wk.cache = cache;
		st = walk_chunk(h, &wk, err);
		for (int i = 0; i < NSLOTS; i++)
			if (wk.slot[i] > mx[i])
				mx[i] = wk.slot[i];
		if (wk.scores > scores)
			scores = wk.scores;
		of += pass == 0 ? wk.T : wk.T * (chunks - 1);
		oh = wk.H;
		ow = wk.W;
	}
	if (st != LQ_OK) {
		free(cache);
		return st;
	}
	lat[0] = B;
	lat[1] = h->cout;
	lat[2] = of;
	lat[3] = oh;
	lat[4] = ow;
	b = xmalloc(sizeof(*b) * (size_t)(h->ncache + NSLOTS + 3));
	if (h->decoder) {
		b[k++] = (uint64_t)(B * h->cin * F * H * W) * 4;
	} else {
		b[k++] = (uint64_t)(B * h->cout * of * oh * ow) * 4;
		b[k++] = (uint64_t)(B * h->cout * of * oh * ow) * 4;
	}
	for (int i = 0; i < h->ncache; i++)
		b[k++] = (uint64_t)(cache[i] > 0 ? cache[i] : 1) * 4;
	for (int i = 0; i < NSLOTS; i++) {
		b[k++] = (uint64_t)(mx[i] > 0 ? mx[i] : 1) * 4;
		slot[i] = mx[i] > 0 ? mx[i] : 1;
	}
	if (scores > 0)
		b[k++] = (uint64_t)scores * 4;
	free(cache);
	*out = b;
	*n = k;
	return LQ_OK;
}

/* ---- weights ---- */

static enum lq_status
wget(const struct nn_weights *w, struct gpu_tensor *out, int ndim,
    const int64_t *shape, struct lq_error *err, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

static enum lq_status
wget(const struct nn_weights *w, struct gpu_tensor *out, int ndim,
    const int64_t *shape, struct lq_error *err, const char *fmt, ...)
{
	char name[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(name, sizeof(name), fmt, ap);
	va_end(ap);
	return nn_weights_get(w, name, ndim, shape, out, err);
}

/* `path`.weight [co, ci, kt, kh, kw] (as 5-D; a Conv2d's [co, ci, kh, kw]
 * when kt is 0) and `path`.bias [co]. */
static enum lq_status
conv_get(const struct nn_weights *w, struct wan_conv *c, const char *path,
    int co, int ci, int kt, int kh, struct lq_error *err)
{
	enum lq_status st;

	if (kt == 0) {
		if ((st = wget(w, &c->w, 4, SHAPE(co, ci, kh, kh), err,
		    "%s.weight", path)))
			return st;
		c->w = gpu_tensor_reshape(&c->w, 5, SHAPE(co, ci, 1, kh, kh));
	} else if ((st = wget(w, &c->w, 5, SHAPE(co, ci, kt, kh, kh), err,
	    "%s.weight", path))) {
		return st;
	}
	return wget(w, &c->b, 1, SHAPE(co), err, "%s.bias", path);
}

/* WanRMS_norm gamma [C, 1, 1, 1] (images=False) or [C, 1, 1] as [C]. */
static enum lq_status
gamma_get(const struct nn_weights *w, struct gpu_tensor *g, int C, int images,
    const char *path, struct lq_error *err)
{
	enum lq_status st;

	if (images)
		st = wget(w, g, 3, SHAPE(C, 1, 1), err, "%s.gamma", path);
	else
		st = wget(w, g, 4, SHAPE(C, 1, 1, 1), err, "%s.gamma", path);
	if (st == LQ_OK)
		*g = gpu_tensor_reshape(g, 1, SHAPE(C));
	return st;
}

static enum lq_status
load_layers(struct wan_half *h, struct lq_error *err)
{
	const struct nn_weights *w = h->w;
	char p[160];
	enum lq_status st;
	const char *q = h->decoder ? "post_quant_conv" : "quant_conv";
	int zq = h->decoder ? h->cfg.z_dim : 2 * h->cfg.z_dim;

	snprintf(p, sizeof(p), "%s.conv_in", h->name);
	if ((st = conv_get(w, &h->conv_in, p, h->c0, h->cin, 3, 3, err)))
		return st;
	for (int i = 0; i < h->nlayers; i++) {
		struct wan_layer *l = &h->layers[i];
		int C = l->cin;

		switch (l->kind) {
		case WAN_RES:
			snprintf(p, sizeof(p), "%s.norm1", l->path);
			if ((st = gamma_get(w, &l->g1, l->cin, 0, p, err)))
				return st;
			snprintf(p, sizeof(p), "%s.norm2", l->path);
			if ((st = gamma_get(w, &l->g2, l->cout, 0, p, err)))
				return st;
			snprintf(p, sizeof(p), "%s.conv1", l->path);
			if ((st = conv_get(w, &l->conv1, p, l->cout, l->cin, 3,
			    3, err)))
				return st;
			snprintf(p, sizeof(p), "%s.conv2", l->path);
			if ((st = conv_get(w, &l->conv2, p, l->cout, l->cout, 3,
			    3, err)))
				return st;
			snprintf(p, sizeof(p), "%s.conv_shortcut", l->path);
			if (l->cin != l->cout && (st = conv_get(w, &l->shortcut,
			    p, l->cout, l->cin, 1, 1, err)))
				return st;
			break;
		case WAN_ATTN:
			snprintf(p, sizeof(p), "%s.norm", l->path);
			if ((st = gamma_get(w, &l->g1, C, 1, p, err)) ||
			    (st = wget(w, &l->qkv_w, 4, SHAPE(3 * C, C, 1, 1),
			    err, "%s.to_qkv.weight", l->path)) ||
			    (st = wget(w, &l->qkv_b, 1, SHAPE(3 * C), err,
			    "%s.to_qkv.bias", l->path)) ||
			    (st = wget(w, &l->proj_w, 4, SHAPE(C, C, 1, 1), err,
			    "%s.proj.weight", l->path)) ||
			    (st = wget(w, &l->proj_b, 1, SHAPE(C), err,
			    "%s.proj.bias", l->path)))
				return st;
			l->qkv_w = gpu_tensor_reshape(&l->qkv_w, 2, SHAPE(3 * C, C));
			l->proj_w = gpu_tensor_reshape(&l->proj_w, 2, SHAPE(C, C));
			break;
		case WAN_UP2D:
		case WAN_UP3D:
		case WAN_DOWN2D:
		case WAN_DOWN3D:
			snprintf(p, sizeof(p), "%s.resample.1", l->path);
			if ((st = conv_get(w, &l->conv1, p, l->cout, C, 0, 3, err)))
				return st;
			snprintf(p, sizeof(p), "%s.time_conv", l->path);
			if (l->kind == WAN_UP3D && (st = conv_get(w, &l->conv2, p,
			    2 * C, C, 3, 1, err)))
				return st;
			if (l->kind == WAN_DOWN3D && (st = conv_get(w, &l->conv2,
			    p, C, C, 3, 1, err)))
				return st;
			break;
		}
	}
	snprintf(p, sizeof(p), "%s.norm_out", h->name);
	if ((st = gamma_get(w, &h->norm_out_g, h->clast, 0, p, err)))
		return st;
	snprintf(p, sizeof(p), "%s.conv_out", h->name);
	if ((st = conv_get(w, &h->conv_out, p, h->cout, h->clast, 3, 3, err)))
		return st;
	return conv_get(h->wq, &h->quant, q, zq, zq, 1, 1, err);
}

static void
half_free(struct wan_half *h)
{
	gpu_cmd_free(h->cmd);
	gpu_pool_free(h->pool);
	nn_weights_free(h->w);
	nn_weights_free(h->wq);
	free(h->layers);
}

int
wan_vae_is_wan(const char *dir)
{
	char *path = xasprintf("%s/config.json", dir);
	cJSON *j = NULL;
	const cJSON *v;
	int yes = 0;

	if (diffusers_load_json(path, &j, NULL) == LQ_OK) {
		v = cJSON_GetObjectItemCaseSensitive(j, "_class_name");
		yes = cJSON_IsString(v) && strcmp(v->valuestring,
		    "AutoencoderKLWan") == 0;
	}
	cJSON_Delete(j);
	free(path);
	return yes;
}

static enum lq_status
half_load(struct gpu_ctx *ctx, const char *dir, int decoder,
    struct wan_half *h, struct lq_error *err)
{
	char *path = xasprintf("%s/config.json", dir);
	cJSON *root = NULL;
	enum lq_status st;
	int attn;

	memset(h, 0, sizeof(*h));
	h->ctx = ctx;
	h->decoder = decoder;
	h->name = decoder ? "decoder" : "encoder";
	st = diffusers_load_json(path, &root, err);
	if (st == LQ_OK)
		st = diffusers_parse_wan_vae(root, path, &h->cfg, err);
	cJSON_Delete(root);
	if (st == LQ_OK && (attn = build(h)) != 0) {
		st = error_set(err, LQ_FAILED, "LQ-MODEL-006", "%s: attn_scales "
		    "puts a WanAttentionBlock after encoder.down_blocks.%d; "
		    "upstream's chunked encode calls it with the feature cache, "
		    "which WanAttentionBlock.forward does not take (the encode "
		    "fails there); Wan 2.1 has attn_scales []", path, attn - 2);
		error_set_where(err, path, 0, 0);
		error_set_field(err, "attn_scales");
	}
	free(path);
	if (st == LQ_OK)
		st = nn_weights_load(ctx, dir, decoder ? "decoder." : "encoder.",
		    &h->w, err);
	if (st == LQ_OK)
		st = nn_weights_load(ctx, dir, decoder ? "post_quant_conv." :
		    "quant_conv.", &h->wq, err);
	if (st == LQ_OK)
		st = load_layers(h, err);
	if (st == LQ_OK)
		st = gpu_cmd_create(ctx, &h->cmd, err);
	if (st != LQ_OK)
		half_free(h);
	return st;
}

enum lq_status
wan_vae_load(struct gpu_ctx *ctx, const char *dir, struct wan_vae **out,
    struct lq_error *err)
{
	struct wan_vae *v = xcalloc(1, sizeof(*v));
	enum lq_status st = half_load(ctx, dir, 1, &v->h, err);

	*out = NULL;
	if (st != LQ_OK) {
		free(v);
		return st;
	}
	*out = v;
	return LQ_OK;
}

void
wan_vae_free(struct wan_vae *v)
{
	if (v == NULL)
		return;
	half_free(&v->h);
	free(v);
}

const struct wan_vae_config *
wan_vae_config(const struct wan_vae *v)
{
	return &v->h.cfg;
}

enum lq_status
wan_vae_encoder_load(struct gpu_ctx *ctx, const char *dir,
    struct wan_vae_encoder **out, struct lq_error *err)
{
	struct wan_vae_encoder *e = xcalloc(1, sizeof(*e));
	enum lq_status st = half_load(ctx, dir, 0, &e->h, err);

	*out = NULL;
	if (st != LQ_OK) {
		free(e);
		return st;
	}
	*out = e;
	return LQ_OK;
}

void
wan_vae_encoder_free(struct wan_vae_encoder *e)
{
	if (e == NULL)
		return;
	half_free(&e->h);
	free(e);
}

const struct wan_vae_config *
wan_vae_encoder_config(const struct wan_vae_encoder *e)
{
	return &e->h.cfg;
}

void
wan_vae_output_shape(const struct wan_vae_config *c, const int64_t z[5],
    int64_t out[5])
{
	out[0] = z[0];
	out[1] = c->out_channels;
	out[2] = 1 + (int64_t)c->temporal_ratio * (z[2] - 1);
	out[3] = z[3] * c->spatial_ratio;
	out[4] = z[4] * c->spatial_ratio;
}

static void
memory(const struct wan_half *h, size_t *weights, size_t *cap, size_t *peak)
{
	*weights = nn_weights_device_bytes(h->w) + nn_weights_device_bytes(h->wq);
	*cap = h->pool ? gpu_pool_capacity(h->pool) : 0;
	*peak = h->pool ? gpu_pool_peak(h->pool) : 0;
}

void
wan_vae_memory(const struct wan_vae *v, size_t *weights, size_t *cap,
    size_t *peak)
{
	memory(&v->h, weights, cap, peak);
}

void
wan_vae_encoder_memory(const struct wan_vae_encoder *e, size_t *weights,
    size_t *cap, size_t *peak)
{
	memory(&e->h, weights, cap, peak);
}

/* ---- one chunk on the device ---- */

struct run {
	struct wan_half *h;
	struct gpu_cmd *cmd;
	struct gpu_tensor slot[NSLOTS];
	struct gpu_tensor *cache;	/* [ncache], flat */
	struct gpu_tensor scores;
	int64_t B;
	int first;
	int fused;		/* ops_attention (ltxv_attention_opts) */
};

static struct gpu_tensor
view5(const struct gpu_tensor *t, int64_t B, int64_t C, int64_t F, int64_t H,
    int64_t W)
{
	LQ_ASSERT(B * C * F * H * W <= gpu_tensor_numel(t));
	return gpu_tensor_make(t->buf, t->offset, GPU_F32, 5,
	    SHAPE(B, C, F, H, W));
}

/* A contiguous view of `shape` starting `at` elements into t. */
static struct gpu_tensor
viewn(const struct gpu_tensor *t, int64_t at, int ndim, const int64_t *shape)
{
	struct gpu_tensor v = gpu_tensor_make(t->buf, t->offset +
	    (size_t)at * sizeof(float), GPU_F32, ndim, shape);

	LQ_ASSERT(at + gpu_tensor_numel(&v) <= gpu_tensor_numel(t));
	return v;
}

/* WanRMS_norm: F.normalize(x, dim=1) * sqrt(C) * gamma, i.e.
 * x / sqrt(mean_c(x^2)) * gamma; upstream's max(||x||, 1e-12) floor as
 * the mean-of-squares eps (1e-24 / C). */
static enum lq_status
l2norm(struct run *r, const struct gpu_tensor *y, const struct gpu_tensor *x,
    const struct gpu_tensor *g, int C)
{
	return ops_rms_norm_channels(r->cmd, y, x, g, (float)(1e-24 / C));
}

/*
 * WanCausalConv3d with the feature cache: x [B, cin, T, H, W] ->
 * y [B, cout, To, H', W'] over the window [cache (K frames) | x], whose
 * last K frames become the cache.  kt 3 or 1 (time_conv: spatial kernel
 * 1); stride_t 1 or 2; do_conv 0 only updates the cache.
 */
static enum lq_status
conv_cached(struct run *r, const struct wan_conv *c, int K, int64_t cin,
    const struct gpu_tensor *x, const struct gpu_tensor *y, int spatial,
    int stride_t, int do_conv)
{
	int64_t T = x->shape[2], H = x->shape[3], W = x->shape[4];
	struct gpu_tensor wnd = view5(&r->slot[S_WND], r->B, cin, K + T, H, W);
	struct gpu_tensor cache = view5(&r->cache[c->cache], r->B, cin, K, H, W);
	struct gpu_tensor w0 = gpu_tensor_slice(&wnd, 2, 0, K);
	struct gpu_tensor w1 = gpu_tensor_slice(&wnd, 2, K, T);
	struct gpu_tensor wl = gpu_tensor_slice(&wnd, 2, T, K);
	struct ops_conv3d_params p;
	enum lq_status st;

	if ((st = ops_copy(r->cmd, &w0, &cache)) ||
	    (st = ops_copy(r->cmd, &w1, x)) ||
	    (st = ops_copy(r->cmd, &cache, &wl)))
		return st;
	if (!do_conv)
		return LQ_OK;
	memset(&p, 0, sizeof(p));
	p.stride[0] = stride_t;
	p.stride[1] = p.stride[2] = 1;
	p.pad_h[0] = p.pad_h[1] = p.pad_w[0] = p.pad_w[1] = spatial ? 1 : 0;
	p.t_mode = p.s_mode = OPS_PAD_ZERO;
	return ops_conv3d(r->cmd, y, &wnd, &c->w, &c->b, &p);
}

/* WanResidualBlock.forward, slot xs -> slot ys. */
static enum lq_status
res_forward(struct run *r, const struct wan_layer *l, int xs, int ys,
    int64_t T, int64_t H, int64_t W)
{
	struct gpu_cmd *cmd = r->cmd;
	struct gpu_tensor x = view5(&r->slot[xs], r->B, l->cin, T, H, W);
	struct gpu_tensor y = view5(&r->slot[ys], r->B, l->cout, T, H, W);
	struct gpu_tensor t1 = view5(&r->slot[S_TMP], r->B, l->cin, T, H, W);
	struct gpu_tensor t2 = view5(&r->slot[S_TMP], r->B, l->cout, T, H, W);
	struct gpu_tensor h = x;
	enum lq_status st;

	if (l->shortcut.w.buf != NULL) {
		struct ops_conv3d_params p1;

		memset(&p1, 0, sizeof(p1));
		h = view5(&r->slot[S_SC], r->B, l->cout, T, H, W);
		if ((st = ops_conv3d(cmd, &h, &x, &l->shortcut.w,
		    &l->shortcut.b, &p1)))
			return st;
	}
	if ((st = l2norm(r, &t1, &x, &l->g1, l->cin)) ||
	    (st = ops_silu(cmd, &t1, &t1)) ||
	    (st = conv_cached(r, &l->conv1, CACHE_T, l->cin, &t1, &t2, 1, 1, 1)) ||
	    (st = l2norm(r, &t2, &t2, &l->g2, l->cout)) ||
	    (st = ops_silu(cmd, &t2, &t2)) ||
	    (st = conv_cached(r, &l->conv2, CACHE_T, l->cout, &t2, &y, 1, 1, 1)))
		return st;
	return ops_add(cmd, &y, &y, &h);
}

/*
 * WanAttentionBlock.forward, slot xs -> slot ys: per frame, one head over
 * the H*W positions with C channels (scale 1/sqrt(C)), residual.  q, k, v
 * come from to_qkv's three row blocks; SDPA by ops_attention up to its
 * head-dim limit, else scores, softmax and a second product.
 */
static enum lq_status
attn_forward(struct run *r, const struct wan_layer *l, int xs, int ys,
    int64_t T, int64_t H, int64_t W)
{
	static const int to_tok[5] = { 0, 2, 3, 4, 1 };
	static const int from_tok[5] = { 0, 4, 1, 2, 3 };
	struct gpu_cmd *cmd = r->cmd;
	int64_t C = l->cin, N = H * W, BT = r->B * T, n = BT * N * C;
	struct gpu_tensor x = view5(&r->slot[xs], r->B, C, T, H, W);
	struct gpu_tensor y = view5(&r->slot[ys], r->B, C, T, H, W);
	struct gpu_tensor xn = view5(&r->slot[S_TMP], r->B, C, T, H, W);
	struct gpu_tensor tok5 = viewn(&r->slot[S_SC], 0, 5, SHAPE(r->B, T, H, W, C));
	struct gpu_tensor tok = viewn(&r->slot[S_SC], 0, 3, SHAPE(BT, N, C));
	struct gpu_tensor q = viewn(&r->slot[S_TMP], 0, 3, SHAPE(BT, N, C));
	struct gpu_tensor k = viewn(&r->slot[S_WND], 0, 3, SHAPE(BT, N, C));
	struct gpu_tensor v = viewn(&r->slot[S_WND], n, 3, SHAPE(BT, N, C));
	struct gpu_tensor o = viewn(&r->slot[S_WND], 2 * n, 3, SHAPE(BT, N, C));
	struct gpu_tensor pr = viewn(&r->slot[S_SC], 0, 3, SHAPE(BT, N, C));
	struct gpu_tensor pr5 = viewn(&r->slot[S_SC], 0, 5, SHAPE(r->B, T, H, W, C));
	struct gpu_tensor xp = gpu_tensor_permute(&xn, to_tok);
	struct gpu_tensor pp = gpu_tensor_permute(&pr5, from_tok);
	struct gpu_tensor wq = gpu_tensor_slice(&l->qkv_w, 0, 0, C);
	struct gpu_tensor wk = gpu_tensor_slice(&l->qkv_w, 0, C, C);
	struct gpu_tensor wv = gpu_tensor_slice(&l->qkv_w, 0, 2 * C, C);
	struct gpu_tensor bq = gpu_tensor_slice(&l->qkv_b, 0, 0, C);
	struct gpu_tensor bk = gpu_tensor_slice(&l->qkv_b, 0, C, C);
	struct gpu_tensor bv = gpu_tensor_slice(&l->qkv_b, 0, 2 * C, C);
	float scale = (float)(1.0 / sqrt((double)C));
	enum lq_status st;

	if ((st = l2norm(r, &xn, &x, &l->g1, (int)C)) ||
	    (st = ops_copy(cmd, &tok5, &xp)) ||
	    (st = ops_linear(cmd, &q, &tok, &wq, &bq, OPS_ACT_NONE)) ||
	    (st = ops_linear(cmd, &k, &tok, &wk, &bk, OPS_ACT_NONE)) ||
	    (st = ops_linear(cmd, &v, &tok, &wv, &bv, OPS_ACT_NONE)))
		return st;
	if (C <= ATTN_MAX_DIM && r->fused) {
		struct ops_attention_args a;

		memset(&a, 0, sizeof(a));
		a.heads = 1;
		a.scale = scale;
		st = ops_attention(cmd, &o, &q, &k, &v, &a);
	} else {
		/* frame by frame: scores [N, N], softmax, scores . v */
		struct gpu_tensor s = viewn(&r->scores, 0, 2, SHAPE(N, N));

		for (int64_t f = 0; f < BT && st == LQ_OK; f++) {
			struct gpu_tensor qf = viewn(&q, f * N * C, 2, SHAPE(N, C));
			struct gpu_tensor kf = viewn(&k, f * N * C, 2, SHAPE(N, C));
			struct gpu_tensor vf = viewn(&v, f * N * C, 2, SHAPE(N, C));
			struct gpu_tensor of = viewn(&o, f * N * C, 2, SHAPE(N, C));

			if ((st = ops_matmul(cmd, &s, &qf, &kf, 1, scale)) ==
			    LQ_OK && (st = ops_softmax(cmd, &s, &s)) == LQ_OK)
				st = ops_matmul(cmd, &of, &s, &vf, 0, 1.0f);
		}
	}
	if (st != LQ_OK ||
	    (st = ops_linear(cmd, &pr, &o, &l->proj_w, &l->proj_b, OPS_ACT_NONE)))
		return st;
	return ops_add(cmd, &y, &x, &pp);
}

/* nearest-exact x2 (for an exact factor 2: source row / column d / 2) of
 * one frame: x [B, C, 1, H, W], a frame of a contiguous [B, C, T, H, W]
 * (x->stride[1] = T*H*W), -> y [B, C, 1, 2H, 2W] contiguous, as one
 * broadcast copy over [B*C, H, 2, W, 2]. */
static enum lq_status
upsample_nearest2(struct run *r, const struct gpu_tensor *y,
    const struct gpu_tensor *x)
{
	int64_t BC = x->shape[0] * x->shape[1], H = x->shape[3], W = x->shape[4];
	struct gpu_tensor d = gpu_tensor_make(y->buf, y->offset, GPU_F32, 5,
	    SHAPE(BC, H, 2, W, 2));
	struct gpu_tensor s = gpu_tensor_make(x->buf, x->offset, GPU_F32, 5,
	    SHAPE(BC, H, 2, W, 2));

	LQ_ASSERT(x->shape[0] == 1 || x->stride[0] == x->shape[1] * x->stride[1]);
	s.stride[0] = x->stride[1];
	s.stride[1] = W;
	s.stride[2] = 0;
	s.stride[3] = 1;
	s.stride[4] = 0;
	return ops_copy(r->cmd, &d, &s);
}

/* WanResample.forward, slot xs -> slot ys; updates *T, *H, *W. */
static enum lq_status
resample_forward(struct run *r, const struct wan_layer *l, int xs, int ys,
    int64_t *T, int64_t *H, int64_t *W)
{
	struct gpu_cmd *cmd = r->cmd;
	int64_t C = l->cin, B = r->B;
	struct gpu_tensor x = view5(&r->slot[xs], B, C, *T, *H, *W);
	struct ops_conv3d_params p;
	enum lq_status st;

	memset(&p, 0, sizeof(p));
	if (l->kind == WAN_UP2D || l->kind == WAN_UP3D) {
		struct gpu_tensor up, y;

		if (l->kind == WAN_UP3D && !r->first) {
			/* time_conv to 2C channels; channel k*C + c is frame
			 * 2t + k of channel c */
			int64_t t = *T, hw = *H * *W;
			struct gpu_tensor tc = view5(&r->slot[S_TMP], B, 2 * C,
			    t, *H, *W);
			struct gpu_tensor xi = view5(&r->slot[S_SC], B, C, 2 * t,
			    *H, *W);

			if ((st = conv_cached(r, &l->conv2, CACHE_T, C, &x, &tc,
			    0, 1, 1)))
				return st;
			for (int k = 0; k < 2; k++) {
				struct gpu_tensor d = gpu_tensor_make(xi.buf,
				    xi.offset + (size_t)(k * hw) * sizeof(float),
				    GPU_F32, 4, SHAPE(B, C, t, hw));
				struct gpu_tensor s = gpu_tensor_make(tc.buf,
				    tc.offset + (size_t)(k * C * t * hw) *
				    sizeof(float), GPU_F32, 4, SHAPE(B, C, t, hw));

				d.stride[0] = C * 2 * t * hw;
				d.stride[1] = 2 * t * hw;
				d.stride[2] = 2 * hw;
				s.stride[0] = 2 * C * t * hw;
				if ((st = ops_copy(cmd, &d, &s)))
					return st;
			}
			x = xi;
			*T *= 2;
		}
		/* frame by frame (upstream's Conv2d over b*t frames): the
		 * upsampled frame at C channels is the decoder's largest
		 * tensor otherwise */
		up = view5(&r->slot[S_WND], B, C, 1, 2 * *H, 2 * *W);
		y = view5(&r->slot[ys], B, l->cout, *T, 2 * *H, 2 * *W);
		p.pad_h[0] = p.pad_h[1] = p.pad_w[0] = p.pad_w[1] = 1;
		for (int64_t t = 0; t < *T; t++) {
			struct gpu_tensor xf = gpu_tensor_slice(&x, 2, t, 1);
			struct gpu_tensor yt = view5(&r->slot[S_TMP], B, l->cout,
			    1, 2 * *H, 2 * *W);
			struct gpu_tensor yf = gpu_tensor_slice(&y, 2, t, 1);

			if ((st = upsample_nearest2(r, &up, &xf)) ||
			    (st = ops_conv3d(cmd, &yt, &up, &l->conv1.w,
			    &l->conv1.b, &p)) ||
			    (st = ops_copy(cmd, &yf, &yt)))
				return st;
		}
		*H *= 2;
		*W *= 2;
		return LQ_OK;
	} else {
		/* ZeroPad2d((0, 1, 0, 1)) + Conv2d(3, stride 2), per frame */
		int64_t Ho = (*H - 2) / 2 + 1, Wo = (*W - 2) / 2 + 1;
		struct gpu_tensor y = view5(&r->slot[ys], B, C, *T, Ho, Wo);
		struct gpu_tensor d = l->kind == WAN_DOWN3D ?
		    view5(&r->slot[S_TMP], B, C, *T, Ho, Wo) : y;

		p.stride[1] = p.stride[2] = 2;
		p.pad_h[1] = p.pad_w[1] = 1;
		*H = Ho;
		*W = Wo;
		if ((st = ops_conv3d(cmd, &d, &x, &l->conv1.w, &l->conv1.b, &p)))
			return st;
		if (l->kind == WAN_DOWN2D)
			return LQ_OK;
		if (r->first) {
			/* chunk 0: the frames pass; the last one is cached */
			if ((st = conv_cached(r, &l->conv2, 1, C, &d, NULL, 0, 2,
			    0)))
				return st;
			return ops_copy(cmd, &y, &d);
		}
		y = view5(&r->slot[ys], B, C, (*T - 2) / 2 + 1, Ho, Wo);
		*T = (*T - 2) / 2 + 1;
		return conv_cached(r, &l->conv2, 1, C, &d, &y, 0, 2, 1);
	}
}

/*
 * WanDecoder3d.forward / WanEncoder3d.forward on one chunk in slot S_A
 * [B, cin, T, H, W]; *out_slot gets the slot of the [B, cout, T', H', W']
 * result and T, H, W its size.
 */
static enum lq_status
chunk_forward(struct run *r, int64_t *T, int64_t *H, int64_t *W, int *out_slot)
{
	struct wan_half *h = r->h;
	struct gpu_tensor x = view5(&r->slot[S_A], r->B, h->cin, *T, *H, *W);
	struct gpu_tensor y = view5(&r->slot[S_B], r->B, h->c0, *T, *H, *W);
	int s = S_B;
	enum lq_status st;

	if ((st = conv_cached(r, &h->conv_in, CACHE_T, h->cin, &x, &y, 1, 1, 1)))
		return st;
	for (int i = 0; i < h->nlayers; i++) {
		const struct wan_layer *l = &h->layers[i];
		int d = s == S_A ? S_B : S_A;

		if (l->kind == WAN_RES)
			st = res_forward(r, l, s, d, *T, *H, *W);
		else if (l->kind == WAN_ATTN)
			st = attn_forward(r, l, s, d, *T, *H, *W);
		else
			st = resample_forward(r, l, s, d, T, H, W);
		if (st != LQ_OK)
			return st;
		s = d;
	}
	x = view5(&r->slot[s], r->B, h->clast, *T, *H, *W);
	y = view5(&r->slot[s == S_A ? S_B : S_A], r->B, h->cout, *T, *H, *W);
	if ((st = l2norm(r, &x, &x, &h->norm_out_g, h->clast)) ||
	    (st = ops_silu(r->cmd, &x, &x)) ||
	    (st = conv_cached(r, &h->conv_out, CACHE_T, h->clast, &x, &y, 1, 1,
	    1)))
		return st;
	*out_slot = s == S_A ? S_B : S_A;
	return LQ_OK;
}

/*
 * Sizes the pool for a call of `shape` (carves()), carves the whole-call
 * tensors into big[] (decoder 1, encoder 2), the caches (zeroed) and the
 * slots into r.  Returns the pool mark to reset to.
 */
static enum lq_status
prepare(struct wan_half *h, const int64_t shape[5], struct run *r,
    struct gpu_tensor big[2], int64_t lat[5], size_t *mark,
    struct lq_error *err)
{
	uint64_t *b = NULL, need;
	int n, k = 0, nbig = h->decoder ? 1 : 2;
	int64_t slot[NSLOTS];
	enum lq_status st;

	if ((st = carves(h, shape, &b, &n, lat, slot, err)))
		return st;
	need = gpu_pool_plan(gpu_ctx_caps(h->ctx), b, n);
	if (h->pool == NULL || gpu_pool_capacity(h->pool) < need) {
		gpu_pool_free(h->pool);
		h->pool = NULL;
		if ((st = gpu_pool_create(h->ctx, (size_t)need, &h->pool, err))) {
			free(b);
			return st;
		}
	}
	memset(r, 0, sizeof(*r));
	r->h = h;
	r->cmd = h->cmd;
	r->B = shape[0];
	{
		struct ltxv_attention_opts att;

		ltxv_attention_opts_from_env(&att);
		r->fused = att.fused;
	}
	r->cache = xcalloc((size_t)h->ncache, sizeof(*r->cache));
	*mark = gpu_pool_mark(h->pool);
	for (int i = 0; i < nbig && st == LQ_OK; i++, k++)
		st = gpu_pool_tensor(h->pool, GPU_F32, 1, SHAPE((int64_t)(b[k] / 4)),
		    &big[i], err);
	for (int i = 0; i < h->ncache && st == LQ_OK; i++, k++)
		st = gpu_pool_tensor(h->pool, GPU_F32, 1, SHAPE((int64_t)(b[k] / 4)),
		    &r->cache[i], err);
	for (int i = 0; i < NSLOTS && st == LQ_OK; i++, k++)
		st = gpu_pool_tensor(h->pool, GPU_F32, 1, SHAPE(slot[i]), &r->slot[i],
		    err);
	if (st == LQ_OK && k < n)
		st = gpu_pool_tensor(h->pool, GPU_F32, 1, SHAPE((int64_t)(b[k] / 4)),
		    &r->scores, err);
	free(b);
	gpu_cmd_begin(h->cmd);
	for (int i = 0; i < h->ncache && st == LQ_OK; i++)
		st = ops_fill(h->cmd, &r->cache[i], 0.0f);
	return st;
}

static void
finish(struct wan_half *h, struct run *r, size_t mark, enum lq_status st,
    struct lq_error *err)
{
	if (st != LQ_OK && err != NULL && err->status == LQ_OK)
		(void)gpu_cmd_status(h->cmd, err);
	free(r->cache);
	r->cache = NULL;
	if (h->pool)
		gpu_pool_reset(h->pool, mark);
}

static enum lq_status
shape_check(const struct wan_half *h, const struct gpu_tensor *t,
    const char *what, struct lq_error *err)
{
	if (t->ndim != 5 || t->shape[1] != h->cin)
		return walk_fail(h, err, "%s must be [B, %d, F, H, W], not %d-D "
		    "with %lld channels", what, h->cin, t->ndim,
		    (long long)(t->ndim > 1 ? t->shape[1] : 0));
	return LQ_OK;
}

#define OP(x) do { if ((st = (x)) != LQ_OK) goto out; } while (0)

enum lq_status
wan_vae_decode(struct wan_vae *v, const struct gpu_tensor *z,
    const struct gpu_tensor *sample, const struct nn_dump *dump,
    struct lq_error *err)
{
	struct wan_half *h = &v->h;
	struct gpu_cmd *cmd = h->cmd;
	struct run r;
	struct gpu_tensor big[2], pq;
	int64_t lat[5], oshape[5], B, F, H, W, f0 = 0;
	size_t mark = 0;
	char name[64];
	enum lq_status st;

	memset(&r, 0, sizeof(r));
	if ((st = shape_check(h, z, "z", err)))
		return st;
	wan_vae_output_shape(&h->cfg, z->shape, oshape);
	if (sample->ndim != 5 || memcmp(sample->shape, oshape,
	    sizeof(oshape)) != 0)
		return walk_fail(h, err, "the sample must be [%lld, %lld, %lld, "
		    "%lld, %lld]", (long long)oshape[0], (long long)oshape[1],
		    (long long)oshape[2], (long long)oshape[3],
		    (long long)oshape[4]);
	B = z->shape[0];
	F = z->shape[2];
	H = z->shape[3];
	W = z->shape[4];
	if ((st = prepare(h, z->shape, &r, big, lat, &mark, err)))
		goto out;
	/* post_quant_conv (1x1x1) on the whole latent */
	pq = view5(&big[0], B, h->cin, F, H, W);
	{
		struct ops_conv3d_params p1;

		memset(&p1, 0, sizeof(p1));
		OP(ops_conv3d(cmd, &pq, z, &h->quant.w, &h->quant.b, &p1));
	}
	OP(nn_dump_tensor(dump, cmd, "post_quant_conv", &pq, err));
	for (int64_t i = 0; i < F; i++) {
		int64_t T = 1, Hc = H, Wc = W;
		int os;
		struct gpu_tensor in = view5(&r.slot[S_A], B, h->cin, 1, H, W);
		struct gpu_tensor src = gpu_tensor_slice(&pq, 2, i, 1);
		struct gpu_tensor o, dst;

		r.first = i == 0;
		OP(ops_copy(cmd, &in, &src));
		OP(chunk_forward(&r, &T, &Hc, &Wc, &os));
		o = view5(&r.slot[os], B, h->cout, T, Hc, Wc);
		snprintf(name, sizeof(name), "decoder_chunk%lld_preclamp",
		    (long long)i);
		OP(nn_dump_tensor(dump, cmd, name, &o, err));
		dst = gpu_tensor_slice(sample, 2, f0, T);
		OP(ops_clamp(cmd, &dst, &o, -1.0f, 1.0f));
		f0 += T;
		OP(gpu_cmd_submit(cmd, err));
		gpu_cmd_begin(cmd);
	}
	LQ_ASSERT(f0 == oshape[2]);
	OP(gpu_cmd_submit(cmd, err));
out:
	finish(h, &r, mark, st, err);
	return st;
}

enum lq_status
wan_vae_decode_host(struct wan_vae *v, const float *z, const int64_t zs[5],
    float *sample, struct lq_error *err)
{
	struct gpu_buffer *bz = NULL, *bo = NULL;
	struct gpu_tensor tz, to;
	int64_t os[5];
	enum lq_status st;

	wan_vae_output_shape(&v->h.cfg, zs, os);
	st = gpu_buffer_create(v->h.ctx, sizeof(float) * (size_t)(zs[0] * zs[1] *
	    zs[2] * zs[3] * zs[4]), &bz, err);
	if (st == LQ_OK)
		st = gpu_buffer_create(v->h.ctx, sizeof(float) * (size_t)(os[0] *
		    os[1] * os[2] * os[3] * os[4]), &bo, err);
	if (st == LQ_OK) {
		tz = gpu_tensor_make(bz, 0, GPU_F32, 5, zs);
		to = gpu_tensor_make(bo, 0, GPU_F32, 5, os);
		st = gpu_tensor_upload_f32(v->h.ctx, &tz, z, err);
	}
	if (st == LQ_OK)
		st = wan_vae_decode(v, &tz, &to, NULL, err);
	if (st == LQ_OK)
		st = gpu_tensor_download_f32(v->h.ctx, &to, sample, err);
	gpu_buffer_free(bz);
	gpu_buffer_free(bo);
	return st;
}

enum lq_status
wan_vae_encoder_latent_shape(const struct wan_vae_encoder *e,
    const int64_t x[5], int64_t out[5], struct lq_error *err)
{
	const struct wan_half *h = &e->h;
	uint64_t *b = NULL;
	int n;
	int64_t slot[NSLOTS];
	enum lq_status st;

	if (x[1] != h->cin)
		return walk_fail(h, err, "x must be [B, %d, T, H, W], not %lld "
		    "channels", h->cin, (long long)x[1]);
	st = carves(h, x, &b, &n, out, slot, err);
	free(b);
	out[1] = h->cfg.z_dim;	/* the mean's; quant_conv gives 2 z_dim */
	return st;
}

enum lq_status
wan_vae_encode(struct wan_vae_encoder *e, const struct gpu_tensor *x,
    float *parameters, const struct nn_dump *dump, struct lq_error *err)
{
	struct wan_half *h = &e->h;
	struct gpu_cmd *cmd = h->cmd;
	struct run r;
	struct gpu_tensor big[2], enc, par;
	int64_t lat[5], B, T, H, W, chunks, fo = 0;
	size_t mark = 0;
	char name[64];
	enum lq_status st;

	memset(&r, 0, sizeof(r));
	if ((st = shape_check(h, x, "x", err)))
		return st;
	B = x->shape[0];
	T = x->shape[2];
	H = x->shape[3];
	W = x->shape[4];
	chunks = 1 + (T - 1) / ENC_CHUNK;
	if ((st = prepare(h, x->shape, &r, big, lat, &mark, err)))
		goto out;
	enc = view5(&big[0], B, h->cout, lat[2], lat[3], lat[4]);
	par = view5(&big[1], B, h->cout, lat[2], lat[3], lat[4]);
	for (int64_t i = 0; i < chunks; i++) {
		int64_t f = i == 0 ? 0 : 1 + ENC_CHUNK * (i - 1);
		int64_t Tc = i == 0 ? 1 : ENC_CHUNK, Hc = H, Wc = W;
		int os;
		struct gpu_tensor in = view5(&r.slot[S_A], B, h->cin, Tc, H, W);
		struct gpu_tensor src = gpu_tensor_slice(x, 2, f, Tc);
		struct gpu_tensor o, dst;

		r.first = i == 0;
		OP(ops_copy(cmd, &in, &src));
		OP(chunk_forward(&r, &Tc, &Hc, &Wc, &os));
		o = view5(&r.slot[os], B, h->cout, Tc, Hc, Wc);
		snprintf(name, sizeof(name), "encoder_chunk%lld", (long long)i);
		OP(nn_dump_tensor(dump, cmd, name, &o, err));
		dst = gpu_tensor_slice(&enc, 2, fo, Tc);
		OP(ops_copy(cmd, &dst, &o));
		fo += Tc;
		OP(gpu_cmd_submit(cmd, err));
		gpu_cmd_begin(cmd);
	}
	LQ_ASSERT(fo == lat[2]);
	{
		struct ops_conv3d_params p1;

		memset(&p1, 0, sizeof(p1));
		OP(ops_conv3d(cmd, &par, &enc, &h->quant.w, &h->quant.b, &p1));
	}
	OP(nn_dump_tensor(dump, cmd, "quant_conv", &par, err));
	OP(gpu_cmd_submit(cmd, err));
	OP(gpu_tensor_download_f32(h->ctx, &par, parameters, err));
out:
	finish(h, &r, mark, st, err);
	return st;
}

/* ---- the memory plan ---- */

void
wan_vae_plan(const struct wan_vae_config *c, const struct nn_weights_layout *w,
    const struct device_caps *caps, int B, int F, int H, int W,
    struct nn_plan_bytes *out)
{
	struct wan_half h;
	int64_t z[5] = { B, c->z_dim, F, H, W }, lat[5], slot[NSLOTS], o[5];
	uint64_t *b = NULL, video, big = 0;
	int n = 0;

	memset(out, 0, sizeof(*out));
	memset(&h, 0, sizeof(h));
	h.cfg = *c;
	h.decoder = 1;
	h.name = "decoder";
	(void)build(&h);
	if (carves(&h, z, &b, &n, lat, slot, NULL) == LQ_OK)
		out->activations = gpu_pool_plan(caps, b, n);
	for (int i = 0; i < n; i++)
		if (b[i] > big)
			big = b[i];
	free(b);
	free(h.layers);
	wan_vae_output_shape(c, z, o);
	video = (uint64_t)(o[0] * o[1] * o[2] * o[3] * o[4]) * 4;
	if (w != NULL)
		out->weights = w->resident.device;
	out->io = gpu_buffer_plan_size((uint64_t)(B * c->z_dim * F * H * W) * 4) +
	    gpu_buffer_plan_size(video);
	out->host = video;
	out->largest = big > video ? big : video;
	snprintf(out->largest_what, sizeof(out->largest_what), "%s",
	    big > video ? "the Wan VAE decoder's largest pool tensor (a "
	    "chunk activation, feature cache or attention scores)" :
	    "the decoded video");
	if (w != NULL && w->resident.largest > out->largest) {
		out->largest = w->resident.largest;
		snprintf(out->largest_what, sizeof(out->largest_what),
		    "weight %s", w->resident.largest_name);
	}
}
