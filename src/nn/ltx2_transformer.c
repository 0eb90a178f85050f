/*
 * ltx2_transformer.c — LTX2VideoTransformer3DModel on Vulkan (diffusers
 * models/transformers/transformer_ltx2.py at 58eb52c:
 * LTX2AudioVideoRotaryPosEmbed, LTX2AdaLayerNormSingle,
 * LTX2VideoTransformerBlock, LTX2VideoTransformer3DModel.forward; the
 * attention is nn/ltx2_attn.h's, the sinusoids nn/ltxv_embed.h's).
 *
 * The RoPE coordinates and tables, the timestep sinusoids and the text
 * mask biases are float32 islands on the CPU in upstream's order of
 * operations; everything else runs on the device.  Modulation tables are
 * `table + temb` per block ([rows, P, D], rows B or B·N for per-token
 * timesteps), their scale rows turned into (1 + scale) in place, then
 * read through broadcast views [B, tokens, D].
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "gpu/ops.h"
#include "nn/ltx2_attn.h"
#include "nn/ltx2_transformer.h"
#include "nn/ltxv_embed.h"
#include "nn/ltxv_transformer.h"
#include "nn/weights.h"

#define TPROJ_DIM 256		/* Timesteps(num_channels=256) of the embeddings */
#define FF_MULT 4		/* FeedForward's mult */
#define NORM_OUT_EPS 1e-6f	/* norm_out / audio_norm_out LayerNorm eps */
#define MASK_BIAS -10000.0f	/* (1 - mask) · -10000.0 */

#define SHAPE(...) ((const int64_t[]){ __VA_ARGS__ })

/* LTX2AdaLayerNormSingle: emb = timestep_embedder(sinusoids), out0 =
 * linear(SiLU(emb)) [rows, P·D], out1 = emb. */
struct adaln {
	const char *name;
	int D, P;
	struct gpu_tensor l1_w, l1_b, l2_w, l2_b, lin_w, lin_b;
};

/* PixArtAlphaTextProjection: linear_2(GELU-tanh(linear_1(y))). */
struct txt_proj {
	struct gpu_tensor l1_w, l1_b, l2_w, l2_b;
};

struct ff {
	struct gpu_tensor w0, b0, w2, b2;
};

struct block {
	struct ltx2_attn attn1, audio_attn1, attn2, audio_attn2;
	struct ltx2_attn audio_to_video_attn, video_to_audio_attn;
	struct ff ff, audio_ff;
	struct gpu_tensor scale_shift_table, audio_scale_shift_table;
	struct gpu_tensor prompt_scale_shift_table, audio_prompt_scale_shift_table;
	struct gpu_tensor video_a2v_cross_attn_scale_shift_table;
	struct gpu_tensor audio_a2v_cross_attn_scale_shift_table;
};

/* The embeddings, in this order. */
enum {
	E_TIME, E_AUDIO_TIME, E_PROMPT, E_AUDIO_PROMPT, E_V_SS, E_V_GATE,
	E_A_SS, E_A_GATE, E_COUNT
};
static const char *const emb_names[E_COUNT] = {
	"time_embed", "audio_time_embed", "prompt_adaln", "audio_prompt_adaln",
	"av_cross_attn_video_scale_shift", "av_cross_attn_video_a2v_gate",
	"av_cross_attn_audio_scale_shift", "av_cross_attn_audio_v2a_gate",
};

struct ltx2_transformer {
	struct gpu_ctx *ctx;
	struct ltx2_transformer_config cfg;
	struct nn_weights *w;
	struct gpu_cmd *cmd;
	struct gpu_pool *pool;
	float *host;			/* the forward's host scratch (host_layout) */
	size_t host_n;			/* its floats */
	struct gpu_tensor proj_in_w, proj_in_b, audio_proj_in_w, audio_proj_in_b;
	struct gpu_tensor proj_out_w, proj_out_b, audio_proj_out_w, audio_proj_out_b;
	struct gpu_tensor scale_shift_table, audio_scale_shift_table;
	struct txt_proj caption_projection, audio_caption_projection;
	struct adaln emb[E_COUNT];
	struct block *blocks;
	/* context parallelism (ltx2_transformer_set_context): NULL, or rank
	 * cp_rank of the video stream's group cp and the audio's acp */
	struct ltxv_cp_group *cp, *acp;
	int cp_rank;
};

/* ---- call arguments ---- */

void
ltx2_transformer_call_init(struct ltx2_transformer_call *c)
{
	memset(c, 0, sizeof(*c));
}

static int
parse_bool(const char *v, int *out)
{
	if (strcmp(v, "true") == 0 || strcmp(v, "1") == 0 ||
	    strcmp(v, "True") == 0)
		return *out = 1, 0;
	if (strcmp(v, "false") == 0 || strcmp(v, "0") == 0 ||
	    strcmp(v, "False") == 0)
		return *out = 0, 0;
	return -1;
}

enum lq_status
ltx2_transformer_call_set(struct ltx2_transformer_call *c, const char *name,
    const char *value, struct lq_error *err)
{
	if (strcmp(name, "use_cross_timestep") == 0 ||
	    strcmp(name, "isolate_modalities") == 0) {
		int *dst = name[0] == 'u' ? &c->use_cross_timestep :
		    &c->isolate_modalities;

		if (parse_bool(value, dst) == 0)
			return LQ_OK;
		error_set(err, LQ_FAILED, "LQ-NN-INPUT", "%s \"%s\" is not true "
		    "or false", name, value);
		error_set_field(err, "%s", name);
		error_set_hint(err, "set %s=true or %s=false (upstream's default "
		    "is false)", name, name);
		return LQ_FAILED;
	}
	if (strcmp(name, "spatio_temporal_guidance_blocks") == 0) {
		const char *p = value;

		c->n_stg = 0;
		if (*p == '\0' || strcmp(p, "none") == 0 || strcmp(p, "None") == 0)
			return LQ_OK;
		for (;;) {
			char *end;
			long v = strtol(p, &end, 10);

			if (end == p || v < 0 || v > 1 << 20 ||
			    (*end != ',' && *end != '\0') ||
			    c->n_stg == LTX2_TRANSFORMER_MAX_STG) {
				error_set(err, LQ_FAILED, "LQ-NN-INPUT",
				    "spatio_temporal_guidance_blocks \"%s\" is not "
				    "a comma list of at most %d block indices",
				    value, LTX2_TRANSFORMER_MAX_STG);
				error_set_field(err, "%s", name);
				error_set_hint(err, "e.g. "
				    "spatio_temporal_guidance_blocks=28 or =1,2; "
				    "none for None");
				return LQ_FAILED;
			}
			c->stg_blocks[c->n_stg++] = (int)v;
			if (*end == '\0')
				return LQ_OK;
			p = end + 1;
		}
	}
	error_set(err, LQ_FAILED, "LQ-NN-INPUT", "the LTX-2 transformer takes no "
	    "argument \"%s\"", name);
	error_set_field(err, "%s", name);
	error_set_hint(err, "set use_cross_timestep=true|false, "
	    "isolate_modalities=true|false or spatio_temporal_guidance_blocks=I,J");
	return LQ_FAILED;
}

/* ---- loading ---- */

static enum lq_status
wget(const struct nn_weights *w, const char *prefix, const char *name, int nd,
    const int64_t *shape, struct gpu_tensor *out, struct lq_error *err)
{
	char n[192];

	snprintf(n, sizeof(n), "%s%s%s", prefix, *prefix ? "." : "", name);
	return nn_weights_get(w, n, nd, shape, out, err);
}

static enum lq_status
load_adaln(struct ltx2_transformer *m, struct adaln *e, const char *name,
    int D, int P, struct lq_error *err)
{
	enum lq_status st;

	e->name = name;
	e->D = D;
	e->P = P;
	if ((st = wget(m->w, name, "emb.timestep_embedder.linear_1.weight", 2,
	    SHAPE(D, TPROJ_DIM), &e->l1_w, err)) ||
	    (st = wget(m->w, name, "emb.timestep_embedder.linear_1.bias", 1,
	    SHAPE(D), &e->l1_b, err)) ||
	    (st = wget(m->w, name, "emb.timestep_embedder.linear_2.weight", 2,
	    SHAPE(D, D), &e->l2_w, err)) ||
	    (st = wget(m->w, name, "emb.timestep_embedder.linear_2.bias", 1,
	    SHAPE(D), &e->l2_b, err)) ||
	    (st = wget(m->w, name, "linear.weight", 2, SHAPE(P * D, D),
	    &e->lin_w, err)) ||
	    (st = wget(m->w, name, "linear.bias", 1, SHAPE(P * D), &e->lin_b,
	    err)))
		return st;
	return LQ_OK;
}

static enum lq_status
load_linear(const struct nn_weights *w, const char *prefix, int out, int in,
    struct gpu_tensor *wt, struct gpu_tensor *b, struct lq_error *err)
{
	enum lq_status st;

	if ((st = wget(w, prefix, "weight", 2, SHAPE(out, in), wt, err)))
		return st;
	return wget(w, prefix, "bias", 1, SHAPE(out), b, err);
}

static enum lq_status
load_txt_proj(const struct nn_weights *w, const char *prefix, int in, int D,
    struct txt_proj *p, struct lq_error *err)
{
	char n[96];
	enum lq_status st;

	snprintf(n, sizeof(n), "%s.linear_1", prefix);
	if ((st = load_linear(w, n, D, in, &p->l1_w, &p->l1_b, err)))
		return st;
	snprintf(n, sizeof(n), "%s.linear_2", prefix);
	return load_linear(w, n, D, D, &p->l2_w, &p->l2_b, err);
}

static enum lq_status
load_ff(const struct nn_weights *w, const char *prefix, int D, struct ff *f,
    struct lq_error *err)
{
	char n[128];
	enum lq_status st;

	snprintf(n, sizeof(n), "%s.net.0.proj", prefix);
	if ((st = load_linear(w, n, FF_MULT * D, D, &f->w0, &f->b0, err)))
		return st;
	snprintf(n, sizeof(n), "%s.net.2", prefix);
	return load_linear(w, n, D, FF_MULT * D, &f->w2, &f->b2, err);
}

static enum lq_status
load_block(struct ltx2_transformer *m, int i, struct block *b,
    struct lq_error *err)
{
	const struct ltx2_transformer_config *c = &m->cfg;
	int D = c->inner_dim, Da = c->audio_inner_dim;
	int Hv = c->num_attention_heads, Ha = c->audio_num_attention_heads;
	int dv = c->attention_head_dim, da = c->audio_attention_head_dim;
	int ab = c->attention_bias, ob = c->attention_out_bias;
	int Pv = c->cross_attn_mod ? 9 : 6, Pa = c->audio_cross_attn_mod ? 9 : 6;
	char p[64], n[128];
	enum lq_status st;

	snprintf(p, sizeof(p), "transformer_blocks.%d", i);
#define ATTN(field, qd, kd, H, hd, gated) do { \
	snprintf(n, sizeof(n), "%s.%s", p, #field); \
	if ((st = ltx2_attn_load(m->w, n, (qd), (kd), (H), (hd), ab, ob, \
	    (gated), &b->field, err))) \
		return st; \
	b->field.rope_split = c->rope_split; \
} while (0)
	ATTN(attn1, D, D, Hv, dv, c->gated_attn);
	ATTN(audio_attn1, Da, Da, Ha, da, c->audio_gated_attn);
	ATTN(attn2, D, c->cross_attention_dim, Hv, dv, c->gated_attn);
	ATTN(audio_attn2, Da, c->audio_cross_attention_dim, Ha, da,
	    c->audio_gated_attn);
	ATTN(audio_to_video_attn, D, Da, Ha, da, c->gated_attn);
	ATTN(video_to_audio_attn, Da, D, Ha, da, c->audio_gated_attn);
#undef ATTN
	/* split RoPE: cross_attn_rope is reshaped with the video heads,
	 * cross_attn_audio_rope with the audio heads */
	b->audio_to_video_attn.rope_q_heads = Hv;
	b->audio_to_video_attn.rope_k_heads = Ha;
	b->video_to_audio_attn.rope_q_heads = Ha;
	b->video_to_audio_attn.rope_k_heads = Hv;
	snprintf(n, sizeof(n), "%s.ff", p);
	if ((st = load_ff(m->w, n, D, &b->ff, err)))
		return st;
	snprintf(n, sizeof(n), "%s.audio_ff", p);
	if ((st = load_ff(m->w, n, Da, &b->audio_ff, err)))
		return st;
	if ((st = wget(m->w, p, "scale_shift_table", 2, SHAPE(Pv, D),
	    &b->scale_shift_table, err)) ||
	    (st = wget(m->w, p, "audio_scale_shift_table", 2, SHAPE(Pa, Da),
	    &b->audio_scale_shift_table, err)) ||
	    (st = wget(m->w, p, "video_a2v_cross_attn_scale_shift_table", 2,
	    SHAPE(5, D), &b->video_a2v_cross_attn_scale_shift_table, err)) ||
	    (st = wget(m->w, p, "audio_a2v_cross_attn_scale_shift_table", 2,
	    SHAPE(5, Da), &b->audio_a2v_cross_attn_scale_shift_table, err)))
		return st;
	if (c->prompt_modulation &&
	    ((st = wget(m->w, p, "prompt_scale_shift_table", 2, SHAPE(2, D),
	    &b->prompt_scale_shift_table, err)) ||
	    (st = wget(m->w, p, "audio_prompt_scale_shift_table", 2,
	    SHAPE(2, Da), &b->audio_prompt_scale_shift_table, err))))
		return st;
	return LQ_OK;
}

void
ltx2_transformer_set_precision(struct ltx2_transformer *m, enum gpu_precision p)
{
	gpu_cmd_set_precision(m->cmd, p);
}

void
ltx2_transformer_free(struct ltx2_transformer *m)
{
	if (m == NULL)
		return;
	gpu_cmd_free(m->cmd);
	gpu_pool_free(m->pool);
	nn_weights_free(m->w);
	free(m->blocks);
	free(m->host);
	free(m);
}

enum lq_status
ltx2_transformer_load(struct gpu_ctx *ctx, const char *dir,
    struct ltx2_transformer **out, struct lq_error *err)
{
	struct ltx2_transformer *m = xcalloc(1, sizeof(*m));
	char *path = xasprintf("%s/config.json", dir);
	const struct ltx2_transformer_config *c = &m->cfg;
	cJSON *root = NULL;
	int D, Da;
	enum lq_status st;

	*out = NULL;
	m->ctx = ctx;
	st = diffusers_load_json(path, &root, err);
	if (st == LQ_OK)
		st = diffusers_parse_ltx2_transformer(root, path, &m->cfg, err);
	cJSON_Delete(root);
	free(path);
	if (st == LQ_OK)
		st = nn_weights_load(ctx, dir, NULL, &m->w, err);
	if (st != LQ_OK)
		goto fail;
	D = c->inner_dim;
	Da = c->audio_inner_dim;
	if ((st = load_linear(m->w, "proj_in", D, c->in_channels, &m->proj_in_w,
	    &m->proj_in_b, err)) ||
	    (st = load_linear(m->w, "audio_proj_in", Da, c->audio_in_channels,
	    &m->audio_proj_in_w, &m->audio_proj_in_b, err)) ||
	    (st = load_linear(m->w, "proj_out", c->out_channels, D,
	    &m->proj_out_w, &m->proj_out_b, err)) ||
	    (st = load_linear(m->w, "audio_proj_out", c->audio_out_channels, Da,
	    &m->audio_proj_out_w, &m->audio_proj_out_b, err)) ||
	    (st = wget(m->w, "", "scale_shift_table", 2, SHAPE(2, D),
	    &m->scale_shift_table, err)) ||
	    (st = wget(m->w, "", "audio_scale_shift_table", 2, SHAPE(2, Da),
	    &m->audio_scale_shift_table, err)) ||
	    (st = load_txt_proj(m->w, "caption_projection", c->caption_channels,
	    D, &m->caption_projection, err)) ||
	    (st = load_txt_proj(m->w, "audio_caption_projection",
	    c->caption_channels, Da, &m->audio_caption_projection, err)) ||
	    (st = load_adaln(m, &m->emb[E_TIME], emb_names[E_TIME], D,
	    c->cross_attn_mod ? 9 : 6, err)) ||
	    (st = load_adaln(m, &m->emb[E_AUDIO_TIME], emb_names[E_AUDIO_TIME],
	    Da, c->audio_cross_attn_mod ? 9 : 6, err)) ||
	    (c->prompt_modulation &&
	    ((st = load_adaln(m, &m->emb[E_PROMPT], emb_names[E_PROMPT], D, 2,
	    err)) ||
	    (st = load_adaln(m, &m->emb[E_AUDIO_PROMPT],
	    emb_names[E_AUDIO_PROMPT], Da, 2, err)))) ||
	    (st = load_adaln(m, &m->emb[E_V_SS], emb_names[E_V_SS], D, 4, err)) ||
	    (st = load_adaln(m, &m->emb[E_V_GATE], emb_names[E_V_GATE], D, 1,
	    err)) ||
	    (st = load_adaln(m, &m->emb[E_A_SS], emb_names[E_A_SS], Da, 4, err)) ||
	    (st = load_adaln(m, &m->emb[E_A_GATE], emb_names[E_A_GATE], Da, 1,
	    err)))
		goto fail;
	m->blocks = xcalloc((size_t)c->num_layers + 1, sizeof(*m->blocks));
	for (int i = 0; i < c->num_layers; i++)
		if ((st = load_block(m, i, &m->blocks[i], err)))
			goto fail;
	if ((st = gpu_cmd_create(ctx, &m->cmd, err)))
		goto fail;
	*out = m;
	return LQ_OK;
fail:
	ltx2_transformer_free(m);
	return st;
}

const struct ltx2_transformer_config *
ltx2_transformer_config(const struct ltx2_transformer *m)
{
	return &m->cfg;
}

void
ltx2_transformer_memory(const struct ltx2_transformer *m, size_t *weights,
    size_t *pool_capacity, size_t *pool_peak)
{
	*weights = nn_weights_device_bytes(m->w);
	*pool_capacity = m->pool ? gpu_pool_capacity(m->pool) : 0;
	*pool_peak = m->pool ? gpu_pool_peak(m->pool) : 0;
}

enum lq_status
ltx2_transformer_set_context(struct ltx2_transformer *m,
    struct ltxv_cp_group *video, struct ltxv_cp_group *audio, int rank,
    struct lq_error *err)
{
	const struct ltx2_transformer_config *c = &m->cfg;
	int Dv = 0, Da = 0;
	int P = video != NULL ? ltxv_cp_group_degree(video, &Dv) : 1;
	int Pa = audio != NULL ? ltxv_cp_group_degree(audio, &Da) : 1;

	if ((video == NULL) != (audio == NULL) || P != Pa ||
	    (video != NULL && (Dv != c->inner_dim || Da != c->audio_inner_dim ||
	    c->num_attention_heads % P != 0 ||
	    c->audio_num_attention_heads % P != 0 || rank < 0 || rank >= P)))
		return error_set(err, LQ_FAILED, "LQ-NN-SHAPE", "ltx2 transformer: "
		    "context degree %d does not divide the video's %d and the "
		    "audio's %d attention heads (or the groups' degrees %d, %d "
		    "and widths %d, %d, rank %d do not fit inner_dim %d, "
		    "audio_inner_dim %d)", P, c->num_attention_heads,
		    c->audio_num_attention_heads, P, Pa, Dv, Da, rank,
		    c->inner_dim, c->audio_inner_dim);
	m->cp = video;
	m->acp = audio;
	m->cp_rank = rank;
	return LQ_OK;
}

/* ---- host float32 islands ---- */

/*
 * LTX2AudioVideoRotaryPosEmbed.prepare_video_coords (patch 1) into
 * co [3][N][2] ([start, end) per axis, frames in seconds), float32 as
 * upstream: latent bounds · scale_factors, the frame axis shifted by
 * causal_offset - s_t, clamped at 0, divided by fps.
 */
static void
video_coords(const struct ltx2_transformer_config *c, int F, int H, int W,
    double fps, float *co)
{
	int64_t N = (int64_t)F * H * W;

	for (int f = 0; f < F; f++)
		for (int h = 0; h < H; h++)
			for (int w = 0; w < W; w++) {
				int64_t n = ((int64_t)f * H + h) * W + w;
				int g[3] = { f, h, w };

				for (int ax = 0; ax < 3; ax++)
					for (int e = 0; e < 2; e++) {
						float v = (float)(g[ax] + e) *
						    (float)c->vae_scale_factors[ax];

						if (ax == 0) {
							v = v + (float)c->causal_offset -
							    (float)c->vae_scale_factors[0];
							v = v < 0.0f ? 0.0f : v;
							v = v / (float)fps;
						}
						co[((size_t)ax * N + n) * 2 + e] = v;
					}
			}
}

/* prepare_audio_coords (shift 0) into co [L][2], in seconds. */
static void
audio_coords(const struct ltx2_transformer_config *c, int L, float *co)
{
	float s = (float)c->audio_scale_factor;

	for (int l = 0; l < L; l++)
		for (int e = 0; e < 2; e++) {
			float mel = (float)(l + e) * s;

			mel = mel + (float)c->causal_offset - s;
			mel = mel < 0.0f ? 0.0f : mel;
			co[(size_t)l * 2 + e] = mel * (float)c->audio_hop_length /
			    (float)c->audio_sampling_rate;
		}
}

/* The forward's midpoint / base step: frac [N, n_axes] of coords
 * [n_axes][N][2] (the first n_axes axes of a [A][N][2] array). */
static void
coords_frac(const float *co, int64_t N, int n_axes, const int *base,
    float *frac)
{
	for (int64_t n = 0; n < N; n++)
		for (int ax = 0; ax < n_axes; ax++) {
			const float *p = co + ((size_t)ax * N + n) * 2;

			frac[n * n_axes + ax] = ((p[0] + p[1]) / 2.0f) /
			    (float)base[ax];
		}
}

/* ---- device helpers ---- */

#define OP(x) do { if ((st = (x)) != LQ_OK) goto out; } while (0)
#define DUMP(name, t) OP(nn_dump_tensor(dump, cmd, (name), &(t), err))

/* A contiguous view of `shape` at the start of t's storage. */
static struct gpu_tensor
sub(const struct gpu_tensor *t, int ndim, const int64_t *shape)
{
	return gpu_tensor_make(t->buf, t->offset, GPU_F32, ndim, shape);
}

/*
 * Row k of a modulation table tab [B·Nt, P, D] (contiguous) as a view
 * [B, N, D] of the N tokens: per token when Nt == N, broadcast over them
 * when Nt == 1.
 */
static struct gpu_tensor
mrow(const struct gpu_tensor *tab, int k, int64_t B, int64_t Nt, int64_t N)
{
	int64_t P = tab->shape[1], D = tab->shape[2];
	struct gpu_tensor v = *tab;

	v.offset = tab->offset + (size_t)k * (size_t)D * sizeof(float);
	v.ndim = 3;
	v.shape[0] = B;
	v.shape[1] = N;
	v.shape[2] = D;
	v.stride[0] = Nt * P * D;
	v.stride[1] = Nt == 1 ? 0 : P * D;
	v.stride[2] = 1;
	return v;
}

/* scale row k of tab [R, P, D] -> 1 + scale, in place. */
static enum lq_status
one_plus(struct gpu_cmd *cmd, const struct gpu_tensor *tab, int k)
{
	struct gpu_tensor v = *tab;

	v.offset = tab->offset + (size_t)k * (size_t)tab->shape[2] * sizeof(float);
	v.ndim = 2;
	v.shape[0] = tab->shape[0];
	v.shape[1] = tab->shape[2];
	v.stride[0] = tab->shape[1] * tab->shape[2];
	v.stride[1] = 1;
	return ops_scale(cmd, &v, &v, 1.0f, 1.0f);
}

/* y = x · onep + shift (onep already 1 + scale); y may be x. */
static enum lq_status
modulate(struct gpu_cmd *cmd, const struct gpu_tensor *y,
    const struct gpu_tensor *x, const struct gpu_tensor *onep,
    const struct gpu_tensor *shift)
{
	enum lq_status st;

	if ((st = ops_mul(cmd, y, x, onep)))
		return st;
	return ops_add(cmd, y, y, shift);
}

/* Device slots of one forward. */
struct emb_work {
	int64_t rows, Nt;		/* B·Nt rows, Nt tokens per sample */
	float *t;			/* host timesteps [rows] (borrowed) */
	struct gpu_tensor feat, t1, emb, se, temb;
};

struct work {
	struct gpu_tensor hs, ahs, ehs, aehs;
	struct gpu_tensor cos[4], sin[4];	/* rope, audio, ca video, ca audio:
						 * the rank's tokens */
	/* context parallel: the cross-modal tables of every token (video,
	 * audio side), the keys' of a2v / v2a, and the gathered K/V input */
	struct gpu_tensor cosf[2], sinf[2], gkv;
	struct gpu_tensor kb, akb;
	struct gpu_tensor x, nrm, mod, att, ax, anrm, amod, aatt;
	struct gpu_tensor ctx, cap1, ctxm, actx, acap1, actxm;
	struct gpu_tensor ffh, q, k, v, o, gates, dbg;
	struct gpu_tensor ada, aada, prt, aprt, vca, vcg, aca, acg, fin, afin;
	struct gpu_tensor out, aout;
	struct emb_work e[E_COUNT];
};

/* Carves t from the pool, or (pool NULL) records its bytes. */
struct carver {
	struct gpu_pool *pool;
	uint64_t bytes[128];
	int n;
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
		memset(t, 0, sizeof(*t));
		return LQ_OK;
	}
	return gpu_pool_tensor(cv->pool, GPU_F32, ndim, shape, t, cv->err);
}

static int64_t
max64(int64_t a, int64_t b)
{
	return a > b ? a : b;
}

/* The embeddings' widths D and modulation counts P (0 when absent). */
static void
emb_dims(const struct ltx2_transformer_config *c, int D[E_COUNT],
    int P[E_COUNT])
{
	const int d[E_COUNT] = { c->inner_dim, c->audio_inner_dim, c->inner_dim,
	    c->audio_inner_dim, c->inner_dim, c->inner_dim, c->audio_inner_dim,
	    c->audio_inner_dim };
	const int p[E_COUNT] = { c->cross_attn_mod ? 9 : 6,
	    c->audio_cross_attn_mod ? 9 : 6, c->prompt_modulation ? 2 : 0,
	    c->prompt_modulation ? 2 : 0, 4, 1, 4, 1 };

	memcpy(D, d, sizeof(d));
	memcpy(P, p, sizeof(p));
}

/* Rows (B · tokens per sample) and tokens per sample Nt of each
 * embedding's input; rows 0: not computed. */
static void
emb_rows(const struct ltx2_transformer_config *c,
    const struct ltx2_transformer_shape *s, int64_t rows[E_COUNT],
    int64_t Nt[E_COUNT])
{
	int64_t Ntv = s->timestep_per_token ? s->N : 1;
	int64_t Nta = s->audio_timestep_per_token ? s->L : 1;

	Nt[E_TIME] = Ntv;
	Nt[E_AUDIO_TIME] = Nta;
	Nt[E_PROMPT] = Nt[E_AUDIO_PROMPT] = 1;
	/* use_cross_timestep: the other stream's sigma, [B] */
	Nt[E_V_SS] = Nt[E_V_GATE] = s->use_cross_timestep ? 1 : Ntv;
	Nt[E_A_SS] = Nt[E_A_GATE] = s->use_cross_timestep ? 1 : Nta;
	for (int i = 0; i < E_COUNT; i++)
		rows[i] = (int64_t)s->B * Nt[i];
	if (!c->prompt_modulation)
		rows[E_PROMPT] = rows[E_AUDIO_PROMPT] = 0;
}

/* Every device tensor of one forward, in carve order. */
static enum lq_status
carve_all(const struct ltx2_transformer_config *c,
    const struct ltx2_transformer_shape *a, struct carver *cv, struct work *w)
{
	int64_t B = a->B, N = a->N, L = a->L, T = a->T, Ta = a->Ta;
	int eD[E_COUNT], eP[E_COUNT];
	int64_t D = c->inner_dim, Da = c->audio_inner_dim;
	int64_t Dc = c->audio_cross_attention_dim, sp = c->rope_split ? 2 : 1;
	int64_t P = a->context > 1 ? a->context : 1;
	int64_t NL = max64(N, L), DD = max64(D, Da);
	/* keys: text, or (context parallel) the other stream's every token */
	int64_t NK = max64(NL * P, max64(T, Ta));
	int64_t rw[4] = { D / sp, Da / sp, Dc / sp, Dc / sp };
	int64_t rn[4] = { N, L, N, L };
	enum lq_status st;

	emb_dims(c, eD, eP);
#define C(t, ...) do { \
	if ((st = carve(cv, &(t), sizeof((int64_t[]){ __VA_ARGS__ }) / \
	    sizeof(int64_t), SHAPE(__VA_ARGS__)))) \
		return st; \
} while (0)
	C(w->hs, B, N, c->in_channels);
	C(w->ahs, B, L, c->audio_in_channels);
	C(w->ehs, B, T, c->caption_channels);
	C(w->aehs, B, Ta, c->caption_channels);
	for (int i = 0; i < 4; i++) {
		C(w->cos[i], 1, rn[i], rw[i]);
		C(w->sin[i], 1, rn[i], rw[i]);
	}
	if (P > 1) {
		C(w->cosf[0], 1, N * P, Dc / sp);
		C(w->sinf[0], 1, N * P, Dc / sp);
		C(w->cosf[1], 1, L * P, Dc / sp);
		C(w->sinf[1], 1, L * P, Dc / sp);
		C(w->gkv, B * max64(N * D, L * Da) * P);
	}
	C(w->kb, B, T);
	C(w->akb, B, Ta);
	for (int i = 0; i < E_COUNT; i++) {
		int64_t R = w->e[i].rows;

		if (R == 0)
			continue;
		C(w->e[i].feat, R, TPROJ_DIM);
		C(w->e[i].t1, R, eD[i]);
		C(w->e[i].emb, R, eD[i]);
		C(w->e[i].se, R, eD[i]);
		C(w->e[i].temb, R, (int64_t)eP[i] * eD[i]);
	}
	C(w->x, B, N, D);
	C(w->nrm, B, N, D);
	C(w->mod, B, N, D);
	C(w->att, B, N, D);
	C(w->ax, B, L, Da);
	C(w->anrm, B, L, Da);
	C(w->amod, B, L, Da);
	C(w->aatt, B, L, Da);
	C(w->ctx, B, T, D);
	C(w->cap1, B, T, D);
	C(w->ctxm, B, T, D);
	C(w->actx, B, Ta, Da);
	C(w->acap1, B, Ta, Da);
	C(w->actxm, B, Ta, Da);
	C(w->ffh, B * max64(N * FF_MULT * D, L * FF_MULT * Da));
	C(w->q, B * NL * DD);
	C(w->o, B * NL * DD);
	C(w->k, B * NK * DD);
	C(w->v, B * NK * DD);
	C(w->gates, B * NL * max64(c->num_attention_heads,
	    c->audio_num_attention_heads));
	C(w->dbg, B * NL * DD);
	C(w->ada, w->e[E_TIME].rows, eP[E_TIME], D);
	C(w->aada, w->e[E_AUDIO_TIME].rows, eP[E_AUDIO_TIME], Da);
	if (c->prompt_modulation) {
		C(w->prt, B, 2, D);
		C(w->aprt, B, 2, Da);
	}
	C(w->vca, w->e[E_V_SS].rows, 4, D);
	C(w->vcg, w->e[E_V_GATE].rows, 1, D);
	C(w->aca, w->e[E_A_SS].rows, 4, Da);
	C(w->acg, w->e[E_A_GATE].rows, 1, Da);
	C(w->fin, w->e[E_TIME].rows, 2, D);
	C(w->afin, w->e[E_AUDIO_TIME].rows, 2, Da);
	C(w->out, B, N, c->out_channels);
	C(w->aout, B, L, c->audio_out_channels);
#undef C
	return LQ_OK;
}

/* The pool's capacity for shape s on caps; *largest its largest tensor. */
static uint64_t
pool_bytes(const struct ltx2_transformer_config *c,
    const struct ltx2_transformer_shape *s, const struct device_caps *caps,
    uint64_t *largest)
{
	struct carver cv;
	struct work w;
	int64_t rows[E_COUNT], Nt[E_COUNT];

	memset(&cv, 0, sizeof(cv));
	memset(&w, 0, sizeof(w));
	emb_rows(c, s, rows, Nt);
	for (int i = 0; i < E_COUNT; i++)
		w.e[i].rows = rows[i];
	(void)carve_all(c, s, &cv, &w);
	*largest = 0;
	for (int i = 0; i < cv.n; i++)
		if (cv.bytes[i] > *largest)
			*largest = cv.bytes[i];
	return gpu_pool_plan(caps, cv.bytes, cv.n);
}

/* The forward's host arrays (float32 islands), carved from one block. */
struct host {
	float *vco, *aco, *frac;	/* coordinates [3][N][2], [L][2]; fractions */
	float *tab[8];			/* cos, sin of rope, audio_rope,
					 * cross_attn_rope, cross_attn_audio_rope */
	float *bias, *abias;		/* text mask biases [B, T], [B, Ta] */
	float *feat;			/* sinusoids [rows, 256], one embedding at a time */
	float *vgate, *agate;		/* the gates' scaled timesteps */
	float *cp;			/* context parallel: one exchange's
					 * staging [B, tokens, D] (the rank's) */
};

/* Lays the host arrays of shape s out from base (NULL: only counts);
 * returns the floats they take. */
static size_t
host_layout(const struct ltx2_transformer_config *c,
    const struct ltx2_transformer_shape *s, float *base, struct host *h)
{
	/* RoPE: the tables of every token (a context rank uploads its rows) */
	int64_t P = s->context > 1 ? s->context : 1;
	int64_t N = s->N * P, L = s->L * P, sp = c->rope_split ? 2 : 1;
	const int64_t rn[4] = { N, L, N, L };
	const int64_t rd[4] = { c->inner_dim, c->audio_inner_dim,
	    c->audio_cross_attention_dim, c->audio_cross_attention_dim };
	int64_t rows[E_COUNT], Nt[E_COUNT], fr = 0;
	size_t n = 0;
	struct host dummy;

	if (h == NULL)
		h = &dummy;
	emb_rows(c, s, rows, Nt);
	for (int i = 0; i < E_COUNT; i++)
		fr = rows[i] > fr ? rows[i] : fr;
#define H(ptr, count) do { \
	(ptr) = base ? base + n : NULL; \
	n += (size_t)(count); \
} while (0)
	H(h->vco, 3 * N * 2);
	H(h->aco, L * 2);
	H(h->frac, 3 * max64(N, L));
	for (int i = 0; i < 4; i++) {
		H(h->tab[2 * i], rn[i] * rd[i] / sp);
		H(h->tab[2 * i + 1], rn[i] * rd[i] / sp);
	}
	H(h->bias, (int64_t)s->B * s->T);
	H(h->abias, (int64_t)s->B * s->Ta);
	H(h->feat, fr * TPROJ_DIM);
	H(h->vgate, rows[E_V_GATE]);
	H(h->agate, rows[E_A_GATE]);
	H(h->cp, P > 1 ? (int64_t)s->B * max64(s->N * c->inner_dim,
	    s->L * c->audio_inner_dim) : 0);
#undef H
	return n;
}

enum lq_status
ltx2_transformer_reserve(struct ltx2_transformer *m,
    const struct ltx2_transformer_shape *s, struct lq_error *err)
{
	uint64_t big, need = pool_bytes(&m->cfg, s, gpu_ctx_caps(m->ctx), &big);
	size_t hn = host_layout(&m->cfg, s, NULL, NULL);
	enum lq_status st;

	if (m->pool == NULL || gpu_pool_capacity(m->pool) < need) {
		gpu_pool_free(m->pool);
		m->pool = NULL;
		if ((st = gpu_pool_create(m->ctx, (size_t)need, &m->pool, err)))
			return st;
	}
	if (m->host_n < hn) {
		free(m->host);
		m->host = xmalloc(sizeof(float) * hn);
		m->host_n = hn;
	}
	return LQ_OK;
}

void
ltx2_transformer_plan(const struct ltx2_transformer_config *c,
    const struct nn_weights_layout *w, const struct device_caps *caps,
    const struct ltx2_transformer_shape *s, struct nn_plan_bytes *out)
{
	uint64_t big;

	memset(out, 0, sizeof(*out));
	if (w != NULL)
		out->weights = w->resident.device;
	out->activations = pool_bytes(c, s, caps, &big);
	out->host = sizeof(float) * host_layout(c, s, NULL, NULL);
	out->largest = big;
	snprintf(out->largest_what, sizeof(out->largest_what),
	    "the LTX-2 transformer's activations");
	if (w != NULL && w->resident.largest > out->largest) {
		out->largest = w->resident.largest;
		snprintf(out->largest_what, sizeof(out->largest_what),
		    "weight %s", w->resident.largest_name);
	}
}

/* Attention scratch views for Nq queries, Nk keys, inner channels. */
static struct ltx2_attn_scratch
scratch(const struct work *w, int64_t B, int64_t Nq, int64_t Nk, int64_t inner,
    int64_t heads)
{
	struct ltx2_attn_scratch s;

	s.q = sub(&w->q, 3, SHAPE(B, Nq, inner));
	s.o = sub(&w->o, 3, SHAPE(B, Nq, inner));
	s.k = sub(&w->k, 3, SHAPE(B, Nk, inner));
	s.v = sub(&w->v, 3, SHAPE(B, Nk, inner));
	s.gates = sub(&w->gates, 3, SHAPE(B, Nq, heads));
	return s;
}

static enum lq_status
adaln_run(struct gpu_cmd *cmd, const struct adaln *e, const struct emb_work *ew)
{
	enum lq_status st;

	if ((st = ops_linear(cmd, &ew->t1, &ew->feat, &e->l1_w, &e->l1_b,
	    OPS_ACT_SILU)) ||
	    (st = ops_linear(cmd, &ew->emb, &ew->t1, &e->l2_w, &e->l2_b,
	    OPS_ACT_NONE)) ||
	    (st = ops_silu(cmd, &ew->se, &ew->emb)))
		return st;
	return ops_linear(cmd, &ew->temb, &ew->se, &e->lin_w, &e->lin_b,
	    OPS_ACT_NONE);
}

static enum lq_status
txt_proj_run(struct gpu_cmd *cmd, const struct txt_proj *p,
    const struct gpu_tensor *y, const struct gpu_tensor *tmp,
    const struct gpu_tensor *x)
{
	enum lq_status st;

	if ((st = ops_linear(cmd, tmp, x, &p->l1_w, &p->l1_b, OPS_ACT_GELU_TANH)))
		return st;
	return ops_linear(cmd, y, tmp, &p->l2_w, &p->l2_b, OPS_ACT_NONE);
}

static enum lq_status
ff_run(struct gpu_cmd *cmd, const struct ff *f, int gelu_tanh,
    const struct gpu_tensor *y, const struct gpu_tensor *res,
    const struct gpu_tensor *gate, const struct gpu_tensor *x,
    const struct gpu_tensor *ffh_store)
{
	int64_t B = x->shape[0], N = x->shape[1], D = x->shape[2];
	struct gpu_tensor h = sub(ffh_store, 3, SHAPE(B, N, FF_MULT * D));
	enum lq_status st;

	if ((st = ops_linear(cmd, &h, x, &f->w0, &f->b0, gelu_tanh ?
	    OPS_ACT_GELU_TANH : OPS_ACT_GELU)))
		return st;
	if (res != NULL)
		return ops_linear_gated_add(cmd, y, res, gate, &h, &f->w2, &f->b2,
		    OPS_ACT_NONE);
	return ops_linear(cmd, y, &h, &f->w2, &f->b2, OPS_ACT_NONE);
}

/* x += r · gate (a modulation row view, mrow) or, gate NULL, x += r: a
 * branch's residual update apart from its last linear (a dump's) */
static enum lq_status
residual_add(struct gpu_cmd *cmd, const struct gpu_tensor *x,
    const struct gpu_tensor *r, const struct gpu_tensor *gate)
{
	return gate ? ops_add_mul(cmd, x, x, r, gate) : ops_add(cmd, x, x, r);
}

static enum lq_status
input_error(struct lq_error *err, const char *field, const char *hint,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static enum lq_status
input_error(struct lq_error *err, const char *field, const char *hint,
    const char *fmt, ...)
{
	char msg[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	error_set(err, LQ_FAILED, "LQ-NN-INPUT", "%s", msg);
	error_set_field(err, "%s", field);
	if (hint)
		error_set_hint(err, "%s", hint);
	return LQ_FAILED;
}

/* The arguments upstream's forward could not run (or would misread). */
static enum lq_status
check_args(const struct ltx2_transformer *m, const struct ltx2_transformer_args *a,
    struct lq_error *err)
{
	const struct ltx2_transformer_config *c = &m->cfg;
	/* a context rank holds N of the grid's P·N tokens, L of P·L */
	int64_t P = m->cp != NULL ? ltxv_cp_group_degree(m->cp, NULL) : 1;

	if ((int64_t)a->num_frames * a->height * a->width != a->N * P ||
	    a->num_frames < 1 || a->height < 1 || a->width < 1)
		return input_error(err, "num_frames", "num_frames x height x width "
		    "must be hidden_states' token count", "the grid %d x %d x %d "
		    "does not hold the %lld tokens of hidden_states%s",
		    a->num_frames, a->height, a->width, (long long)(a->N * P),
		    P > 1 ? " (over the context group)" : "");
	if ((int64_t)a->audio_num_frames != a->L * P)
		return input_error(err, "audio_num_frames", NULL, "audio_num_frames "
		    "%d is not audio_hidden_states' %lld tokens%s",
		    a->audio_num_frames, (long long)(a->L * P),
		    P > 1 ? " (over the context group)" : "");
	if (!(a->fps > 0) || !isfinite(a->fps))
		return input_error(err, "fps", "upstream's default is 24.0",
		    "fps %g is not a positive frame rate", a->fps);
	if (a->audio_timestep == NULL && a->timestep_per_token)
		return input_error(err, "audio_timestep", "give audio_timestep [B] "
		    "or [B, audio tokens]", "audio_timestep is missing and "
		    "timestep is per token [B, %d]: upstream would embed the video "
		    "tokens' timesteps for the %d audio tokens", a->N, a->L);
	if (a->sigma == NULL && (c->prompt_modulation ||
	    a->call.use_cross_timestep))
		return input_error(err, "sigma", "the pipeline passes sigma = "
		    "timestep ([B], 0..1000)", "sigma is missing; this model needs "
		    "it for %s", c->prompt_modulation ? "prompt_adaln "
		    "(cross_attn_mod)" : "use_cross_timestep");
	for (int i = 0; i < a->call.n_stg; i++)
		if (a->call.stg_blocks[i] >= c->num_layers)
			return input_error(err, "spatio_temporal_guidance_blocks",
			    NULL, "spatio_temporal_guidance_blocks lists block %d; "
			    "this model has blocks 0 to %d", a->call.stg_blocks[i],
			    c->num_layers - 1);
	return LQ_OK;
}

static int
stg_block(const struct ltx2_transformer_args *a, int i)
{
	for (int k = 0; k < a->call.n_stg; k++)
		if (a->call.stg_blocks[k] == i)
			return 1;
	return 0;
}

static enum lq_status
dump_rope(const struct nn_dump *dump, const char *name, int B, int64_t N,
    int64_t W, const float *cs, const float *sn, const float *coords,
    int n_axes, struct lq_error *err)
{
	float *rep = xmalloc(sizeof(float) * (size_t)(B * N * max64(W,
	    2 * n_axes)));
	char n[96];
	enum lq_status st = LQ_OK;

	for (int k = 0; k < 2 && st == LQ_OK && W > 0; k++) {
		for (int b = 0; b < B; b++)
			memcpy(rep + (size_t)b * N * W, k ? sn : cs,
			    sizeof(float) * (size_t)(N * W));
		snprintf(n, sizeof(n), "%s.out%d", name, k);
		st = nn_dump_host(dump, n, 3, SHAPE(B, N, W), rep, err);
	}
	if (st == LQ_OK) {
		for (int b = 0; b < B; b++)
			memcpy(rep + (size_t)b * n_axes * N * 2, coords,
			    sizeof(float) * (size_t)(n_axes * N * 2));
		snprintf(n, sizeof(n), "%s.coords_in", name);
		st = nn_dump_host(dump, n, 4, SHAPE(B, n_axes, N, 2), rep, err);
	}
	free(rep);
	return st;
}

/* LATENTQ_MESH_NO_CROSS_KV_GATHER=1: the cross-modal negative control
 * (ltx2_transformer.h). */
static int
cp_no_cross_gather(void)
{
	return util_env_switch("LATENTQ_MESH_NO_CROSS_KV_GATHER", 0);
}

/* ltxv_cp_attention's attend: SDPA over the rank's heads/P heads. */
struct cp_attend {
	const struct ltx2_attn *a;
	int heads;
};

static enum lq_status
cp_attend(void *ud, struct gpu_cmd *cmd, const struct gpu_tensor *o,
    const struct gpu_tensor *q, const struct gpu_tensor *k,
    const struct gpu_tensor *v, struct lq_error *err)
{
	const struct cp_attend *c = ud;

	(void)err;
	return ltx2_attn_sdpa(cmd, c->a, o, q, k, v, c->heads, NULL);
}

/*
 * Self-attention of one stream: on a context rank (unless the negative
 * control asks not), Ulysses through the stream's group g
 * (ltxv_cp_attention: its tokens of q, k, v to heads/P heads of every
 * token and back), else ltx2_attn_forward.
 */
static enum lq_status
self_attention(struct ltx2_transformer *m, struct ltxv_cp_group *g,
    struct gpu_cmd *cmd, const struct ltx2_attn *a,
    const struct gpu_tensor *out, const struct gpu_tensor *res,
    const struct gpu_tensor *gate, const struct gpu_tensor *x,
    const struct ltx2_attn_scratch *s, const struct gpu_tensor *cos,
    const struct gpu_tensor *sin, float *stage, struct lq_error *err)
{
	struct cp_attend ca = { a, 0 };
	enum lq_status st;

	if (g == NULL || ltxv_cp_no_gather())
		return ltx2_attn_forward(cmd, a, out, res, gate, x, NULL, s, cos,
		    sin, NULL, NULL, NULL);
	ca.heads = a->heads / ltxv_cp_group_degree(g, NULL);
	if ((st = ltx2_attn_project(cmd, a, x, NULL, s, cos, sin, NULL,
	    NULL)) != LQ_OK ||
	    (st = ltxv_cp_attention(g, m->cp_rank, m->ctx, cmd, stage, &s->o,
	    &s->q, &s->k, &s->v, cp_attend, &ca, err)) != LQ_OK)
		return st;
	return ltx2_attn_out(cmd, a, out, res, gate, s);
}

enum lq_status
ltx2_transformer_forward(struct ltx2_transformer *m,
    const struct ltx2_transformer_args *a, const struct ltx2_transformer_out *o,
    const struct nn_dump *dump, struct lq_error *err)
{
	const struct ltx2_transformer_config *c = &m->cfg;
	struct gpu_cmd *cmd = m->cmd;
	int64_t B = a->B, N = a->N, L = a->L, T = a->T, Ta = a->Ta;
	int64_t D = c->inner_dim, Da = c->audio_inner_dim;
	int64_t Dc = c->audio_cross_attention_dim;
	int64_t Ntv, Nta;	/* timestep rows per sample (emb_rows) */
	int Hv = c->num_attention_heads, Ha = c->audio_num_attention_heads;
	int cross_max = c->pos_embed_max_pos > c->audio_pos_embed_max_pos ?
	    c->pos_embed_max_pos : c->audio_pos_embed_max_pos;
	float gate_f = (float)((double)c->cross_attn_timestep_scale_multiplier /
	    (double)c->timestep_scale_multiplier);
	const float *asig = a->audio_sigma ? a->audio_sigma : a->sigma;
	const float *ats = a->audio_timestep ? a->audio_timestep : a->timestep;
	struct host h;
	float *vco, *aco, *frac, **tab = h.tab, *bias, *abias, *feat;
	struct carver cv;
	struct work w;
	size_t mark = 0;
	char name[160];
	enum lq_status st;

	const int64_t P = m->cp != NULL ? ltxv_cp_group_degree(m->cp, NULL) : 1;
	const int64_t rk = m->cp != NULL ? m->cp_rank : 0;
	int cross_gather = P > 1 && !ltxv_cp_no_gather() && !cp_no_cross_gather();
	struct ltx2_transformer_shape shp = { a->B, a->N, a->L, a->T, a->Ta,
	    a->timestep_per_token, a->audio_timestep != NULL &&
	    a->audio_timestep_per_token, a->call.use_cross_timestep, (int)P };
	int64_t rows[E_COUNT], Nts[E_COUNT];

	if ((st = check_args(m, a, err)))
		return st;
	memset(&w, 0, sizeof(w));
	emb_rows(c, &shp, rows, Nts);
	Ntv = Nts[E_TIME];
	Nta = Nts[E_AUDIO_TIME];
	/* embedding rows (emb_rows) and their timesteps */
	for (int i = 0; i < E_COUNT; i++) {
		w.e[i].rows = rows[i];
		w.e[i].Nt = Nts[i];
	}
	w.e[E_TIME].t = (float *)a->timestep;
	w.e[E_AUDIO_TIME].t = (float *)ats;
	w.e[E_PROMPT].t = (float *)a->sigma;
	w.e[E_AUDIO_PROMPT].t = (float *)asig;
	w.e[E_V_SS].t = (float *)(a->call.use_cross_timestep ? asig : a->timestep);
	w.e[E_A_SS].t = (float *)(a->call.use_cross_timestep ? a->sigma : ats);

	/* pool and host scratch: sized by the plan's functions (reserved
	 * once, grown, never shrunk) */
	if ((st = ltx2_transformer_reserve(m, &shp, err)))
		return st;
	(void)host_layout(c, &shp, m->host, &h);
	vco = h.vco;
	aco = h.aco;
	frac = h.frac;
	bias = h.bias;
	abias = h.abias;
	feat = h.feat;
	for (int64_t i = 0; i < rows[E_V_GATE]; i++)
		h.vgate[i] = w.e[E_V_SS].t[i] * gate_f;
	for (int64_t i = 0; i < rows[E_A_GATE]; i++)
		h.agate[i] = w.e[E_A_SS].t[i] * gate_f;
	w.e[E_V_GATE].t = h.vgate;
	w.e[E_A_GATE].t = h.agate;
	memset(&cv, 0, sizeof(cv));
	cv.err = err;
	mark = gpu_pool_mark(m->pool);
	cv.pool = m->pool;
	cv.n = 0;
	OP(carve_all(c, &shp, &cv, &w));

	/* 1. RoPE (host): coordinates, fractions, tables of every token; a
	 * context rank uploads its tokens' rows (and the cross-modal
	 * tables whole, for the keys it gathers) */
	video_coords(c, a->num_frames, a->height, a->width, a->fps, vco);
	audio_coords(c, (int)(L * P), aco);
	{
		int vbase[3] = { c->pos_embed_max_pos, c->base_height,
		    c->base_width };
		int abase = c->audio_pos_embed_max_pos;
		const int64_t rn[4] = { N * P, L * P, N * P, L * P };
		const int64_t rd[4] = { D, Da, Dc, Dc };
		const int64_t sp = c->rope_split ? 2 : 1;
		const int nax[4] = { 3, 1, 1, 1 };
		static const char *const rname[4] = { "rope", "audio_rope",
		    "cross_attn_rope", "cross_attn_audio_rope" };

		for (int i = 0; i < 4; i++) {
			const float *co = i % 2 ? aco : vco;
			const int *base = i == 0 ? vbase : i == 1 ? &abase :
			    &cross_max;

			coords_frac(co, rn[i], nax[i], base, frac);
			ltx2_rope_table(frac, rn[i], nax[i], (int)rd[i],
			    c->rope_theta, c->rope_double_precision,
			    c->rope_split, tab[2 * i], tab[2 * i + 1]);
			size_t own = (size_t)(rk * (rn[i] / P) * (rd[i] / sp));

			OP(gpu_tensor_upload_f32(m->ctx, &w.cos[i], tab[2 * i] +
			    own, err));
			OP(gpu_tensor_upload_f32(m->ctx, &w.sin[i],
			    tab[2 * i + 1] + own, err));
			if (P > 1 && i >= 2) {
				OP(gpu_tensor_upload_f32(m->ctx, &w.cosf[i - 2],
				    tab[2 * i], err));
				OP(gpu_tensor_upload_f32(m->ctx, &w.sinf[i - 2],
				    tab[2 * i + 1], err));
			}
			if (dump)
				OP(dump_rope(dump, rname[i], (int)B, rn[i],
				    c->rope_split ? 0 : rd[i], tab[2 * i],
				    tab[2 * i + 1], co, nax[i], err));
		}
	}
	/* text mask biases (1 - mask) · -10000 */
	for (int64_t i = 0; i < B * T; i++)
		bias[i] = a->encoder_attention_mask ?
		    (1.0f - a->encoder_attention_mask[i]) * MASK_BIAS : 0.0f;
	for (int64_t i = 0; i < B * Ta; i++)
		abias[i] = a->audio_encoder_attention_mask ?
		    (1.0f - a->audio_encoder_attention_mask[i]) * MASK_BIAS : 0.0f;
	OP(gpu_tensor_upload_f32(m->ctx, &w.kb, bias, err));
	OP(gpu_tensor_upload_f32(m->ctx, &w.akb, abias, err));
	if (a->encoder_attention_mask)
		OP(nn_dump_host(dump, "transformer_blocks.0.attn2.attention_mask_in",
		    3, SHAPE(B, 1, T), bias, err));
	if (a->audio_encoder_attention_mask)
		OP(nn_dump_host(dump,
		    "transformer_blocks.0.audio_attn2.attention_mask_in", 3,
		    SHAPE(B, 1, Ta), abias, err));
	/* timestep sinusoids */
	for (int i = 0; i < E_COUNT; i++) {
		struct emb_work *ew = &w.e[i];

		if (ew->rows == 0)
			continue;
		ltxv_timestep_features(ew->t, (int)ew->rows, TPROJ_DIM, feat);
		OP(gpu_tensor_upload_f32(m->ctx, &ew->feat, feat, err));
		if (i == E_TIME || i == E_AUDIO_TIME) {
			snprintf(name, sizeof(name), "%s.emb.time_proj",
			    emb_names[i]);
			OP(nn_dump_host(dump, name, 2, SHAPE(ew->rows, TPROJ_DIM),
			    feat, err));
		}
	}
	OP(gpu_tensor_upload_f32(m->ctx, &w.hs, a->hidden_states, err));
	OP(gpu_tensor_upload_f32(m->ctx, &w.ahs, a->audio_hidden_states, err));
	OP(gpu_tensor_upload_f32(m->ctx, &w.ehs, a->encoder_hidden_states, err));
	OP(gpu_tensor_upload_f32(m->ctx, &w.aehs, a->audio_encoder_hidden_states,
	    err));

	gpu_cmd_begin(cmd);
	/* 2. proj_in */
	OP(ops_linear(cmd, &w.x, &w.hs, &m->proj_in_w, &m->proj_in_b,
	    OPS_ACT_NONE));
	DUMP("proj_in", w.x);
	OP(ops_linear(cmd, &w.ax, &w.ahs, &m->audio_proj_in_w,
	    &m->audio_proj_in_b, OPS_ACT_NONE));
	DUMP("audio_proj_in", w.ax);
	/* 3. timestep embeddings */
	for (int i = 0; i < E_COUNT; i++) {
		if (w.e[i].rows == 0)
			continue;
		OP(adaln_run(cmd, &m->emb[i], &w.e[i]));
		snprintf(name, sizeof(name), "%s.out0", emb_names[i]);
		DUMP(name, w.e[i].temb);
		snprintf(name, sizeof(name), "%s.out1", emb_names[i]);
		DUMP(name, w.e[i].emb);
	}
	/* 4. caption projections */
	OP(txt_proj_run(cmd, &m->caption_projection, &w.ctx, &w.cap1, &w.ehs));
	DUMP("caption_projection", w.ctx);
	OP(txt_proj_run(cmd, &m->audio_caption_projection, &w.actx, &w.acap1,
	    &w.aehs));
	DUMP("audio_caption_projection", w.actx);

	/* 5. blocks */
	for (int i = 0; i < c->num_layers; i++) {
		const struct block *b = &m->blocks[i];
		int stg = c->perturbed_attn && stg_block(a, i);
		int64_t Pv = m->emb[E_TIME].P, Pa = m->emb[E_AUDIO_TIME].P;
		struct ltx2_attn_scratch s;
		char pre[48];

		snprintf(pre, sizeof(pre), "transformer_blocks.%d", i);
#define BDUMP(what, t) do { \
	snprintf(name, sizeof(name), "%s.%s", pre, (what)); \
	DUMP(name, t); \
} while (0)
		/* Each branch's last linear adds its output to its stream's
		 * residual in its epilogue (ops_linear_gated_add: out = res
		 * = x), so w.att / w.aatt are never written and read back; a
		 * dump wants the branch's own output, so with one it goes
		 * there and RESIDUAL dumps it and adds it apart
		 * (x + r · gate, or x + r), as before the fusion. */
		const struct gpu_tensor *vo = dump ? &w.att : &w.x;
		const struct gpu_tensor *vres = dump ? NULL : &w.x;
		const struct gpu_tensor *ao = dump ? &w.aatt : &w.ax;
		const struct gpu_tensor *ares = dump ? NULL : &w.ax;
#define RESIDUAL(what, x, r, gate) do { \
	if (dump) { \
		BDUMP(what, r); \
		OP(residual_add(cmd, &(x), &(r), (gate))); \
	} \
} while (0)
		/* modulation tables, scale rows as 1 + scale */
		OP(ops_add_table(cmd, &w.ada, &b->scale_shift_table,
		    &w.e[E_TIME].temb));
		OP(ops_add_table(cmd, &w.aada, &b->audio_scale_shift_table,
		    &w.e[E_AUDIO_TIME].temb));
		OP(one_plus(cmd, &w.ada, 1));
		OP(one_plus(cmd, &w.ada, 4));
		OP(one_plus(cmd, &w.aada, 1));
		OP(one_plus(cmd, &w.aada, 4));
		if (Pv == 9)
			OP(one_plus(cmd, &w.ada, 7));
		if (Pa == 9)
			OP(one_plus(cmd, &w.aada, 7));
		{
			struct gpu_tensor t4 = gpu_tensor_slice(
			    &b->video_a2v_cross_attn_scale_shift_table, 0, 0, 4);
			struct gpu_tensor t1 = gpu_tensor_slice(
			    &b->video_a2v_cross_attn_scale_shift_table, 0, 4, 1);
			struct gpu_tensor u4 = gpu_tensor_slice(
			    &b->audio_a2v_cross_attn_scale_shift_table, 0, 0, 4);
			struct gpu_tensor u1 = gpu_tensor_slice(
			    &b->audio_a2v_cross_attn_scale_shift_table, 0, 4, 1);

			OP(ops_add_table(cmd, &w.vca, &t4, &w.e[E_V_SS].temb));
			OP(ops_add_table(cmd, &w.vcg, &t1, &w.e[E_V_GATE].temb));
			OP(ops_add_table(cmd, &w.aca, &u4, &w.e[E_A_SS].temb));
			OP(ops_add_table(cmd, &w.acg, &u1, &w.e[E_A_GATE].temb));
			/* a2v_scale, a2v_shift, v2a_scale, v2a_shift */
			OP(one_plus(cmd, &w.vca, 0));
			OP(one_plus(cmd, &w.vca, 2));
			OP(one_plus(cmd, &w.aca, 0));
			OP(one_plus(cmd, &w.aca, 2));
		}
		if (c->prompt_modulation) {
			OP(ops_add_table(cmd, &w.prt, &b->prompt_scale_shift_table,
			    &w.e[E_PROMPT].temb));
			OP(ops_add_table(cmd, &w.aprt,
			    &b->audio_prompt_scale_shift_table,
			    &w.e[E_AUDIO_PROMPT].temb));
			OP(one_plus(cmd, &w.prt, 1));
			OP(one_plus(cmd, &w.aprt, 1));
		}
		struct gpu_tensor vrow[9], arow[9];
		for (int k = 0; k < Pv; k++)
			vrow[k] = mrow(&w.ada, k, B, Ntv, N);
		for (int k = 0; k < Pa; k++)
			arow[k] = mrow(&w.aada, k, B, Nta, L);

		/* 1.1 video self-attention */
		OP(ops_rms_norm(cmd, &w.nrm, &w.x, NULL, (float)c->norm_eps));
		BDUMP("norm1", w.nrm);
		OP(modulate(cmd, &w.mod, &w.nrm, &vrow[1], &vrow[0]));
		s = scratch(&w, B, N, N, D, Hv);
		if (dump && b->attn1.gated) {
			struct gpu_tensor g = sub(&w.dbg, 3, SHAPE(B, N, Hv));

			OP(ops_linear(cmd, &g, &w.mod, &b->attn1.gate_w,
			    &b->attn1.gate_b, OPS_ACT_NONE));
			BDUMP("attn1.to_gate_logits", g);
		}
		if (dump && !stg) {
			struct gpu_tensor q = sub(&w.dbg, 3, SHAPE(B, N, D));

			OP(ops_linear(cmd, &q, &w.mod, &b->attn1.to_q_w,
			    b->attn1.has_bias ? &b->attn1.to_q_b : NULL,
			    OPS_ACT_NONE));
			OP(ops_rms_norm(cmd, &q, &q, &b->attn1.norm_q_w,
			    LTX2_ATTN_NORM_EPS));
			BDUMP("attn1.norm_q", q);
		}
		if (stg)
			OP(ltx2_attn_values(cmd, &b->attn1, vo, vres, &vrow[2],
			    &w.mod, &s));
		else
			OP(self_attention(m, m->cp, cmd, &b->attn1, vo, vres,
			    &vrow[2], &w.mod, &s, &w.cos[0], &w.sin[0], h.cp,
			    err));
		RESIDUAL("attn1", w.x, w.att, &vrow[2]);
		/* 1.2 audio self-attention */
		OP(ops_rms_norm(cmd, &w.anrm, &w.ax, NULL, (float)c->norm_eps));
		OP(modulate(cmd, &w.amod, &w.anrm, &arow[1], &arow[0]));
		s = scratch(&w, B, L, L, Da, Ha);
		if (stg)
			OP(ltx2_attn_values(cmd, &b->audio_attn1, ao, ares,
			    &arow[2], &w.amod, &s));
		else
			OP(self_attention(m, m->acp, cmd, &b->audio_attn1, ao,
			    ares, &arow[2], &w.amod, &s, &w.cos[1], &w.sin[1],
			    h.cp, err));
		RESIDUAL("audio_attn1", w.ax, w.aatt, &arow[2]);

		/* 2. text cross-attention; K/V modulated when either stream
		 * has cross_attn_mod (cross_attn_adaln) */
		const struct gpu_tensor *kv = &w.ctx, *akv = &w.actx;
		if (c->prompt_modulation) {
			struct gpu_tensor sh = mrow(&w.prt, 0, B, 1, T);
			struct gpu_tensor sc = mrow(&w.prt, 1, B, 1, T);
			struct gpu_tensor ash = mrow(&w.aprt, 0, B, 1, Ta);
			struct gpu_tensor asc = mrow(&w.aprt, 1, B, 1, Ta);

			OP(modulate(cmd, &w.ctxm, &w.ctx, &sc, &sh));
			OP(modulate(cmd, &w.actxm, &w.actx, &asc, &ash));
			kv = &w.ctxm;
			akv = &w.actxm;
		}
		OP(ops_rms_norm(cmd, &w.nrm, &w.x, NULL, (float)c->norm_eps));
		BDUMP("norm2", w.nrm);
		if (c->cross_attn_mod)
			OP(modulate(cmd, &w.nrm, &w.nrm, &vrow[7], &vrow[6]));
		s = scratch(&w, B, N, T, D, Hv);
		OP(ltx2_attn_forward(cmd, &b->attn2, vo, vres,
		    c->cross_attn_mod ? &vrow[8] : NULL, &w.nrm, kv, &s, NULL,
		    NULL, NULL, NULL, &w.kb));
		RESIDUAL("attn2", w.x, w.att, c->cross_attn_mod ? &vrow[8] :
		    NULL);
		OP(ops_rms_norm(cmd, &w.anrm, &w.ax, NULL, (float)c->norm_eps));
		if (c->audio_cross_attn_mod)
			OP(modulate(cmd, &w.anrm, &w.anrm, &arow[7], &arow[6]));
		s = scratch(&w, B, L, Ta, Da, Ha);
		OP(ltx2_attn_forward(cmd, &b->audio_attn2, ao, ares,
		    c->audio_cross_attn_mod ? &arow[8] : NULL, &w.anrm, akv,
		    &s, NULL, NULL, NULL, NULL, &w.akb));
		RESIDUAL("audio_attn2", w.ax, w.aatt, c->audio_cross_attn_mod ?
		    &arow[8] : NULL);

		/* 3. a2v (Q video, K/V audio) and v2a (Q audio, K/V video),
		 * both from the streams normalised once, before a2v */
		if (!a->call.isolate_modalities) {
			struct gpu_tensor v_a2v_sc = mrow(&w.vca, 0, B,
			    w.e[E_V_SS].Nt, N);
			struct gpu_tensor v_a2v_sh = mrow(&w.vca, 1, B,
			    w.e[E_V_SS].Nt, N);
			struct gpu_tensor v_v2a_sc = mrow(&w.vca, 2, B,
			    w.e[E_V_SS].Nt, N);
			struct gpu_tensor v_v2a_sh = mrow(&w.vca, 3, B,
			    w.e[E_V_SS].Nt, N);
			struct gpu_tensor a_a2v_sc = mrow(&w.aca, 0, B,
			    w.e[E_A_SS].Nt, L);
			struct gpu_tensor a_a2v_sh = mrow(&w.aca, 1, B,
			    w.e[E_A_SS].Nt, L);
			struct gpu_tensor a_v2a_sc = mrow(&w.aca, 2, B,
			    w.e[E_A_SS].Nt, L);
			struct gpu_tensor a_v2a_sh = mrow(&w.aca, 3, B,
			    w.e[E_A_SS].Nt, L);
			struct gpu_tensor a2v_gate = mrow(&w.vcg, 0, B,
			    w.e[E_V_GATE].Nt, N);
			struct gpu_tensor v2a_gate = mrow(&w.acg, 0, B,
			    w.e[E_A_GATE].Nt, L);

			OP(ops_rms_norm(cmd, &w.nrm, &w.x, NULL,
			    (float)c->norm_eps));
			BDUMP("audio_to_video_norm", w.nrm);
			OP(ops_rms_norm(cmd, &w.anrm, &w.ax, NULL,
			    (float)c->norm_eps));
			/* context parallel: K/V of every token of the other
			 * stream (cp_gather), with its whole table */
			const struct gpu_tensor *kv_a = &w.amod, *kv_v = &w.mod;
			const struct gpu_tensor *kc_a = &w.cos[3], *ks_a = &w.sin[3];
			const struct gpu_tensor *kc_v = &w.cos[2], *ks_v = &w.sin[2];
			struct gpu_tensor ga = sub(&w.gkv, 3, SHAPE(B, L * P, Da));
			struct gpu_tensor gv = sub(&w.gkv, 3, SHAPE(B, N * P, D));

			OP(modulate(cmd, &w.mod, &w.nrm, &v_a2v_sc, &v_a2v_sh));
			OP(modulate(cmd, &w.amod, &w.anrm, &a_a2v_sc, &a_a2v_sh));
			if (cross_gather) {
				OP(ltxv_cp_gather(m->acp, m->cp_rank, m->ctx, cmd,
				    h.cp, &w.amod, &ga, err));
				kv_a = &ga;
				kc_a = &w.cosf[1];
				ks_a = &w.sinf[1];
			}
			s = scratch(&w, B, N, kv_a->shape[1], Da, Ha);
			OP(ltx2_attn_forward(cmd, &b->audio_to_video_attn, vo,
			    vres, &a2v_gate, &w.mod, kv_a, &s, &w.cos[2],
			    &w.sin[2], kc_a, ks_a, NULL));
			RESIDUAL("audio_to_video_attn", w.x, w.att, &a2v_gate);
			OP(modulate(cmd, &w.mod, &w.nrm, &v_v2a_sc, &v_v2a_sh));
			OP(modulate(cmd, &w.amod, &w.anrm, &a_v2a_sc, &a_v2a_sh));
			if (cross_gather) {
				OP(ltxv_cp_gather(m->cp, m->cp_rank, m->ctx, cmd,
				    h.cp, &w.mod, &gv, err));
				kv_v = &gv;
				kc_v = &w.cosf[0];
				ks_v = &w.sinf[0];
			}
			s = scratch(&w, B, L, kv_v->shape[1], Da, Ha);
			OP(ltx2_attn_forward(cmd, &b->video_to_audio_attn, ao,
			    ares, &v2a_gate, &w.amod, kv_v, &s, &w.cos[3],
			    &w.sin[3], kc_v, ks_v, NULL));
			RESIDUAL("video_to_audio_attn", w.ax, w.aatt, &v2a_gate);
		}

		/* 4. feed-forward */
		OP(ops_rms_norm(cmd, &w.nrm, &w.x, NULL, (float)c->norm_eps));
		OP(modulate(cmd, &w.nrm, &w.nrm, &vrow[4], &vrow[3]));
		OP(ff_run(cmd, &b->ff, c->ff_gelu_tanh, vo, vres, &vrow[5],
		    &w.nrm, &w.ffh));
		RESIDUAL("ff", w.x, w.att, &vrow[5]);
		OP(ops_rms_norm(cmd, &w.anrm, &w.ax, NULL, (float)c->norm_eps));
		OP(modulate(cmd, &w.anrm, &w.anrm, &arow[4], &arow[3]));
		OP(ff_run(cmd, &b->audio_ff, c->ff_gelu_tanh, ao, ares, &arow[5],
		    &w.anrm, &w.ffh));
		RESIDUAL("audio_ff", w.ax, w.aatt, &arow[5]);
		BDUMP("out0", w.x);
		BDUMP("out1", w.ax);
#undef RESIDUAL
#undef BDUMP
	}

	/* 6. output: scale_shift_table (2, D) + embedded_timestep (row 0
	 * shift, row 1 scale), LayerNorm (no affine), proj_out */
	{
		struct gpu_tensor *fin[2] = { &w.fin, &w.afin };
		const struct gpu_tensor *tabs[2] = { &m->scale_shift_table,
		    &m->audio_scale_shift_table };
		struct gpu_tensor *hx[2] = { &w.x, &w.ax }, *hn[2] = { &w.nrm,
		    &w.anrm }, *ho[2] = { &w.out, &w.aout };
		const struct gpu_tensor *pw[2] = { &m->proj_out_w,
		    &m->audio_proj_out_w }, *pb[2] = { &m->proj_out_b,
		    &m->audio_proj_out_b };
		const struct emb_work *ew[2] = { &w.e[E_TIME], &w.e[E_AUDIO_TIME] };
		static const char *const nn[2] = { "norm_out", "audio_norm_out" };
		static const char *const pn[2] = { "proj_out", "audio_proj_out" };
		int64_t ntok[2] = { N, L };

		for (int k = 0; k < 2; k++) {
			int64_t R = fin[k]->shape[0], DD = fin[k]->shape[2];
			int64_t shp[3] = { R, 2, DD };
			struct gpu_tensor tb = gpu_tensor_broadcast(tabs[k], 3, shp);
			struct gpu_tensor e3 = gpu_tensor_reshape(&ew[k]->emb, 3,
			    SHAPE(R, 1, DD));
			struct gpu_tensor eb = gpu_tensor_broadcast(&e3, 3, shp);
			struct gpu_tensor shift = mrow(fin[k], 0, B, ew[k]->Nt,
			    ntok[k]);
			struct gpu_tensor scale = mrow(fin[k], 1, B, ew[k]->Nt,
			    ntok[k]);

			OP(ops_add(cmd, fin[k], &tb, &eb));
			OP(one_plus(cmd, fin[k], 1));
			OP(ops_layer_norm(cmd, hn[k], hx[k], NULL, NULL,
			    NORM_OUT_EPS));
			DUMP(nn[k], *hn[k]);
			OP(modulate(cmd, hn[k], hn[k], &scale, &shift));
			OP(ops_linear(cmd, ho[k], hn[k], pw[k], pb[k],
			    OPS_ACT_NONE));
			DUMP(pn[k], *ho[k]);
		}
	}
	OP(gpu_cmd_submit(cmd, err));
	OP(gpu_tensor_download_f32(m->ctx, &w.out, o->output, err));
	OP(gpu_tensor_download_f32(m->ctx, &w.aout, o->audio_output, err));
out:
	if (st != LQ_OK && err != NULL && err->status == LQ_OK)
		(void)gpu_cmd_status(cmd, err);
	/* the other ranks of a context group must not wait for this one */
	if (st != LQ_OK && m->cp != NULL) {
		ltxv_cp_group_abort(m->cp);
		ltxv_cp_group_abort(m->acp);
	}
	gpu_pool_reset(m->pool, mark);
	return st;
}
