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
 *   transformers modeling_t5.py    T5EncoderModel.
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
