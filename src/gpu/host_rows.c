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

#include "gpu/vk.h"

#define NORM_LANES 8	/* shaders/norm.comp's */

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

/*
 * Element i of a row goes to partial i % NORM_LANES: whole chunks of
 * NORM_LANES, then the tail, in that order (the same additions as one
 * loop over i; the chunked form vectorises).
 */
static inline void
sum_into(float *s, const float *x, int64_t D, float mean, int squares)
{
	int64_t i = 0;
	for (; i + NORM_LANES <= D; i += NORM_LANES)
		for (int j = 0; j < NORM_LANES; j++) {
			float v = x[i + j] - mean;
			s[j] += squares ? v * v : v;
		}
	for (int j = 0; i < D; i++, j++) {
		float v = x[i] - mean;
		s[j] += squares ? v * v : v;
	}
}

static void
norm_row(const struct gpu_host_rows *r, int64_t row, const float *w,
    const float *b)
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
		sum_into(s, x, D, 0.0f, 0);
		mean = part_sum(s) / (float)D;
	}
	for (int j = 0; j < NORM_LANES; j++)
		s[j] = 0.0f;
	sum_into(s, x, D, mean, 1);
	float inv = 1.0f / sqrtf(part_sum(s) / (float)D + r->eps);
	int64_t bt = r->N > 0 ? row / r->N : 0;
	const float *sc = r->scale ? r->scale + bt * r->s_sc : NULL;
	const float *sh = r->shift ? r->shift + bt * r->s_sh : NULL;
	/* the shader's order: weight, bias, scale, shift; a pass each, so
	 * every loop vectorises (the same roundings as one loop) */
	for (int64_t i = 0; i < D; i++)
		y[i] = (x[i] - mean) * inv;
	if (w != NULL)
		for (int64_t i = 0; i < D; i++)
			y[i] *= w[i];
	if (b != NULL)
		for (int64_t i = 0; i < D; i++)
			y[i] += b[i];
	if (sc != NULL)
		for (int64_t i = 0; i < D; i++)
			y[i] *= 1.0f + sc[i];
	if (sh != NULL)
		for (int64_t i = 0; i < D; i++)
			y[i] += sh[i];
}

void
gpu_host_norm(struct gpu_ctx *ctx, const struct gpu_host_rows *r)
{
	/* weight and bias decoded once, into scratch slots 0 and 1 */
	const float *w = r->b ? gpu_host_f32(ctx, 0, r->b, r->dtb, r->D) : NULL;
	const float *b = r->c ? gpu_host_f32(ctx, 1, r->c, r->dtc, r->D) : NULL;
	for (int64_t row = 0; row < r->rows; row++)
		norm_row(r, row, w, b);
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

/*
 * The common case at full speed: every operand f32 with an inner stride
 * of 1 (or 0: a broadcast row or scalar), the op chosen once per run of
 * the inner dim.  The same arithmetic as ew_op.  Returns 0 when the views
 * are not of that kind.
 */
static int
ew_fast(const struct gpu_host_rows *r)
{
	const int64_t *n = r->shape;
	const void *in[3] = {r->a, r->b, r->c};
	const enum gpu_dtype dt[3] = {r->dta, r->dtb, r->dtc};
	const int64_t *st[3] = {r->sa, r->sb, r->sc};
	if (r->sy[4] != 1)
		return 0;
	for (int k = 0; k < 3; k++)
		if (in[k] != NULL && (dt[k] != GPU_F32 || st[k][4] > 1 ||
		    st[k][4] < 0))
			return 0;
	/* the operands each op reads must all be given (ew_op reads an
	 * absent one as 0) */
	int need_b = 0, need_c = 0;
	switch (r->code) {
	case LQ_EW_COPY: case LQ_EW_SCALE:
		break;
	case LQ_EW_ADD: case LQ_EW_MUL:
		need_b = 1;
		break;
	case LQ_EW_ADDMUL: case LQ_EW_MODULATE:
		need_b = need_c = 1;
		break;
	default:
		return 0;
	}
	if (r->a == NULL || (need_b && r->b == NULL) || (need_c && r->c == NULL))
		return 0;
	for (int64_t i0 = 0; i0 < n[0]; i0++)
	for (int64_t i1 = 0; i1 < n[1]; i1++)
	for (int64_t i2 = 0; i2 < n[2]; i2++)
	for (int64_t i3 = 0; i3 < n[3]; i3++) {
		float *y = r->y + i0 * r->sy[0] + i1 * r->sy[1] + i2 * r->sy[2] +
		    i3 * r->sy[3];
		const float *p[3];
		int64_t s4[3];
		for (int k = 0; k < 3; k++) {
			p[k] = in[k] == NULL ? NULL : (const float *)in[k] +
			    i0 * st[k][0] + i1 * st[k][1] + i2 * st[k][2] +
			    i3 * st[k][3];
			s4[k] = st[k][4];
		}
		const float *a = p[0], *b = p[1], *c = p[2];
		int64_t sa = s4[0], sb = s4[1], sc = s4[2], m = n[4];
		float al = r->alpha, be = r->beta;
		switch (r->code) {
		case LQ_EW_COPY:
			for (int64_t i = 0; i < m; i++)
				y[i] = a[i * sa];
			break;
		case LQ_EW_ADD:
			for (int64_t i = 0; i < m; i++)
				y[i] = a[i * sa] + b[i * sb];
			break;
		case LQ_EW_MUL:
			for (int64_t i = 0; i < m; i++)
				y[i] = a[i * sa] * b[i * sb];
			break;
		case LQ_EW_ADDMUL:
			for (int64_t i = 0; i < m; i++)
				y[i] = a[i * sa] + b[i * sb] * c[i * sc];
			break;
		case LQ_EW_SCALE:
			for (int64_t i = 0; i < m; i++)
				y[i] = a[i * sa] * al + be;
			break;
		default:	/* LQ_EW_MODULATE */
			for (int64_t i = 0; i < m; i++)
				y[i] = a[i * sa] * (al + b[i * sb]) + c[i * sc];
			break;
		}
	}
	return 1;
}

void
gpu_host_ew(const struct gpu_host_rows *r)
{
	if (ew_fast(r))
		return;
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
			float va = fill ? 0.0f : gpu_host_param(r->a, r->dta, oa +
			    i * r->sa[4]);
			float vb = r->b ? gpu_host_param(r->b, r->dtb, ob +
			    i * r->sb[4]) : 0.0f;
			float vc = r->c ? gpu_host_param(r->c, r->dtc, oc +
			    i * r->sc[4]) : 0.0f;
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
				float c0 = gpu_host_param(r->b, r->dtb, ct + d);
				float c1 = gpu_host_param(r->b, r->dtb, ct + d + 1);
				float s0 = gpu_host_param(r->c, r->dtc, ct + d);
				float s1 = gpu_host_param(r->c, r->dtc, ct + d + 1);
				yr[d] = x0 * c0 - x1 * s0;
				yr[d + 1] = x1 * c1 + x0 * s1;
			}
			continue;
		}
		int64_t hh = r->hd / 2;
		for (int64_t rp = 0; rp < cd; rp++) {
			int64_t e0 = (rp / hh) * r->hd + rp % hh;
			float c = gpu_host_param(r->b, r->dtb, ct + rp);
			float s = gpu_host_param(r->c, r->dtc, ct + rp);
			float x0 = xr[e0], x1 = xr[e0 + hh];
			yr[e0] = x0 * c - x1 * s;
			yr[e0 + hh] = x1 * c + x0 * s;
		}
	}
}
