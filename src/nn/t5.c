/*
 * t5.c — T5 v1.1 encoder (transformers modeling_t5.py T5EncoderModel /
 * T5Stack / T5Block / T5LayerSelfAttention / T5LayerFF) on the gpu ops.
 * See t5.h for the math.
 */
#include "nn/t5.h"

#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/half.h"
#include "core/json.h"
#include "core/log.h"
#include "core/util.h"
#include "gpu/gpu.h"
#include "gpu/ops.h"
#include "model/safetensors.h"
#include "nn/plan.h"

struct t5_weight {
	struct gpu_buffer *buf;
	struct gpu_tensor t;
};

struct t5_block {
	struct t5_weight ln0, q, k, v, o;	/* layer.0: self-attention */
	struct t5_weight ln1, wi0, wi1, wo;	/* layer.1: feed-forward */
};

struct t5_encoder {
	struct gpu_ctx *ctx;
	struct t5_config cfg;
	enum ops_act act;
	struct st_set *weights;		/* kept open: embedding rows */
	const struct st_tensor *embed;	/* shared.weight [vocab, d_model] */
	float *rel_bias;		/* [num_buckets, num_heads] host f32 */
	struct t5_block *blocks;
	struct t5_weight final_ln;
	struct gpu_pool *pool;
	struct gpu_cmd *cmd;
	unsigned forwards;
};

/* ---- config ------------------------------------------------------------- */

enum lq_status
t5_config_load(const char *path, struct t5_config *cfg, struct lq_error *err)
{
	cJSON *j = NULL;
	enum lq_status st = diffusers_load_json(path, &j, err);
	if (st == LQ_OK) {
		st = diffusers_parse_t5(j, path, cfg, err);
	}
	cJSON_Delete(j);
	return st;
}

/* ---- relative position bias -------------------------------------------- */

int
t5_relative_position_bucket(int relative_position, int bidirectional,
    int num_buckets, int max_distance)
{
	int bucket = 0;
	if (bidirectional) {
		num_buckets /= 2;
		if (relative_position > 0) {
			bucket += num_buckets;
		}
		relative_position = abs(relative_position);
	} else {
		relative_position = relative_position < 0 ?
		    -relative_position : 0;
	}
	int max_exact = num_buckets / 2;
	if (relative_position < max_exact) {
		return bucket + relative_position;
	}
	/*
	 * Upstream: max_exact + (torch.log(rp.float() / max_exact) /
	 * math.log(max_distance / max_exact) * (num_buckets - max_exact))
	 * .to(torch.long) — float32 tensor ops with python scalars, so every
	 * step rounds to float32 and .to(long) truncates.
	 */
	volatile float x = (float)relative_position / (float)max_exact;
	volatile float l = logf(x);
	volatile float d = (float)log((double)max_distance / max_exact);
	volatile float r = l / d;
	volatile float s = r * (float)(num_buckets - max_exact);
	int large = max_exact + (int)s;
	if (large > num_buckets - 1) {
		large = num_buckets - 1;
	}
	return bucket + large;
}

/* ---- loading ------------------------------------------------------------ */

static enum lq_status
gpu_dtype_from_st(const struct st_tensor *t, enum gpu_dtype *out,
    struct lq_error *err)
{
	switch (t->dtype) {
	case ST_F32: *out = GPU_F32; return LQ_OK;
	case ST_F16: *out = GPU_F16; return LQ_OK;
	case ST_BF16: *out = GPU_BF16; return LQ_OK;
	default:
		error_set(err, LQ_FAILED, "LQ-T5-003",
		    "weight %s has dtype %s; F32, F16 or BF16 expected",
		    t->name, st_dtype_name(t->dtype));
		error_set_field(err, "%s", t->name);
		return LQ_FAILED;
	}
}

static const struct st_tensor *
find_checked(struct st_set *set, const char *name, int ndim,
    const int64_t *shape, struct lq_error *err)
{
	const struct st_tensor *t = st_set_find(set, name);
	if (t == NULL) {
		error_set(err, LQ_FAILED, "LQ-T5-002",
		    "T5 weight %s is missing from %s", name, st_set_path(set));
		error_set_field(err, "%s", name);
		return NULL;
	}
	bool ok = t->ndim == ndim;
	for (int i = 0; ok && i < ndim; i++) {
		ok = t->shape[i] == shape[i];
	}
	if (!ok) {
		char want[64], got[64];
		int n = snprintf(want, sizeof(want), "[");
		for (int i = 0; i < ndim; i++) {
			n += snprintf(want + n, sizeof(want) - (size_t)n,
			    "%s%lld", i ? ", " : "", (long long)shape[i]);
		}
		snprintf(want + n, sizeof(want) - (size_t)n, "]");
		n = snprintf(got, sizeof(got), "[");
		for (int i = 0; i < t->ndim && n < 50; i++) {
			n += snprintf(got + n, sizeof(got) - (size_t)n,
			    "%s%lld", i ? ", " : "", (long long)t->shape[i]);
		}
		snprintf(got + n, sizeof(got) - (size_t)n, "]");
		error_set(err, LQ_FAILED, "LQ-T5-003",
		    "T5 weight %s has shape %s; the config implies %s", name,
		    got, want);
		error_set_field(err, "%s", name);
		return NULL;
	}
	return t;
}

/* Uploads one weight in its own dtype into its own buffer. */
static enum lq_status
load_weight(struct t5_encoder *enc, const char *name, int ndim,
    const int64_t *shape, struct t5_weight *w, struct lq_error *err)
{
	const struct st_tensor *t = find_checked(enc->weights, name, ndim,
	    shape, err);
	if (t == NULL) {
		return LQ_FAILED;
	}
	enum gpu_dtype dt;
	enum lq_status st = gpu_dtype_from_st(t, &dt, err);
	if (st != LQ_OK) {
		return st;
	}
	st = gpu_buffer_create(enc->ctx, t->nbytes, &w->buf, err);
	if (st != LQ_OK) {
		return st;
	}
	w->t = gpu_tensor_make(w->buf, 0, dt, ndim, shape);
	/* st data may be unaligned; gpu_tensor_upload copies bytes. */
	return gpu_tensor_upload(enc->ctx, &w->t, t->data, err);
}

static void
weight_free(struct t5_weight *w)
{
	gpu_buffer_free(w->buf);
	w->buf = NULL;
}

enum lq_status
t5_encoder_load(struct gpu_ctx *ctx, const char *dir, struct t5_encoder **out,
    struct lq_error *err)
{
	*out = NULL;
	struct t5_encoder *enc = xcalloc(1, sizeof(*enc));
	enc->ctx = ctx;
	char *cfg_path = xasprintf("%s/config.json", dir);
	enum lq_status st = t5_config_load(cfg_path, &enc->cfg, err);
	free(cfg_path);
	if (st != LQ_OK) {
		free(enc);
		return st;
	}
	const struct t5_config *c = &enc->cfg;
	enc->act = strcmp(c->dense_act_fn, "relu") == 0 ? OPS_ACT_RELU :
	    strcmp(c->dense_act_fn, "gelu") == 0 ? OPS_ACT_GELU :
	    OPS_ACT_GELU_TANH;

	st = st_set_open(dir, &enc->weights, err);
	if (st != LQ_OK) {
		free(enc);
		return st;
	}

	int64_t D = c->d_model, I = (int64_t)c->num_heads * c->d_kv;
	int64_t F = c->d_ff, V = c->vocab_size;
	int64_t NB = c->relative_attention_num_buckets, H = c->num_heads;
	const char *ename = st_set_find(enc->weights, "shared.weight") ?
	    "shared.weight" : "encoder.embed_tokens.weight";
	enc->embed = find_checked(enc->weights, ename, 2, (int64_t[]){ V, D },
	    err);
	if (enc->embed == NULL) {
		goto fail;
	}
	if (enc->embed->dtype != ST_F32 && enc->embed->dtype != ST_F16 &&
	    enc->embed->dtype != ST_BF16) {
		enum gpu_dtype dummy;
		gpu_dtype_from_st(enc->embed, &dummy, err);
		goto fail;
	}
	const struct st_tensor *rb = find_checked(enc->weights,
	    "encoder.block.0.layer.0.SelfAttention.relative_attention_bias."
	    "weight", 2, (int64_t[]){ NB, H }, err);
	if (rb == NULL) {
		goto fail;
	}
	if (rb->dtype != ST_F32 && rb->dtype != ST_F16 &&
	    rb->dtype != ST_BF16) {
		enum gpu_dtype dummy;
		gpu_dtype_from_st(rb, &dummy, err);
		goto fail;
	}
	enc->rel_bias = st_tensor_to_f32(rb);

	enc->blocks = xcalloc((size_t)c->num_layers, sizeof(*enc->blocks));
	for (int i = 0; i < c->num_layers; i++) {
		struct t5_block *b = &enc->blocks[i];
		struct {
			const char *suffix;
			struct t5_weight *w;
			int ndim;
			int64_t s0, s1;
		} spec[] = {
			{ "layer.0.layer_norm.weight", &b->ln0, 1, D, 0 },
			{ "layer.0.SelfAttention.q.weight", &b->q, 2, I, D },
			{ "layer.0.SelfAttention.k.weight", &b->k, 2, I, D },
			{ "layer.0.SelfAttention.v.weight", &b->v, 2, I, D },
			{ "layer.0.SelfAttention.o.weight", &b->o, 2, D, I },
			{ "layer.1.layer_norm.weight", &b->ln1, 1, D, 0 },
			{ c->is_gated_act ? "layer.1.DenseReluDense.wi_0.weight"
			    : "layer.1.DenseReluDense.wi.weight", &b->wi0, 2,
			    F, D },
			{ "layer.1.DenseReluDense.wi_1.weight", &b->wi1, 2, F,
			    D },
			{ "layer.1.DenseReluDense.wo.weight", &b->wo, 2, D, F },
		};
		for (size_t k = 0; k < sizeof(spec) / sizeof(spec[0]); k++) {
			if (spec[k].w == &b->wi1 && !c->is_gated_act) {
				continue;
			}
			char *name = xasprintf("encoder.block.%d.%s", i,
			    spec[k].suffix);
			st = load_weight(enc, name, spec[k].ndim,
			    (int64_t[]){ spec[k].s0, spec[k].s1 }, spec[k].w,
			    err);
			free(name);
			if (st != LQ_OK) {
				goto fail;
			}
		}
	}
	st = load_weight(enc, "encoder.final_layer_norm.weight", 1,
	    (int64_t[]){ D }, &enc->final_ln, err);
	if (st != LQ_OK) {
		goto fail;
	}
	st = gpu_cmd_create(ctx, &enc->cmd, err);
	if (st != LQ_OK) {
		goto fail;
	}
	log_debug("t5: %d layers, d_model %d, heads %d x %d, d_ff %d, %s",
	    c->num_layers, c->d_model, c->num_heads, c->d_kv, c->d_ff,
	    st_dtype_name(enc->embed->dtype));
	*out = enc;
	return LQ_OK;
fail:
	if (st == LQ_OK) {
		st = LQ_FAILED;
	}
	t5_encoder_free(enc);
	return st;
}

void
t5_encoder_free(struct t5_encoder *enc)
{
	if (enc == NULL) {
		return;
	}
	gpu_cmd_free(enc->cmd);
	gpu_pool_free(enc->pool);
	if (enc->blocks != NULL) {
		for (int i = 0; i < enc->cfg.num_layers; i++) {
			struct t5_block *b = &enc->blocks[i];
			struct t5_weight *ws[] = { &b->ln0, &b->q, &b->k, &b->v,
			    &b->o, &b->ln1, &b->wi0, &b->wi1, &b->wo };
			for (size_t k = 0; k < sizeof(ws) / sizeof(ws[0]); k++) {
				weight_free(ws[k]);
			}
		}
	}
	weight_free(&enc->final_ln);
	free(enc->blocks);
	free(enc->rel_bias);
	st_set_close(enc->weights);
	free(enc);
}

const struct t5_config *
t5_encoder_config(const struct t5_encoder *enc)
{
	return &enc->cfg;
}

unsigned
t5_encoder_forward_count(const struct t5_encoder *enc)
{
	return enc->forwards;
}

/* ---- forward ------------------------------------------------------------ */

/* Row `id` of the embedding table as f32 into dst[d_model]. */
static void
embed_row(const struct st_tensor *e, int64_t id, int D, float *dst)
{
	size_t es = st_dtype_size(e->dtype);
	const unsigned char *src = (const unsigned char *)e->data +
	    (size_t)id * (size_t)D * es;
	for (int i = 0; i < D; i++) {
		if (e->dtype == ST_F32) {
			memcpy(&dst[i], src + (size_t)i * 4, 4);
		} else {
			uint16_t h;
			memcpy(&h, src + (size_t)i * 2, 2);
			dst[i] = e->dtype == ST_BF16 ? half_bf16_to_f32(h) :
			    half_f16_to_f32(h);
		}
	}
}

/* The pool tensors t5_encoder_forward carves, in its order (bytes). */
#define T5_CARVES 15
static uint64_t
pool_bytes_for(const struct t5_config *c, const struct device_caps *caps,
    int B, int T, uint64_t *largest)
{
	const uint64_t BT = (uint64_t)B * (uint64_t)T, D = (uint64_t)c->d_model;
	const uint64_t I = (uint64_t)c->num_heads * (uint64_t)c->d_kv;
	const uint64_t F = (uint64_t)c->d_ff;
	const uint64_t HTT = (uint64_t)c->num_heads * (uint64_t)T * (uint64_t)T;
	const uint64_t b[T5_CARVES] = {
		BT * D * 4, BT * D * 4, BT * D * 4,		/* x, h, tmp */
		BT * I * 4, BT * I * 4, BT * I * 4, BT * I * 4,	/* q, k, v, att */
		BT * F * 4, BT * F * 4,				/* ff0, ff1 */
		BT * I * 4, BT * I * 4, BT * I * 4,		/* qh, kh, vh */
		(uint64_t)B * HTT * 4,				/* scores */
		HTT * 4,					/* position bias */
		BT * 4,						/* key mask bias */
	};
	uint64_t big = 0;

	for (int i = 0; i < T5_CARVES; i++)
		if (b[i] > big)
			big = b[i];
	if (largest)
		*largest = big;
	return gpu_pool_plan(caps, b, T5_CARVES);
}

/* The weights t5_encoder_load uploads, each into its own buffer: name
 * suffixes per block (wi_1 only for gated activations). */
static const char *const t5_block_weights[] = {
	"layer.0.layer_norm.weight", "layer.0.SelfAttention.q.weight",
	"layer.0.SelfAttention.k.weight", "layer.0.SelfAttention.v.weight",
	"layer.0.SelfAttention.o.weight", "layer.1.layer_norm.weight",
	"layer.1.DenseReluDense.wi_0.weight", "layer.1.DenseReluDense.wi.weight",
	"layer.1.DenseReluDense.wi_1.weight", "layer.1.DenseReluDense.wo.weight",
};

void
t5_encoder_plan(const struct t5_config *c, const struct st_set *set,
    const struct device_caps *caps, int B, int T, struct nn_plan_bytes *out)
{
	const uint64_t D = (uint64_t)c->d_model, I = (uint64_t)c->num_heads * c->d_kv;
	const uint64_t F = (uint64_t)c->d_ff;
	uint64_t big = 0;

	memset(out, 0, sizeof(*out));
	for (int i = 0; i < c->num_layers; i++)
		for (size_t k = 0; k < LQ_ARRAY_LEN(t5_block_weights); k++) {
			const char *suf = t5_block_weights[k];
			uint64_t n;

			int gated_only = strstr(suf, "wi_") != NULL;
			int plain_only = strstr(suf, ".wi.") != NULL;

			if ((gated_only && !c->is_gated_act) ||
			    (plain_only && c->is_gated_act))
				continue;
			n = strstr(suf, "norm") ? D : strstr(suf, "wi") ? F * D :
			    strstr(suf, "wo") ? D * F : I * D;
			n *= 4;		/* f32 unless the file says otherwise */
			if (set != NULL) {
				char name[96];
				const struct st_tensor *t;

				snprintf(name, sizeof(name), "encoder.block.%d.%s",
				    i, suf);
				t = st_set_find(set, name);
				if (t != NULL)
					n = t->nbytes;
			}
			out->weights += gpu_buffer_plan_size(n);
		}
	{
		const struct st_tensor *t = set ? st_set_find(set,
		    "encoder.final_layer_norm.weight") : NULL;

		out->weights += gpu_buffer_plan_size(t ? t->nbytes : D * 4);
	}
	out->activations = pool_bytes_for(c, caps, B, T, &big);
	out->io = 0;	/* inputs and output are host arrays */
	/* embeddings, position bias, key mask bias, the output */
	out->host = (uint64_t)B * T * D * 4 * 2 +
	    (uint64_t)c->num_heads * T * T * 4 + (uint64_t)B * T * 4;
	out->largest = big;
	snprintf(out->largest_what, sizeof(out->largest_what),
	    "the text encoder's activations");
}

enum lq_status
t5_encoder_forward(struct t5_encoder *enc, const int64_t *input_ids,
    const int64_t *attention_mask, int B, int T, float *last_hidden_state,
    struct lq_error *err)
{
	LQ_ASSERT(B >= 1 && T >= 1);
	const struct t5_config *c = &enc->cfg;
	const int D = c->d_model, H = c->num_heads;
	const int64_t I = (int64_t)H * c->d_kv, F = c->d_ff;
	for (int b = 0; b < B; b++) {
		for (int t = 0; t < T; t++) {
			int64_t id = input_ids[(size_t)b * T + t];
			if (id < 0 || id >= c->vocab_size) {
				error_set(err, LQ_FAILED, "LQ-T5-010",
				    "token id %lld is outside the vocabulary "
				    "(0..%d)", (long long)id,
				    c->vocab_size - 1);
				error_set_field(err, "input_ids[%d][%d]", b, t);
				return LQ_FAILED;
			}
		}
	}

	/* Host inputs: embeddings, position bias, optional key mask bias. */
	size_t BT = (size_t)B * (size_t)T;
	float *x_host = xmalloc(BT * (size_t)D * sizeof(float));
	for (size_t i = 0; i < BT; i++) {
		embed_row(enc->embed, input_ids[i], D, x_host + i * (size_t)D);
	}
	float *pb_host = xmalloc((size_t)H * T * T * sizeof(float));
	for (int i = 0; i < T; i++) {
		for (int j = 0; j < T; j++) {
			int bucket = t5_relative_position_bucket(j - i, 1,
			    c->relative_attention_num_buckets,
			    c->relative_attention_max_distance);
			for (int h = 0; h < H; h++) {
				pb_host[((size_t)h * T + i) * T + j] =
				    enc->rel_bias[(size_t)bucket * H + h];
			}
		}
	}
	float *kb_host = NULL;
	if (attention_mask != NULL) {
		kb_host = xmalloc(BT * sizeof(float));
		for (size_t i = 0; i < BT; i++) {
			/* (1.0 - mask) * torch.finfo(float32).min */
			kb_host[i] = (1.0f - (float)attention_mask[i]) * -FLT_MAX;
		}
	}

	enum lq_status st = LQ_OK;
	size_t need = (size_t)pool_bytes_for(c, gpu_ctx_caps(enc->ctx), B, T,
	    NULL);
	if (enc->pool == NULL || gpu_pool_capacity(enc->pool) < need) {
		gpu_pool_free(enc->pool);
		enc->pool = NULL;
		st = gpu_pool_create(enc->ctx, need, &enc->pool, err);
		if (st != LQ_OK) {
			goto out;
		}
	}
	gpu_pool_reset(enc->pool, 0);

	struct gpu_tensor x, h, q, k, v, att, tmp, ff0, ff1, pb, kb;
	struct gpu_tensor qh, kh, vh, scores;
	const int64_t Dh = c->d_kv;
	const int64_t sD[3] = { B, T, D }, sI[3] = { B, T, I };
	const int64_t sF[3] = { B, T, F }, sH[4] = { B, H, T, Dh };
	struct {
		struct gpu_tensor *t;
		const int64_t *shape;
		int ndim;
	} carve[] = {
		{ &x, sD, 3 }, { &h, sD, 3 }, { &tmp, sD, 3 },
		{ &q, sI, 3 }, { &k, sI, 3 }, { &v, sI, 3 }, { &att, sI, 3 },
		{ &ff0, sF, 3 }, { &ff1, sF, 3 },
		{ &qh, sH, 4 }, { &kh, sH, 4 }, { &vh, sH, 4 },
		{ &scores, (int64_t[]){ B, H, T, T }, 4 },
		{ &pb, (int64_t[]){ H, T, T }, 3 },
		{ &kb, (int64_t[]){ B, T }, 2 },
	};
	for (size_t i = 0; i < sizeof(carve) / sizeof(carve[0]); i++) {
		st = gpu_pool_tensor(enc->pool, GPU_F32, carve[i].ndim,
		    carve[i].shape, carve[i].t, err);
		if (st != LQ_OK) {
			goto out;
		}
	}
	if ((st = gpu_tensor_upload_f32(enc->ctx, &x, x_host, err)) != LQ_OK ||
	    (st = gpu_tensor_upload_f32(enc->ctx, &pb, pb_host, err)) != LQ_OK ||
	    (kb_host != NULL && (st = gpu_tensor_upload_f32(enc->ctx, &kb,
	    kb_host, err)) != LQ_OK)) {
		goto out;
	}

	struct gpu_cmd *cmd = enc->cmd;
	gpu_cmd_begin(cmd);
	/*
	 * Attention as T5Attention.forward spells it, from plain kernels:
	 * heads split out [B, H, T, Dh], scores = q·kᵀ (NO 1/sqrt(d): T5
	 * folds it into the init), += position_bias (+ mask), softmax, ·v,
	 * heads merged back.  (ops_attention computes the same fused; its
	 * unrolled shader takes minutes to JIT on lavapipe, and at T <= 512
	 * the [B, H, T, T] scores are small.)
	 */
	const int perm[4] = { 0, 2, 1, 3 };
	const int64_t sT4[4] = { B, T, H, Dh }, sS4[4] = { B, H, T, T };
	const int64_t sS3[3] = { (int64_t)B * H, T, T };
	const int64_t sH3[3] = { (int64_t)B * H, T, Dh };
	struct gpu_tensor q4 = gpu_tensor_reshape(&q, 4, sT4);
	struct gpu_tensor k4 = gpu_tensor_reshape(&k, 4, sT4);
	struct gpu_tensor v4 = gpu_tensor_reshape(&v, 4, sT4);
	struct gpu_tensor att4 = gpu_tensor_reshape(&att, 4, sT4);
	struct gpu_tensor qp = gpu_tensor_permute(&q4, perm);
	struct gpu_tensor kp = gpu_tensor_permute(&k4, perm);
	struct gpu_tensor vp = gpu_tensor_permute(&v4, perm);
	struct gpu_tensor oh = qh;	/* q heads are dead after q·kᵀ */
	struct gpu_tensor ohp = gpu_tensor_permute(&oh, perm);
	struct gpu_tensor qh3 = gpu_tensor_reshape(&qh, 3, sH3);
	struct gpu_tensor kh3 = gpu_tensor_reshape(&kh, 3, sH3);
	struct gpu_tensor vh3 = gpu_tensor_reshape(&vh, 3, sH3);
	struct gpu_tensor oh3 = gpu_tensor_reshape(&oh, 3, sH3);
	struct gpu_tensor sc3 = gpu_tensor_reshape(&scores, 3, sS3);
	struct gpu_tensor pbb = gpu_tensor_broadcast(&pb, 4, sS4);
	struct gpu_tensor kb4 = gpu_tensor_reshape(&kb, 4,
	    (int64_t[]){ B, 1, 1, T });
	struct gpu_tensor kbb = gpu_tensor_broadcast(&kb4, 4, sS4);
	const float eps = (float)c->layer_norm_epsilon;
	for (int i = 0; i < c->num_layers; i++) {
		const struct t5_block *b = &enc->blocks[i];
		/* T5LayerSelfAttention */
		ops_rms_norm(cmd, &h, &x, &b->ln0.t, eps);
		ops_linear(cmd, &q, &h, &b->q.t, NULL, OPS_ACT_NONE);
		ops_linear(cmd, &k, &h, &b->k.t, NULL, OPS_ACT_NONE);
		ops_linear(cmd, &v, &h, &b->v.t, NULL, OPS_ACT_NONE);
		ops_copy(cmd, &qh, &qp);
		ops_copy(cmd, &kh, &kp);
		ops_copy(cmd, &vh, &vp);
		ops_matmul(cmd, &sc3, &qh3, &kh3, 1, 1.0f);
		ops_add(cmd, &scores, &scores, &pbb);
		if (kb_host != NULL) {
			ops_add(cmd, &scores, &scores, &kbb);
		}
		ops_softmax(cmd, &scores, &scores);
		ops_matmul(cmd, &oh3, &sc3, &vh3, 0, 1.0f);
		ops_copy(cmd, &att4, &ohp);
		ops_linear(cmd, &tmp, &att, &b->o.t, NULL, OPS_ACT_NONE);
		ops_add(cmd, &x, &x, &tmp);
		/* T5LayerFF: T5DenseGatedActDense or T5DenseActDense */
		ops_rms_norm(cmd, &h, &x, &b->ln1.t, eps);
		ops_linear(cmd, &ff0, &h, &b->wi0.t, NULL, enc->act);
		if (c->is_gated_act) {
			ops_linear(cmd, &ff1, &h, &b->wi1.t, NULL,
			    OPS_ACT_NONE);
			ops_mul(cmd, &ff0, &ff0, &ff1);
		}
		ops_linear(cmd, &tmp, &ff0, &b->wo.t, NULL, OPS_ACT_NONE);
		ops_add(cmd, &x, &x, &tmp);
	}
	ops_rms_norm(cmd, &h, &x, &enc->final_ln.t, eps);
	st = gpu_cmd_submit(cmd, err);
	if (st != LQ_OK) {
		goto out;
	}
	st = gpu_tensor_download_f32(enc->ctx, &h, last_hidden_state, err);
	if (st == LQ_OK) {
		enc->forwards++;
	}
out:
	free(x_host);
	free(pb_host);
	free(kb_host);
	return st;
}
