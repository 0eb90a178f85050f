/*
 * ltx2_vocoder.c — LTX2Vocoder on Vulkan (diffusers
 * pipelines/ltx2/vocoder.py: LTX2Vocoder.forward, ResBlock), the LTX-2.0
 * configuration: leaky_relu activations, no anti-aliasing.
 *
 * Upstream details mirrored here:
 * - mel [B, C, T, M] is transposed to [B, C, M, T] and flattened, so the
 *   conv_in channel is c·M + m;
 * - every stage applies F.leaky_relu(leaky_relu_negative_slope) before its
 *   ConvTranspose1d (padding (k - u) // 2), then averages the outputs of
 *   its ResBlocks (torch.stack(...).mean(0): summed in order, then divided);
 * - a ResBlock runs, per dilation, x += conv2(act(conv1(act(x)))) with
 *   padding "same" (d(k-1)/2 before, the rest after) and the configured
 *   slope for both activations (the `act_fn =` typo in ResBlock.__init__
 *   leaves acts2 holding acts1's last LeakyReLU, the same slope);
 * - act_out is nn.LeakyReLU() with torch's default slope 0.01, NOT the
 *   configured one ("following the original code");
 * - final_act_fn "tanh" / "clamp" (to [-1, 1]) / null.
 * Activations live in six equal slots of one pool.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "gpu/ops.h"
#include "nn/ltx2_vocoder.h"
#include "nn/weights.h"

#define ACT_OUT_SLOPE 0.01f	/* nn.LeakyReLU()'s default negative_slope */
#define CONV_IO_KERNEL 7	/* conv_in / conv_out: kernel 7, padding 3 */
#define NSLOTS 6

struct voc_conv {
	struct gpu_tensor w, b;
	int has_b;
};

struct voc_resblock {
	int n;			/* dilations */
	const int *dilation;
	struct voc_conv convs1[DIFFUSERS_MAX_VOCODER], convs2[DIFFUSERS_MAX_VOCODER];
};

struct ltx2_vocoder {
	struct gpu_ctx *ctx;
	struct ltx2_vocoder_config cfg;
	struct nn_weights *w;
	struct gpu_cmd *cmd;
	struct voc_conv conv_in, conv_out;
	struct voc_conv up[DIFFUSERS_MAX_VOCODER];
	struct voc_resblock *res;	/* n_upsample · n_resnets */
	int ch[DIFFUSERS_MAX_VOCODER + 1];	/* channels: ch[0] hidden, ch[i+1] after upsampler i */
	struct gpu_pool *pool;
};

#define SHAPE(...) ((const int64_t[]){ __VA_ARGS__ })

/* `name`.weight of shape [d0, d1, k] and, when has_b, `name`.bias [nb]. */
static enum lq_status
load_conv(struct ltx2_vocoder *v, struct voc_conv *c, const char *name,
    int d0, int d1, int k, int nb, int has_b, struct lq_error *err)
{
	char n[128];
	enum lq_status st;

	snprintf(n, sizeof(n), "%s.weight", name);
	if ((st = nn_weights_get(v->w, n, 3, SHAPE(d0, d1, k), &c->w, err)))
		return st;
	c->has_b = has_b;
	if (!has_b)
		return LQ_OK;
	snprintf(n, sizeof(n), "%s.bias", name);
	return nn_weights_get(v->w, n, 1, SHAPE(nb), &c->b, err);
}

void
ltx2_vocoder_free(struct ltx2_vocoder *v)
{
	if (v == NULL)
		return;
	gpu_cmd_free(v->cmd);
	gpu_pool_free(v->pool);
	nn_weights_free(v->w);
	free(v->res);
	free(v);
}

enum lq_status
ltx2_vocoder_load(struct gpu_ctx *ctx, const char *dir,
    struct ltx2_vocoder **out, struct lq_error *err)
{
	struct ltx2_vocoder *v = xcalloc(1, sizeof(*v));
	char *path = xasprintf("%s/config.json", dir);
	const struct ltx2_vocoder_config *c = &v->cfg;
	cJSON *root = NULL;
	char n[128];
	enum lq_status st;

	*out = NULL;
	v->ctx = ctx;
	st = diffusers_load_json(path, &root, err);
	if (st == LQ_OK)
		st = diffusers_parse_ltx2_vocoder(root, path, &v->cfg, err);
	cJSON_Delete(root);
	free(path);
	if (st == LQ_OK)
		st = nn_weights_load(ctx, dir, NULL, &v->w, err);
	if (st != LQ_OK)
		goto fail;
	v->res = xcalloc((size_t)(c->n_upsample * c->n_resnets), sizeof(*v->res));
	v->ch[0] = c->hidden_channels;
	if ((st = load_conv(v, &v->conv_in, "conv_in", c->hidden_channels,
	    c->in_channels, CONV_IO_KERNEL, c->hidden_channels, 1, err)))
		goto fail;
	for (int i = 0; i < c->n_upsample; i++) {
		int ci = v->ch[i], co = ci / 2;

		v->ch[i + 1] = co;
		snprintf(n, sizeof(n), "upsamplers.%d", i);
		/* ConvTranspose1d weight [in, out, k] */
		if ((st = load_conv(v, &v->up[i], n, ci, co,
		    c->upsample_kernel_sizes[i], co, 1, err)))
			goto fail;
		for (int r = 0; r < c->n_resnets; r++) {
			struct voc_resblock *rb = &v->res[i * c->n_resnets + r];
			int k = c->resnet_kernel_sizes[r];

			rb->n = c->n_resnet_dilations[r];
			rb->dilation = c->resnet_dilations[r];
			for (int m = 0; m < rb->n; m++) {
				snprintf(n, sizeof(n), "resnets.%d.convs1.%d",
				    i * c->n_resnets + r, m);
				if ((st = load_conv(v, &rb->convs1[m], n, co, co, k,
				    co, 1, err)))
					goto fail;
				snprintf(n, sizeof(n), "resnets.%d.convs2.%d",
				    i * c->n_resnets + r, m);
				if ((st = load_conv(v, &rb->convs2[m], n, co, co, k,
				    co, 1, err)))
					goto fail;
			}
		}
	}
	if ((st = load_conv(v, &v->conv_out, "conv_out", c->out_channels,
	    v->ch[c->n_upsample], CONV_IO_KERNEL, c->out_channels,
	    c->final_bias, err)) ||
	    (st = gpu_cmd_create(ctx, &v->cmd, err)))
		goto fail;
	*out = v;
	return LQ_OK;
fail:
	ltx2_vocoder_free(v);
	return st;
}

const struct ltx2_vocoder_config *
ltx2_vocoder_config(const struct ltx2_vocoder *v)
{
	return &v->cfg;
}

/* Length after upsampler i (ConvTranspose1d, padding (k - u) // 2). */
static int64_t
up_len(const struct ltx2_vocoder_config *c, int i, int64_t len)
{
	int k = c->upsample_kernel_sizes[i], u = c->upsample_factors[i];

	return (len - 1) * u - 2 * ((k - u) / 2) + k;
}

void
ltx2_vocoder_output_shape(const struct ltx2_vocoder *v, const int64_t mel[4],
    int64_t out[3])
{
	int64_t len = mel[2];

	for (int i = 0; i < v->cfg.n_upsample; i++)
		len = up_len(&v->cfg, i, len);
	out[0] = mel[0];
	out[1] = v->cfg.out_channels;
	out[2] = len;
}

void
ltx2_vocoder_memory(const struct ltx2_vocoder *v, size_t *weights,
    size_t *pool_capacity, size_t *pool_peak)
{
	*weights = nn_weights_device_bytes(v->w);
	*pool_capacity = v->pool ? gpu_pool_capacity(v->pool) : 0;
	*pool_peak = v->pool ? gpu_pool_peak(v->pool) : 0;
}

static struct gpu_tensor
view3(const struct gpu_tensor *slot, int64_t B, int64_t C, int64_t L)
{
	LQ_ASSERT(B * C * L <= gpu_tensor_numel(slot));
	return gpu_tensor_make(slot->buf, slot->offset, GPU_F32, 3,
	    SHAPE(B, C, L));
}

/* torch Conv1d(k, dilation d, padding p) with p = "same" (pad < 0) or p. */
static enum lq_status
conv(struct gpu_cmd *cmd, const struct gpu_tensor *y,
    const struct gpu_tensor *x, const struct voc_conv *c, int d, int pad)
{
	int k = (int)c->w.shape[2];
	struct ops_conv1d_params p = { .stride = 1, .dilation = d };

	if (pad < 0) {
		/* padding="same": total d(k-1), the odd one after */
		p.pad[0] = d * (k - 1) / 2;
		p.pad[1] = d * (k - 1) - p.pad[0];
	} else {
		p.pad[0] = p.pad[1] = pad;
	}
	return ops_conv1d(cmd, y, x, &c->w, c->has_b ? &c->b : NULL, &p);
}

#define OP(x) do { if ((st = (x)) != LQ_OK) goto out; } while (0)
#define DUMP(name, t) OP(nn_dump_tensor(dump, cmd, (name), &(t), err))

/*
 * ResBlock.forward of x (slot xs, read only) into slot ys; slots t1, t2
 * scratch.  Per dilation m: xt = act(x); xt = convs1[m](xt); xt = act(xt);
 * xt = convs2[m](xt); x = x + xt.
 */
static enum lq_status
resblock(struct gpu_cmd *cmd, const struct gpu_tensor *slot,
    const struct voc_resblock *rb, float slope, int xs, int ys, int t1,
    int t2, int64_t B, int64_t C, int64_t L)
{
	struct gpu_tensor x = view3(&slot[xs], B, C, L);
	struct gpu_tensor y = view3(&slot[ys], B, C, L);
	struct gpu_tensor a = view3(&slot[t1], B, C, L);
	struct gpu_tensor b = view3(&slot[t2], B, C, L);
	enum lq_status st;

	for (int m = 0; m < rb->n; m++) {
		const struct gpu_tensor *in = m == 0 ? &x : &y;

		if ((st = ops_leaky_relu(cmd, &a, in, slope)) ||
		    (st = conv(cmd, &b, &a, &rb->convs1[m], rb->dilation[m], -1)) ||
		    (st = ops_leaky_relu(cmd, &b, &b, slope)) ||
		    (st = conv(cmd, &a, &b, &rb->convs2[m], 1, -1)) ||
		    (st = ops_add(cmd, &y, in, &a)))
			return st;
	}
	return LQ_OK;
}

enum lq_status
ltx2_vocoder_forward(struct ltx2_vocoder *v, const struct gpu_tensor *mel,
    const struct gpu_tensor *waveform, const struct nn_dump *dump,
    struct lq_error *err)
{
	const struct ltx2_vocoder_config *c = &v->cfg;
	struct gpu_cmd *cmd = v->cmd;
	struct gpu_tensor slot[NSLOTS];
	int64_t want[3], B, Cm, T, M, L, mx;
	float slope = (float)c->leaky_relu_negative_slope;
	size_t mark, bytes;
	char name[64];
	enum lq_status st;

	if (mel->ndim != 4 || mel->shape[1] * mel->shape[3] != c->in_channels) {
		char buf[96];

		gpu_tensor_describe(mel, buf, sizeof(buf));
		return error_set(err, LQ_FAILED, "LQ-NN-SHAPE", "vocoder: mel is "
		    "%s, expected [B, C, T, M] with C * M = in_channels %d (the "
		    "audio VAE's out_ch * mel_bins)", buf, c->in_channels);
	}
	ltx2_vocoder_output_shape(v, mel->shape, want);
	if (waveform->ndim != 3 || memcmp(waveform->shape, want, sizeof(want)))
		return error_set(err, LQ_FAILED, "LQ-NN-SHAPE", "vocoder: waveform "
		    "must be [%lld, %lld, %lld]", (long long)want[0],
		    (long long)want[1], (long long)want[2]);
	B = mel->shape[0];
	Cm = mel->shape[1];
	T = mel->shape[2];
	M = mel->shape[3];
	/* the largest activation: the input, conv_in's, any stage's */
	mx = B * T * (c->in_channels > c->hidden_channels ? c->in_channels :
	    c->hidden_channels);
	L = T;
	for (int i = 0; i < c->n_upsample; i++) {
		L = up_len(c, i, L);
		if (B * v->ch[i + 1] * L > mx)
			mx = B * v->ch[i + 1] * L;
	}
	bytes = (size_t)(NSLOTS * mx) * sizeof(float) + (size_t)NSLOTS * 256;
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
	{
		/* hidden_states.transpose(2, 3).flatten(1, 2) */
		static const int perm[4] = { 0, 1, 3, 2 };
		struct gpu_tensor mt = gpu_tensor_permute(mel, perm);
		struct gpu_tensor f = gpu_tensor_make(slot[0].buf, slot[0].offset,
		    GPU_F32, 4, SHAPE(B, Cm, M, T));
		struct gpu_tensor x = view3(&slot[0], B, c->in_channels, T);
		struct gpu_tensor h = view3(&slot[1], B, c->hidden_channels, T);

		OP(ops_copy(cmd, &f, &mt));
		OP(conv(cmd, &h, &x, &v->conv_in, 1, CONV_IO_KERNEL / 2));
		DUMP("conv_in", h);
	}
	/* slot 1: the stage input h; 0: upsampler output; 2: running sum;
	 * 3: a ResBlock's output; 4, 5: its scratch */
	L = T;
	for (int i = 0; i < c->n_upsample; i++) {
		int64_t C = v->ch[i + 1], L2 = up_len(c, i, L);
		int u = c->upsample_factors[i], k = c->upsample_kernel_sizes[i];
		struct gpu_tensor h = view3(&slot[1], B, v->ch[i], L);
		struct gpu_tensor up = view3(&slot[0], B, C, L2);
		struct gpu_tensor sum = view3(&slot[2], B, C, L2);
		struct gpu_tensor one = view3(&slot[3], B, C, L2);
		struct gpu_tensor next = view3(&slot[1], B, C, L2);
		struct ops_conv1d_params p = { .stride = u, .dilation = 1,
		    .pad = { (k - u) / 2, (k - u) / 2 }, .transposed = 1 };

		OP(ops_leaky_relu(cmd, &h, &h, slope));
		OP(ops_conv1d(cmd, &up, &h, &v->up[i].w, &v->up[i].b, &p));
		snprintf(name, sizeof(name), "upsamplers.%d", i);
		DUMP(name, up);
		for (int r = 0; r < c->n_resnets; r++) {
			int j = i * c->n_resnets + r;

			/* the first ResBlock writes the sum slot itself */
			OP(resblock(cmd, slot, &v->res[j], slope, 0, r ? 3 : 2, 4,
			    5, B, C, L2));
			snprintf(name, sizeof(name), "resnets.%d", j);
			if (r)
				DUMP(name, one);
			else
				DUMP(name, sum);
			if (r)
				OP(ops_add(cmd, &sum, &sum, &one));
		}
		OP(ops_scale(cmd, &next, &sum, 1.0f / (float)c->n_resnets, 0.0f));
		L = L2;
	}
	{
		int64_t C = v->ch[c->n_upsample];
		struct gpu_tensor h = view3(&slot[1], B, C, L);

		OP(ops_leaky_relu(cmd, &h, &h, ACT_OUT_SLOPE));
		DUMP("act_out", h);
		OP(conv(cmd, waveform, &h, &v->conv_out, 1, CONV_IO_KERNEL / 2));
		DUMP("conv_out", *waveform);
		if (strcmp(c->final_act_fn, "tanh") == 0)
			OP(ops_act(cmd, waveform, waveform, OPS_ACT_TANH));
		else if (strcmp(c->final_act_fn, "clamp") == 0)
			OP(ops_clamp(cmd, waveform, waveform, -1.0f, 1.0f));
	}
	st = gpu_cmd_submit(cmd, err);
out:
	if (st != LQ_OK && err != NULL && err->status == LQ_OK)
		(void)gpu_cmd_status(cmd, err);
	gpu_pool_reset(v->pool, mark);
	return st;
}
