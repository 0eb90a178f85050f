/*
 * normc.comp — normalisation over channels of x [B, C, S] at each (b, s):
 * LayerNorm (mode 0) or RMSNorm (mode 1); one invocation per position,
 * channels summed in ascending order.
 */
#version 450
#define KERNEL_NORMC
#include "common.glsl"

layout(local_size_x = 128) in;
layout(binding = 0) buffer Y { uint d[]; } y;
layout(binding = 1) readonly buffer X { uint d[]; } x;
layout(binding = 2) readonly buffer Wt { uint d[]; } w;
layout(binding = 3) readonly buffer Bs { uint d[]; } b;

void main()
{
	uint i = lq_group_id() * 128u + gl_LocalInvocationID.x;
	if (i >= p.B * p.S)
		return;
	uint bi = i / p.S, s = i - bi * p.S;
	uint mode = p.flags & LQ_NORM_MODE_MASK;
	bool has_w = LQ_FIELD(p.flags, LQ_NORM_HAS_W, 1u) != 0u;
	bool has_b = LQ_FIELD(p.flags, LQ_NORM_HAS_B, 1u) != 0u;
	uint dtw = LQ_FIELD(p.flags, LQ_NORM_DTW, LQ_DT_MASK);
	uint dtb = LQ_FIELD(p.flags, LQ_NORM_DTB, LQ_DT_MASK);
	uint xb = p.off_x + bi * p.C * p.S + s, yb = p.off_y + bi * p.C * p.S + s;
	float fC = float(p.C);
	float mean = 0.0;
	if (mode == LQ_NORM_LAYER) {
		float sm = 0.0;
		for (uint c = 0u; c < p.C; c++)
			sm += LDF(x.d, xb + c * p.S);
		mean = sm / fC;
	}
	float s2 = 0.0;
	for (uint c = 0u; c < p.C; c++) {
		float v = LDF(x.d, xb + c * p.S) - mean;
		s2 += v * v;
	}
	float inv = inversesqrt(s2 / fC + p.eps);
	for (uint c = 0u; c < p.C; c++) {
		float v = (LDF(x.d, xb + c * p.S) - mean) * inv;
		if (has_w)
			v *= LD(w.d, dtw, p.off_w + c);
		if (has_b)
			v += LD(b.d, dtb, p.off_b + c);
		STF(y.d, yb + c * p.S, v);
	}
}
