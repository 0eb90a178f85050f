/*
 * ltxv_vae_encoder.h — the LTX-Video VAE encoder on Vulkan and its
 * posterior, as diffusers' AutoencoderKLLTXVideo.encode computes them
 * without tiling (models/autoencoders/autoencoder_kl_ltx.py:
 * LTXVideoEncoder3d, LTXVideoDownBlock3D, LTXVideo095DownBlock3D,
 * LTXVideoDownsampler3d, LTXVideoMidBlock3d; models/autoencoders/vae.py:
 * DiagonalGaussianDistribution).  0.9.0 / 0.9.1 encoders (stride-2 conv
 * downsamplers, channel-changing conv_out resnets) and 0.9.5 ones
 * (space-to-depth downsamplers with the channel-averaged residual).
 *
 * Use:
 *   ltxv_vae_encoder_load(ctx, "model/vae", &enc, &err);
 *   ltxv_vae_encoder_latent_shape(enc, x_shape, lat_shape, &err);
 *   ltxv_vae_encode(enc, &x, parameters, NULL, &err);   (host output)
 *   ltxv_latent_dist(parameters, B, C, S, mean, logvar, std);
 *   ltxv_latent_dist_sample(mean, std, noise, n, sample);
 *   ltxv_vae_encoder_free(enc);
 *
 * Ownership: the encoder owns its weights (only `encoder.*` is uploaded,
 * as stored), its activation pool (sized per call, kept for the next one of
 * the same or a smaller shape) and its command recording.  Inputs and
 * outputs are caller-owned; the gpu context must outlive the encoder.
 */
#ifndef LQ_NN_LTXV_VAE_ENCODER_H
#define LQ_NN_LTXV_VAE_ENCODER_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "gpu/gpu.h"
#include "model/diffusers.h"
#include "nn/dump.h"
#include "nn/ltxv_vae.h"

struct ltxv_vae_encoder;

/*
 * Reads `dir`/config.json (an AutoencoderKLLTXVideo folder) and uploads the
 * encoder's weights.  Errors: LQ_FAILED with LQ-NN-CONFIG for a config
 * upstream cannot run (e.g. a 0.9.5 block that changes channels without a
 * space-to-depth downsampler), LQ-NN-WMISS / LQ-NN-WSHAPE for weights,
 * config and safetensors codes; LQ_RETRY on device OOM.  On error *out is
 * NULL and nothing is left allocated.
 */
enum lq_status ltxv_vae_encoder_load(struct gpu_ctx *ctx, const char *dir,
    struct ltxv_vae_encoder **out, struct lq_error *err);

void ltxv_vae_encoder_free(struct ltxv_vae_encoder *enc);

/* The parsed config (borrowed). */
const struct ltxv_vae_config *ltxv_vae_encoder_config(
    const struct ltxv_vae_encoder *enc);

/* Host copies of `latents_mean` / `latents_std` ([latent_channels],
 * borrowed), or NULL when the file lacks them. */
const float *ltxv_vae_encoder_latents_mean(const struct ltxv_vae_encoder *enc);
const float *ltxv_vae_encoder_latents_std(const struct ltxv_vae_encoder *enc);

/*
 * Shape of the latent (mean) of encoding x [B, in_channels, F, H, W]:
 * [B, latent_channels, F', H', W'] as the encoder's blocks produce it
 * (F' = (F-1)/r + 1, H' = H/s, W' = W/s for the compression ratios r, s).
 * Errors (LQ_FAILED, LQ-NN-SHAPE): a rank or channel count other than
 * upstream's, H or W not divisible by the patch size and every
 * downsampler's stride, F not 1 + a multiple of what the temporal
 * downsamplers need (the message names the dimension, the value and the
 * nearest valid ones).
 */
enum lq_status ltxv_vae_encoder_latent_shape(
    const struct ltxv_vae_encoder *enc, const int64_t x[5], int64_t out[5],
    struct lq_error *err);

/*
 * LTXVideoEncoder3d.forward(x) = AutoencoderKLLTXVideo._encode: x
 * [B, in_channels, F, H, W] f32 on the device (values in [-1, 1] as
 * VideoProcessor.preprocess makes them) to `parameters`, host f32
 * [B, 2*latent_channels, F', H', W']: conv_out's C + 1 channels with the
 * last (log-variance) channel repeated C - 1 more times, as upstream
 * concatenates it.  Records, submits and waits.  With `dump` also hands
 * over encoder.conv_in, encoder.down_blocks.<i>, encoder.mid_block,
 * encoder.norm_out (channels-last, as upstream's module sees it) and
 * encoder.conv_out ([B, C+1, ...]).  Errors: those of
 * ltxv_vae_encoder_latent_shape, LQ_RETRY on device OOM, device errors
 * from gpu_cmd_submit.
 */
enum lq_status ltxv_vae_encode(struct ltxv_vae_encoder *enc,
    const struct gpu_tensor *x, float *parameters, const struct nn_dump *dump,
    struct lq_error *err);

/*
 * DiagonalGaussianDistribution(parameters) on the host, float32 as
 * upstream (models/autoencoders/vae.py): for parameters [B, 2C, S]
 * (S = F'*H'*W'), mean = parameters[:, :C], logvar = clamp(parameters[:,
 * C:], -30, 20), std = exp(0.5 * logvar), each [B, C, S].  mode() is the
 * mean.  Any output may be NULL.
 */
void ltxv_latent_dist(const float *parameters, int64_t B, int64_t C,
    int64_t S, float *mean, float *logvar, float *std);

/*
 * DiagonalGaussianDistribution.sample with a given draw:
 *   out = mean + std * noise, n elements (noise = randn_tensor(mean.shape)
 * upstream).  In place ok (out == mean).
 */
void ltxv_latent_dist_sample(const float *mean, const float *std,
    const float *noise, int64_t n, float *out);

/*
 * AutoencoderKLLTXVideo._encode with tiling (tiled_encode,
 * _temporal_tiled_encode): x is a HOST [B, in_channels, F, H, W] array;
 * `parameters` as ltxv_vae_encode's, host [B, 2C, F', H', W'].  The
 * attributes are the decoder's (ltxv_vae.h struct ltxv_vae_tiling, upstream
 * names; NULL: untiled).  Upstream's dispatch: temporal tiles when
 * use_framewise_decoding (there is no separate encode flag upstream) and
 * F > tile_sample_min_num_frames, else spatial tiles when use_tiling and W
 * or H exceeds its sample tile (strict >), else one encoder call.  Tiles
 * start every stride (sample units), spatial tiles of tile_sample_min_*
 * pixels, temporal tiles of tile_sample_min_num_frames + 1 frames (tiles
 * k >= 1 drop their FIRST latent frame); every tile is its own encoder
 * call; blends in latent units (tile_sample_min // ratio -
 * tile_sample_stride // ratio) with the decoder's blend_v / blend_h /
 * blend_t in upstream's order, tiles cropped to the latent stride, the
 * result to H // s x W // s and (F - 1) // r + 1 frames.  Errors: those of
 * ltxv_vae_encode, LQ-NN-TILING for sizes ltxv_vae_tiling_check refuses.
 */
enum lq_status ltxv_vae_encode_tiled(struct ltxv_vae_encoder *enc,
    const float *x, const int64_t x_shape[5],
    const struct ltxv_vae_tiling *tiling, float *parameters,
    struct lq_error *err);

/* Device bytes: weights, and the activation pool's capacity and peak. */
void ltxv_vae_encoder_memory(const struct ltxv_vae_encoder *enc,
    size_t *weights, size_t *pool_capacity, size_t *pool_peak);

#endif
