/*
 * common.glsl — shared by every kernel: buffers are declared as uint words
 * and decoded here, so no 16-bit storage feature is needed: F32 is a
 * bitcast, F16 and BF16 elements are halves of a word (element i lives in
 * word i>>1, low half first).  The push-constant block comes from push.h.
 */
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : enable

#define PUSH(name, body) layout(push_constant) uniform name body p;
#include "push.h"
#include "abi.h"	/* dtypes, activations, op codes, flag bits: shared with C */

float lq_half(uint w, uint dt, uint hi)
{
	uint h = hi != 0u ? (w >> 16) : (w & 0xffffu);
	return dt == LQ_DT_F16 ? unpackHalf2x16(h).x : uintBitsToFloat(h << 16);
}

/* Element i of a uint[] buffer member `arr` holding dtype dt, as float. */
#define LD(arr, dt, i) ((dt) == LQ_DT_F32 ? uintBitsToFloat(arr[i]) : \
	lq_half(arr[(i) >> 1], (dt), (i) & 1u))
#define LDF(arr, i) uintBitsToFloat(arr[i])
#define STF(arr, i, v) arr[i] = floatBitsToUint(v)

/*
 * x rounded to operand precision prec (abi.h LQ_PREC_*), as a float: the
 * nearest bfloat16 or binary16 value, ties to even, NaN and infinities
 * kept, binary16 overflowing to infinity and its subnormals kept (core/
 * half.c's conversions there and back; gpu/internal.h gpu_host_round is
 * this in C).
 */
float lq_round(float x, uint prec)
{
	/* straight-line code (both types' roundings, then selects): the _r
	 * kernels unroll it into every tile, and branches there multiplied
	 * the driver's compile time */
	uint u = floatBitsToUint(x);
	uint a = u & 0x7fffffffu;
	uint b = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
	/* binary16: normals (2^-14 up) to 10 fraction bits, past 65504
	 * infinite; subnormals to multiples of 2^-24 */
	uint n = (a + 0xfffu + ((a >> 13) & 1u)) & 0xffffe000u;
	n = n > 0x477fe000u ? 0x7f800000u : n;
	uint sub = floatBitsToUint(roundEven(uintBitsToFloat(a) *
	    16777216.0) * (1.0 / 16777216.0));
	uint h = (u & 0x80000000u) | (a >= 0x38800000u ? n : sub);
	uint r = prec == LQ_PREC_BF16 ? b : h;
	return prec == LQ_PREC_F32 || a >= 0x7f800000u ? x :
	    uintBitsToFloat(r);
}

float lq_erf(float x)
{
	/* Abramowitz-Stegun 7.1.26 is too coarse; use erf via tanh-free
	 * series: W. J. Cody rational approximation is long, so use
	 * the identity with a high-accuracy formula (max err ~1.2e-7). */
	float t = 1.0 / (1.0 + 0.5 * abs(x));
	float y = 1.0 - t * exp(-x * x - 1.26551223 + t * (1.00002368 +
	    t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 +
	    t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 +
	    t * (-0.82215223 + t * 0.17087277)))))))));
	return x >= 0.0 ? y : -y;
}

float lq_act(float x, uint act)
{
	if (act == LQ_ACT_GELU_TANH) {
		float u = 0.7978845608028654 * (x + 0.044715 * x * x * x);
		/* tanh(u) = 1 - 2/(exp(2u)+1), stable for large |u| */
		float th = 1.0 - 2.0 / (exp(2.0 * clamp(u, -15.0, 15.0)) + 1.0);
		return 0.5 * x * (1.0 + th);
	}
	if (act == LQ_ACT_SILU)
		return x / (1.0 + exp(-x));
	if (act == LQ_ACT_RELU)
		return max(x, 0.0);
	if (act == LQ_ACT_GELU)
		return 0.5 * x * (1.0 + lq_erf(x * 0.7071067811865476));
	if (act == LQ_ACT_TANH) {
		/* 1 - 2/(exp(2x)+1): GLSL's tanh may lose accuracy near 0 on
		 * some drivers; this form is exact to a few ulp and stable */
		if (abs(x) < 0.0625) {
			float x2 = x * x;
			return x * (1.0 + x2 * (-1.0 / 3.0 + x2 * (2.0 / 15.0 +
			    x2 * (-17.0 / 315.0))));
		}
		return 1.0 - 2.0 / (exp(2.0 * clamp(x, -15.0, 15.0)) + 1.0);
	}
	if (act == LQ_ACT_SIGMOID)
		return 1.0 / (1.0 + exp(-x));
	return x;
}

/* Flat workgroup index over a 2-D grid (counts over 65535 are split). */
uint lq_group_id()
{
	return gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
}
