/*
 * ltx2_vocoder.c — LTX-2's vocoders on Vulkan (diffusers
 * pipelines/ltx2/vocoder.py): LTX2Vocoder.forward with its ResBlocks, in the
 * LTX-2.0 configuration (leaky_relu, no anti-aliasing) and LTX-2.3's
 * (SnakeBeta in AntiAliasAct1d: Kaiser-sinc UpSample1d -> act ->
 * DownSample1d), and LTX2VocoderWithBWE: the stage-1 vocoder, MelSTFT of its
 * waveform, the bwe_generator on that mel and a Hann-sinc UpSample1d of the
 * stage-1 waveform as the skip.
 *
 * Upstream details mirrored here:
 * - mel [B, C, T, M] is transposed to [B, C, M, T] and flattened, so the
 *   conv_in channel is c·M + m;
 * - with leaky_relu every stage applies F.leaky_relu(leaky_relu_negative_
 *   slope) before its ConvTranspose1d (padding (k - u) // 2); with snake /
 *   snakebeta nothing does; then it averages the outputs of its ResBlocks
 *   (torch.stack(...).mean(0): summed in order, then divided);
 * - a ResBlock runs, per dilation, x += conv2(act2(conv1(act1(x)))) with
 *   padding "same" (d(k-1)/2 before, the rest after); leaky_relu: the
 *   configured slope for both activations (the `act_fn =` typo in
 *   ResBlock.__init__ leaves acts2 holding acts1's last LeakyReLU, the same
 *   slope); snakebeta / snake: each its own SnakeBeta (use_beta true /
 *   false), inside AntiAliasAct1d when antialias;
 * - act_out is nn.LeakyReLU() with torch's default slope 0.01, NOT the
 *   configured one ("following the original code"), or for snake /
 *   snakebeta always AntiAliasAct1d(SnakeBeta(use_beta=True));
 * - final_act_fn "tanh" / "clamp" (to [-1, 1]) / null;
 * - AntiAliasAct1d's filters are the checkpoint's buffers
 *   (<act>.upsample.filter, <act>.downsample.filter); the BWE resampler's
 *   Hann-sinc filter is not stored (persistent=False) and built here as
 *   UpSample1d(window_type="hann") builds it;
 * - LTX2VocoderWithBWE pads the stage-1 waveform to a multiple of
 *   hop_length through `self.hop_length`, an attribute it does not have:
 *   only lengths that already are multiples run upstream, and latentq
 *   refuses the others by that rule.
 * Activations live in nine equal slots of one pool.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "gpu/ops.h"
#include "nn/ltx2_vocoder.h"
#include "nn/plan.h"
#include "nn/weights.h"

#define ACT_OUT_SLOPE 0.01f	/* nn.LeakyReLU()'s default negative_slope */
#define SNAKE_EPS 1e-9f		/* SnakeBeta's eps */
#define CONV_IO_KERNEL 7	/* conv_in / conv_out: kernel 7, padding 3 */
#define NSLOTS 9
/* UpSample1d(window_type="hann"): rolloff, lowpass_filter_width */
#define HANN_ROLLOFF 0.99
#define HANN_WIDTH 6

struct voc_conv {
	struct gpu_tensor w, b;
	int has_b;
};

/* One activation: LeakyReLU, or SnakeBeta / Snake (beta = alpha), either
 * plain or inside AntiAliasAct1d (aa: its two [1, 1, K] filters). */
struct voc_act {
	int snake;
	float slope;
	int aa, ratio;
	struct gpu_tensor alpha, beta, up_f, down_f;
};

struct voc_resblock {
	int n;			/* dilations */
	const int *dilation;
	struct voc_conv convs1[DIFFUSERS_MAX_VOCODER], convs2[DIFFUSERS_MAX_VOCODER];
	struct voc_act acts1[DIFFUSERS_MAX_VOCODER], acts2[DIFFUSERS_MAX_VOCODER];
};

/* One LTX2Vocoder: the whole vocoder, or one of LTX2VocoderWithBWE's two. */
struct voc_gen {
	const struct ltx2_vocoder_config *cfg;
	char prefix[16];	/* weight and dump names: "", "vocoder.", "bwe_generator." */
	struct voc_conv conv_in, conv_out;
	struct voc_conv up[DIFFUSERS_MAX_VOCODER];
	struct voc_resblock *res;	/* n_upsample · n_resnets */
	struct voc_act act_out;
	int ch[DIFFUSERS_MAX_VOCODER + 1];	/* channels: ch[0] hidden, ch[i+1] after upsampler i */
};

struct ltx2_vocoder {
	struct gpu_ctx *ctx;
	struct ltx2_vocoder_config cfg;		/* LTX2Vocoder's; the BWE's stage 1 */
	int bwe;
	struct ltx2_vocoder_bwe_config bcfg;
	struct nn_weights *w;
	struct gpu_cmd *cmd;
	struct voc_gen gen[2];		/* [1]: bwe_generator */
	/* BWE: MelSTFT's buffers on the host, the resampler's filter */
	float *forward_basis;		/* [2·n_freqs, filter_length] */
	float *mel_basis;		/* [num_mel_channels, n_freqs] */
	struct gpu_buffer *rs_buf;
	struct gpu_tensor rs_filter;	/* [1, 1, 2·width·ratio + 1] */
	int rs_width;
	struct gpu_pool *pool;
};

#define SHAPE(...) ((const int64_t[]){ __VA_ARGS__ })

/* `name`.weight of shape [d0, d1, k] and, when has_b, `name`.bias [nb]. */
static enum lq_status
load_conv(struct ltx2_vocoder *v, struct voc_conv *c, const char *name,
    int d0, int d1, int k, int nb, int has_b, struct lq_error *err)
{
	char n[160];
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

/*
 * The activation module `name` on C channels: kind from act_fn, anti-aliased
 * when `aa` (act_out of a snake vocoder always is).  SnakeBeta's
 * parameters are `name`.alpha / .beta, inside AntiAliasAct1d
 * `name`.act.alpha / .act.beta with `name`.upsample.filter and
 * `name`.downsample.filter [1, 1, antialias_kernel_size].
 */
static enum lq_status
load_act(struct ltx2_vocoder *v, const struct ltx2_vocoder_config *c,
    struct voc_act *a, const char *name, int C, int aa, int use_beta,
    float slope, struct lq_error *err)
{
	int K = c->antialias_kernel_size;
	char n[160];
	enum lq_status st;

	memset(a, 0, sizeof(*a));
	a->snake = strcmp(c->act_fn, "leaky_relu") != 0;
	a->slope = slope;
	if (!a->snake)
		return LQ_OK;
	a->aa = aa;
	a->ratio = c->antialias_ratio;
	snprintf(n, sizeof(n), "%s%s.alpha", name, aa ? ".act" : "");
	if ((st = nn_weights_get(v->w, n, 1, SHAPE(C), &a->alpha, err)))
		return st;
	a->beta = a->alpha;
	if (use_beta) {
		snprintf(n, sizeof(n), "%s%s.beta", name, aa ? ".act" : "");
		if ((st = nn_weights_get(v->w, n, 1, SHAPE(C), &a->beta, err)))
			return st;
	}
	if (!aa)
		return LQ_OK;
	snprintf(n, sizeof(n), "%s.upsample.filter", name);
	if ((st = nn_weights_get(v->w, n, 3, SHAPE(1, 1, K), &a->up_f, err)))
		return st;
	snprintf(n, sizeof(n), "%s.downsample.filter", name);
	return nn_weights_get(v->w, n, 3, SHAPE(1, 1, K), &a->down_f, err);
}

static void
free_gen(struct voc_gen *g)
{
	free(g->res);
}

void
ltx2_vocoder_free(struct ltx2_vocoder *v)
{
	if (v == NULL)
		return;
	gpu_cmd_free(v->cmd);
	gpu_pool_free(v->pool);
	nn_weights_free(v->w);
	free_gen(&v->gen[0]);
	free_gen(&v->gen[1]);
	free(v->forward_basis);
	free(v->mel_basis);
	gpu_buffer_free(v->rs_buf);
	free(v);
}

/* One LTX2Vocoder's weights under `prefix`. */
static enum lq_status
load_gen(struct ltx2_vocoder *v, struct voc_gen *g,
    const struct ltx2_vocoder_config *c, const char *prefix,
    struct lq_error *err)
{
	char n[160];
	float slope = (float)c->leaky_relu_negative_slope;
	int snake_beta = strcmp(c->act_fn, "snake") != 0;
	enum lq_status st;

	g->cfg = c;
	snprintf(g->prefix, sizeof(g->prefix), "%s", prefix);
	g->res = xcalloc((size_t)(c->n_upsample * c->n_resnets), sizeof(*g->res));
	g->ch[0] = c->hidden_channels;
	snprintf(n, sizeof(n), "%sconv_in", prefix);
	if ((st = load_conv(v, &g->conv_in, n, c->hidden_channels,
	    c->in_channels, CONV_IO_KERNEL, c->hidden_channels, 1, err)))
		return st;
	for (int i = 0; i < c->n_upsample; i++) {
		int ci = g->ch[i], co = ci / 2;

		g->ch[i + 1] = co;
		snprintf(n, sizeof(n), "%supsamplers.%d", prefix, i);
		/* ConvTranspose1d weight [in, out, k] */
		if ((st = load_conv(v, &g->up[i], n, ci, co,
		    c->upsample_kernel_sizes[i], co, 1, err)))
			return st;
		for (int r = 0; r < c->n_resnets; r++) {
			int j = i * c->n_resnets + r;
			struct voc_resblock *rb = &g->res[j];
			int k = c->resnet_kernel_sizes[r];

			rb->n = c->n_resnet_dilations[r];
			rb->dilation = c->resnet_dilations[r];
			for (int m = 0; m < rb->n; m++) {
				snprintf(n, sizeof(n), "%sresnets.%d.convs1.%d",
				    prefix, j, m);
				if ((st = load_conv(v, &rb->convs1[m], n, co, co, k,
				    co, 1, err)))
					return st;
				snprintf(n, sizeof(n), "%sresnets.%d.convs2.%d",
				    prefix, j, m);
				if ((st = load_conv(v, &rb->convs2[m], n, co, co, k,
				    co, 1, err)))
					return st;
				snprintf(n, sizeof(n), "%sresnets.%d.acts1.%d",
				    prefix, j, m);
				if ((st = load_act(v, c, &rb->acts1[m], n, co,
				    c->antialias, snake_beta, slope, err)))
					return st;
				snprintf(n, sizeof(n), "%sresnets.%d.acts2.%d",
				    prefix, j, m);
				if ((st = load_act(v, c, &rb->acts2[m], n, co,
				    c->antialias, snake_beta, slope, err)))
					return st;
			}
		}
	}
	/* act_out: AntiAliasAct1d(SnakeBeta(use_beta=True)) for either snake */
	snprintf(n, sizeof(n), "%sact_out", prefix);
	if ((st = load_act(v, c, &g->act_out, n, g->ch[c->n_upsample], 1, 1,
	    ACT_OUT_SLOPE, err)))
		return st;
	snprintf(n, sizeof(n), "%sconv_out", prefix);
	return load_conv(v, &g->conv_out, n, c->out_channels,
	    g->ch[c->n_upsample], CONV_IO_KERNEL, c->out_channels, c->final_bias,
	    err);
}

/* A [rows, cols] f32 weight as a host copy (caller frees). */
static enum lq_status
host_weight(struct ltx2_vocoder *v, const char *name, int ndim,
    const int64_t *shape, float **out, struct lq_error *err)
{
	const struct st_tensor *t = nn_weights_host(v->w, name);
	int ok = t != NULL && t->ndim == ndim;

	for (int i = 0; ok && i < ndim; i++)
		ok = t->shape[i] == shape[i];
	if (!ok) {
		error_set(err, LQ_FAILED, "LQ-NN-WMISS", "weight %s is missing "
		    "or not of the config's shape in %s", name,
		    nn_weights_path(v->w));
		error_set_field(err, "%s", name);
		return LQ_FAILED;
	}
	*out = st_tensor_to_f32(t);
	return LQ_OK;
}

/*
 * UpSample1d(ratio, window_type="hann")'s filter as upstream builds it
 * (float32 torch ops): t = (arange(K) / ratio - width) · rolloff,
 * w = cos(clamp(t, ±6) · pi / 6 / 2)^2, filter = sinc(t) · w · rolloff /
 * ratio, K = 2·width·ratio + 1, width = ceil(6 / rolloff).
 */
static void
hann_filter(int ratio, int width, float *f)
{
	int K = 2 * width * ratio + 1;

	for (int i = 0; i < K; i++) {
		float t = ((float)i / (float)ratio - (float)width) *
		    (float)HANN_ROLLOFF;
		float tc = t < -HANN_WIDTH ? -HANN_WIDTH : t > HANN_WIDTH ?
		    HANN_WIDTH : t;
		float c = cosf(tc * (float)M_PI / (float)HANN_WIDTH / 2.0f);
		float sn = t == 0.0f ? 1.0f : (float)(sin(M_PI * (double)t) /
		    (M_PI * (double)t));

		f[i] = sn * (c * c) * (float)HANN_ROLLOFF / (float)ratio;
	}
}

enum lq_status
ltx2_vocoder_load(struct gpu_ctx *ctx, const char *dir,
    struct ltx2_vocoder **out, struct lq_error *err)
{
	struct ltx2_vocoder *v = xcalloc(1, sizeof(*v));
	char *path = xasprintf("%s/config.json", dir);
	cJSON *root = NULL;
	enum lq_status st;

	*out = NULL;
	v->ctx = ctx;
	st = diffusers_load_json(path, &root, err);
	if (st == LQ_OK && diffusers_ltx2_vocoder_is_bwe(root)) {
		v->bwe = 1;
		st = diffusers_parse_ltx2_vocoder_bwe(root, path, &v->bcfg, err);
		v->cfg = v->bcfg.vocoder;
	} else if (st == LQ_OK) {
		st = diffusers_parse_ltx2_vocoder(root, path, &v->cfg, err);
	}
	cJSON_Delete(root);
	free(path);
	if (st == LQ_OK)
		st = nn_weights_load(ctx, dir, NULL, &v->w, err);
	if (st == LQ_OK)
		st = load_gen(v, &v->gen[0], &v->cfg, v->bwe ? "vocoder." : "", err);
	if (st == LQ_OK && v->bwe) {
		const struct ltx2_vocoder_bwe_config *b = &v->bcfg;
		int nf = b->filter_length / 2 + 1, ratio = b->output_sampling_rate /
		    b->input_sampling_rate, K;
		float *f;

		st = load_gen(v, &v->gen[1], &b->bwe_generator, "bwe_generator.",
		    err);
		if (st == LQ_OK)
			st = host_weight(v, "mel_stft.stft_fn.forward_basis", 3,
			    SHAPE(2 * nf, 1, b->filter_length), &v->forward_basis,
			    err);
		if (st == LQ_OK)
			st = host_weight(v, "mel_stft.mel_basis", 2,
			    SHAPE(b->num_mel_channels, nf), &v->mel_basis, err);
		/* width = ceil(lowpass_filter_width / rolloff) */
		v->rs_width = (int)ceil(HANN_WIDTH / HANN_ROLLOFF);
		K = 2 * v->rs_width * ratio + 1;
		if (st == LQ_OK)
			st = gpu_buffer_create(ctx, sizeof(float) * (size_t)K,
			    &v->rs_buf, err);
		if (st == LQ_OK) {
			v->rs_filter = gpu_tensor_make(v->rs_buf, 0, GPU_F32, 3,
			    SHAPE(1, 1, K));
			f = xmalloc(sizeof(float) * (size_t)K);
			hann_filter(ratio, v->rs_width, f);
			st = gpu_tensor_upload_f32(ctx, &v->rs_filter, f, err);
			free(f);
		}
	}
	if (st == LQ_OK)
		st = gpu_cmd_create(ctx, &v->cmd, err);
	if (st != LQ_OK) {
		ltx2_vocoder_free(v);
		return st;
	}
	*out = v;
	return LQ_OK;
}

const struct ltx2_vocoder_config *
ltx2_vocoder_config(const struct ltx2_vocoder *v)
{
	return &v->cfg;
}

const struct ltx2_vocoder_bwe_config *
ltx2_vocoder_bwe_config(const struct ltx2_vocoder *v)
{
	return v->bwe ? &v->bcfg : NULL;
}

/* Length after upsampler i (ConvTranspose1d, padding (k - u) // 2). */
static int64_t
up_len(const struct ltx2_vocoder_config *c, int i, int64_t len)
{
	int k = c->upsample_kernel_sizes[i], u = c->upsample_factors[i];

	return (len - 1) * u - 2 * ((k - u) / 2) + k;
}

/* One LTX2Vocoder's output length for T mel frames. */
static int64_t
gen_len(const struct ltx2_vocoder_config *c, int64_t T)
{
	for (int i = 0; i < c->n_upsample; i++)
		T = up_len(c, i, T);
	return T;
}

/* MelSTFT's frames for N samples: the causal conv1d over N + (window -
 * hop) samples, stride hop. */
static int64_t
stft_frames(const struct ltx2_vocoder_bwe_config *b, int64_t N)
{
	int64_t lp = b->window_length - b->hop_length;

	return (N + lp - b->filter_length) / b->hop_length + 1;
}

void
ltx2_vocoder_waveform_shape(const struct ltx2_vocoder_config *c,
    const struct ltx2_vocoder_bwe_config *bwe, const int64_t mel[4],
    int64_t out[3])
{
	if (bwe != NULL)
		c = &bwe->vocoder;
	int64_t N = gen_len(c, mel[2]);

	out[0] = mel[0];
	out[1] = c->out_channels;
	out[2] = N;
	if (bwe != NULL)
		/* num_samples · output_sampling_rate // input_sampling_rate */
		out[2] = N * bwe->output_sampling_rate / bwe->input_sampling_rate;
}

int64_t
ltx2_vocoder_stage1_samples(const struct ltx2_vocoder_config *c, int64_t T)
{
	return gen_len(c, T);
}

void
ltx2_vocoder_output_shape(const struct ltx2_vocoder *v, const int64_t mel[4],
    int64_t out[3])
{
	ltx2_vocoder_waveform_shape(&v->cfg, v->bwe ? &v->bcfg : NULL, mel, out);
}

void
ltx2_vocoder_memory(const struct ltx2_vocoder *v, size_t *weights,
    size_t *pool_capacity, size_t *pool_peak)
{
	*weights = nn_weights_device_bytes(v->w) + (v->rs_buf ?
	    gpu_buffer_size(v->rs_buf) : 0);
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

/*
 * F.pad(x, (pl, pr), mode="replicate") of x [R, 1, L] (contiguous) into
 * y [R, 1, pl + L + pr]: the middle copied, each edge a stride-0 view of
 * the edge sample.
 */
static enum lq_status
pad_replicate(struct gpu_cmd *cmd, const struct gpu_tensor *y,
    const struct gpu_tensor *x, int64_t pl, int64_t pr)
{
	int64_t L = x->shape[2];
	struct gpu_tensor mid = gpu_tensor_slice(y, 2, pl, L);
	enum lq_status st;

	if ((st = ops_copy(cmd, &mid, x)))
		return st;
	for (int side = 0; side < 2; side++) {
		int64_t n = side ? pr : pl;
		struct gpu_tensor e, d;

		if (n == 0)
			continue;
		e = gpu_tensor_slice(x, 2, side ? L - 1 : 0, 1);
		e.shape[2] = n;
		e.stride[2] = 0;
		d = gpu_tensor_slice(y, 2, side ? pl + L : 0, n);
		if ((st = ops_copy(cmd, &d, &e)))
			return st;
	}
	return LQ_OK;
}

/*
 * UpSample1d of x [R, 1, L] into y [R, 1, ratio·L] through slot `pad`:
 * replicate-pad by p, a depthwise ConvTranspose1d (stride ratio, filter f
 * [1, 1, K]) cropped by pl / pr, times ratio (the kaiser filters: p = K /
 * ratio - 1, pl = p·ratio + (K - ratio) / 2, pr = p·ratio + (K - ratio +
 * 1) / 2; hann: p = width, pl = 2·width·ratio, pr = K - ratio).  The
 * channels are rows of R = B·C, one filter for all (groups = C).
 */
static enum lq_status
upsample1d(struct gpu_cmd *cmd, const struct gpu_tensor *y,
    const struct gpu_tensor *x, const struct gpu_tensor *padslot,
    const struct gpu_tensor *f, int ratio, int p, int pl, int pr)
{
	int64_t R = x->shape[0], L = x->shape[2];
	struct gpu_tensor xp = gpu_tensor_make(padslot->buf, padslot->offset,
	    GPU_F32, 3, SHAPE(R, 1, L + 2 * p));
	struct ops_conv1d_params cp = { .stride = ratio, .dilation = 1,
	    .pad = { pl, pr }, .transposed = 1 };
	enum lq_status st;

	LQ_ASSERT(R * (L + 2 * p) <= gpu_tensor_numel(padslot));
	if ((st = pad_replicate(cmd, &xp, x, p, p)) ||
	    (st = ops_conv1d(cmd, y, &xp, f, NULL, &cp)))
		return st;
	return ops_scale(cmd, y, y, (float)ratio, 0.0f);
}

/*
 * The activation `a` of x [B, C, L] into y (y may be x); aa scratch: slots
 * s1, s2, s3 (each at least B·C·(ratio·L + 2K)).  AntiAliasAct1d:
 * UpSample1d (kaiser), SnakeBeta, DownSample1d (replicate pad K/2 + K%2 - 1
 * before, K/2 after; depthwise conv1d stride ratio).
 */
static enum lq_status
act_apply(struct gpu_cmd *cmd, const struct gpu_tensor *slot,
    const struct voc_act *a, const struct gpu_tensor *y,
    const struct gpu_tensor *x, int s1, int s2, int s3)
{
	int64_t B = x->shape[0], C = x->shape[1], L = x->shape[2], R = B * C;
	int r = a->ratio, K, p, dl, dr;
	struct gpu_tensor x1, u, u3, d, dmid, y1;
	struct ops_conv1d_params cp = { .stride = r, .dilation = 1 };
	enum lq_status st;

	if (!a->snake)
		return ops_leaky_relu(cmd, y, x, a->slope);
	if (!a->aa)
		return ops_snake_beta(cmd, y, x, &a->alpha, &a->beta, SNAKE_EPS);
	K = (int)a->up_f.shape[2];
	p = K / r - 1;
	dl = K / 2 + K % 2 - 1;
	dr = K / 2;
	x1 = gpu_tensor_reshape(x, 3, SHAPE(R, 1, L));
	u = view3(&slot[s2], R, 1, r * L);
	if ((st = upsample1d(cmd, &u, &x1, &slot[s1], &a->up_f, r, p,
	    p * r + (K - r) / 2, p * r + (K - r + 1) / 2)))
		return st;
	/* SnakeBeta straight into the middle of the down-sampler's padded
	 * input, whose edges then replicate it */
	d = view3(&slot[s3], R, 1, dl + r * L + dr);
	u3 = view3(&slot[s2], B, C, r * L);
	dmid = view3(&slot[s3], B, C, dl + r * L + dr);
	dmid = gpu_tensor_slice(&dmid, 2, dl, r * L);
	if ((st = ops_snake_beta(cmd, &dmid, &u3, &a->alpha, &a->beta,
	    SNAKE_EPS)))
		return st;
	for (int side = 0; side < 2; side++) {
		int64_t n = side ? dr : dl;
		struct gpu_tensor e, t;

		if (n == 0)
			continue;
		e = gpu_tensor_slice(&d, 2, side ? dl + r * L - 1 : dl, 1);
		e.shape[2] = n;
		e.stride[2] = 0;
		t = gpu_tensor_slice(&d, 2, side ? dl + r * L : 0, n);
		if ((st = ops_copy(cmd, &t, &e)))
			return st;
	}
	y1 = gpu_tensor_reshape(y, 3, SHAPE(R, 1, L));
	return ops_conv1d(cmd, &y1, &d, &a->down_f, NULL, &cp);
}

#define OP(x) do { if ((st = (x)) != LQ_OK) goto out; } while (0)
#define DUMP(name, t) OP(nn_dump_tensor(dump, cmd, (name), &(t), err))

/*
 * ResBlock.forward of x (slot xs, read only) into slot ys; slots t1, t2
 * scratch, 6, 7, 8 the activations'.  Per dilation m: xt = acts1[m](x);
 * xt = convs1[m](xt); xt = acts2[m](xt); xt = convs2[m](xt); x = x + xt.
 */
static enum lq_status
resblock(struct gpu_cmd *cmd, const struct gpu_tensor *slot,
    const struct voc_resblock *rb, int xs, int ys, int t1, int t2, int64_t B,
    int64_t C, int64_t L)
{
	struct gpu_tensor x = view3(&slot[xs], B, C, L);
	struct gpu_tensor y = view3(&slot[ys], B, C, L);
	struct gpu_tensor a = view3(&slot[t1], B, C, L);
	struct gpu_tensor b = view3(&slot[t2], B, C, L);
	enum lq_status st;

	for (int m = 0; m < rb->n; m++) {
		const struct gpu_tensor *in = m == 0 ? &x : &y;

		if ((st = act_apply(cmd, slot, &rb->acts1[m], &a, in, 6, 7, 8)) ||
		    (st = conv(cmd, &b, &a, &rb->convs1[m], rb->dilation[m], -1)) ||
		    (st = act_apply(cmd, slot, &rb->acts2[m], &b, &b, 6, 7, 8)) ||
		    (st = conv(cmd, &a, &b, &rb->convs2[m], 1, -1)) ||
		    (st = ops_add(cmd, &y, in, &a)))
			return st;
	}
	return LQ_OK;
}

/* Elements of the largest slot one LTX2Vocoder needs for T input frames
 * (its input, conv_in's output, every stage's, and the anti-aliased
 * activations' up-sampled scratch), from its config alone. */
static int64_t
gen_slot(const struct ltx2_vocoder_config *c, int64_t B, int64_t T)
{
	int r = c->antialias_ratio, K = c->antialias_kernel_size;
	int snake = strcmp(c->act_fn, "leaky_relu") != 0;
	int64_t L = T, ch = c->hidden_channels, mx = B * T *
	    (c->in_channels > c->hidden_channels ? c->in_channels :
	    c->hidden_channels);

	for (int i = 0; i < c->n_upsample; i++) {
		int64_t n;

		L = up_len(c, i, L);
		ch /= 2;
		n = B * ch * (snake ? r * L + 2 * K : L);
		if (n > mx)
			mx = n;
	}
	return mx;
}

/*
 * The pool of one forward of mel [B, *, T, *]: NSLOTS slots of `*slot`
 * elements (with BWE one more, the stage-1 waveform), as gpu_pool_plan
 * sizes them on `caps`.  BWE: the second generator on the STFT frames,
 * the resampler's padded input and the output count too.
 */
static uint64_t
pool_bytes(const struct ltx2_vocoder_config *c,
    const struct ltx2_vocoder_bwe_config *b, const struct device_caps *caps,
    int64_t B, int64_t T, int64_t *slot)
{
	uint64_t carve[NSLOTS + 1];
	int64_t mx = gen_slot(c, B, T);
	int n = NSLOTS;

	if (b != NULL) {
		int64_t N = gen_len(c, T), Fr = stft_frames(b, N), k;
		int ratio = b->output_sampling_rate / b->input_sampling_rate;

		if (Fr >= 1 && (k = gen_slot(&b->bwe_generator, B, Fr)) > mx)
			mx = k;
		k = B * c->out_channels * (N + 2 * (int)ceil(HANN_WIDTH /
		    HANN_ROLLOFF));
		if (k > mx)
			mx = k;
		k = B * c->out_channels * N * ratio;
		if (k > mx)
			mx = k;
		n++;
	}
	for (int i = 0; i < n; i++)
		carve[i] = (uint64_t)mx * sizeof(float);
	*slot = mx;
	return gpu_pool_plan(caps, carve, n);
}

void
ltx2_vocoder_plan(const struct ltx2_vocoder_config *c,
    const struct ltx2_vocoder_bwe_config *bwe,
    const struct nn_weights_layout *w, const struct device_caps *caps,
    const int64_t mel[4], struct nn_plan_bytes *out)
{
	int64_t B = mel[0], T = mel[2], slot, N, L;

	memset(out, 0, sizeof(*out));
	if (bwe != NULL)
		c = &bwe->vocoder;
	N = L = gen_len(c, T);
	if (w != NULL)
		out->weights = w->resident.device;
	out->activations = pool_bytes(c, bwe, caps, B, T, &slot);
	if (bwe != NULL) {
		int ratio = bwe->output_sampling_rate / bwe->input_sampling_rate;
		int64_t R = B * c->out_channels, Fr = stft_frames(bwe, N);
		int64_t nf = bwe->filter_length / 2 + 1, nm = bwe->num_mel_channels;

		L = N * ratio;
		/* the resampler's filter */
		out->weights += gpu_buffer_plan_size(sizeof(float) *
		    (uint64_t)(2 * (int)ceil(HANN_WIDTH / HANN_ROLLOFF) * ratio + 1));
		/* MelSTFT on the host: the waveform, log-mel, magnitude,
		 * phase, energy, and the two bases */
		out->host = sizeof(float) * (uint64_t)(R * N + R * nm * Fr +
		    2 * R * nf * Fr + R * Fr + 2 * nf * bwe->filter_length +
		    nm * nf);
	}
	out->io = gpu_buffer_plan_size(sizeof(float) * (uint64_t)(mel[0] *
	    mel[1] * mel[2] * mel[3])) + gpu_buffer_plan_size(sizeof(float) *
	    (uint64_t)(B * c->out_channels * L));
	out->largest = (uint64_t)slot * sizeof(float);
	snprintf(out->largest_what, sizeof(out->largest_what),
	    "the vocoder's largest activation");
	if (w != NULL && w->resident.largest > out->largest) {
		out->largest = w->resident.largest;
		snprintf(out->largest_what, sizeof(out->largest_what),
		    "weight %s", w->resident.largest_name);
	}
}

/*
 * LTX2Vocoder.forward from x [B, in_channels, T] in slot 0 (the mel
 * already transposed and flattened) into y [B, out_channels, L] (any
 * tensor outside the slots); dumps under g->prefix.
 */
static enum lq_status
gen_forward(struct ltx2_vocoder *v, const struct voc_gen *g,
    const struct gpu_tensor *slot, int64_t B, int64_t T,
    const struct gpu_tensor *y, const struct nn_dump *dump,
    struct lq_error *err)
{
	const struct ltx2_vocoder_config *c = g->cfg;
	struct gpu_cmd *cmd = v->cmd;
	float slope = (float)c->leaky_relu_negative_slope;
	int64_t L;
	char name[80];
	enum lq_status st = LQ_OK;

	{
		struct gpu_tensor x = view3(&slot[0], B, c->in_channels, T);
		struct gpu_tensor h = view3(&slot[1], B, c->hidden_channels, T);

		OP(conv(cmd, &h, &x, &g->conv_in, 1, CONV_IO_KERNEL / 2));
		snprintf(name, sizeof(name), "%sconv_in", g->prefix);
		DUMP(name, h);
	}
	/* slot 1: the stage input h; 0: upsampler output; 2: running sum;
	 * 3: a ResBlock's output; 4, 5: its scratch; 6, 7, 8: the
	 * activations' */
	L = T;
	for (int i = 0; i < c->n_upsample; i++) {
		int64_t C = g->ch[i + 1], L2 = up_len(c, i, L);
		int u = c->upsample_factors[i], k = c->upsample_kernel_sizes[i];
		struct gpu_tensor h = view3(&slot[1], B, g->ch[i], L);
		struct gpu_tensor up = view3(&slot[0], B, C, L2);
		struct gpu_tensor sum = view3(&slot[2], B, C, L2);
		struct gpu_tensor one = view3(&slot[3], B, C, L2);
		struct gpu_tensor next = view3(&slot[1], B, C, L2);
		struct ops_conv1d_params p = { .stride = u, .dilation = 1,
		    .pad = { (k - u) / 2, (k - u) / 2 }, .transposed = 1 };

		/* only leaky_relu acts here: snake activations sit in the
		 * ResBlocks */
		if (!g->act_out.snake)
			OP(ops_leaky_relu(cmd, &h, &h, slope));
		OP(ops_conv1d(cmd, &up, &h, &g->up[i].w, &g->up[i].b, &p));
		snprintf(name, sizeof(name), "%supsamplers.%d", g->prefix, i);
		DUMP(name, up);
		for (int r = 0; r < c->n_resnets; r++) {
			int j = i * c->n_resnets + r;

			/* the first ResBlock writes the sum slot itself */
			OP(resblock(cmd, slot, &g->res[j], 0, r ? 3 : 2, 4, 5, B, C,
			    L2));
			snprintf(name, sizeof(name), "%sresnets.%d", g->prefix, j);
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
		int64_t C = g->ch[c->n_upsample];
		struct gpu_tensor h = view3(&slot[1], B, C, L);

		OP(act_apply(cmd, slot, &g->act_out, &h, &h, 6, 7, 8));
		snprintf(name, sizeof(name), "%sact_out", g->prefix);
		DUMP(name, h);
		OP(conv(cmd, y, &h, &g->conv_out, 1, CONV_IO_KERNEL / 2));
		snprintf(name, sizeof(name), "%sconv_out", g->prefix);
		DUMP(name, *y);
		if (strcmp(c->final_act_fn, "tanh") == 0)
			OP(ops_act(cmd, y, y, OPS_ACT_TANH));
		else if (strcmp(c->final_act_fn, "clamp") == 0)
			OP(ops_clamp(cmd, y, y, -1.0f, 1.0f));
	}
out:
	return st;
}

/*
 * MelSTFT.forward of R waveform rows x [R, N] on the host, float32 results
 * (sums in double): the causal STFT (left pad window - hop zeros, conv1d
 * with forward_basis, stride hop) -> magnitude [R, nf, Fr], phase, energy
 * [R, Fr] (the norm over frequencies), log-mel [R, nm, Fr] =
 * log(clamp(mel_basis @ magnitude, 1e-5)).
 */
static void
mel_stft(const struct ltx2_vocoder *v, const float *x, int64_t R, int64_t N,
    float *logmel, float *mag, float *phase, float *energy)
{
	const struct ltx2_vocoder_bwe_config *b = &v->bcfg;
	int64_t nf = b->filter_length / 2 + 1, nm = b->num_mel_channels;
	int64_t Fr = stft_frames(b, N), lp = b->window_length - b->hop_length;
	int64_t FL = b->filter_length;

	for (int64_t r = 0; r < R; r++) {
		const float *xr = x + r * N;

		for (int64_t t = 0; t < Fr; t++) {
			double e = 0;

			for (int64_t f = 0; f < nf; f++) {
				double re = 0, im = 0;
				const float *br = v->forward_basis + f * FL;
				const float *bi = v->forward_basis + (f + nf) * FL;

				for (int64_t k = 0; k < FL; k++) {
					int64_t i = t * b->hop_length + k - lp;

					if (i < 0 || i >= N)
						continue;
					re += (double)xr[i] * br[k];
					im += (double)xr[i] * bi[k];
				}
				{
					float fr = (float)re, fi = (float)im;
					float m = sqrtf(fr * fr + fi * fi);

					mag[(r * nf + f) * Fr + t] = m;
					phase[(r * nf + f) * Fr + t] = atan2f(fi, fr);
					e += (double)m * m;
				}
			}
			energy[r * Fr + t] = (float)sqrt(e);
		}
		for (int64_t m = 0; m < nm; m++)
			for (int64_t t = 0; t < Fr; t++) {
				double s = 0;
				float mv;

				for (int64_t f = 0; f < nf; f++)
					s += (double)v->mel_basis[m * nf + f] *
					    mag[(r * nf + f) * Fr + t];
				mv = (float)s;
				logmel[(r * nm + m) * Fr + t] = logf(mv < 1e-5f ?
				    1e-5f : mv);
			}
	}
}

enum lq_status
ltx2_vocoder_forward(struct ltx2_vocoder *v, const struct gpu_tensor *mel,
    const struct gpu_tensor *waveform, const struct nn_dump *dump,
    struct lq_error *err)
{
	const struct ltx2_vocoder_config *c = &v->cfg;
	const struct ltx2_vocoder_bwe_config *bc = &v->bcfg;
	struct gpu_cmd *cmd = v->cmd;
	struct gpu_tensor slot[NSLOTS], x1;
	int64_t want[3], B, Cm, T, M, N = 0, Fr = 0, mx;
	size_t mark, bytes;
	float *hx = NULL, *hm = NULL, *hmag = NULL, *hph = NULL, *hen = NULL;
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
	if (v->bwe) {
		int64_t n2;

		N = gen_len(c, T);
		if (N % bc->hop_length != 0) {
			/* upstream pads through self.hop_length, which
			 * LTX2VocoderWithBWE lacks (AttributeError) */
			error_set(err, LQ_FAILED, "LQ-NN-SHAPE", "vocoder: %lld mel "
			    "frames give %lld stage-1 samples, not a multiple of "
			    "hop_length %d: LTX2VocoderWithBWE's padding for that "
			    "fails upstream", (long long)T, (long long)N,
			    bc->hop_length);
			error_set_field(err, "mel");
			error_set_hint(err, "give a mel whose frames x %d samples "
			    "divide by %d", c->hop, bc->hop_length);
			return LQ_FAILED;
		}
		Fr = stft_frames(bc, N);
		n2 = gen_len(&bc->bwe_generator, Fr);
		if (Fr < 1 || n2 != want[2] || bc->bwe_generator.out_channels !=
		    c->out_channels) {
			error_set(err, LQ_FAILED, "LQ-NN-SHAPE", "vocoder: the BWE "
			    "residual [%lld, %d, %lld] and the resampled stage-1 "
			    "waveform [%lld, %d, %lld] differ", (long long)B,
			    bc->bwe_generator.out_channels, (long long)n2,
			    (long long)B, c->out_channels, (long long)want[2]);
			error_set_field(err, "mel");
			return LQ_FAILED;
		}
	}
	bytes = (size_t)pool_bytes(c, v->bwe ? bc : NULL, gpu_ctx_caps(v->ctx),
	    B, T, &mx);
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

		OP(ops_copy(cmd, &f, &mt));
	}
	if (!v->bwe) {
		OP(gen_forward(v, &v->gen[0], slot, B, T, waveform, dump, err));
		st = gpu_cmd_submit(cmd, err);
		goto out;
	}
	/* 1. stage 1 into its own tensor x1 [B, C, N] */
	{
		struct gpu_tensor x1s;

		OP(gpu_pool_tensor(v->pool, GPU_F32, 1, SHAPE(mx), &x1s, err));
		x1 = view3(&x1s, B, c->out_channels, N);
	}
	OP(gen_forward(v, &v->gen[0], slot, B, T, &x1, dump, err));
	DUMP("vocoder", x1);
	OP(gpu_cmd_submit(cmd, err));
	/* 2. MelSTFT of x1.flatten(0, 1) on the host; its log-mel
	 * [B·C, nm, Fr] is the bwe generator's flattened input as it stands
	 * (mel.unflatten(0, (-1, C)).transpose(2, 3), then the generator's own
	 * transpose(2, 3).flatten(1, 2): channel c·nm + m) */
	{
		int64_t R = B * c->out_channels, nf = bc->filter_length / 2 + 1;
		int64_t nm = bc->num_mel_channels;
		struct gpu_tensor xin = view3(&slot[0], B, c->out_channels * nm, Fr);

		hx = xmalloc(sizeof(float) * (size_t)(R * N));
		hm = xmalloc(sizeof(float) * (size_t)(R * nm * Fr));
		hmag = xmalloc(sizeof(float) * (size_t)(R * nf * Fr));
		hph = xmalloc(sizeof(float) * (size_t)(R * nf * Fr));
		hen = xmalloc(sizeof(float) * (size_t)(R * Fr));
		OP(gpu_tensor_download_f32(v->ctx, &x1, hx, err));
		mel_stft(v, hx, R, N, hm, hmag, hph, hen);
		OP(nn_dump_host(dump, "mel_stft.out0", 3, SHAPE(R, nm, Fr), hm, err));
		OP(nn_dump_host(dump, "mel_stft.out1", 3, SHAPE(R, nf, Fr), hmag, err));
		OP(nn_dump_host(dump, "mel_stft.out2", 3, SHAPE(R, nf, Fr), hph, err));
		OP(nn_dump_host(dump, "mel_stft.out3", 2, SHAPE(R, Fr), hen, err));
		OP(gpu_tensor_upload_f32(v->ctx, &xin, hm, err));
	}
	gpu_cmd_begin(cmd);
	/* 3. the bwe generator's residual into the output tensor */
	OP(gen_forward(v, &v->gen[1], slot, B, Fr, waveform, dump, err));
	DUMP("bwe_generator", *waveform);
	/* 4. skip = resampler(x1) (hann UpSample1d), waveform = clamp(residual
	 * + skip, -1, 1), already num_samples · ratio long */
	{
		int ratio = bc->output_sampling_rate / bc->input_sampling_rate;
		int w = v->rs_width, K = 2 * w * ratio + 1;
		int64_t R = B * c->out_channels;
		struct gpu_tensor x1r = gpu_tensor_reshape(&x1, 3, SHAPE(R, 1, N));
		struct gpu_tensor sk = view3(&slot[1], R, 1, ratio * N);
		struct gpu_tensor sk3 = view3(&slot[1], B, c->out_channels,
		    ratio * N);

		OP(upsample1d(cmd, &sk, &x1r, &slot[0], &v->rs_filter, ratio, w,
		    2 * w * ratio, K - ratio));
		DUMP("resampler", sk3);
		OP(ops_add(cmd, waveform, waveform, &sk3));
		OP(ops_clamp(cmd, waveform, waveform, -1.0f, 1.0f));
	}
	st = gpu_cmd_submit(cmd, err);
out:
	if (st != LQ_OK && err != NULL && err->status == LQ_OK)
		(void)gpu_cmd_status(cmd, err);
	free(hx);
	free(hm);
	free(hmag);
	free(hph);
	free(hen);
	gpu_pool_reset(v->pool, mark);
	return st;
}
