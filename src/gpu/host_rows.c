/*
 * host_rows.c — the row norms and elementwise ops of the CPU-device host
 * path (internal.h GPU_HOST_NORM, GPU_HOST_EW, GPU_HOST_ROPE; issue 18).
 *
 * On lavapipe every shader load or store whose address differs between
 * invocations is done lane by lane, as a scalar access with its own bounds
 * check, so a norm or an elementwise op over a demo-sized activation
 * (640 x 128) took 1-4 ms as a shader; here, on the mapped buffers, it
 * takes tens of microseconds.  The arithmetic is norm.comp's, ew.comp's
 * and rope.comp's, in the same order (norm: NORM_LANES interleaved partial sums
 * added pairwise), so a row's bits depend on D alone — never on the other
 * rows of the call, the thread or the device — and -ffp-contract=off keeps
 * the compiler from fusing what the shader rounds.  Single-threaded: these
 * ops are memory-bound, a tiny share of a step beside the GEMMs.
 */
#include <math.h>
#include <stdint.h>

#include "core/half.h"
#include "gpu/vk.h"

#define NORM_LANES 8	/* shaders/norm.comp's */

static inline float
ld(const void *p, enum gpu_dtype dt, int64_t i)
{
	if (dt == GPU_F32)
		return ((const float *)p)[i];
	if (dt == GPU_BF16)
		return half_bf16_to_f32(((const uint16_t *)p)[i]);
	return half_f16_to_f32(((const uint16_t *)p)[i]);
}

/* norm.comp's part_sum / part_max: a fixed pairwise tree */
static inline float
part_sum(const float *s)
{
	return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

static inline float
part_max(const float *s)
{
	float a = fmaxf(fmaxf(s[0], s[1]), fmaxf(s[2], s[3]));
	float b = fmaxf(fmaxf(s[4], s[5]), fmaxf(s[6], s[7]));
	return fmaxf(a, b);
}

static void
norm_row(const struct gpu_host_rows *r, int64_t row)
{
	const float *x = (const float *)r->a + row * r->D;
	float *y = r->y + row * r->D;
	int64_t D = r->D;
	float s[NORM_LANES];

	if (r->code == LQ_NORM_SOFTMAX) {
		for (int j = 0; j < NORM_LANES; j++)
			s[j] = -3.402823466e38f;
		for (int64_t i = 0; i < D; i++)
			s[i % NORM_LANES] = fmaxf(s[i % NORM_LANES], x[i]);
		float m = part_max(s);
		for (int j = 0; j < NORM_LANES; j++)
			s[j] = 0.0f;
		for (int64_t i = 0; i < D; i++)
			s[i % NORM_LANES] += expf(x[i] - m);
		float inv = 1.0f / part_sum(s);
		for (int64_t i = 0; i < D; i++)
			y[i] = expf(x[i] - m) * inv;
		return;
	}
	float mean = 0.0f;
	if (r->code == LQ_NORM_LAYER) {
		for (int j = 0; j < NORM_LANES; j++)
			s[j] = 0.0f;
		for (int64_t i = 0; i < D; i++)
			s[i % NORM_LANES] += x[i];
		mean = part_sum(s) / (float)D;
	}
	for (int j = 0; j < NORM_LANES; j++)
		s[j] = 0.0f;
	for (int64_t i = 0; i < D; i++) {
		float v = x[i] - mean;
		s[i % NORM_LANES] += v * v;
	}
	float inv = 1.0f / sqrtf(part_sum(s) / (float)D + r->eps);
	int64_t bt = r->N > 0 ? row / r->N : 0;
	const float *sc = r->scale ? r->scale + bt * r->s_sc : NULL;
	const float *sh = r->shift ? r->shift + bt * r->s_sh : NULL;
	for (int64_t i = 0; i < D; i++) {
		float v = (x[i] - mean) * inv;
		if (r->b != NULL)	/* weight */
			v *= ld(r->b, r->dtb, i);
		if (r->c != NULL)	/* bias */
			v += ld(r->c, r->dtc, i);
		if (sc != NULL)
			v *= 1.0f + sc[i];
		if (sh != NULL)
			v += sh[i];
		y[i] = v;
	}
}

void
gpu_host_norm(const struct gpu_host_rows *r)
{
	for (int64_t row = 0; row < r->rows; row++)
		norm_row(r, row);
}

/* ew.comp's op on one element */
static inline float
ew_op(const struct gpu_host_rows *r, float va, float vb, float vc)
{
	switch (r->code) {
	case LQ_EW_COPY:
		return va;
	case LQ_EW_ADD:
		return va + vb;
	case LQ_EW_MUL:
		return va * vb;
	case LQ_EW_ADDMUL:
		return va + vb * vc;
	case LQ_EW_SCALE:
		return va * r->alpha + r->beta;
	case LQ_EW_FILL:
		return r->alpha;
	case LQ_EW_MODULATE:
		return va * (r->alpha + vb) + vc;
	case LQ_EW_LEAKY_RELU:
		return va >= 0.0f ? va : va * r->alpha;
	case LQ_EW_CLAMP:
		return fminf(fmaxf(va, r->alpha), r->beta);
	case LQ_EW_SNAKE: {
		float s = sinf(va * expf(vb));
		float inv = 1.0f / (expf(vc) + r->alpha);
		return va + inv * (s * s);
	}
	default: {
		union {
			float f;
			uint32_t u;
		} act = {.f = r->beta};
		return gpu_host_act(va, act.u);
	}
	}
}

void
gpu_host_ew(const struct gpu_host_rows *r)
{
	const int64_t *n = r->shape;
	int fill = r->code == LQ_EW_FILL;
	for (int64_t i0 = 0; i0 < n[0]; i0++)
	for (int64_t i1 = 0; i1 < n[1]; i1++)
	for (int64_t i2 = 0; i2 < n[2]; i2++)
	for (int64_t i3 = 0; i3 < n[3]; i3++) {
		int64_t oy = i0 * r->sy[0] + i1 * r->sy[1] + i2 * r->sy[2] +
		    i3 * r->sy[3];
		int64_t oa = i0 * r->sa[0] + i1 * r->sa[1] + i2 * r->sa[2] +
		    i3 * r->sa[3];
		int64_t ob = i0 * r->sb[0] + i1 * r->sb[1] + i2 * r->sb[2] +
		    i3 * r->sb[3];
		int64_t oc = i0 * r->sc[0] + i1 * r->sc[1] + i2 * r->sc[2] +
		    i3 * r->sc[3];
		for (int64_t i = 0; i < n[4]; i++) {
			float va = fill ? 0.0f : ld(r->a, r->dta, oa +
			    i * r->sa[4]);
			float vb = r->b ? ld(r->b, r->dtb, ob + i * r->sb[4]) :
			    0.0f;
			float vc = r->c ? ld(r->c, r->dtc, oc + i * r->sc[4]) :
			    0.0f;
			r->y[oy + i * r->sy[4]] = ew_op(r, va, vb, vc);
		}
	}
}

void
gpu_host_rope(const struct gpu_host_rows *r)
{
	const float *x = r->a;
	int64_t N = r->N, D = r->D, cd = r->hd ? D / 2 : D;
	for (int64_t b = 0; b < r->rows; b++)
	for (int64_t n = 0; n < N; n++) {
		int64_t row = b * N + n, ct = b * r->cs_sb + n * cd;
		const float *xr = x + row * D;
		float *yr = r->y + row * D;
		if (r->hd == 0) {
			for (int64_t d = 0; d < D; d += 2) {
				float x0 = xr[d], x1 = xr[d + 1];
				float c0 = ld(r->b, r->dtb, ct + d);
				float c1 = ld(r->b, r->dtb, ct + d + 1);
				float s0 = ld(r->c, r->dtc, ct + d);
				float s1 = ld(r->c, r->dtc, ct + d + 1);
				yr[d] = x0 * c0 - x1 * s0;
				yr[d + 1] = x1 * c1 + x0 * s1;
			}
			continue;
		}
		int64_t hh = r->hd / 2;
		for (int64_t rp = 0; rp < cd; rp++) {
			int64_t e0 = (rp / hh) * r->hd + rp % hh;
			float c = ld(r->b, r->dtb, ct + rp);
			float s = ld(r->c, r->dtc, ct + rp);
			float x0 = xr[e0], x1 = xr[e0 + hh];
			yr[e0] = x0 * c - x1 * s;
			yr[e0 + hh] = x1 * c + x0 * s;
		}
	}
}
