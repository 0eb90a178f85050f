/*
 * d2s.comp — 3-D depth-to-space (and back with to_depth).  Space side
 * [B, C, F·ft, H·fh, W·fw], depth side [B, C·ft·fh·fw, F, H, W]; channel
 * index ((c·ft + dt)·fh + dh)·fw + dw, or ((c·ft + dt)·fw + dw)·fh + dh
 * when hw_swapped.  One invocation per element of y.
 */
#version 450
#define KERNEL_D2S
#include "common.glsl"

layout(local_size_x = 128) in;
layout(binding = 0) writeonly buffer Y { uint d[]; } y;
layout(binding = 1) readonly buffer X { uint d[]; } x;

void main()
{
	uint i = lq_group_id() * 128u + gl_LocalInvocationID.x;
	uint Fs = p.F * p.ft, Hs = p.H * p.fh, Ws = p.W * p.fw;
	uint n = p.B * p.C * Fs * Hs * Ws;
	if (i >= n)
		return;
	bool to_depth = LQ_FIELD(p.flags, LQ_D2S_TO_DEPTH, 1u) != 0u;
	bool swp = LQ_FIELD(p.flags, LQ_D2S_HW_SWAPPED, 1u) != 0u;
	/* i indexes the space side */
	uint ws = i % Ws, r = i / Ws;
	uint hs = r % Hs; r /= Hs;
	uint fs = r % Fs; r /= Fs;
	uint c = r % p.C, b = r / p.C;
	uint f = fs / p.ft, dt = fs % p.ft;
	uint h = hs / p.fh, dh = hs % p.fh;
	uint w = ws / p.fw, dw = ws % p.fw;
	uint cd = swp ? ((c * p.ft + dt) * p.fw + dw) * p.fh + dh :
	    ((c * p.ft + dt) * p.fh + dh) * p.fw + dw;
	uint Cd = p.C * p.ft * p.fh * p.fw;
	uint j = (((b * Cd + cd) * p.F + f) * p.H + h) * p.W + w;
	if (to_depth)
		y.d[p.off_y + j] = x.d[p.off_x + i];
	else
		y.d[p.off_y + i] = x.d[p.off_x + j];
}
