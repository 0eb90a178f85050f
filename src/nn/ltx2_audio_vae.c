/*
 * ltx2_audio_vae.c — AutoencoderKLLTX2Audio's decoder on Vulkan (diffusers
 * models/autoencoders/autoencoder_kl_ltx2_audio.py: LTX2AudioDecoder,
 * LTX2AudioResnetBlock, LTX2AudioAttnBlock, LTX2AudioUpsample,
 * LTX2AudioCausalConv2d, LTX2AudioPixelNorm).
 *
 * The 2-D convolutions over (time, mel) run as ops_conv3d with a one-frame
 * kernel on [B, C, 1, T, M] views, every one zero-padded as
 * LTX2AudioCausalConv2d pads it (causality_axis "height": (k - 1) rows
 * before, none after, the mel axis centred).  Upstream details mirrored:
 * - pixel norm x / sqrt(mean_c(x^2) + 1e-6), no weight (GroupNorm(32,
 *   eps 1e-6) with norm_type "group");
 * - resnet: norm1, SiLU, conv1, norm2, SiLU, conv2, plus the 1x1
 *   nin_shortcut when the channels change (the decoder never asks for
 *   conv_shortcut); no timestep embedding (temb_ch 0);
 * - attention block: norm, 1x1 q/k/v, ONE head over all (t, m) positions
 *   with scale C^-0.5, bmm-softmax-bmm as upstream, 1x1 proj_out,
 *   residual (the 1x1 convs run as linears over channels);
 * - levels from the coarsest: num_res_blocks + 1 resnets each, attention
 *   after each resnet where the level's resolution (resolution /
 *   2^(levels - 1), doubling per level) is in attn_resolutions; the
 *   upsampler is nearest x2 in both axes, its causal conv, then the first
 *   time row ("height") or mel column ("width") dropped;
 * - the result is cropped or zero-padded to (max(4L - 3, 1), mel_bins),
 *   from LATENT_DOWNSAMPLE_FACTOR 4 whatever the number of levels.
 * Activations live in seven equal slots of one pool plus the attention
 * scores.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "gpu/ops.h"
#include "nn/ltx2_audio_vae.h"
#include "nn/plan.h"
#include "nn/weights.h"

#define LATENT_DOWNSAMPLE_FACTOR 4	/* upstream's module constant */
#define NORM_EPS 1e-6f		/* LTX2AudioPixelNorm / GroupNorm eps */
#define GN_GROUPS 32
#define NSLOTS 7

struct avae_conv {
	struct gpu_tensor w, b;		/* w as [Co, Ci, 1, kh, kw] */
};

struct avae_resnet {
	int ci, co;
	struct avae_conv conv1, conv2, nin_shortcut;
	struct gpu_tensor norm1_w, norm1_b, norm2_w, norm2_b;	/* group only */
};

struct avae_attn {
	int c;
	struct gpu_tensor q_w, q_b, k_w, k_b, v_w, v_b, proj_w, proj_b;	/* w [C, C] */
	struct gpu_tensor norm_w, norm_b;	/* group only */
};

struct avae_level {
	int nblocks, has_attn, has_upsample;
	struct avae_resnet *block;
	struct avae_attn *attn;
	struct avae_conv upsample;
};

struct ltx2_audio_vae {
	struct gpu_ctx *ctx;
	struct ltx2_audio_vae_config cfg;
	struct nn_weights *w;
	struct gpu_cmd *cmd;
	struct avae_conv conv_in, conv_out;
	struct avae_resnet mid_block_1, mid_block_2;
	struct avae_attn mid_attn;
	struct avae_level level[DIFFUSERS_MAX_BLOCKS];
	struct gpu_tensor norm_out_w, norm_out_b;
	struct gpu_pool *pool;
};

#define SHAPE(...) ((const int64_t[]){ __VA_ARGS__ })

static enum lq_status
load_conv(struct ltx2_audio_vae *v, struct avae_conv *c, const char *name,
    int co, int ci, int k, struct lq_error *err)
{
	char n[256];
	enum lq_status st;

	snprintf(n, sizeof(n), "%s.conv.weight", name);
	if ((st = nn_weights_get(v->w, n, 4, SHAPE(co, ci, k, k), &c->w, err)))
		return st;
	c->w = gpu_tensor_reshape(&c->w, 5, SHAPE(co, ci, 1, k, k));
	snprintf(n, sizeof(n), "%s.conv.bias", name);
	return nn_weights_get(v->w, n, 1, SHAPE(co), &c->b, err);
}

/* GroupNorm affine parameters `name`.weight / .bias (norm_type "group"). */
static enum lq_status
load_gn(struct ltx2_audio_vae *v, struct gpu_tensor *w, struct gpu_tensor *b,
    const char *name, int c, struct lq_error *err)
{
	char n[256];
	enum lq_status st;

	if (!v->cfg.norm_group)
		return LQ_OK;
	snprintf(n, sizeof(n), "%s.weight", name);
	if ((st = nn_weights_get(v->w, n, 1, SHAPE(c), w, err)))
		return st;
	snprintf(n, sizeof(n), "%s.bias", name);
	return nn_weights_get(v->w, n, 1, SHAPE(c), b, err);
}

static enum lq_status
load_resnet(struct ltx2_audio_vae *v, struct avae_resnet *r, const char *name,
    int ci, int co, struct lq_error *err)
{
	char n[256];
	enum lq_status st;

	r->ci = ci;
	r->co = co;
	snprintf(n, sizeof(n), "%s.conv1", name);
	if ((st = load_conv(v, &r->conv1, n, co, ci, 3, err)))
		return st;
	snprintf(n, sizeof(n), "%s.conv2", name);
	if ((st = load_conv(v, &r->conv2, n, co, co, 3, err)))
		return st;
	snprintf(n, sizeof(n), "%s.norm1", name);
	if ((st = load_gn(v, &r->norm1_w, &r->norm1_b, n, ci, err)))
		return st;
	snprintf(n, sizeof(n), "%s.norm2", name);
	if ((st = load_gn(v, &r->norm2_w, &r->norm2_b, n, co, err)))
		return st;
	if (ci == co)
		return LQ_OK;
	snprintf(n, sizeof(n), "%s.nin_shortcut", name);
	return load_conv(v, &r->nin_shortcut, n, co, ci, 1, err);
}

/* A 1x1 Conv2d `name`.weight [C, C, 1, 1] read as a Linear [C, C]. */
static enum lq_status
load_1x1(struct ltx2_audio_vae *v, struct gpu_tensor *w, struct gpu_tensor *b,
    const char *name, int c, struct lq_error *err)
{
	char n[320];
	enum lq_status st;

	snprintf(n, sizeof(n), "%s.weight", name);
	if ((st = nn_weights_get(v->w, n, 4, SHAPE(c, c, 1, 1), w, err)))
		return st;
	*w = gpu_tensor_reshape(w, 2, SHAPE(c, c));
	snprintf(n, sizeof(n), "%s.bias", name);
	return nn_weights_get(v->w, n, 1, SHAPE(c), b, err);
}

static enum lq_status
load_attn(struct ltx2_audio_vae *v, struct avae_attn *a, const char *name,
    int c, struct lq_error *err)
{
	char n[256];
	enum lq_status st;
	static const char *part[4] = { "q", "k", "v", "proj_out" };
	struct gpu_tensor *w[4] = { &a->q_w, &a->k_w, &a->v_w, &a->proj_w };
	struct gpu_tensor *b[4] = { &a->q_b, &a->k_b, &a->v_b, &a->proj_b };

	a->c = c;
	for (int i = 0; i < 4; i++) {
		snprintf(n, sizeof(n), "%s.%s", name, part[i]);
		if ((st = load_1x1(v, w[i], b[i], n, c, err)))
			return st;
	}
	snprintf(n, sizeof(n), "%s.norm", name);
	return load_gn(v, &a->norm_w, &a->norm_b, n, c, err);
}

void
ltx2_audio_vae_free(struct ltx2_audio_vae *v)
{
	if (v == NULL)
		return;
	gpu_cmd_free(v->cmd);
	gpu_pool_free(v->pool);
	nn_weights_free(v->w);
	for (int i = 0; i < DIFFUSERS_MAX_BLOCKS; i++) {
		free(v->level[i].block);
		free(v->level[i].attn);
	}
	free(v);
}

/* 1 when a level at resolution `res` has attention blocks. */
static int
attn_at(const struct ltx2_audio_vae_config *c, int res)
{
	for (int i = 0; i < c->n_attn_resolutions; i++)
		if (c->attn_resolutions[i] == res)
			return 1;
	return 0;
}

enum lq_status
ltx2_audio_vae_load(struct gpu_ctx *ctx, const char *dir,
    struct ltx2_audio_vae **out, struct lq_error *err)
{
	struct ltx2_audio_vae *v = xcalloc(1, sizeof(*v));
	char *path = xasprintf("%s/config.json", dir);
	const struct ltx2_audio_vae_config *c = &v->cfg;
	cJSON *root = NULL;
	char n[160];
	int nl, block_in, res;
	enum lq_status st;

	*out = NULL;
	v->ctx = ctx;
	st = diffusers_load_json(path, &root, err);
	if (st == LQ_OK)
		st = diffusers_parse_ltx2_audio_vae(root, path, &v->cfg, err);
	cJSON_Delete(root);
	free(path);
	if (st == LQ_OK)
		st = nn_weights_load(ctx, dir, "decoder.", &v->w, err);
	if (st != LQ_OK)
		goto fail;
	nl = c->n_ch_mult;
	block_in = c->base_channels * c->ch_mult[nl - 1];
	if ((st = load_conv(v, &v->conv_in, "decoder.conv_in", block_in,
	    c->latent_channels, 3, err)) ||
	    (st = load_resnet(v, &v->mid_block_1, "decoder.mid.block_1",
	    block_in, block_in, err)) ||
	    (c->mid_block_add_attention &&
	    (st = load_attn(v, &v->mid_attn, "decoder.mid.attn_1", block_in,
	    err))) ||
	    (st = load_resnet(v, &v->mid_block_2, "decoder.mid.block_2",
	    block_in, block_in, err)))
		goto fail;
	res = c->resolution >> (nl - 1);
	for (int lv = nl - 1; lv >= 0; lv--) {
		struct avae_level *L = &v->level[lv];
		int block_out = c->base_channels * c->ch_mult[lv];

		L->nblocks = c->num_res_blocks + 1;
		L->has_attn = attn_at(c, res);
		L->has_upsample = lv != 0;
		L->block = xcalloc((size_t)L->nblocks, sizeof(*L->block));
		L->attn = xcalloc((size_t)L->nblocks, sizeof(*L->attn));
		for (int i = 0; i < L->nblocks; i++) {
			snprintf(n, sizeof(n), "decoder.up.%d.block.%d", lv, i);
			if ((st = load_resnet(v, &L->block[i], n, block_in,
			    block_out, err)))
				goto fail;
			block_in = block_out;
			snprintf(n, sizeof(n), "decoder.up.%d.attn.%d", lv, i);
			if (L->has_attn &&
			    (st = load_attn(v, &L->attn[i], n, block_in, err)))
				goto fail;
		}
		if (L->has_upsample) {
			snprintf(n, sizeof(n), "decoder.up.%d.upsample.conv", lv);
			if ((st = load_conv(v, &L->upsample, n, block_in,
			    block_in, 3, err)))
				goto fail;
			res *= 2;
		}
	}
	if ((st = load_gn(v, &v->norm_out_w, &v->norm_out_b, "decoder.norm_out",
	    block_in, err)) ||
	    (st = load_conv(v, &v->conv_out, "decoder.conv_out",
	    c->output_channels, block_in, 3, err)) ||
	    (st = gpu_cmd_create(ctx, &v->cmd, err)))
		goto fail;
	*out = v;
	return LQ_OK;
fail:
	ltx2_audio_vae_free(v);
	return st;
}

const struct ltx2_audio_vae_config *
ltx2_audio_vae_config(const struct ltx2_audio_vae *v)
{
	return &v->cfg;
}

void
ltx2_audio_vae_mel_shape(const struct ltx2_audio_vae_config *c,
    const int64_t z[4], int64_t out[4])
{
	int64_t t = z[2] * LATENT_DOWNSAMPLE_FACTOR - (LATENT_DOWNSAMPLE_FACTOR - 1);

	out[0] = z[0];
	out[1] = c->output_channels;
	out[2] = t > 1 ? t : 1;
	out[3] = c->mel_bins ? c->mel_bins : z[3];
}

void
ltx2_audio_vae_output_shape(const struct ltx2_audio_vae *v,
    const int64_t z[4], int64_t out[4])
{
	ltx2_audio_vae_mel_shape(&v->cfg, z, out);
}

void
ltx2_audio_vae_memory(const struct ltx2_audio_vae *v, size_t *weights,
    size_t *pool_capacity, size_t *pool_peak)
{
	*weights = nn_weights_device_bytes(v->w);
	*pool_capacity = v->pool ? gpu_pool_capacity(v->pool) : 0;
	*pool_peak = v->pool ? gpu_pool_peak(v->pool) : 0;
}

/* [B, C, 1, H, W] over a slot. */
static struct gpu_tensor
view5(const struct gpu_tensor *slot, int64_t B, int64_t C, int64_t H,
    int64_t W)
{
	LQ_ASSERT(B * C * H * W <= gpu_tensor_numel(slot));
	return gpu_tensor_make(slot->buf, slot->offset, GPU_F32, 5,
	    SHAPE(B, C, 1, H, W));
}

/* LTX2AudioCausalConv2d: F.pad as the causality axis says, then Conv2d. */
static enum lq_status
conv(const struct ltx2_audio_vae *v, const struct gpu_tensor *y,
    const struct gpu_tensor *x, const struct avae_conv *c)
{
	int ph = (int)c->w.shape[3] - 1, pw = (int)c->w.shape[4] - 1;
	struct ops_conv3d_params p;

	memset(&p, 0, sizeof(p));
	p.stride[0] = p.stride[1] = p.stride[2] = 1;
	p.pad_h[0] = ph / 2;
	p.pad_h[1] = ph - ph / 2;
	p.pad_w[0] = pw / 2;
	p.pad_w[1] = pw - pw / 2;
	switch (v->cfg.causality_axis) {
	case LTX2_CAUSAL_HEIGHT:
		p.pad_h[0] = ph;
		p.pad_h[1] = 0;
		break;
	case LTX2_CAUSAL_WIDTH:
	case LTX2_CAUSAL_WIDTH_COMPAT:
		p.pad_w[0] = pw;
		p.pad_w[1] = 0;
		break;
	case LTX2_CAUSAL_NONE:
		break;
	}
	p.t_mode = OPS_PAD_ZERO;
	p.s_mode = OPS_PAD_ZERO;
	return ops_conv3d(v->cmd, y, x, &c->w, &c->b, &p);
}

/* Pixel norm (or GroupNorm with norm_type "group"). */
static enum lq_status
norm(const struct ltx2_audio_vae *v, const struct gpu_tensor *y,
    const struct gpu_tensor *x, const struct gpu_tensor *gw,
    const struct gpu_tensor *gb)
{
	if (v->cfg.norm_group)
		return ops_group_norm(v->cmd, y, x, GN_GROUPS, gw, gb, NORM_EPS);
	return ops_rms_norm_channels(v->cmd, y, x, NULL, NORM_EPS);
}

#define OP(x) do { if ((st = (x)) != LQ_OK) goto out; } while (0)

/* LTX2AudioResnetBlock from slot xs into slot ys (2, 3, 4 scratch). */
static enum lq_status
resnet(const struct ltx2_audio_vae *v, const struct gpu_tensor *slot,
    const struct avae_resnet *r, int xs, int ys, int64_t B, int64_t H,
    int64_t W)
{
	struct gpu_tensor x = view5(&slot[xs], B, r->ci, H, W);
	struct gpu_tensor h = view5(&slot[2], B, r->ci, H, W);
	struct gpu_tensor h2 = view5(&slot[3], B, r->co, H, W);
	struct gpu_tensor h3 = view5(&slot[2], B, r->co, H, W);
	struct gpu_tensor y = view5(&slot[ys], B, r->co, H, W);
	struct gpu_tensor sc = view5(&slot[4], B, r->co, H, W);
	struct gpu_cmd *cmd = v->cmd;
	enum lq_status st;

	if ((st = norm(v, &h, &x, &r->norm1_w, &r->norm1_b)) ||
	    (st = ops_silu(cmd, &h, &h)) ||
	    (st = conv(v, &h2, &h, &r->conv1)) ||
	    (st = norm(v, &h2, &h2, &r->norm2_w, &r->norm2_b)) ||
	    (st = ops_silu(cmd, &h2, &h2)) ||
	    (st = conv(v, &h3, &h2, &r->conv2)))
		return st;
	if (r->ci == r->co)
		return ops_add(cmd, &y, &x, &h3);
	if ((st = conv(v, &sc, &x, &r->nin_shortcut)))
		return st;
	return ops_add(cmd, &y, &sc, &h3);
}

/* LTX2AudioAttnBlock from slot xs into slot ys (2..6 and `scores`
 * scratch): one head over the N = H·W positions. */
static enum lq_status
attn(const struct ltx2_audio_vae *v, const struct gpu_tensor *slot,
    const struct gpu_tensor *scores_buf, const struct avae_attn *a, int xs,
    int ys, int64_t B, int64_t H, int64_t W)
{
	int64_t C = a->c, N = H * W;
	static const int tr[3] = { 0, 2, 1 };
	struct gpu_tensor x = view5(&slot[xs], B, C, H, W);
	struct gpu_tensor h = view5(&slot[2], B, C, H, W);
	struct gpu_tensor h3 = gpu_tensor_reshape(&h, 3, SHAPE(B, C, N));
	struct gpu_tensor ht = gpu_tensor_make(slot[3].buf, slot[3].offset,
	    GPU_F32, 3, SHAPE(B, N, C));
	struct gpu_tensor q = gpu_tensor_make(slot[4].buf, slot[4].offset,
	    GPU_F32, 3, SHAPE(B, N, C));
	struct gpu_tensor k = gpu_tensor_make(slot[5].buf, slot[5].offset,
	    GPU_F32, 3, SHAPE(B, N, C));
	struct gpu_tensor vv = gpu_tensor_make(slot[6].buf, slot[6].offset,
	    GPU_F32, 3, SHAPE(B, N, C));
	struct gpu_tensor s = gpu_tensor_make(scores_buf->buf,
	    scores_buf->offset, GPU_F32, 3, SHAPE(B, N, N));
	struct gpu_tensor pt, x3, y3;
	struct gpu_cmd *cmd = v->cmd;
	enum lq_status st;

	LQ_ASSERT(B * N * N <= gpu_tensor_numel(scores_buf));
	x3 = gpu_tensor_reshape(&x, 3, SHAPE(B, C, N));
	y3 = view5(&slot[ys], B, C, H, W);
	y3 = gpu_tensor_reshape(&y3, 3, SHAPE(B, C, N));
	/* q = q(h_).reshape(b, c, hw).permute(0, 2, 1): the 1x1 convs as
	 * linears over channels of h_ transposed to [B, N, C] */
	struct gpu_tensor h3t = gpu_tensor_permute(&h3, tr);
	if ((st = norm(v, &h, &x, &a->norm_w, &a->norm_b)) ||
	    (st = ops_copy(cmd, &ht, &h3t)) ||
	    (st = ops_linear(cmd, &q, &ht, &a->q_w, &a->q_b, OPS_ACT_NONE)) ||
	    (st = ops_linear(cmd, &k, &ht, &a->k_w, &a->k_b, OPS_ACT_NONE)) ||
	    (st = ops_linear(cmd, &vv, &ht, &a->v_w, &a->v_b, OPS_ACT_NONE)) ||
	    /* attn = bmm(q, k) * c^-0.5, softmax(dim=2) */
	    (st = ops_matmul(cmd, &s, &q, &k, 1,
	    (float)(1.0 / sqrt((double)C)))) ||
	    (st = ops_softmax(cmd, &s, &s)) ||
	    /* h_[c, i] = sum_j v[c, j] attn[i, j] */
	    (st = ops_matmul(cmd, &ht, &s, &vv, 0, 1.0f)) ||
	    (st = ops_linear(cmd, &q, &ht, &a->proj_w, &a->proj_b,
	    OPS_ACT_NONE)))
		return st;
	pt = gpu_tensor_permute(&q, tr);
	return ops_add(cmd, &y3, &x3, &pt);
}

#define DUMP4(name, t5) do { \
	struct gpu_tensor d4_ = gpu_tensor_reshape(&(t5), 4, \
	    SHAPE((t5).shape[0], (t5).shape[1], (t5).shape[3], (t5).shape[4])); \
	OP(nn_dump_tensor(dump, cmd, (name), &d4_, err)); \
} while (0)

/*
 * The pool of one decode of z [B, C, H, W] (H latent frames, W mel
 * columns): NSLOTS slots of *mx floats (every level's activations, the
 * upsampler's 2H x 2W, the latent, the output) and the attention scores'
 * *mscores (the largest attention level's [B, N, N]), with one pool
 * alignment each.  The levels' attention and upsamplers as
 * ltx2_audio_vae_load derives them from the config.
 */
static size_t
pool_bytes(const struct ltx2_audio_vae_config *c, const int64_t z[4],
    int64_t *mx_out, int64_t *mscores_out)
{
	int nl = c->n_ch_mult, res = c->resolution >> (nl - 1);
	int drop_h = c->causality_axis == LTX2_CAUSAL_HEIGHT;
	int drop_w = c->causality_axis == LTX2_CAUSAL_WIDTH;
	int64_t B = z[0], H = z[2], W = z[3], mx, mscores = 1;
	int64_t C = c->base_channels * c->ch_mult[nl - 1];

	mx = B * (C > c->latent_channels ? C : c->latent_channels) * H * W;
	for (int lv = nl - 1; lv >= 0; lv--) {
		int64_t co = c->base_channels * c->ch_mult[lv];
		int64_t cm = co > C ? co : C;

		if (B * cm * H * W > mx)
			mx = B * cm * H * W;
		if ((attn_at(c, res) || (lv == nl - 1 &&
		    c->mid_block_add_attention)) && B * H * W * H * W > mscores)
			mscores = B * H * W * H * W;
		C = co;
		if (lv != 0) {
			if (B * C * 4 * H * W > mx)
				mx = B * C * 4 * H * W;
			H = 2 * H - drop_h;
			W = 2 * W - drop_w;
			res *= 2;
		}
	}
	if (B * c->output_channels * H * W > mx)
		mx = B * c->output_channels * H * W;
	*mx_out = mx;
	*mscores_out = mscores;
	return (size_t)(NSLOTS * mx + mscores) * sizeof(float) +
	    (size_t)(NSLOTS + 1) * 256;
}

void
ltx2_audio_vae_plan(const struct ltx2_audio_vae_config *c,
    const struct nn_weights_layout *w, const int64_t z[4],
    struct nn_plan_bytes *out)
{
	int64_t mx, mscores, mel[4];

	memset(out, 0, sizeof(*out));
	if (w != NULL)
		out->weights = w->resident.device;
	/* one buffer of the bytes decode asks gpu_pool_create for (pools
	 * under the 1 GiB chunk; the audio VAE's are MiB) */
	out->activations = gpu_buffer_plan_size(pool_bytes(c, z, &mx, &mscores));
	ltx2_audio_vae_mel_shape(c, z, mel);
	out->io = gpu_buffer_plan_size(sizeof(float) * (uint64_t)(z[0] * z[1] *
	    z[2] * z[3])) + gpu_buffer_plan_size(sizeof(float) *
	    (uint64_t)(mel[0] * mel[1] * mel[2] * mel[3]));
	out->largest = (uint64_t)(mx > mscores ? mx : mscores) * sizeof(float);
	snprintf(out->largest_what, sizeof(out->largest_what),
	    mx >= mscores ? "the audio VAE's largest activation" :
	    "the audio VAE's attention scores");
	if (w != NULL && w->resident.largest > out->largest) {
		out->largest = w->resident.largest;
		snprintf(out->largest_what, sizeof(out->largest_what),
		    "weight %s", w->resident.largest_name);
	}
}

enum lq_status
ltx2_audio_vae_decode(struct ltx2_audio_vae *v, const struct gpu_tensor *z,
    const struct gpu_tensor *sample, const struct nn_dump *dump,
    struct lq_error *err)
{
	const struct ltx2_audio_vae_config *c = &v->cfg;
	struct gpu_cmd *cmd = v->cmd;
	struct gpu_tensor slot[NSLOTS], scores;
	int64_t want[4], B, H, W, C, mx, mscores = 1;
	int nl = c->n_ch_mult, s = 0, drop_h, drop_w;
	size_t mark, bytes;
	char name[96];
	enum lq_status st;

	if (z->ndim != 4 || z->shape[1] != c->latent_channels) {
		char buf[96];

		gpu_tensor_describe(z, buf, sizeof(buf));
		return error_set(err, LQ_FAILED, "LQ-NN-SHAPE", "audio VAE decoder: "
		    "z is %s, expected [B, %d, L, M] (latent_channels %d; time, "
		    "mel)", buf, c->latent_channels, c->latent_channels);
	}
	ltx2_audio_vae_output_shape(v, z->shape, want);
	if (sample->ndim != 4 || memcmp(sample->shape, want, sizeof(want)))
		return error_set(err, LQ_FAILED, "LQ-NN-SHAPE", "audio VAE decoder: "
		    "sample must be [%lld, %lld, %lld, %lld]", (long long)want[0],
		    (long long)want[1], (long long)want[2], (long long)want[3]);
	B = z->shape[0];
	drop_h = c->causality_axis == LTX2_CAUSAL_HEIGHT;
	drop_w = c->causality_axis == LTX2_CAUSAL_WIDTH;
	bytes = pool_bytes(c, z->shape, &mx, &mscores);
	if (v->pool == NULL || gpu_pool_capacity(v->pool) < bytes) {
		gpu_pool_free(v->pool);
		v->pool = NULL;
		if ((st = gpu_pool_create(v->ctx, bytes, &v->pool, err)))
			return st;
	}
	mark = gpu_pool_mark(v->pool);
	gpu_cmd_begin(cmd);
	for (int i = 0; i < NSLOTS; i++)
		OP(gpu_pool_tensor(v->pool, GPU_F32, 1, SHAPE(mx), &slot[i], err));
	OP(gpu_pool_tensor(v->pool, GPU_F32, 1, SHAPE(mscores), &scores, err));
	H = z->shape[2];
	W = z->shape[3];
	C = c->base_channels * c->ch_mult[nl - 1];
	{
		struct gpu_tensor z5 = gpu_tensor_reshape(z, 5,
		    SHAPE(B, c->latent_channels, 1, H, W));
		struct gpu_tensor h = view5(&slot[0], B, C, H, W);

		OP(conv(v, &h, &z5, &v->conv_in));
		DUMP4("decoder.conv_in", h);
	}
	OP(resnet(v, slot, &v->mid_block_1, 0, 1, B, H, W));
	{
		struct gpu_tensor h = view5(&slot[1], B, C, H, W);

		DUMP4("decoder.mid.block_1", h);
	}
	s = 1;
	if (c->mid_block_add_attention) {
		OP(attn(v, slot, &scores, &v->mid_attn, 1, 0, B, H, W));
		s = 0;
	}
	{
		struct gpu_tensor h = view5(&slot[s], B, C, H, W);

		DUMP4("decoder.mid.attn_1", h);	/* nn.Identity when disabled */
	}
	OP(resnet(v, slot, &v->mid_block_2, s, 1 - s, B, H, W));
	s = 1 - s;
	{
		struct gpu_tensor h = view5(&slot[s], B, C, H, W);

		DUMP4("decoder.mid.block_2", h);
	}
	for (int lv = nl - 1; lv >= 0; lv--) {
		const struct avae_level *L = &v->level[lv];

		for (int i = 0; i < L->nblocks; i++) {
			C = L->block[i].co;
			OP(resnet(v, slot, &L->block[i], s, 1 - s, B, H, W));
			s = 1 - s;
			if (dump) {
				struct gpu_tensor h = view5(&slot[s], B, C, H, W);

				snprintf(name, sizeof(name), "decoder.up.%d.block.%d",
				    lv, i);
				DUMP4(name, h);
			}
			if (!L->has_attn)
				continue;
			OP(attn(v, slot, &scores, &L->attn[i], s, 1 - s, B, H, W));
			s = 1 - s;
			if (dump) {
				struct gpu_tensor h = view5(&slot[s], B, C, H, W);

				snprintf(name, sizeof(name), "decoder.up.%d.attn.%d",
				    lv, i);
				DUMP4(name, h);
			}
		}
		if (!L->has_upsample)
			continue;
		{
			/* interpolate(scale_factor=2, mode="nearest") */
			struct gpu_tensor x = view5(&slot[s], B, C, H, W);
			struct gpu_tensor xr = gpu_tensor_reshape(&x, 5,
			    SHAPE(B * C, H, 1, W, 1));
			struct gpu_tensor xb = gpu_tensor_broadcast(&xr, 5,
			    SHAPE(B * C, H, 2, W, 2));
			struct gpu_tensor up = gpu_tensor_make(slot[4].buf,
			    slot[4].offset, GPU_F32, 5, SHAPE(B * C, H, 2, W, 2));
			struct gpu_tensor up5 = view5(&slot[4], B, C, 2 * H, 2 * W);
			struct gpu_tensor cv = view5(&slot[2], B, C, 2 * H, 2 * W);
			int64_t H2 = 2 * H - drop_h, W2 = 2 * W - drop_w;
			struct gpu_tensor y = view5(&slot[1 - s], B, C, H2, W2);
			struct gpu_tensor cs = gpu_tensor_slice(&cv, 3, drop_h, H2);

			cs = gpu_tensor_slice(&cs, 4, drop_w, W2);
			OP(ops_copy(cmd, &up, &xb));
			OP(conv(v, &cv, &up5, &L->upsample));
			/* x[:, :, 1:, :] ("height") / x[..., 1:] ("width") */
			OP(ops_copy(cmd, &y, &cs));
			s = 1 - s;
			H = H2;
			W = W2;
			snprintf(name, sizeof(name), "decoder.up.%d.upsample", lv);
			DUMP4(name, y);
		}
	}
	{
		struct gpu_tensor x = view5(&slot[s], B, C, H, W);
		struct gpu_tensor h = view5(&slot[2], B, C, H, W);
		struct gpu_tensor o = view5(&slot[3], B, c->output_channels, H, W);
		struct gpu_tensor o4 = gpu_tensor_reshape(&o, 4,
		    SHAPE(B, c->output_channels, H, W));
		int64_t tt = want[2] < H ? want[2] : H;
		int64_t tf = want[3] < W ? want[3] : W;
		struct gpu_tensor src = gpu_tensor_slice(&o4, 2, 0, tt);
		struct gpu_tensor dst = gpu_tensor_slice(sample, 2, 0, tt);

		OP(norm(v, &h, &x, &v->norm_out_w, &v->norm_out_b));
		DUMP4("decoder.norm_out", h);
		OP(ops_silu(cmd, &h, &h));
		OP(conv(v, &o, &h, &v->conv_out));
		DUMP4("decoder.conv_out", o);
		/* crop to the target, zero-pad what is short */
		src = gpu_tensor_slice(&src, 3, 0, tf);
		dst = gpu_tensor_slice(&dst, 3, 0, tf);
		if (tt < want[2] || tf < want[3])
			OP(ops_fill(cmd, sample, 0.0f));
		OP(ops_copy(cmd, &dst, &src));
	}
	st = gpu_cmd_submit(cmd, err);
out:
	if (st != LQ_OK && err != NULL && err->status == LQ_OK)
		(void)gpu_cmd_status(cmd, err);
	gpu_pool_reset(v->pool, mark);
	return st;
}
