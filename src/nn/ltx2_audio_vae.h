/*
 * ltx2_audio_vae.h — LTX-2's audio VAE decoder on Vulkan: audio latents
 * [B, latent_channels, L, M] to a mel spectrogram [B, output_channels,
 * 4L - 3, mel_bins], as diffusers' autoencoder_kl_ltx2_audio.py
 * AutoencoderKLLTX2Audio.decode (LTX2AudioDecoder.forward) computes it:
 * conv_in -> mid (resnet, [attention], resnet) -> levels from the coarsest
 * (resnets, [attention], nearest x2 upsample + causal conv) -> norm_out ->
 * SiLU -> conv_out -> crop / zero-pad to the target size.
 *
 * Use:
 *   ltx2_audio_vae_load(ctx, "model/audio_vae", &v, &err);
 *   ltx2_audio_vae_output_shape(v, z_shape, out_shape);
 *   ltx2_audio_vae_decode(v, &z, &mel, NULL, &err);
 *   ltx2_audio_vae_free(v);
 *
 * Ownership: the decoder owns its weights (the decoder.* tensors only; the
 * encoder's are not uploaded), its activation pool (sized per call, kept
 * for the next call of the same or a smaller shape) and its command
 * recording; tensors passed in are caller-owned.
 */
#ifndef LQ_NN_LTX2_AUDIO_VAE_H
#define LQ_NN_LTX2_AUDIO_VAE_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "gpu/gpu.h"
#include "model/diffusers.h"
#include "nn/dump.h"

struct nn_plan_bytes;
struct nn_weights_layout;

struct ltx2_audio_vae;

/*
 * Reads `dir`/config.json (diffusers_parse_ltx2_audio_vae: LQ-MODEL-003
 * naming the key for a config upstream refuses) and uploads the decoder's
 * weights (LQ-NN-WMISS / LQ-NN-WSHAPE naming the tensor).  LQ_RETRY on
 * device OOM.  On error *out is NULL.
 */
enum lq_status ltx2_audio_vae_load(struct gpu_ctx *ctx, const char *dir,
    struct ltx2_audio_vae **out, struct lq_error *err);

void ltx2_audio_vae_free(struct ltx2_audio_vae *v);

const struct ltx2_audio_vae_config *ltx2_audio_vae_config(
    const struct ltx2_audio_vae *v);

/*
 * Decoded shape for z [B, latent_channels, L, M]: [B, output_channels,
 * max(4L - 3, 1), mel_bins (M when mel_bins is null)] — upstream's target,
 * from the hard-coded LATENT_DOWNSAMPLE_FACTOR 4 whatever the number of
 * levels (the decoder's own output is cropped or zero-padded to it).
 */
void ltx2_audio_vae_output_shape(const struct ltx2_audio_vae *v,
    const int64_t z[4], int64_t out[4]);
/* The same from the config alone (preflight, the render's plan). */
void ltx2_audio_vae_mel_shape(const struct ltx2_audio_vae_config *c,
    const int64_t z[4], int64_t out[4]);

/*
 * The memory plan (nn/plan.h) of one ltx2_audio_vae_decode of z
 * [B, latent_channels, L, M] from the config alone: weights as `w` lays
 * them out (the decoder.* tensors; NULL: 0), the activation pool decode
 * creates, and its caller's z and mel buffers as io.
 */
void ltx2_audio_vae_plan(const struct ltx2_audio_vae_config *c,
    const struct nn_weights_layout *w, const int64_t z[4],
    struct nn_plan_bytes *out);

/*
 * AutoencoderKLLTX2Audio.decode(z).sample into `sample` (shape from
 * ltx2_audio_vae_output_shape), both f32 contiguous on the device;
 * records, submits and waits.  With `dump` also hands over decoder.conv_in,
 * decoder.mid.block_1 / attn_1 / block_2, decoder.up.<level>.block.<i>,
 * .attn.<i>, .upsample, decoder.norm_out and decoder.conv_out (before the
 * crop), as upstream's forward hooks name them.  Errors: LQ_FAILED
 * LQ-NN-SHAPE naming the rule for other shapes; LQ_RETRY on device OOM;
 * device errors.
 */
enum lq_status ltx2_audio_vae_decode(struct ltx2_audio_vae *v,
    const struct gpu_tensor *z, const struct gpu_tensor *sample,
    const struct nn_dump *dump, struct lq_error *err);

/* Device bytes: weights, and the activation pool's capacity and peak. */
void ltx2_audio_vae_memory(const struct ltx2_audio_vae *v, size_t *weights,
    size_t *pool_capacity, size_t *pool_peak);

#endif
