/*
 * ew.comp — strided elementwise ops (ops_add, _mul, _copy, ...), 5 dims.
 * Each op's products and sums are rounded one by one (v is `precise`: no
 * compiler contracts a · b + c into an fma), as host_rows.c computes them
 * under -ffp-contract=off and as linear.comp's gated epilogue
 * (ops_linear_gated_add) computes ops_gated_add's x + gate · r.
 */
#version 450
#define KERNEL_EW
#include "common.glsl"

layout(local_size_x = 128) in;
layout(binding = 0) buffer Y { uint d[]; } y;
layout(binding = 1) readonly buffer A { uint d[]; } a;
layout(binding = 2) readonly buffer B { uint d[]; } b;
layout(binding = 3) readonly buffer C { uint d[]; } c;

void main()
{
	uint n = p.shape[0] * p.shape[1] * p.shape[2] * p.shape[3] * p.shape[4];
	uint i = lq_group_id() * 128u + gl_LocalInvocationID.x;
	if (i >= n)
		return;
	uint op = p.flags & LQ_EW_OP_MASK;
	uint dta = LQ_FIELD(p.flags, LQ_EW_DTA, LQ_DT_MASK);
	uint dtb = LQ_FIELD(p.flags, LQ_EW_DTB, LQ_DT_MASK);
	uint dtc = LQ_FIELD(p.flags, LQ_EW_DTC, LQ_DT_MASK);
	bool has_b = LQ_FIELD(p.flags, LQ_EW_HAS_B, 1u) != 0u;
	bool has_c = LQ_FIELD(p.flags, LQ_EW_HAS_C, 1u) != 0u;
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
	float va = op == LQ_EW_FILL ? 0.0 : LD(a.d, dta, ia);
	float vb = has_b ? LD(b.d, dtb, ib) : 0.0;
	float vc = has_c ? LD(c.d, dtc, ic) : 0.0;
	precise float v;
	if (op == LQ_EW_COPY)
		v = va;
	else if (op == LQ_EW_ADD)
		v = va + vb;
	else if (op == LQ_EW_MUL)
		v = va * vb;
	else if (op == LQ_EW_ADDMUL)
		v = va + vb * vc;
	else if (op == LQ_EW_SCALE)
		v = va * p.alpha + p.beta;
	else if (op == LQ_EW_FILL)
		v = p.alpha;
	else if (op == LQ_EW_MODULATE)
		v = va * (p.alpha + vb) + vc;
	else if (op == LQ_EW_LEAKY_RELU)
		v = va >= 0.0 ? va : va * p.alpha;
	else if (op == LQ_EW_CLAMP)
		v = min(max(va, p.alpha), p.beta);
	else if (op == LQ_EW_SNAKE) {
		/* SnakeBeta (logscale): x + (1 / (e^beta + eps)) sin(x e^alpha)^2,
		 * each step rounded as torch does */
		float s = sin(va * exp(vb));
		float inv = 1.0 / (exp(vc) + p.alpha);
		v = va + inv * (s * s);
	}
	else
		v = lq_act(va, floatBitsToUint(p.beta));
	STF(y.d, iy, v);
}
