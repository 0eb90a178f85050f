/*
 * rope.comp — diffusers LTX `apply_rotary_emb`, interleaved pairs:
 * y[2i] = x[2i] cos[2i] - x[2i+1] sin[2i]; y[2i+1] = x[2i+1] cos[2i+1] +
 * x[2i] sin[2i+1].  With LQ_ROPE_SPLIT, LTX-2's `apply_split_rotary_emb`:
 * in each head of hd channels the pairs are (j, j + hd/2) and the tables
 * [.., N, D/2] hold one angle per pair (index h·hd/2 + j):
 * y[j] = x[j] c - x[j + hd/2] s; y[j + hd/2] = x[j + hd/2] c + x[j] s.
 * One invocation per pair.
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
	uint dtc = LQ_FIELD(p.flags, LQ_ROPE_DT_COS, LQ_DT_MASK);
	uint dts = LQ_FIELD(p.flags, LQ_ROPE_DT_SIN, LQ_DT_MASK);
	if (LQ_FIELD(p.flags, LQ_ROPE_SPLIT, 1u) != 0u) {
		uint hh = p.hd / 2u;
		uint rp = i % half_d, row = i / half_d;	/* row = b·N + n */
		uint b = row / p.N;
		uint e0 = row * p.D + (rp / hh) * p.hd + rp % hh;
		uint ci = b * p.cs_sb + (row - b * p.N) * half_d + rp;
		float c = LD(co.d, dtc, p.off_cos + ci);
		float s = LD(si.d, dts, p.off_sin + ci);
		float x0 = LDF(x.d, p.off_x + e0), x1 = LDF(x.d, p.off_x + e0 + hh);
		STF(y.d, p.off_y + e0, x0 * c - x1 * s);
		STF(y.d, p.off_y + e0 + hh, x1 * c + x0 * s);
		return;
	}
	uint e = 2u * i;			/* element index in [B, N, D] */
	uint b = e / (p.N * p.D);
	uint r = e - b * p.N * p.D;		/* index within [N, D] */
	float x0 = LDF(x.d, p.off_x + e), x1 = LDF(x.d, p.off_x + e + 1u);
	uint cb = b * p.cs_sb + r;
	float c0 = LD(co.d, dtc, p.off_cos + cb);
	float c1 = LD(co.d, dtc, p.off_cos + cb + 1u);
	float s0 = LD(si.d, dts, p.off_sin + cb);
	float s1 = LD(si.d, dts, p.off_sin + cb + 1u);
	STF(y.d, p.off_y + e, x0 * c0 - x1 * s0);
	STF(y.d, p.off_y + e + 1u, x1 * c1 + x0 * s1);
}
