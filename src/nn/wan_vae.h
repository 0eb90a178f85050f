/*
 * wan_vae.h — the Wan 2.1 VAE on Vulkan, as diffusers' AutoencoderKLWan
 * computes decode and encode without tiling or slicing
 * (models/autoencoders/autoencoder_kl_wan.py: WanCausalConv3d, WanRMS_norm,
 * WanResample, WanResidualBlock, WanAttentionBlock, WanMidBlock, WanUpBlock,
 * WanDecoder3d, WanEncoder3d; vae.py DiagonalGaussianDistribution through
 * ltxv_latent_dist).
 *
 * Both halves run chunk by chunk as upstream does: the decoder once per
 * latent frame (chunk 0 gives 1 frame, every later one temporal_ratio
 * frames: T = 1 + temporal_ratio * (F - 1)), the encoder on input frames
 * 1, then 4, 4, ... (frames past 1 + 4k are dropped, as upstream).  Every
 * causal 3-D convolution keeps the last two input frames of the previous
 * chunk as its left temporal padding (zeros before the first), the
 * temporal upsamplers skip chunk 0 (frame 0 is never time-upsampled), the
 * temporal downsamplers keep one frame.  Activations are a chunk's only,
 * so a long video needs no more device memory than a 1 + temporal_ratio
 * frame one (the caches excepted, two frames per convolution).  The mid
 * block's attention is ops_attention up to 256 channels, else (or with
 * LATENTQ_NN_UNFUSED_ATTENTION=1, ltxv_attention_opts) matrix products
 * and a softmax, one frame's [H*W, H*W] scores at a time.
 *
 * Use (the Wan render, wan-pipe):
 *   wan_vae_load(ctx, "model/vae", &vae, &err);
 *   wan_vae_output_shape(wan_vae_config(vae), z_shape, out_shape);
 *   wan_vae_decode(vae, &z, &sample, NULL, &err);     (device tensors)
 *   or wan_vae_decode_host(vae, z, z_shape, sample, &err);   (host arrays)
 *   wan_vae_free(vae);
 * z is what upstream passes to vae.decode: the pipeline's latents already
 * de-normalised (sampler/latents.h latents_denormalize_wan: latents /
 * (1 / latents_std) + latents_mean, per channel, from the config); decode
 * does not apply them.
 * The sample is clamped to [-1, 1] (upstream's decode does).
 *
 * Ownership: each half owns its weights (decoder.* + post_quant_conv.*,
 * or encoder.* + quant_conv.*, uploaded as stored), its activation pool
 * (sized for the call's shape, kept for later calls of the same or a
 * smaller one) and its command recording.  Inputs and outputs are
 * caller-owned; the gpu context must outlive the halves.
 */
#ifndef LQ_NN_WAN_VAE_H
#define LQ_NN_WAN_VAE_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "gpu/gpu.h"
#include "model/diffusers.h"
#include "nn/dump.h"

struct nn_plan_bytes;
struct nn_weights_layout;
struct device_caps;

struct wan_vae;
struct wan_vae_encoder;

/* 1 when `dir`/config.json names _class_name AutoencoderKLWan (an
 * unreadable config is left to the caller's loader to report). */
int wan_vae_is_wan(const char *dir);

/*
 * Reads `dir`/config.json (diffusers_parse_wan_vae) and uploads the
 * decoder's weights.  Errors: LQ_FAILED with the config's LQ-MODEL-00x,
 * LQ-NN-WMISS / LQ-NN-WSHAPE naming a weight, safetensors codes; LQ_RETRY
 * on device OOM.  On error *out is NULL and nothing is left allocated.
 */
enum lq_status wan_vae_load(struct gpu_ctx *ctx, const char *dir,
    struct wan_vae **out, struct lq_error *err);
void wan_vae_free(struct wan_vae *vae);

/* The parsed config (borrowed). */
const struct wan_vae_config *wan_vae_config(const struct wan_vae *vae);

/*
 * Shape of decoding z [B, z_dim, F, H, W]:
 * [B, out_channels, 1 + temporal_ratio * (F - 1), H * spatial_ratio,
 * W * spatial_ratio].  Pure.
 */
void wan_vae_output_shape(const struct wan_vae_config *c, const int64_t z[5],
    int64_t out[5]);

/*
 * AutoencoderKLWan.decode(z).sample: z [B, z_dim, F, H, W] f32 contiguous
 * on the device, sample (wan_vae_output_shape, f32 contiguous) written
 * clamped to [-1, 1].  Runs post_quant_conv on the whole latent, then the
 * decoder once per latent frame with the feature caches, submitting and
 * waiting per chunk.  With `dump` also hands over post_quant_conv
 * [B, z_dim, F, H, W] and decoder_chunk<i>_preclamp (chunk i's frames
 * before the clamp).  Errors: LQ_FAILED LQ-NN-SHAPE for a z of another rank
 * or channel count; LQ_RETRY on device OOM; device errors from
 * gpu_cmd_submit.
 */
enum lq_status wan_vae_decode(struct wan_vae *vae, const struct gpu_tensor *z,
    const struct gpu_tensor *sample, const struct nn_dump *dump,
    struct lq_error *err);

/*
 * wan_vae_decode on host arrays: z [B, z_dim, F, H, W] row-major f32 (the
 * de-normalised latents) into `sample` (caller-allocated, the
 * wan_vae_output_shape's elements, [-1, 1]).  Creates the z and sample
 * device buffers for the call (wan_vae_plan's io), frees them after.
 * Errors as wan_vae_decode.
 */
enum lq_status wan_vae_decode_host(struct wan_vae *vae, const float *z,
    const int64_t z_shape[5], float *sample, struct lq_error *err);

/*
 * The memory plan (nn/plan.h) of one decode of z [B, z_dim, F, H, W]:
 * weights as `w` packs them (decoder.* and post_quant_conv.* resident),
 * the activation pool exactly as wan_vae_decode sizes it on `caps`' pool
 * chunks (the whole post_quant_conv output, the feature caches, one
 * chunk's activations), the latent and sample buffers a caller makes, and
 * the sample read back as f32 on the host.  Pure.
 */
void wan_vae_plan(const struct wan_vae_config *c,
    const struct nn_weights_layout *w, const struct device_caps *caps,
    int B, int F, int H, int W, struct nn_plan_bytes *out);

/* Device bytes: weights, and the activation pool's capacity and peak. */
void wan_vae_memory(const struct wan_vae *vae, size_t *weights,
    size_t *pool_capacity, size_t *pool_peak);

/*
 * The encoder half: `dir`/config.json and encoder.* + quant_conv.*.
 * Errors as wan_vae_load, and LQ-MODEL-006 for attn_scales that put a
 * WanAttentionBlock into the down blocks (upstream's chunked encode calls
 * it with the feature cache, which it does not take).
 */
enum lq_status wan_vae_encoder_load(struct gpu_ctx *ctx, const char *dir,
    struct wan_vae_encoder **out, struct lq_error *err);
void wan_vae_encoder_free(struct wan_vae_encoder *enc);
const struct wan_vae_config *wan_vae_encoder_config(
    const struct wan_vae_encoder *enc);

/*
 * Shape of the latent (mean) of encoding x [B, in_channels, T, H, W]:
 * [B, z_dim, F', H', W'] with F' = the encoder's frames over the
 * 1 + 4 * ((T - 1) / 4) frames upstream reads.  Errors (LQ_FAILED,
 * LQ-NN-SHAPE, naming the dimension and the rule): another rank or channel
 * count, a downsampler receiving fewer than 2 rows / columns, a temporal
 * downsampler receiving fewer than 2 frames of a chunk.
 */
enum lq_status wan_vae_encoder_latent_shape(const struct wan_vae_encoder *enc,
    const int64_t x[5], int64_t out[5], struct lq_error *err);

/*
 * AutoencoderKLWan._encode: x [B, in_channels, T, H, W] f32 on the device
 * (values in [-1, 1]) to `parameters`, host f32 [B, 2 z_dim, F', H', W']
 * (quant_conv's output: [mean | logvar] before the clamp; ltxv_latent_dist
 * gives the distribution).  With `dump` also hands over encoder_chunk<i>
 * (the encoder's output of chunk i, before quant_conv) and quant_conv.
 * Errors: those of wan_vae_encoder_latent_shape, LQ_RETRY on OOM, device
 * errors.
 */
enum lq_status wan_vae_encode(struct wan_vae_encoder *enc,
    const struct gpu_tensor *x, float *parameters, const struct nn_dump *dump,
    struct lq_error *err);

void wan_vae_encoder_memory(const struct wan_vae_encoder *enc,
    size_t *weights, size_t *pool_capacity, size_t *pool_peak);

#endif
