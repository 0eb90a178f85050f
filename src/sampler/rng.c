/*
 * rng.c — Philox4x32-10 and the Box–Muller mapping to normals documented in
 * rng.h.  Written from the published algorithm (Salmon, Moraes, Dror, Shaw,
 * "Parallel random numbers: as easy as 1, 2, 3", SC'11) and checked against
 * Random123's kat_vectors (tests/sampler/test-rng.c).
 */
/* No FMA contraction: every operation rounds once, as upstream's do. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include "sampler/rng.h"

#include <math.h>

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u	/* golden ratio */
#define PHILOX_W1 0xBB67AE85u	/* sqrt(3) - 1 */

void
rng_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2],
    uint32_t out[4])
{
	uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
	uint32_t k0 = key[0], k1 = key[1];
	uint64_t p0, p1;
	int r;

	for (r = 0; r < 10; r++) {
		if (r > 0) {
			k0 += PHILOX_W0;
			k1 += PHILOX_W1;
		}
		p0 = (uint64_t)PHILOX_M0 * c0;
		p1 = (uint64_t)PHILOX_M1 * c2;
		c0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
		c2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
		c1 = (uint32_t)p1;
		c3 = (uint32_t)p0;
	}
	out[0] = c0;
	out[1] = c1;
	out[2] = c2;
	out[3] = c3;
}

static void
philox_block(uint64_t seed, uint32_t purpose, uint64_t block, uint32_t x[4])
{
	uint32_t ctr[4], key[2];

	ctr[0] = (uint32_t)block;
	ctr[1] = (uint32_t)(block >> 32);
	ctr[2] = purpose;
	ctr[3] = 0;
	key[0] = (uint32_t)seed;
	key[1] = (uint32_t)(seed >> 32);
	rng_philox4x32_10(ctr, key, x);
}

/* Box–Muller on words (a, b): lane 0 -> r cos(theta), lane 1 -> r sin. */
static float
box_muller(uint32_t a, uint32_t b, int odd)
{
	const double two_pi = 6.283185307179586;
	const double inv_2_32 = 1.0 / 4294967296.0;
	double u1, u2, l, r, theta, z;

	u1 = ((double)a + 1.0) * inv_2_32;
	u2 = ((double)b + 1.0) * inv_2_32;
	l = log(u1);
	l = -2.0 * l;
	r = sqrt(l);
	theta = two_pi * u2;
	z = odd ? sin(theta) : cos(theta);
	z = r * z;
	return (float)z;
}

float
rng_normal(uint64_t seed, uint32_t purpose, uint64_t index)
{
	uint32_t x[4];
	unsigned lane = (unsigned)(index & 3);

	philox_block(seed, purpose, index >> 2, x);
	return box_muller(x[lane & 2], x[(lane & 2) + 1], (int)(lane & 1));
}

void
rng_fill_normal(uint64_t seed, uint32_t purpose, uint64_t offset, float *out,
    size_t n)
{
	uint32_t x[4];
	uint64_t idx, block, have = UINT64_MAX;
	unsigned lane;
	size_t i;

	for (i = 0; i < n; i++) {
		idx = offset + i;
		block = idx >> 2;
		lane = (unsigned)(idx & 3);
		if (block != have) {
			philox_block(seed, purpose, block, x);
			have = block;
		}
		out[i] = box_muller(x[lane & 2], x[(lane & 2) + 1],
		    (int)(lane & 1));
	}
}
