/*
 * ltxv_embed.c — RoPE tables and sinusoidal timestep features in float32,
 * in upstream's order of operations (see ltxv_embed.h for why).
 *
 * Every intermediate is held in a `float` variable so that each step rounds
 * to float32 exactly where torch's float32 kernels round; the python
 * scalars torch multiplies by (pi, the rope scales, -ln 10000) are rounded to
 * float32 first, as torch's CPU kernels do with a wrapped scalar operand.
 * C11 on x86-64/aarch64 evaluates float expressions in float
 * (FLT_EVAL_METHOD 0) and -std=c11 disables FMA contraction.
 */
#include <math.h>

#include "core/error.h"
#include "core/util.h"
#include "nn/ltxv_embed.h"


/*
 * torch.linspace(start, end, steps, dtype=float32) as ATen's CPU scalar
 * kernel computes it: step = (end - start) / (steps - 1) in float, the first
 * half from start upwards and the second half from end downwards.  (ATen's
 * vectorised path evaluates lanes as base + j*step and can differ by an ulp
 * when dim//6 >= 16; emulating 8-lane AVX2 vectors made the demo model's
 * transformer output (D = 128, upstream pipeline golden) worse, 1.6e-5 vs
 * 6.6e-6, so the scalar formula is kept.)
 */
static float
linspace_f32(float start, float end, int steps, int i)
{
	float step;

	if (steps == 1)
		return start;
	step = (end - start) / (float)(steps - 1);
	if (i < steps / 2)
		return start + step * (float)i;
	return end - step * (float)(steps - i - 1);
}

/*
 * The tables for n tokens whose grid coordinates g[n][axis] are already
 * divided by the base sizes (upstream's `grid`): freqs * (grid * 2 - 1).
 */
static void
rope_fill(const float *grid, int64_t ntok, int dim, float *cos_out,
    float *sin_out)
{
	const float theta = 10000.0f;
	const float pi_f = (float)M_PI;
	int nfreq = dim / 6, pad = dim % 6;
	float *freqs = xmalloc(sizeof(float) * (size_t)(nfreq > 0 ? nfreq : 1));

	LQ_ASSERT(dim > 0);
	/* freqs = theta ** linspace(log(1, theta), log(theta, theta), dim // 6)
	 * then * pi, then / 2 (python evaluates left to right). */
	for (int k = 0; k < nfreq; k++) {
		float e = linspace_f32(0.0f, 1.0f, nfreq, k);
		float f = powf(theta, e);
		f = f * pi_f;
		f = f / 2.0f;
		freqs[k] = f;
	}
	for (int64_t n = 0; n < ntok; n++) {
		float g[3], *co = cos_out + n * dim, *si = sin_out + n * dim;

		for (int a = 0; a < 3; a++)
			g[a] = grid[n * 3 + a] * 2.0f - 1.0f;
		for (int j = 0; j < pad; j++) {
			co[j] = 1.0f;
			si[j] = 0.0f;
		}
		for (int k = 0; k < nfreq; k++)
			for (int a = 0; a < 3; a++) {
				float ang = freqs[k] * g[a];
				float cv = cosf(ang), sv = sinf(ang);
				int j = pad + (k * 3 + a) * 2;

				co[j] = co[j + 1] = cv;
				si[j] = si[j + 1] = sv;
			}
	}
	free(freqs);
}

/* LTXVideoRotaryPosEmbed's base_num_frames, base_height, base_width */
static const float rope_base[3] = { 20.0f, 2048.0f, 2048.0f };

void
ltxv_rope_tables(int num_frames, int height, int width,
    const double rope_scale[3], int patch_size, int patch_size_t, int dim,
    float *cos_out, float *sin_out)
{
	float s[3] = { (float)rope_scale[0], (float)rope_scale[1],
	    (float)rope_scale[2] };
	float p[3] = { (float)patch_size_t, (float)patch_size, (float)patch_size };
	int64_t ntok = (int64_t)num_frames * height * width, n = 0;
	float *grid = xmalloc(sizeof(float) * (size_t)(3 * ntok));

	for (int f = 0; f < num_frames; f++)
		for (int h = 0; h < height; h++)
			for (int w = 0; w < width; w++, n++) {
				float g[3] = { (float)f, (float)h, (float)w };

				for (int a = 0; a < 3; a++) {
					float c = g[a] * s[a];
					c = c * p[a];
					grid[n * 3 + a] = c / rope_base[a];
				}
			}
	rope_fill(grid, ntok, dim, cos_out, sin_out);
	free(grid);
}

void
ltxv_rope_tables_coords(const float *video_coords, int64_t ntok, int dim,
    float *cos_out, float *sin_out)
{
	float *grid = xmalloc(sizeof(float) * (size_t)(3 * ntok));

	/* torch.stack([video_coords[:, a] / base_a for a], dim=-1) */
	for (int64_t n = 0; n < ntok; n++)
		for (int a = 0; a < 3; a++)
			grid[n * 3 + a] = video_coords[a * ntok + n] / rope_base[a];
	rope_fill(grid, ntok, dim, cos_out, sin_out);
	free(grid);
}

/*
 * torch.exp on a float32 tensor of 16+ elements runs SLEEF's Sleef_expf*_u10
 * (vectorised, FMA), which is not correctly rounded: glibc's expf differs
 * from it by an ulp for about one frequency in ten, and at t = 1000 an ulp
 * of the frequency moves cos/sin by ~3e-5.  This is SLEEF's xexpf
 * (sleefsimdsp.c) in scalar form so the features match upstream's bits.
 */
static float
sleef_expf(float d)
{
	int q = (int)rintf(d * 1.442695040888963407359924681001892137426645954152985934135449406931f);
	float s, u;

	if (d < -104.0f)
		return 0.0f;
	s = fmaf((float)q, -0.693145751953125f, d);
	s = fmaf((float)q, -1.428606765330187045e-06f, s);
	u = 0.000198527617612853646278381f;
	u = fmaf(u, s, 0.00139304355252534151077271f);
	u = fmaf(u, s, 0.00833336077630519866943359f);
	u = fmaf(u, s, 0.0416664853692054748535156f);
	u = fmaf(u, s, 0.166666671633720397949219f);
	u = fmaf(u, s, 0.5f);
	u = 1.0f + fmaf(s * s, u, s);
	return ldexpf(u, q);
}

void
ltxv_timestep_features(const float *timesteps, int n, int num_channels,
    float *out)
{
	int half = num_channels / 2;
	const float neg_log_period = (float)(-log(10000.0));

	LQ_ASSERT(num_channels % 2 == 0);
	for (int k = 0; k < half; k++) {
		/* exponent = -log(max_period) * arange(half) / (half - 0) */
		float e = neg_log_period * (float)k;
		float fr;

		e = e / (float)half;
		fr = sleef_expf(e);
		for (int i = 0; i < n; i++) {
			float arg = timesteps[i] * fr;

			out[(size_t)i * num_channels + k] = cosf(arg);
			out[(size_t)i * num_channels + half + k] = sinf(arg);
		}
	}
}
