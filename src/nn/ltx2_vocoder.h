/*
 * ltx2_vocoder.h — LTX-2's vocoder on Vulkan: a mel spectrogram (the audio
 * VAE decoder's output) to a waveform, as diffusers'
 * pipelines/ltx2/vocoder.py LTX2Vocoder.forward computes it (HiFi-GAN
 * style): conv_in -> per upsampler (leaky_relu, ConvTranspose1d, mean of
 * its ResBlocks) -> act_out -> conv_out -> final_act_fn.
 *
 * Use:
 *   ltx2_vocoder_load(ctx, "model/vocoder", &v, &err);
 *   ltx2_vocoder_output_shape(v, mel_shape, out_shape);
 *   ltx2_vocoder_forward(v, &mel, &waveform, NULL, &err);
 *   ltx2_vocoder_free(v);
 *
 * Ownership: the vocoder owns its weights, its activation pool (sized per
 * call, kept for the next call of the same or a smaller shape) and its
 * command recording; tensors passed in are caller-owned.
 */
#ifndef LQ_NN_LTX2_VOCODER_H
#define LQ_NN_LTX2_VOCODER_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "gpu/gpu.h"
#include "model/diffusers.h"
#include "nn/dump.h"

struct ltx2_vocoder;
struct nn_plan_bytes;
struct nn_weights_layout;
struct device_caps;

/*
 * Reads `dir`/config.json (diffusers_parse_ltx2_vocoder: LQ-MODEL-00x for
 * a config upstream refuses or latentq does not implement, named) and
 * uploads the weights (LQ-NN-WMISS / LQ-NN-WSHAPE naming the tensor).
 * LQ_RETRY on device OOM.  On error *out is NULL.
 */
enum lq_status ltx2_vocoder_load(struct gpu_ctx *ctx, const char *dir,
    struct ltx2_vocoder **out, struct lq_error *err);

void ltx2_vocoder_free(struct ltx2_vocoder *v);

/* The LTX2Vocoder's config; for LTX2VocoderWithBWE its stage-1 vocoder's
 * (borrowed). */
const struct ltx2_vocoder_config *ltx2_vocoder_config(
    const struct ltx2_vocoder *v);
/* LTX2VocoderWithBWE's whole config, or NULL for an LTX2Vocoder. */
const struct ltx2_vocoder_bwe_config *ltx2_vocoder_bwe_config(
    const struct ltx2_vocoder *v);

/*
 * Waveform shape for a mel spectrogram [B, C, T, M] (time_last False):
 * [B, out_channels, L] with L from T through every upsampler,
 * L' = (L - 1)·u - 2·((k - u) / 2) + k (= L·u when k - u is even).  The
 * samples are at output_sampling_rate.
 */
void ltx2_vocoder_output_shape(const struct ltx2_vocoder *v,
    const int64_t mel[4], int64_t out[3]);
/* The same from the configs alone (preflight, the render's plan): `c` an
 * LTX2Vocoder's, or with `bwe` (c then ignored) LTX2VocoderWithBWE's. */
void ltx2_vocoder_waveform_shape(const struct ltx2_vocoder_config *c,
    const struct ltx2_vocoder_bwe_config *bwe, const int64_t mel[4],
    int64_t out[3]);
/* One LTX2Vocoder's output samples for T mel frames (for the BWE: its
 * stage 1's, which must be a multiple of hop_length). */
int64_t ltx2_vocoder_stage1_samples(const struct ltx2_vocoder_config *c,
    int64_t T);

/*
 * LTX2Vocoder.forward(mel) into waveform (shape from
 * ltx2_vocoder_output_shape), both f32 contiguous on the device; records,
 * submits and waits.  mel [B, C, T, M] with C·M = in_channels (its channel
 * index c·M + m, as upstream's transpose(2, 3).flatten(1, 2)).  With
 * `dump` also hands over conv_in, upsamplers.<i>, resnets.<j> (each
 * ResBlock's output, before the stage's mean), act_out and conv_out
 * (before final_act_fn), as upstream's forward hooks name them.
 * Errors: LQ_FAILED LQ-NN-SHAPE naming the rule for other shapes; LQ_RETRY
 * on device OOM; device errors.
 */
enum lq_status ltx2_vocoder_forward(struct ltx2_vocoder *v,
    const struct gpu_tensor *mel, const struct gpu_tensor *waveform,
    const struct nn_dump *dump, struct lq_error *err);

/*
 * The memory plan (nn/plan.h) of one ltx2_vocoder_forward of mel
 * [B, C, T, M] from the configs alone: `c` the LTX2Vocoder's, or with `bwe`
 * (then c is ignored) LTX2VocoderWithBWE's; `w` the weights' layout (NULL:
 * weights 0).  Activations are the pool the forward creates; host the
 * BWE's MelSTFT arrays.
 */
void ltx2_vocoder_plan(const struct ltx2_vocoder_config *c,
    const struct ltx2_vocoder_bwe_config *bwe,
    const struct nn_weights_layout *w, const struct device_caps *caps,
    const int64_t mel[4], struct nn_plan_bytes *out);

/* Device bytes: weights, and the activation pool's capacity and peak. */
void ltx2_vocoder_memory(const struct ltx2_vocoder *v, size_t *weights,
    size_t *pool_capacity, size_t *pool_peak);

#endif
