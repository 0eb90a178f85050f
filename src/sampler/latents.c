/*
 * latents.c — LTXPipeline's latent packing, pre-decode mixing and video
 * post-processing on the CPU (see latents.h for the upstream formulas).
 */
/* No FMA contraction: every operation rounds once, as upstream's do. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include "sampler/latents.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "sampler/rng.h"

static void
check_shape(const struct latents_shape *sh)
{
	LQ_ASSERT(sh->batch >= 1 && sh->channels >= 1 && sh->frames >= 1 &&
	    sh->height >= 1 && sh->width >= 1);
	LQ_ASSERT(sh->patch_size >= 1 && sh->patch_size_t >= 1);
	LQ_ASSERT(sh->frames % sh->patch_size_t == 0);
	LQ_ASSERT(sh->height % sh->patch_size == 0);
	LQ_ASSERT(sh->width % sh->patch_size == 0);
}

int64_t
latents_seq_len(const struct latents_shape *sh)
{
	return (sh->frames / sh->patch_size_t) * (sh->height / sh->patch_size) *
	    (sh->width / sh->patch_size);
}

int64_t
latents_token_dim(const struct latents_shape *sh)
{
	return sh->channels * sh->patch_size_t * sh->patch_size *
	    sh->patch_size;
}

size_t
latents_numel(const struct latents_shape *sh)
{
	return (size_t)(sh->batch * sh->channels * sh->frames * sh->height *
	    sh->width);
}

/*
 * Walks every element once and hands the unpacked and packed flat indices
 * to the copy: pack copies unpacked -> packed, unpack the reverse.
 */
static void
pack_walk(const struct latents_shape *sh, const float *in, float *out,
    int to_packed)
{
	int64_t B = sh->batch, C = sh->channels, F = sh->frames;
	int64_t H = sh->height, W = sh->width;
	int64_t p = sh->patch_size, pt = sh->patch_size_t;
	int64_t Hp = H / p, Wp = W / p;
	int64_t S = latents_seq_len(sh), D = latents_token_dim(sh);
	int64_t b, c, f, h, w, tok, d;
	size_t u, k;

	check_shape(sh);
	for (b = 0; b < B; b++)
		for (c = 0; c < C; c++)
			for (f = 0; f < F; f++)
				for (h = 0; h < H; h++)
					for (w = 0; w < W; w++) {
		u = (size_t)((((b * C + c) * F + f) * H + h) * W + w);
		tok = ((f / pt) * Hp + h / p) * Wp + w / p;
		d = ((c * pt + f % pt) * p + h % p) * p + w % p;
		k = (size_t)((b * S + tok) * D + d);
		if (to_packed)
			out[k] = in[u];
		else
			out[u] = in[k];
					}
}

void
latents_pack(const struct latents_shape *sh, const float *in, float *out)
{
	pack_walk(sh, in, out, 1);
}

void
latents_unpack(const struct latents_shape *sh, const float *in, float *out)
{
	pack_walk(sh, in, out, 0);
}

void
latents_init_noise(const struct latents_shape *sh, uint64_t seed,
    float *packed)
{
	size_t n = latents_numel(sh);
	float *tmp = xmalloc(n * sizeof(float));

	rng_fill_normal(seed, RNG_PURPOSE_INITIAL_LATENTS, 0, tmp, n);
	latents_pack(sh, tmp, packed);
	free(tmp);
}

static void
format_dims(char *buf, size_t size, int ndim, const int64_t *dims)
{
	size_t len = 0;
	int k;

	len += (size_t)snprintf(buf, size, "[");
	for (k = 0; k < ndim && len < size; k++)
		len += (size_t)snprintf(buf + len, size - len, "%s%lld",
		    k ? ", " : "", (long long)dims[k]);
	if (len < size)
		snprintf(buf + len, size - len, "]");
}

enum lq_status
latents_import(const struct latents_shape *sh, int ndim, const int64_t *dims,
    const float *data, float *packed, struct lq_error *err)
{
	enum lq_status s = latents_import_check(sh, ndim, dims, err);
	if (s != LQ_OK)
		return s;
	if (ndim == 3)
		memcpy(packed, data, latents_numel(sh) * sizeof(float));
	else
		latents_pack(sh, data, packed);
	return LQ_OK;
}

enum lq_status
latents_import_check(const struct latents_shape *sh, int ndim,
    const int64_t *dims, struct lq_error *err)
{
	int64_t want_packed[3], want_unpacked[5];
	char given[128], a[64], b[96];

	want_packed[0] = sh->batch;
	want_packed[1] = latents_seq_len(sh);
	want_packed[2] = latents_token_dim(sh);
	want_unpacked[0] = sh->batch;
	want_unpacked[1] = sh->channels;
	want_unpacked[2] = sh->frames;
	want_unpacked[3] = sh->height;
	want_unpacked[4] = sh->width;
	if ((ndim == 3 && memcmp(dims, want_packed, sizeof(want_packed)) == 0) ||
	    (ndim == 5 &&
	    memcmp(dims, want_unpacked, sizeof(want_unpacked)) == 0))
		return LQ_OK;
	format_dims(given, sizeof(given), ndim, dims);
	format_dims(a, sizeof(a), 3, want_packed);
	format_dims(b, sizeof(b), 5, want_unpacked);
	return error_set(err, LQ_FAILED, "LQ-LAT-001",
	    "latents of shape %s do not fit this job: expected packed "
	    "[B, S, D] = %s or [B, C, F, H, W] = %s", given, a, b);
}

int64_t
latents_find_nonfinite(const float *x, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!isfinite(x[i]))
			return (int64_t)i;
	return -1;
}

void
latents_denormalize(const struct latents_shape *sh, float *x,
    const float *latents_mean, const float *latents_std,
    double scaling_factor)
{
	size_t spatial = (size_t)(sh->frames * sh->height * sh->width);
	float sf = (float)scaling_factor, v;
	int64_t b, c;
	size_t i;
	float *px;

	for (b = 0; b < sh->batch; b++)
		for (c = 0; c < sh->channels; c++) {
			px = x + (size_t)(b * sh->channels + c) * spatial;
			for (i = 0; i < spatial; i++) {
				v = px[i] * latents_std[c];
				v = v / sf;
				px[i] = v + latents_mean[c];
			}
		}
}

void
latents_denormalize_wan(const struct latents_shape *sh, float *x,
    const double *latents_mean, const double *latents_std)
{
	size_t spatial = (size_t)(sh->frames * sh->height * sh->width);

	for (int64_t b = 0; b < sh->batch; b++)
		for (int64_t c = 0; c < sh->channels; c++) {
			float *px = x + (size_t)(b * sh->channels + c) * spatial;
			float inv = 1.0f / (float)latents_std[c];
			float mean = (float)latents_mean[c];
			for (size_t i = 0; i < spatial; i++) {
				float v = px[i] / inv;
				px[i] = v + mean;
			}
		}
}

void
latents_normalize(const struct latents_shape *sh, float *x,
    const float *latents_mean, const float *latents_std,
    double scaling_factor)
{
	size_t spatial = (size_t)(sh->frames * sh->height * sh->width);
	float sf = (float)scaling_factor, v;

	for (int64_t b = 0; b < sh->batch; b++)
		for (int64_t c = 0; c < sh->channels; c++) {
			float *px = x + (size_t)(b * sh->channels + c) * spatial;

			for (size_t i = 0; i < spatial; i++) {
				v = px[i] - latents_mean[c];
				v = v * sf;
				px[i] = v / latents_std[c];
			}
		}
}

/* torch.std_mean(t, dim=None) of n floats: unbiased std and mean, each
 * rounded to float32. */
static void
std_mean(const float *t, int64_t n, float *sd, float *mean)
{
	double m = 0, ss = 0;

	for (int64_t i = 0; i < n; i++)
		m += t[i];
	m /= (double)n;
	for (int64_t i = 0; i < n; i++)
		ss += ((double)t[i] - m) * ((double)t[i] - m);
	*mean = (float)m;
	*sd = n > 1 ? (float)sqrt(ss / (double)(n - 1)) : NAN;
}

void
latents_adain_filter(float *x, const float *ref, int64_t batch,
    int64_t channels, int64_t n, int64_t n_ref, double factor)
{
	float w = (float)factor;

	for (int64_t b = 0; b < batch; b++)
		for (int64_t c = 0; c < channels; c++) {
			float *px = x + (b * channels + c) * n;
			float r_sd, r_mean, i_sd, i_mean;

			std_mean(ref + (b * channels + c) * n_ref, n_ref, &r_sd,
			    &r_mean);
			std_mean(px, n, &i_sd, &i_mean);
			for (int64_t i = 0; i < n; i++) {
				float y = px[i] - i_mean;

				y = y / i_sd;
				y = y * r_sd;
				y = y + r_mean;
				px[i] = latents_lerp(px[i], y, w);
			}
		}
}

void
latents_tone_map(float *x, size_t n, double compression)
{
	double s = compression * 0.75;
	float k = (float)(4.0 * s), a = (float)(0.8 * s);

	for (size_t i = 0; i < n; i++) {
		float d = fabsf(x[i]) - 1.0f;
		float sig = 1.0f / (1.0f + expf(-(k * d)));
		float scale = 1.0f - a * sig;

		x[i] = x[i] * scale;
	}
}

void
latents_mix_noise(float *x, const float *noise, size_t batch,
    size_t per_sample, const float *decode_noise_scale)
{
	float s, keep, a, b;
	size_t bi, i, k;

	for (bi = 0; bi < batch; bi++) {
		s = decode_noise_scale[bi];
		keep = 1.0f - s;
		for (i = 0; i < per_sample; i++) {
			k = bi * per_sample + i;
			a = keep * x[k];
			b = s * noise[k];
			x[k] = a + b;
		}
	}
}

static uint8_t
to_uint8(float v)
{
	float s = v * 255.0f;

	/* rintf rounds half to even in the default rounding mode, as
	 * np.round does; clamp guards the cast only (v is in [0, 1]). */
	s = rintf(s);
	if (!(s >= 0.0f))
		s = 0.0f;
	if (s > 255.0f)
		s = 255.0f;
	return (uint8_t)s;
}

void
latents_postprocess_video(const float *raw, int64_t batch, int64_t frames,
    int64_t height, int64_t width, float *video_np, uint8_t *video_uint8)
{
	size_t plane = (size_t)(frames * height * width);
	size_t b, ch, i, k;
	float v;

	for (b = 0; b < (size_t)batch; b++)
		for (ch = 0; ch < 3; ch++)
			for (i = 0; i < plane; i++) {
				v = raw[(b * 3 + ch) * plane + i];
				v = v * 0.5f;
				v = v + 0.5f;
				/* torch.clamp keeps NaN; so do we */
				if (v < 0.0f)
					v = 0.0f;
				if (v > 1.0f)
					v = 1.0f;
				k = (b * plane + i) * 3 + ch;
				if (video_np != NULL)
					video_np[k] = v;
				if (video_uint8 != NULL)
					video_uint8[k] = to_uint8(v);
			}
}

void
latents_video_to_uint8(const float *video_np, size_t n, uint8_t *out)
{
	size_t i;

	for (i = 0; i < n; i++)
		out[i] = to_uint8(video_np[i]);
}

float
latents_lerp(float start, float end, float weight)
{
	float d = end - start;

	if (fabsf(weight) < 0.5f) {
		float wd = weight * d;
		return start + wd;
	}
	float om = 1.0f - weight;
	float dm = d * om;
	return end - dm;
}

void
latents_video_coords(const struct latents_shape *sh, int spatial,
    int temporal, double frame_rate, float *out)
{
	int64_t F = sh->frames / sh->patch_size_t, H = sh->height / sh->patch_size;
	int64_t W = sh->width / sh->patch_size, S = F * H * W, n = 0;
	/* video_coords[:, 0] * (1.0 / frame_rate): a Python float scalar,
	 * float32 arithmetic */
	float inv = (float)(1.0 / frame_rate);

	for (int64_t f = 0; f < F; f++)
		for (int64_t h = 0; h < H; h++)
			for (int64_t w = 0; w < W; w++, n++) {
				int64_t ft = f * sh->patch_size_t * temporal + 1 -
				    temporal;
				float fc = (float)(ft > 0 ? ft : 0);
				out[n] = fc * inv;
				out[S + n] = (float)(h * sh->patch_size * spatial);
				out[2 * S + n] = (float)(w * sh->patch_size * spatial);
			}
}

void
latents_noise_to_sigma(float *x, const float *noise, size_t n, float sigma)
{
	float om = 1.0f - sigma;

	for (size_t i = 0; i < n; i++) {
		float a = sigma * noise[i];
		float b = om * x[i];
		x[i] = a + b;
	}
}

void
latents_image_cond_noise(float *x, const float *init, const float *noise,
    const float *mask, size_t batch, size_t tokens, size_t dim,
    double noise_scale, float t)
{
	float tf = t / 1000.0f, t2 = tf * tf;
	float scale = (float)noise_scale;

	for (size_t b = 0; b < batch; b++)
		for (size_t j = 0; j < tokens; j++) {
			if (!(mask[j] > 1.0f - 1e-6f))
				continue;
			size_t o = (b * tokens + j) * dim;
			for (size_t c = 0; c < dim; c++) {
				float a = scale * noise[o + c];
				a = a * t2;
				x[o + c] = init[o + c] + a;
			}
		}
}

int64_t
latents_audio_num_frames(int num_frames, double frame_rate, int sampling_rate,
    int hop_length, int temporal_compression)
{
	double duration_s = (double)num_frames / frame_rate;
	double per_second = (double)sampling_rate / (double)hop_length /
	    (double)temporal_compression;

	/* Python's round(): half to even, what rint does in the default
	 * rounding mode */
	return (int64_t)rint(duration_s * per_second);
}

void
latents_pack_audio(const float *in, int64_t B, int64_t C, int64_t L,
    int64_t M, float *out)
{
	for (int64_t b = 0; b < B; b++)
		for (int64_t c = 0; c < C; c++)
			for (int64_t l = 0; l < L; l++)
				memcpy(out + ((b * L + l) * C + c) * M,
				    in + ((b * C + c) * L + l) * M,
				    (size_t)M * sizeof(float));
}

void
latents_unpack_audio(const float *in, int64_t B, int64_t C, int64_t L,
    int64_t M, float *out)
{
	for (int64_t b = 0; b < B; b++)
		for (int64_t c = 0; c < C; c++)
			for (int64_t l = 0; l < L; l++)
				memcpy(out + ((b * C + c) * L + l) * M,
				    in + ((b * L + l) * C + c) * M,
				    (size_t)M * sizeof(float));
}

void
latents_denormalize_audio(float *x, int64_t rows, int64_t D,
    const float *latents_mean, const float *latents_std)
{
	for (int64_t r = 0; r < rows; r++)
		for (int64_t d = 0; d < D; d++) {
			float v = x[r * D + d] * latents_std[d];
			x[r * D + d] = v + latents_mean[d];
		}
}
