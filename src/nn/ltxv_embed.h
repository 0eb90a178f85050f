/*
 * ltxv_embed.h — the float32 "islands" of LTX-Video computed on the CPU:
 * the 3-D RoPE cos/sin tables and the 256-d sinusoidal timestep features.
 *
 * Upstream computes both in float32 whatever the model dtype, and with
 * arguments of up to ~1.6e4 rad (RoPE) and 1e3 rad (timesteps) the float32
 * rounding of the angles is the largest single difference between upstream
 * and exact math.  These functions therefore follow upstream's float32 order
 * of operations step by step, so the tables match upstream's to a few ulp;
 * the results are uploaded to the device as tables.
 *
 * Ownership: every function writes into caller-owned arrays; nothing is
 * allocated or kept.
 */
#ifndef LQ_NN_LTXV_EMBED_H
#define LQ_NN_LTXV_EMBED_H

#include <stdint.h>

/*
 * RoPE tables of LTXVideoRotaryPosEmbed.forward (diffusers
 * models/transformers/transformer_ltx.py) with video_coords=None:
 * cos and sin, each [N, dim] row-major with N = num_frames*height*width in
 * token order n = (f*height + h)*width + w.  The first dim % 6 channels are
 * padding (cos 1, sin 0); then angle index k*3 + axis (axis f, h, w), each
 * repeated twice (interleaved pairs).  rope_scale = rope_interpolation_scale
 * (s_f, s_h, s_w) as passed to the model (python floats; rounded to float32
 * as torch does when it multiplies a float32 tensor by them).  patch_size /
 * patch_size_t are the model's (1 for every released checkpoint).  The
 * tables are not repeated over the batch (upstream's are identical per
 * sample).
 */
void ltxv_rope_tables(int num_frames, int height, int width,
    const double rope_scale[3], int patch_size, int patch_size_t, int dim,
    float *cos_out, float *sin_out);

/*
 * The same tables for given video_coords (LTXVideoRotaryPosEmbed.forward
 * with video_coords, as LTXConditionPipeline passes them): video_coords
 * [3, ntok] float32 on the pipeline's scale (frame axis already divided by
 * the frame rate; see sampler/latents.h latents_video_coords), divided
 * by (base_num_frames, base_height, base_width) = (20, 2048, 2048), then
 * as above.  One table for every sample (the pipeline's coords are).
 */
void ltxv_rope_tables_coords(const float *video_coords, int64_t ntok,
    int dim, float *cos_out, float *sin_out);

/*
 * Sinusoidal timestep features of diffusers' Timesteps(num_channels,
 * flip_sin_to_cos=True, downscale_freq_shift=0) (models/embeddings.py
 * get_timestep_embedding): for each of the n timesteps t (any scale; the
 * transformer uses 0..1000), out[i*num_channels + j] = cos(t*freq_j) for
 * j < half and sin(t*freq_{j-half}) after, freq_k = exp(-ln(10000)*k/half),
 * half = num_channels/2 (num_channels even).  float32 throughout, as upstream.
 */
void ltxv_timestep_features(const float *timesteps, int n, int num_channels,
    float *out);

#endif
