/*
 * conv1d.comp — 1-D convolution (torch.nn.Conv1d: stride, dilation, zero
 * padding) and transposed convolution (torch.nn.ConvTranspose1d: stride,
 * dilation, the output cropped by `pad` on the left) on x [B, Ci, T] into
 * y [B, Co, To], one invocation per output element.  The vocoder's layers
 * (pipelines/ltx2/vocoder.py) are small enough that the simple form is not
 * the bottleneck; `make bench` times it.  Sums run over ci, then j, in
 * ascending order; with LQ_CONV1D_ACCUMULATE they start from y, so a
 * convolution split into blocks of input channels (ops.c) adds in exactly
 * the same order; the bias comes last.
 */
#version 450
#define KERNEL_CONV1D
#include "common.glsl"

layout(local_size_x = 64) in;
layout(binding = 0) buffer Y { uint d[]; } y;
layout(binding = 1) readonly buffer X { uint d[]; } x;
layout(binding = 2) readonly buffer Wt { uint d[]; } w;
layout(binding = 3) readonly buffer Bs { uint d[]; } bs;

void main()
{
	uint i = lq_group_id() * 64u + gl_LocalInvocationID.x;
	if (i >= p.B * p.Co * p.To)
		return;
	uint to = i % p.To, co = (i / p.To) % p.Co, b = i / (p.To * p.Co);
	bool transposed = LQ_FIELD(p.flags, LQ_CONV1D_TRANSPOSED, 1u) != 0u;
	bool has_b = LQ_FIELD(p.flags, LQ_CONV1D_HAS_B, 1u) != 0u;
	bool accum = LQ_FIELD(p.flags, LQ_CONV1D_ACCUMULATE, 1u) != 0u;
	uint dtw = LQ_FIELD(p.flags, LQ_CONV1D_DTW, LQ_DT_MASK);
	uint dtb = LQ_FIELD(p.flags, LQ_CONV1D_DTB, LQ_DT_MASK);
	uint iy = p.off_y + (b * p.Co + co) * p.To + to;
	float acc = accum ? LDF(y.d, iy) : 0.0;
	for (uint ci = 0u; ci < p.Ci; ci++) {
		uint xrow = p.off_x + (b * p.Ci + ci) * p.T;
		uint wrow = p.off_w + co * p.w_sco + ci * p.w_sci;
		for (uint j = 0u; j < p.k; j++) {
			int ti;
			if (transposed) {
				/* y[to] gets x[ti] · w[j] where ti·s + j·d = to + pad */
				int num = int(to) + p.pad - int(j * p.dilation);
				if (num < 0 || num % int(p.stride) != 0)
					continue;
				ti = num / int(p.stride);
			} else {
				ti = int(to * p.stride + j * p.dilation) - p.pad;
			}
			if (ti < 0 || ti >= int(p.T))
				continue;
			acc = fma(LDF(x.d, xrow + uint(ti)), LD(w.d, dtw, wrow + j),
			    acc);
		}
	}
	if (has_b)
		acc += LD(bs.d, dtb, p.off_b + co);
	STF(y.d, iy, acc);
}
