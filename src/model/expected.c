/*
 * expected.c — expected-tensor tables for LTX-Video and T5, and the check of
 * a tensor set against one.
 *
 * Names and shapes follow the upstream module trees' state_dict:
 *   diffusers transformer_ltx.py   LTXVideoTransformer3DModel (as saved by
 *     diffusers 0.40.0.dev0 58eb52c: final modulation as top-level
 *     scale_shift_table [2, D]; by later versions, whose norm_out is an
 *     AdaLayerNorm, as norm_out.linear.weight [2D, D] and .bias [2D]),
 *   diffusers autoencoder_kl_ltx.py AutoencoderKLLTXVideo (LTXVideoEncoder3d,
 *     LTXVideoDecoder3d, LTXVideoResnetBlock3d, LTXVideoUpBlock3d...),
 *   transformers modeling_t5.py    T5EncoderModel,
 *   LTX-2: transformer_ltx2.py LTX2VideoTransformer3DModel,
 *     pipelines/ltx2/connectors.py LTX2TextConnectors,
 *     autoencoder_kl_ltx2_audio.py AutoencoderKLLTX2Audio,
 *     pipelines/ltx2/vocoder.py LTX2Vocoder / LTX2VocoderWithBWE.
 * nn.Linear weights are [out, in]; Conv3d weights [out, in, kt, kh, kw].
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "model/expected.h"

void
tensor_table_add(struct tensor_table *t, const char *name, int ndim, const int64_t *shape,
    unsigned dtypes, unsigned flags)
{
	LQ_ASSERT(ndim >= 0 && ndim <= ST_MAX_DIMS);
	if (t->n == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 64;
		t->specs = xrealloc(t->specs, t->cap * sizeof(*t->specs));
	}
	struct tensor_spec *s = &t->specs[t->n++];
	memset(s, 0, sizeof(*s));
	s->name = xstrdup(name);
	s->ndim = ndim;
	for (int i = 0; i < ndim; i++)
		s->shape[i] = shape[i];
	s->dtypes = dtypes;
	s->flags = flags;
}

static int
cmp_spec(const void *a, const void *b)
{
	return strcmp(((const struct tensor_spec *)a)->name,
	    ((const struct tensor_spec *)b)->name);
}

void
tensor_table_sort(struct tensor_table *t)
{
	qsort(t->specs, t->n, sizeof(*t->specs), cmp_spec);
	for (size_t i = 1; i < t->n; i++)
		LQ_ASSERT(strcmp(t->specs[i - 1].name, t->specs[i].name) != 0);
}

const struct tensor_spec *
tensor_table_find(const struct tensor_table *t, const char *name)
{
	size_t lo = 0, hi = t->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(name, t->specs[mid].name);
		if (c == 0)
			return &t->specs[mid];
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

void
tensor_table_free(struct tensor_table *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->specs[i].name);
	free(t->specs);
	memset(t, 0, sizeof(*t));
}

/* ---- builder helpers ---- */

struct builder {
	struct tensor_table *t;
	unsigned flags;
};

static void
add(struct builder *b, int ndim, const int64_t *shape, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void
add(struct builder *b, int ndim, const int64_t *shape, const char *fmt, ...)
{
	char name[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(name, sizeof(name), fmt, ap);
	va_end(ap);
	tensor_table_add(b->t, name, ndim, shape, TENSOR_DTYPES_FLOAT, b->flags);
}

/* nn.Linear(in, out, bias) */
static void
linear(struct builder *b, const char *prefix, int64_t in, int64_t out, int bias)
{
	add(b, 2, (int64_t[]){out, in}, "%s.weight", prefix);
	if (bias)
		add(b, 1, (int64_t[]){out}, "%s.bias", prefix);
}

/* LTXVideoCausalConv3d: the nn.Conv3d lives at <prefix>.conv */
static void
conv3d(struct builder *b, const char *prefix, int64_t in, int64_t out, int64_t k)
{
	add(b, 5, (int64_t[]){out, in, k, k, k}, "%s.conv.weight", prefix);
	add(b, 1, (int64_t[]){out}, "%s.conv.bias", prefix);
}

static void
clear(struct tensor_table *t)
{
	tensor_table_free(t);
}

/* ---- LTX-Video transformer ---- */

void
expected_ltxv_transformer(const struct ltxv_transformer_config *c, struct tensor_table *t)
{
	clear(t);
	struct builder b = {t, 0};
	int64_t D = c->inner_dim, F = c->ff_inner_dim;
	char p[160];
	linear(&b, "proj_in", c->in_channels, D, 1);
	/* AdaLayerNormSingle: emb.timestep_embedder (256 -> D -> D), linear D -> 6D */
	linear(&b, "time_embed.emb.timestep_embedder.linear_1", 256, D, 1);
	linear(&b, "time_embed.emb.timestep_embedder.linear_2", D, D, 1);
	linear(&b, "time_embed.linear", D, 6 * D, 1);
	/* PixArtAlphaTextProjection: caption_channels -> D -> D */
	linear(&b, "caption_projection.linear_1", c->caption_channels, D, 1);
	linear(&b, "caption_projection.linear_2", D, D, 1);
	for (int i = 0; i < c->num_layers; i++) {
		const char *attn[2] = {"attn1", "attn2"};
		for (int a = 0; a < 2; a++) {
			int64_t kv_in = a == 0 ? D : c->cross_attention_dim;
			snprintf(p, sizeof(p), "transformer_blocks.%d.%s.to_q", i, attn[a]);
			linear(&b, p, D, D, c->attention_bias);
			snprintf(p, sizeof(p), "transformer_blocks.%d.%s.to_k", i, attn[a]);
			linear(&b, p, kv_in, D, c->attention_bias);
			snprintf(p, sizeof(p), "transformer_blocks.%d.%s.to_v", i, attn[a]);
			linear(&b, p, kv_in, D, c->attention_bias);
			snprintf(p, sizeof(p), "transformer_blocks.%d.%s.to_out.0", i, attn[a]);
			linear(&b, p, D, D, c->attention_out_bias);
			/* torch.nn.RMSNorm(elementwise_affine=True) over all heads */
			add(&b, 1, (int64_t[]){D}, "transformer_blocks.%d.%s.norm_q.weight", i,
			    attn[a]);
			add(&b, 1, (int64_t[]){D}, "transformer_blocks.%d.%s.norm_k.weight", i,
			    attn[a]);
		}
		if (c->norm_elementwise_affine) {
			add(&b, 1, (int64_t[]){D}, "transformer_blocks.%d.norm1.weight", i);
			add(&b, 1, (int64_t[]){D}, "transformer_blocks.%d.norm2.weight", i);
		}
		/* FeedForward(dim, mult 4): net.0 = GELU(dim, 4 dim).proj, net.2 Linear */
		snprintf(p, sizeof(p), "transformer_blocks.%d.ff.net.0.proj", i);
		linear(&b, p, D, F, 1);
		snprintf(p, sizeof(p), "transformer_blocks.%d.ff.net.2", i);
		linear(&b, p, F, D, 1);
		add(&b, 2, (int64_t[]){6, D}, "transformer_blocks.%d.scale_shift_table", i);
	}
	b.flags = TENSOR_SPEC_EITHER;
	add(&b, 2, (int64_t[]){2, D}, "scale_shift_table");
	b.flags = TENSOR_SPEC_EITHER | TENSOR_SPEC_OPTIONAL;
	linear(&b, "norm_out.linear", D, 2 * D, 1);
	b.flags = 0;
	linear(&b, "proj_out", D, c->out_channels, 1);
	tensor_table_sort(t);
}

/* ---- LTX-Video VAE ---- */

/* LTXVideoResnetBlock3d(in, out, inject_noise, timestep_conditioning), or
 * with ltx2 LTX2VideoResnetBlock3d, whose conv_shortcut is a plain
 * nn.Conv3d (<prefix>.conv_shortcut.weight) */
static void
resnet(struct builder *b, const char *prefix, int64_t in, int64_t out, int inject, int tc,
    int ltx2)
{
	char p[200];
	snprintf(p, sizeof(p), "%s.conv1", prefix);
	conv3d(b, p, in, out, 3);
	snprintf(p, sizeof(p), "%s.conv2", prefix);
	conv3d(b, p, out, out, 3);
	if (in != out) {
		add(b, 1, (int64_t[]){in}, "%s.norm3.weight", prefix);
		add(b, 1, (int64_t[]){in}, "%s.norm3.bias", prefix);
		if (ltx2) {
			add(b, 5, (int64_t[]){out, in, 1, 1, 1},
			    "%s.conv_shortcut.weight", prefix);
			add(b, 1, (int64_t[]){out}, "%s.conv_shortcut.bias", prefix);
		} else {
			snprintf(p, sizeof(p), "%s.conv_shortcut", prefix);
			conv3d(b, p, in, out, 1);
		}
	}
	if (inject) {
		add(b, 3, (int64_t[]){in, 1, 1}, "%s.per_channel_scale1", prefix);
		add(b, 3, (int64_t[]){in, 1, 1}, "%s.per_channel_scale2", prefix);
	}
	if (tc)
		add(b, 2, (int64_t[]){4, in}, "%s.scale_shift_table", prefix);
}

/* PixArtAlphaCombinedTimestepSizeEmbeddings(dim, 0): 256 -> dim -> dim */
static void
time_embedder(struct builder *b, const char *prefix, int64_t dim)
{
	char p[200];
	snprintf(p, sizeof(p), "%s.timestep_embedder.linear_1", prefix);
	linear(b, p, 256, dim, 1);
	snprintf(p, sizeof(p), "%s.timestep_embedder.linear_2", prefix);
	linear(b, p, dim, dim, 1);
}

static void
vae_encoder(struct builder *b, const struct ltxv_vae_config *c)
{
	char p[200];
	const int *boc = c->block_out_channels;
	int n = c->n_block_out_channels;
	int is095 = c->is_ltx_095_encoder;
	int nblocks = n - (is095 ? 1 : 0);
	int64_t out = boc[0];
	conv3d(b, "encoder.conv_in", (int64_t)c->in_channels * c->patch_size * c->patch_size,
	    out, 3);
	for (int i = 0; i < nblocks; i++) {
		int64_t in = out;
		out = is095 ? boc[i + 1] : (i + 1 < nblocks ? boc[i + 1] : boc[i]);
		for (int k = 0; k < c->layers_per_block[i]; k++) {
			snprintf(p, sizeof(p), "encoder.down_blocks.%d.resnets.%d", i, k);
			resnet(b, p, in, in, 0, 0, 0);
		}
		if (c->spatio_temporal_scaling[i]) {
			const char *dt = is095 ? c->downsample_type[i] : "conv";
			if (strcmp(dt, "conv") == 0) {
				/* LTXVideoCausalConv3d(in, in, stride 2) directly */
				add(b, 5, (int64_t[]){in, in, 3, 3, 3},
				    "encoder.down_blocks.%d.downsamplers.0.conv.weight", i);
				add(b, 1, (int64_t[]){in},
				    "encoder.down_blocks.%d.downsamplers.0.conv.bias", i);
			} else {
				/* LTXVideoDownsampler3d: conv to out / prod(stride) */
				int64_t prod = strcmp(dt, "spatiotemporal") == 0 ? 8
				    : strcmp(dt, "spatial") == 0 ? 4 : 2;
				snprintf(p, sizeof(p), "encoder.down_blocks.%d.downsamplers.0.conv", i);
				conv3d(b, p, in, out / prod, 3);
			}
		}
		if (!is095 && in != out) {
			snprintf(p, sizeof(p), "encoder.down_blocks.%d.conv_out", i);
			resnet(b, p, in, out, 0, 0, 0);
		}
	}
	for (int k = 0; k < c->layers_per_block[c->n_layers_per_block - 1]; k++) {
		snprintf(p, sizeof(p), "encoder.mid_block.resnets.%d", k);
		resnet(b, p, out, out, 0, 0, 0);
	}
	conv3d(b, "encoder.conv_out", out, c->latent_channels + 1, 3);
}

/* LTX2VideoEncoder3d (autoencoder_kl_ltx2.py): conv_in to latent_channels
 * (upstream's output_channel starts at out_channels), down blocks whose
 * resnets keep their input width and whose downsampler changes it
 * (LTX2VideoCausalConv3d for "conv", else LTX2VideoDownsampler3d to
 * out / prod(stride)), the mid block, conv_out to latent_channels + 1. */
static void
vae_encoder_ltx2(struct builder *b, const struct ltxv_vae_config *c)
{
	char p[200];
	int64_t out = c->latent_channels;

	conv3d(b, "encoder.conv_in", (int64_t)c->in_channels * c->patch_size *
	    c->patch_size, out, 3);
	for (int i = 0; i < c->n_block_out_channels; i++) {
		int64_t in = out;
		const char *dt = c->downsample_type[i];

		out = c->block_out_channels[i];
		for (int k = 0; k < c->layers_per_block[i]; k++) {
			snprintf(p, sizeof(p), "encoder.down_blocks.%d.resnets.%d", i, k);
			resnet(b, p, in, in, 0, 0, 1);
		}
		if (!c->spatio_temporal_scaling[i])
			continue;
		if (strcmp(dt, "conv") == 0) {
			snprintf(p, sizeof(p), "encoder.down_blocks.%d.downsamplers.0", i);
			conv3d(b, p, in, in, 3);
		} else {
			int64_t prod = strcmp(dt, "spatiotemporal") == 0 ? 8
			    : strcmp(dt, "spatial") == 0 ? 4 : 2;

			snprintf(p, sizeof(p), "encoder.down_blocks.%d.downsamplers.0.conv", i);
			conv3d(b, p, in, out / prod, 3);
		}
	}
	for (int k = 0; k < c->layers_per_block[c->n_layers_per_block - 1]; k++) {
		snprintf(p, sizeof(p), "encoder.mid_block.resnets.%d", k);
		resnet(b, p, out, out, 0, 0, 1);
	}
	conv3d(b, "encoder.conv_out", out, c->latent_channels + 1, 3);
}

void
expected_ltxv_vae(const struct ltxv_vae_config *c, struct tensor_table *t)
{
	clear(t);
	struct builder b = {t, 0};
	char p[200];
	int tc = c->timestep_conditioning;
	int64_t C = c->dec_conv_in_out;
	conv3d(&b, "decoder.conv_in", c->latent_channels, C, 3);
	if (tc)
		time_embedder(&b, "decoder.mid_block.time_embedder", 4 * C);
	for (int k = 0; k < c->dec_mid_layers; k++) {
		snprintf(p, sizeof(p), "decoder.mid_block.resnets.%d", k);
		resnet(&b, p, C, C, c->dec_mid_inject_noise, tc, c->ltx2);
	}
	for (int i = 0; i < c->dec_n_up; i++) {
		const struct ltxv_vae_up_block *u = &c->dec_up[i];
		if (tc) {
			snprintf(p, sizeof(p), "decoder.up_blocks.%d.time_embedder", i);
			time_embedder(&b, p, 4 * (int64_t)u->in_channels);
		}
		if (u->has_conv_in) {
			snprintf(p, sizeof(p), "decoder.up_blocks.%d.conv_in", i);
			resnet(&b, p, u->in_channels, u->out_channels, u->inject_noise, tc,
			    c->ltx2);
		}
		if (u->spatio_temporal_scale) {
			snprintf(p, sizeof(p), "decoder.up_blocks.%d.upsamplers.0.conv", i);
			conv3d(&b, p, u->upsampler_in, u->upsampler_out, 3);
		}
		for (int k = 0; k < u->num_layers; k++) {
			snprintf(p, sizeof(p), "decoder.up_blocks.%d.resnets.%d", i, k);
			resnet(&b, p, u->out_channels, u->out_channels, u->inject_noise, tc,
			    c->ltx2);
		}
	}
	conv3d(&b, "decoder.conv_out", c->dec_conv_out_in, c->dec_conv_out_out, 3);
	if (tc) {
		add(&b, 0, NULL, "decoder.timestep_scale_multiplier");
		time_embedder(&b, "decoder.time_embedder", 2 * (int64_t)c->dec_conv_out_in);
		add(&b, 2, (int64_t[]){2, c->dec_conv_out_in}, "decoder.scale_shift_table");
	}
	add(&b, 1, (int64_t[]){c->latent_channels}, "latents_mean");
	add(&b, 1, (int64_t[]){c->latent_channels}, "latents_std");
	b.flags = TENSOR_SPEC_OPTIONAL | TENSOR_SPEC_UNUSED;
	if (c->ltx2)
		vae_encoder_ltx2(&b, c);
	else
		vae_encoder(&b, c);
	tensor_table_sort(t);
}

/* ---- Wan 2.1 ---- */

/*
 * WanTransformer3DModel's state_dict (transformer_wan.py): patch_embedding
 * Conv3d, condition_embedder (time_embedder Linear-SiLU-Linear on
 * freq_dim, time_proj to 6 dim, text_embedder PixArtAlphaTextProjection),
 * per block: attn1 / attn2 (to_q, to_k, to_v, to_out.0 with biases,
 * norm_q / norm_k RMSNorm over the whole inner dim, whatever qk_norm
 * says), norm2 (LayerNorm with affine only with cross_attn_norm), ffn
 * (net.0.proj, net.2), scale_shift_table [1, 6, dim]; the head's
 * scale_shift_table [1, 2, dim] and proj_out.
 */
void
expected_wan_transformer(const struct wan_transformer_config *c,
    struct tensor_table *t)
{
	clear(t);
	struct builder b = {t, 0};
	int64_t d = c->inner_dim;
	char p[200];
	add(&b, 5, (int64_t[]){d, c->in_channels, c->patch_size[0],
	    c->patch_size[1], c->patch_size[2]}, "patch_embedding.weight");
	add(&b, 1, (int64_t[]){d}, "patch_embedding.bias");
	linear(&b, "condition_embedder.time_embedder.linear_1", c->freq_dim, d,
	    1);
	linear(&b, "condition_embedder.time_embedder.linear_2", d, d, 1);
	linear(&b, "condition_embedder.time_proj", d, 6 * d, 1);
	linear(&b, "condition_embedder.text_embedder.linear_1", c->text_dim, d,
	    1);
	linear(&b, "condition_embedder.text_embedder.linear_2", d, d, 1);
	for (int i = 0; i < c->num_layers; i++) {
		for (int a = 1; a <= 2; a++) {
			static const char *const proj[] = { "to_q", "to_k",
			    "to_v", "to_out.0" };
			for (size_t k = 0; k < LQ_ARRAY_LEN(proj); k++) {
				snprintf(p, sizeof(p), "blocks.%d.attn%d.%s", i, a,
				    proj[k]);
				linear(&b, p, d, d, 1);
			}
			add(&b, 1, (int64_t[]){d}, "blocks.%d.attn%d.norm_q.weight",
			    i, a);
			add(&b, 1, (int64_t[]){d}, "blocks.%d.attn%d.norm_k.weight",
			    i, a);
		}
		if (c->cross_attn_norm) {
			add(&b, 1, (int64_t[]){d}, "blocks.%d.norm2.weight", i);
			add(&b, 1, (int64_t[]){d}, "blocks.%d.norm2.bias", i);
		}
		snprintf(p, sizeof(p), "blocks.%d.ffn.net.0.proj", i);
		linear(&b, p, d, c->ffn_dim, 1);
		snprintf(p, sizeof(p), "blocks.%d.ffn.net.2", i);
		linear(&b, p, c->ffn_dim, d, 1);
		add(&b, 3, (int64_t[]){1, 6, d}, "blocks.%d.scale_shift_table", i);
	}
	add(&b, 3, (int64_t[]){1, 2, d}, "scale_shift_table");
	linear(&b, "proj_out", d, (int64_t)c->out_channels * c->patch_volume, 1);
	tensor_table_sort(t);
}

/* WanCausalConv3d(in, out, (kt, kh, kw)) at prefix: weight and bias. */
static void
wan_conv(struct builder *b, const char *prefix, int64_t in, int64_t out,
    int64_t kt, int64_t ks)
{
	add(b, 5, (int64_t[]){out, in, kt, ks, ks}, "%s.weight", prefix);
	add(b, 1, (int64_t[]){out}, "%s.bias", prefix);
}

/* WanResidualBlock(in, out): RMS norms (gamma, no bias), two 3x3x3 causal
 * convs, a 1x1x1 shortcut when in != out. */
static void
wan_resnet(struct builder *b, const char *prefix, int64_t in, int64_t out)
{
	char p[200];
	add(b, 4, (int64_t[]){in, 1, 1, 1}, "%s.norm1.gamma", prefix);
	snprintf(p, sizeof(p), "%s.conv1", prefix);
	wan_conv(b, p, in, out, 3, 3);
	add(b, 4, (int64_t[]){out, 1, 1, 1}, "%s.norm2.gamma", prefix);
	snprintf(p, sizeof(p), "%s.conv2", prefix);
	wan_conv(b, p, out, out, 3, 3);
	if (in != out) {
		snprintf(p, sizeof(p), "%s.conv_shortcut", prefix);
		wan_conv(b, p, in, out, 1, 1);
	}
}

/* WanAttentionBlock(dim): per-frame norm (images: gamma [dim, 1, 1]),
 * to_qkv and proj as 1x1 Conv2d. */
static void
wan_attention(struct builder *b, const char *prefix, int64_t dim)
{
	add(b, 3, (int64_t[]){dim, 1, 1}, "%s.norm.gamma", prefix);
	add(b, 4, (int64_t[]){3 * dim, dim, 1, 1}, "%s.to_qkv.weight", prefix);
	add(b, 1, (int64_t[]){3 * dim}, "%s.to_qkv.bias", prefix);
	add(b, 4, (int64_t[]){dim, dim, 1, 1}, "%s.proj.weight", prefix);
	add(b, 1, (int64_t[]){dim}, "%s.proj.bias", prefix);
}

/* WanMidBlock(dim, num_layers=1): resnets.0, attentions.0, resnets.1. */
static void
wan_mid(struct builder *b, const char *prefix, int64_t dim)
{
	char p[200];
	for (int k = 0; k < 2; k++) {
		snprintf(p, sizeof(p), "%s.resnets.%d", prefix, k);
		wan_resnet(b, p, dim, dim);
	}
	snprintf(p, sizeof(p), "%s.attentions.0", prefix);
	wan_attention(b, p, dim);
}

void
expected_wan_vae(const struct wan_vae_config *c, struct tensor_table *t)
{
	clear(t);
	struct builder b = {t, 0};
	int n = c->n_dim_mult;
	int64_t z = c->z_dim, dd = c->decoder_base_dim > 0 ?
	    c->decoder_base_dim : c->base_dim;
	char p[200];

	/* WanDecoder3d: dims = dim * [dim_mult[-1]] + dim_mult[::-1] */
	int64_t dims[DIFFUSERS_MAX_BLOCKS + 1];
	dims[0] = dd * c->dim_mult[n - 1];
	for (int i = 0; i < n; i++)
		dims[i + 1] = dd * c->dim_mult[n - 1 - i];
	wan_conv(&b, "post_quant_conv", z, z, 1, 1);
	wan_conv(&b, "decoder.conv_in", z, dims[0], 3, 3);
	wan_mid(&b, "decoder.mid_block", dims[0]);
	for (int i = 0; i < n; i++) {
		/* Wan 2.1: the previous upsampler halved the channels */
		int64_t in = i > 0 ? dims[i] / 2 : dims[i], out = dims[i + 1];
		for (int k = 0; k <= c->num_res_blocks; k++) {
			snprintf(p, sizeof(p), "decoder.up_blocks.%d.resnets.%d",
			    i, k);
			wan_resnet(&b, p, k == 0 ? in : out, out);
		}
		if (i == n - 1)
			continue;
		/* temperal_upsample = temperal_downsample[::-1] */
		int t3 = c->temperal_downsample[n - 2 - i];
		add(&b, 4, (int64_t[]){out / 2, out, 3, 3},
		    "decoder.up_blocks.%d.upsamplers.0.resample.1.weight", i);
		add(&b, 1, (int64_t[]){out / 2},
		    "decoder.up_blocks.%d.upsamplers.0.resample.1.bias", i);
		if (t3) {
			snprintf(p, sizeof(p),
			    "decoder.up_blocks.%d.upsamplers.0.time_conv", i);
			add(&b, 5, (int64_t[]){2 * out, out, 3, 1, 1}, "%s.weight",
			    p);
			add(&b, 1, (int64_t[]){2 * out}, "%s.bias", p);
		}
	}
	add(&b, 4, (int64_t[]){dims[n], 1, 1, 1}, "decoder.norm_out.gamma");
	wan_conv(&b, "decoder.conv_out", dims[n], c->out_channels, 3, 3);

	/* WanEncoder3d (and quant_conv): present in upstream files, used by
	 * the encoder only */
	b.flags = TENSOR_SPEC_OPTIONAL | TENSOR_SPEC_UNUSED;
	int64_t e = c->base_dim, ed[DIFFUSERS_MAX_BLOCKS + 1];
	ed[0] = e;
	for (int i = 0; i < n; i++)
		ed[i + 1] = e * c->dim_mult[i];
	wan_conv(&b, "encoder.conv_in", c->in_channels, ed[0], 3, 3);
	int k = 0;
	double scale = 1.0;
	for (int i = 0; i < n; i++) {
		int64_t in = ed[i], out = ed[i + 1];
		for (int r = 0; r < c->num_res_blocks; r++) {
			snprintf(p, sizeof(p), "encoder.down_blocks.%d", k++);
			wan_resnet(&b, p, in, out);
			for (int a = 0; a < c->n_attn_scales; a++)
				if (c->attn_scales[a] == scale) {
					snprintf(p, sizeof(p),
					    "encoder.down_blocks.%d", k++);
					wan_attention(&b, p, out);
					break;
				}
			in = out;
		}
		if (i == n - 1)
			continue;
		add(&b, 4, (int64_t[]){out, out, 3, 3},
		    "encoder.down_blocks.%d.resample.1.weight", k);
		add(&b, 1, (int64_t[]){out}, "encoder.down_blocks.%d.resample.1.bias",
		    k);
		if (c->temperal_downsample[i]) {
			add(&b, 5, (int64_t[]){out, out, 3, 1, 1},
			    "encoder.down_blocks.%d.time_conv.weight", k);
			add(&b, 1, (int64_t[]){out},
			    "encoder.down_blocks.%d.time_conv.bias", k);
		}
		k++;
		scale /= 2.0;
	}
	wan_mid(&b, "encoder.mid_block", ed[n]);
	add(&b, 4, (int64_t[]){ed[n], 1, 1, 1}, "encoder.norm_out.gamma");
	wan_conv(&b, "encoder.conv_out", ed[n], 2 * z, 3, 3);
	wan_conv(&b, "quant_conv", 2 * z, 2 * z, 1, 1);
	tensor_table_sort(t);
}

/* ---- T5 encoder ---- */

void
expected_t5_encoder(const struct t5_config *c, struct tensor_table *t)
{
	clear(t);
	struct builder b = {t, 0};
	int64_t d = c->d_model, inner = (int64_t)c->num_heads * c->d_kv;
	char p[200];
	add(&b, 2, (int64_t[]){c->vocab_size, d}, "shared.weight");
	for (int i = 0; i < c->num_layers; i++) {
		const char *qkv[3] = {"q", "k", "v"};
		for (int k = 0; k < 3; k++) {
			snprintf(p, sizeof(p), "encoder.block.%d.layer.0.SelfAttention.%s", i, qkv[k]);
			linear(&b, p, d, inner, 0);
		}
		snprintf(p, sizeof(p), "encoder.block.%d.layer.0.SelfAttention.o", i);
		linear(&b, p, inner, d, 0);
		if (i == 0)
			add(&b, 2, (int64_t[]){c->relative_attention_num_buckets, c->num_heads},
			    "encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight");
		add(&b, 1, (int64_t[]){d}, "encoder.block.%d.layer.0.layer_norm.weight", i);
		if (c->is_gated_act) {
			snprintf(p, sizeof(p), "encoder.block.%d.layer.1.DenseReluDense.wi_0", i);
			linear(&b, p, d, c->d_ff, 0);
			snprintf(p, sizeof(p), "encoder.block.%d.layer.1.DenseReluDense.wi_1", i);
			linear(&b, p, d, c->d_ff, 0);
		} else {
			snprintf(p, sizeof(p), "encoder.block.%d.layer.1.DenseReluDense.wi", i);
			linear(&b, p, d, c->d_ff, 0);
		}
		snprintf(p, sizeof(p), "encoder.block.%d.layer.1.DenseReluDense.wo", i);
		linear(&b, p, c->d_ff, d, 0);
		add(&b, 1, (int64_t[]){d}, "encoder.block.%d.layer.1.layer_norm.weight", i);
	}
	add(&b, 1, (int64_t[]){d}, "encoder.final_layer_norm.weight");
	/* tied to shared.weight; save_pretrained drops it, older files keep it */
	b.flags = TENSOR_SPEC_OPTIONAL;
	add(&b, 2, (int64_t[]){c->vocab_size, d}, "encoder.embed_tokens.weight");
	tensor_table_sort(t);
}

/* ---- check ---- */

static void
push(char ***list, size_t *n, char *s)
{
	*list = xrealloc(*list, (*n + 1) * sizeof(char *));
	(*list)[(*n)++] = s;
}

static void
shape_str(char *buf, size_t n, int ndim, const int64_t *shape)
{
	size_t k = (size_t)snprintf(buf, n, "[");
	for (int i = 0; i < ndim && k < n; i++)
		k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? ", " : "",
		    (long long)shape[i]);
	if (k < n)
		snprintf(buf + k, n - k, "]");
}

void
expected_report_free(struct expected_report *r)
{
	if (r == NULL)
		return;
	char **lists[4] = {r->missing, r->unexpected, r->misshaped, r->bad_dtype};
	size_t ns[4] = {r->n_missing, r->n_unexpected, r->n_misshaped, r->n_bad_dtype};
	for (int k = 0; k < 4; k++) {
		for (size_t i = 0; i < ns[k]; i++)
			free(lists[k][i]);
		free(lists[k]);
	}
	memset(r, 0, sizeof(*r));
}

enum lq_status
expected_check(const struct tensor_table *t, const struct st_set *s, const char *label,
    struct expected_report *rout, struct lq_error *err)
{
	struct expected_report r = {0};
	char a[160], b[160];
	int either_found = 0;
	for (size_t i = 0; i < t->n; i++) {
		const struct tensor_spec *sp = &t->specs[i];
		const struct st_tensor *x = st_set_find(s, sp->name);
		if (x == NULL) {
			if (!(sp->flags & (TENSOR_SPEC_OPTIONAL | TENSOR_SPEC_EITHER)))
				push(&r.missing, &r.n_missing, xstrdup(sp->name));
			continue;
		}
		if (sp->flags & TENSOR_SPEC_EITHER)
			either_found = 1;
		int same = x->ndim == sp->ndim;
		for (int d = 0; same && d < sp->ndim; d++)
			same = x->shape[d] == sp->shape[d];
		if (!same) {
			shape_str(a, sizeof(a), x->ndim, x->shape);
			shape_str(b, sizeof(b), sp->ndim, sp->shape);
			push(&r.misshaped, &r.n_misshaped,
			    xasprintf("%s: %s in the file, %s expected", sp->name, a, b));
		}
		if (!(sp->dtypes & (1u << x->dtype)))
			push(&r.bad_dtype, &r.n_bad_dtype,
			    xasprintf("%s: %s (F32, F16 or BF16 expected)", sp->name,
			    st_dtype_name(x->dtype)));
	}
	if (!either_found) {
		/* none of a parameter's layouts: name them all */
		struct strbuf alt = {0};
		for (size_t i = 0; i < t->n; i++)
			if (t->specs[i].flags & TENSOR_SPEC_EITHER)
				strbuf_printf(&alt, "%s%s", alt.len ? " or " : "",
				    t->specs[i].name);
		if (alt.len)
			push(&r.missing, &r.n_missing, strbuf_release(&alt));
		else
			free(strbuf_release(&alt));
	}
	for (size_t i = 0; i < st_set_count(s); i++) {
		const char *name = st_set_tensor(s, i)->name;
		if (tensor_table_find(t, name) == NULL)
			push(&r.unexpected, &r.n_unexpected, xstrdup(name));
	}
	enum lq_status rc = LQ_OK;
	if (r.n_missing || r.n_unexpected || r.n_misshaped || r.n_bad_dtype) {
		const char *code, *first;
		if (r.n_missing) {
			code = "LQ-MODEL-010";
			first = r.missing[0];
		} else if (r.n_unexpected) {
			code = "LQ-MODEL-011";
			first = r.unexpected[0];
		} else if (r.n_misshaped) {
			code = "LQ-MODEL-012";
			first = r.misshaped[0];
		} else {
			code = "LQ-MODEL-013";
			first = r.bad_dtype[0];
		}
		char field[128];
		snprintf(field, sizeof(field), "%s", first);
		char *colon = strchr(field, ':');
		if (colon)
			*colon = '\0';
		error_set(err, LQ_FAILED, code,
		    "weights do not match the config: %zu missing, %zu unexpected, "
		    "%zu mis-shaped, %zu of a wrong dtype; first: %s",
		    r.n_missing, r.n_unexpected, r.n_misshaped, r.n_bad_dtype, first);
		error_set_where(err, label, 0, 0);
		error_set_field(err, "%s", field);
		rc = LQ_FAILED;
	}
	if (rout)
		*rout = r;
	else
		expected_report_free(&r);
	return rc;
}

enum lq_status
expected_check_model(const struct diffusers_model *m,
    struct expected_report reports[EXPECTED_NCOMPONENTS], struct lq_error *err)
{
	enum lq_status rc = LQ_OK;
	struct lq_error e1;
	for (int c = 0; c < EXPECTED_NCOMPONENTS; c++) {
		struct expected_report r = {0};
		struct tensor_table t = {0};
		const char *dir = NULL;
		if (c == EXPECTED_TRANSFORMER) {
			expected_ltxv_transformer(&m->transformer_config, &t);
			dir = m->transformer.dir;
		} else if (c == EXPECTED_VAE) {
			expected_ltxv_vae(&m->vae_config, &t);
			dir = m->vae.dir;
		} else if (m->text_encoder.present) {
			expected_t5_encoder(&m->text_encoder_config, &t);
			dir = m->text_encoder.dir;
		}
		if (dir != NULL) {
			struct st_set *s;
			error_clear(&e1);
			enum lq_status r1 = st_set_open(dir, &s, &e1);
			if (r1 == LQ_OK) {
				r1 = expected_check(&t, s, dir, &r, &e1);
				st_set_close(s);
			}
			if (r1 != LQ_OK && rc == LQ_OK) {
				rc = r1;
				if (err)
					*err = e1;
			}
		}
		tensor_table_free(&t);
		if (reports)
			reports[c] = r;
		else
			expected_report_free(&r);
	}
	return rc;
}

/* ---- LTX-2 (LTX2Pipeline's transformer, connectors, audio VAE, vocoder) ---- */

/*
 * LTX2Attention (transformer_ltx2.py): to_q from query_dim, to_k / to_v
 * from kv_dim, each to heads x head_dim (bias `bias`), norm_q / norm_k
 * (qk_norm rms_norm_across_heads: an RMSNorm over the whole inner dim, with
 * weight), to_out.0 back to query_dim (bias `out_bias`), and with
 * apply_gated_attention to_gate_logits (query_dim -> heads, always biased).
 */
static void
ltx2_attention(struct builder *b, const char *prefix, int64_t query_dim,
    int64_t kv_dim, int64_t heads, int64_t head_dim, int bias, int out_bias,
    int gated)
{
	char p[200];
	int64_t inner = heads * head_dim;

	snprintf(p, sizeof(p), "%s.to_q", prefix);
	linear(b, p, query_dim, inner, bias);
	snprintf(p, sizeof(p), "%s.to_k", prefix);
	linear(b, p, kv_dim, inner, bias);
	snprintf(p, sizeof(p), "%s.to_v", prefix);
	linear(b, p, kv_dim, inner, bias);
	add(b, 1, (int64_t[]){inner}, "%s.norm_q.weight", prefix);
	add(b, 1, (int64_t[]){inner}, "%s.norm_k.weight", prefix);
	snprintf(p, sizeof(p), "%s.to_out.0", prefix);
	linear(b, p, inner, query_dim, out_bias);
	if (gated) {
		snprintf(p, sizeof(p), "%s.to_gate_logits", prefix);
		linear(b, p, query_dim, heads, 1);
	}
}

/* FeedForward(dim, mult 4, gelu / gelu-approximate): net.0.proj, net.2 */
static void
ltx2_ff(struct builder *b, const char *prefix, int64_t dim)
{
	char p[200];

	snprintf(p, sizeof(p), "%s.net.0.proj", prefix);
	linear(b, p, dim, 4 * dim, 1);
	snprintf(p, sizeof(p), "%s.net.2", prefix);
	linear(b, p, 4 * dim, dim, 1);
}

/* LTX2AdaLayerNormSingle(dim, P): emb.timestep_embedder (256 -> dim ->
 * dim), linear dim -> P x dim. */
static void
ltx2_adaln(struct builder *b, const char *prefix, int64_t dim, int64_t P)
{
	char p[200];

	snprintf(p, sizeof(p), "%s.emb.timestep_embedder.linear_1", prefix);
	linear(b, p, 256, dim, 1);
	snprintf(p, sizeof(p), "%s.emb.timestep_embedder.linear_2", prefix);
	linear(b, p, dim, dim, 1);
	snprintf(p, sizeof(p), "%s.linear", prefix);
	linear(b, p, dim, P * dim, 1);
}

void
expected_ltx2_transformer(const struct ltx2_transformer_config *c,
    struct tensor_table *t)
{
	clear(t);
	struct builder b = {t, 0};
	int64_t D = c->inner_dim, Da = c->audio_inner_dim;
	int64_t H = c->num_attention_heads, Ha = c->audio_num_attention_heads;
	int64_t hd = c->attention_head_dim, hda = c->audio_attention_head_dim;
	int64_t Pv = c->cross_attn_mod ? 9 : 6, Pa = c->audio_cross_attn_mod ? 9 : 6;
	int ab = c->attention_bias, ob = c->attention_out_bias;
	char p[200];

	linear(&b, "proj_in", c->in_channels, D, 1);
	linear(&b, "audio_proj_in", c->audio_in_channels, Da, 1);
	/* PixArtAlphaTextProjection (use_prompt_embeddings, LTX-2.0) */
	linear(&b, "caption_projection.linear_1", c->caption_channels, D, 1);
	linear(&b, "caption_projection.linear_2", D, D, 1);
	linear(&b, "audio_caption_projection.linear_1", c->caption_channels, Da, 1);
	linear(&b, "audio_caption_projection.linear_2", Da, Da, 1);
	ltx2_adaln(&b, "time_embed", D, Pv);
	ltx2_adaln(&b, "audio_time_embed", Da, Pa);
	ltx2_adaln(&b, "av_cross_attn_video_scale_shift", D, 4);
	ltx2_adaln(&b, "av_cross_attn_audio_scale_shift", Da, 4);
	ltx2_adaln(&b, "av_cross_attn_video_a2v_gate", D, 1);
	ltx2_adaln(&b, "av_cross_attn_audio_v2a_gate", Da, 1);
	add(&b, 2, (int64_t[]){2, D}, "scale_shift_table");
	add(&b, 2, (int64_t[]){2, Da}, "audio_scale_shift_table");
	if (c->prompt_modulation) {
		/* use_prompt_adaln_single (latentq refuses false) */
		ltx2_adaln(&b, "prompt_adaln", D, 2);
		ltx2_adaln(&b, "audio_prompt_adaln", Da, 2);
	}
	for (int i = 0; i < c->num_layers; i++) {
		const struct {
			const char *name;
			int64_t q, kv, heads, hd;
			int gated;
		} at[] = {
			{"attn1", D, D, H, hd, c->gated_attn},
			{"audio_attn1", Da, Da, Ha, hda, c->audio_gated_attn},
			{"attn2", D, c->cross_attention_dim, H, hd, c->gated_attn},
			{"audio_attn2", Da, c->audio_cross_attention_dim, Ha, hda,
			    c->audio_gated_attn},
			/* a2v: Q video, K/V audio; v2a: Q audio, K/V video;
			 * both with the audio heads */
			{"audio_to_video_attn", D, Da, Ha, hda, c->gated_attn},
			{"video_to_audio_attn", Da, D, Ha, hda, c->audio_gated_attn},
		};
		for (size_t k = 0; k < LQ_ARRAY_LEN(at); k++) {
			snprintf(p, sizeof(p), "transformer_blocks.%d.%s", i,
			    at[k].name);
			ltx2_attention(&b, p, at[k].q, at[k].kv, at[k].heads,
			    at[k].hd, ab, ob, at[k].gated);
		}
		snprintf(p, sizeof(p), "transformer_blocks.%d.ff", i);
		ltx2_ff(&b, p, D);
		snprintf(p, sizeof(p), "transformer_blocks.%d.audio_ff", i);
		ltx2_ff(&b, p, Da);
		add(&b, 2, (int64_t[]){Pv, D},
		    "transformer_blocks.%d.scale_shift_table", i);
		add(&b, 2, (int64_t[]){Pa, Da},
		    "transformer_blocks.%d.audio_scale_shift_table", i);
		if (c->prompt_modulation) {
			add(&b, 2, (int64_t[]){2, D},
			    "transformer_blocks.%d.prompt_scale_shift_table", i);
			add(&b, 2, (int64_t[]){2, Da},
			    "transformer_blocks.%d.audio_prompt_scale_shift_table", i);
		}
		add(&b, 2, (int64_t[]){5, D},
		    "transformer_blocks.%d.video_a2v_cross_attn_scale_shift_table", i);
		add(&b, 2, (int64_t[]){5, Da},
		    "transformer_blocks.%d.audio_a2v_cross_attn_scale_shift_table", i);
	}
	linear(&b, "proj_out", D, c->out_channels, 1);
	linear(&b, "audio_proj_out", Da, c->audio_out_channels, 1);
	tensor_table_sort(t);
}

/* One LTX2ConnectorTransformer1d (pipelines/ltx2/connectors.py): optional
 * learnable_registers [R, inner], blocks of attn1 (LTX2Attention defaults:
 * biases, across-heads q/k norm) and ff; its norms have no weight. */
static void
ltx2_connector(struct builder *b, const char *prefix,
    const struct ltx2_connector_config *c)
{
	char p[200];
	int64_t inner = (int64_t)c->num_attention_heads * c->attention_head_dim;

	if (c->num_learnable_registers > 0)
		add(b, 2, (int64_t[]){c->num_learnable_registers, inner},
		    "%s.learnable_registers", prefix);
	for (int i = 0; i < c->num_layers; i++) {
		snprintf(p, sizeof(p), "%s.transformer_blocks.%d.attn1", prefix, i);
		ltx2_attention(b, p, inner, inner, c->num_attention_heads,
		    c->attention_head_dim, 1, 1, c->gated_attn);
		snprintf(p, sizeof(p), "%s.transformer_blocks.%d.ff", prefix, i);
		ltx2_ff(b, p, inner);
	}
}

void
expected_ltx2_connectors(const struct ltx2_connectors_config *c,
    struct tensor_table *t)
{
	clear(t);
	struct builder b = {t, 0};

	/* per_modality_projections false (LTX-2.0; latentq refuses true) */
	linear(&b, "text_proj_in", (int64_t)c->caption_channels *
	    c->text_proj_in_factor, c->caption_channels, c->proj_bias);
	ltx2_connector(&b, "video_connector", &c->video);
	ltx2_connector(&b, "audio_connector", &c->audio);
	tensor_table_sort(t);
}

/* LTX2AudioCausalConv2d: the nn.Conv2d lives at <prefix>.conv */
static void
audio_conv(struct builder *b, const char *prefix, int64_t in, int64_t out,
    int64_t k)
{
	add(b, 4, (int64_t[]){out, in, k, k}, "%s.conv.weight", prefix);
	add(b, 1, (int64_t[]){out}, "%s.conv.bias", prefix);
}

/* GroupNorm(affine) of norm_type "group"; pixel norms have no weights */
static void
audio_norm(struct builder *b, const struct ltx2_audio_vae_config *c,
    const char *prefix, int64_t ch)
{
	if (!c->norm_group)
		return;
	add(b, 1, (int64_t[]){ch}, "%s.weight", prefix);
	add(b, 1, (int64_t[]){ch}, "%s.bias", prefix);
}

/* LTX2AudioResnetBlock (no temb, conv_shortcut false: a 1x1 causal
 * nin_shortcut when the channels change) */
static void
audio_resnet(struct builder *b, const struct ltx2_audio_vae_config *c,
    const char *prefix, int64_t in, int64_t out)
{
	char p[200];

	snprintf(p, sizeof(p), "%s.norm1", prefix);
	audio_norm(b, c, p, in);
	snprintf(p, sizeof(p), "%s.conv1", prefix);
	audio_conv(b, p, in, out, 3);
	snprintf(p, sizeof(p), "%s.norm2", prefix);
	audio_norm(b, c, p, out);
	snprintf(p, sizeof(p), "%s.conv2", prefix);
	audio_conv(b, p, out, out, 3);
	if (in != out) {
		snprintf(p, sizeof(p), "%s.nin_shortcut", prefix);
		audio_conv(b, p, in, out, 1);
	}
}

/* LTX2AudioAttnBlock: norm, 1x1 nn.Conv2d q, k, v, proj_out */
static void
audio_attn(struct builder *b, const struct ltx2_audio_vae_config *c,
    const char *prefix, int64_t ch)
{
	static const char *const part[] = {"q", "k", "v", "proj_out"};
	char p[200];

	snprintf(p, sizeof(p), "%s.norm", prefix);
	audio_norm(b, c, p, ch);
	for (size_t i = 0; i < LQ_ARRAY_LEN(part); i++) {
		add(b, 4, (int64_t[]){ch, ch, 1, 1}, "%s.%s.weight", prefix,
		    part[i]);
		add(b, 1, (int64_t[]){ch}, "%s.%s.bias", prefix, part[i]);
	}
}

static int
audio_attn_at(const struct ltx2_audio_vae_config *c, int res)
{
	for (int i = 0; i < c->n_attn_resolutions; i++)
		if (c->attn_resolutions[i] == res)
			return 1;
	return 0;
}

/* The mid block at `ch` channels under `side` ("encoder" / "decoder") */
static void
audio_mid(struct builder *b, const struct ltx2_audio_vae_config *c,
    const char *side, int64_t ch)
{
	char p[200];

	snprintf(p, sizeof(p), "%s.mid.block_1", side);
	audio_resnet(b, c, p, ch, ch);
	if (c->mid_block_add_attention) {
		snprintf(p, sizeof(p), "%s.mid.attn_1", side);
		audio_attn(b, c, p, ch);
	}
	snprintf(p, sizeof(p), "%s.mid.block_2", side);
	audio_resnet(b, c, p, ch, ch);
}

/* LTX2AudioEncoder: conv_in to base_channels, per level num_res_blocks
 * resnets (+ attention at attn_resolutions), a stride-2 nn.Conv2d
 * downsample.conv but at the last level, the mid block, conv_out to
 * latent_channels (x 2 with double_z). */
static void
audio_encoder(struct builder *b, const struct ltx2_audio_vae_config *c)
{
	char p[200];
	int64_t in = c->base_channels;
	int res = c->resolution;

	audio_conv(b, "encoder.conv_in", c->in_channels, in, 3);
	for (int lv = 0; lv < c->n_ch_mult; lv++) {
		int64_t out = (int64_t)c->base_channels * c->ch_mult[lv];
		int na = 0;

		for (int i = 0; i < c->num_res_blocks; i++) {
			snprintf(p, sizeof(p), "encoder.down.%d.block.%d", lv, i);
			audio_resnet(b, c, p, in, out);
			in = out;
			if (audio_attn_at(c, res)) {
				snprintf(p, sizeof(p), "encoder.down.%d.attn.%d", lv,
				    na++);
				audio_attn(b, c, p, in);
			}
		}
		if (lv != c->n_ch_mult - 1) {
			add(b, 4, (int64_t[]){in, in, 3, 3},
			    "encoder.down.%d.downsample.conv.weight", lv);
			add(b, 1, (int64_t[]){in},
			    "encoder.down.%d.downsample.conv.bias", lv);
			res /= 2;
		}
	}
	audio_mid(b, c, "encoder", in);
	audio_norm(b, c, "encoder.norm_out", in);
	audio_conv(b, "encoder.conv_out", in, (c->double_z ? 2 : 1) *
	    (int64_t)c->latent_channels, 3);
}

void
expected_ltx2_audio_vae(const struct ltx2_audio_vae_config *c,
    struct tensor_table *t)
{
	clear(t);
	struct builder b = {t, 0};
	char p[200];
	int n = c->n_ch_mult;
	int64_t in = (int64_t)c->base_channels * c->ch_mult[n - 1];
	int res = c->resolution >> (n - 1);

	audio_conv(&b, "decoder.conv_in", c->latent_channels, in, 3);
	audio_mid(&b, c, "decoder", in);
	for (int lv = n - 1; lv >= 0; lv--) {
		int64_t out = (int64_t)c->base_channels * c->ch_mult[lv];
		int na = 0;

		for (int i = 0; i <= c->num_res_blocks; i++) {
			snprintf(p, sizeof(p), "decoder.up.%d.block.%d", lv, i);
			audio_resnet(&b, c, p, in, out);
			in = out;
			if (audio_attn_at(c, res)) {
				snprintf(p, sizeof(p), "decoder.up.%d.attn.%d", lv,
				    na++);
				audio_attn(&b, c, p, in);
			}
		}
		if (lv != 0) {
			snprintf(p, sizeof(p), "decoder.up.%d.upsample.conv", lv);
			audio_conv(&b, p, in, in, 3);
			res *= 2;
		}
	}
	audio_norm(&b, c, "decoder.norm_out", in);
	audio_conv(&b, "decoder.conv_out", in, c->output_channels, 3);
	/* per-channel statistics of the packed latents [C x M] */
	add(&b, 1, (int64_t[]){c->base_channels}, "latents_mean");
	add(&b, 1, (int64_t[]){c->base_channels}, "latents_std");
	b.flags = TENSOR_SPEC_OPTIONAL | TENSOR_SPEC_UNUSED;
	audio_encoder(&b, c);
	tensor_table_sort(t);
}

/*
 * A vocoder activation at `prefix` of `ch` channels (vocoder.py): snake /
 * snakebeta are SnakeBeta (alpha, and beta when `beta`), inside an
 * AntiAliasAct1d with `antialias` (act.*, upsample.filter and
 * downsample.filter [1, 1, K] Kaiser-sinc buffers); leaky_relu has none.
 */
static void
voc_act(struct builder *b, const struct ltx2_vocoder_config *c,
    const char *prefix, int64_t ch, int antialias, int beta)
{
	const char *in = antialias ? ".act" : "";
	int64_t K = c->antialias_kernel_size;

	if (strcmp(c->act_fn, "leaky_relu") == 0)
		return;
	add(b, 1, (int64_t[]){ch}, "%s%s.alpha", prefix, in);
	if (beta)
		add(b, 1, (int64_t[]){ch}, "%s%s.beta", prefix, in);
	if (antialias) {
		add(b, 3, (int64_t[]){1, 1, K}, "%s.upsample.filter", prefix);
		add(b, 3, (int64_t[]){1, 1, K}, "%s.downsample.filter", prefix);
	}
}

/* One LTX2Vocoder's tensors under `pre` ("" or "vocoder." /
 * "bwe_generator." inside LTX2VocoderWithBWE). */
static void
voc_gen(struct builder *b, const struct ltx2_vocoder_config *c, const char *pre)
{
	char p[200];
	int64_t ch = c->hidden_channels;
	int beta = strcmp(c->act_fn, "snakebeta") == 0;

	snprintf(p, sizeof(p), "%sconv_in", pre);
	add(b, 3, (int64_t[]){ch, c->in_channels, 7}, "%s.weight", p);
	add(b, 1, (int64_t[]){ch}, "%s.bias", p);
	for (int i = 0; i < c->n_upsample; i++) {
		int64_t out = ch / 2;

		/* ConvTranspose1d weight [in, out, k] */
		add(b, 3, (int64_t[]){ch, out, c->upsample_kernel_sizes[i]},
		    "%supsamplers.%d.weight", pre, i);
		add(b, 1, (int64_t[]){out}, "%supsamplers.%d.bias", pre, i);
		for (int j = 0; j < c->n_resnets; j++) {
			int r = i * c->n_resnets + j;
			int64_t k = c->resnet_kernel_sizes[j];

			for (int d = 0; d < c->n_resnet_dilations[j]; d++) {
				for (int s = 1; s <= 2; s++) {
					add(b, 3, (int64_t[]){out, out, k},
					    "%sresnets.%d.convs%d.%d.weight", pre,
					    r, s, d);
					add(b, 1, (int64_t[]){out},
					    "%sresnets.%d.convs%d.%d.bias", pre, r,
					    s, d);
					snprintf(p, sizeof(p), "%sresnets.%d.acts%d.%d",
					    pre, r, s, d);
					voc_act(b, c, p, out, c->antialias, beta);
				}
			}
		}
		ch = out;
	}
	/* act_out: snake / snakebeta always SnakeBeta with beta, anti-aliased */
	snprintf(p, sizeof(p), "%sact_out", pre);
	voc_act(b, c, p, ch, 1, 1);
	snprintf(p, sizeof(p), "%sconv_out", pre);
	add(b, 3, (int64_t[]){c->out_channels, ch, 7}, "%s.weight", p);
	if (c->final_bias)
		add(b, 1, (int64_t[]){c->out_channels}, "%s.bias", p);
}

void
expected_ltx2_vocoder(const struct ltx2_vocoder_config *c,
    struct tensor_table *t)
{
	clear(t);
	struct builder b = {t, 0};

	voc_gen(&b, c, "");
	tensor_table_sort(t);
}

void
expected_ltx2_vocoder_bwe(const struct ltx2_vocoder_bwe_config *c,
    struct tensor_table *t)
{
	clear(t);
	struct builder b = {t, 0};
	int64_t nf = c->filter_length / 2 + 1;

	voc_gen(&b, &c->vocoder, "vocoder.");
	voc_gen(&b, &c->bwe_generator, "bwe_generator.");
	/* MelSTFT's persistent buffers (the resampler's filter is not saved) */
	add(&b, 2, (int64_t[]){c->num_mel_channels, nf}, "mel_stft.mel_basis");
	add(&b, 3, (int64_t[]){2 * nf, 1, c->filter_length},
	    "mel_stft.stft_fn.forward_basis");
	/* CausalSTFT's inverse basis: saved, not used by the forward */
	add(&b, 3, (int64_t[]){2 * nf, 1, c->filter_length},
	    "mel_stft.stft_fn.inverse_basis");
	tensor_table_sort(t);
}
