/*
 * matmul.comp — c[z] = act(alpha · a[z] · op(b[z]) + bias), fp32 accumulate.
 * a [M, K] f32, b [N, K] (trans_b, torch Linear weight) or [K, N] in dtype
 * BT (-DBT=0/1/2: f32/f16/bf16), c [M, N] f32.  Tiles of 64×64 outputs per
 * workgroup of 128 invocations (8×4 per invocation), K in steps of 16
 * through shared memory.  Fixed summation order: k ascending.  In the
 * -DROUND copy (matmul_*_r) the flags' LQ_MM_PREC rounds a and b as they
 * are staged (lq_round).
 */
#version 450
#define KERNEL_MATMUL
#include "common.glsl"

#ifndef BT
#define BT 0u
#endif

#define BM 64
#define BN 64
#define BK 16
#define TM 8
#define TN 4

layout(local_size_x = 128) in;
layout(binding = 0) writeonly buffer Cb { uint d[]; } c;
layout(binding = 1) readonly buffer Ab { uint d[]; } a;
layout(binding = 2) readonly buffer Bb { uint d[]; } b;
layout(binding = 3) readonly buffer Bias { uint d[]; } bias;

shared float As[BK][BM + 1];
shared float Bs[BK][BN + 1];

void run(uint prec)
{
	uint tid = gl_LocalInvocationID.x;
	uint tx = tid & 15u, ty = tid >> 4;	/* 16 × 8 */
	uint n0 = gl_WorkGroupID.x * BN, m0 = gl_WorkGroupID.y * BM;
	uint z = gl_WorkGroupID.z;
	bool trans_b = LQ_FIELD(p.flags, LQ_MM_TRANS_B, 1u) != 0u;
	uint abase = p.off_a + z * p.sa_batch;
	uint bbase = p.off_b + z * p.sb_batch;
	float acc[TM][TN];
	[[unroll]] for (int i = 0; i < TM; i++)
		[[unroll]] for (int j = 0; j < TN; j++)
			acc[i][j] = 0.0;

	for (uint k0 = 0u; k0 < p.K; k0 += BK) {
		[[unroll]] for (uint r = 0u; r < (BM * BK) / 128u; r++) {
			uint e = tid + 128u * r;
			uint m = e / BK, kk = e % BK;
			uint gm = m0 + m, gk = k0 + kk;
			As[kk][m] = (gm < p.M && gk < p.K) ?
			    lq_round(LDF(a.d, abase + gm * p.K + gk), prec) :
			    0.0;
		}
		[[unroll]] for (uint r = 0u; r < (BN * BK) / 128u; r++) {
			uint e = tid + 128u * r;
			uint n, kk;
			if (trans_b) {
				n = e / BK;
				kk = e % BK;
			} else {
				kk = e / BN;
				n = e % BN;
			}
			uint gn = n0 + n, gk = k0 + kk;
			float v = 0.0;
			if (gn < p.N && gk < p.K) {
				uint idx = bbase + (trans_b ? gn * p.K + gk :
				    gk * p.N + gn);
				v = lq_round(LD(b.d, BT, idx), prec);
			}
			Bs[kk][n] = v;
		}
		barrier();
		[[unroll]] for (uint kk = 0u; kk < BK; kk++) {
			float av[TM], bv[TN];
			[[unroll]] for (uint i = 0u; i < TM; i++)
				av[i] = As[kk][ty + 8u * i];
			[[unroll]] for (uint j = 0u; j < TN; j++)
				bv[j] = Bs[kk][tx + 16u * j];
			[[unroll]] for (uint i = 0u; i < TM; i++)
				[[unroll]] for (uint j = 0u; j < TN; j++)
					acc[i][j] = fma(av[i], bv[j], acc[i][j]);
		}
		barrier();
	}

	uint act = LQ_FIELD(p.flags, LQ_MM_ACT, LQ_ACT_MASK);
	bool has_bias = LQ_FIELD(p.flags, LQ_MM_HAS_BIAS, 1u) != 0u;
	uint dtb = LQ_FIELD(p.flags, LQ_MM_DT_BIAS, LQ_DT_MASK);
	uint cbase = p.off_c + z * p.sc_batch;
	[[unroll]] for (uint j = 0u; j < TN; j++) {
		uint gn = n0 + tx + 16u * j;
		if (gn >= p.N)
			continue;
		float bb = has_bias ? LD(bias.d, dtb, p.off_bias + gn) : 0.0;
		[[unroll]] for (uint i = 0u; i < TM; i++) {
			uint gm = m0 + ty + 8u * i;
			if (gm < p.M)
				STF(c.d, cbase + gm * p.ldc + gn,
				    lq_act(p.alpha * acc[i][j] + bb, act));
		}
	}
}

/*
 * -DROUND (the _r kernels, kernels.def): the operands rounded to the
 * precision the flags give (lq_round); else the f32 copy, whose loops
 * have no rounding in them.
 */
void main()
{
#ifdef ROUND
	run(LQ_FIELD(p.flags, LQ_MM_PREC, LQ_PREC_MASK));
#else
	run(LQ_PREC_F32);
#endif
}
