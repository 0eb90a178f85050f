/*
 * gnorm.comp — GroupNorm: x [B, C, S], one workgroup of 128 per (b, g);
 * statistics over the group's C/G channels × S positions (two passes),
 * then per-channel affine.
 */
#version 450
#define KERNEL_GNORM
#include "common.glsl"
#include "reduce.glsl"

layout(local_size_x = 128) in;
layout(binding = 0) buffer Y { uint d[]; } y;
layout(binding = 1) readonly buffer X { uint d[]; } x;
layout(binding = 2) readonly buffer Wt { uint d[]; } w;
layout(binding = 3) readonly buffer Bs { uint d[]; } b;

void main()
{
	uint gid = lq_group_id();
	if (gid >= p.B * p.G)
		return;
	uint t = gl_LocalInvocationID.x;
	uint bi = gid / p.G, g = gid - bi * p.G;
	uint cg = p.C / p.G;
	uint n = cg * p.S;
	uint base = (bi * p.C + g * cg) * p.S;
	bool has_w = LQ_FIELD(p.flags, LQ_NORM_HAS_W, 1u) != 0u;
	bool has_b = LQ_FIELD(p.flags, LQ_NORM_HAS_B, 1u) != 0u;
	uint dtw = LQ_FIELD(p.flags, LQ_NORM_DTW, LQ_DT_MASK);
	uint dtb = LQ_FIELD(p.flags, LQ_NORM_DTB, LQ_DT_MASK);
	float s = 0.0;
	for (uint i = t; i < n; i += 128u)
		s += LDF(x.d, p.off_x + base + i);
	float mean = wg_sum(s) / float(n);
	float s2 = 0.0;
	for (uint i = t; i < n; i += 128u) {
		float v = LDF(x.d, p.off_x + base + i) - mean;
		s2 += v * v;
	}
	float inv = inversesqrt(wg_sum(s2) / float(n) + p.eps);
	for (uint i = t; i < n; i += 128u) {
		uint c = g * cg + i / p.S;
		float v = (LDF(x.d, p.off_x + base + i) - mean) * inv;
		if (has_w)
			v *= LD(w.d, dtw, p.off_w + c);
		if (has_b)
			v += LD(b.d, dtb, p.off_b + c);
		STF(y.d, p.off_y + base + i, v);
	}
}
