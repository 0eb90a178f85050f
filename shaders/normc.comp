/*
 * normc.comp — normalisation over channels of x [B, C, S] at each (b, s):
 * LayerNorm (mode 0) or RMSNorm (mode 1); one invocation per position,
 * channels summed in ascending order.  Phases 1-3 (push.h) run the same
 * sums block by block of channels, carried in stats, for tensors larger
 * than one binding: the same order, so the same bits.
 */
#version 450
#define KERNEL_NORMC
#include "common.glsl"

layout(local_size_x = 128) in;
layout(binding = 0) buffer Y { uint d[]; } y;
layout(binding = 1) readonly buffer X { uint d[]; } x;
layout(binding = 2) readonly buffer Wt { uint d[]; } w;
layout(binding = 3) readonly buffer Bs { uint d[]; } b;
layout(binding = 4) buffer St { uint d[]; } st;

void main()
{
	uint i = lq_group_id() * 128u + gl_LocalInvocationID.x;
	if (i >= p.B * p.S)
		return;
	uint bi = i / p.S, s = i - bi * p.S;
	uint mode = p.flags & LQ_NORM_MODE_MASK;
	uint phase = (p.flags >> NORMC_PHASE_SHIFT) & 3u;
	bool first = (p.flags & NORMC_FIRST) != 0u;
	bool has_w = LQ_FIELD(p.flags, LQ_NORM_HAS_W, 1u) != 0u;
	bool has_b = LQ_FIELD(p.flags, LQ_NORM_HAS_B, 1u) != 0u;
	uint dtw = LQ_FIELD(p.flags, LQ_NORM_DTW, LQ_DT_MASK);
	uint dtb = LQ_FIELD(p.flags, LQ_NORM_DTB, LQ_DT_MASK);
	uint xb = p.off_x + bi * p.C * p.cs + s, yb = p.off_y + bi * p.C * p.cs + s;
	float fC = float(phase == 0u ? p.C : p.Ctot);
	float mean = 0.0;
	if (phase == 1u) {
		float sm = first ? 0.0 : LDF(st.d, p.off_s + s);
		for (uint c = 0u; c < p.C; c++)
			sm += LDF(x.d, xb + c * p.cs);
		STF(st.d, p.off_s + s, sm);
		return;
	}
	if (phase != 0u && mode == LQ_NORM_LAYER)
		mean = LDF(st.d, p.off_s + s) / fC;
	if (phase == 0u && mode == LQ_NORM_LAYER) {
		float sm = 0.0;
		for (uint c = 0u; c < p.C; c++)
			sm += LDF(x.d, xb + c * p.cs);
		mean = sm / fC;
	}
	float inv;
	if (phase == 3u) {
		inv = inversesqrt(LDF(st.d, p.off_s + p.S + s) / fC + p.eps);
	} else {
		float s2 = phase == 2u && !first ?
		    LDF(st.d, p.off_s + p.S + s) : 0.0;
		for (uint c = 0u; c < p.C; c++) {
			float v = LDF(x.d, xb + c * p.cs) - mean;
			s2 += v * v;
		}
		if (phase == 2u) {
			STF(st.d, p.off_s + p.S + s, s2);
			return;
		}
		inv = inversesqrt(s2 / fC + p.eps);
	}
	for (uint c = 0u; c < p.C; c++) {
		float v = (LDF(x.d, xb + c * p.cs) - mean) * inv;
		if (has_w)
			v *= LD(w.d, dtw, p.off_w + c);
		if (has_b)
			v += LD(b.d, dtb, p.off_b + c);
		STF(y.d, yb + c * p.cs, v);
	}
}
