/*
 * rope.comp — diffusers LTX `apply_rotary_emb`, interleaved pairs:
 * y[2i] = x[2i] cos[2i] - x[2i+1] sin[2i]; y[2i+1] = x[2i+1] cos[2i+1] +
 * x[2i] sin[2i+1].  One invocation per pair.
 */
#version 450
#define KERNEL_ROPE
#include "common.glsl"

layout(local_size_x = 128) in;
layout(binding = 0) buffer Y { uint d[]; } y;
layout(binding = 1) readonly buffer X { uint d[]; } x;
layout(binding = 2) readonly buffer CO { uint d[]; } co;
layout(binding = 3) readonly buffer SI { uint d[]; } si;

void main()
{
	uint i = lq_group_id() * 128u + gl_LocalInvocationID.x;
	uint half_d = p.D / 2u;
	if (i >= p.B * p.N * half_d)
		return;
	uint e = 2u * i;			/* element index in [B, N, D] */
	uint b = e / (p.N * p.D);
	uint r = e - b * p.N * p.D;		/* index within [N, D] */
	uint dtc = LQ_FIELD(p.flags, LQ_ROPE_DT_COS, LQ_DT_MASK);
	uint dts = LQ_FIELD(p.flags, LQ_ROPE_DT_SIN, LQ_DT_MASK);
	float x0 = LDF(x.d, p.off_x + e), x1 = LDF(x.d, p.off_x + e + 1u);
	uint cb = b * p.cs_sb + r;
	float c0 = LD(co.d, dtc, p.off_cos + cb);
	float c1 = LD(co.d, dtc, p.off_cos + cb + 1u);
	float s0 = LD(si.d, dts, p.off_sin + cb);
	float s1 = LD(si.d, dts, p.off_sin + cb + 1u);
	STF(y.d, p.off_y + e, x0 * c0 - x1 * s0);
	STF(y.d, p.off_y + e + 1u, x1 * c1 + x0 * s1);
}
