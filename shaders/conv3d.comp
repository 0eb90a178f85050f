/*
 * conv3d.comp — direct 3-D convolution (cross-correlation) on
 * [B, C, F, H, W] with per-axis stride, front padding and zero/replicate
 * edge modes (LTX CausalConv3d pads time by replicating frames).  One
 * invocation computes 4 output channels at one output position; sums run
 * over ci, kt, kh, kw in ascending order.
 */
#version 450
#define KERNEL_CONV3D
#include "common.glsl"

#define CB 4u

layout(local_size_x = 128) in;
layout(binding = 0) writeonly buffer Y { uint d[]; } y;
layout(binding = 1) readonly buffer X { uint d[]; } x;
layout(binding = 2) readonly buffer Wt { uint d[]; } w;
layout(binding = 3) readonly buffer Bs { uint d[]; } bs;

void main()
{
	uint chunk = gl_WorkGroupID.z % p.pos_chunks;
	uint b = gl_WorkGroupID.z / p.pos_chunks;
	uint pos = (chunk * gl_NumWorkGroups.x + gl_WorkGroupID.x) * 128u +
	    gl_LocalInvocationID.x;
	uint npos = p.Fo * p.Ho * p.Wo;
	if (pos >= npos)
		return;
	uint co0 = gl_WorkGroupID.y * CB;
	uint wo = pos % p.Wo, ho = (pos / p.Wo) % p.Ho, fo = pos / (p.Wo * p.Ho);
	bool t_rep = (p.flags & 1u) != 0u, s_rep = ((p.flags >> 1) & 1u) != 0u;
	bool has_b = ((p.flags >> 2) & 1u) != 0u;
	uint dtw = (p.flags >> 4) & 3u, dtb = (p.flags >> 6) & 3u;
	uint ksz = p.kt * p.kh * p.kw;
	uint HW = p.H * p.W;
	float acc[CB];
	[[unroll]] for (uint r = 0u; r < CB; r++)
		acc[r] = 0.0;
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
				if (s_rep)
					hi = clamp(hi, 0, int(p.H) - 1);
				else if (hi < 0 || hi >= int(p.H))
					continue;
				for (uint dw = 0u; dw < p.kw; dw++) {
					int wi = int(wo * p.sw + dw) - p.pw;
					if (s_rep)
						wi = clamp(wi, 0, int(p.W) - 1);
					else if (wi < 0 || wi >= int(p.W))
						continue;
					float xv = LDF(x.d, xc + uint(fi) * HW +
					    uint(hi) * p.W + uint(wi));
					uint kidx = (dt * p.kh + dh) * p.kw + dw;
					[[unroll]] for (uint r = 0u; r < CB; r++) {
						uint co = min(co0 + r, p.Co - 1u);
						float wv = LD(w.d, dtw, p.off_w +
						    (co * p.Ci + ci) * ksz + kidx);
						acc[r] = fma(xv, wv, acc[r]);
					}
				}
			}
		}
	}
	[[unroll]] for (uint r = 0u; r < CB; r++) {
		uint co = co0 + r;
		if (co >= p.Co)
			break;
		float v = acc[r];
		if (has_b)
			v += LD(bs.d, dtb, p.off_b + co);
		STF(y.d, p.off_y + (b * p.Co + co) * npos + pos, v);
	}
}
