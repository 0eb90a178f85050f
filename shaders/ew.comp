/* ew.comp — strided elementwise ops (ops_add, _mul, _copy, ...), 5 dims. */
#version 450
#define KERNEL_EW
#include "common.glsl"

layout(local_size_x = 128) in;
layout(binding = 0) buffer Y { uint d[]; } y;
layout(binding = 1) readonly buffer A { uint d[]; } a;
layout(binding = 2) readonly buffer B { uint d[]; } b;
layout(binding = 3) readonly buffer C { uint d[]; } c;

#define OP_COPY 0u
#define OP_ADD 1u
#define OP_MUL 2u
#define OP_ADDMUL 3u
#define OP_SCALE 4u
#define OP_FILL 5u
#define OP_MODULATE 6u	/* a * (alpha + b) + c */
#define OP_ACT 7u	/* act(a), act code in beta bits */

void main()
{
	uint n = p.shape[0] * p.shape[1] * p.shape[2] * p.shape[3] * p.shape[4];
	uint i = lq_group_id() * 128u + gl_LocalInvocationID.x;
	if (i >= n)
		return;
	uint op = p.flags & 0xffu;
	uint dta = (p.flags >> 12) & 3u, dtb = (p.flags >> 14) & 3u;
	uint dtc = (p.flags >> 16) & 3u;
	bool has_b = ((p.flags >> 18) & 1u) != 0u;
	bool has_c = ((p.flags >> 19) & 1u) != 0u;
	uint iy = p.off[0], ia = p.off[1], ib = p.off[2], ic = p.off[3];
	uint r = i;
	[[unroll]] for (int k = 4; k >= 0; k--) {
		uint s = p.shape[k];
		uint q = r / s;
		uint j = r - q * s;
		r = q;
		iy += j * p.sy[k];
		ia += j * p.sa[k];
		ib += j * p.sb[k];
		ic += j * p.sc[k];
	}
	float va = op == OP_FILL ? 0.0 : LD(a.d, dta, ia);
	float vb = has_b ? LD(b.d, dtb, ib) : 0.0;
	float vc = has_c ? LD(c.d, dtc, ic) : 0.0;
	float v;
	if (op == OP_COPY)
		v = va;
	else if (op == OP_ADD)
		v = va + vb;
	else if (op == OP_MUL)
		v = va * vb;
	else if (op == OP_ADDMUL)
		v = va + vb * vc;
	else if (op == OP_SCALE)
		v = va * p.alpha + p.beta;
	else if (op == OP_FILL)
		v = p.alpha;
	else if (op == OP_MODULATE)
		v = va * (p.alpha + vb) + vc;
	else
		v = lq_act(va, floatBitsToUint(p.beta));
	STF(y.d, iy, v);
}
