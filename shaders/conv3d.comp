/*
 * conv3d.comp — direct 3-D convolution (cross-correlation) on
 * [B, C, F, H, W] with per-axis stride, front padding and zero/replicate
 * edge modes (LTX CausalConv3d pads time by replicating frames), and
 * reflect padding in space (torch padding_mode="reflect": index -i before
 * the edge, 2(n-1) - i after it; LTX-2's video decoder).  One
 * invocation computes CB output channels at PW consecutive output columns,
 * so each input value feeds CB FMAs and each weight PW; the weights of a
 * workgroup's channel block are the same for all its lanes.  With -DTEX x
 * and w are read through single-channel texel buffers (R32F x; R32F, R16F
 * or R16UI=bf16 w), otherwise from storage buffers.  Sums run over ci, kt,
 * kh, kw in ascending order; with CONV_ACCUMULATE they start from y, so a
 * convolution split into blocks of input channels (ops.c, for tensors
 * larger than one binding) adds in exactly the same order.
 */
#version 450
#define KERNEL_CONV3D
#include "common.glsl"

#define CB uint(CONV_CB)
#define PW uint(CONV_PW)

layout(local_size_x = 64) in;
layout(binding = 0) buffer Y { uint d[]; } y;
#ifdef TEX
layout(binding = 1) uniform samplerBuffer tx;
#if WT == 2
layout(binding = 2) uniform usamplerBuffer tw;
#define LDW(i) uintBitsToFloat(texelFetch(tw, int(i)).x << 16)
#else
layout(binding = 2) uniform samplerBuffer tw;
#define LDW(i) texelFetch(tw, int(i)).x
#endif
#define LDX(i) texelFetch(tx, int(i)).x
#else
layout(binding = 1) readonly buffer X { uint d[]; } x;
layout(binding = 2) readonly buffer Wt { uint d[]; } w;
#define LDX(i) LDF(x.d, i)
#define LDW(i) LD(w.d, dtw, i)
#endif
layout(binding = 3) readonly buffer Bs { uint d[]; } bs;

/* A spatial index reflected into [0, n) (torch "reflect", the edge not
 * repeated; the padding is below n, ops.c checks it). */
int reflect_idx(int i, int n)
{
	i = i < 0 ? -i : i;
	i = i >= n ? 2 * n - 2 - i : i;
	return clamp(i, 0, n - 1);
}

void main()
{
	uint chunk = gl_WorkGroupID.z % p.pos_chunks;
	uint b = gl_WorkGroupID.z / p.pos_chunks;
	uint pos = (chunk * gl_NumWorkGroups.x + gl_WorkGroupID.x) * 64u +
	    gl_LocalInvocationID.x;
	uint Wq = (p.Wo + PW - 1u) / PW;
	uint npos = p.Fo * p.Ho * Wq;
	if (pos >= npos)
		return;
	uint co0 = gl_WorkGroupID.y * CB;
	uint wq = pos % Wq, ho = (pos / Wq) % p.Ho, fo = pos / (Wq * p.Ho);
	uint wo0 = wq * PW;
	bool t_rep = LQ_FIELD(p.flags, LQ_CONV_T_REPLICATE, 1u) != 0u;
	bool s_rep = LQ_FIELD(p.flags, LQ_CONV_S_REPLICATE, 1u) != 0u;
	bool s_ref = LQ_FIELD(p.flags, LQ_CONV_S_REFLECT, 1u) != 0u;
	bool has_b = LQ_FIELD(p.flags, LQ_CONV_HAS_B, 1u) != 0u;
	uint dtw = LQ_FIELD(p.flags, LQ_CONV_DTW, LQ_DT_MASK);
	uint dtb = LQ_FIELD(p.flags, LQ_CONV_DTB, LQ_DT_MASK);
	uint ksz = p.kt * p.kh * p.kw;
	uint HW = p.H * p.W;
	uint wbase[CB];
	[[unroll]] for (uint r = 0u; r < CB; r++)
		wbase[r] = p.off_w + min(co0 + r, p.Co - 1u) * p.w_sco;
	uint HWo = p.Ho * p.Wo;
	bool accum = (p.flags & CONV_ACCUMULATE) != 0u;
	float acc[CB][PW];
	[[unroll]] for (uint r = 0u; r < CB; r++) {
		uint yb = p.off_y + ((b * p.Co + min(co0 + r, p.Co - 1u)) * p.Fo +
		    fo) * HWo + ho * p.Wo;
		[[unroll]] for (uint q = 0u; q < PW; q++)
			acc[r][q] = accum && wo0 + q < p.Wo ?
			    LDF(y.d, yb + wo0 + q) : 0.0;
	}
	for (uint ci = 0u; ci < p.Ci; ci++) {
		uint xc = p.off_x + (b * p.Ci + ci) * p.F * HW;
		for (uint dt = 0u; dt < p.kt; dt++) {
			int fi = int(fo * p.st + dt) - p.pt;
			if (t_rep)
				fi = clamp(fi, 0, int(p.F) - 1);
			else if (fi < 0 || fi >= int(p.F))
				continue;
			for (uint dh = 0u; dh < p.kh; dh++) {
				int hi = int(ho * p.sh + dh) - p.ph;
				if (s_ref)
					hi = reflect_idx(hi, int(p.H));
				else if (s_rep)
					hi = clamp(hi, 0, int(p.H) - 1);
				else if (hi < 0 || hi >= int(p.H))
					continue;
				uint xrow = xc + uint(fi) * HW + uint(hi) * p.W;
				uint kbase = ci * ksz + (dt * p.kh + dh) * p.kw;
				for (uint dw = 0u; dw < p.kw; dw++) {
					float xv[PW];
					[[unroll]] for (uint q = 0u; q < PW; q++) {
						int wi = int((wo0 + q) * p.sw + dw) - p.pw;
						bool ok = true;
						if (s_ref)
							wi = reflect_idx(wi, int(p.W));
						else if (s_rep)
							wi = clamp(wi, 0, int(p.W) - 1);
						else
							ok = wi >= 0 && wi < int(p.W);
						wi = clamp(wi, 0, int(p.W) - 1);
						float v = LDX(xrow + uint(wi));
						xv[q] = ok ? v : 0.0;
					}
					[[unroll]] for (uint r = 0u; r < CB; r++) {
						float wv = LDW(wbase[r] + kbase + dw);
						[[unroll]] for (uint q = 0u; q < PW; q++)
							acc[r][q] = fma(xv[q], wv, acc[r][q]);
					}
				}
			}
		}
	}
	[[unroll]] for (uint r = 0u; r < CB; r++) {
		uint co = co0 + r;
		if (co >= p.Co)
			break;
		float bv = has_b ? LD(bs.d, dtb, p.off_b + co) : 0.0;
		uint yb = p.off_y + ((b * p.Co + co) * p.Fo + fo) * HWo + ho * p.Wo;
		[[unroll]] for (uint q = 0u; q < PW; q++)
			if (wo0 + q < p.Wo)
				STF(y.d, yb + wo0 + q, acc[r][q] + bv);
	}
}
