/*
 * attn.comp — fused scaled-dot-product attention with online softmax.
 * One invocation per query row; a workgroup holds 64 rows of one (b, h)
 * and streams keys/values through shared memory in tiles of TK keys.
 * -DMAXD bounds head_dim (32, 64, 128, 256); keys are visited in
 * ascending order, so results are reproducible bit for bit.
 */
#version 450
#define KERNEL_ATTN
#include "common.glsl"

#ifndef MAXD
#define MAXD 64
#endif
layout(local_size_x = 64) in;
layout(binding = 0) writeonly buffer O { uint d[]; } o;
layout(binding = 1) readonly buffer Q { uint d[]; } q;
layout(binding = 2) readonly buffer K { uint d[]; } k;
layout(binding = 3) readonly buffer V { uint d[]; } v;
layout(binding = 4) readonly buffer KB { uint d[]; } kb;
layout(binding = 5) readonly buffer BI { uint d[]; } bi;

#include "attn_tile.glsl"

void run(uint prec)
{
	uint t = gl_LocalInvocationID.x;
	uint i = gl_WorkGroupID.x * 64u + t;
	uint bh = gl_WorkGroupID.y;
	uint b = bh / p.H, h = bh - b * p.H;
	bool live = i < p.Nq;
	bool has_kb = LQ_FIELD(p.flags, LQ_ATTN_HAS_KB, 1u) != 0u;
	bool has_bias = LQ_FIELD(p.flags, LQ_ATTN_HAS_BIAS, 1u) != 0u;
	bool bias_b = LQ_FIELD(p.flags, LQ_ATTN_BIAS_B, 1u) != 0u;
	uint dtkb = LQ_FIELD(p.flags, LQ_ATTN_DT_KB, LQ_DT_MASK);
	uint dtbias = LQ_FIELD(p.flags, LQ_ATTN_DT_BIAS, LQ_DT_MASK);
	uint Dh = p.Dh, Dv = p.Dv;

	float qv[MAXD];
	float acc[MAXD];
	uint qbase = p.off_q + b * p.q_sb + min(i, p.Nq - 1u) * p.q_sn + h * Dh;
	[[unroll]] for (uint d = 0u; d < MAXD; d++) {
		qv[d] = d < Dh ? lq_round(LDF(q.d, qbase + d), prec) : 0.0;
		acc[d] = 0.0;
	}
	float m = -3.0e38, l = 0.0;
	uint kbbase = p.off_kb + b * p.kb_sb;
	uint biasbase = p.off_bias +
	    (((bias_b ? b : 0u) * p.H + h) * p.Nq + min(i, p.Nq - 1u)) * p.Nk;

	for (uint j0 = 0u; j0 < p.Nk; j0 += TKH) {
		uint tk = min(uint(TKH), p.Nk - j0);
		barrier();
		attn_stage_tile(j0, tk, b, h, t, prec);
		barrier();
		if (!live)
			continue;
		float sc[TKH];
		float mt = m;
		[[dont_unroll]] for (uint j = 0u; j < tk; j++) {
			{
				float s = 0.0;
				[[unroll]] for (uint d = 0u; d < MAXD; d++)
					if (d < Dh)
						s = fma(qv[d], Ks[j * MAXD + d], s);
				s *= p.scale;
				if (has_kb)
					s += LD(kb.d, dtkb, kbbase + j0 + j);
				if (has_bias)
					s += LD(bi.d, dtbias, biasbase + j0 + j);
				sc[j] = s;
				mt = max(mt, s);
			}
		}
		float corr = exp(m - mt);
		l *= corr;
		[[unroll]] for (uint d = 0u; d < MAXD; d++)
			acc[d] *= corr;
		[[dont_unroll]] for (uint j = 0u; j < tk; j++) {
			{
				float pj = exp(sc[j] - mt);
				l += pj;
				pj = lq_round(pj, prec);
				[[unroll]] for (uint d = 0u; d < MAXD; d++)
					if (d < Dv)
						acc[d] = fma(pj, Vs[j * MAXD + d], acc[d]);
			}
		}
		m = mt;
	}
	if (!live)
		return;
	float inv = 1.0 / l;
	uint obase = p.off_o + (b * p.Nq + i) * p.H * Dv + h * Dv;
	[[unroll]] for (uint d = 0u; d < MAXD; d++)
		if (d < Dv)
			STF(o.d, obase + d, acc[d] * inv);
}

/*
 * -DROUND (the _r kernels, kernels.def): the operands rounded to the
 * precision the flags give (lq_round); else the f32 copy, whose loops
 * have no rounding in them.
 */
void main()
{
#ifdef ROUND
	run(LQ_FIELD(p.flags, LQ_ATTN_PREC, LQ_PREC_MASK));
#else
	run(LQ_PREC_F32);
#endif
}
