/*
 * linear.comp — fast path of matmul for y = act(alpha·x·wᵀ + b) with w in
 * torch layout [N, K] and K % 4 == 0: each invocation owns TM rows of x and
 * a workgroup shares one block of TN output columns, so the weight loads
 * are uniform across the workgroup (one load broadcast to every lane; CPU
 * drivers such as lavapipe and GPUs' scalar units both like that) and each
 * lane streams its own rows of x as vec4.  Same summation order on every
 * run (k ascending in 4-wide steps, lanes of a vec4 summed by fma chain).
 * Uses matmul_push; -DWT=0/1/2 selects the weight dtype (f32/f16/bf16).
 *
 * -DGEMV (linear_gemv_*, ops.c for M <= TM rows, the timestep and caption
 * projections): one invocation per output column, all M rows in its
 * registers, the rows' loads uniform instead of the weights'.  The sum of
 * each output is the same fma chain in the same k order, so a row has the
 * same bits through either kernel, alone or among many rows.
 *
 * With LQ_MM_RESID in the flags (ops_linear_gated_add) every variant adds
 * a gated residual in its epilogue, c = r + gate · act(...) (push.h), so
 * the linear's output is never stored and read back; the product and the
 * sum are rounded apart as ew.comp's gated add rounds them.
 */
#version 450
#define KERNEL_MATMUL
#include "common.glsl"

#ifndef WT
#define WT 0
#endif
#define TN LINEAR_TN
#define TM LINEAR_TM

layout(local_size_x = 64) in;
layout(binding = 0) writeonly buffer Cb { uint d[]; } c;
#ifdef TEX
/* Texel buffers: one fetch per 4 elements (RGBA32F x; RGBA32F, RGBA16F or
 * RG32UI w), cheaper than storage-buffer loads on some drivers. */
layout(binding = 1) uniform samplerBuffer ta;
#if WT == 2
layout(binding = 2) uniform usamplerBuffer tb;
#else
layout(binding = 2) uniform samplerBuffer tb;
#endif
#define LDX(i) texelFetch(ta, int(i))
#else
layout(binding = 1) readonly buffer Ab { vec4 d[]; } a;
#if WT == 0
layout(binding = 2) readonly buffer Bb { vec4 d[]; } b;
#else
layout(binding = 2) readonly buffer Bb { uvec2 d[]; } b;
#endif
#define LDX(i) a.d[i]
#endif
layout(binding = 3) readonly buffer Bias { uint d[]; } bias;
/* LQ_MM_RESID: the residual r (f32; may be c itself, each element read
 * by the invocation that then writes it) and the gate (any dtype) */
layout(binding = 4) readonly buffer Res { uint d[]; } res;
layout(binding = 5) readonly buffer Gate { uint d[]; } gate;

vec4 ldw(uint i)	/* i: index in units of 4 elements */
{
#ifdef TEX
#if WT == 2
	uvec2 u = texelFetch(tb, int(i)).xy;
	return vec4(uintBitsToFloat(u.x << 16), uintBitsToFloat(u.x & 0xffff0000u),
	    uintBitsToFloat(u.y << 16), uintBitsToFloat(u.y & 0xffff0000u));
#else
	return texelFetch(tb, int(i));
#endif
#elif WT == 0
	return b.d[i];
#elif WT == 1
	uvec2 u = b.d[i];
	return vec4(unpackHalf2x16(u.x), unpackHalf2x16(u.y));
#else
	uvec2 u = b.d[i];
	return vec4(uintBitsToFloat(u.x << 16), uintBitsToFloat(u.x & 0xffff0000u),
	    uintBitsToFloat(u.y << 16), uintBitsToFloat(u.y & 0xffff0000u));
#endif
}

/*
 * The value stored for output row m (of this dispatch), column n, from
 * v = act(alpha·sum + bias): v, or with LQ_MM_RESID r + gate · v.
 * `precise`: no compiler may contract it into an fma, which ew.comp's
 * gated add (ops_gated_add, the unfused pair's second op) does not do
 * either, so the fused bits are that pair's.
 */
float epilogue(float v, uint m, uint n)
{
	if (LQ_FIELD(p.flags, LQ_MM_RESID, 1u) == 0u)
		return v;
	float r = LDF(res.d, p.off_r + m * p.ldc + n);
	precise float o;
	if (LQ_FIELD(p.flags, LQ_MM_HAS_GATE, 1u) != 0u) {
		uint gm = p.g_m0 + m;
		uint gi = p.off_g + (gm / p.g_n) * p.sg_b + (gm % p.g_n) * p.sg_n
		    + n;
		o = r + LD(gate.d, LQ_FIELD(p.flags, LQ_MM_DT_GATE, LQ_DT_MASK),
		    gi) * v;
	} else {
		o = r + v;
	}
	return o;
}

#ifdef GEMV
void main()
{
	uint n = gl_WorkGroupID.x * 64u + gl_LocalInvocationID.x;
	uint z = gl_WorkGroupID.z;
	if (n >= p.N)
		return;
	uint K4 = p.K / 4u;
	uint abase = (p.off_a + z * p.sa_batch) / 4u;
	uint brow = (p.off_b + z * p.sb_batch) / 4u + n * K4;
	uint arow[TM];
	[[unroll]] for (uint i = 0u; i < TM; i++)
		arow[i] = abase + min(i, p.M - 1u) * K4;
	float acc[TM];
	[[unroll]] for (uint i = 0u; i < TM; i++)
		acc[i] = 0.0;
	for (uint k = 0u; k < K4; k++) {
		vec4 wv = ldw(brow + k);
		[[unroll]] for (uint i = 0u; i < TM; i++) {
			vec4 xv = LDX(arow[i] + k);
			float s = acc[i];
			s = fma(xv.x, wv.x, s);
			s = fma(xv.y, wv.y, s);
			s = fma(xv.z, wv.z, s);
			s = fma(xv.w, wv.w, s);
			acc[i] = s;
		}
	}
	uint act = LQ_FIELD(p.flags, LQ_MM_ACT, LQ_ACT_MASK);
	bool has_bias = LQ_FIELD(p.flags, LQ_MM_HAS_BIAS, 1u) != 0u;
	uint dtb = LQ_FIELD(p.flags, LQ_MM_DT_BIAS, LQ_DT_MASK);
	uint cbase = p.off_c + z * p.sc_batch;
	float bb = has_bias ? LD(bias.d, dtb, p.off_bias + n) : 0.0;
	[[unroll]] for (uint i = 0u; i < TM; i++)
		if (i < p.M)
			STF(c.d, cbase + i * p.ldc + n,
			    epilogue(lq_act(p.alpha * acc[i] + bb, act), i, n));
}
#else
void main()
{
	uint m0 = (gl_WorkGroupID.x * 64u + gl_LocalInvocationID.x) * TM;
	uint n0 = gl_WorkGroupID.y * TN;
	uint z = gl_WorkGroupID.z;
	uint K4 = p.K / 4u;
	uint abase = (p.off_a + z * p.sa_batch) / 4u;
	uint bbase = (p.off_b + z * p.sb_batch) / 4u;
	uint arow[TM];
	[[unroll]] for (uint i = 0u; i < TM; i++)
		arow[i] = abase + min(m0 + i, p.M - 1u) * K4;
	uint brow[TN];
	[[unroll]] for (uint j = 0u; j < TN; j++)
		brow[j] = bbase + min(n0 + j, p.N - 1u) * K4;
	float acc[TM][TN];
	[[unroll]] for (uint i = 0u; i < TM; i++)
		[[unroll]] for (uint j = 0u; j < TN; j++)
			acc[i][j] = 0.0;
	for (uint k = 0u; k < K4; k++) {
		vec4 xv[TM];
		[[unroll]] for (uint i = 0u; i < TM; i++)
			xv[i] = LDX(arow[i] + k);
		[[unroll]] for (uint j = 0u; j < TN; j++) {
			vec4 wv = ldw(brow[j] + k);
			[[unroll]] for (uint i = 0u; i < TM; i++) {
				float s = acc[i][j];
				s = fma(xv[i].x, wv.x, s);
				s = fma(xv[i].y, wv.y, s);
				s = fma(xv[i].z, wv.z, s);
				s = fma(xv[i].w, wv.w, s);
				acc[i][j] = s;
			}
		}
	}
	uint act = LQ_FIELD(p.flags, LQ_MM_ACT, LQ_ACT_MASK);
	bool has_bias = LQ_FIELD(p.flags, LQ_MM_HAS_BIAS, 1u) != 0u;
	uint dtb = LQ_FIELD(p.flags, LQ_MM_DT_BIAS, LQ_DT_MASK);
	uint cbase = p.off_c + z * p.sc_batch;
	[[unroll]] for (uint j = 0u; j < TN; j++) {
		uint n = n0 + j;
		if (n >= p.N)
			break;
		float bb = has_bias ? LD(bias.d, dtb, p.off_bias + n) : 0.0;
		[[unroll]] for (uint i = 0u; i < TM; i++) {
			uint m = m0 + i;
			if (m < p.M)
				STF(c.d, cbase + m * p.ldc + n,
				    epilogue(lq_act(p.alpha * acc[i][j] + bb,
				    act), m, n));
		}
	}
}
#endif
