/*
 * attn_tex.comp — fused attention for head dims that are multiples of 4,
 * reading q, k, v through texel buffers (vec4 fetches; k and v fetches are
 * the same for every lane of a workgroup).  Each invocation owns TQ query
 * rows of one (b, h); keys are visited in ascending order in tiles of TKB
 * with an online softmax rescale per tile.  -DMAXD bounds head_dim.
 * Same push block as attn.comp.
 */
#version 450
#define KERNEL_ATTN
#include "common.glsl"

#ifndef MAXD
#define MAXD 64
#endif
#define D4 (MAXD / 4)
#define TQ ATTN_TQ
#define TKB 8

layout(local_size_x = 64) in;
layout(binding = 0) writeonly buffer O { uint d[]; } o;
layout(binding = 1) uniform samplerBuffer tq;
layout(binding = 2) uniform samplerBuffer tk;
layout(binding = 3) uniform samplerBuffer tv;
layout(binding = 4) readonly buffer KB { uint d[]; } kb;
layout(binding = 5) readonly buffer BI { uint d[]; } bi;

void main()
{
	uint i0 = (gl_WorkGroupID.x * 64u + gl_LocalInvocationID.x) * TQ;
	if (i0 >= p.Nq)
		return;		/* no barriers in this kernel */
	uint bh = gl_WorkGroupID.y;
	uint b = bh / p.H, h = bh - b * p.H;
	bool has_kb = LQ_FIELD(p.flags, LQ_ATTN_HAS_KB, 1u) != 0u;
	bool has_bias = LQ_FIELD(p.flags, LQ_ATTN_HAS_BIAS, 1u) != 0u;
	bool bias_b = LQ_FIELD(p.flags, LQ_ATTN_BIAS_B, 1u) != 0u;
	uint dtkb = LQ_FIELD(p.flags, LQ_ATTN_DT_KB, LQ_DT_MASK);
	uint dtbias = LQ_FIELD(p.flags, LQ_ATTN_DT_BIAS, LQ_DT_MASK);
	uint Dh4 = p.Dh / 4u, Dv4 = p.Dv / 4u;
	uint row[TQ];
	vec4 qv[TQ][D4];
	vec4 acc[TQ][D4];
	float m[TQ], l[TQ];
	[[unroll]] for (uint r = 0u; r < TQ; r++) {
		row[r] = min(i0 + r, p.Nq - 1u);
		uint qb = (p.off_q + b * p.q_sb + row[r] * p.q_sn + h * p.Dh) / 4u;
		[[unroll]] for (uint d = 0u; d < D4; d++) {
			qv[r][d] = d < Dh4 ? texelFetch(tq, int(qb + d)) : vec4(0.0);
			acc[r][d] = vec4(0.0);
		}
		m[r] = -3.0e38;
		l[r] = 0.0;
	}
	uint kbbase = p.off_kb + b * p.kb_sb;
	uint biasrow = ((bias_b ? b : 0u) * p.H + h) * p.Nq;

	for (uint j0 = 0u; j0 < p.Nk; j0 += TKB) {
		float s[TQ][TKB];
		[[unroll]] for (uint jj = 0u; jj < TKB; jj++) {
			uint j = min(j0 + jj, p.Nk - 1u);
			uint kbs = (p.off_k + b * p.k_sb + j * p.k_sn + h * p.Dh) / 4u;
			float dots[TQ];
			[[unroll]] for (uint r = 0u; r < TQ; r++)
				dots[r] = 0.0;
			[[unroll]] for (uint d = 0u; d < D4; d++) {
				if (d < Dh4) {
					vec4 kv = texelFetch(tk, int(kbs + d));
					[[unroll]] for (uint r = 0u; r < TQ; r++)
						dots[r] += dot(qv[r][d], kv);
				}
			}
			float kbv = has_kb ? LD(kb.d, dtkb, kbbase + j) : 0.0;
			[[unroll]] for (uint r = 0u; r < TQ; r++) {
				float sc = dots[r] * p.scale + kbv;
				if (has_bias)
					sc += LD(bi.d, dtbias, p.off_bias +
					    (biasrow + row[r]) * p.Nk + j);
				s[r][jj] = j0 + jj < p.Nk ? sc : -3.0e38;
			}
		}
		[[unroll]] for (uint r = 0u; r < TQ; r++) {
			float mt = m[r];
			[[unroll]] for (uint jj = 0u; jj < TKB; jj++)
				mt = max(mt, s[r][jj]);
			float corr = exp(m[r] - mt);
			l[r] *= corr;
			[[unroll]] for (uint d = 0u; d < D4; d++)
				acc[r][d] *= corr;
			[[unroll]] for (uint jj = 0u; jj < TKB; jj++) {
				float pj = exp(s[r][jj] - mt);
				l[r] += pj;
				s[r][jj] = pj;
			}
			m[r] = mt;
		}
		[[unroll]] for (uint jj = 0u; jj < TKB; jj++) {
			uint j = min(j0 + jj, p.Nk - 1u);
			uint vbs = (p.off_v + b * p.v_sb + j * p.v_sn + h * p.Dv) / 4u;
			[[unroll]] for (uint d = 0u; d < D4; d++) {
				if (d < Dv4) {
					vec4 vv = texelFetch(tv, int(vbs + d));
					[[unroll]] for (uint r = 0u; r < TQ; r++)
						acc[r][d] += s[r][jj] * vv;
				}
			}
		}
	}
	[[unroll]] for (uint r = 0u; r < TQ; r++) {
		if (i0 + r >= p.Nq)
			break;
		float inv = 1.0 / l[r];
		uint ob = p.off_o + (b * p.Nq + i0 + r) * p.H * p.Dv + h * p.Dv;
		[[unroll]] for (uint d = 0u; d < D4; d++) {
			if (d < Dv4) {
				vec4 v = acc[r][d] * inv;
				STF(o.d, ob + 4u * d, v.x);
				STF(o.d, ob + 4u * d + 1u, v.y);
				STF(o.d, ob + 4u * d + 2u, v.z);
				STF(o.d, ob + 4u * d + 3u, v.w);
			}
		}
	}
}
