/*
 * diffusers.h — diffusers-layout model folders and their component configs.
 *
 * A folder holds model_index.json ({"_class_name": "LTXPipeline",
 * "transformer": ["diffusers", "LTXVideoTransformer3DModel"], ...}) and one
 * subfolder per component.  diffusers_open reads the index and every
 * component's config into typed structs, filling absent keys with the
 * defaults the upstream __init__ signatures use (diffusers
 * transformer_ltx.py LTXVideoTransformer3DModel, autoencoder_kl_ltx.py
 * AutoencoderKLLTXVideo, transformers configuration_t5.py T5Config).  A
 * component class latentq does not implement is refused by name.
 *
 * Ownership: a `struct diffusers_model` owns every string in it; free it with
 * diffusers_free.  The config structs are plain values (copy freely).
 *
 * Error codes (err->file = the config file, err->field = the key):
 *   LQ-MODEL-001  config / index missing, unreadable, not JSON, not an object
 *   LQ-MODEL-002  unsupported class (pipeline or component), named
 *   LQ-MODEL-003  a key has the wrong type or an impossible value
 *   LQ-MODEL-004  list lengths disagree (e.g. decoder_layers_per_block)
 *   LQ-MODEL-005  a required component (transformer, vae, scheduler) is absent
 *   LQ-MODEL-006  a valid upstream value latentq does not implement (named)
 *   LQ-MODEL-007  a required file of a component is missing (spiece.model)
 */
#ifndef LQ_MODEL_DIFFUSERS_H
#define LQ_MODEL_DIFFUSERS_H

#include <stdint.h>

#include <cjson/cJSON.h>

#include "core/error.h"

#define DIFFUSERS_MAX_BLOCKS 8

/* LTXVideoTransformer3DModel (diffusers transformer_ltx.py). */
struct ltxv_transformer_config {
	int in_channels;		/* 128 */
	int out_channels;		/* 128; 0/null in the file means in_channels */
	int patch_size;			/* 1 (only 1 supported) */
	int patch_size_t;		/* 1 (only 1 supported) */
	int num_attention_heads;	/* 32 */
	int attention_head_dim;		/* 64 */
	int cross_attention_dim;	/* 2048 */
	int num_layers;			/* 28 */
	char activation_fn[32];		/* "gelu-approximate" (or "gelu") */
	char qk_norm[32];		/* "rms_norm_across_heads" (the only one) */
	int norm_elementwise_affine;	/* 0 */
	double norm_eps;		/* 1e-6 */
	int caption_channels;		/* 4096 */
	int attention_bias;		/* 1 */
	int attention_out_bias;		/* 1 */
	/* derived */
	int inner_dim;			/* num_attention_heads * attention_head_dim */
	int ff_inner_dim;		/* 4 * inner_dim (FeedForward mult 4) */
};

/* One up block of the VAE decoder, in decoder order (LTXVideoUpBlock3d). */
struct ltxv_vae_up_block {
	int in_channels, out_channels;	/* out_prev // factor, rev_channels[i] // factor */
	int num_layers;			/* resnets at out_channels */
	int has_conv_in;		/* resnet in -> out when they differ */
	int spatio_temporal_scale;	/* has upsamplers.0 */
	int inject_noise;
	int upsample_residual;
	int upsample_factor;
	int upsampler_in, upsampler_out;	/* out*factor -> out*8 channels */
};

/* AutoencoderKLLTXVideo (diffusers autoencoder_kl_ltx.py), or with `ltx2`
 * AutoencoderKLLTX2Video (autoencoder_kl_ltx2.py: the same decoder math
 * with a spatial padding mode, a call-time causal flag and other
 * defaults; the comments give LTX-Video's defaults).  Lists are as
 * written in config.json (encoder order); n_* are their lengths. */
struct ltxv_vae_config {
	int ltx2;			/* _class_name AutoencoderKLLTX2Video */
	int in_channels;		/* 3 */
	int out_channels;		/* 3 */
	int latent_channels;		/* 128 */
	int n_block_out_channels;
	int block_out_channels[DIFFUSERS_MAX_BLOCKS];		/* 128,256,512,512 */
	int n_down_block_types;
	char down_block_types[DIFFUSERS_MAX_BLOCKS][32];	/* LTXVideoDownBlock3D x4 */
	int n_decoder_block_out_channels;
	int decoder_block_out_channels[DIFFUSERS_MAX_BLOCKS];	/* 128,256,512,512 */
	int n_layers_per_block;
	int layers_per_block[DIFFUSERS_MAX_BLOCKS + 1];		/* 4,3,3,3,4 */
	int n_decoder_layers_per_block;
	int decoder_layers_per_block[DIFFUSERS_MAX_BLOCKS + 1];	/* 4,3,3,3,4 */
	int n_spatio_temporal_scaling;
	int spatio_temporal_scaling[DIFFUSERS_MAX_BLOCKS];	/* T,T,T,F */
	int n_decoder_spatio_temporal_scaling;
	int decoder_spatio_temporal_scaling[DIFFUSERS_MAX_BLOCKS];	/* T,T,T,F */
	int n_decoder_inject_noise;
	int decoder_inject_noise[DIFFUSERS_MAX_BLOCKS + 1];	/* F x5 */
	int n_downsample_type;
	char downsample_type[DIFFUSERS_MAX_BLOCKS][16];		/* conv x4 */
	int n_upsample_residual;
	int upsample_residual[DIFFUSERS_MAX_BLOCKS];		/* F x4 */
	int n_upsample_factor;
	int upsample_factor[DIFFUSERS_MAX_BLOCKS];		/* 1 x4 */
	int timestep_conditioning;	/* 0 */
	int patch_size;			/* 4 */
	int patch_size_t;		/* 1 (only 1 supported) */
	double resnet_norm_eps;		/* 1e-6 */
	double scaling_factor;		/* 1.0 */
	int encoder_causal;		/* 1 */
	int decoder_causal;		/* 0 (LTX-2: 1) */
	/* LTX-2 only (LTX-Video pads with zeros and upsamples in t, h, w):
	 * "zeros" or "reflect" (torch padding_mode), the decoder's
	 * "spatiotemporal" x3 */
	char encoder_spatial_padding_mode[16];	/* zeros */
	char decoder_spatial_padding_mode[16];	/* reflect */
	int n_upsample_type;
	char upsample_type[DIFFUSERS_MAX_BLOCKS][16];
	/* derived: config value, or patch_size * 2^(number of true in the
	 * encoder spatio_temporal_scaling) and patch_size_t * 2^(same) */
	int spatial_compression_ratio;
	int temporal_compression_ratio;
	/* derived decoder plan (LTXVideoDecoder3d.__init__), decoder order */
	int dec_conv_in_out;		/* reversed decoder_block_out_channels[0] */
	int dec_mid_layers;		/* reversed decoder_layers_per_block[0] */
	int dec_mid_inject_noise;	/* reversed decoder_inject_noise[0] */
	int dec_n_up;
	struct ltxv_vae_up_block dec_up[DIFFUSERS_MAX_BLOCKS];
	int dec_conv_out_in;		/* last up block's out_channels */
	int dec_conv_out_out;		/* out_channels * patch_size^2 */
	int is_ltx_095_encoder;		/* last down_block_types is LTXVideo095DownBlock3D */
};

/* LTXLatentUpsamplerModel (diffusers pipelines/ltx/modeling_latent_upsampler.py);
 * the `latent_upsampler/` of an LTX 0.9.7+ pipeline folder. */
struct ltxv_upsampler_config {
	int in_channels;		/* 128 */
	int mid_channels;		/* 512 */
	int num_blocks_per_stage;	/* 4 */
	int dims;			/* 3 */
	int spatial_upsample;		/* true */
	int temporal_upsample;		/* false */
};

/* LTX2Vocoder (diffusers pipelines/ltx2/vocoder.py), the `vocoder/` of an
 * LTX2Pipeline folder: mel spectrogram to waveform.  Lists as in
 * config.json; n_upsample / n_resnets are their lengths. */
#define DIFFUSERS_MAX_VOCODER 8
struct ltx2_vocoder_config {
	int in_channels;		/* 128 (= mel channels x mel bins) */
	int hidden_channels;		/* 1024; halved by every upsampler */
	int out_channels;		/* 2 */
	int n_upsample;
	int upsample_kernel_sizes[DIFFUSERS_MAX_VOCODER];	/* 16,15,8,4,4 */
	int upsample_factors[DIFFUSERS_MAX_VOCODER];		/* 6,5,2,2,2 */
	int n_resnets;			/* ResBlocks per upsampler */
	int resnet_kernel_sizes[DIFFUSERS_MAX_VOCODER];		/* 3,7,11 */
	int n_resnet_dilations[DIFFUSERS_MAX_VOCODER];
	int resnet_dilations[DIFFUSERS_MAX_VOCODER][DIFFUSERS_MAX_VOCODER];	/* [1,3,5] x3 */
	char act_fn[16];		/* "leaky_relu", "snakebeta" or "snake" */
	double leaky_relu_negative_slope;	/* 0.1 */
	int antialias;			/* false (true needs snake/snakebeta) */
	int antialias_ratio;		/* 2: AntiAliasAct1d's up/down ratio */
	int antialias_kernel_size;	/* 12: its Kaiser-sinc filters' taps */
	char final_act_fn[16];		/* "tanh", "clamp" or "" (null) */
	int final_bias;			/* true */
	int output_sampling_rate;	/* 24000 (Hz) */
	/* derived */
	int hop;			/* product of upsample_factors: samples per mel frame */
};

/* LTX2VocoderWithBWE (pipelines/ltx2/vocoder.py, LTX-2.3): a stage-1
 * LTX2Vocoder (`vocoder`, upstream's unprefixed keys; defaults hidden 1536,
 * factors 5,2,2,2,2,2, snakebeta, antialias, no final act or bias), the
 * causal STFT / log-mel of its waveform (`mel_stft`), a second LTX2Vocoder
 * on that mel (`bwe_generator`, the bwe_* keys) and a Hann-sinc resampler
 * of the stage-1 waveform by output / input sampling rate. */
struct ltx2_vocoder_bwe_config {
	struct ltx2_vocoder_config vocoder;	/* output_sampling_rate =
						   input_sampling_rate */
	struct ltx2_vocoder_config bwe_generator;
	int filter_length;		/* 512: STFT size (filter_length/2 + 1 bins) */
	int hop_length;			/* 80 */
	int window_length;		/* 512: causal left pad window - hop */
	int num_mel_channels;		/* 64 */
	int input_sampling_rate;	/* 16000 (Hz, stage 1) */
	int output_sampling_rate;	/* 48000 */
};

/* AutoencoderKLLTX2Audio (diffusers autoencoder_kl_ltx2_audio.py), the
 * `audio_vae/` of an LTX2Pipeline folder; decode side (LTX2AudioDecoder). */
enum ltx2_causality {
	LTX2_CAUSAL_NONE,		/* "none" */
	LTX2_CAUSAL_WIDTH,		/* "width" (mel axis) */
	LTX2_CAUSAL_HEIGHT,		/* "height" (time axis), the default */
	LTX2_CAUSAL_WIDTH_COMPAT,	/* "width-compatibility" */
};
struct ltx2_audio_vae_config {
	int base_channels;		/* 128 */
	int output_channels;		/* 2 */
	int n_ch_mult;
	int ch_mult[DIFFUSERS_MAX_BLOCKS];	/* 1, 2, 4 */
	int num_res_blocks;		/* 2 */
	int n_attn_resolutions;		/* 0: null */
	int attn_resolutions[DIFFUSERS_MAX_BLOCKS];
	int in_channels;		/* 2 */
	int resolution;			/* 256 */
	int latent_channels;		/* 8 */
	int norm_group;			/* norm_type: 0 "pixel" (default), 1 "group" */
	enum ltx2_causality causality_axis;	/* "height" */
	int mid_block_add_attention;	/* false */
	int sample_rate;		/* 16000 (Hz) */
	int mel_hop_length;		/* 160 */
	int mel_bins;			/* 64; 0 when null (the input's) */
	int double_z;			/* true: the encoder's conv_out gives
					   2 x latent_channels (mean, logvar) */
};

/* One LTX2ConnectorTransformer1d of LTX2TextConnectors. */
struct ltx2_connector_config {
	int num_attention_heads;	/* 30 */
	int attention_head_dim;		/* 128 */
	int num_layers;			/* 2 */
	int num_learnable_registers;	/* 128; 0 when null (no registers) */
	int gated_attn;			/* false */
};

/* LTX2TextConnectors (diffusers pipelines/ltx2/connectors.py), the
 * `connectors/` of an LTX2Pipeline folder: the text encoder's stacked
 * hidden states to the video and audio streams' caption features. */
struct ltx2_connectors_config {
	int caption_channels;		/* 3840 (Gemma-3-12B hidden size) */
	int text_proj_in_factor;	/* 49 (its layers + the embedding) */
	struct ltx2_connector_config video, audio;	/* video_connector_*, audio_connector_* */
	int connector_rope_base_seq_len;	/* 4096 */
	double rope_theta;		/* 10000 */
	int rope_double_precision;	/* true */
	int rope_split;			/* rope_type: 0 "interleaved" (default), 1 "split" */
	int proj_bias;			/* false */
};

/* LTX2VideoTransformer3DModel (diffusers models/transformers/
 * transformer_ltx2.py), the `transformer/` of an LTX2Pipeline folder: the
 * dual-stream (video + audio) DiT.  Defaults are upstream's __init__'s. */
struct ltx2_transformer_config {
	int in_channels, out_channels;		/* 128, 128 (null: in) */
	int num_attention_heads;		/* 32 */
	int attention_head_dim;			/* 128 */
	int cross_attention_dim;		/* 4096 */
	int vae_scale_factors[3];		/* 8, 32, 32 (RoPE coordinates) */
	int pos_embed_max_pos;			/* 20 */
	int base_height, base_width;		/* 2048, 2048 */
	int gated_attn, cross_attn_mod;		/* false, false */
	int audio_in_channels, audio_out_channels;	/* 128, 128 */
	int audio_num_attention_heads;		/* 32 */
	int audio_attention_head_dim;		/* 64 */
	int audio_cross_attention_dim;		/* 2048 */
	int audio_scale_factor;			/* 4 */
	int audio_pos_embed_max_pos;		/* 20 */
	int audio_sampling_rate, audio_hop_length;	/* 16000, 160 */
	int audio_gated_attn, audio_cross_attn_mod;	/* false, false */
	int num_layers;				/* 48 */
	int ff_gelu_tanh;			/* activation_fn: 1 "gelu-approximate"
						 * (default), 0 "gelu" */
	double norm_eps;			/* 1e-6 */
	int caption_channels;			/* 3840 */
	int attention_bias, attention_out_bias;	/* true, true */
	double rope_theta;			/* 10000 */
	int rope_double_precision;		/* true */
	int causal_offset;			/* 1 */
	int timestep_scale_multiplier;		/* 1000 */
	int cross_attn_timestep_scale_multiplier;	/* 1000 */
	int rope_split;				/* rope_type: 0 "interleaved", 1 "split" */
	int perturbed_attn;			/* false */
	/* derived */
	int inner_dim, audio_inner_dim;		/* heads x head_dim per stream */
	int prompt_modulation;			/* cross_attn_mod or audio_cross_attn_mod */
};

/* AutoencoderKLWan (diffusers models/autoencoders/autoencoder_kl_wan.py),
 * the `vae/` of a WanPipeline folder (Wan 2.1).  Defaults are upstream's
 * __init__'s; lists as in config.json (encoder order; the decoder's
 * temperal_upsample is temperal_downsample reversed). */
#define DIFFUSERS_MAX_WAN_Z 64
struct wan_vae_config {
	int base_dim;			/* 96 */
	int decoder_base_dim;		/* null: base_dim */
	int z_dim;			/* 16 */
	int n_dim_mult;
	int dim_mult[DIFFUSERS_MAX_BLOCKS];	/* 1, 2, 4, 4 */
	int num_res_blocks;		/* 2 */
	/* the encoder's WanAttentionBlock scales (1.0, 0.5, ... per down
	 * level); the decoder never builds them.  Default [] */
	int n_attn_scales;
	double attn_scales[DIFFUSERS_MAX_BLOCKS];
	int n_temperal_downsample;
	int temperal_downsample[DIFFUSERS_MAX_BLOCKS];	/* F, T, T */
	/* the pipeline's latents / (1 / std) + mean before decode
	 * (latents_denormalize_wan, sampler/latents.h); n_latents = z_dim
	 * entries (upstream's 16 Wan 2.1 defaults when absent; the parse
	 * refuses another count, which WanPipeline cannot view) */
	int n_latents;
	double latents_mean[DIFFUSERS_MAX_WAN_Z];
	double latents_std[DIFFUSERS_MAX_WAN_Z];
	int in_channels;		/* 3 */
	int out_channels;		/* 3 */
	int scale_factor_temporal;	/* 4 (the pipeline's vae_scale_factor_temporal) */
	int scale_factor_spatial;	/* 8 */
	/* derived from the blocks: 2^(len(dim_mult) - 1) and 2^(true
	 * entries of temperal_downsample[0 .. len(dim_mult) - 2]) */
	int spatial_ratio, temporal_ratio;
};

/* WanTransformer3DModel (diffusers models/transformers/transformer_wan.py),
 * the `transformer/` of a WanPipeline folder (Wan 2.1 / 2.2 text-to-video).
 * Defaults are upstream's __init__'s. */
struct wan_transformer_config {
	int patch_size[3];			/* 1, 2, 2 (t, h, w) */
	int num_attention_heads;		/* 40 */
	int attention_head_dim;			/* 128 (even: RoPE pairs) */
	int in_channels, out_channels;		/* 16, 16 (null / 0: in) */
	int text_dim;				/* 4096 (UMT5 hidden size) */
	int freq_dim;				/* 256 (even) */
	int ffn_dim;				/* 13824 */
	int num_layers;				/* 40 */
	int cross_attn_norm;			/* true: blocks' norm2 with weights */
	double eps;				/* 1e-6 */
	int rope_max_seq_len;			/* 1024: the RoPE tables' rows */
	/* qk_norm is read and has no effect: upstream's WanAttention always
	 * builds norm_q / norm_k (RMSNorm across heads, with weights).
	 * image_dim, added_kv_proj_dim and pos_embed_seq_len (image-to-video)
	 * must be null. */
	/* derived */
	int inner_dim;				/* heads x head_dim */
	int rope_dim[3];			/* t, h, w: d - 4(d//6), 2(d//6), 2(d//6) */
	int patch_volume;			/* p_t x p_h x p_w */
};

/* transformers T5Config, as T5EncoderModel uses it. */
struct t5_config {
	int vocab_size;			/* 32128 */
	int d_model;			/* 512 */
	int d_kv;			/* 64 */
	int d_ff;			/* 2048 */
	int num_layers;			/* 6 */
	int num_heads;			/* 8 */
	int relative_attention_num_buckets;	/* 32 */
	int relative_attention_max_distance;	/* 128 */
	double layer_norm_epsilon;	/* 1e-6 */
	char feed_forward_proj[32];	/* "relu" */
	int is_gated_act;		/* from feed_forward_proj ("gated-..."), or the key */
	char dense_act_fn[32];		/* "relu"; "gelu_new" for gated-gelu, or the key */
	int pad_token_id;		/* 0 */
	int eos_token_id;		/* 1 */
};

/* T5Tokenizer / T5TokenizerFast folder: files only; the text module loads
 * them.  Paths are NULL when the file is absent. */
struct t5_tokenizer_files {
	char class_name[64];		/* from model_index / tokenizer_config */
	char *dir;
	char *spiece_model;		/* <dir>/spiece.model */
	char *tokenizer_json;		/* <dir>/tokenizer.json */
	char *tokenizer_config;		/* <dir>/tokenizer_config.json */
	int64_t model_max_length;	/* tokenizer_config, else 512; huge values kept */
	int extra_ids;			/* 100 */
	int legacy;			/* 1 */
};

/* One component entry: the folder and the class model_index.json names. */
struct diffusers_component {
	int present;			/* 0 when absent or [null, null] */
	char library[32];		/* "diffusers", "transformers" */
	char class_name[64];
	char *dir;			/* component folder (override or <root>/<name>) */
	char *config_path;		/* config.json / scheduler_config.json / NULL */
};

/* Folders that replace one component each (manifest keys transformer:,
 * vae:, text_encoder:, tokenizer:, scheduler:); NULL = from the model. */
struct diffusers_overrides {
	const char *transformer, *vae, *text_encoder, *tokenizer, *scheduler;
};

struct diffusers_model {
	char *root;
	char pipeline_class[64];	/* "LTXPipeline" */
	struct diffusers_component transformer, vae, text_encoder, tokenizer, scheduler;
	struct ltxv_transformer_config transformer_config;
	struct ltxv_vae_config vae_config;
	struct t5_config text_encoder_config;	/* valid when text_encoder.present */
	struct t5_tokenizer_files tokenizer_files;	/* valid when tokenizer.present */
};

/*
 * The files of one component folder, as the upstream savers write them and
 * as diffusers_open and the safetensors set reader (st_set_open) read them:
 *   config    the config file (diffusers CONFIG_NAME "config.json", the
 *             scheduler's SCHEDULER_CONFIG_NAME "scheduler_config.json"),
 *             NULL for a tokenizer
 *   weights   the weights' base name: "<weights>.safetensors", or a
 *             "<weights>.safetensors.index.json" whose weight_map names the
 *             shards (diffusers SAFETENSORS_WEIGHTS_NAME
 *             "diffusion_pytorch_model", transformers SAFE_WEIGHTS_NAME
 *             "model"); NULL when the component has none
 *   required  other files it must have (NULL-terminated; the tokenizer's
 *             spiece.model)
 *   optional  other files it may have, that the model identity counts when
 *             present (NULL-terminated)
 * A component name other than the five of LTXPipeline (an extra one such
 * as latent_upsampler) has the layout of a diffusers ModelMixin: config.json
 * and diffusion_pytorch_model weights.  A download (net/layout.h) fetches
 * exactly these files.  Static; never NULL.
 */
struct diffusers_layout {
	const char *config;
	const char *weights;
	const char *const *required;
	const char *const *optional;
};
const struct diffusers_layout *diffusers_component_layout(const char *name);

/* The file every pipeline folder has at its top. */
#define DIFFUSERS_MODEL_INDEX "model_index.json"

/*
 * An LTX2Pipeline folder (diffusers pipelines/ltx2/pipeline_ltx2.py): the
 * component folders model_index.json names (or the overrides give) and the
 * configs parsed here.  The transformer's and the video VAE's configs are
 * read by their own modules from transformer.dir / vae.dir.  A text
 * encoder (Gemma 3) may be listed; latentq does not run it, so such a job
 * needs prompt_embeds (preflight says so).  Owns its strings: free with
 * diffusers_ltx2_free.
 */
struct diffusers_ltx2_model {
	char *root;
	struct diffusers_component transformer, vae, audio_vae, vocoder,
	    connectors, text_encoder, tokenizer, scheduler;
	struct ltx2_audio_vae_config audio_vae_config;
	/* an LTX2Vocoder's config, or an LTX2VocoderWithBWE's stage-1
	 * vocoder's (vocoder_bwe set, its whole config beside) */
	struct ltx2_vocoder_config vocoder_config;
	int vocoder_bwe;
	struct ltx2_vocoder_bwe_config vocoder_bwe_config;
	/* the waveform the vocoder gives: its output_sampling_rate (the
	 * BWE's) and out_channels (Hz, channels) */
	int audio_sample_rate, audio_channels;
	struct ltx2_connectors_config connectors_config;
};

/*
 * The pipeline class a folder's model_index.json names ("LTXPipeline",
 * "LTX2Pipeline", ...) into out[n]; LQ-MODEL-001 when the index cannot be
 * read or names none.
 */
enum lq_status diffusers_pipeline_class(const char *dir, char *out, size_t n,
    struct lq_error *err);

/*
 * Opens an LTX2Pipeline folder: model_index.json's _class_name must be
 * LTX2Pipeline (LQ-MODEL-002 otherwise); transformer
 * (LTX2VideoTransformer3DModel), vae (AutoencoderKLLTX2Video), audio_vae,
 * vocoder, connectors and scheduler are required (LQ-MODEL-005), each of
 * the class upstream's pipeline takes (LQ-MODEL-002); the audio VAE,
 * vocoder (LTX2Vocoder or LTX2VocoderWithBWE) and connectors configs
 * are parsed (their diffusers_parse_* errors) and the scheduler's class
 * checked.  Overrides as for
 * diffusers_open (transformer, vae, text_encoder, tokenizer, scheduler).
 * On failure *out is NULL.
 */
enum lq_status diffusers_open_ltx2(const char *dir,
    const struct diffusers_overrides *ov, struct diffusers_ltx2_model **out,
    struct lq_error *err);
void diffusers_ltx2_free(struct diffusers_ltx2_model *m);

/*
 * A WanPipeline folder (diffusers pipelines/wan/pipeline_wan.py, Wan 2.1
 * text-to-video): the component folders model_index.json names (or the
 * overrides give).  The transformer's and the VAE's configs are read by
 * their own modules (nn/wan_transformer.h, nn/wan_vae.h) from
 * transformer.dir / vae.dir, the scheduler's by sampler/unipc.h.  A text
 * encoder (UMT5) may be listed; latentq does not run it, so a job needs
 * prompt_embeds (preflight says so).  Owns its strings: free with
 * diffusers_wan_free.
 */
struct diffusers_wan_model {
	char *root;
	struct diffusers_component transformer, vae, text_encoder, tokenizer,
	    scheduler;
};

/* model_index.json's pipeline class of a Wan folder. */
#define DIFFUSERS_WAN_PIPELINE "WanPipeline"

/*
 * Opens a WanPipeline folder: model_index.json's _class_name must be
 * WanPipeline (LQ-MODEL-002 otherwise); transformer (WanTransformer3DModel),
 * vae (AutoencoderKLWan) and scheduler (UniPCMultistepScheduler) are
 * required (LQ-MODEL-005), each of the class upstream's pipeline takes
 * (LQ-MODEL-002); text_encoder (UMT5EncoderModel) and tokenizer may be
 * absent.  What latentq does not implement is refused by name
 * (LQ-MODEL-006): Wan 2.2's second expert (transformer_2 listed, or
 * boundary_ratio set) and expand_timesteps (Wan 2.2 TI2V).  Overrides as
 * for diffusers_open.  Sets transformer/vae/scheduler config_path.  On
 * failure *out is NULL.
 */
enum lq_status diffusers_open_wan(const char *dir,
    const struct diffusers_overrides *ov, struct diffusers_wan_model **out,
    struct lq_error *err);
void diffusers_wan_free(struct diffusers_wan_model *m);

/*
 * Opens a diffusers folder: reads model_index.json (LTXPipeline only), each
 * component's config, applies overrides.  transformer and vae are required;
 * text_encoder and tokenizer may be absent ([null, null]: prompt embeddings
 * are then supplied by the job); the scheduler config path is recorded and
 * its class checked (FlowMatchEulerDiscreteScheduler), the sampler module
 * parses it.  An override folder need not be listed in model_index.json; its
 * class is read from its config's "_class_name" / "architectures".
 * On failure returns LQ_FAILED, *out NULL, err as above.
 */
enum lq_status diffusers_open(const char *dir, const struct diffusers_overrides *ov,
    struct diffusers_model **out, struct lq_error *err);
void diffusers_free(struct diffusers_model *m);

/*
 * Parse one config (JSON object already read; `path` names it in errors).
 * Absent keys get upstream defaults; derived fields are computed; a wrong
 * class (_class_name present and not the expected one) is refused.
 */
enum lq_status diffusers_parse_transformer(const cJSON *cfg, const char *path,
    struct ltxv_transformer_config *out, struct lq_error *err);
enum lq_status diffusers_parse_vae(const cJSON *cfg, const char *path,
    struct ltxv_vae_config *out, struct lq_error *err);
/* Checks what upstream's __init__ refuses or its forward cannot run:
 * dims 2 or 3, some upsampling, mid_channels a multiple of GroupNorm's 32
 * groups, no temporal upsampling with dims 2 (LQ-MODEL-003 naming the
 * key). */
enum lq_status diffusers_parse_latent_upsampler(const cJSON *cfg,
    const char *path, struct ltxv_upsampler_config *out,
    struct lq_error *err);
/* LTX2Vocoder's config: what upstream's __init__ refuses (list lengths
 * LQ-MODEL-004, act_fn, final_act_fn, too few channels for the stages
 * LQ-MODEL-003) and what latentq does not implement, named (LQ-MODEL-006:
 * antialias with leaky_relu, whose wrappers upstream nests).  The LTX-2.3
 * LTX2VocoderWithBWE class is refused (LQ-MODEL-002): its config is
 * diffusers_parse_ltx2_vocoder_bwe's. */
enum lq_status diffusers_parse_ltx2_vocoder(const cJSON *cfg,
    const char *path, struct ltx2_vocoder_config *out,
    struct lq_error *err);
/* Whether a vocoder config's _class_name is LTX2VocoderWithBWE. */
int diffusers_ltx2_vocoder_is_bwe(const cJSON *cfg);
/* LTX2VocoderWithBWE's config: both LTX2Vocoders' keys checked as
 * diffusers_parse_ltx2_vocoder (the BWE one's named bwe_*), and what the
 * wrapper cannot run (LQ-MODEL-003): bwe_in_channels other than
 * out_channels x num_mel_channels, an output rate not an integer multiple
 * of the input rate, BWE upsampling other than hop_length x that ratio,
 * window_length below hop_length. */
enum lq_status diffusers_parse_ltx2_vocoder_bwe(const cJSON *cfg,
    const char *path, struct ltx2_vocoder_bwe_config *out,
    struct lq_error *err);
/* AutoencoderKLLTX2Audio's config: what upstream's __init__ refuses
 * (causality_axis other than none / width / height / width-compatibility,
 * norm_type other than pixel / group, GroupNorm with a causal axis or
 * channels not a multiple of 32: LQ-MODEL-003 naming the key). */
enum lq_status diffusers_parse_ltx2_audio_vae(const cJSON *cfg,
    const char *path, struct ltx2_audio_vae_config *out,
    struct lq_error *err);
/* LTX2TextConnectors' config: what upstream refuses (rope_type other than
 * interleaved / split) or cannot run (a connector's heads x head_dim other
 * than caption_channels) is LQ-MODEL-003; what latentq does not implement
 * yet, named, LQ-MODEL-006: per_modality_projections true (LTX-2.3).
 * causal_temporal_positioning is read and has no
 * effect, as upstream (the connector only stores it). */
enum lq_status diffusers_parse_ltx2_connectors(const cJSON *cfg,
    const char *path, struct ltx2_connectors_config *out,
    struct lq_error *err);
/* LTX2VideoTransformer3DModel's config: what upstream refuses (qk_norm,
 * rope_type, LQ-MODEL-003) or cannot run (caption projections, text
 * cross-attention or a2v RoPE of mismatched widths, split-RoPE tables that
 * do not divide by the heads: LQ-MODEL-003 naming the key), and what
 * latentq does not implement yet, named, LQ-MODEL-006: the LTX-2.3/2.5
 * options use_prompt_embeddings false (per-modality projections in the
 * connectors), ff_bias / audio_ff_bias false, use_prompt_adaln_single
 * false; patch sizes other than 1, norm_elementwise_affine true,
 * activation_fn other than gelu-approximate / gelu, head dims over the
 * attention kernel's 256.  use_keyframes_abs_pos_embedding is read and
 * has no effect (upstream's forward does not use the weight). */
enum lq_status diffusers_parse_ltx2_transformer(const cJSON *cfg,
    const char *path, struct ltx2_transformer_config *out,
    struct lq_error *err);
/* AutoencoderKLWan's config: what upstream's __init__, forward or
 * WanPipeline cannot run (LQ-MODEL-003 / -004 naming the key: a
 * temperal_downsample shorter than len(dim_mult) - 1, over
 * DIFFUSERS_MAX_WAN_Z latent channels, latents_mean / latents_std of
 * another length than z_dim, latents_std with a zero) and what latentq does not implement, named
 * (LQ-MODEL-006: is_residual true and patch_size other than null / 1, the
 * Wan 2.2 TI2V VAE).  attn_scales are kept for the encoder, which refuses
 * the ones upstream's encode cannot call. */
enum lq_status diffusers_parse_wan_vae(const cJSON *cfg, const char *path,
    struct wan_vae_config *out, struct lq_error *err);
/* 1 when `cfg` is an LTX-2 transformer's config: _class_name
 * LTX2VideoTransformer3DModel, or no class and LTX-2-only keys
 * (audio_in_channels, audio_num_attention_heads). */
int diffusers_is_ltx2_transformer(const cJSON *cfg);
/* WanTransformer3DModel's config: what upstream refuses or cannot run
 * (attention_head_dim odd: get_1d_rotary_pos_embed asserts; a patch_size
 * that is not 3 integers >= 1: LQ-MODEL-003 naming the key), and what
 * latentq does not implement, named, LQ-MODEL-006: image-to-video
 * (image_dim, added_kv_proj_dim, pos_embed_seq_len not null), an odd
 * freq_dim (upstream zero-pads the sinusoids), head dims over the
 * attention kernel's 256. */
enum lq_status diffusers_parse_wan_transformer(const cJSON *cfg,
    const char *path, struct wan_transformer_config *out,
    struct lq_error *err);
/* 1 when `cfg` is a Wan transformer's config: _class_name
 * WanTransformer3DModel, or no class and Wan-only keys (freq_dim with
 * ffn_dim or text_dim). */
int diffusers_is_wan_transformer(const cJSON *cfg);
enum lq_status diffusers_parse_t5(const cJSON *cfg, const char *path, struct t5_config *out,
    struct lq_error *err);
/* Reads tokenizer_config.json (if any) and finds the files in `dir`; the
 * struct's strings are owned by it: free with diffusers_tokenizer_free. */
enum lq_status diffusers_parse_tokenizer(const char *dir, struct t5_tokenizer_files *out,
    struct lq_error *err);
void diffusers_tokenizer_free(struct t5_tokenizer_files *t);

/* Same from a file path (reads and parses the JSON). */
enum lq_status diffusers_load_json(const char *path, cJSON **out, struct lq_error *err);

/*
 * The config.json diffusers / transformers would write for a config (every
 * key save_pretrained writes, with "_class_name"/"_diffusers_version" or
 * "architectures"/"model_type"/"transformers_version").  Caller frees with
 * cJSON_Delete.  Used by `model synth`.
 */
cJSON *diffusers_transformer_to_json(const struct ltxv_transformer_config *c);
cJSON *diffusers_vae_to_json(const struct ltxv_vae_config *c);
cJSON *diffusers_t5_to_json(const struct t5_config *c);

#endif
