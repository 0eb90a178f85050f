/*
 * ltxv_upsampler.c — LTXLatentUpsamplerModel on Vulkan (diffusers
 * pipelines/ltx/modeling_latent_upsampler.py: ResBlock, PixelShuffleND,
 * LTXLatentUpsamplerModel.forward).
 *
 * Every convolution is torch's plain zero-padded one (padding 1).  A Conv2d
 * on frames folded into the batch is the Conv3d with a kernel of one frame
 * on the unfolded [B, C, F, H, W] tensor, so the 2-D weights are read as
 * [Co, Ci, 1, 3, 3] and nothing is folded; only dims 2's GroupNorm, whose
 * statistics are per frame, needs the frames in the batch: that variant
 * runs on a [B*F, C, 1, H, W] copy.  Activations live in four equal slots
 * of one pool (0, 1 ping-pong; 2, 3 temporaries).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "gpu/ops.h"
#include "nn/ltxv_upsampler.h"
#include "nn/weights.h"

#define GN_GROUPS 32		/* torch.nn.GroupNorm(32, C) */
#define GN_EPS 1e-5f		/* its default eps */

struct up_conv {
	struct gpu_tensor w, b;	/* w as [Co, Ci, kt, 3, 3] */
};

struct up_resblock {
	struct up_conv conv1, conv2;
	struct gpu_tensor norm1_w, norm1_b, norm2_w, norm2_b;
};

struct ltxv_upsampler {
	struct gpu_ctx *ctx;
	struct ltxv_upsampler_config cfg;
	struct nn_weights *w;
	struct gpu_cmd *cmd;
	struct up_conv initial_conv, up_conv, final_conv;
	struct gpu_tensor initial_norm_w, initial_norm_b;
	struct up_resblock *res, *post;
	int up_ft, up_fh, up_fw;	/* pixel shuffle factors */
	struct gpu_pool *pool;
};

#define SHAPE(...) ((const int64_t[]){ __VA_ARGS__ })

/* A conv weight `name`.weight / .bias: Conv3d [co, ci, 3, 3, 3], or with
 * two_d a Conv2d [co, ci, 3, 3] viewed as [co, ci, 1, 3, 3]. */
static enum lq_status
load_conv(struct ltxv_upsampler *u, struct up_conv *c, const char *name,
    int co, int ci, int two_d, struct lq_error *err)
{
	char n[128];
	enum lq_status st;

	snprintf(n, sizeof(n), "%s.weight", name);
	if (two_d) {
		st = nn_weights_get(u->w, n, 4, SHAPE(co, ci, 3, 3), &c->w, err);
		if (st == LQ_OK)
			c->w = gpu_tensor_reshape(&c->w, 5, SHAPE(co, ci, 1, 3, 3));
	} else {
		st = nn_weights_get(u->w, n, 5, SHAPE(co, ci, 3, 3, 3), &c->w, err);
	}
	if (st != LQ_OK)
		return st;
	snprintf(n, sizeof(n), "%s.bias", name);
	return nn_weights_get(u->w, n, 1, SHAPE(co), &c->b, err);
}

static enum lq_status
load_norm(struct ltxv_upsampler *u, struct gpu_tensor *w, struct gpu_tensor *b,
    const char *name, int c, struct lq_error *err)
{
	char n[128];
	enum lq_status st;

	snprintf(n, sizeof(n), "%s.weight", name);
	if ((st = nn_weights_get(u->w, n, 1, SHAPE(c), w, err)))
		return st;
	snprintf(n, sizeof(n), "%s.bias", name);
	return nn_weights_get(u->w, n, 1, SHAPE(c), b, err);
}

static enum lq_status
load_blocks(struct ltxv_upsampler *u, struct up_resblock *rb, const char *list,
    struct lq_error *err)
{
	int m = u->cfg.mid_channels, two_d = u->cfg.dims == 2;
	char n[128];
	enum lq_status st;

	for (int i = 0; i < u->cfg.num_blocks_per_stage; i++) {
		snprintf(n, sizeof(n), "%s.%d.conv1", list, i);
		if ((st = load_conv(u, &rb[i].conv1, n, m, m, two_d, err)))
			return st;
		snprintf(n, sizeof(n), "%s.%d.conv2", list, i);
		if ((st = load_conv(u, &rb[i].conv2, n, m, m, two_d, err)))
			return st;
		snprintf(n, sizeof(n), "%s.%d.norm1", list, i);
		if ((st = load_norm(u, &rb[i].norm1_w, &rb[i].norm1_b, n, m, err)))
			return st;
		snprintf(n, sizeof(n), "%s.%d.norm2", list, i);
		if ((st = load_norm(u, &rb[i].norm2_w, &rb[i].norm2_b, n, m, err)))
			return st;
	}
	return LQ_OK;
}

void
ltxv_upsampler_free(struct ltxv_upsampler *u)
{
	if (u == NULL)
		return;
	gpu_cmd_free(u->cmd);
	gpu_pool_free(u->pool);
	nn_weights_free(u->w);
	free(u->res);
	free(u->post);
	free(u);
}

enum lq_status
ltxv_upsampler_load(struct gpu_ctx *ctx, const char *dir,
    struct ltxv_upsampler **out, struct lq_error *err)
{
	struct ltxv_upsampler *u = xcalloc(1, sizeof(*u));
	char *path = xasprintf("%s/config.json", dir);
	cJSON *root = NULL;
	const struct ltxv_upsampler_config *c = &u->cfg;
	int two_d, m, up_c;
	enum lq_status st;

	*out = NULL;
	u->ctx = ctx;
	st = diffusers_load_json(path, &root, err);
	if (st == LQ_OK)
		st = diffusers_parse_latent_upsampler(root, path, &u->cfg, err);
	cJSON_Delete(root);
	free(path);
	if (st == LQ_OK)
		st = nn_weights_load(ctx, dir, NULL, &u->w, err);
	if (st != LQ_OK)
		goto fail;
	two_d = c->dims == 2;
	m = c->mid_channels;
	u->res = xcalloc((size_t)c->num_blocks_per_stage + 1, sizeof(*u->res));
	u->post = xcalloc((size_t)c->num_blocks_per_stage + 1, sizeof(*u->post));
	u->up_ft = c->temporal_upsample ? 2 : 1;
	u->up_fh = u->up_fw = c->spatial_upsample ? 2 : 1;
	up_c = m * u->up_ft * u->up_fh * u->up_fw;
	if ((st = load_conv(u, &u->initial_conv, "initial_conv", m,
	    c->in_channels, two_d, err)) ||
	    (st = load_norm(u, &u->initial_norm_w, &u->initial_norm_b,
	    "initial_norm", m, err)) ||
	    (st = load_blocks(u, u->res, "res_blocks", err)) ||
	    /* the spatial-only upsampler is a Conv2d even with dims 3 */
	    (st = load_conv(u, &u->up_conv, "upsampler.0", up_c, m,
	    two_d || !c->temporal_upsample, err)) ||
	    (st = load_blocks(u, u->post, "post_upsample_res_blocks", err)) ||
	    (st = load_conv(u, &u->final_conv, "final_conv", c->in_channels, m,
	    two_d, err)) ||
	    (st = gpu_cmd_create(ctx, &u->cmd, err)))
		goto fail;
	*out = u;
	return LQ_OK;
fail:
	ltxv_upsampler_free(u);
	return st;
}

const struct ltxv_upsampler_config *
ltxv_upsampler_config(const struct ltxv_upsampler *u)
{
	return &u->cfg;
}

void
ltxv_upsampler_output_shape(const struct ltxv_upsampler *u,
    const int64_t in[5], int64_t out[5])
{
	out[0] = in[0];
	out[1] = in[1];
	out[2] = u->cfg.temporal_upsample ? 2 * in[2] - 1 : in[2];
	out[3] = in[3] * u->up_fh;
	out[4] = in[4] * u->up_fw;
}

void
ltxv_upsampler_memory(const struct ltxv_upsampler *u, size_t *weights,
    size_t *pool_capacity, size_t *pool_peak)
{
	*weights = nn_weights_device_bytes(u->w);
	*pool_capacity = u->pool ? gpu_pool_capacity(u->pool) : 0;
	*pool_peak = u->pool ? gpu_pool_peak(u->pool) : 0;
}

/* torch.nn.Conv3d / Conv2d(kernel 3, padding 1): zero padding everywhere;
 * a one-frame kernel (Conv2d) pads no frames. */
static struct ops_conv3d_params
conv_params(const struct up_conv *c)
{
	struct ops_conv3d_params p;
	int pt = c->w.shape[2] == 3 ? 1 : 0;

	memset(&p, 0, sizeof(p));
	p.stride[0] = p.stride[1] = p.stride[2] = 1;
	p.pad_t[0] = p.pad_t[1] = pt;
	p.pad_h[0] = p.pad_h[1] = p.pad_w[0] = p.pad_w[1] = 1;
	p.t_mode = OPS_PAD_ZERO;
	p.s_mode = OPS_PAD_ZERO;
	return p;
}

static struct gpu_tensor
view5(const struct gpu_tensor *slot, int64_t B, int64_t C, int64_t F,
    int64_t H, int64_t W)
{
	int64_t shp[5] = { B, C, F, H, W };

	LQ_ASSERT(B * C * F * H * W <= gpu_tensor_numel(slot));
	return gpu_tensor_make(slot->buf, slot->offset, GPU_F32, 5, shp);
}

static enum lq_status
conv(struct gpu_cmd *cmd, const struct gpu_tensor *y,
    const struct gpu_tensor *x, const struct up_conv *c)
{
	struct ops_conv3d_params p = conv_params(c);

	return ops_conv3d(cmd, y, x, &c->w, &c->b, &p);
}

/* ResBlock.forward from slot xs into slot ys (slot 2 is scratch):
 * conv1 -> norm1 -> SiLU -> conv2 -> norm2 -> SiLU(h + x). */
static enum lq_status
resblock(struct gpu_cmd *cmd, struct gpu_tensor *slot,
    const struct up_resblock *rb, int xs, int ys, int64_t B, int64_t C,
    int64_t F, int64_t H, int64_t W)
{
	struct gpu_tensor x = view5(&slot[xs], B, C, F, H, W);
	struct gpu_tensor h = view5(&slot[2], B, C, F, H, W);
	struct gpu_tensor y = view5(&slot[ys], B, C, F, H, W);
	enum lq_status st;

	if ((st = conv(cmd, &h, &x, &rb->conv1)) ||
	    (st = ops_group_norm(cmd, &h, &h, GN_GROUPS, &rb->norm1_w,
	    &rb->norm1_b, GN_EPS)) ||
	    (st = ops_silu(cmd, &h, &h)) ||
	    (st = conv(cmd, &y, &h, &rb->conv2)) ||
	    (st = ops_group_norm(cmd, &y, &y, GN_GROUPS, &rb->norm2_w,
	    &rb->norm2_b, GN_EPS)) ||
	    (st = ops_add(cmd, &y, &y, &x)))
		return st;
	return ops_silu(cmd, &y, &y);
}

#define OP(x) do { if ((st = (x)) != LQ_OK) goto out; } while (0)
#define DUMP(name, t) OP(nn_dump_tensor(dump, cmd, (name), &(t), err))

enum lq_status
ltxv_upsampler_forward(struct ltxv_upsampler *u, const struct gpu_tensor *x,
    const struct gpu_tensor *y, const struct nn_dump *dump,
    struct lq_error *err)
{
	const struct ltxv_upsampler_config *c = &u->cfg;
	struct gpu_cmd *cmd = u->cmd;
	struct gpu_tensor slot[4];
	int64_t want[5], B, F, H, W, m = c->mid_channels, mx, F2, H2, W2;
	int64_t nB, nF;		/* the batch and frames the network runs on */
	int two_d = c->dims == 2, s = 0;
	int64_t up_c = m * u->up_ft * u->up_fh * u->up_fw;
	size_t mark, bytes;
	char name[64];
	enum lq_status st;

	if (x->ndim != 5 || x->shape[1] != c->in_channels) {
		char buf[96];

		gpu_tensor_describe(x, buf, sizeof(buf));
		return error_set(err, LQ_FAILED, "LQ-NN-SHAPE", "latent upsampler: "
		    "hidden_states is %s, expected [B, %d, F, H, W]", buf,
		    c->in_channels);
	}
	ltxv_upsampler_output_shape(u, x->shape, want);
	if (y->ndim != 5 || memcmp(y->shape, want, sizeof(want)) != 0)
		return error_set(err, LQ_FAILED, "LQ-NN-SHAPE", "latent upsampler: "
		    "output must be [%lld, %lld, %lld, %lld, %lld]",
		    (long long)want[0], (long long)want[1], (long long)want[2],
		    (long long)want[3], (long long)want[4]);
	B = x->shape[0];
	F = x->shape[2];
	H = x->shape[3];
	W = x->shape[4];
	F2 = u->up_ft * F;
	H2 = u->up_fh * H;
	W2 = u->up_fw * W;
	nB = two_d ? B * F : B;
	nF = two_d ? 1 : F;
	/* largest: the upsampler conv's output, or mid channels after it */
	mx = B * up_c * F * H * W;
	if (B * m * F2 * H2 * W2 > mx)
		mx = B * m * F2 * H2 * W2;
	if (B * c->in_channels * F2 * H2 * W2 > mx)
		mx = B * c->in_channels * F2 * H2 * W2;
	bytes = (size_t)(4 * mx) * sizeof(float) + (size_t)6 * 256;
	if (u->pool == NULL || gpu_pool_capacity(u->pool) < bytes) {
		gpu_pool_free(u->pool);
		u->pool = NULL;
		if ((st = gpu_pool_create(u->ctx, bytes, &u->pool, err)))
			return st;
	}
	mark = gpu_pool_mark(u->pool);
	gpu_cmd_begin(cmd);
	for (int i = 0; i < 4; i++)
		OP(gpu_pool_tensor(u->pool, GPU_F32, 1, SHAPE(mx), &slot[i], err));
	{
		struct gpu_tensor xin = *x;
		struct gpu_tensor h = view5(&slot[0], nB, m, nF, H, W);

		if (two_d) {
			/* permute(0, 2, 1, 3, 4).flatten(0, 1) */
			static const int perm[5] = { 0, 2, 1, 3, 4 };
			struct gpu_tensor xp = gpu_tensor_permute(x, perm);
			struct gpu_tensor f = view5(&slot[3], B, F, c->in_channels,
			    H, W);

			OP(ops_copy(cmd, &f, &xp));
			xin = view5(&slot[3], nB, c->in_channels, 1, H, W);
		}
		OP(conv(cmd, &h, &xin, &u->initial_conv));
		DUMP("initial_conv", h);
		OP(ops_group_norm(cmd, &h, &h, GN_GROUPS, &u->initial_norm_w,
		    &u->initial_norm_b, GN_EPS));
		DUMP("initial_norm", h);
		OP(ops_silu(cmd, &h, &h));
	}
	for (int i = 0; i < c->num_blocks_per_stage; i++) {
		OP(resblock(cmd, slot, &u->res[i], s, 1 - s, nB, m, nF, H, W));
		s = 1 - s;
		if (dump) {
			struct gpu_tensor h = view5(&slot[s], nB, m, nF, H, W);

			snprintf(name, sizeof(name), "res_blocks.%d", i);
			DUMP(name, h);
		}
	}
	{
		struct gpu_tensor h = view5(&slot[s], nB, m, nF, H, W);
		struct gpu_tensor cv = view5(&slot[2], nB, up_c, nF, H, W);
		struct gpu_tensor d = view5(&slot[3], nB, m, u->up_ft * nF, H2, W2);

		OP(conv(cmd, &cv, &h, &u->up_conv));
		/* PixelShuffleND: channel ((c*ft + t)*fh + h)*fw + w ->
		 * (ft*f + t, fh*h + h', fw*w + w') */
		OP(ops_depth_to_space(cmd, &d, &cv, u->up_ft, u->up_fh, u->up_fw, 0));
		if (dump) {
			if (!two_d && !c->temporal_upsample) {
				/* upstream folds frames into the batch here */
				static const int perm[5] = { 0, 2, 1, 3, 4 };
				struct gpu_tensor dp = gpu_tensor_permute(&d, perm);
				struct gpu_tensor f = view5(&slot[2], B, F, m, H2, W2);
				struct gpu_tensor f4 = gpu_tensor_reshape(&f, 4,
				    SHAPE(B * F, m, H2, W2));

				OP(ops_copy(cmd, &f, &dp));
				DUMP("upsampler", f4);
			} else if (two_d) {
				struct gpu_tensor d4 = gpu_tensor_reshape(&d, 4,
				    SHAPE(nB, m, H2, W2));

				DUMP("upsampler", d4);
			} else {
				DUMP("upsampler", d);
			}
		}
		if (c->temporal_upsample) {
			/* hidden_states[:, :, 1:] */
			struct gpu_tensor ds = gpu_tensor_slice(&d, 2, 1, F2 - 1);

			F2 -= 1;
			h = view5(&slot[1 - s], nB, m, F2, H2, W2);
			OP(ops_copy(cmd, &h, &ds));
			s = 1 - s;
		} else {
			h = view5(&slot[1 - s], nB, m, nF, H2, W2);
			OP(ops_copy(cmd, &h, &d));
			s = 1 - s;
		}
	}
	nF = two_d ? 1 : F2;
	for (int i = 0; i < c->num_blocks_per_stage; i++) {
		OP(resblock(cmd, slot, &u->post[i], s, 1 - s, nB, m, nF, H2, W2));
		s = 1 - s;
		if (dump) {
			struct gpu_tensor h = view5(&slot[s], nB, m, nF, H2, W2);

			snprintf(name, sizeof(name), "post_upsample_res_blocks.%d", i);
			DUMP(name, h);
		}
	}
	{
		struct gpu_tensor h = view5(&slot[s], nB, m, nF, H2, W2);

		if (two_d) {
			/* unflatten(0, (B, -1)).permute(0, 2, 1, 3, 4) */
			static const int perm[5] = { 0, 2, 1, 3, 4 };
			struct gpu_tensor o = view5(&slot[1 - s], B, F, c->in_channels,
			    H2, W2);
			struct gpu_tensor op = gpu_tensor_permute(&o, perm);

			o = view5(&slot[1 - s], nB, c->in_channels, 1, H2, W2);
			OP(conv(cmd, &o, &h, &u->final_conv));
			DUMP("final_conv", o);
			OP(ops_copy(cmd, y, &op));
		} else {
			OP(conv(cmd, y, &h, &u->final_conv));
			DUMP("final_conv", *y);
		}
	}
	st = gpu_cmd_submit(cmd, err);
out:
	if (st != LQ_OK && err != NULL && err->status == LQ_OK)
		(void)gpu_cmd_status(cmd, err);
	gpu_pool_reset(u->pool, mark);
	return st;
}
