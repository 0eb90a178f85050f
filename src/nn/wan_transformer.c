/*
 * wan_transformer.c — WanTransformer3DModel.forward on Vulkan (diffusers
 * models/transformers/transformer_wan.py, 58eb52c), built from the ops in
 * gpu/ops.h; the attentions are nn/ltx2_attn.c's (WanAttention computes the
 * same: to_q/k/v, RMSNorm across heads with weights, interleaved RoPE,
 * SDPA, to_out.0).  The RoPE tables (float64 then float32) and the
 * timestep sinusoids (float32, ltxv_embed.c) are host islands, uploaded.
 *
 * Per block (WanTransformerBlock.forward, 1-D timestep):
 *   ada = scale_shift_table (1, 6, D) + timestep_proj.view(B, 6, D)
 *         -> shift_msa, scale_msa, gate_msa, c_shift_msa, c_scale_msa,
 *            c_gate_msa
 *   h  += gate_msa · attn1(LayerNorm(h) · (1 + scale_msa) + shift_msa)
 *   h  += attn2(norm2(h), text)           norm2: LayerNorm with weights,
 *                                           or the identity; no mask
 *   h  += c_gate_msa · ffn(LayerNorm(h) · (1 + c_scale_msa) + c_shift_msa)
 * The LayerNorms (FP32LayerNorm) have no weights but norm2's, eps from the
 * config.  Output: shift, scale = scale_shift_table (1, 2, D) + temb, then
 * proj_out(LayerNorm(h) · (1 + scale) + shift) and unpatchify.
 *
 * Patching is ops_space_to_depth + a linear layer with the Conv3d's weight
 * viewed [inner, C·p_t·p_h·p_w] (kernel = stride = patch: the same sums),
 * unpatchifying a permuted copy + ops_depth_to_space, so any patch size
 * runs.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "gpu/ops.h"
#include "nn/ltx2_attn.h"
#include "nn/ltxv_embed.h"
#include "nn/ltxv_transformer.h"
#include "nn/wan_transformer.h"
#include "nn/weights.h"

#define SHAPE(...) ((const int64_t[]){ __VA_ARGS__ })
#define ROPE_THETA 10000.0	/* WanRotaryPosEmbed's theta */

struct wan_block {
	struct ltx2_attn attn1, attn2;
	struct gpu_tensor norm2_w, norm2_b;	/* cross_attn_norm */
	struct gpu_tensor ff0_w, ff0_b, ff2_w, ff2_b;
	struct gpu_tensor scale_shift_table;	/* [6, D] */
};

struct wan_transformer {
	struct gpu_ctx *ctx;
	struct wan_transformer_config cfg;
	struct nn_weights *w;
	struct gpu_tensor patch_w, patch_b;	/* [D, C·P], [D] */
	struct gpu_tensor te_l1_w, te_l1_b, te_l2_w, te_l2_b;	/* time_embedder */
	struct gpu_tensor tp_w, tp_b;		/* time_proj */
	struct gpu_tensor tx_l1_w, tx_l1_b, tx_l2_w, tx_l2_b;	/* text_embedder */
	struct gpu_tensor proj_out_w, proj_out_b;
	struct gpu_tensor scale_shift_table;	/* [2, D] */
	struct wan_block *blocks;
	struct gpu_cmd *cmd;
	int streaming;				/* blocks' weights streamed */
	struct gpu_pool *pool;
	struct wan_transformer_shape rs;	/* reserved (0: none) */
	float *freqs_cos, *freqs_sin;		/* [L, d], at load */
	float *h_cos, *h_sin;			/* [N, d] of the grid below */
	float *h_tfeat;				/* [B, freq_dim] */
	int rope_F, rope_H, rope_W;		/* post-patch grid of h_cos; 0 none */
	/* context parallelism (wan_transformer_set_context): NULL, or rank
	 * cp_rank of cp; h_cp stages one exchange, [B, N/P, D] */
	struct ltxv_cp_group *cp;
	int cp_rank, cp_P;
	float *h_cp;
};

/* The tensors one forward carves from the pool, in order. */
struct work {
	struct gpu_tensor cos_h, sin_h, cos, sin, tfeat;
	struct gpu_tensor patch, ptok, x, t1, temb, se, tproj, cap1, ctx;
	struct gpu_tensor ada, nrm, att, q, k, v, o, ffh, fin, proj, projw, unp;
};

/* Carves t from the pool, or (pool NULL) records its bytes. */
struct carver {
	struct gpu_pool *pool;
	uint64_t bytes[32];
	int n;
	uint64_t largest;
	struct lq_error *err;
};

static enum lq_status
carve(struct carver *cv, struct gpu_tensor *t, int ndim, const int64_t *shape)
{
	if (cv->pool == NULL) {
		uint64_t b = sizeof(float);

		for (int i = 0; i < ndim; i++)
			b *= (uint64_t)shape[i];
		LQ_ASSERT(cv->n < (int)(sizeof(cv->bytes) / sizeof(cv->bytes[0])));
		cv->bytes[cv->n++] = b;
		if (b > cv->largest)
			cv->largest = b;
		memset(t, 0, sizeof(*t));
		return LQ_OK;
	}
	return gpu_pool_tensor(cv->pool, GPU_F32, ndim, shape, t, cv->err);
}

/* Every pool tensor of a forward of shape s on a rank of a context group
 * of Pc (1: one device), in forward's order (the pool is sized from this
 * same list).  Token tensors hold the rank's N/Pc tokens. */
static enum lq_status
carve_all(const struct wan_transformer_config *c,
    const struct wan_transformer_shape *s, int Pc, struct carver *cv,
    struct work *w)
{
	const int64_t B = s->B, T = s->T, D = c->inner_dim;
	const int64_t d = c->attention_head_dim, P = c->patch_volume;
	const int64_t Nw = (int64_t)(s->F / c->patch_size[0]) *
	    (s->H / c->patch_size[1]) * (s->W / c->patch_size[2]);
	const int64_t N = Nw / Pc;
	const int64_t NK = N > T ? N : T;
	enum lq_status st;

#define C_(t, ...) if ((st = carve(cv, &w->t, \
	(int)(sizeof(SHAPE(__VA_ARGS__)) / sizeof(int64_t)), SHAPE(__VA_ARGS__)))) \
	return st
	C_(cos_h, N, d);
	C_(sin_h, N, d);
	C_(cos, 1, N, D);
	C_(sin, 1, N, D);
	C_(tfeat, B, c->freq_dim);
	C_(patch, B, c->in_channels * P, Nw);
	C_(ptok, B, N, c->in_channels * P);
	C_(x, B, N, D);
	C_(t1, B, D);
	C_(temb, B, D);
	C_(se, B, D);
	C_(tproj, B, 6 * D);
	C_(cap1, B, T, D);
	C_(ctx, B, T, D);
	C_(ada, B, 6, D);
	C_(nrm, B, N, D);
	C_(att, B, N, D);
	C_(q, B, N, D);
	C_(k, B, NK, D);
	C_(v, B, NK, D);
	C_(o, B, N, D);
	C_(ffh, B, N, c->ffn_dim);
	C_(fin, B, 2, D);
	C_(proj, B, N, P * c->out_channels);
	if (Pc > 1)
		C_(projw, B, Nw, P * c->out_channels);	/* gathered */
	C_(unp, B, Nw, P * c->out_channels);
#undef C_
	return LQ_OK;
}

/* ---- config, weights ---- */

enum lq_status
wan_transformer_read_config(const char *dir, struct wan_transformer_config *c,
    struct lq_error *err)
{
	char *path = xasprintf("%s/config.json", dir);
	cJSON *root = NULL;
	enum lq_status st;

	st = diffusers_load_json(path, &root, err);
	if (st == LQ_OK)
		st = diffusers_parse_wan_transformer(root, path, c, err);
	cJSON_Delete(root);
	free(path);
	return st;
}

/* Looks up a weight by printf-style name. */
static enum lq_status
wget(const struct nn_weights *w, struct gpu_tensor *out, int ndim,
    const int64_t *shape, struct lq_error *err, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

static enum lq_status
wget(const struct nn_weights *w, struct gpu_tensor *out, int ndim,
    const int64_t *shape, struct lq_error *err, const char *fmt, ...)
{
	char name[192];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(name, sizeof(name), fmt, ap);
	va_end(ap);
	return nn_weights_get(w, name, ndim, shape, out, err);
}

static enum lq_status
load_block(struct wan_transformer *m, int i, struct wan_block *b,
    struct lq_error *err)
{
	const struct wan_transformer_config *c = &m->cfg;
	const int D = c->inner_dim, F = c->ffn_dim;
	char p[64];
	enum lq_status st;

	for (int a = 0; a < 2; a++) {
		struct ltx2_attn *at = a ? &b->attn2 : &b->attn1;

		snprintf(p, sizeof(p), "blocks.%d.attn%d", i, a + 1);
		if ((st = ltx2_attn_load(m->w, p, D, D, c->num_attention_heads,
		    c->attention_head_dim, 1, 1, 0, at, err)))
			return st;
		at->norm_eps = (float)c->eps;
	}
	if (c->cross_attn_norm &&
	    ((st = wget(m->w, &b->norm2_w, 1, SHAPE(D), err,
	    "blocks.%d.norm2.weight", i)) ||
	    (st = wget(m->w, &b->norm2_b, 1, SHAPE(D), err,
	    "blocks.%d.norm2.bias", i))))
		return st;
	if ((st = wget(m->w, &b->ff0_w, 2, SHAPE(F, D), err,
	    "blocks.%d.ffn.net.0.proj.weight", i)) ||
	    (st = wget(m->w, &b->ff0_b, 1, SHAPE(F), err,
	    "blocks.%d.ffn.net.0.proj.bias", i)) ||
	    (st = wget(m->w, &b->ff2_w, 2, SHAPE(D, F), err,
	    "blocks.%d.ffn.net.2.weight", i)) ||
	    (st = wget(m->w, &b->ff2_b, 1, SHAPE(D), err,
	    "blocks.%d.ffn.net.2.bias", i)) ||
	    (st = wget(m->w, &b->scale_shift_table, 3, SHAPE(1, 6, D), err,
	    "blocks.%d.scale_shift_table", i)))
		return st;
	b->scale_shift_table = gpu_tensor_reshape(&b->scale_shift_table, 2,
	    SHAPE(6, D));
	return LQ_OK;
}

static enum lq_status
load_weights(struct wan_transformer *m, struct lq_error *err)
{
	const struct wan_transformer_config *c = &m->cfg;
	const int D = c->inner_dim, Ci = c->in_channels;
	const struct nn_weights *w = m->w;
	enum lq_status st;

	if ((st = wget(w, &m->patch_w, 5, SHAPE(D, Ci, c->patch_size[0],
	    c->patch_size[1], c->patch_size[2]), err, "patch_embedding.weight")) ||
	    (st = wget(w, &m->patch_b, 1, SHAPE(D), err, "patch_embedding.bias")) ||
	    (st = wget(w, &m->te_l1_w, 2, SHAPE(D, c->freq_dim), err,
	    "condition_embedder.time_embedder.linear_1.weight")) ||
	    (st = wget(w, &m->te_l1_b, 1, SHAPE(D), err,
	    "condition_embedder.time_embedder.linear_1.bias")) ||
	    (st = wget(w, &m->te_l2_w, 2, SHAPE(D, D), err,
	    "condition_embedder.time_embedder.linear_2.weight")) ||
	    (st = wget(w, &m->te_l2_b, 1, SHAPE(D), err,
	    "condition_embedder.time_embedder.linear_2.bias")) ||
	    (st = wget(w, &m->tp_w, 2, SHAPE(6 * D, D), err,
	    "condition_embedder.time_proj.weight")) ||
	    (st = wget(w, &m->tp_b, 1, SHAPE(6 * D), err,
	    "condition_embedder.time_proj.bias")) ||
	    (st = wget(w, &m->tx_l1_w, 2, SHAPE(D, c->text_dim), err,
	    "condition_embedder.text_embedder.linear_1.weight")) ||
	    (st = wget(w, &m->tx_l1_b, 1, SHAPE(D), err,
	    "condition_embedder.text_embedder.linear_1.bias")) ||
	    (st = wget(w, &m->tx_l2_w, 2, SHAPE(D, D), err,
	    "condition_embedder.text_embedder.linear_2.weight")) ||
	    (st = wget(w, &m->tx_l2_b, 1, SHAPE(D), err,
	    "condition_embedder.text_embedder.linear_2.bias")) ||
	    (st = wget(w, &m->proj_out_w, 2, SHAPE(c->out_channels *
	    c->patch_volume, D), err, "proj_out.weight")) ||
	    (st = wget(w, &m->proj_out_b, 1, SHAPE(c->out_channels *
	    c->patch_volume), err, "proj_out.bias")) ||
	    (st = wget(w, &m->scale_shift_table, 3, SHAPE(1, 2, D), err,
	    "scale_shift_table")))
		return st;
	m->patch_w = gpu_tensor_reshape(&m->patch_w, 2,
	    SHAPE(D, (int64_t)Ci * c->patch_volume));
	m->scale_shift_table = gpu_tensor_reshape(&m->scale_shift_table, 2,
	    SHAPE(2, D));
	m->blocks = xcalloc((size_t)c->num_layers + 1, sizeof(*m->blocks));
	for (int i = 0; i < c->num_layers; i++)
		if ((st = load_block(m, i, &m->blocks[i], err)))
			return st;
	return LQ_OK;
}

void
wan_rope_freqs(const struct wan_transformer_config *c, float *cs, float *sn)
{
	const int d = c->attention_head_dim, L = c->rope_max_seq_len;
	int col = 0;

	for (int ax = 0; ax < 3; ax++) {
		const int ad = c->rope_dim[ax];

		for (int j = 0; j < ad / 2; j++) {
			/* 1.0 / (theta ** (arange(0, dim, 2, float64) / dim)) */
			double f = 1.0 / pow(ROPE_THETA, (double)(2 * j) /
			    (double)ad);

			for (int p = 0; p < L; p++) {
				double a = (double)p * f;	/* torch.outer */
				size_t at = (size_t)p * (size_t)d +
				    (size_t)(col + 2 * j);

				cs[at] = cs[at + 1] = (float)cos(a);
				sn[at] = sn[at + 1] = (float)sin(a);
			}
		}
		col += ad;
	}
}

void
wan_transformer_set_precision(struct wan_transformer *m, enum gpu_precision p)
{
	gpu_cmd_set_precision(m->cmd, p);
}

void
wan_transformer_free(struct wan_transformer *m)
{
	if (m == NULL)
		return;
	gpu_cmd_free(m->cmd);
	gpu_pool_free(m->pool);
	nn_weights_free(m->w);
	free(m->blocks);
	free(m->freqs_cos);
	free(m->freqs_sin);
	free(m->h_cos);
	free(m->h_sin);
	free(m->h_tfeat);
	free(m->h_cp);
	free(m);
}

/* Streaming groups: one per WanTransformerBlock, two slots (block i + 1
 * uploads while block i computes). */
static const struct nn_weights_stream block_stream = {
	.group_prefix = "blocks.", .nslots = 2,
};

enum lq_status
wan_transformer_weights_layout(const struct st_set *set,
    const struct device_caps *caps, struct nn_weights_layout *out,
    struct lq_error *err)
{
	enum lq_status st = nn_weights_plan(set, NULL, NULL, caps,
	    &out->resident, err);

	if (st == LQ_OK)
		st = nn_weights_plan(set, NULL, &block_stream, caps,
		    &out->streamed, err);
	return st;
}

int
wan_transformer_streaming(const struct wan_transformer *m,
    size_t *slot_bytes, unsigned *uploads)
{
	nn_weights_stream_stats(m->w, slot_bytes, NULL, uploads);
	return m->streaming;
}

enum lq_status
wan_transformer_load(struct gpu_ctx *ctx, const char *dir,
    struct wan_transformer **out, struct lq_error *err)
{
	return wan_transformer_load_opts(ctx, dir, NULL, out, err);
}

enum lq_status
wan_transformer_load_opts(struct gpu_ctx *ctx, const char *dir,
    const struct wan_transformer_opts *opts, struct wan_transformer **out,
    struct lq_error *err)
{
	struct wan_transformer *m = xcalloc(1, sizeof(*m));
	size_t nf;
	enum lq_status st;

	*out = NULL;
	m->ctx = ctx;
	m->cp_P = 1;
	if ((st = wan_transformer_read_config(dir, &m->cfg, err)) ||
	    (st = nn_weights_load_streamed(ctx, dir, NULL, NULL,
	    opts && opts->streaming ? &block_stream : NULL, &m->w, err)) ||
	    (st = load_weights(m, err)) ||
	    (st = gpu_cmd_create(ctx, &m->cmd, err)))
		goto fail;
	m->streaming = nn_weights_groups(m->w) > 0;
	nf = (size_t)m->cfg.rope_max_seq_len * (size_t)m->cfg.attention_head_dim;
	m->freqs_cos = xmalloc(sizeof(float) * nf);
	m->freqs_sin = xmalloc(sizeof(float) * nf);
	wan_rope_freqs(&m->cfg, m->freqs_cos, m->freqs_sin);
	*out = m;
	return LQ_OK;
fail:
	wan_transformer_free(m);
	return st;
}

const struct wan_transformer_config *
wan_transformer_config(const struct wan_transformer *m)
{
	return &m->cfg;
}

enum lq_status
wan_transformer_check_grid(const struct wan_transformer_config *c,
    int num_frames, int height, int width, struct lq_error *err)
{
	static const char *const axis[3] = { "num_frames", "height", "width" };
	const int g[3] = { num_frames, height, width };

	for (int i = 0; i < 3; i++) {
		const int p = c->patch_size[i];

		if (g[i] < p || g[i] % p != 0) {
			error_set(err, LQ_FAILED, "LQ-NN-SHAPE", "wan transformer: "
			    "the latent %s %d is not a positive multiple of "
			    "patch_size[%d] = %d (upstream's strided Conv3d would "
			    "drop the rest)", axis[i], g[i], i, p);
			error_set_field(err, "%s", axis[i]);
			return LQ_FAILED;
		}
		if (g[i] / p > c->rope_max_seq_len) {
			error_set(err, LQ_FAILED, "LQ-NN-SHAPE", "wan transformer: "
			    "the latent %s %d is %d patches, over the RoPE "
			    "tables' rope_max_seq_len %d", axis[i], g[i], g[i] / p,
			    c->rope_max_seq_len);
			error_set_field(err, "%s", axis[i]);
			return LQ_FAILED;
		}
	}
	return LQ_OK;
}

/* ---- memory ---- */

static uint64_t
pool_bytes(const struct wan_transformer_config *c,
    const struct wan_transformer_shape *s, int Pc,
    const struct device_caps *caps, uint64_t *largest)
{
	struct carver cv = { 0 };
	struct work w;

	(void)carve_all(c, s, Pc, &cv, &w);
	if (largest)
		*largest = cv.largest;
	return gpu_pool_plan(caps, cv.bytes, cv.n);
}

/* Host floats of reserve's scratch: the [L, d] tables, the grid's [N, d]
 * tables, the [B, freq_dim] sinusoids and a context rank's staging [B,
 * N/P, inner_dim]. */
static uint64_t
host_floats(const struct wan_transformer_config *c,
    const struct wan_transformer_shape *s, int Pc)
{
	const uint64_t d = (uint64_t)c->attention_head_dim;
	const uint64_t N = (uint64_t)(s->F / c->patch_size[0]) *
	    (uint64_t)(s->H / c->patch_size[1]) * (uint64_t)(s->W / c->patch_size[2]);

	return 2 * (uint64_t)c->rope_max_seq_len * d + 2 * N * d +
	    (uint64_t)s->B * (uint64_t)c->freq_dim + (Pc > 1 ?
	    (uint64_t)s->B * (N / (uint64_t)Pc) * (uint64_t)c->inner_dim : 0);
}

void
wan_transformer_plan(const struct wan_transformer_config *c,
    const struct nn_weights_layout *w, const struct device_caps *caps,
    const struct wan_transformer_shape *s, struct nn_plan_bytes *out)
{
	const uint64_t B = (uint64_t)s->B;
	const uint64_t grid = (uint64_t)s->F * (uint64_t)s->H * (uint64_t)s->W;
	const int Pc = s->context > 1 ? s->context : 1;
	uint64_t big = 0;

	memset(out, 0, sizeof(*out));
	if (w != NULL)
		out->weights = s->streaming == NN_WEIGHTS_STREAMED ?
		    w->streamed.device : w->resident.device;
	out->activations = pool_bytes(c, s, Pc, caps, &big);
	/* hidden_states, encoder_hidden_states and the output, f32, as the
	 * caller (nn/forward.c, the render) creates them */
	out->io = gpu_buffer_plan_size(B * grid * (uint64_t)c->in_channels * 4) +
	    gpu_buffer_plan_size(B * (uint64_t)s->T * (uint64_t)c->text_dim * 4) +
	    gpu_buffer_plan_size(B * grid * (uint64_t)c->out_channels * 4);
	out->host = sizeof(float) * host_floats(c, s, Pc);
	out->largest = big;
	snprintf(out->largest_what, sizeof(out->largest_what),
	    "the Wan transformer's %s activations", big == B *
	    (grid / (uint64_t)c->patch_volume / (uint64_t)Pc) *
	    (uint64_t)c->ffn_dim * 4 ?
	    "feed-forward" : "attention");
	if (w != NULL && w->resident.largest > out->largest) {
		out->largest = w->resident.largest;
		snprintf(out->largest_what, sizeof(out->largest_what),
		    "weight %s", w->resident.largest_name);
	}
}

void
wan_transformer_memory(const struct wan_transformer *m, size_t *weights,
    size_t *pool_capacity, size_t *pool_peak)
{
	*weights = nn_weights_device_bytes(m->w);
	*pool_capacity = m->pool ? gpu_pool_capacity(m->pool) : 0;
	*pool_peak = m->pool ? gpu_pool_peak(m->pool) : 0;
}

static int
imax(int a, int b)
{
	return a > b ? a : b;
}

enum lq_status
wan_transformer_reserve(struct wan_transformer *m,
    const struct wan_transformer_shape *s, struct lq_error *err)
{
	struct wan_transformer_shape r = *s;
	enum lq_status st;

	r.context = m->cp_P;	/* the model's group decides */
	if ((st = wan_transformer_check_grid(&m->cfg, s->F, s->H, s->W, err)))
		return st;
	if (s->B < 1 || s->T < 1)
		return error_set(err, LQ_FAILED, "LQ-NN-SHAPE", "wan transformer: "
		    "a batch of %d with %d text tokens; both must be >= 1",
		    s->B, s->T);
	if (m->cp != NULL) {
		int64_t N = (int64_t)(s->F / m->cfg.patch_size[0]) *
		    (s->H / m->cfg.patch_size[1]) * (s->W / m->cfg.patch_size[2]);

		if (N % m->cp_P != 0)
			return error_set(err, LQ_FAILED, "LQ-NN-SHAPE",
			    "wan transformer: context degree %d does not divide "
			    "the %lld tokens of the patched grid", m->cp_P,
			    (long long)N);
	}
	if (m->pool != NULL && s->B <= m->rs.B && s->F <= m->rs.F &&
	    s->H <= m->rs.H && s->W <= m->rs.W && s->T <= m->rs.T)
		return LQ_OK;
	if (m->pool != NULL) {
		r.B = imax(r.B, m->rs.B);
		r.F = imax(r.F, m->rs.F);
		r.H = imax(r.H, m->rs.H);
		r.W = imax(r.W, m->rs.W);
		r.T = imax(r.T, m->rs.T);
	}
	gpu_pool_free(m->pool);
	m->pool = NULL;
	memset(&m->rs, 0, sizeof(m->rs));
	if ((st = gpu_pool_create(m->ctx, pool_bytes(&m->cfg, &r, m->cp_P,
	    gpu_ctx_caps(m->ctx), NULL), &m->pool, err)))
		return st;
	m->rs = r;
	{
		const size_t d = (size_t)m->cfg.attention_head_dim;
		const size_t N = (size_t)(r.F / m->cfg.patch_size[0]) *
		    (size_t)(r.H / m->cfg.patch_size[1]) *
		    (size_t)(r.W / m->cfg.patch_size[2]);

		free(m->h_cos);
		free(m->h_sin);
		free(m->h_tfeat);
		free(m->h_cp);
		m->h_cp = m->cp ? xmalloc(sizeof(float) * (size_t)r.B *
		    (N / (size_t)m->cp_P) * (size_t)m->cfg.inner_dim) : NULL;
		m->h_cos = xmalloc(sizeof(float) * N * d);
		m->h_sin = xmalloc(sizeof(float) * N * d);
		m->h_tfeat = xmalloc(sizeof(float) * (size_t)r.B *
		    (size_t)m->cfg.freq_dim);
		m->rope_F = m->rope_H = m->rope_W = 0;
	}
	return LQ_OK;
}

enum lq_status
wan_transformer_set_context(struct wan_transformer *m,
    struct ltxv_cp_group *g, int rank, struct lq_error *err)
{
	int P = 1, D = m->cfg.inner_dim;

	if (g != NULL) {
		P = ltxv_cp_group_degree(g, &D);
		if (m->cfg.num_attention_heads % P != 0 || rank < 0 ||
		    rank >= P || D != m->cfg.inner_dim)
			return error_set(err, LQ_FAILED, "LQ-NN-SHAPE",
			    "wan transformer: context degree %d does not divide "
			    "the %d attention heads (or rank %d / inner_dim %d "
			    "does not fit the group)", P,
			    m->cfg.num_attention_heads, rank, m->cfg.inner_dim);
	}
	m->cp = g;
	m->cp_rank = g ? rank : 0;
	m->cp_P = P;
	/* the pool and the staging follow the group: reserve again */
	gpu_pool_free(m->pool);
	m->pool = NULL;
	memset(&m->rs, 0, sizeof(m->rs));
	return LQ_OK;
}

/* ltxv_cp_attention's attend: the fused SDPA over the rank's heads. */
static enum lq_status
cp_attend(void *ud, struct gpu_cmd *cmd, const struct gpu_tensor *o,
    const struct gpu_tensor *q, const struct gpu_tensor *k,
    const struct gpu_tensor *v, struct lq_error *err)
{
	const struct ltx2_attn *a = ud;
	struct ops_attention_args args = {
		.heads = (int)(q->shape[2] / a->head_dim),
		.scale = (float)(1.0 / sqrt((double)a->head_dim)),
	};

	(void)err;
	return ops_attention(cmd, o, q, k, v, &args);
}

/* ---- forward ---- */

/*
 * WanRotaryPosEmbed.forward for the post-patch grid (F, H, W) into
 * m->h_cos / h_sin [N, d]: token (f·H + h)·W + w takes row f of the t
 * block, row h of the h block, row w of the w block (cached per grid).
 */
static void
rope_tables(struct wan_transformer *m, int F, int H, int W)
{
	const int d = m->cfg.attention_head_dim;
	const int t = m->cfg.rope_dim[0], hd = m->cfg.rope_dim[1];
	const int wd = m->cfg.rope_dim[2];

	if (m->rope_F == F && m->rope_H == H && m->rope_W == W)
		return;
	for (int f = 0; f < F; f++)
		for (int h = 0; h < H; h++)
			for (int w = 0; w < W; w++) {
				size_t n = ((size_t)f * H + h) * W + w;
				const float *src[2] = { m->freqs_cos, m->freqs_sin };
				float *dst[2] = { m->h_cos, m->h_sin };

				for (int k = 0; k < 2; k++) {
					float *o = dst[k] + n * (size_t)d;

					memcpy(o, src[k] + (size_t)f * d,
					    sizeof(float) * (size_t)t);
					memcpy(o + t, src[k] + (size_t)h * d + t,
					    sizeof(float) * (size_t)hd);
					memcpy(o + t + hd, src[k] + (size_t)w * d +
					    t + hd, sizeof(float) * (size_t)wd);
				}
			}
	m->rope_F = F;
	m->rope_H = H;
	m->rope_W = W;
}

/* A contiguous view of `shape` at the start of t's storage. */
static struct gpu_tensor
sub(const struct gpu_tensor *t, int ndim, const int64_t *shape)
{
	struct gpu_tensor v = gpu_tensor_make(t->buf, t->offset, GPU_F32, ndim,
	    shape);

	LQ_ASSERT(gpu_tensor_numel(&v) <= gpu_tensor_numel(t));
	return v;
}

/* Row k of a [B, K, D] table as a [B, D] view (stride[0] K·D), the
 * modulation vectors ops_modulate / ops_gated_add take. */
static struct gpu_tensor
ada_row(const struct gpu_tensor *tab, int k)
{
	struct gpu_tensor v = gpu_tensor_slice(tab, 1, k, 1);
	int64_t B = tab->shape[0], D = tab->shape[2];

	v.ndim = 2;
	v.shape[0] = B;
	v.shape[1] = D;
	v.stride[0] = tab->stride[0];
	v.stride[1] = tab->stride[2];
	for (int i = 2; i < GPU_MAX_DIMS; i++) {
		v.shape[i] = 1;
		v.stride[i] = 0;
	}
	return v;
}

static enum lq_status
shape_error(struct lq_error *err, const char *what,
    const struct gpu_tensor *t, const char *want)
{
	char buf[96];

	gpu_tensor_describe(t, buf, sizeof(buf));
	error_set(err, LQ_FAILED, "LQ-NN-SHAPE",
	    "wan transformer: %s is %s, expected %s", what, buf, want);
	error_set_field(err, "%s", what);
	return LQ_FAILED;
}

#define OP(x) do { if ((st = (x)) != LQ_OK) goto out; } while (0)
#define DUMP(name, t) OP(nn_dump_tensor(dump, cmd, (name), &(t), err))
#define BDUMP(what, t) do { \
	snprintf(name, sizeof(name), "blocks.%d." what, i); \
	DUMP(name, t); } while (0)
/* LayerNorm (no affine) of x into y, then modulation: fused
 * (ops_norm_modulate) unless a dump wants the norm's own output, `what`. */
#define NORM_MOD(what, y, x, scale, shift) do { \
	if (dump) { \
		OP(ops_layer_norm(cmd, &(y), &(x), NULL, NULL, (float)c->eps)); \
		DUMP(what, y); \
		OP(ops_modulate(cmd, &(y), &(y), &(scale), &(shift))); \
	} else { \
		OP(ops_norm_modulate(cmd, &(y), &(x), OPS_NORM_LAYER, NULL, \
		    NULL, (float)c->eps, &(scale), &(shift))); \
	} } while (0)

enum lq_status
wan_transformer_forward(struct wan_transformer *m,
    const struct wan_transformer_args *a, const struct gpu_tensor *output,
    const struct nn_dump *dump, struct lq_error *err)
{
	const struct wan_transformer_config *c = &m->cfg;
	const struct gpu_tensor *hs = a->hidden_states;
	const struct gpu_tensor *ehs = a->encoder_hidden_states;
	const int64_t D = c->inner_dim, d = c->attention_head_dim;
	const int64_t H = c->num_attention_heads, P = c->patch_volume;
	const int pt = c->patch_size[0], ph = c->patch_size[1];
	const int pw = c->patch_size[2];
	struct gpu_cmd *cmd = m->cmd;
	struct wan_transformer_shape s = { 0 };
	struct carver cv = { 0 };
	struct work w;
	const int Pc = m->cp_P;
	const int64_t rank = m->cp_rank;
	int64_t B, T, N, Nw, Fp, Hp, Wp;
	size_t mark = 0;
	int pooled = 0;
	char name[96];
	enum lq_status st;

	if (hs->ndim != 5 || hs->shape[1] != c->in_channels)
		return shape_error(err, "hidden_states", hs,
		    "[B, in_channels, F, H, W]");
	B = hs->shape[0];
	if (ehs->ndim != 3 || ehs->shape[0] != B ||
	    ehs->shape[2] != c->text_dim)
		return shape_error(err, "encoder_hidden_states", ehs,
		    "[B, T, text_dim]");
	T = ehs->shape[1];
	if (output->ndim != 5 || output->shape[0] != B ||
	    output->shape[1] != c->out_channels ||
	    memcmp(output->shape + 2, hs->shape + 2, 3 * sizeof(int64_t)) != 0)
		return shape_error(err, "output", output,
		    "[B, out_channels, F, H, W] of hidden_states' grid");
	if (a->timestep == NULL)
		return error_set(err, LQ_FAILED, "LQ-NN-INPUT",
		    "wan transformer: no timestep");
	if (dump != NULL && m->cp != NULL) {
		st = error_set(err, LQ_FAILED, "LQ-NN-INPUT",
		    "wan transformer: intermediates are dumped on one device "
		    "only, not on a rank of a context group");
		goto out;
	}
	s.B = (int)B;
	s.F = (int)hs->shape[2];
	s.H = (int)hs->shape[3];
	s.W = (int)hs->shape[4];
	s.T = (int)T;
	s.context = Pc;
	if ((st = wan_transformer_reserve(m, &s, err)))
		goto out;
	Fp = s.F / pt;
	Hp = s.H / ph;
	Wp = s.W / pw;
	Nw = Fp * Hp * Wp;
	N = Nw / Pc;		/* this rank's tokens */

	/* host float32 islands */
	rope_tables(m, (int)Fp, (int)Hp, (int)Wp);
	ltxv_timestep_features(a->timestep, (int)B, c->freq_dim, m->h_tfeat);

	mark = gpu_pool_mark(m->pool);
	pooled = 1;
	cv.pool = m->pool;
	cv.err = err;
	gpu_cmd_begin(cmd);
	OP(carve_all(c, &s, Pc, &cv, &w));
	/* RoPE is per token: a context rank's rows of the grid's tables */
	OP(gpu_tensor_upload(m->ctx, &w.cos_h, m->h_cos + (size_t)(rank * N *
	    d), err));
	OP(gpu_tensor_upload(m->ctx, &w.sin_h, m->h_sin + (size_t)(rank * N *
	    d), err));
	OP(gpu_tensor_upload(m->ctx, &w.tfeat, m->h_tfeat, err));
	{
		/* each head's channels rotate by the same [N, d] table */
		struct gpu_tensor c3 = gpu_tensor_reshape(&w.cos_h, 3,
		    SHAPE(N, 1, d));
		struct gpu_tensor s3 = gpu_tensor_reshape(&w.sin_h, 3,
		    SHAPE(N, 1, d));
		struct gpu_tensor cb = gpu_tensor_broadcast(&c3, 3, SHAPE(N, H, d));
		struct gpu_tensor sb = gpu_tensor_broadcast(&s3, 3, SHAPE(N, H, d));
		struct gpu_tensor cd = gpu_tensor_reshape(&w.cos, 3, SHAPE(N, H, d));
		struct gpu_tensor sd = gpu_tensor_reshape(&w.sin, 3, SHAPE(N, H, d));

		OP(ops_copy(cmd, &cd, &cb));
		OP(ops_copy(cmd, &sd, &sb));
	}
	if (dump) {
		const int64_t L = c->rope_max_seq_len;

		OP(nn_dump_host(dump, "rope_freqs_cos_full", 2, SHAPE(L, d),
		    m->freqs_cos, err));
		OP(nn_dump_host(dump, "rope_freqs_sin_full", 2, SHAPE(L, d),
		    m->freqs_sin, err));
		OP(nn_dump_host(dump, "rope.out0", 4, SHAPE(1, N, 1, d), m->h_cos,
		    err));
		OP(nn_dump_host(dump, "rope.out1", 4, SHAPE(1, N, 1, d), m->h_sin,
		    err));
		OP(nn_dump_host(dump, "condition_embedder.timesteps_proj", 2,
		    SHAPE(B, c->freq_dim), m->h_tfeat, err));
	}

	/* patch_embedding: Conv3d(kernel = stride = patch) as space-to-depth
	 * (channel c·P + (dt·p_h + dh)·p_w + dw, the weight's flattening)
	 * and a linear layer; tokens (f, h, w) row-major, a context rank's
	 * of them */
	{
		struct gpu_tensor p5 = sub(&w.patch, 5, SHAPE(B, c->in_channels *
		    P, Fp, Hp, Wp));
		struct gpu_tensor p3 = sub(&w.patch, 3, SHAPE(B, c->in_channels *
		    P, Nw));
		struct gpu_tensor pp = gpu_tensor_permute(&p3, (int[]){ 0, 2, 1 });
		struct gpu_tensor ps = gpu_tensor_slice(&pp, 1, rank * N, N);

		OP(ops_space_to_depth(cmd, &p5, hs, pt, ph, pw, 0));
		OP(ops_copy(cmd, &w.ptok, &ps));
		OP(ops_linear(cmd, &w.x, &w.ptok, &m->patch_w, &m->patch_b,
		    OPS_ACT_NONE));
		if (dump) {
			struct gpu_tensor xp = gpu_tensor_permute(&w.x,
			    (int[]){ 0, 2, 1 });
			struct gpu_tensor n3 = sub(&w.nrm, 3, SHAPE(B, D, N));
			struct gpu_tensor n5 = sub(&w.nrm, 5, SHAPE(B, D, Fp, Hp,
			    Wp));

			OP(ops_copy(cmd, &n3, &xp));
			DUMP("patch_embedding", n5);
		}
	}

	/* condition_embedder (WanTimeTextImageEmbedding): temb =
	 * time_embedder(sinusoids) (Linear-SiLU-Linear), timestep_proj =
	 * time_proj(SiLU(temb)), text = text_embedder(ehs) (PixArt-alpha:
	 * Linear-GELU(tanh)-Linear) */
	OP(ops_linear(cmd, &w.t1, &w.tfeat, &m->te_l1_w, &m->te_l1_b,
	    OPS_ACT_SILU));
	OP(ops_linear(cmd, &w.temb, &w.t1, &m->te_l2_w, &m->te_l2_b,
	    OPS_ACT_NONE));
	OP(ops_silu(cmd, &w.se, &w.temb));
	OP(ops_linear(cmd, &w.tproj, &w.se, &m->tp_w, &m->tp_b, OPS_ACT_NONE));
	OP(ops_linear(cmd, &w.cap1, ehs, &m->tx_l1_w, &m->tx_l1_b,
	    OPS_ACT_GELU_TANH));
	OP(ops_linear(cmd, &w.ctx, &w.cap1, &m->tx_l2_w, &m->tx_l2_b,
	    OPS_ACT_NONE));
	if (m->streaming && c->num_layers > 0)
		OP(nn_weights_upload_group(m->w, 0, err));
	DUMP("condition_embedder.time_embedder", w.temb);
	DUMP("condition_embedder.time_proj", w.tproj);
	DUMP("condition_embedder.text_embedder", w.ctx);
	DUMP("condition_embedder.out0", w.temb);
	DUMP("condition_embedder.out1", w.tproj);
	DUMP("condition_embedder.out2", w.ctx);

	for (int i = 0; i < c->num_layers; i++) {
		const struct wan_block *b = &m->blocks[i];
		struct gpu_tensor shift_msa = ada_row(&w.ada, 0);
		struct gpu_tensor scale_msa = ada_row(&w.ada, 1);
		struct gpu_tensor gate_msa = ada_row(&w.ada, 2);
		struct gpu_tensor c_shift_msa = ada_row(&w.ada, 3);
		struct gpu_tensor c_scale_msa = ada_row(&w.ada, 4);
		struct gpu_tensor c_gate_msa = ada_row(&w.ada, 5);
		struct ltx2_attn_scratch sa = {
			.q = sub(&w.q, 3, SHAPE(B, N, D)),
			.k = sub(&w.k, 3, SHAPE(B, N, D)),
			.v = sub(&w.v, 3, SHAPE(B, N, D)),
			.o = sub(&w.o, 3, SHAPE(B, N, D)),
		};
		struct ltx2_attn_scratch sx = {
			.q = sa.q, .o = sa.o,
			.k = sub(&w.k, 3, SHAPE(B, T, D)),
			.v = sub(&w.v, 3, SHAPE(B, T, D)),
		};
		const struct gpu_tensor *kv_in = &w.x;
		/* Each branch's last linear adds its output to the residual
		 * in its epilogue (ops_linear_gated_add: out = res = x), so
		 * w.att is never written and read back; a dump wants the
		 * branch's own output, so with one it goes to w.att, is
		 * dumped and added apart, as before the fusion. */
		const struct gpu_tensor *bo = dump ? &w.att : &w.x;
		const struct gpu_tensor *res = dump ? NULL : &w.x;

		OP(ops_add_table(cmd, &w.ada, &b->scale_shift_table, &w.tproj));

		/* 1. self-attention */
		snprintf(name, sizeof(name), "blocks.%d.norm1", i);
		NORM_MOD(name, w.nrm, w.x, scale_msa, shift_msa);
		if (dump) {
			/* norm_q / norm_k before RoPE (the attention rotates
			 * its q / k in place) */
			OP(ops_linear(cmd, &w.att, &w.nrm, &b->attn1.to_q_w,
			    &b->attn1.to_q_b, OPS_ACT_NONE));
			OP(ops_rms_norm(cmd, &w.att, &w.att, &b->attn1.norm_q_w,
			    b->attn1.norm_eps));
			BDUMP("attn1.norm_q", w.att);
			OP(ops_linear(cmd, &w.att, &w.nrm, &b->attn1.to_k_w,
			    &b->attn1.to_k_b, OPS_ACT_NONE));
			OP(ops_rms_norm(cmd, &w.att, &w.att, &b->attn1.norm_k_w,
			    b->attn1.norm_eps));
			BDUMP("attn1.norm_k", w.att);
		}
		if (m->cp != NULL && !ltxv_cp_no_gather()) {
			/* Ulysses: this rank's heads of every token */
			OP(ltx2_attn_project(cmd, &b->attn1, &w.nrm, NULL, &sa,
			    &w.cos, &w.sin, NULL, NULL));
			OP(ltxv_cp_attention(m->cp, m->cp_rank, m->ctx, cmd,
			    m->h_cp, &sa.o, &sa.q, &sa.k, &sa.v, cp_attend,
			    (void *)&b->attn1, err));
			OP(ltx2_attn_out(cmd, &b->attn1, bo, res, &gate_msa, &sa));
		} else {
			OP(ltx2_attn_forward(cmd, &b->attn1, bo, res, &gate_msa,
			    &w.nrm, NULL, &sa, &w.cos, &w.sin, NULL, NULL, NULL));
		}
		if (dump) {
			BDUMP("attn1", w.att);
			OP(ops_gated_add(cmd, &w.x, &w.x, &gate_msa, &w.att));
		}

		/* 2. cross-attention over every text row, no modulation */
		if (c->cross_attn_norm) {
			OP(ops_layer_norm(cmd, &w.nrm, &w.x, &b->norm2_w,
			    &b->norm2_b, (float)c->eps));
			kv_in = &w.nrm;
		}
		BDUMP("norm2", *kv_in);
		/* (the query input may be x itself: to_out, the residual
		 * update, runs after every read of it) */
		OP(ltx2_attn_forward(cmd, &b->attn2, bo, res, NULL, kv_in,
		    &w.ctx, &sx, NULL, NULL, NULL, NULL, NULL));
		/* no RoPE here: q / k hold norm_q / norm_k's outputs */
		BDUMP("attn2.norm_q", sx.q);
		BDUMP("attn2.norm_k", sx.k);
		if (dump) {
			BDUMP("attn2", w.att);
			OP(ops_add(cmd, &w.x, &w.x, &w.att));
		}

		/* 3. feed-forward */
		snprintf(name, sizeof(name), "blocks.%d.norm3", i);
		NORM_MOD(name, w.nrm, w.x, c_scale_msa, c_shift_msa);
		OP(ops_linear(cmd, &w.ffh, &w.nrm, &b->ff0_w, &b->ff0_b,
		    OPS_ACT_GELU_TANH));
		if (dump) {
			OP(ops_linear(cmd, &w.att, &w.ffh, &b->ff2_w, &b->ff2_b,
			    OPS_ACT_NONE));
			BDUMP("ffn", w.att);
			OP(ops_gated_add(cmd, &w.x, &w.x, &c_gate_msa, &w.att));
		} else {
			OP(ops_linear_gated_add(cmd, &w.x, &w.x, &c_gate_msa,
			    &w.ffh, &b->ff2_w, &b->ff2_b, OPS_ACT_NONE));
		}
		snprintf(name, sizeof(name), "blocks.%d", i);
		DUMP(name, w.x);
		if (m->streaming && i + 1 < c->num_layers) {
			/* block i runs while block i + 1's weights go into the
			 * other slot (block i - 1's, finished at the last wait):
			 * the same ops on the same views, so the same bits */
			OP(gpu_cmd_submit_async(cmd, err));
			st = nn_weights_upload_group(m->w, i + 1, err);
			enum lq_status ws = gpu_cmd_wait(cmd, st == LQ_OK ? err :
			    NULL);
			if (st == LQ_OK)
				st = ws;
			if (st != LQ_OK)
				goto out;
			gpu_cmd_begin(cmd);
		}
	}

	/* output head: shift (row 0), scale (row 1) = scale_shift_table +
	 * temb (the time_embedder's output, not timestep_proj) */
	{
		struct gpu_tensor tab = gpu_tensor_broadcast(&m->scale_shift_table,
		    3, SHAPE(B, 2, D));
		struct gpu_tensor e3 = gpu_tensor_reshape(&w.temb, 3,
		    SHAPE(B, 1, D));
		struct gpu_tensor eb = gpu_tensor_broadcast(&e3, 3, SHAPE(B, 2, D));
		struct gpu_tensor shift = ada_row(&w.fin, 0);
		struct gpu_tensor scale = ada_row(&w.fin, 1);

		OP(ops_add(cmd, &w.fin, &tab, &eb));
		NORM_MOD("norm_out", w.nrm, w.x, scale, shift);
	}
	OP(ops_linear(cmd, &w.proj, &w.nrm, &m->proj_out_w, &m->proj_out_b,
	    OPS_ACT_NONE));
	DUMP("proj_out", w.proj);
	if (m->cp != NULL)	/* every rank unpatchifies the whole grid */
		OP(ltxv_cp_gather(m->cp, m->cp_rank, m->ctx, cmd, m->h_cp,
		    &w.proj, &w.projw, err));

	/* unpatchify: proj_out's (p_t, p_h, p_w, C) per token to channel
	 * c·P + p of [B, C·P, F', H', W'], then depth-to-space */
	{
		const int64_t Co = c->out_channels;
		struct gpu_tensor p4 = gpu_tensor_reshape(m->cp ? &w.projw :
		    &w.proj, 4, SHAPE(B, Nw, P, Co));
		struct gpu_tensor pp = gpu_tensor_permute(&p4,
		    (int[]){ 0, 3, 2, 1 });
		struct gpu_tensor u4 = sub(&w.unp, 4, SHAPE(B, Co, P, Nw));
		struct gpu_tensor u5 = sub(&w.unp, 5, SHAPE(B, Co * P, Fp, Hp,
		    Wp));

		OP(ops_copy(cmd, &u4, &pp));
		OP(ops_depth_to_space(cmd, output, &u5, pt, ph, pw, 0));
	}
	st = gpu_cmd_submit(cmd, err);
out:
	/* an op's failure is the command's sticky error: report it */
	if (st != LQ_OK && pooled && err != NULL && err->status == LQ_OK)
		(void)gpu_cmd_status(cmd, err);
	/* the other ranks of a context group must not wait for this one */
	if (st != LQ_OK && m->cp != NULL)
		ltxv_cp_group_abort(m->cp);
	if (pooled)
		gpu_pool_reset(m->pool, mark);
	return st;
}
