/*
 * ltxv_transformer.c — LTXVideoTransformer3DModel.forward on Vulkan
 * (diffusers models/transformers/transformer_ltx.py), built from the ops in
 * gpu/ops.h.  The RoPE tables and sinusoidal timestep features (upstream's
 * float32 islands) are computed on the CPU by ltxv_embed.c and uploaded.
 *
 * Per block (LTXVideoTransformerBlock.forward):
 *   ada = scale_shift_table (6, D) + temb.view(B, 6, D)
 *         -> shift_msa, scale_msa, gate_msa, shift_mlp, scale_mlp, gate_mlp
 *   n   = RMSNorm(h, eps) * (1 + scale_msa) + shift_msa
 *   h  += gate_msa * attn1(n)            q/k RMSNorm over all heads (eps
 *                                          1e-5, weights), RoPE, SDPA
 *   h  += attn2(h, ctx, mask bias)       raw h, no RoPE, no gate
 *   h  += gate_mlp * ff(RMSNorm(h) * (1 + scale_mlp) + shift_mlp)
 *
 * Final layer: LayerNorm(h) * (1 + scale) + shift, then proj_out, where
 *   shift, scale = scale_shift_table (2, D) + embedded_timestep
 * or, in checkpoints saved by newer diffusers (norm_out an AdaLayerNorm
 * with chunk_dim=1, models/normalization.py), the first and second halves
 * of norm_out.linear(SiLU(embedded_timestep)) — that version's
 * _load_from_state_dict turns an old table into weight eye(D).repeat(2, 1)
 * and bias table.flatten().
 */
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "gpu/ops.h"
#include "nn/ltxv_embed.h"
#include "nn/ltxv_transformer.h"
#include "nn/weights.h"

#define TPROJ_DIM 256	/* Timesteps(num_channels=256) in AdaLayerNormSingle */

struct ltxv_attn {
	struct gpu_tensor to_q_w, to_q_b, to_k_w, to_k_b, to_v_w, to_v_b;
	struct gpu_tensor to_out_w, to_out_b, norm_q_w, norm_k_w;
};

struct ltxv_block {
	struct gpu_tensor norm1_w, norm2_w;	/* buf NULL without affine */
	struct ltxv_attn attn1, attn2;
	struct gpu_tensor ff0_w, ff0_b, ff2_w, ff2_b;
	struct gpu_tensor scale_shift_table;	/* [6, D] */
};

struct ltxv_transformer {
	struct gpu_ctx *ctx;
	struct ltxv_transformer_config cfg;
	struct nn_weights *w;
	int D, ff_dim;
	enum ops_act ff_act;
	struct gpu_tensor proj_in_w, proj_in_b, proj_out_w, proj_out_b;
	struct gpu_tensor te_l1_w, te_l1_b, te_l2_w, te_l2_b, te_lin_w, te_lin_b;
	struct gpu_tensor cap_l1_w, cap_l1_b, cap_l2_w, cap_l2_b;
	struct gpu_tensor scale_shift_table;	/* [2, D], or: */
	struct gpu_tensor norm_out_w, norm_out_b;	/* [2D, D], [2D] */
	int norm_out_linear;		/* the checkpoint has norm_out.linear.* */
	struct ltxv_block *blocks;
	struct gpu_cmd *cmd;
	int streaming;		/* blocks' weights streamed (weights.h) */
	int fused_attention;	/* 0 with LATENTQ_NN_UNFUSED_ATTENTION=1 */
	int64_t scores_budget;	/* floats, see heads_per_chunk */
	/* reserved */
	struct gpu_pool *pool;
	int rB, rN, rT, rK;
	float *h_cos, *h_sin, *h_bias, *h_tfeat;
	/* timestep runs of this forward (see segments()): sample, first
	 * token, token count, timestep; rK entries */
	int64_t *seg_b, *seg_start, *seg_len;
	float *seg_t;
	/* RoPE tables currently in h_cos/h_sin */
	int rope_valid, rope_F, rope_H, rope_W, rope_has_scale;
	double rope_s[3];
	/* context parallelism (ltxv_transformer_set_context): NULL, or rank
	 * cp_rank of cp; h_cp stages one exchange, [B, N, D] (local N) */
	struct ltxv_cp_group *cp;
	int cp_rank;
	float *h_cp;
};

/* A context-parallel group (ltxv_transformer.h): its barrier and the
 * host copies of one self-attention's q, k, v and o, [B, N, D] (whole N). */
struct ltxv_cp_group {
	int P, B, D;
	int64_t N;
	float *q, *k, *v, *o;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int waiting, aborted;
	unsigned generation;
};

/* Scratch of the unfused attention path (see sdpa()). */
struct attn_scratch {
	struct gpu_tensor qh, kh, vh, oh, scores;	/* flat f32 storage */
	int64_t hc;		/* heads whose scores fit `scores` at once */
};

/* Score memory is bounded: heads are processed in chunks whose
 * hc * Nq * Nk floats fit the budget, 64 Mi floats (256 MiB) unless
 * LATENTQ_NN_SCORES_BUDGET (floats; tests use it to force chunking) says
 * otherwise; all heads at once when they fit. */
#define SCORES_BUDGET ((int64_t)64 << 20)


static int64_t
heads_per_chunk(int64_t budget, int64_t H, int64_t Nq, int64_t Nk)
{
	int64_t hc = budget / (Nq * Nk);

	return hc < 1 ? 1 : hc > H ? H : hc;
}

static const struct gpu_tensor *
opt(const struct gpu_tensor *t)
{
	return t->buf ? t : NULL;
}

/* Looks up a weight by printf-style name; optional ones may be absent. */
static enum lq_status
wget(struct ltxv_transformer *m, struct gpu_tensor *out, int optional,
    int ndim, const int64_t *shape, struct lq_error *err, const char *fmt, ...)
    __attribute__((format(printf, 7, 8)));

static enum lq_status
wget(struct ltxv_transformer *m, struct gpu_tensor *out, int optional,
    int ndim, const int64_t *shape, struct lq_error *err, const char *fmt, ...)
{
	char name[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(name, sizeof(name), fmt, ap);
	va_end(ap);
	if (optional && !nn_weights_has(m->w, name)) {
		memset(out, 0, sizeof(*out));
		return LQ_OK;
	}
	return nn_weights_get(m->w, name, ndim, shape, out, err);
}

#define SHAPE(...) ((const int64_t[]){ __VA_ARGS__ })

enum lq_status
ltxv_transformer_read_config(const char *dir,
    struct ltxv_transformer_config *c, struct lq_error *err)
{
	char *path = xasprintf("%s/config.json", dir);
	cJSON *root = NULL;
	enum lq_status st;

	st = diffusers_load_json(path, &root, err);
	if (st == LQ_OK)
		st = diffusers_parse_transformer(root, path, c, err);
	cJSON_Delete(root);
	free(path);
	return st;
}

static enum lq_status
load_attn(struct ltxv_transformer *m, struct ltxv_attn *a, int i,
    const char *which, int kv_in, struct lq_error *err)
{
	const int D = m->D;
	const int bias = !m->cfg.attention_bias;	/* optional when off */
	enum lq_status st;

#define LA(field, opt_, nd, shp, suffix) do { \
	st = wget(m, &a->field, opt_, nd, shp, err, \
	    "transformer_blocks.%d.%s." suffix, i, which); \
	if (st != LQ_OK) return st; } while (0)
	LA(to_q_w, 0, 2, SHAPE(D, D), "to_q.weight");
	LA(to_q_b, bias, 1, SHAPE(D), "to_q.bias");
	LA(to_k_w, 0, 2, SHAPE(D, kv_in), "to_k.weight");
	LA(to_k_b, bias, 1, SHAPE(D), "to_k.bias");
	LA(to_v_w, 0, 2, SHAPE(D, kv_in), "to_v.weight");
	LA(to_v_b, bias, 1, SHAPE(D), "to_v.bias");
	LA(to_out_w, 0, 2, SHAPE(D, D), "to_out.0.weight");
	LA(to_out_b, !m->cfg.attention_out_bias, 1, SHAPE(D), "to_out.0.bias");
	LA(norm_q_w, 0, 1, SHAPE(D), "norm_q.weight");
	LA(norm_k_w, 0, 1, SHAPE(D), "norm_k.weight");
#undef LA
	return LQ_OK;
}

static enum lq_status
load_weights(struct ltxv_transformer *m, struct lq_error *err)
{
	const struct ltxv_transformer_config *c = &m->cfg;
	const int D = m->D;
	enum lq_status st;

#define L(field, nd, shp, name) do { \
	st = wget(m, &m->field, 0, nd, shp, err, "%s", name); \
	if (st != LQ_OK) return st; } while (0)
	L(proj_in_w, 2, SHAPE(D, c->in_channels), "proj_in.weight");
	L(proj_in_b, 1, SHAPE(D), "proj_in.bias");
	L(proj_out_w, 2, SHAPE(c->out_channels, D), "proj_out.weight");
	L(proj_out_b, 1, SHAPE(c->out_channels), "proj_out.bias");
	L(te_l1_w, 2, SHAPE(D, TPROJ_DIM), "time_embed.emb.timestep_embedder.linear_1.weight");
	L(te_l1_b, 1, SHAPE(D), "time_embed.emb.timestep_embedder.linear_1.bias");
	L(te_l2_w, 2, SHAPE(D, D), "time_embed.emb.timestep_embedder.linear_2.weight");
	L(te_l2_b, 1, SHAPE(D), "time_embed.emb.timestep_embedder.linear_2.bias");
	L(te_lin_w, 2, SHAPE(6 * D, D), "time_embed.linear.weight");
	L(te_lin_b, 1, SHAPE(6 * D), "time_embed.linear.bias");
	L(cap_l1_w, 2, SHAPE(D, c->caption_channels), "caption_projection.linear_1.weight");
	L(cap_l1_b, 1, SHAPE(D), "caption_projection.linear_1.bias");
	L(cap_l2_w, 2, SHAPE(D, D), "caption_projection.linear_2.weight");
	L(cap_l2_b, 1, SHAPE(D), "caption_projection.linear_2.bias");
	if (nn_weights_has(m->w, "norm_out.linear.weight") &&
	    !nn_weights_has(m->w, "scale_shift_table")) {
		m->norm_out_linear = 1;
		L(norm_out_w, 2, SHAPE(2 * D, D), "norm_out.linear.weight");
		L(norm_out_b, 1, SHAPE(2 * D), "norm_out.linear.bias");
	} else {
		L(scale_shift_table, 2, SHAPE(2, D), "scale_shift_table");
	}
#undef L
	m->blocks = xcalloc((size_t)(c->num_layers ? c->num_layers : 1),
	    sizeof(*m->blocks));
	for (int i = 0; i < c->num_layers; i++) {
		struct ltxv_block *b = &m->blocks[i];
		struct gpu_tensor ffw;

		if (c->norm_elementwise_affine) {
			st = wget(m, &b->norm1_w, 1, 1, SHAPE(D), err,
			    "transformer_blocks.%d.norm1.weight", i);
			if (st == LQ_OK)
				st = wget(m, &b->norm2_w, 1, 1, SHAPE(D), err,
				    "transformer_blocks.%d.norm2.weight", i);
			if (st != LQ_OK)
				return st;
		}
		st = load_attn(m, &b->attn1, i, "attn1", D, err);
		if (st == LQ_OK)
			st = load_attn(m, &b->attn2, i, "attn2",
			    c->cross_attention_dim, err);
		if (st != LQ_OK)
			return st;
		/* FeedForward(dim, mult=4): the inner size comes from the
		 * weight so any stored inner size works. */
		st = wget(m, &ffw, 0, 2, SHAPE(-1, D), err,
		    "transformer_blocks.%d.ff.net.0.proj.weight", i);
		if (st != LQ_OK)
			return st;
		if (i == 0)
			m->ff_dim = (int)ffw.shape[0];
		b->ff0_w = ffw;
#define LB(field, nd, shp, suffix) do { \
	st = wget(m, &b->field, 0, nd, shp, err, "transformer_blocks.%d." suffix, i); \
	if (st != LQ_OK) return st; } while (0)
		LB(ff0_w, 2, SHAPE(m->ff_dim, D), "ff.net.0.proj.weight");
		LB(ff0_b, 1, SHAPE(m->ff_dim), "ff.net.0.proj.bias");
		LB(ff2_w, 2, SHAPE(D, m->ff_dim), "ff.net.2.weight");
		LB(ff2_b, 1, SHAPE(D), "ff.net.2.bias");
		LB(scale_shift_table, 2, SHAPE(6, D), "scale_shift_table");
#undef LB
	}
	return LQ_OK;
}

enum lq_status
ltxv_transformer_load(struct gpu_ctx *ctx, const char *dir,
    struct ltxv_transformer **out, struct lq_error *err)
{
	return ltxv_transformer_load_fused(ctx, dir, NULL, out, err);
}

enum lq_status
ltxv_transformer_load_fused(struct gpu_ctx *ctx, const char *dir,
    struct nn_lora_set *loras, struct ltxv_transformer **out,
    struct lq_error *err)
{
	return ltxv_transformer_load_opts(ctx, dir, loras, NULL, out, err);
}

/* Streaming groups: one per LTXVideoTransformerBlock, two slots (block
 * i + 1 uploads while block i computes). */
static const struct nn_weights_stream block_stream = {
	.group_prefix = "transformer_blocks.", .nslots = 2,
};

enum lq_status
ltxv_transformer_weights_layout(const struct st_set *set,
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

enum lq_status
ltxv_transformer_load_opts(struct gpu_ctx *ctx, const char *dir,
    struct nn_lora_set *loras, const struct ltxv_transformer_opts *opts,
    struct ltxv_transformer **out, struct lq_error *err)
{
	struct ltxv_transformer *m = xcalloc(1, sizeof(*m));
	enum lq_status st;

	*out = NULL;
	m->ctx = ctx;
	st = ltxv_transformer_read_config(dir, &m->cfg, err);
	if (st != LQ_OK)
		goto fail;
	m->D = m->cfg.num_attention_heads * m->cfg.attention_head_dim;
	m->ff_act = strcmp(m->cfg.activation_fn, "gelu") == 0 ?
	    OPS_ACT_GELU : OPS_ACT_GELU_TANH;
	st = nn_weights_load_streamed(ctx, dir, NULL, loras,
	    opts && opts->streaming ? &block_stream : NULL, &m->w, err);
	if (st != LQ_OK)
		goto fail;
	m->streaming = nn_weights_groups(m->w) > 0;
	st = load_weights(m, err);
	if (st != LQ_OK)
		goto fail;
	if (m->cfg.num_layers > 0)
		m->cfg.ff_inner_dim = m->ff_dim;	/* as stored */
	st = gpu_cmd_create(ctx, &m->cmd, err);
	if (st != LQ_OK)
		goto fail;
	{
		struct ltxv_attention_opts att;

		ltxv_attention_opts_from_env(&att);
		m->fused_attention = att.fused;
		m->scores_budget = att.scores_budget;
	}
	*out = m;
	return LQ_OK;
fail:
	ltxv_transformer_free(m);
	return st;
}

enum lq_status
ltxv_cp_group_create(int P, int B, int64_t N, int D,
    struct ltxv_cp_group **out, struct lq_error *err)
{
	*out = NULL;
	if (P < 1 || B < 1 || N < 1 || D < 1 || N % P != 0 || D % P != 0)
		return error_set(err, LQ_FAILED, "LQ-NN-SHAPE", "ltxv transformer: "
		    "context degree %d does not divide %lld tokens and inner_dim "
		    "%d", P, (long long)N, D);
	struct ltxv_cp_group *g = xcalloc(1, sizeof(*g));
	size_t n = (size_t)B * (size_t)N * (size_t)D;
	g->P = P;
	g->B = B;
	g->N = N;
	g->D = D;
	g->q = xmalloc(n * sizeof(float));
	g->k = xmalloc(n * sizeof(float));
	g->v = xmalloc(n * sizeof(float));
	g->o = xmalloc(n * sizeof(float));
	pthread_mutex_init(&g->mu, NULL);
	pthread_cond_init(&g->cv, NULL);
	*out = g;
	return LQ_OK;
}

void
ltxv_cp_group_free(struct ltxv_cp_group *g)
{
	if (g == NULL)
		return;
	pthread_cond_destroy(&g->cv);
	pthread_mutex_destroy(&g->mu);
	free(g->q);
	free(g->k);
	free(g->v);
	free(g->o);
	free(g);
}

int
ltxv_cp_group_degree(const struct ltxv_cp_group *g, int *D)
{
	if (D != NULL)
		*D = g->D;
	return g->P;
}

void
ltxv_cp_group_abort(struct ltxv_cp_group *g)
{
	if (g == NULL)
		return;
	pthread_mutex_lock(&g->mu);
	g->aborted = 1;
	pthread_cond_broadcast(&g->cv);
	pthread_mutex_unlock(&g->mu);
}

/* Waits until all P ranks arrive; LQ-NN-MESH when the group aborted. */
static enum lq_status
cp_barrier(struct ltxv_cp_group *g, struct lq_error *err)
{
	pthread_mutex_lock(&g->mu);
	unsigned gen = g->generation;
	if (!g->aborted && ++g->waiting == g->P) {
		g->waiting = 0;
		g->generation++;
		pthread_cond_broadcast(&g->cv);
	} else {
		while (!g->aborted && g->generation == gen)
			pthread_cond_wait(&g->cv, &g->mu);
	}
	int aborted = g->aborted && g->generation == gen;
	pthread_mutex_unlock(&g->mu);
	if (aborted)
		return error_set(err, LQ_FAILED, "LQ-NN-MESH", "ltxv transformer: "
		    "another device of the context group failed");
	return LQ_OK;
}

enum lq_status
ltxv_transformer_set_context(struct ltxv_transformer *m,
    struct ltxv_cp_group *g, int rank, struct lq_error *err)
{
	if (g != NULL && (m->cfg.num_attention_heads % g->P != 0 ||
	    m->D != g->D || rank < 0 || rank >= g->P))
		return error_set(err, LQ_FAILED, "LQ-NN-SHAPE", "ltxv transformer: "
		    "context degree %d does not divide the %d attention heads "
		    "(or rank %d / inner_dim %d does not fit the group)",
		    g->P, m->cfg.num_attention_heads, rank, m->D);
	m->cp = g;
	m->cp_rank = rank;
	m->rope_valid = 0;
	if (m->pool != NULL) {
		/* the tables and the staging follow the group: reserve again */
		gpu_pool_free(m->pool);
		m->pool = NULL;
	}
	return LQ_OK;
}

void
ltxv_transformer_set_precision(struct ltxv_transformer *m, enum gpu_precision p)
{
	gpu_cmd_set_precision(m->cmd, p);
}

void
ltxv_transformer_free(struct ltxv_transformer *m)
{
	if (m == NULL)
		return;
	free(m->h_cp);
	gpu_cmd_free(m->cmd);
	gpu_pool_free(m->pool);
	nn_weights_free(m->w);
	free(m->blocks);
	free(m->h_cos);
	free(m->h_sin);
	free(m->h_bias);
	free(m->h_tfeat);
	free(m->seg_b);
	free(m->seg_start);
	free(m->seg_len);
	free(m->seg_t);
	free(m);
}

const struct ltxv_transformer_config *
ltxv_transformer_config(const struct ltxv_transformer *m)
{
	return &m->cfg;
}

void
ltxv_attention_opts_from_env(struct ltxv_attention_opts *o)
{
	o->fused = !util_env_switch("LATENTQ_NN_UNFUSED_ATTENTION", 0);
	const char *e = getenv("LATENTQ_NN_SCORES_BUDGET");
	o->scores_budget = e && atoll(e) > 0 ? atoll(e) : SCORES_BUDGET;
}

/*
 * The tensors one forward carves from the pool, in forward's order
 * (elements of f32; fills carve[], returns how many), so the pool is
 * sized from the same list forward allocates.  K is the number of
 * timestep runs (segments(): B unless timesteps are per token).
 */
#define POOL_CARVES 32
static int
pool_carves(const struct ltxv_transformer_config *c,
    const struct ltxv_attention_opts *att, int64_t B, int64_t N, int64_t T,
    int64_t K, int64_t carve[POOL_CARVES])
{
	const int64_t D = c->inner_dim, ff = c->ff_inner_dim;
	int n = 0;

	carve[n++] = N * D;		/* cos */
	carve[n++] = N * D;		/* sin */
	carve[n++] = B * T;		/* key bias */
	carve[n++] = K * TPROJ_DIM;	/* time features */
	carve[n++] = B * N * D;		/* h */
	carve[n++] = K * D;		/* t1 */
	carve[n++] = K * D;		/* emb */
	carve[n++] = K * D;		/* silu(emb) */
	carve[n++] = K * 6 * D;		/* temb */
	carve[n++] = B * T * D;		/* caption linear_1 */
	carve[n++] = B * T * D;		/* caption projection */
	carve[n++] = K * 6 * D;		/* ada */
	for (int i = 0; i < 6; i++)
		carve[n++] = B * N * D;	/* norm, q, k, v, o, proj */
	carve[n++] = B * T * D;		/* cross k */
	carve[n++] = B * T * D;		/* cross v */
	carve[n++] = B * N * ff;	/* ff hidden */
	if (!att->fused) {
		int64_t NK = N > T ? N : T;

		carve[n++] = B * N * D;		/* per-head q */
		carve[n++] = B * NK * D;	/* k */
		carve[n++] = B * NK * D;	/* v */
		carve[n++] = B * N * D;		/* o */
		carve[n++] = heads_per_chunk(att->scores_budget,
		    c->num_attention_heads, N, NK) * N * NK;
	}
	carve[n++] = K * 2 * D;		/* final shift / scale */
	LQ_ASSERT(n <= POOL_CARVES);
	return n;
}

/* Pool capacity for a forward of (B, N, T); *largest = its largest
 * tensor in bytes. */
static uint64_t
pool_bytes(const struct ltxv_transformer_config *c,
    const struct ltxv_attention_opts *att, const struct device_caps *caps,
    int64_t B, int64_t N, int64_t T, int64_t K, uint64_t *largest)
{
	int64_t carve[POOL_CARVES];
	uint64_t bytes[POOL_CARVES], big = 0;
	int n = pool_carves(c, att, B, N, T, K, carve);

	for (int i = 0; i < n; i++) {
		bytes[i] = (uint64_t)carve[i] * sizeof(float);
		if (bytes[i] > big)
			big = bytes[i];
	}
	if (largest)
		*largest = big;
	return gpu_pool_plan(caps, bytes, n);
}

void
ltxv_transformer_plan(const struct ltxv_transformer_config *c,
    const struct nn_weights_layout *w, const struct device_caps *caps,
    int B, int N, int T, enum nn_weight_streaming streaming,
    const struct ltxv_attention_opts *att, struct nn_plan_bytes *out)
{
	struct ltxv_attention_opts env;
	uint64_t big = 0;
	const uint64_t D = (uint64_t)c->inner_dim;

	memset(out, 0, sizeof(*out));
	if (att == NULL) {
		ltxv_attention_opts_from_env(&env);
		att = &env;
	}
	if (w != NULL)
		out->weights = streaming == NN_WEIGHTS_STREAMED ?
		    w->streamed.device : w->resident.device;
	out->activations = pool_bytes(c, att, caps, B, N, T, B, &big);
	/* hidden_states, encoder_hidden_states and the output, f32, as the
	 * caller (render.c, nn/forward.c) creates them */
	out->io = gpu_buffer_plan_size((uint64_t)B * N * c->in_channels * 4) +
	    gpu_buffer_plan_size((uint64_t)B * T * c->caption_channels * 4) +
	    gpu_buffer_plan_size((uint64_t)B * N * c->out_channels * 4);
	/* RoPE tables, mask bias, time features (reserve's host scratch) */
	out->host = 2 * (uint64_t)N * D * 4 + (uint64_t)B * (T ? T : 1) * 4 +
	    (uint64_t)B * TPROJ_DIM * 4;
	out->largest = big;
	snprintf(out->largest_what, sizeof(out->largest_what),
	    "the transformer's %s activations",
	    big == (uint64_t)B * N * c->ff_inner_dim * 4 ? "feed-forward" :
	    "attention");
	if (w != NULL && w->resident.largest > out->largest) {
		out->largest = w->resident.largest;
		snprintf(out->largest_what, sizeof(out->largest_what),
		    "weight %s", w->resident.largest_name);
	}
}

/* ltxv_transformer_reserve for K timestep runs (at least B). */
static enum lq_status
reserve_k(struct ltxv_transformer *m, int B, int N, int T, int K,
    struct lq_error *err)
{
	size_t need;
	enum lq_status st;

	if (K < B)
		K = B;
	if (m->pool && B <= m->rB && N <= m->rN && T <= m->rT && K <= m->rK)
		return LQ_OK;
	if (m->pool) {
		B = B > m->rB ? B : m->rB;
		N = N > m->rN ? N : m->rN;
		T = T > m->rT ? T : m->rT;
		K = K > m->rK ? K : m->rK;
	}
	{
		struct ltxv_attention_opts att = {
			.fused = m->fused_attention,
			.scores_budget = m->scores_budget,
		};

		need = pool_bytes(&m->cfg, &att, gpu_ctx_caps(m->ctx), B, N, T,
		    K, NULL);
	}
	gpu_pool_free(m->pool);
	m->pool = NULL;
	st = gpu_pool_create(m->ctx, need, &m->pool, err);
	if (st != LQ_OK)
		return st;
	m->rB = B;
	m->rN = N;
	m->rT = T;
	m->rK = K;
	free(m->h_cos);
	free(m->h_sin);
	free(m->h_bias);
	free(m->h_tfeat);
	free(m->seg_b);
	free(m->seg_start);
	free(m->seg_len);
	free(m->seg_t);
	m->seg_b = xmalloc(sizeof(int64_t) * (size_t)K);
	m->seg_start = xmalloc(sizeof(int64_t) * (size_t)K);
	m->seg_len = xmalloc(sizeof(int64_t) * (size_t)K);
	m->seg_t = xmalloc(sizeof(float) * (size_t)K);
	/* the tables cover the whole grid; a context rank uploads its rows */
	size_t grid = (size_t)N * (size_t)(m->cp ? m->cp->P : 1);
	m->h_cos = xmalloc(sizeof(float) * grid * (size_t)m->D);
	m->h_sin = xmalloc(sizeof(float) * grid * (size_t)m->D);
	free(m->h_cp);
	m->h_cp = m->cp ? xmalloc(sizeof(float) * (size_t)B * (size_t)N *
	    (size_t)m->D) : NULL;
	m->h_bias = xmalloc(sizeof(float) * (size_t)B * (size_t)(T ? T : 1));
	m->h_tfeat = xmalloc(sizeof(float) * (size_t)K * TPROJ_DIM);
	m->rope_valid = 0;
	return LQ_OK;
}

enum lq_status
ltxv_transformer_reserve(struct ltxv_transformer *m, int B, int N, int T,
    struct lq_error *err)
{
	return reserve_k(m, B, N, T, m->rK, err);
}

/*
 * Runs of equal timesteps: per sample b, the tokens [start, start+len) that
 * share one timestep (one run per sample without timestep_tokens).  Each
 * run gets its own time embedding and modulation rows: upstream's
 * per-token `time_embed(timestep.flatten())` with identical rows computed
 * once.  Counts the runs into *K; fills m->seg_* while they fit m->rK.
 */
static void
segments(struct ltxv_transformer *m, const struct ltxv_transformer_args *a,
    int64_t B, int64_t N, int *K)
{
	int k = 0;

	for (int64_t b = 0; b < B; b++) {
		const float *tt = a->timestep_tokens ? a->timestep_tokens + b * N :
		    NULL;
		int64_t start = 0;

		while (start < N) {
			float t = tt ? tt[start] : a->timestep[b];
			int64_t end = start + 1;

			if (tt)
				while (end < N && memcmp(&tt[end], &t, sizeof(t)) == 0)
					end++;
			else
				end = N;
			if (k < m->rK) {
				m->seg_b[k] = b;
				m->seg_start[k] = start;
				m->seg_len[k] = end - start;
				m->seg_t[k] = t;
			}
			k++;
			start = end;
		}
	}
	*K = k;
}

/* Run k's tokens of x [B, N, D] (contiguous: tokens [start, start+len)
 * of its sample) as a contiguous [1, len, D] tensor. */
static struct gpu_tensor
tokens(const struct ltxv_transformer *m, const struct gpu_tensor *x, int k)
{
	int64_t N = x->shape[1], D = x->shape[2];

	return gpu_tensor_make(x->buf, x->offset +
	    (size_t)((m->seg_b[k] * N + m->seg_start[k]) * D) * sizeof(float),
	    GPU_F32, 3, (int64_t[]){ 1, m->seg_len[k], D });
}

/* Row k of a [K, D] view (any row stride) as a [1, D] view. */
static struct gpu_tensor
row1(const struct gpu_tensor *r, int64_t k)
{
	return gpu_tensor_slice(r, 0, k, 1);
}

/* ops_modulate of x [B, N, D] in place, run k's tokens with row k of
 * scale / shift ([K, D] views). */
static enum lq_status
modulate_segments(const struct ltxv_transformer *m, struct gpu_cmd *cmd,
    const struct gpu_tensor *x, const struct gpu_tensor *scale,
    const struct gpu_tensor *shift, int K)
{
	enum lq_status st = LQ_OK;

	for (int k = 0; k < K && st == LQ_OK; k++) {
		struct gpu_tensor xs = tokens(m, x, k);
		struct gpu_tensor sc = row1(scale, k), sh = row1(shift, k);

		st = ops_modulate(cmd, &xs, &xs, &sc, &sh);
	}
	return st;
}

/* 1 when the K runs are the B samples whole (no timestep_tokens): one
 * call with [K, D] rows then covers them all. */
static int
segments_whole(const struct ltxv_transformer *m, int64_t B, int64_t N, int K)
{
	int whole = K == B;

	for (int k = 0; k < K && whole; k++)
		whole = m->seg_b[k] == k && m->seg_start[k] == 0 &&
		    m->seg_len[k] == N;
	return whole;
}

/*
 * The norm of x [B, N, D] into y then the modulation of run k's tokens by
 * row k of scale / shift, in one pass (ops_norm_modulate): one call when
 * the runs are the samples (no timestep_tokens), else one per run.  With
 * `unfused_dump` (a tensor dump wants the norm's own output under that
 * name) the norm and the modulation run apart, as before.
 */
static enum lq_status
norm_modulate_segments(const struct ltxv_transformer *m, struct gpu_cmd *cmd,
    const struct gpu_tensor *y, const struct gpu_tensor *x, enum ops_norm kind,
    const struct gpu_tensor *weight, float eps, const struct gpu_tensor *scale,
    const struct gpu_tensor *shift, int K, const struct nn_dump *dump,
    const char *unfused_dump, struct lq_error *err)
{
	enum lq_status st = LQ_OK;
	int64_t B = x->shape[0], N = x->shape[1];

	if (dump != NULL && unfused_dump != NULL) {
		st = kind == OPS_NORM_RMS ?
		    ops_rms_norm(cmd, y, x, weight, eps) :
		    ops_layer_norm(cmd, y, x, weight, NULL, eps);
		if (st == LQ_OK)
			st = nn_dump_tensor(dump, cmd, unfused_dump, y, err);
		return st == LQ_OK ? modulate_segments(m, cmd, y, scale, shift,
		    K) : st;
	}
	if (segments_whole(m, B, N, K))
		return ops_norm_modulate(cmd, y, x, kind, weight, NULL, eps, scale,
		    shift);
	for (int k = 0; k < K && st == LQ_OK; k++) {
		struct gpu_tensor xs = tokens(m, x, k);
		struct gpu_tensor ys = tokens(m, y, k);
		struct gpu_tensor sc = row1(scale, k), sh = row1(shift, k);

		st = ops_norm_modulate(cmd, &ys, &xs, kind, weight, NULL, eps,
		    &sc, &sh);
	}
	return st;
}

/* ops_gated_add x += gate * r on x, r [B, N, D], per run as above. */
static enum lq_status
gated_add_segments(const struct ltxv_transformer *m, struct gpu_cmd *cmd,
    const struct gpu_tensor *x, const struct gpu_tensor *gate,
    const struct gpu_tensor *r, int K)
{
	enum lq_status st = LQ_OK;

	for (int k = 0; k < K && st == LQ_OK; k++) {
		struct gpu_tensor xs = tokens(m, x, k);
		struct gpu_tensor rs = tokens(m, r, k);
		struct gpu_tensor g = row1(gate, k);

		st = ops_gated_add(cmd, &xs, &xs, &g, &rs);
	}
	return st;
}

/*
 * x [B, N, D] += gate · (h · wᵀ + b), run k's tokens gated by row k of
 * gate ([K, D]; NULL: 1), the projection in the residual's GEMM epilogue
 * (ops_linear_gated_add, bit for bit ops_linear then ops_gated_add): one
 * call when the runs are the samples (or no gate), else one per run.
 * With a dump the projection goes to `proj` first, dumped as `name`, and
 * is added apart (gated_add_segments), as before the fusion.
 */
static enum lq_status
linear_gated_add_segments(const struct ltxv_transformer *m,
    struct gpu_cmd *cmd, const struct gpu_tensor *x,
    const struct gpu_tensor *gate, const struct gpu_tensor *h,
    const struct gpu_tensor *w, const struct gpu_tensor *b,
    const struct gpu_tensor *proj, int K, const struct nn_dump *dump,
    const char *name, struct lq_error *err)
{
	enum lq_status st = LQ_OK;
	int64_t B = x->shape[0], N = x->shape[1];

	if (dump != NULL) {
		if ((st = ops_linear(cmd, proj, h, w, b, OPS_ACT_NONE)) ||
		    (st = nn_dump_tensor(dump, cmd, name, proj, err)))
			return st;
		return gate ? gated_add_segments(m, cmd, x, gate, proj, K) :
		    ops_gated_add(cmd, x, x, NULL, proj);
	}
	if (gate == NULL || segments_whole(m, B, N, K))
		return ops_linear_gated_add(cmd, x, x, gate, h, w, b,
		    OPS_ACT_NONE);
	for (int k = 0; k < K && st == LQ_OK; k++) {
		struct gpu_tensor xs = tokens(m, x, k);
		struct gpu_tensor hs = tokens(m, h, k);
		struct gpu_tensor g = row1(gate, k);

		st = ops_linear_gated_add(cmd, &xs, &xs, &g, &hs, w, b,
		    OPS_ACT_NONE);
	}
	return st;
}

int
ltxv_transformer_streaming(const struct ltxv_transformer *m,
    size_t *slot_bytes, unsigned *uploads)
{
	nn_weights_stream_stats(m->w, slot_bytes, NULL, uploads);
	return m->streaming;
}

void
ltxv_transformer_memory(const struct ltxv_transformer *m, size_t *weights,
    size_t *pool_capacity, size_t *pool_peak)
{
	*weights = nn_weights_device_bytes(m->w);
	*pool_capacity = m->pool ? gpu_pool_capacity(m->pool) : 0;
	*pool_peak = m->pool ? gpu_pool_peak(m->pool) : 0;
}

static enum lq_status
shape_error(struct lq_error *err, const char *what,
    const struct gpu_tensor *t, const char *want)
{
	char buf[96];

	gpu_tensor_describe(t, buf, sizeof(buf));
	return error_set(err, LQ_FAILED, "LQ-NN-SHAPE",
	    "ltxv transformer: %s is %s, expected %s", what, buf, want);
}

/* Carves a pool tensor; the macro keeps forward readable. */
#define POOL(t, ...) do { \
	const int64_t shp_[] = { __VA_ARGS__ }; \
	st = gpu_pool_tensor(m->pool, GPU_F32, (int)(sizeof(shp_) / sizeof(shp_[0])), \
	    shp_, &(t), err); \
	if (st != LQ_OK) goto out; } while (0)
#define OP(x) do { if ((st = (x)) != LQ_OK) goto out; } while (0)
#define DUMP(name, t) OP(nn_dump_tensor(dump, cmd, (name), &(t), err))

/* A [B, D] row view k of a [B, K, D] table (stride[0] = K*D). */
static struct gpu_tensor
row(const struct gpu_tensor *tab, int k)
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

static struct gpu_tensor
flat_view(const struct gpu_tensor *store, int ndim, const int64_t *shape)
{
	struct gpu_tensor v = gpu_tensor_make(store->buf, store->offset, GPU_F32,
	    ndim, shape);

	LQ_ASSERT(gpu_tensor_numel(&v) <= gpu_tensor_numel(store));
	return v;
}

/*
 * softmax(scale · q kᵀ + key_bias) v per head, for q [B, Nq, H·Dh],
 * k/v [B, Nk, H·Dh], into o [B, Nq, H·Dh] (F.scaled_dot_product_attention
 * with an additive mask).  The fused kernel ops_attention by default;
 * with LATENTQ_NN_UNFUSED_ATTENTION=1, head-major copies, two batched
 * matmuls and a softmax over scores held for `sc->hc` heads at a time (a
 * cross-check of the kernel, and a fallback for a driver it troubles).
 */
static enum lq_status
sdpa(struct ltxv_transformer *m, struct gpu_cmd *cmd, const struct gpu_tensor *o,
    const struct gpu_tensor *q, const struct gpu_tensor *k,
    const struct gpu_tensor *v, const struct gpu_tensor *key_bias,
    const struct attn_scratch *sc)
{
	int64_t B = q->shape[0], Nq = q->shape[1], Nk = k->shape[1];
	int64_t Dh = m->cfg.attention_head_dim, H = q->shape[2] / Dh;
	float scale = (float)(1.0 / sqrt((double)Dh));
	static const int perm[4] = { 0, 2, 1, 3 };
	struct gpu_tensor q4, k4, v4, qp, kp, vp, qh, kh, vh, oh, s, o4, op;
	enum lq_status st;

	if (m->fused_attention) {
		struct ops_attention_args args = {
			.heads = (int)H, .scale = scale, .key_bias = key_bias,
		};

		return ops_attention(cmd, o, q, k, v, &args);
	}
	q4 = gpu_tensor_reshape(q, 4, (int64_t[]){ B, Nq, H, Dh });
	k4 = gpu_tensor_reshape(k, 4, (int64_t[]){ B, Nk, H, Dh });
	v4 = gpu_tensor_reshape(v, 4, (int64_t[]){ B, Nk, H, Dh });
	qp = gpu_tensor_permute(&q4, perm);
	kp = gpu_tensor_permute(&k4, perm);
	vp = gpu_tensor_permute(&v4, perm);
	qh = flat_view(&sc->qh, 4, (int64_t[]){ B, H, Nq, Dh });
	kh = flat_view(&sc->kh, 4, (int64_t[]){ B, H, Nk, Dh });
	vh = flat_view(&sc->vh, 4, (int64_t[]){ B, H, Nk, Dh });
	if ((st = ops_copy(cmd, &qh, &qp)) || (st = ops_copy(cmd, &kh, &kp)) ||
	    (st = ops_copy(cmd, &vh, &vp)))
		return st;
	/* Scores for `hc` heads of one sample at a time (sc->scores holds
	 * hc * Nq * Nk floats, see heads_per_chunk). */
	for (int64_t b = 0; b < B; b++)
		for (int64_t h0 = 0; h0 < H; h0 += sc->hc) {
			int64_t hc = H - h0 < sc->hc ? H - h0 : sc->hc;
			size_t head = (size_t)(b * H + h0);

			qh = gpu_tensor_make(sc->qh.buf, sc->qh.offset +
			    head * (size_t)(Nq * Dh) * sizeof(float), GPU_F32, 3,
			    (int64_t[]){ hc, Nq, Dh });
			kh = gpu_tensor_make(sc->kh.buf, sc->kh.offset +
			    head * (size_t)(Nk * Dh) * sizeof(float), GPU_F32, 3,
			    (int64_t[]){ hc, Nk, Dh });
			vh = gpu_tensor_make(sc->vh.buf, sc->vh.offset +
			    head * (size_t)(Nk * Dh) * sizeof(float), GPU_F32, 3,
			    (int64_t[]){ hc, Nk, Dh });
			oh = gpu_tensor_make(sc->oh.buf, sc->oh.offset +
			    head * (size_t)(Nq * Dh) * sizeof(float), GPU_F32, 3,
			    (int64_t[]){ hc, Nq, Dh });
			s = flat_view(&sc->scores, 3, (int64_t[]){ hc, Nq, Nk });
			if ((st = ops_matmul(cmd, &s, &qh, &kh, 1, scale)))
				return st;
			if (key_bias) {
				struct gpu_tensor kb = gpu_tensor_slice(key_bias, 0, b, 1);
				struct gpu_tensor kbb;

				kb = gpu_tensor_reshape(&kb, 3, (int64_t[]){ 1, 1, Nk });
				kbb = gpu_tensor_broadcast(&kb, 3, s.shape);
				if ((st = ops_add(cmd, &s, &s, &kbb)))
					return st;
			}
			if ((st = ops_softmax(cmd, &s, &s)))
				return st;
			if ((st = ops_matmul(cmd, &oh, &s, &vh, 0, 1.0f)))
				return st;
		}
	oh = flat_view(&sc->oh, 4, (int64_t[]){ B, H, Nq, Dh });
	op = gpu_tensor_permute(&oh, perm);
	o4 = gpu_tensor_reshape(o, 4, (int64_t[]){ B, Nq, H, Dh });
	return ops_copy(cmd, &o4, &op);
}

/* LATENTQ_MESH_NO_KV_GATHER=1: the negative control (ltxv_transformer.h). */
static int
cp_no_gather(void)
{
	return util_env_switch("LATENTQ_MESH_NO_KV_GATHER", 0);
}

/* Rows [r0, r0 + n) of each of B samples of a [B, N, D] host array into
 * (to_group 0) or out of (1) the [B, n, D] staging array. */
static void
cp_rows(float *all, int64_t N, float *part, int64_t B, int64_t r0, int64_t n,
    int64_t D, int to_group)
{
	for (int64_t b = 0; b < B; b++) {
		float *g = all + ((size_t)(b * N + r0) * (size_t)D);
		float *p = part + (size_t)(b * n) * (size_t)D;

		if (to_group)
			memcpy(g, p, sizeof(float) * (size_t)(n * D));
		else
			memcpy(p, g, sizeof(float) * (size_t)(n * D));
	}
}

/* Columns [c0, c0 + w) of every row of a [R, D] host array out of
 * (to_group 0) or into (1) the [R, w] staging array. */
static void
cp_cols(float *all, int64_t D, float *part, int64_t R, int64_t c0, int64_t w,
    int to_group)
{
	for (int64_t i = 0; i < R; i++) {
		float *g = all + (size_t)i * (size_t)D + (size_t)c0;
		float *p = part + (size_t)i * (size_t)w;

		if (to_group)
			memcpy(g, p, sizeof(float) * (size_t)w);
		else
			memcpy(p, g, sizeof(float) * (size_t)w);
	}
}

int
ltxv_cp_no_gather(void)
{
	return cp_no_gather();
}

/*
 * Ulysses self-attention of rank r (ltxv_transformer.h): q, k, v are this
 * rank's tokens [B, N/P, D] (recorded, not yet run); o gets its tokens'
 * attention output [B, N/P, D].  All-to-all: every rank's tokens into the
 * group's whole q/k/v, then this rank's D/P columns (H/P whole heads) of
 * all N tokens into q/k/v's own buffers viewed [B, N, D/P] (the same
 * element count), `attend` over those heads, its columns of the whole o,
 * and back this rank's tokens of every head.  Leaves cmd begun.
 */
enum lq_status
ltxv_cp_attention(struct ltxv_cp_group *g, int rank, struct gpu_ctx *ctx,
    struct gpu_cmd *cmd, float *staging, const struct gpu_tensor *o,
    const struct gpu_tensor *q, const struct gpu_tensor *k,
    const struct gpu_tensor *v, ltxv_cp_attend_fn attend, void *ud,
    struct lq_error *err)
{
	const int64_t P = g->P, B = q->shape[0], Nl = q->shape[1], D = q->shape[2];
	const int64_t N = Nl * P, Dp = D / P, r = rank;
	const struct gpu_tensor *qkv[3] = { q, k, v };
	float *all[3] = { g->q, g->k, g->v };
	struct gpu_tensor heads[3], oh;
	enum lq_status st;

	if (N != g->N || B > g->B || D != g->D)
		return error_set(err, LQ_FAILED, "LQ-NN-SHAPE", "context "
		    "rank %lld has [%lld, %lld, %lld] tokens; the group "
		    "holds [%d, %lld, %d]", (long long)r, (long long)B,
		    (long long)Nl, (long long)D, g->B, (long long)g->N, g->D);
	if ((st = gpu_cmd_submit(cmd, err)) != LQ_OK)
		return st;
	for (int i = 0; i < 3; i++) {
		if ((st = gpu_tensor_download_f32(ctx, qkv[i], staging, err)))
			return st;
		cp_rows(all[i], N, staging, B, r * Nl, Nl, D, 1);
	}
	if ((st = cp_barrier(g, err)) != LQ_OK)
		return st;
	for (int i = 0; i < 3; i++) {
		heads[i] = gpu_tensor_make(qkv[i]->buf, qkv[i]->offset, GPU_F32, 3,
		    (int64_t[]){ B, N, Dp });
		cp_cols(all[i], D, staging, B * N, r * Dp, Dp, 0);
		if ((st = gpu_tensor_upload_f32(ctx, &heads[i], staging, err)))
			return st;
	}
	oh = gpu_tensor_make(o->buf, o->offset, GPU_F32, 3,
	    (int64_t[]){ B, N, Dp });
	gpu_cmd_begin(cmd);
	if ((st = attend(ud, cmd, &oh, &heads[0], &heads[1], &heads[2], err)))
		return st;
	if ((st = gpu_cmd_submit(cmd, err)) != LQ_OK)
		return st;
	if ((st = gpu_tensor_download_f32(ctx, &oh, staging, err)))
		return st;
	cp_cols(g->o, D, staging, B * N, r * Dp, Dp, 1);
	if ((st = cp_barrier(g, err)) != LQ_OK)
		return st;
	cp_rows(g->o, N, staging, B, r * Nl, Nl, D, 0);
	if ((st = gpu_tensor_upload_f32(ctx, o, staging, err)))
		return st;
	gpu_cmd_begin(cmd);
	return LQ_OK;
}

enum lq_status
ltxv_cp_gather(struct ltxv_cp_group *g, int rank, struct gpu_ctx *ctx,
    struct gpu_cmd *cmd, float *staging, const struct gpu_tensor *part,
    const struct gpu_tensor *whole, struct lq_error *err)
{
	const int64_t P = g->P, B = part->shape[0], Nl = part->shape[1];
	const int64_t K = part->shape[2], N = Nl * P;
	enum lq_status st;

	if (N != g->N || B > g->B || K > g->D || whole->shape[0] != B ||
	    whole->shape[1] != N || whole->shape[2] != K)
		return error_set(err, LQ_FAILED, "LQ-NN-SHAPE", "context "
		    "rank %d gathers [%lld, %lld, %lld] tokens; the group "
		    "holds [%d, %lld, %d]", rank, (long long)B, (long long)Nl,
		    (long long)K, g->B, (long long)g->N, g->D);
	if ((st = gpu_cmd_submit(cmd, err)) != LQ_OK ||
	    (st = gpu_tensor_download_f32(ctx, part, staging, err)))
		return st;
	/* The group's o may still hold an ltxv_cp_attention output that a
	 * slower rank is reading its rows of (after that call's last
	 * barrier): every rank arrives here before any overwrites it.
	 * Without this, a fast rank's rows landed in a slow rank's last
	 * attention output (test-wan-cp: 64 of 384 outputs off by up to
	 * 0.3, one run in two to six). */
	if ((st = cp_barrier(g, err)) != LQ_OK)
		return st;
	cp_rows(g->o, N, staging, B, (int64_t)rank * Nl, Nl, K, 1);
	if ((st = cp_barrier(g, err)) != LQ_OK ||
	    (st = gpu_tensor_upload_f32(ctx, whole, g->o, err)))
		return st;
	/* the group's o is read by every rank before any reuses it */
	if ((st = cp_barrier(g, err)) != LQ_OK)
		return st;
	gpu_cmd_begin(cmd);
	return LQ_OK;
}

/* ltxv's attend (ltxv_cp_attention): sdpa over the rank's heads, the
 * unfused path's scores N x N per head. */
struct cp_attend {
	struct ltxv_transformer *m;
	const struct attn_scratch *sc;
};

static enum lq_status
cp_attend(void *ud, struct gpu_cmd *cmd, const struct gpu_tensor *o,
    const struct gpu_tensor *q, const struct gpu_tensor *k,
    const struct gpu_tensor *v, struct lq_error *err)
{
	const struct cp_attend *a = ud;
	/* the unfused path's scratch holds [B, N/P, D]-sized copies (the
	 * same count as [B, N, D/P]); its scores N × N per head */
	struct attn_scratch s2 = *a->sc;
	const int64_t N = q->shape[1];

	if (!a->m->fused_attention) {
		int64_t cap = gpu_tensor_numel(&a->sc->scores);

		s2.hc = cap / (N * N);
		if (s2.hc < 1)
			return error_set(err, LQ_FAILED, "LQ-NN-SHAPE",
			    "ltxv transformer: the unfused attention's "
			    "scores budget holds no head of %lld × %lld "
			    "under context parallelism", (long long)N,
			    (long long)N);
	}
	return sdpa(a->m, cmd, o, q, k, v, NULL, &s2);
}

static enum lq_status
cp_sdpa(struct ltxv_transformer *m, struct gpu_cmd *cmd,
    const struct gpu_tensor *o, const struct gpu_tensor *q,
    const struct gpu_tensor *k, const struct gpu_tensor *v,
    const struct attn_scratch *sc, struct lq_error *err)
{
	struct cp_attend a = { m, sc };

	return ltxv_cp_attention(m->cp, m->cp_rank, m->ctx, cmd, m->h_cp, o, q,
	    k, v, cp_attend, &a, err);
}

/* The attention of x over kv_in into o, up to to_out (the caller's
 * linear_gated_add_segments). */
static enum lq_status
attention(struct ltxv_transformer *m, struct gpu_cmd *cmd,
    const struct ltxv_attn *a,
    const struct gpu_tensor *x, const struct gpu_tensor *kv_in,
    struct gpu_tensor *q, struct gpu_tensor *k, struct gpu_tensor *v,
    struct gpu_tensor *o, const struct gpu_tensor *cos,
    const struct gpu_tensor *sin, const struct gpu_tensor *key_bias,
    const struct attn_scratch *sc, int self, struct lq_error *err)
{
	enum lq_status st;

	/* LTXVideoAttnProcessor: to_q/k/v, norm_q/k (RMSNorm over the whole
	 * inner dim, eps 1e-5), RoPE on the inner dim, then head split. */
	if ((st = ops_linear(cmd, q, x, &a->to_q_w, opt(&a->to_q_b), OPS_ACT_NONE)))
		return st;
	if ((st = ops_linear(cmd, k, kv_in, &a->to_k_w, opt(&a->to_k_b), OPS_ACT_NONE)))
		return st;
	if ((st = ops_linear(cmd, v, kv_in, &a->to_v_w, opt(&a->to_v_b), OPS_ACT_NONE)))
		return st;
	if ((st = ops_rms_norm(cmd, q, q, &a->norm_q_w, 1e-5f)))
		return st;
	if ((st = ops_rms_norm(cmd, k, k, &a->norm_k_w, 1e-5f)))
		return st;
	if (cos) {
		if ((st = ops_rope(cmd, q, q, cos, sin)))
			return st;
		if ((st = ops_rope(cmd, k, k, cos, sin)))
			return st;
	}
	if (self && m->cp != NULL && !cp_no_gather())
		return cp_sdpa(m, cmd, o, q, k, v, sc, err);
	return sdpa(m, cmd, o, q, k, v, key_bias, sc);
}

enum lq_status
ltxv_transformer_forward(struct ltxv_transformer *m,
    const struct ltxv_transformer_args *args, const struct gpu_tensor *output,
    const struct nn_dump *dump, struct lq_error *err)
{
	const struct ltxv_transformer_config *c = &m->cfg;
	const struct gpu_tensor *hs = args->hidden_states;
	const struct gpu_tensor *ehs = args->encoder_hidden_states;
	struct gpu_cmd *cmd = m->cmd;
	struct gpu_tensor cos, sin, kbias, tfeat, x, t1, emb, se, temb, fin;
	struct gpu_tensor cap1, ctx, ada, nrm, q, k, v, o, proj, k2, v2, ffh;
	struct attn_scratch sc;
	int64_t B, N, T, D = m->D;
	size_t mark;
	char name[96];
	int K;
	enum lq_status st;

	if (hs->ndim != 3 || hs->shape[2] != c->in_channels)
		return shape_error(err, "hidden_states", hs, "[B, N, in_channels]");
	B = hs->shape[0];
	N = hs->shape[1];
	if (ehs->ndim != 3 || ehs->shape[0] != B ||
	    ehs->shape[2] != c->caption_channels)
		return shape_error(err, "encoder_hidden_states", ehs,
		    "[B, T, caption_channels]");
	T = ehs->shape[1];
	if (output->ndim != 3 || output->shape[0] != B ||
	    output->shape[1] != N || output->shape[2] != c->out_channels)
		return shape_error(err, "output", output, "[B, N, out_channels]");
	/* a context rank holds N of the grid's P N tokens */
	const int64_t P = m->cp ? m->cp->P : 1;
	if ((int64_t)args->num_frames * args->height * args->width != N * P ||
	    args->num_frames <= 0 || args->height <= 0 || args->width <= 0)
		return error_set(err, LQ_FAILED, "LQ-NN-SHAPE",
		    "ltxv transformer: grid %d x %d x %d does not hold the %lld "
		    "tokens of hidden_states%s", args->num_frames, args->height,
		    args->width, (long long)(N * P), P > 1 ?
		    " (over the context group)" : "");
	if (args->timestep == NULL && args->timestep_tokens == NULL)
		return error_set(err, LQ_FAILED, "LQ-NN-INPUT",
		    "ltxv transformer: no timestep");
	st = ltxv_transformer_reserve(m, (int)B, (int)N, (int)T, err);
	if (st != LQ_OK)
		return st;
	segments(m, args, B, N, &K);
	if (K > m->rK) {
		/* more timestep runs than reserved: once, then kept */
		if ((st = reserve_k(m, (int)B, (int)N, (int)T, K, err)))
			return st;
		segments(m, args, B, N, &K);
	}

	/* Host float32 islands: RoPE tables (cached per grid), timestep
	 * features and the cross-attention mask bias. */
	{
		const double *s = args->rope_interpolation_scale;
		double one[3] = { 0, 0, 0 };
		int has = s != NULL;

		if (!has)
			s = one;
		if (args->video_coords != NULL) {
			/* the pipeline's coordinates: not cached (a grid
			 * key would not name them) */
			ltxv_rope_tables_coords(args->video_coords, N * P,
			    (int)D, m->h_cos, m->h_sin);
			m->rope_valid = 0;
		} else if (!m->rope_valid || m->rope_F != args->num_frames ||
		    m->rope_H != args->height || m->rope_W != args->width ||
		    m->rope_has_scale != has || memcmp(m->rope_s, s, sizeof(m->rope_s))) {
			if (has)
				ltxv_rope_tables(args->num_frames, args->height,
				    args->width, s, c->patch_size, c->patch_size_t,
				    (int)D, m->h_cos, m->h_sin);
			else {
				/* rope_interpolation_scale=None leaves the grid
				 * unscaled: coordinate = index.  Equivalent to
				 * scale = base / patch, but upstream skips the
				 * multiply, so pass a scale that rounds
				 * identically: s*p/base == 1 exactly. */
				double id[3] = {
					20.0 / c->patch_size_t,
					2048.0 / c->patch_size,
					2048.0 / c->patch_size,
				};
				ltxv_rope_tables(args->num_frames, args->height,
				    args->width, id, c->patch_size,
				    c->patch_size_t, (int)D, m->h_cos, m->h_sin);
			}
			m->rope_valid = 1;
			m->rope_F = args->num_frames;
			m->rope_H = args->height;
			m->rope_W = args->width;
			m->rope_has_scale = has;
			memcpy(m->rope_s, s, sizeof(m->rope_s));
		}
	}
	ltxv_timestep_features(m->seg_t, K, TPROJ_DIM, m->h_tfeat);
	for (int64_t i = 0; i < B * T; i++)
		m->h_bias[i] = args->encoder_attention_mask ?
		    (1.0f - args->encoder_attention_mask[i]) * -10000.0f : 0.0f;

	mark = gpu_pool_mark(m->pool);
	gpu_cmd_begin(cmd);
	POOL(cos, 1, N, D);
	POOL(sin, 1, N, D);
	POOL(kbias, B, T);
	POOL(tfeat, K, TPROJ_DIM);
	/* RoPE is per token: a context rank's rows of the grid's tables */
	OP(gpu_tensor_upload(m->ctx, &cos, m->h_cos + (size_t)(m->cp_rank * N *
	    D), err));
	OP(gpu_tensor_upload(m->ctx, &sin, m->h_sin + (size_t)(m->cp_rank * N *
	    D), err));
	OP(gpu_tensor_upload(m->ctx, &kbias, m->h_bias, err));
	OP(gpu_tensor_upload(m->ctx, &tfeat, m->h_tfeat, err));
	if (dump) {
		/* Upstream's tables are batch-repeated [B, N, D]. */
		float *rep = xmalloc(sizeof(float) * (size_t)(B * N * D));
		int64_t shp[3] = { B, N, D };

		for (int64_t b = 0; b < B; b++)
			memcpy(rep + b * N * D, m->h_cos, sizeof(float) * (size_t)(N * D));
		st = nn_dump_host(dump, "rope.out0", 3, shp, rep, err);
		for (int64_t b = 0; st == LQ_OK && b < B; b++)
			memcpy(rep + b * N * D, m->h_sin, sizeof(float) * (size_t)(N * D));
		if (st == LQ_OK)
			st = nn_dump_host(dump, "rope.out1", 3, shp, rep, err);
		free(rep);
		if (st != LQ_OK)
			goto out;
		if (args->encoder_attention_mask) {
			int64_t bshp[3] = { B, 1, T };

			OP(nn_dump_host(dump, "encoder_attention_bias", 3, bshp,
			    m->h_bias, err));
		}
		OP(nn_dump_host(dump, "time_embed.emb.time_proj", 2,
		    (int64_t[]){ K, TPROJ_DIM }, m->h_tfeat, err));
	}

	POOL(x, B, N, D);
	OP(ops_linear(cmd, &x, hs, &m->proj_in_w, &m->proj_in_b, OPS_ACT_NONE));
	DUMP("proj_in", x);

	/* AdaLayerNormSingle: emb = linear_2(SiLU(linear_1(features)));
	 * temb = linear(SiLU(emb)). */
	POOL(t1, K, D);
	POOL(emb, K, D);
	POOL(se, K, D);
	POOL(temb, K, 6 * D);
	OP(ops_linear(cmd, &t1, &tfeat, &m->te_l1_w, &m->te_l1_b, OPS_ACT_SILU));
	OP(ops_linear(cmd, &emb, &t1, &m->te_l2_w, &m->te_l2_b, OPS_ACT_NONE));
	DUMP("time_embed.emb.timestep_embedder", emb);
	OP(ops_silu(cmd, &se, &emb));
	OP(ops_linear(cmd, &temb, &se, &m->te_lin_w, &m->te_lin_b, OPS_ACT_NONE));
	DUMP("time_embed.out0", temb);
	DUMP("time_embed.out1", emb);

	/* PixArtAlphaTextProjection: linear_2(GELU-tanh(linear_1(y))). */
	POOL(cap1, B, T, D);
	POOL(ctx, B, T, D);
	OP(ops_linear(cmd, &cap1, ehs, &m->cap_l1_w, &m->cap_l1_b, OPS_ACT_GELU_TANH));
	OP(ops_linear(cmd, &ctx, &cap1, &m->cap_l2_w, &m->cap_l2_b, OPS_ACT_NONE));
	DUMP("caption_projection", ctx);

	POOL(ada, K, 6, D);
	POOL(nrm, B, N, D);
	POOL(q, B, N, D);
	POOL(k, B, N, D);
	POOL(v, B, N, D);
	POOL(o, B, N, D);
	POOL(proj, B, N, D);
	POOL(k2, B, T, D);
	POOL(v2, B, T, D);
	POOL(ffh, B, N, m->ff_dim);
	memset(&sc, 0, sizeof(sc));
	if (!m->fused_attention) {
		int64_t NK = N > T ? N : T, H = c->num_attention_heads;

		POOL(sc.qh, B * N * D);
		POOL(sc.kh, B * NK * D);
		POOL(sc.vh, B * NK * D);
		POOL(sc.oh, B * N * D);
		sc.hc = heads_per_chunk(m->scores_budget, H, N, NK);
		POOL(sc.scores, sc.hc * N * NK);
	}
	if (m->streaming && c->num_layers > 0)
		OP(nn_weights_upload_group(m->w, 0, err));
	for (int i = 0; i < c->num_layers; i++) {
		const struct ltxv_block *b = &m->blocks[i];
		struct gpu_tensor shift_msa = row(&ada, 0), scale_msa = row(&ada, 1);
		struct gpu_tensor gate_msa = row(&ada, 2), shift_mlp = row(&ada, 3);
		struct gpu_tensor scale_mlp = row(&ada, 4), gate_mlp = row(&ada, 5);

		OP(ops_add_table(cmd, &ada, &b->scale_shift_table, &temb));
		snprintf(name, sizeof(name), "transformer_blocks.%d.norm1", i);
		OP(norm_modulate_segments(m, cmd, &nrm, &x, OPS_NORM_RMS,
		    opt(&b->norm1_w), (float)c->norm_eps, &scale_msa, &shift_msa,
		    K, dump, name, err));
		OP(attention(m, cmd, &b->attn1, &nrm, &nrm, &q, &k, &v, &o,
		    &cos, &sin, NULL, &sc, 1, err));
		snprintf(name, sizeof(name), "transformer_blocks.%d.attn1", i);
		OP(linear_gated_add_segments(m, cmd, &x, &gate_msa, &o,
		    &b->attn1.to_out_w, opt(&b->attn1.to_out_b), &proj, K, dump,
		    name, err));

		OP(attention(m, cmd, &b->attn2, &x, &ctx, &q, &k2, &v2, &o,
		    NULL, NULL, args->encoder_attention_mask ? &kbias : NULL, &sc,
		    0, err));
		snprintf(name, sizeof(name), "transformer_blocks.%d.attn2", i);
		OP(linear_gated_add_segments(m, cmd, &x, NULL, &o,
		    &b->attn2.to_out_w, opt(&b->attn2.to_out_b), &proj, K, dump,
		    name, err));

		OP(norm_modulate_segments(m, cmd, &nrm, &x, OPS_NORM_RMS,
		    opt(&b->norm2_w), (float)c->norm_eps, &scale_mlp, &shift_mlp,
		    K, dump, NULL, err));
		OP(ops_linear(cmd, &ffh, &nrm, &b->ff0_w, &b->ff0_b, m->ff_act));
		snprintf(name, sizeof(name), "transformer_blocks.%d.ff", i);
		OP(linear_gated_add_segments(m, cmd, &x, &gate_mlp, &ffh,
		    &b->ff2_w, &b->ff2_b, &proj, K, dump, name, err));
		snprintf(name, sizeof(name), "transformer_blocks.%d", i);
		DUMP(name, x);
		if (m->streaming && i + 1 < c->num_layers) {
			/* Block i runs on the device while block i + 1's
			 * weights go into the other slot (the one block i - 1
			 * used, finished at the last wait).  The ops are the
			 * same as resident, on the same views, so the bits are
			 * too. */
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

	/* Final layer: scale_shift_table (2, D) + embedded_timestep, or
	 * norm_out.linear(SiLU(embedded_timestep)) viewed as (2, D) -> shift
	 * (row 0), scale (row 1); LayerNorm(eps 1e-6, no affine). */
	POOL(fin, K, 2, D);
	{
		int64_t shp[3] = { K, 2, D };
		struct gpu_tensor shift = row(&fin, 0), scale = row(&fin, 1);

		if (m->norm_out_linear) {
			struct gpu_tensor f2 = gpu_tensor_reshape(&fin, 2,
			    (int64_t[]){ K, 2 * D });

			OP(ops_linear(cmd, &f2, &se, &m->norm_out_w,
			    &m->norm_out_b, OPS_ACT_NONE));
		} else {
			struct gpu_tensor tab = gpu_tensor_broadcast(
			    &m->scale_shift_table, 3, shp);
			struct gpu_tensor e3 = gpu_tensor_reshape(&emb, 3,
			    (int64_t[]){ K, 1, D });
			struct gpu_tensor eb = gpu_tensor_broadcast(&e3, 3, shp);

			OP(ops_add(cmd, &fin, &tab, &eb));
		}
		OP(norm_modulate_segments(m, cmd, &nrm, &x, OPS_NORM_LAYER, NULL,
		    1e-6f, &scale, &shift, K, dump, "norm_out", err));
	}
	OP(ops_linear(cmd, output, &nrm, &m->proj_out_w, &m->proj_out_b, OPS_ACT_NONE));
	if (dump) {
		/* proj_out is the output itself. */
		DUMP("proj_out", *output);
	}
	st = gpu_cmd_submit(cmd, err);
out:
	/* an op's failure is the command's sticky error: report it (an
	 * error left empty here was how a too-large tensor used to fail) */
	if (st != LQ_OK && err != NULL && err->status == LQ_OK)
		(void)gpu_cmd_status(cmd, err);
	/* the other ranks of a context group must not wait for this one */
	if (st != LQ_OK && m->cp != NULL)
		ltxv_cp_group_abort(m->cp);
	gpu_pool_reset(m->pool, mark);
	return st;
}
