/*
 * ltxv_vae.h — the LTX-Video VAE decoder on Vulkan, as diffusers'
 * AutoencoderKLLTXVideo.decode (models/autoencoders/autoencoder_kl_ltx.py,
 * LTXVideoDecoder3d) computes it without tiling, and LTX-2's
 * AutoencoderKLLTX2Video.decode (autoencoder_kl_ltx2.py, LTX2VideoDecoder3d:
 * the same blocks with reflect spatial padding, a call-time causal flag
 * and a plain Conv3d shortcut, config.ltx2): conv_in, the mid block,
 * the up blocks (resnets with RMSNorm, channel-changing conv_in resnets,
 * depth-to-space upsamplers incl. the residual / upsample_factor variants),
 * timestep conditioning, noise injection, norm_out, conv_out and the final
 * unpatchify.  0.9.0, 0.9.1 / 0.9.5-style and causal decoders.
 *
 * Use:
 *   ltxv_vae_load(ctx, "model/vae", &vae, &err);
 *   ltxv_vae_reserve(vae, B, F, H, W, &err);        (allocates, once)
 *   ltxv_vae_decode(vae, &args, &sample, NULL, &err);
 *   ltxv_vae_free(vae);
 *
 * The pipeline's pre-decode step (latents_mean / latents_std
 * denormalisation, decode_noise_scale mixing) belongs to the render code;
 * ltxv_vae_latents_mean/_std give the stored buffers for it.
 *
 * Ownership: the decoder owns its weights (only `decoder.*` is uploaded,
 * as stored), its activation pool and its command recording.  Inputs and
 * output are caller-owned; the gpu context must outlive the decoder.
 */
#ifndef LQ_NN_LTXV_VAE_H
#define LQ_NN_LTXV_VAE_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "gpu/gpu.h"
#include "model/diffusers.h"
#include "nn/dump.h"

struct nn_plan_bytes;
struct nn_weights_layout;
struct device_caps;

struct ltxv_vae;

/*
 * Reads `dir`/config.json and uploads the decoder's weights.  Errors:
 * LQ_FAILED (LQ-NN-CONFIG for a config upstream cannot run, e.g. a
 * timestep-conditioned channel-changing up block; LQ-NN-WMISS /
 * LQ-NN-WSHAPE for weights; safetensors codes), LQ_RETRY on device OOM.
 * On error *out is NULL and nothing is left allocated.
 */
enum lq_status ltxv_vae_load(struct gpu_ctx *ctx, const char *dir,
    struct ltxv_vae **out, struct lq_error *err);

void ltxv_vae_free(struct ltxv_vae *vae);

/* The parsed config (borrowed). */
const struct ltxv_vae_config *ltxv_vae_config(const struct ltxv_vae *vae);

/* Host copies of the `latents_mean` / `latents_std` buffers
 * ([latent_channels], borrowed), or NULL when the file lacks them. */
const float *ltxv_vae_latents_mean(const struct ltxv_vae *vae);
const float *ltxv_vae_latents_std(const struct ltxv_vae *vae);

/*
 * Output shape of decoding z [B, latent_channels, F, H, W]:
 * [B, out_channels, (F-1)*2^u + 1, H*2^u*p, W*2^u*p] with u the number of
 * upsampling up blocks and p = patch_size.
 */
void ltxv_vae_output_shape(const struct ltxv_vae *vae, const int64_t z[5],
    int64_t out[5]);

/* Allocates the activation pool for latents [B, C, F, H, W] (a later call
 * with larger shapes reallocates).  LQ_RETRY on device OOM. */
enum lq_status ltxv_vae_reserve(struct ltxv_vae *vae, int B, int F, int H,
    int W, struct lq_error *err);

/*
 * Source of the decoder's injected noise.  Upstream draws
 * torch.randn(H, W) inside each noise-injecting resnet, twice (k = 0 after
 * conv1, k = 1 after conv2), from the global RNG; latentq asks this
 * callback instead, in upstream's call order, with the resnet's module path
 * (e.g. "decoder.up_blocks.0.resnets.1"; the field name
 * `<module>#<k>` of decode.inject_noise.safetensors).  Fill out[height *
 * width] row-major.  A non-OK return aborts the decode with that error.
 */
struct ltxv_vae_noise {
	enum lq_status (*fill)(void *ud, const char *module, int k, int height,
	    int width, float *out, struct lq_error *err);
	void *ud;
};

struct ltxv_vae_decode_args {
	/* [B, latent_channels, F, H, W] f32, contiguous: the exact tensor
	 * upstream passes to vae.decode (already denormalised). */
	const struct gpu_tensor *z;
	/* Host [B] decode timestep on the 0..1 scale (the decoder multiplies
	 * by its timestep_scale_multiplier); required when the config has
	 * timestep_conditioning, ignored otherwise. */
	const float *decode_timestep;
	/* Required when any block injects noise. */
	const struct ltxv_vae_noise *noise;
	/* decode(..., causal=True) of AutoencoderKLLTX2Video: nonzero makes
	 * every conv causal; 0 (upstream's None or False) keeps the
	 * config's decoder_causal (upstream: causal or self.is_causal, so a
	 * causal decoder stays causal).  LTX-Video's decode has no such
	 * argument: leave 0. */
	int causal;
};

/*
 * AutoencoderKLLTXVideo.decode(z, temb).sample into `sample` (shape from
 * ltxv_vae_output_shape, f32 contiguous, not clamped).  Records, submits
 * and waits.  With `dump` also hands over decoder.conv_in,
 * decoder.mid_block(.time_embedder), decoder.up_blocks.<i>
 * (.time_embedder, .upsamplers.0), decoder.norm_out (channels-last
 * [B, F, H, W, C] as LTX-Video's module sees it, [B, C, F, H, W] for
 * LTX-2's PerChannelRMSNorm) and decoder.time_embedder.
 * Errors: LQ_FAILED LQ-NN-SHAPE / LQ-NN-INPUT for bad shapes (a reflect-
 * padded decoder's latent below 2 x 2) or a missing timestep / noise
 * source; device errors from gpu_cmd_submit.
 */
enum lq_status ltxv_vae_decode(struct ltxv_vae *vae,
    const struct ltxv_vae_decode_args *args, const struct gpu_tensor *sample,
    const struct nn_dump *dump, struct lq_error *err);

/*
 * The pipeline's pre-decode step on the host, float32 as upstream
 * (pipelines/ltx/pipeline_ltx.py): LTXPipeline._denormalize_latents,
 *   out = x * latents_std[c] / scaling_factor + latents_mean[c]
 * for x [B, C, S] (S = F*H*W), mean/std [C]; in place ok.
 */
void ltxv_latents_denormalize(const float *x, const float *latents_mean,
    const float *latents_std, double scaling_factor, int64_t B, int64_t C,
    int64_t S, float *out);

/*
 * Timestep-conditioned decoding's noise mix (LTXPipeline.__call__):
 *   z = (1 - s[b]) * x + s[b] * noise   per sample b, x / noise [B, N]
 * with s = decode_noise_scale (defaults to decode_timestep upstream).
 * In place ok (out == x).
 */
void ltxv_latents_mix_noise(const float *x, const float *noise,
    const float *decode_noise_scale, int64_t B, int64_t N, float *out);

/*
 * ---- Tiled and frame-wise decoding ----
 *
 * AutoencoderKLLTXVideo's tiling attributes (autoencoder_kl_ltx.py,
 * __init__ / enable_tiling), under upstream's names.  Sizes are in SAMPLE
 * units (pixels, frames); the latent tile sizes are their floor divisions
 * by the VAE's spatial_compression_ratio / temporal_compression_ratio.
 * use_tiling: spatial tiles (tiled_decode); use_framewise_decoding:
 * temporal tiles (_temporal_tiled_decode), each spatially tiled when
 * use_tiling is also set.
 */
struct ltxv_vae_tiling {
	int use_tiling;
	int use_framewise_decoding;
	int tile_sample_min_height, tile_sample_min_width;
	int tile_sample_min_num_frames;
	int tile_sample_stride_height, tile_sample_stride_width;
	int tile_sample_stride_num_frames;
};

/* Upstream's __init__ values: both flags off, tiles 512 x 512 x 16,
 * strides 448 x 448 x 8. */
void ltxv_vae_tiling_init(struct ltxv_vae_tiling *t);

/*
 * The memory plan of one decode (see nn/plan.h) of latents
 * [B, latent_channels, F, H, W]: weights as `w` packs them (decoder.*),
 * the activation pool exactly as ltxv_vae_reserve sizes it for the
 * largest decoder call `tiling` makes (ltxv_vae_tiling_call; NULL or both
 * switches off: the whole latent) on `caps`' pool chunks, that call's
 * latent and decoded-sample buffers, and on the host the video read back
 * as f32 (two temporal tiles of it with framewise decoding).  Pure.
 */
void ltxv_vae_plan(const struct ltxv_vae_config *c,
    const struct nn_weights_layout *w, const struct device_caps *caps,
    int B, int F, int H, int W, const struct ltxv_vae_tiling *tiling,
    struct nn_plan_bytes *out);

/*
 * Sets one attribute by its upstream name from text: the two flags take
 * true/false (or 1/0), the six sizes a positive integer.  Errors:
 * LQ_FAILED LQ-NN-TILING naming the attribute, the value and the valid
 * names / range; *t is unchanged then.
 */
enum lq_status ltxv_vae_tiling_set(struct ltxv_vae_tiling *t,
    const char *name, const char *value, struct lq_error *err);

/* The attribute names ltxv_vae_tiling_set accepts, NULL-terminated. */
extern const char *const ltxv_vae_tiling_names[];

/*
 * Checks the sizes against a VAE config: every size and stride at least
 * the compression ratio of its axis (a latent stride of 0 would never
 * advance) and no stride larger than its tile (upstream would leave
 * holes).  Errors: LQ_FAILED LQ-NN-TILING with the attribute as field.
 */
enum lq_status ltxv_vae_tiling_check(const struct ltxv_vae_config *c,
    const struct ltxv_vae_tiling *t, struct lq_error *err);

/*
 * One step smaller for a decode that ran out of device memory: halves
 * each tile size and stride (rounded down to a multiple of its ratio, at
 * least the ratio, strides never above their tile) and switches both
 * flags on.  Returns 0 when nothing could shrink any more.
 */
int ltxv_vae_tiling_shrink(const struct ltxv_vae_config *c,
    struct ltxv_vae_tiling *t);

/* A job's `vae_tiling` (latentq-manifest(5)). */
enum ltxv_vae_tiling_mode {
	LTXV_VAE_TILING_AUTO,	/* absent or "auto": the memory plan decides */
	LTXV_VAE_TILING_OFF,	/* "off": untiled (tiled only after an OOM) */
	LTXV_VAE_TILING_SET,	/* a mapping of attributes */
};

/*
 * Reads a job config's vae_tiling value (NULL: absent).  A mapping starts
 * from upstream's default sizes with both flags true and sets the
 * attributes it names (ltxv_vae_tiling_set's names; booleans and
 * integers).  Errors: LQ_FAILED LQ-NN-TILING naming the attribute.
 */
enum lq_status ltxv_vae_tiling_from_json(const cJSON *v,
    enum ltxv_vae_tiling_mode *mode, struct ltxv_vae_tiling *t,
    struct lq_error *err);

/* "untiled", or "spatial 512x512/448x448 temporal 16/8" style text. */
void ltxv_vae_tiling_describe(const struct ltxv_vae_tiling *t, char *buf,
    size_t n);

/*
 * The latent shape of the largest decoder call a decode of z [B, C, F, H,
 * W] with `t` makes (NULL or both switches off: z itself), by the same
 * tile dispatch ltxv_vae_decode_tiled follows: frame ranges of
 * tile_sample_min_num_frames / r + 1 latent frames with
 * use_framewise_decoding, tiles of tile_sample_min_* / ratio with
 * use_tiling, each only when z is larger.  Pure.
 */
void ltxv_vae_tiling_call(const struct ltxv_vae_config *c, const int64_t z[5],
    const struct ltxv_vae_tiling *t, int64_t out[5]);

/*
 * Receives the decoded video in frame order.  `x` points at a host
 * [B, out_channels, x_frames, H_out, W_out] f32 array (borrowed for the
 * call); its first `n` frames are output frames f0 .. f0+n-1, final (not
 * clamped).  Called once with the whole video for an untiled or
 * spatial-only decode, once per temporal tile with framewise decoding.
 * A non-OK return aborts the decode with that error.
 */
struct ltxv_vae_sink {
	enum lq_status (*frames)(void *ud, int64_t f0, int64_t n,
	    const float *x, int64_t x_frames, struct lq_error *err);
	void *ud;
};

/*
 * AutoencoderKLLTXVideo._decode with tiling: z is a HOST [B, C, F, H, W]
 * f32 array (already denormalised / noise-mixed).  Mirrors upstream's
 * dispatch (temporal when use_framewise_decoding and
 * F > tile_sample_min_num_frames // r, else spatial when use_tiling and
 * W or H exceeds its latent tile, else one decoder call), tile origins and
 * sizes (temporal tiles of tile_latent_min_num_frames + 1 latent frames,
 * the last decoded frame of tiles k >= 1 dropped), and blend_v / blend_h /
 * blend_t in place in upstream's order with weights y/E in float32.  Every
 * tile is its own decoder call; its injected noise is asked of
 * args->noise with k counted over the whole call (the tile's call index
 * c gives fields #2c and #2c+1), as the goldens record them; args->z is
 * ignored.  Host memory: two temporal tiles with framewise decoding (plus
 * two rows of spatial tiles); otherwise the whole float video.  Device
 * memory: ltxv_vae_plan.  Errors: those of ltxv_vae_decode and
 * the sink, LQ-NN-TILING for bad sizes; LQ_RETRY on device OOM.
 */
enum lq_status ltxv_vae_decode_tiled(struct ltxv_vae *vae,
    const struct ltxv_vae_decode_args *args, const float *z,
    const int64_t z_shape[5], const struct ltxv_vae_tiling *t,
    const struct ltxv_vae_sink *sink, struct lq_error *err);

/* Device bytes: weights, and the activation pool's capacity and peak. */
void ltxv_vae_memory(const struct ltxv_vae *vae, size_t *weights,
    size_t *pool_capacity, size_t *pool_peak);

#endif
