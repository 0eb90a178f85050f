/*
 * ltx2_connectors.c — LTX2TextConnectors on Vulkan (diffusers
 * pipelines/ltx2/connectors.py: per_layer_masked_mean_norm,
 * LTX2RotaryPosEmbed1d, LTX2TransformerBlock1d, LTX2ConnectorTransformer1d,
 * LTX2TextConnectors.forward; the attention is nn/ltx2_attn.h's).
 *
 * The masked mean/range normalisation and the RoPE table are float32
 * islands computed on the CPU in upstream's order of operations (the
 * table's angles reach ~1.6e4 rad, where float32 rounding is the largest
 * difference from exact math); everything else runs on the device.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "gpu/ops.h"
#include "nn/ltx2_attn.h"
#include "nn/ltx2_connectors.h"
#include "nn/plan.h"
#include "nn/weights.h"

#define MASKED_NORM_EPS 1e-6	/* per_layer_masked_mean_norm's eps */
#define RMS_EPS 1e-6f		/* the blocks' and norm_out's torch RMSNorm eps */
#define BINARIZE_THRESHOLD -9000.0f	/* attn_mask_binarize_threshold */
#define FF_MULT 4		/* FeedForward's mult */

struct conn_block {
	struct ltx2_attn attn1;
	struct gpu_tensor ff0_w, ff0_b, ff2_w, ff2_b;
};

struct conn {
	const char *name;		/* "video_connector", "audio_connector" */
	const struct ltx2_connector_config *cfg;
	struct gpu_tensor registers;	/* [R, C] */
	struct conn_block *blocks;
};

struct ltx2_connectors {
	struct gpu_ctx *ctx;
	struct ltx2_connectors_config cfg;
	struct nn_weights *w;
	struct gpu_cmd *cmd;
	struct gpu_tensor proj_w, proj_b;
	struct conn side[2];		/* video, audio */
	struct gpu_pool *pool;
};

#define SHAPE(...) ((const int64_t[]){ __VA_ARGS__ })

void
ltx2_connectors_call_init(struct ltx2_connectors_call *c)
{
	c->padding_right = 0;
	c->scale_factor = 8;
}

enum lq_status
ltx2_connectors_call_set(struct ltx2_connectors_call *c, const char *name,
    const char *value, struct lq_error *err)
{
	char *end;
	long v;

	if (strcmp(name, "padding_side") == 0) {
		if (strcmp(value, "left") == 0 || strcmp(value, "right") == 0) {
			c->padding_right = value[0] == 'r';
			return LQ_OK;
		}
		error_set(err, LQ_FAILED, "LQ-NN-INPUT", "padding_side \"%s\" is "
		    "not left or right", value);
		error_set_field(err, "padding_side");
		error_set_hint(err, "padding_side=left is upstream's default "
		    "(the Gemma tokenizer pads on the left)");
		return LQ_FAILED;
	}
	if (strcmp(name, "scale_factor") == 0) {
		v = strtol(value, &end, 10);
		if (end != value && *end == '\0' && v >= 1 && v <= 1 << 20) {
			c->scale_factor = (int)v;
			return LQ_OK;
		}
		error_set(err, LQ_FAILED, "LQ-NN-INPUT", "scale_factor \"%s\" is "
		    "not a positive integer", value);
		error_set_field(err, "scale_factor");
		error_set_hint(err, "upstream's default is scale_factor=8");
		return LQ_FAILED;
	}
	error_set(err, LQ_FAILED, "LQ-NN-INPUT", "the connectors take no "
	    "argument \"%s\"", name);
	error_set_field(err, "%s", name);
	error_set_hint(err, "set padding_side=left|right or scale_factor=N");
	return LQ_FAILED;
}

static enum lq_status
load_side(struct ltx2_connectors *c, struct conn *s, const char *name,
    const struct ltx2_connector_config *cfg, struct lq_error *err)
{
	int C = c->cfg.caption_channels;
	char n[160];
	enum lq_status st;

	s->name = name;
	s->cfg = cfg;
	s->blocks = xcalloc((size_t)cfg->num_layers + 1, sizeof(*s->blocks));
	if (cfg->num_learnable_registers) {
		snprintf(n, sizeof(n), "%s.learnable_registers", name);
		if ((st = nn_weights_get(c->w, n, 2,
		    SHAPE(cfg->num_learnable_registers, C), &s->registers, err)))
			return st;
	}
	for (int i = 0; i < cfg->num_layers; i++) {
		struct conn_block *b = &s->blocks[i];

		snprintf(n, sizeof(n), "%s.transformer_blocks.%d.attn1", name, i);
		if ((st = ltx2_attn_load(c->w, n, C, C, cfg->num_attention_heads,
		    cfg->attention_head_dim, 1, 1, cfg->gated_attn, &b->attn1,
		    err)))
			return st;
		b->attn1.rope_split = c->cfg.rope_split;
		snprintf(n, sizeof(n), "%s.transformer_blocks.%d.ff.net.0.proj.weight",
		    name, i);
		if ((st = nn_weights_get(c->w, n, 2, SHAPE(FF_MULT * C, C),
		    &b->ff0_w, err)))
			return st;
		snprintf(n, sizeof(n), "%s.transformer_blocks.%d.ff.net.0.proj.bias",
		    name, i);
		if ((st = nn_weights_get(c->w, n, 1, SHAPE(FF_MULT * C), &b->ff0_b,
		    err)))
			return st;
		snprintf(n, sizeof(n), "%s.transformer_blocks.%d.ff.net.2.weight",
		    name, i);
		if ((st = nn_weights_get(c->w, n, 2, SHAPE(C, FF_MULT * C),
		    &b->ff2_w, err)))
			return st;
		snprintf(n, sizeof(n), "%s.transformer_blocks.%d.ff.net.2.bias",
		    name, i);
		if ((st = nn_weights_get(c->w, n, 1, SHAPE(C), &b->ff2_b, err)))
			return st;
	}
	return LQ_OK;
}

void
ltx2_connectors_free(struct ltx2_connectors *c)
{
	if (c == NULL)
		return;
	gpu_cmd_free(c->cmd);
	gpu_pool_free(c->pool);
	nn_weights_free(c->w);
	free(c->side[0].blocks);
	free(c->side[1].blocks);
	free(c);
}

enum lq_status
ltx2_connectors_load(struct gpu_ctx *ctx, const char *dir,
    struct ltx2_connectors **out, struct lq_error *err)
{
	struct ltx2_connectors *c = xcalloc(1, sizeof(*c));
	char *path = xasprintf("%s/config.json", dir);
	cJSON *root = NULL;
	int C, CL;
	enum lq_status st;

	*out = NULL;
	c->ctx = ctx;
	st = diffusers_load_json(path, &root, err);
	if (st == LQ_OK)
		st = diffusers_parse_ltx2_connectors(root, path, &c->cfg, err);
	cJSON_Delete(root);
	free(path);
	if (st == LQ_OK)
		st = nn_weights_load(ctx, dir, NULL, &c->w, err);
	if (st != LQ_OK)
		goto fail;
	C = c->cfg.caption_channels;
	CL = C * c->cfg.text_proj_in_factor;
	if ((st = nn_weights_get(c->w, "text_proj_in.weight", 2, SHAPE(C, CL),
	    &c->proj_w, err)) ||
	    (c->cfg.proj_bias && (st = nn_weights_get(c->w, "text_proj_in.bias",
	    1, SHAPE(C), &c->proj_b, err))) ||
	    (st = load_side(c, &c->side[0], "video_connector", &c->cfg.video,
	    err)) ||
	    (st = load_side(c, &c->side[1], "audio_connector", &c->cfg.audio,
	    err)) ||
	    (st = gpu_cmd_create(ctx, &c->cmd, err)))
		goto fail;
	*out = c;
	return LQ_OK;
fail:
	ltx2_connectors_free(c);
	return st;
}

const struct ltx2_connectors_config *
ltx2_connectors_config(const struct ltx2_connectors *c)
{
	return &c->cfg;
}

void
ltx2_connectors_memory(const struct ltx2_connectors *c, size_t *weights,
    size_t *pool_capacity, size_t *pool_peak)
{
	*weights = nn_weights_device_bytes(c->w);
	*pool_capacity = c->pool ? gpu_pool_capacity(c->pool) : 0;
	*pool_peak = c->pool ? gpu_pool_peak(c->pool) : 0;
}

/*
 * per_layer_masked_mean_norm: x [B, T, C, L] (flattened c·L + l) ->
 * out, same layout.  Per sample and layer l, over the n valid tokens
 * (placed by padding_side) and all C: mean = sum / (n·C + eps), min, max;
 * out = (x - mean) / (max - min + eps) · scale, 0 at padded tokens.  The
 * sums run in double (upstream's float32 sum is a reduction tree; double
 * is closer to both it and exact); every other step is float32 as upstream.
 */
static void
masked_mean_norm(const float *x, const int64_t *nvalid, int B, int T, int C,
    int L, int right, int scale, float *out)
{
	for (int b = 0; b < B; b++) {
		int64_t n = nvalid[b];
		int t0 = right ? 0 : T - (int)n, t1 = right ? (int)n : T;
		/* (sequence_lengths * hidden_dim) + eps: int64 + float -> f32 */
		float denom = (float)((double)(n * C) + MASKED_NORM_EPS);

		for (int l = 0; l < L; l++) {
			double sum = 0;
			float mn = INFINITY, mx = -INFINITY, mean, range;

			for (int t = t0; t < t1; t++)
				for (int ch = 0; ch < C; ch++) {
					float v = x[(((size_t)b * T + t) * C + ch) * L + l];

					sum += v;
					mn = v < mn ? v : mn;
					mx = v > mx ? v : mx;
				}
			mean = (float)sum / denom;
			range = (mx - mn) + (float)MASKED_NORM_EPS;
			for (int t = 0; t < T; t++) {
				int valid = t >= t0 && t < t1;

				for (int ch = 0; ch < C; ch++) {
					size_t i = (((size_t)b * T + t) * C + ch) * L + l;

					out[i] = valid ? (x[i] - mean) / range *
					    (float)scale : 0.0f;
				}
			}
		}
	}
}

/*
 * LTX2RotaryPosEmbed1d.forward: positions arange(T) / base_seq_len, one
 * axis (ltx2_rope_table): interleaved cos, sin [T, dim] or split
 * [T, dim/2] (no padding: dim/2 - dim/2 = 0 values).
 */
static void
rope_1d(int T, int base, int dim, double theta, int dbl, int split, float *cs,
    float *sn)
{
	float *frac = xmalloc(sizeof(float) * (size_t)T);

	for (int t = 0; t < T; t++)
		frac[t] = (float)t / (float)base;
	ltx2_rope_table(frac, T, 1, dim, theta, dbl, split, cs, sn);
	free(frac);
}

#define OP(x) do { if ((st = (x)) != LQ_OK) goto out; } while (0)
#define DUMP(name, t) OP(nn_dump_tensor(dump, cmd, (name), &(t), err))

static struct gpu_tensor
sub(const struct gpu_tensor *t, int ndim, const int64_t *shape)
{
	return gpu_tensor_make(t->buf, t->offset, GPU_F32, ndim, shape);
}

/* Device slots of one forward. */
struct conn_work {
	struct gpu_tensor proj, h, n, a, ff, key_bias, cos, sin;
	struct ltx2_attn_scratch s;
};

/*
 * LTX2ConnectorTransformer1d.forward of `proj` [B, T, C] (device) with the
 * 0/1 mask `m` (host) into w->h; `embed` receives it on the host.
 */
static enum lq_status
connector(struct ltx2_connectors *c, const struct conn *s,
    struct conn_work *w, const int64_t *m, int B, int T, float *embed,
    const struct nn_dump *dump, struct lq_error *err)
{
	struct gpu_cmd *cmd = c->cmd;
	int C = c->cfg.caption_channels, R = s->cfg->num_learnable_registers;
	int H = s->cfg->num_attention_heads;
	float *mask = xmalloc(sizeof(float) * (size_t)B * T);
	char name[192];
	enum lq_status st = LQ_OK;

	/* the additive mask (m - 1)·finfo(float32).max; zeros with registers */
	for (int64_t i = 0; i < (int64_t)B * T; i++)
		mask[i] = R ? 0.0f : (float)(m[i] - 1) * FLT_MAX;
	gpu_cmd_begin(cmd);
	if (R) {
		/* valid tokens (additive mask >= threshold) to the front in
		 * order, registers[p % R] after: copies of runs */
		for (int b = 0; b < B; b++) {
			int p = 0;

			for (int t = 0; t < T;) {
				int len = 0;

				if ((float)(m[(size_t)b * T + t] - 1) * FLT_MAX <
				    BINARIZE_THRESHOLD) {
					t++;
					continue;
				}
				while (t + len < T && m[(size_t)b * T + t + len] == 1)
					len++;
				struct gpu_tensor src = gpu_tensor_slice(&w->proj, 0, b, 1);
				struct gpu_tensor dst = gpu_tensor_slice(&w->h, 0, b, 1);

				src = gpu_tensor_slice(&src, 1, t, len);
				dst = gpu_tensor_slice(&dst, 1, p, len);
				OP(ops_copy(cmd, &dst, &src));
				p += len;
				t += len;
			}
			while (p < T) {
				int r = p % R, len = R - r < T - p ? R - r : T - p;
				struct gpu_tensor src = gpu_tensor_slice(&s->registers,
				    0, r, len);
				struct gpu_tensor dst = gpu_tensor_slice(&w->h, 0, b, 1);

				dst = gpu_tensor_slice(&dst, 1, p, len);
				dst = gpu_tensor_reshape(&dst, 2, SHAPE(len, C));
				OP(ops_copy(cmd, &dst, &src));
				p += len;
			}
		}
	} else {
		OP(ops_copy(cmd, &w->h, &w->proj));
	}
	snprintf(name, sizeof(name), "%s.blocks_input(after_registers)", s->name);
	DUMP(name, w->h);
	snprintf(name, sizeof(name), "%s.blocks_attention_mask", s->name);
	OP(nn_dump_host(dump, name, 4, SHAPE(B, 1, 1, T), mask, err));
	if (!R)
		OP(gpu_tensor_upload_f32(c->ctx, &w->key_bias, mask, err));
	for (int i = 0; i < s->cfg->num_layers; i++) {
		const struct conn_block *blk = &s->blocks[i];
		struct ltx2_attn_scratch sc = w->s;

		sc.gates = sub(&w->s.gates, 3, SHAPE(B, T, H));
		/* LTX2TransformerBlock1d: x + attn1(norm1(x)), x + ff(norm2(x)) */
		OP(ops_rms_norm(cmd, &w->n, &w->h, NULL, RMS_EPS));
		OP(ltx2_attn_forward(cmd, &blk->attn1, &w->a, NULL, NULL, &w->n,
		    NULL, &sc, &w->cos, &w->sin, NULL, NULL,
		    R ? NULL : &w->key_bias));
		snprintf(name, sizeof(name), "%s.transformer_blocks.%d.attn1",
		    s->name, i);
		DUMP(name, w->a);
		OP(ops_add(cmd, &w->h, &w->h, &w->a));
		OP(ops_rms_norm(cmd, &w->n, &w->h, NULL, RMS_EPS));
		OP(ops_linear(cmd, &w->ff, &w->n, &blk->ff0_w, &blk->ff0_b,
		    OPS_ACT_GELU_TANH));
		OP(ops_linear(cmd, &w->a, &w->ff, &blk->ff2_w, &blk->ff2_b,
		    OPS_ACT_NONE));
		OP(ops_add(cmd, &w->h, &w->h, &w->a));
		snprintf(name, sizeof(name), "%s.transformer_blocks.%d", s->name, i);
		DUMP(name, w->h);
	}
	OP(ops_rms_norm(cmd, &w->h, &w->h, NULL, RMS_EPS));
	snprintf(name, sizeof(name), "%s.norm_out", s->name);
	DUMP(name, w->h);
	snprintf(name, sizeof(name), "%s.out0", s->name);
	DUMP(name, w->h);
	snprintf(name, sizeof(name), "%s.out1", s->name);
	OP(nn_dump_host(dump, name, 4, SHAPE(B, 1, 1, T), mask, err));
	OP(gpu_cmd_submit(cmd, err));
	OP(gpu_tensor_download_f32(c->ctx, &w->h, embed, err));
out:
	if (st != LQ_OK && err != NULL && err->status == LQ_OK)
		(void)gpu_cmd_status(cmd, err);
	free(mask);
	return st;
}

static enum lq_status
input_error(struct lq_error *err, const char *field, const char *fmt, int a,
    int b)
{
	error_set(err, LQ_FAILED, "LQ-NN-INPUT", fmt, a, b);
	error_set_field(err, "%s", field);
	return LQ_FAILED;
}

/*
 * The pool of one forward of B sequences of T tokens: the stacked input
 * [B, T, C·L], eight [B, T, C] work tensors, the feed-forward's
 * [B, T, 4C], the gates' [B, T, heads], the key bias [B, T] and the RoPE
 * tables [1, T, C] x2, each with one pool alignment.
 */
static size_t
pool_bytes(const struct ltx2_connectors_config *cfg, int B, int T)
{
	size_t BT = (size_t)B * T, C = (size_t)cfg->caption_channels;
	size_t CL = C * (size_t)cfg->text_proj_in_factor;
	size_t Hmax = (size_t)(cfg->video.num_attention_heads >
	    cfg->audio.num_attention_heads ? cfg->video.num_attention_heads :
	    cfg->audio.num_attention_heads);

	return sizeof(float) * (BT * CL + 8 * BT * C + FF_MULT * BT * C +
	    BT * Hmax + BT + 2 * (size_t)T * C) + 16 * 256;
}

void
ltx2_connectors_plan(const struct ltx2_connectors_config *cfg,
    const struct nn_weights_layout *w, int B, int T,
    struct nn_plan_bytes *out)
{
	size_t C = (size_t)cfg->caption_channels;

	memset(out, 0, sizeof(*out));
	if (w != NULL)
		out->weights = w->resident.device;
	/* one buffer of the bytes forward asks gpu_pool_create for */
	out->activations = gpu_buffer_plan_size(pool_bytes(cfg, B, T));
	/* the host copies: both streams' outputs and the mask */
	out->host = sizeof(float) * (size_t)B * T * (2 * C + 1);
	out->largest = sizeof(float) * (uint64_t)B * T * C *
	    (uint64_t)cfg->text_proj_in_factor;
	snprintf(out->largest_what, sizeof(out->largest_what),
	    "the connectors' stacked input [%d, %d, %zu]", B, T,
	    C * (size_t)cfg->text_proj_in_factor);
	if (w != NULL && w->resident.largest > out->largest) {
		out->largest = w->resident.largest;
		snprintf(out->largest_what, sizeof(out->largest_what),
		    "weight %s", w->resident.largest_name);
	}
}

enum lq_status
ltx2_connectors_forward(struct ltx2_connectors *c,
    const struct ltx2_connectors_args *a, const struct ltx2_connectors_out *o,
    const struct nn_dump *dump, struct lq_error *err)
{
	const struct ltx2_connectors_config *cfg = &c->cfg;
	int B = a->B, T = a->T, C = cfg->caption_channels;
	int L = cfg->text_proj_in_factor, Hmax;
	int RW = cfg->rope_split ? C / 2 : C;	/* a RoPE table row */
	size_t BT = (size_t)B * T, CL = (size_t)C * L, bytes;
	int64_t *nvalid = NULL;
	float *norm = NULL, *cs = NULL, *sn = NULL, *ret = NULL;
	struct gpu_tensor x;
	struct conn_work w;
	size_t mark = 0;
	enum lq_status st = LQ_OK;

	for (size_t i = 0; i < BT; i++)
		if (a->attention_mask[i] != 0 && a->attention_mask[i] != 1)
			return input_error(err, "attention_mask", "attention_mask "
			    "[%d] is %d; it must hold 0 (padding) or 1 (token)",
			    (int)i, (int)a->attention_mask[i]);
	nvalid = xcalloc((size_t)B, sizeof(*nvalid));
	for (int b = 0; b < B; b++) {
		for (int t = 0; t < T; t++)
			nvalid[b] += a->attention_mask[(size_t)b * T + t];
		if (nvalid[b] == 0) {
			free(nvalid);
			return input_error(err, "attention_mask", "attention_mask "
			    "row %d has no valid token (of %d)", b, T);
		}
	}
	for (int i = 0; i < 2; i++) {
		int R = c->side[i].cfg->num_learnable_registers;

		if (R && T % R != 0) {
			free(nvalid);
			return input_error(err, "text_encoder_hidden_states",
			    "the sequence length %d is not a multiple of the %d "
			    "learnable registers", T, R);
		}
	}
	Hmax = cfg->video.num_attention_heads > cfg->audio.num_attention_heads ?
	    cfg->video.num_attention_heads : cfg->audio.num_attention_heads;
	bytes = pool_bytes(cfg, B, T);
	if (c->pool == NULL || gpu_pool_capacity(c->pool) < bytes) {
		gpu_pool_free(c->pool);
		c->pool = NULL;
		if ((st = gpu_pool_create(c->ctx, bytes, &c->pool, err)))
			goto out;
	}
	mark = gpu_pool_mark(c->pool);
	{
		struct gpu_tensor *t3[] = { &w.proj, &w.h, &w.n, &w.a, &w.s.q,
		    &w.s.k, &w.s.v, &w.s.o };

		OP(gpu_pool_tensor(c->pool, GPU_F32, 3, SHAPE(B, T, (int64_t)CL),
		    &x, err));
		for (size_t i = 0; i < sizeof(t3) / sizeof(t3[0]); i++)
			OP(gpu_pool_tensor(c->pool, GPU_F32, 3, SHAPE(B, T, C), t3[i],
			    err));
		OP(gpu_pool_tensor(c->pool, GPU_F32, 3,
		    SHAPE(B, T, FF_MULT * C), &w.ff, err));
		OP(gpu_pool_tensor(c->pool, GPU_F32, 3, SHAPE(B, T, Hmax),
		    &w.s.gates, err));
		OP(gpu_pool_tensor(c->pool, GPU_F32, 2, SHAPE(B, T), &w.key_bias,
		    err));
		OP(gpu_pool_tensor(c->pool, GPU_F32, 3, SHAPE(1, T, RW), &w.cos,
		    err));
		OP(gpu_pool_tensor(c->pool, GPU_F32, 3, SHAPE(1, T, RW), &w.sin,
		    err));
	}
	/* 1. per_layer_masked_mean_norm (CPU), text_proj_in */
	norm = xmalloc(sizeof(float) * BT * CL);
	masked_mean_norm(a->text_encoder_hidden_states, nvalid, B, T, C, L,
	    a->call.padding_right, a->call.scale_factor, norm);
	OP(nn_dump_host(dump, "text_proj_in.input(per_layer_masked_mean_norm)",
	    3, SHAPE(B, T, (int64_t)CL), norm, err));
	OP(gpu_tensor_upload_f32(c->ctx, &x, norm, err));
	/* 2. the 1-D RoPE table, the same for both connectors (inner = C;
	 * split's per-head reshape does not change the flat layout) */
	cs = xmalloc(sizeof(float) * (size_t)T * RW);
	sn = xmalloc(sizeof(float) * (size_t)T * RW);
	rope_1d(T, cfg->connector_rope_base_seq_len, C, cfg->rope_theta,
	    cfg->rope_double_precision, cfg->rope_split, cs, sn);
	OP(gpu_tensor_upload_f32(c->ctx, &w.cos, cs, err));
	OP(gpu_tensor_upload_f32(c->ctx, &w.sin, sn, err));
	if (dump && !cfg->rope_split) {
		/* upstream's [B, T, dim] (split's is [B, H, T, dim/2H]) */
		float *rep = xmalloc(sizeof(float) * BT * C);

		for (int i = 0; i < 2 && st == LQ_OK; i++) {
			for (int k = 0; k < 2 && st == LQ_OK; k++) {
				char name[96];

				for (int b = 0; b < B; b++)
					memcpy(rep + (size_t)b * T * C, k ? sn : cs,
					    sizeof(float) * (size_t)T * C);
				snprintf(name, sizeof(name), "%s.rope.out%d",
				    c->side[i].name, k);
				st = nn_dump_host(dump, name, 3, SHAPE(B, T, C), rep,
				    err);
			}
		}
		free(rep);
		if (st != LQ_OK)
			goto out;
	}
	gpu_cmd_begin(c->cmd);
	OP(ops_linear(c->cmd, &w.proj, &x, &c->proj_w,
	    cfg->proj_bias ? &c->proj_b : NULL, OPS_ACT_NONE));
	OP(nn_dump_tensor(dump, c->cmd, "text_proj_in", &w.proj, err));
	OP(gpu_cmd_submit(c->cmd, err));
	/* 3. both connectors on the same projection */
	OP(connector(c, &c->side[0], &w, a->attention_mask, B, T,
	    o->video_text_embedding, dump, err));
	OP(connector(c, &c->side[1], &w, a->attention_mask, B, T,
	    o->audio_text_embedding, dump, err));
	/* 4. binary mask from the video connector's returned mask (zeros
	 * with registers, else the additive one): < 1e-6 everywhere */
	ret = xmalloc(sizeof(float) * BT);
	for (size_t i = 0; i < BT; i++) {
		ret[i] = c->side[0].cfg->num_learnable_registers ? 0.0f :
		    (float)(a->attention_mask[i] - 1) * FLT_MAX;
		o->attention_mask_out[i] = ret[i] < 1e-6f;
	}
	for (size_t i = 0; i < BT; i++)
		for (int ch = 0; ch < C; ch++)
			o->video_text_embedding[i * C + ch] *=
			    (float)o->attention_mask_out[i];
out:
	if (st != LQ_OK && err != NULL && err->status == LQ_OK)
		(void)gpu_cmd_status(c->cmd, err);
	if (c->pool)
		gpu_pool_reset(c->pool, mark);
	free(nvalid);
	free(norm);
	free(cs);
	free(sn);
	free(ret);
	return st;
}
