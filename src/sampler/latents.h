/*
 * latents.h — the latent and video tensor plumbing of LTXPipeline
 * (diffusers 58eb52c0, pipelines/ltx/pipeline_ltx.py and
 * video_processor.py): packing to transformer tokens and back, the
 * pre-decode denormalisation and noise mix, and the post-processing to
 * float frames and uint8 pixels.
 *
 * All tensors are dense row-major float32 (uint8 for pixels), in shapes named
 * as upstream names them.  Buffers are caller-owned and borrowed; outputs
 * must not alias inputs unless a function says it works in place.
 * Arithmetic is float32 with one rounding per upstream tensor operation.
 */
#ifndef LQ_SAMPLER_LATENTS_H
#define LQ_SAMPLER_LATENTS_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

/*
 * Unpacked latent geometry [B, C, F, H, W] and the transformer's patch
 * sizes (p over H and W, p_t over F).  F % p_t == H % p == W % p == 0.
 * Packed: [B, S, D] with S = (F/p_t)(H/p)(W/p) tokens, token
 * n = (f'*(H/p) + h')*(W/p) + w' (frame slowest), D = C*p_t*p*p with
 * channel index d = ((c*p_t + dt)*p + dh)*p + dw (c slowest).
 */
struct latents_shape {
	int64_t batch, channels, frames, height, width;
	int64_t patch_size, patch_size_t;
};

/* Tokens S and features D of the packed form. */
int64_t latents_seq_len(const struct latents_shape *sh);
int64_t latents_token_dim(const struct latents_shape *sh);
/* B*C*F*H*W (== B*S*D). */
size_t latents_numel(const struct latents_shape *sh);

/* LTXPipeline._pack_latents: [B, C, F, H, W] -> [B, S, D]. */
void latents_pack(const struct latents_shape *sh, const float *in, float *out);

/* LTXPipeline._unpack_latents: [B, S, D] -> [B, C, F, H, W] (exact
 * inverse of latents_pack). */
void latents_unpack(const struct latents_shape *sh, const float *in,
    float *out);

/*
 * Initial latents from latentq's counter-based noise (rng.h): the normals
 * normal(seed, RNG_PURPOSE_INITIAL_LATENTS, i) for i = 0 .. numel-1 fill
 * the UNPACKED tensor [B, C, F, H, W] in row-major order (as diffusers'
 * prepare_latents draws randn in that shape before packing), which is then
 * packed into `packed` [B, S, D].  Allocates one temporary of numel floats.
 */
void latents_init_noise(const struct latents_shape *sh, uint64_t seed,
    float *packed);

/*
 * LTXConditionPipeline's video_coords for the packed tokens of `sh`
 * (pipelines/ltx/pipeline_ltx_condition.py: _prepare_video_ids with the
 * patch sizes, _scale_video_ids with frame_index 0, then the call's
 * float cast and `* (1.0 / frame_rate)` on the frame axis): for token n
 * of latent grid position (f, h, w) (indices stepping by the patch
 * sizes), out[0][n] = max(f * temporal + 1 - temporal, 0) *
 * (float)(1 / frame_rate), out[1][n] = h * spatial, out[2][n] = w *
 * spatial, float32, [3, S] (every sample of the batch has the same).
 * spatial / temporal are the VAE's compression ratios.
 */
void latents_video_coords(const struct latents_shape *sh, int spatial,
    int temporal, double frame_rate, float *out);

/*
 * Noising of supplied latents (LTXConditionPipeline.prepare_latents with
 * denoise_strength < 1), in place on n values: x = sigma * noise +
 * (1 - sigma) * x with sigma = latent_sigma as float32 (1 - sigma in
 * float32), one rounding per operation.
 */
void latents_noise_to_sigma(float *x, const float *noise, size_t n,
    float sigma);

/*
 * LTXConditionPipeline.add_noise_to_image_conditioning_latents at the start
 * of a step at timestep t (0..1000), in place on packed x [batch, tokens,
 * dim]: the tokens whose conditioning mask (mask [tokens], the same for
 * every sample) is > 1 - 1e-6 become init + noise_scale * noise * (t /
 * 1000)^2 (float32, left to right); init (the latents right after
 * prepare_latents) and noise (this step's randn) are [batch, tokens, dim].
 */
void latents_image_cond_noise(float *x, const float *init, const float *noise,
    const float *mask, size_t batch, size_t tokens, size_t dim,
    double noise_scale, float t);

/* torch.lerp(start, end, weight) on the CPU, float32: start + w (end -
 * start) when |w| < 0.5, else end - (end - start)(1 - w). */
float latents_lerp(float start, float end, float weight);

/*
 * Supplied initial latents (`latents: FILE`, diffusers' latents=): accepts
 * float32 data either packed [B, S, D] (copied as is) or unpacked
 * [B, C, F, H, W] (packed), and writes packed [B, S, D] to `packed`.
 * Any other shape fails with LQ_FAILED, code LQ-LAT-001, a message naming
 * the shape given and the two accepted; `packed` is then untouched.
 */
enum lq_status latents_import(const struct latents_shape *sh, int ndim,
    const int64_t *dims, const float *data, float *packed,
    struct lq_error *err);

/* latents_import's shape rule alone (preflight checks a `latents:` file's
 * header with it): LQ_OK when dims is one of the two accepted shapes, else
 * LQ_FAILED with LQ-LAT-001 as latents_import reports it. */
enum lq_status latents_import_check(const struct latents_shape *sh, int ndim,
    const int64_t *dims, struct lq_error *err);

/*
 * Index of the first NaN or infinity in x[0..n-1], or -1 if all are
 * finite (the per-step guard).
 */
int64_t latents_find_nonfinite(const float *x, size_t n);

/*
 * WanPipeline.__call__'s de-normalisation before vae.decode, in place on
 * [B, C, F, H, W] (sh's patch sizes unused):
 *   latents_std = 1.0 / tensor(vae.config.latents_std)   (float32)
 *   x = x / latents_std[c] + latents_mean[c]              (float32)
 * mean and std have C values, as config.json lists them (Python floats,
 * rounded to float32 as torch.tensor does).
 */
void latents_denormalize_wan(const struct latents_shape *sh, float *x,
    const double *latents_mean, const double *latents_std);

/*
 * LTXPipeline._denormalize_latents, in place on [B, C, F, H, W]:
 * x = x * latents_std[c] / scaling_factor + latents_mean[c]  (float32,
 * three roundings; scaling_factor rounded to float32 as torch does with a
 * Python float).  mean and std have C values (the VAE's latents_mean /
 * latents_std buffers).
 */
void latents_denormalize(const struct latents_shape *sh, float *x,
    const float *latents_mean, const float *latents_std,
    double scaling_factor);

/*
 * The inverse, LTXPipeline._normalize_latents (LTXImageToVideoPipeline's
 * image latent, LTXLatentUpsamplePipeline's output), in place on
 * [B, C, F, H, W]: x = (x - latents_mean[c]) * scaling_factor /
 * latents_std[c] (float32, three roundings).
 */
void latents_normalize(const struct latents_shape *sh, float *x,
    const float *latents_mean, const float *latents_std,
    double scaling_factor);

/*
 * LTXLatentUpsamplePipeline.adain_filter_latent (pipelines/ltx/
 * pipeline_ltx_latent_upsample.py), in place on x [B, C, n]: per (b, c),
 * y = ((x - mean(x)) / std(x)) * std(ref) + mean(ref) with torch.std_mean's
 * unbiased std (N - 1) over all n (resp. n_ref) values of ref [B, C,
 * n_ref] (the denormalised latents before upsampling), the statistics
 * rounded to float32 as torch's 0-d results; then x = torch.lerp(x, y,
 * factor).  Statistics accumulate in double as torch's CPU reduction does.
 */
void latents_adain_filter(float *x, const float *ref, int64_t batch,
    int64_t channels, int64_t n, int64_t n_ref, double factor);

/*
 * LTXLatentUpsamplePipeline.tone_map_latents, in place on n values:
 * s = 0.75 * compression; x *= 1 - 0.8 s * sigmoid(4 s (|x| - 1)).
 */
void latents_tone_map(float *x, size_t n, double compression);

/*
 * Timestep-conditioned decode noise, in place on [B, per_sample]:
 * x = (1 - s[b]) * x + s[b] * noise with s[b] = decode_noise_scale of
 * sample b as a float32 tensor (1 - s in float32), as LTXPipeline does
 * before vae.decode.  noise has the same shape as x.  Upstream's defaults:
 * decode_noise_scale = decode_timestep when None; VAEs without
 * timestep_conditioning get no noise (do not call this).
 */
void latents_mix_noise(float *x, const float *noise, size_t batch,
    size_t per_sample, const float *decode_noise_scale);

/*
 * Video post-processing (VideoProcessor.postprocess_video, output "np"):
 * decoder output raw [B, 3, F, H, W] -> video_np [B, F, H, W, 3] =
 * clamp(x * 0.5 + 0.5, 0, 1).  video_np may be NULL when only pixels are
 * wanted.  video_uint8 (may be NULL) [B, F, H, W, 3] = round(video_np * 255)
 * with float32 multiply and round-half-to-even, as numpy_to_pil.
 */
void latents_postprocess_video(const float *raw, int64_t batch,
    int64_t frames, int64_t height, int64_t width, float *video_np,
    uint8_t *video_uint8);

/* video_uint8 from video_np, n values: (uint8)rint(v * 255.0f). */
void latents_video_to_uint8(const float *video_np, size_t n, uint8_t *out);

/*
 * LTX2Pipeline's audio latent length (pipelines/ltx2/pipeline_ltx2.py,
 * __call__ step 4): round(num_frames / frame_rate * (sampling_rate /
 * hop_length / temporal_compression)) in Python floats, round half to
 * even.  sampling_rate and hop_length are the audio VAE's sample_rate and
 * mel_hop_length; temporal_compression its temporal_compression_ratio (4,
 * LATENT_DOWNSAMPLE_FACTOR).  Returns the audio latent frames L (0 for a
 * clip too short to hold one; the caller refuses that).
 */
int64_t latents_audio_num_frames(int num_frames, double frame_rate,
    int sampling_rate, int hop_length, int temporal_compression);

/*
 * LTX2Pipeline._pack_audio_latents without patches: [B, C, L, M] ->
 * [B, L, C*M] (latents.transpose(1, 2).flatten(2, 3): feature c*M + m,
 * channel slowest, mel fastest).  `out` must not alias `in`.
 */
void latents_pack_audio(const float *in, int64_t B, int64_t C, int64_t L,
    int64_t M, float *out);

/* LTX2Pipeline._unpack_audio_latents, the exact inverse: [B, L, C*M] ->
 * [B, C, L, M]. */
void latents_unpack_audio(const float *in, int64_t B, int64_t C, int64_t L,
    int64_t M, float *out);

/*
 * LTX2Pipeline._denormalize_audio_latents, in place on the PACKED audio
 * latents [rows, D] (rows = B*L, D = C*M): x = x * latents_std[d] +
 * latents_mean[d] (float32, two roundings; no scaling_factor, unlike the
 * video's).  mean and std have D values (the audio VAE's buffers, whose
 * length base_channels must equal C*M).
 */
void latents_denormalize_audio(float *x, int64_t rows, int64_t D,
    const float *latents_mean, const float *latents_std);

#endif
