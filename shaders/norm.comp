/*
 * norm.comp — per-row LayerNorm (mode 0), RMSNorm (1) or softmax (2) over
 * the last dim D; one workgroup of 128 per row; two passes for variance.
 */
#version 450
#define KERNEL_NORM
#include "common.glsl"
#include "reduce.glsl"

layout(local_size_x = 128) in;
layout(binding = 0) buffer Y { uint d[]; } y;
layout(binding = 1) readonly buffer X { uint d[]; } x;
layout(binding = 2) readonly buffer Wt { uint d[]; } w;
layout(binding = 3) readonly buffer Bs { uint d[]; } b;

void main()
{
	uint row = lq_group_id();
	if (row >= p.rows)
		return;
	uint t = gl_LocalInvocationID.x;
	uint mode = p.flags & LQ_NORM_MODE_MASK;
	bool has_w = LQ_FIELD(p.flags, LQ_NORM_HAS_W, 1u) != 0u;
	bool has_b = LQ_FIELD(p.flags, LQ_NORM_HAS_B, 1u) != 0u;
	uint dtw = LQ_FIELD(p.flags, LQ_NORM_DTW, LQ_DT_MASK);
	uint dtb = LQ_FIELD(p.flags, LQ_NORM_DTB, LQ_DT_MASK);
	uint xb = p.off_x + row * p.D, yb = p.off_y + row * p.D;
	float fD = float(p.D);

	if (mode == LQ_NORM_SOFTMAX) {
		float m = -3.402823466e38;
		for (uint i = t; i < p.D; i += 128u)
			m = max(m, LDF(x.d, xb + i));
		m = wg_max(m);
		float s = 0.0;
		for (uint i = t; i < p.D; i += 128u)
			s += exp(LDF(x.d, xb + i) - m);
		s = wg_sum(s);
		float inv = 1.0 / s;
		for (uint i = t; i < p.D; i += 128u)
			STF(y.d, yb + i, exp(LDF(x.d, xb + i) - m) * inv);
		return;
	}
	float mean = 0.0;
	if (mode == LQ_NORM_LAYER) {
		float s = 0.0;
		for (uint i = t; i < p.D; i += 128u)
			s += LDF(x.d, xb + i);
		mean = wg_sum(s) / fD;
	}
	float s2 = 0.0;
	for (uint i = t; i < p.D; i += 128u) {
		float v = LDF(x.d, xb + i) - mean;
		s2 += v * v;
	}
	float inv = inversesqrt(wg_sum(s2) / fD + p.eps);
	for (uint i = t; i < p.D; i += 128u) {
		float v = (LDF(x.d, xb + i) - mean) * inv;
		if (has_w)
			v *= LD(w.d, dtw, p.off_w + i);
		if (has_b)
			v += LD(b.d, dtb, p.off_b + i);
		STF(y.d, yb + i, v);
	}
}
