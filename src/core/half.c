/*
 * half.c — IEEE binary16 and bfloat16 conversions with round-to-nearest-
 * even (NaN stays NaN, overflow goes to infinity), shared by the
 * safetensors reader and the GPU uploads.
 */
#include <string.h>

#include "core/half.h"

uint16_t
half_f32_to_f16(float f)
{
	uint32_t x;
	memcpy(&x, &f, 4);
	uint32_t sign = (x >> 16) & 0x8000u;
	uint32_t exp = (x >> 23) & 0xffu;
	uint32_t man = x & 0x7fffffu;
	if (exp == 0xff)	/* inf / nan */
		return (uint16_t)(sign | 0x7c00u | (man ? 0x200u : 0));
	int e = (int)exp - 127 + 15;
	if (e >= 31)
		return (uint16_t)(sign | 0x7c00u);
	if (e <= 0) {
		if (e < -10)
			return (uint16_t)sign;
		man |= 0x800000u;
		int shift = 14 - e;
		uint32_t h = man >> shift;
		uint32_t rem = man & ((1u << shift) - 1);
		uint32_t halfway = 1u << (shift - 1);
		if (rem > halfway || (rem == halfway && (h & 1)))
			h++;
		return (uint16_t)(sign | h);
	}
	uint32_t h = ((uint32_t)e << 10) | (man >> 13);
	uint32_t rem = man & 0x1fffu;
	if (rem > 0x1000u || (rem == 0x1000u && (h & 1)))
		h++;		/* may carry into the exponent: correct */
	return (uint16_t)(sign | h);
}

float
half_f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
	uint32_t exp = (h >> 10) & 0x1fu;
	uint32_t man = h & 0x3ffu;
	uint32_t x;
	if (exp == 0) {
		if (man == 0) {
			x = sign;
		} else {
			int e = -1;
			do {
				e++;
				man <<= 1;
			} while (!(man & 0x400u));
			x = sign | ((uint32_t)(127 - 15 - e) << 23) |
			    ((man & 0x3ffu) << 13);
		}
	} else if (exp == 31) {
		x = sign | 0x7f800000u | (man << 13);
	} else {
		x = sign | ((exp - 15 + 127) << 23) | (man << 13);
	}
	float f;
	memcpy(&f, &x, 4);
	return f;
}

uint16_t
half_f32_to_bf16(float f)
{
	uint32_t x;
	memcpy(&x, &f, 4);
	if ((x & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((x >> 16) | 0x40u);
	x += 0x7fffu + ((x >> 16) & 1u);
	return (uint16_t)(x >> 16);
}

float
half_bf16_to_f32(uint16_t h)
{
	uint32_t x = (uint32_t)h << 16;
	float f;
	memcpy(&f, &x, 4);
	return f;
}
