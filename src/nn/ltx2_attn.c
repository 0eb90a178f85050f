/*
 * ltx2_attn.c — LTX2Attention on gpu ops (see ltx2_attn.h; diffusers
 * transformer_ltx2.py LTX2Attention, LTX2AudioVideoAttnProcessor,
 * apply_interleaved_rotary_emb, apply_split_rotary_emb).
 */
#include <math.h>
#include <stdio.h>

#include "core/util.h"

#include "gpu/ops.h"
#include "nn/ltx2_attn.h"

#define SHAPE(...) ((const int64_t[]){ __VA_ARGS__ })

static enum lq_status
get(const struct nn_weights *w, const char *prefix, const char *name, int nd,
    const int64_t *shape, struct gpu_tensor *out, struct lq_error *err)
{
	char n[192];

	snprintf(n, sizeof(n), "%s.%s", prefix, name);
	return nn_weights_get(w, n, nd, shape, out, err);
}

enum lq_status
ltx2_attn_load(const struct nn_weights *w, const char *prefix, int query_dim,
    int kv_dim, int heads, int head_dim, int bias, int out_bias, int gated,
    struct ltx2_attn *a, struct lq_error *err)
{
	int inner = heads * head_dim;
	enum lq_status st;

	a->heads = heads;
	a->head_dim = head_dim;
	a->inner = inner;
	a->query_dim = query_dim;
	a->kv_dim = kv_dim;
	a->has_bias = bias;
	a->has_out_bias = out_bias;
	a->gated = gated;
	a->rope_split = 0;
	a->norm_eps = LTX2_ATTN_NORM_EPS;
	a->rope_q_heads = a->rope_k_heads = 0;
	if ((st = get(w, prefix, "to_q.weight", 2, SHAPE(inner, query_dim),
	    &a->to_q_w, err)) ||
	    (st = get(w, prefix, "to_k.weight", 2, SHAPE(inner, kv_dim),
	    &a->to_k_w, err)) ||
	    (st = get(w, prefix, "to_v.weight", 2, SHAPE(inner, kv_dim),
	    &a->to_v_w, err)) ||
	    (st = get(w, prefix, "norm_q.weight", 1, SHAPE(inner), &a->norm_q_w,
	    err)) ||
	    (st = get(w, prefix, "norm_k.weight", 1, SHAPE(inner), &a->norm_k_w,
	    err)) ||
	    (st = get(w, prefix, "to_out.0.weight", 2, SHAPE(query_dim, inner),
	    &a->to_out_w, err)))
		return st;
	if (bias &&
	    ((st = get(w, prefix, "to_q.bias", 1, SHAPE(inner), &a->to_q_b, err)) ||
	    (st = get(w, prefix, "to_k.bias", 1, SHAPE(inner), &a->to_k_b, err)) ||
	    (st = get(w, prefix, "to_v.bias", 1, SHAPE(inner), &a->to_v_b, err))))
		return st;
	if (out_bias && (st = get(w, prefix, "to_out.0.bias", 1,
	    SHAPE(query_dim), &a->to_out_b, err)))
		return st;
	if (gated &&
	    ((st = get(w, prefix, "to_gate_logits.weight", 2,
	    SHAPE(heads, query_dim), &a->gate_w, err)) ||
	    (st = get(w, prefix, "to_gate_logits.bias", 1, SHAPE(heads),
	    &a->gate_b, err))))
		return st;
	return LQ_OK;
}

/* gates [B, N, heads] = 2·sigmoid(to_gate_logits(x)) */
static enum lq_status
gates(struct gpu_cmd *cmd, const struct ltx2_attn *a, const struct gpu_tensor *x,
    const struct ltx2_attn_scratch *s)
{
	enum lq_status st;

	if ((st = ops_linear(cmd, &s->gates, x, &a->gate_w, &a->gate_b,
	    OPS_ACT_NONE)) ||
	    (st = ops_act(cmd, &s->gates, &s->gates, OPS_ACT_SIGMOID)))
		return st;
	return ops_scale(cmd, &s->gates, &s->gates, 2.0f, 0.0f);
}

/* out = to_out(o · gates per head) (o [B, N, inner], scaled in place);
 * with res, out = res + gate · that (ops_linear_gated_add) */
static enum lq_status
gate_out(struct gpu_cmd *cmd, const struct ltx2_attn *a,
    const struct gpu_tensor *out, const struct gpu_tensor *res,
    const struct gpu_tensor *gate, const struct gpu_tensor *o,
    const struct ltx2_attn_scratch *s)
{
	enum lq_status st;

	if (a->gated) {
		int64_t B = o->shape[0], N = o->shape[1];
		struct gpu_tensor o4 = gpu_tensor_reshape(o, 4,
		    SHAPE(B, N, a->heads, a->head_dim));
		struct gpu_tensor g4 = gpu_tensor_reshape(&s->gates, 4,
		    SHAPE(B, N, a->heads, 1));
		struct gpu_tensor gb = gpu_tensor_broadcast(&g4, 4, o4.shape);

		if ((st = ops_mul(cmd, &o4, &o4, &gb)))
			return st;
	}
	if (res != NULL)
		return ops_linear_gated_add(cmd, out, res, gate, o, &a->to_out_w,
		    a->has_out_bias ? &a->to_out_b : NULL, OPS_ACT_NONE);
	return ops_linear(cmd, out, o, &a->to_out_w,
	    a->has_out_bias ? &a->to_out_b : NULL, OPS_ACT_NONE);
}

enum lq_status
ltx2_attn_project(struct gpu_cmd *cmd, const struct ltx2_attn *a,
    const struct gpu_tensor *x, const struct gpu_tensor *kv,
    const struct ltx2_attn_scratch *s, const struct gpu_tensor *q_cos,
    const struct gpu_tensor *q_sin, const struct gpu_tensor *k_cos,
    const struct gpu_tensor *k_sin)
{
	enum lq_status st;

	if (kv == NULL)
		kv = x;
	if (k_cos == NULL) {
		k_cos = q_cos;
		k_sin = q_sin;
	}
	/* gates from the attention's query input, before anything else */
	if (a->gated && (st = gates(cmd, a, x, s)))
		return st;
	if ((st = ops_linear(cmd, &s->q, x, &a->to_q_w,
	    a->has_bias ? &a->to_q_b : NULL, OPS_ACT_NONE)) ||
	    (st = ops_linear(cmd, &s->k, kv, &a->to_k_w,
	    a->has_bias ? &a->to_k_b : NULL, OPS_ACT_NONE)) ||
	    (st = ops_linear(cmd, &s->v, kv, &a->to_v_w,
	    a->has_bias ? &a->to_v_b : NULL, OPS_ACT_NONE)) ||
	    (st = ops_rms_norm(cmd, &s->q, &s->q, &a->norm_q_w,
	    a->norm_eps)) ||
	    (st = ops_rms_norm(cmd, &s->k, &s->k, &a->norm_k_w,
	    a->norm_eps)))
		return st;
	if (q_cos != NULL && a->rope_split &&
	    ((st = ops_rope_split(cmd, &s->q, &s->q, q_cos, q_sin,
	    a->inner / (a->rope_q_heads ? a->rope_q_heads : a->heads))) ||
	    (st = ops_rope_split(cmd, &s->k, &s->k, k_cos, k_sin,
	    a->inner / (a->rope_k_heads ? a->rope_k_heads : a->heads)))))
		return st;
	if (q_cos != NULL && !a->rope_split &&
	    ((st = ops_rope(cmd, &s->q, &s->q, q_cos, q_sin)) ||
	    (st = ops_rope(cmd, &s->k, &s->k, k_cos, k_sin))))
		return st;
	return LQ_OK;
}

enum lq_status
ltx2_attn_out(struct gpu_cmd *cmd, const struct ltx2_attn *a,
    const struct gpu_tensor *out, const struct gpu_tensor *res,
    const struct gpu_tensor *gate, const struct ltx2_attn_scratch *s)
{
	return gate_out(cmd, a, out, res, gate, &s->o, s);
}

enum lq_status
ltx2_attn_sdpa(struct gpu_cmd *cmd, const struct ltx2_attn *a,
    const struct gpu_tensor *o, const struct gpu_tensor *q,
    const struct gpu_tensor *k, const struct gpu_tensor *v, int heads,
    const struct gpu_tensor *key_bias)
{
	struct ops_attention_args args = {
		.heads = heads,
		.scale = (float)(1.0 / sqrt((double)a->head_dim)),
		.key_bias = key_bias,
	};

	return ops_attention(cmd, o, q, k, v, &args);
}

enum lq_status
ltx2_attn_forward(struct gpu_cmd *cmd, const struct ltx2_attn *a,
    const struct gpu_tensor *out, const struct gpu_tensor *res,
    const struct gpu_tensor *gate, const struct gpu_tensor *x,
    const struct gpu_tensor *kv, const struct ltx2_attn_scratch *s,
    const struct gpu_tensor *q_cos, const struct gpu_tensor *q_sin,
    const struct gpu_tensor *k_cos, const struct gpu_tensor *k_sin,
    const struct gpu_tensor *key_bias)
{
	enum lq_status st;

	if ((st = ltx2_attn_project(cmd, a, x, kv, s, q_cos, q_sin, k_cos,
	    k_sin)) ||
	    (st = ltx2_attn_sdpa(cmd, a, &s->o, &s->q, &s->k, &s->v, a->heads,
	    key_bias)))
		return st;
	return ltx2_attn_out(cmd, a, out, res, gate, s);
}

enum lq_status
ltx2_attn_values(struct gpu_cmd *cmd, const struct ltx2_attn *a,
    const struct gpu_tensor *out, const struct gpu_tensor *res,
    const struct gpu_tensor *gate, const struct gpu_tensor *x,
    const struct ltx2_attn_scratch *s)
{
	enum lq_status st;

	if ((a->gated && (st = gates(cmd, a, x, s))) ||
	    (st = ops_linear(cmd, &s->v, x, &a->to_v_w,
	    a->has_bias ? &a->to_v_b : NULL, OPS_ACT_NONE)))
		return st;
	return gate_out(cmd, a, out, res, gate, &s->v, s);
}

/* torch.linspace(0, 1, n) element i, in double or float as upstream's
 * kernel computes it (from the start for the first half, from the end for
 * the rest). */
static double
linspace01(int i, int n, int dbl)
{
	if (n == 1)
		return 0.0;
	if (dbl) {
		double step = 1.0 / (double)(n - 1);

		return i < n / 2 ? step * i : 1.0 - step * (double)(n - 1 - i);
	}
	float step = 1.0f / (float)(n - 1);

	return i < n / 2 ? step * (float)i : 1.0f - step * (float)(n - 1 - i);
}

void
ltx2_rope_table(const float *frac, int64_t N, int n_axes, int dim,
    double theta, int dbl, int split, float *cs, float *sn)
{
	int nf = dim / (2 * n_axes);
	int w = split ? dim / 2 : dim;
	int pad = split ? dim / 2 - nf * n_axes : dim % (2 * n_axes);
	float freq[512];

	LQ_ASSERT(nf <= (int)(sizeof(freq) / sizeof(freq[0])));
	for (int k = 0; k < nf; k++) {
		if (dbl)
			freq[k] = (float)(pow(theta, linspace01(k, nf, 1)) * M_PI /
			    2.0);
		else
			freq[k] = powf((float)theta, (float)linspace01(k, nf, 0)) *
			    (float)M_PI / 2.0f;
	}
	for (int64_t t = 0; t < N; t++) {
		float *crow = cs + t * w, *srow = sn + t * w;

		for (int p = 0; p < pad; p++) {
			crow[p] = 1.0f;
			srow[p] = 0.0f;
		}
		for (int k = 0; k < nf; k++)
			for (int ax = 0; ax < n_axes; ax++) {
				float g2 = frac[t * n_axes + ax] * 2.0f - 1.0f;
				float ang = g2 * freq[k];
				float cv = (float)cos((double)ang);
				float sv = (float)sin((double)ang);
				int i = k * n_axes + ax;

				if (split) {
					crow[pad + i] = cv;
					srow[pad + i] = sv;
				} else {
					crow[pad + 2 * i] = crow[pad + 2 * i + 1] = cv;
					srow[pad + 2 * i] = srow[pad + 2 * i + 1] = sv;
				}
			}
	}
}
