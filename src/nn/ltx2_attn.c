/*
 * ltx2_attn.c — LTX2Attention on gpu ops (see ltx2_attn.h; diffusers
 * transformer_ltx2.py LTX2Attention, LTX2AudioVideoAttnProcessor,
 * apply_interleaved_rotary_emb, apply_split_rotary_emb).
 */
#include <math.h>
#include <stdio.h>

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

enum lq_status
ltx2_attn_forward(struct gpu_cmd *cmd, const struct ltx2_attn *a,
    const struct gpu_tensor *out, const struct gpu_tensor *x,
    const struct gpu_tensor *kv, const struct ltx2_attn_scratch *s,
    const struct gpu_tensor *q_cos, const struct gpu_tensor *q_sin,
    const struct gpu_tensor *k_cos, const struct gpu_tensor *k_sin,
    const struct gpu_tensor *key_bias)
{
	struct ops_attention_args args = {
		.heads = a->heads,
		.scale = (float)(1.0 / sqrt((double)a->head_dim)),
		.key_bias = key_bias,
	};
	enum lq_status st;

	if (kv == NULL)
		kv = x;
	if (k_cos == NULL) {
		k_cos = q_cos;
		k_sin = q_sin;
	}
	if (a->gated &&
	    /* gates from the attention's query input, before anything else */
	    ((st = ops_linear(cmd, &s->gates, x, &a->gate_w, &a->gate_b,
	    OPS_ACT_NONE)) ||
	    (st = ops_act(cmd, &s->gates, &s->gates, OPS_ACT_SIGMOID)) ||
	    (st = ops_scale(cmd, &s->gates, &s->gates, 2.0f, 0.0f))))
		return st;
	if ((st = ops_linear(cmd, &s->q, x, &a->to_q_w,
	    a->has_bias ? &a->to_q_b : NULL, OPS_ACT_NONE)) ||
	    (st = ops_linear(cmd, &s->k, kv, &a->to_k_w,
	    a->has_bias ? &a->to_k_b : NULL, OPS_ACT_NONE)) ||
	    (st = ops_linear(cmd, &s->v, kv, &a->to_v_w,
	    a->has_bias ? &a->to_v_b : NULL, OPS_ACT_NONE)) ||
	    (st = ops_rms_norm(cmd, &s->q, &s->q, &a->norm_q_w,
	    LTX2_ATTN_NORM_EPS)) ||
	    (st = ops_rms_norm(cmd, &s->k, &s->k, &a->norm_k_w,
	    LTX2_ATTN_NORM_EPS)))
		return st;
	if (q_cos != NULL && a->rope_split &&
	    ((st = ops_rope_split(cmd, &s->q, &s->q, q_cos, q_sin, a->head_dim)) ||
	    (st = ops_rope_split(cmd, &s->k, &s->k, k_cos, k_sin, a->head_dim))))
		return st;
	if (q_cos != NULL && !a->rope_split &&
	    ((st = ops_rope(cmd, &s->q, &s->q, q_cos, q_sin)) ||
	    (st = ops_rope(cmd, &s->k, &s->k, k_cos, k_sin))))
		return st;
	if ((st = ops_attention(cmd, &s->o, &s->q, &s->k, &s->v, &args)))
		return st;
	if (a->gated) {
		int64_t B = s->o.shape[0], N = s->o.shape[1];
		struct gpu_tensor o4 = gpu_tensor_reshape(&s->o, 4,
		    SHAPE(B, N, a->heads, a->head_dim));
		struct gpu_tensor g4 = gpu_tensor_reshape(&s->gates, 4,
		    SHAPE(B, N, a->heads, 1));
		struct gpu_tensor gb = gpu_tensor_broadcast(&g4, 4, o4.shape);

		if ((st = ops_mul(cmd, &o4, &o4, &gb)))
			return st;
	}
	return ops_linear(cmd, out, &s->o, &a->to_out_w,
	    a->has_out_bias ? &a->to_out_b : NULL, OPS_ACT_NONE);
}
