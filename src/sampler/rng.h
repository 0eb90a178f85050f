/*
 * rng.h — latentq's noise: a counter-based generator (Philox4x32-10) keyed by
 * (seed, purpose, element index), so every noise value is a pure function of
 * the manifest and never of the order, thread or device that asked for it.
 *
 * The mapping below is normative (latentq(1) quotes it) so that any
 * implementation can reproduce a latentq render from its manifest:
 *
 *   Philox4x32-10 (Salmon et al., SC'11; Random123's philox4x32 with 10
 *   rounds: multipliers 0xD2511F53, 0xCD9E8D57, Weyl key increments
 *   0x9E3779B9, 0xBB67AE85).
 *
 *   normal(seed, purpose, i), for a u64 seed, a u32 purpose and a u64 element
 *   index i:
 *     j = i / 4 (block), l = i % 4 (lane)
 *     key     = { seed & 0xffffffff, seed >> 32 }
 *     counter = { j & 0xffffffff, j >> 32, purpose, 0 }
 *     x[0..3] = philox4x32_10(counter, key)
 *     pair p = l / 2 uses words a = x[2p], b = x[2p + 1]
 *     u1 = (a + 1) * 2^-32, u2 = (b + 1) * 2^-32      (float64; in (0, 1],
 *                                                      exact)
 *     r = sqrt(-2 * log(u1)), theta = 6.283185307179586 * u2   (float64)
 *     lane even: z = r * cos(theta);  lane odd: z = r * sin(theta)
 *     the value is z rounded once to float32 (round to nearest even).
 *   All float64 operations are single IEEE-754 operations (no FMA); log,
 *   cos, sin are the C library's double functions (glibc's are correctly
 *   rounded in practice, so another faithful libm differs only when a
 *   float64 result lies within its error of a float32 rounding boundary).
 *
 *   Purposes (RNG_PURPOSE_*) and the tensor whose row-major element index
 *   is i (the shapes diffusers draws randn in):
 *     1          initial latents, unpacked [B, C, F, H, W] (then packed to
 *                [B, S, D] as LTXPipeline.prepare_latents does;
 *                latents_init_noise)
 *     2          decode noise of a timestep-conditioned VAE, [B, C, F, H, W]
 *     3          image-to-video's posterior draw (latent_dist.sample), one
 *                image latent per video: [B, C, 1, H, W]
 *     4          LTXConditionPipeline's condition posterior draw (one image
 *                encoded once for the batch): [1, C, 1, H, W]
 *     5          LTXConditionPipeline's image-condition noise, one packed
 *                [B, S, D] draw per step run: [steps run, B, S, D]
 *     6          LTX2Pipeline's initial audio latents, unpacked
 *                [B, C, L, M] (then packed to [B, L, C*M])
 *     0x100 + k  the decoder's k-th injected-noise draw, [H, W] (k = 0, 1,
 *                ... in the decoder's call order)
 *   Stage 2 of a two-stage job (`second_stage:`) draws each of these with
 *   0x10000 added (RNG_PURPOSE_OF_STAGE); stage 1 draws as a one-stage job.
 *
 * No state, no allocation; all functions are thread-safe.
 */
#ifndef LQ_SAMPLER_RNG_H
#define LQ_SAMPLER_RNG_H

#include <stddef.h>
#include <stdint.h>

enum {
	RNG_PURPOSE_INITIAL_LATENTS = 1,
	RNG_PURPOSE_DECODE_NOISE = 2,
	RNG_PURPOSE_POSTERIOR_NOISE = 3,
	RNG_PURPOSE_CONDITION_POSTERIOR = 4,
	RNG_PURPOSE_IMAGE_COND_NOISE = 5,
	RNG_PURPOSE_AUDIO_LATENTS = 6,
	RNG_PURPOSE_INJECTED_NOISE_BASE = 0x100,
};
/* Purpose `p` as stage `stage` (0 or 1: p; 2: p + 0x10000) draws it. */
#define RNG_PURPOSE_STAGE2_BASE 0x10000u
#define RNG_PURPOSE_OF_STAGE(stage, p) \
	((uint32_t)(p) + ((stage) == 2 ? RNG_PURPOSE_STAGE2_BASE : 0u))
/* Purpose of the decoder's k-th injected-noise draw. */
#define RNG_PURPOSE_INJECTED_NOISE(k) \
	((uint32_t)RNG_PURPOSE_INJECTED_NOISE_BASE + (uint32_t)(k))

/*
 * Philox4x32-10 block function: out = philox4x32_10(ctr, key), words in
 * Random123's order (checked against its published known-answer vectors).
 */
void rng_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2],
    uint32_t out[4]);

/* The single normal(seed, purpose, index) defined above. */
float rng_normal(uint64_t seed, uint32_t purpose, uint64_t index);

/*
 * Fills out[0..n-1] with normal(seed, purpose, offset + i).  Any split of a
 * range into calls gives the same values as one call (offset need not be a
 * multiple of 4).  offset + n must not wrap around 2^64.
 */
void rng_fill_normal(uint64_t seed, uint32_t purpose, uint64_t offset,
    float *out, size_t n);

#endif
