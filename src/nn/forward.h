/*
 * forward.h — run one model component on named input tensors from
 * safetensors files and write its outputs (and, on request, its
 * intermediates) to a safetensors file.  The engine behind
 * `latentq forward`, and the path the parity tests exercise.
 *
 * Input names are the upstream forward's argument names, as in the
 * goldens' *.inputs.safetensors:
 *   transformer: hidden_states [B,N,C], encoder_hidden_states [B,T,Cc],
 *     timestep [B] (or [1]), encoder_attention_mask [B,T] (optional),
 *     num_frames, height, width (one-element integer tensors),
 *     rope_interpolation_scale [3] (optional; absent = upstream's None)
 *     -> output [B,N,Co]
 *   vae-decoder: z [B,C,F,H,W], decode_timestep (or upstream's name,
 *     temb) [B] or [1] (timestep-conditioned decoders), injected noise `<module>#<k>` [H,W] (decoders
 *     with decoder_inject_noise) -> sample
 *   vae-encoder: sample [B,3,F,H,W] (or `x`, encode's argument name),
 *     posterior_noise [B,C,F',H',W'] (optional) -> parameters, mean,
 *     logvar, std, mode, and sample = mean + std * posterior_noise when
 *     the noise was given
 *   vae-decoder (AutoencoderKLWan, by its config's _class_name):
 *     z [B,z_dim,F,H,W] -> sample (clamped); intermediates post_quant_conv,
 *     decoder_chunk<i>_preclamp
 *   vae-encoder (AutoencoderKLWan): x (or sample) [B,3,T,H,W],
 *     posterior_noise (optional) -> the LTX encoder's outputs (parameters
 *     = quant_conv's [mean | logvar]); intermediates encoder_chunk<i>,
 *     quant_conv
 *   latent-upsampler: hidden_states [B,C,F,H,W] -> output
 *   text-encoder: input_ids [B,L], attention_mask [B,L] (optional)
 *     -> last_hidden_state
 *   vocoder (LTX2Vocoder): mel (or hidden_states) [B,C,T,M] -> waveform
 *     [B,out_channels,samples]
 *   audio-vae-decoder (AutoencoderKLLTX2Audio): z [B,C,L,M] -> sample
 *     [B,output_channels,4L-3,mel_bins]
 *   transformer (LTX2VideoTransformer3DModel, told apart by its config's
 *     _class_name or its audio_* keys): hidden_states [B,N,C],
 *     audio_hidden_states [B,L,Ca], encoder_hidden_states [B,T,Cc],
 *     audio_encoder_hidden_states [B,Ta,Cc], timestep [B] or [B,N],
 *     audio_timestep [B] or [B,L] (optional: timestep), sigma,
 *     audio_sigma [B] (optional as upstream; sigma needed with
 *     cross_attn_mod or use_cross_timestep), encoder_attention_mask
 *     [B,T], audio_encoder_attention_mask [B,Ta] (optional), num_frames,
 *     height, width, audio_num_frames (one-element integers), fps (one
 *     value, default 24.0); --set use_cross_timestep, isolate_modalities,
 *     spatio_temporal_guidance_blocks -> output [B,N,Co], audio_output
 *     [B,L,Cao]
 *   transformer (WanTransformer3DModel, told apart by its config's
 *     _class_name or its freq_dim / ffn_dim keys): hidden_states
 *     [B,C,F,H,W] (latent frames, unpacked), timestep [B] (or [1]),
 *     encoder_hidden_states [B,T,text_dim] (no mask: upstream attends
 *     every row) -> output [B,Co,F,H,W]
 *   connectors (LTX2TextConnectors): text_encoder_hidden_states
 *     [B,T,C*L], attention_mask [B,T] -> video_text_embedding,
 *     audio_text_embedding [B,T,C], attention_mask_out [B,T] (I64)
 * Any float or integer dtype is accepted and converted.  Later --inputs
 * files do not override earlier ones: the first file holding a name wins.
 *
 * Ownership: options are borrowed; nothing is kept after the call.
 */
#ifndef LQ_NN_FORWARD_H
#define LQ_NN_FORWARD_H

#include <stdio.h>

#include "core/error.h"
#include "nn/ltxv_transformer.h"
#include "nn/ltxv_vae.h"
#include "nn/ltx2_connectors.h"
#include "nn/ltx2_transformer.h"

enum nn_component {
	NN_COMPONENT_TRANSFORMER,
	NN_COMPONENT_VAE_DECODER,
	NN_COMPONENT_TEXT_ENCODER,
	NN_COMPONENT_VAE_ENCODER,
	NN_COMPONENT_LATENT_UPSAMPLER,
	NN_COMPONENT_VOCODER,
	NN_COMPONENT_AUDIO_VAE_DECODER,
	NN_COMPONENT_CONNECTORS,
};

struct nn_forward_opts {
	const char *model;		/* component folder or pipeline folder */
	enum nn_component component;
	const char *const *inputs;	/* safetensors paths */
	int ninputs;
	const char *out;		/* output safetensors path */
	int dump_intermediates;
	const char *device;		/* gpu device (NULL: environment) */
	FILE *report;			/* memory report (-v), may be NULL */
	/* transformer: stream the blocks' weights (on), never (off), or
	 * when the resident weights do not fit the device (auto, 0) */
	enum nn_plan_choice weight_streaming;
	/* transformer: its matrix products' operand precision (the job key
	 * `precision`, gpu_cmd_set_precision; 0: f32) */
	enum gpu_precision precision;
	/* VAE decoder: called for EVERY injected-noise draw, in the decoder's
	 * call order (so it can count draws), before the inputs are looked
	 * up; a field the inputs hold then replaces what it wrote.  NULL: a
	 * missing field is an error.  (`latentq forward --seed` passes
	 * latentq's RNG here, as the render code draws it.) */
	const struct ltxv_vae_noise *noise_fallback;
	/* VAE decoder: decode tiled / frame-wise with these attributes
	 * (ltxv_vae_decode_tiled); NULL: one plain decoder call. */
	const struct ltxv_vae_tiling *vae_tiling;
	/* connectors: padding_side and scale_factor (NULL: upstream's
	 * defaults, ltx2_connectors_call_init) */
	const struct ltx2_connectors_call *connectors_call;
	/* LTX-2 transformer: use_cross_timestep, isolate_modalities,
	 * spatio_temporal_guidance_blocks (NULL: upstream's defaults,
	 * ltx2_transformer_call_init); refused for LTX-Video's, naming
	 * ltx2_call_first (the first argument set) */
	const struct ltx2_transformer_call *ltx2_call;
	const char *ltx2_call_first;
};

/* Parses a --component name (nn_component_names lists them); 0 ok, -1
 * unknown. */
int nn_component_parse(const char *name, enum nn_component *out);

/* "transformer, vae-decoder, ...": every component name, for messages.
 * A static string. */
const char *nn_component_names(void);

/*
 * Resolves the component folder (opts->model itself when it holds a
 * config.json, else its transformer/, vae/, text_encoder/,
 * latent_upsampler/, vocoder/, audio_vae/ or connectors/ subfolder),
 * loads the component, reads the inputs, runs it and writes opts->out.
 * Errors: LQ_FAILED with LQ-NN-INPUT (missing/misshapen input, naming it),
 * model / safetensors / config codes, LQ-NN-TEXT when the text encoder is
 * not built in; LQ_RETRY for device loss or OOM.  On error nothing is
 * written at opts->out.
 */
enum lq_status nn_forward_run(const struct nn_forward_opts *opts,
    struct lq_error *err);

#endif
