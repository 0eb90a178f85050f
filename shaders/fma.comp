/* fma.comp — fp32 FMA throughput: every invocation runs FMA_CHAINS
 * independent vec4 chains a = fma(a, m, c) for p.iters rounds (so latency
 * never limits), then stores their sum so nothing is dead code.  FLOPs per
 * dispatch: groups · FMA_LOCAL · p.iters · FMA_CHAINS · 4 · 2.  For the
 * peak figure of `make bench` only; no op records it. */
#version 450
#define KERNEL_FMA
#include "common.glsl"

layout(local_size_x = FMA_LOCAL) in;
layout(binding = 0) buffer Y { float d[]; } y;

void main()
{
	uint i = lq_group_id() * FMA_LOCAL + gl_LocalInvocationID.x;
	vec4 a[FMA_CHAINS];
	[[unroll]] for (int k = 0; k < FMA_CHAINS; k++)
		a[k] = vec4(float(i) * 1e-9, float(k) * 1e-9, 1e-9, 2e-9);
	vec4 m = vec4(p.m), c = vec4(p.c);
	for (uint it = 0u; it < p.iters; it++) {
		[[unroll]] for (int k = 0; k < FMA_CHAINS; k++)
			a[k] = fma(a[k], m, c);
	}
	vec4 s = vec4(0.0);
	[[unroll]] for (int k = 0; k < FMA_CHAINS; k++)
		s += a[k];
	y.d[i] = s.x + s.y + s.z + s.w;
}
