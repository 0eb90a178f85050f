/*
 * reduce.glsl — fixed-order workgroup reductions over 128 invocations
 * (tree in shared memory; same order every run, so results are bitwise
 * reproducible).
 */
shared float red[128];

float wg_sum(float v)
{
	uint t = gl_LocalInvocationID.x;
	red[t] = v;
	barrier();
	[[unroll]] for (uint s = 64u; s > 0u; s >>= 1) {
		if (t < s)
			red[t] += red[t + s];
		barrier();
	}
	float r = red[0];
	barrier();
	return r;
}

float wg_max(float v)
{
	uint t = gl_LocalInvocationID.x;
	red[t] = v;
	barrier();
	[[unroll]] for (uint s = 64u; s > 0u; s >>= 1) {
		if (t < s)
			red[t] = max(red[t], red[t + s]);
		barrier();
	}
	float r = red[0];
	barrier();
	return r;
}
