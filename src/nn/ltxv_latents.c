/*
 * ltxv_latents.c — the LTX pipeline's pre-decode step on the host
 * (declared in ltxv_vae.h; kept apart so it links without a device).
 */
#include <stdint.h>
#include <stddef.h>

#include "nn/ltxv_vae.h"

void
ltxv_latents_denormalize(const float *x, const float *latents_mean,
    const float *latents_std, double scaling_factor, int64_t B, int64_t C,
    int64_t S, float *out)
{
	/* torch: (latents * latents_std) / scaling_factor + latents_mean,
	 * the python float scaling_factor rounded to float32 */
	float sf = (float)scaling_factor;

	for (int64_t b = 0; b < B; b++)
		for (int64_t c = 0; c < C; c++) {
			size_t o = (size_t)((b * C + c) * S);

			for (int64_t i = 0; i < S; i++) {
				float v = x[o + i] * latents_std[c];

				v = v / sf;
				out[o + i] = v + latents_mean[c];
			}
		}
}

void
ltxv_latents_mix_noise(const float *x, const float *noise,
    const float *decode_noise_scale, int64_t B, int64_t N, float *out)
{
	for (int64_t b = 0; b < B; b++) {
		float s = decode_noise_scale[b], r = 1.0f - s;

		for (int64_t i = 0; i < N; i++) {
			size_t o = (size_t)(b * N + i);
			float a = r * x[o], n = s * noise[o];

			out[o] = a + n;
		}
	}
}
