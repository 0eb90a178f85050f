/*
 * ltxv_upsampler.h — LTX-Video's latent upsampler on Vulkan, as diffusers'
 * LTXLatentUpsamplerModel (pipelines/ltx/modeling_latent_upsampler.py:
 * ResBlock, PixelShuffleND) computes it: initial_conv -> initial_norm ->
 * SiLU -> res_blocks -> upsampler (conv + pixel shuffle) ->
 * post_upsample_res_blocks -> final_conv.  dims 3 (Conv3d, GroupNorm over
 * all frames of a sample) and 2 (every conv a Conv2d on frames folded into
 * the batch); spatial (2x H, W), temporal (2F - 1 frames) or both.
 *
 * Use:
 *   ltxv_upsampler_load(ctx, "model/latent_upsampler", &u, &err);
 *   ltxv_upsampler_output_shape(u, in_shape, out_shape);
 *   ltxv_upsampler_forward(u, &x, &y, NULL, &err);
 *   ltxv_upsampler_free(u);
 *
 * The pipeline's steps around it (denormalisation, AdaIN against the input,
 * tone mapping: LTXLatentUpsamplePipeline) are sampler/latents.h's.
 *
 * Ownership: the upsampler owns its weights, its activation pool (sized per
 * call, kept for the next one of the same or a smaller shape) and its
 * command recording; tensors passed in are caller-owned.
 */
#ifndef LQ_NN_LTXV_UPSAMPLER_H
#define LQ_NN_LTXV_UPSAMPLER_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "gpu/gpu.h"
#include "model/diffusers.h"
#include "nn/dump.h"

struct ltxv_upsampler;

/*
 * Reads `dir`/config.json and uploads the weights.  Errors: LQ_FAILED with
 * LQ-NN-CONFIG naming the field for a config upstream cannot build or run
 * (neither upsampling, mid_channels not a multiple of 32, dims not 2 or 3,
 * dims 2 with temporal_upsample), LQ-NN-WMISS / LQ-NN-WSHAPE, JSON and
 * safetensors codes; LQ_RETRY on device OOM.  On error *out is NULL.
 */
enum lq_status ltxv_upsampler_load(struct gpu_ctx *ctx, const char *dir,
    struct ltxv_upsampler **out, struct lq_error *err);

void ltxv_upsampler_free(struct ltxv_upsampler *u);

const struct ltxv_upsampler_config *ltxv_upsampler_config(
    const struct ltxv_upsampler *u);

/* Output shape for hidden_states [B, in_channels, F, H, W]:
 * [B, in_channels, temporal ? 2F - 1 : F, spatial ? 2H : H,
 * spatial ? 2W : W]. */
void ltxv_upsampler_output_shape(const struct ltxv_upsampler *u,
    const int64_t in[5], int64_t out[5]);

/*
 * LTXLatentUpsamplerModel.forward(x) into y (shape from
 * ltxv_upsampler_output_shape), both f32 contiguous on the device; records,
 * submits and waits.  With `dump` also hands over initial_conv,
 * initial_norm, res_blocks.<i>, upsampler (as upstream's module returns
 * it: [B*F, C, 2H, 2W] for the spatial-only Conv2d upsampler, else
 * [B, C, 2F, ...] before frame 0 is dropped), post_upsample_res_blocks.<i>
 * and final_conv.  Errors: LQ_FAILED LQ-NN-SHAPE for shapes other than the
 * above; LQ_RETRY on device OOM; device errors.
 */
enum lq_status ltxv_upsampler_forward(struct ltxv_upsampler *u,
    const struct gpu_tensor *x, const struct gpu_tensor *y,
    const struct nn_dump *dump, struct lq_error *err);

/* Device bytes: weights, and the activation pool's capacity and peak. */
void ltxv_upsampler_memory(const struct ltxv_upsampler *u, size_t *weights,
    size_t *pool_capacity, size_t *pool_peak);

#endif
