/*
 * attn_sg.comp — attn.comp's fused attention for GPUs with subgroup
 * arithmetic (attn_sg*, device.c subgroup_resolve): a subgroup per query
 * row instead of an invocation, so a row's q and its output accumulator
 * are spread over the lanes (head_dim / S each, S = gl_SubgroupSize)
 * instead of MAXD registers in one invocation, and each key's dot product
 * is the lanes' partial sums combined by subgroupAdd.  A workgroup's 64
 * invocations hold 64 / S rows of one (b, h) and stage each tile of keys
 * and values in shared memory once for all of them, as attn.comp does.
 *
 * The softmax is attn.comp's: per tile, the scores (every lane holds all
 * of them), the running max raised to the tile's, the accumulator and
 * the sum rescaled, then the numerators e^(s - max) summed and, rounded
 * to the op's precision, times v.  Keys in ascending order, the dot's
 * lanes combined by the device's subgroupAdd: the same bits run to run on
 * one device, rows alone or together; not attn.comp's bits.  The operands
 * are rounded to the precision the flags give (lq_round, LQ_ATTN_PREC):
 * the loops are short, so one kernel serves every precision.
 *
 * -DMAXD bounds head_dim (32, 64, 128, 256); each lane keeps MAXD / 8
 * elements, so subgroups of 8 lanes or more (subgroup_resolve asks that).
 * Rows go in a grid-stride loop that every subgroup of a workgroup runs
 * the same number of times (the tiles' barriers), so any subgroup size
 * and any grid cover them all.
 */
#version 450
#define KERNEL_ATTN
#include "common.glsl"
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require

#ifndef MAXD
#define MAXD 64
#endif
#define DPL (MAXD / 8)		/* elements per lane, at 8 lanes or more */

layout(local_size_x = 64) in;
layout(binding = 0) writeonly buffer O { uint d[]; } o;
layout(binding = 1) readonly buffer Q { uint d[]; } q;
layout(binding = 2) readonly buffer K { uint d[]; } k;
layout(binding = 3) readonly buffer V { uint d[]; } v;
layout(binding = 4) readonly buffer KB { uint d[]; } kb;
layout(binding = 5) readonly buffer BI { uint d[]; } bi;

#include "attn_tile.glsl"

void main()
{
	uint t = gl_LocalInvocationID.x;
	uint S = gl_SubgroupSize, lane = gl_SubgroupInvocationID;
	uint bh = gl_WorkGroupID.y;
	uint b = bh / p.H, h = bh - b * p.H;
	uint prec = LQ_FIELD(p.flags, LQ_ATTN_PREC, LQ_PREC_MASK);
	bool has_kb = LQ_FIELD(p.flags, LQ_ATTN_HAS_KB, 1u) != 0u;
	bool has_bias = LQ_FIELD(p.flags, LQ_ATTN_HAS_BIAS, 1u) != 0u;
	bool bias_b = LQ_FIELD(p.flags, LQ_ATTN_BIAS_B, 1u) != 0u;
	uint dtkb = LQ_FIELD(p.flags, LQ_ATTN_DT_KB, LQ_DT_MASK);
	uint dtbias = LQ_FIELD(p.flags, LQ_ATTN_DT_BIAS, LQ_DT_MASK);
	uint Dh = p.Dh, Dv = p.Dv;
	uint kbbase = p.off_kb + b * p.kb_sb;
	uint R = gl_NumSubgroups;

	/* uniform per workgroup: every subgroup runs every pass */
	for (uint r0 = gl_WorkGroupID.x * R; r0 < p.Nq;
	    r0 += gl_NumWorkGroups.x * R) {
		uint i = r0 + gl_SubgroupID;
		bool live = i < p.Nq;	/* uniform per subgroup */
		uint ic = min(i, p.Nq - 1u);
		float qv[DPL], acc[DPL];
		uint qbase = p.off_q + b * p.q_sb + ic * p.q_sn + h * Dh;
		[[unroll]] for (uint c = 0u; c < DPL; c++) {
			uint d = lane + c * S;
			qv[c] = d < Dh ? lq_round(LDF(q.d, qbase + d), prec) : 0.0;
			acc[c] = 0.0;
		}
		float m = -3.0e38, l = 0.0;
		uint biasbase = p.off_bias +
		    (((bias_b ? b : 0u) * p.H + h) * p.Nq + ic) * p.Nk;

		for (uint j0 = 0u; j0 < p.Nk; j0 += TKH) {
			uint tk = min(uint(TKH), p.Nk - j0);
			barrier();
			attn_stage_tile(j0, tk, b, h, t, prec);
			barrier();
			if (!live)
				continue;
			float sc[TKH];
			float mt = m;
			for (uint j = 0u; j < tk; j++) {
				float s = 0.0;
				[[unroll]] for (uint c = 0u; c < DPL; c++) {
					uint d = lane + c * S;
					if (d < Dh)
						s = fma(qv[c], Ks[j * MAXD + d], s);
				}
				s = subgroupAdd(s) * p.scale;
				if (has_kb)
					s += LD(kb.d, dtkb, kbbase + j0 + j);
				if (has_bias)
					s += LD(bi.d, dtbias, biasbase + j0 + j);
				sc[j] = s;
				mt = max(mt, s);
			}
			float corr = exp(m - mt);
			l *= corr;
			[[unroll]] for (uint c = 0u; c < DPL; c++)
				acc[c] *= corr;
			for (uint j = 0u; j < tk; j++) {
				float pj = exp(sc[j] - mt);
				l += pj;
				pj = lq_round(pj, prec);
				[[unroll]] for (uint c = 0u; c < DPL; c++) {
					uint d = lane + c * S;
					if (d < Dv)
						acc[c] = fma(pj, Vs[j * MAXD + d],
						    acc[c]);
				}
			}
			m = mt;
		}
		if (!live)
			continue;
		float inv = 1.0 / l;
		uint obase = p.off_o + (b * p.Nq + i) * p.H * Dv + h * Dv;
		[[unroll]] for (uint c = 0u; c < DPL; c++) {
			uint d = lane + c * S;
			if (d < Dv)
				STF(o.d, obase + d, acc[c] * inv);
		}
	}
}
