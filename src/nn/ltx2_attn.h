/*
 * ltx2_attn.h — LTX2Attention (diffusers models/transformers/
 * transformer_ltx2.py: LTX2Attention with LTX2AudioVideoAttnProcessor) on
 * gpu ops, shared by LTX-2's text connectors and (to come) its DiT:
 * to_q / to_k / to_v (bias), norm_q / norm_k = torch.nn.RMSNorm over the
 * whole inner dim with weights, eps 1e-6 (norm_eps), RoPE (interleaved on the inner
 * dim, or split halves per head) on the inner dim
 * after the norms (query and key tables may differ), head split, SDPA with
 * scale 1/sqrt(head_dim) and an optional additive key bias, optional
 * per-head gates 2·sigmoid(to_gate_logits(x)) on each head's output, then
 * to_out.0.  WanAttention with WanAttnProcessor (transformer_wan.py,
 * text-to-video: no added key / value projections) is the same
 * computation with its config's eps, ungated, interleaved RoPE tables
 * repeated over the heads; nn/wan_transformer.c uses it.
 *
 * Ownership: the struct holds views borrowed from an nn_weights, valid
 * while it lives; scratch tensors are the caller's.
 */
#ifndef LQ_NN_LTX2_ATTN_H
#define LQ_NN_LTX2_ATTN_H

#include "core/error.h"
#include "gpu/gpu.h"
#include "nn/weights.h"

#define LTX2_ATTN_NORM_EPS 1e-6f	/* LTX2Attention's norm_eps default */

struct ltx2_attn {
	int heads, head_dim, inner;	/* inner = heads · head_dim */
	int query_dim, kv_dim;
	int has_bias, has_out_bias, gated;
	int rope_split;		/* rope_type "split" (tables [.., N, inner/2],
				 * ops_rope_split per head); 0: interleaved.
				 * Set by the caller after ltx2_attn_load. */
	float norm_eps;		/* norm_q / norm_k eps: LTX2_ATTN_NORM_EPS
				 * from ltx2_attn_load; WanAttention's is
				 * its config's eps (set by the caller) */
	int rope_q_heads, rope_k_heads;	/* split only: the head count the
				 * query's / key's table was reshaped with
				 * (upstream's x.reshape(B, T, H_table, -1));
				 * 0: heads.  The DiT's a2v / v2a tables use
				 * the video heads on the video side. */
	struct gpu_tensor to_q_w, to_q_b, to_k_w, to_k_b, to_v_w, to_v_b;
	struct gpu_tensor norm_q_w, norm_k_w, to_out_w, to_out_b;
	struct gpu_tensor gate_w, gate_b;	/* to_gate_logits (gated) */
};

/*
 * Views of `prefix`.to_q / to_k / to_v / norm_q / norm_k / to_out.0 /
 * to_gate_logits with the shapes upstream builds (LQ-NN-WMISS /
 * LQ-NN-WSHAPE naming the tensor otherwise).
 */
enum lq_status ltx2_attn_load(const struct nn_weights *w, const char *prefix,
    int query_dim, int kv_dim, int heads, int head_dim, int bias,
    int out_bias, int gated, struct ltx2_attn *a, struct lq_error *err);

/* Scratch of one call: q, o [B, Nq, inner]; k, v [B, Nk, inner]; gates
 * [B, Nq, heads] (gated only). */
struct ltx2_attn_scratch {
	struct gpu_tensor q, k, v, o, gates;
};

/*
 * out [B, Nq, query_dim] = attention of x [B, Nq, query_dim] over kv
 * [B, Nk, kv_dim] (NULL: x).  q_cos / q_sin [1 or B, Nq, inner] and
 * k_cos / k_sin [1 or B, Nk, inner] interleaved RoPE tables, or
 * [.., inner/2] with rope_split (ops_rope_split, heads of head_dim) (NULL: no
 * RoPE; k NULL with q set: the query's tables, as upstream); key_bias
 * [B, Nk] additive or NULL.  With res, a block's residual instead: out =
 * res + gate · attention, added in to_out's epilogue
 * (ops_linear_gated_add: res may be out; gate [B, query_dim], or [B, Nq,
 * query_dim] per token, or NULL = 1).  Records into cmd; out must not
 * alias x, except as that residual (out = res = x: to_out, the last op,
 * writes it after every read of x).
 */
enum lq_status ltx2_attn_forward(struct gpu_cmd *cmd, const struct ltx2_attn *a,
    const struct gpu_tensor *out, const struct gpu_tensor *res,
    const struct gpu_tensor *gate, const struct gpu_tensor *x,
    const struct gpu_tensor *kv, const struct ltx2_attn_scratch *s,
    const struct gpu_tensor *q_cos, const struct gpu_tensor *q_sin,
    const struct gpu_tensor *k_cos, const struct gpu_tensor *k_sin,
    const struct gpu_tensor *key_bias);

/*
 * ltx2_attn_forward in two halves, for a caller that runs the attention
 * itself (context parallelism's exchange): _project records the gates,
 * to_q / to_k / to_v, norm_q / norm_k and RoPE into s->q, s->k, s->v (and
 * s->gates), arguments as ltx2_attn_forward; _out records out =
 * to_out(gates · s->o) (with res: res + gate · that, as
 * ltx2_attn_forward) once s->o holds the attention's output.
 */
enum lq_status ltx2_attn_project(struct gpu_cmd *cmd,
    const struct ltx2_attn *a, const struct gpu_tensor *x,
    const struct gpu_tensor *kv, const struct ltx2_attn_scratch *s,
    const struct gpu_tensor *q_cos, const struct gpu_tensor *q_sin,
    const struct gpu_tensor *k_cos, const struct gpu_tensor *k_sin);
enum lq_status ltx2_attn_out(struct gpu_cmd *cmd, const struct ltx2_attn *a,
    const struct gpu_tensor *out, const struct gpu_tensor *res,
    const struct gpu_tensor *gate, const struct ltx2_attn_scratch *s);
/*
 * o = SDPA(q, k, v) over `heads` heads of a->head_dim (scale
 * 1/sqrt(head_dim)) with key_bias [B, Nk] or NULL: ltx2_attn_forward's
 * attention; a context rank's exchange runs it on its heads/P heads of
 * every token ([B, N, heads·head_dim]).
 */
enum lq_status ltx2_attn_sdpa(struct gpu_cmd *cmd, const struct ltx2_attn *a,
    const struct gpu_tensor *o, const struct gpu_tensor *q,
    const struct gpu_tensor *k, const struct gpu_tensor *v, int heads,
    const struct gpu_tensor *key_bias);

/*
 * LTX2PerturbedAttnProcessor with every sample perturbed (spatio-temporal
 * guidance): out [B, N, query_dim] = to_out(gates · to_v(x)), no query,
 * key or softmax (self-attention only: the values are x's).  Scratch as
 * ltx2_attn_forward (v, gates); res and gate as there.  Records into cmd.
 */
enum lq_status ltx2_attn_values(struct gpu_cmd *cmd, const struct ltx2_attn *a,
    const struct gpu_tensor *out, const struct gpu_tensor *res,
    const struct gpu_tensor *gate, const struct gpu_tensor *x,
    const struct ltx2_attn_scratch *s);

/*
 * The cos / sin tables of LTX2AudioVideoRotaryPosEmbed.forward (and of
 * the connectors' LTX2RotaryPosEmbed1d.forward) for N tokens whose
 * positions frac [N, n_axes] are already fractions of the base sizes
 * (upstream's `grid`), in upstream's float32 order of operations:
 * freq_k = theta^linspace(0, 1, dim // (2 n_axes))_k · pi / 2 (double
 * when `dbl`, then float32), angle (frac·2 - 1)·freq at index
 * k·n_axes + axis.  Interleaved (split 0): cos, sin [N, dim], each angle
 * twice after dim % (2 n_axes) padding channels (cos 1, sin 0).  Split:
 * [N, dim / 2], one value per angle after dim/2 - n_axes·(dim // (2
 * n_axes)) padding values (upstream's per-head reshape [B, H, N,
 * dim/(2H)] is the flat index h·dim/(2H) + j, as ops_rope_split reads
 * it).  Caller-owned arrays; allocates nothing.
 */
void ltx2_rope_table(const float *frac, int64_t N, int n_axes, int dim,
    double theta, int dbl, int split, float *cos_out, float *sin_out);

#endif
