/*
 * test-rng.c — Philox4x32-10 against Random123's published known-answer
 * vectors (kat_vectors, "philox4x32 10" lines), the normal mapping against an
 * independent Python implementation of rng.h's text
 * (tests/sampler/rng_reference.py), determinism and split independence of
 * rng_fill_normal, and the statistics of a million draws.
 */
#include "../test.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "sampler/rng.h"

static void
test_kat(void)
{
	/* Random123 kat_vectors: ctr[4] key[2] -> out[4] */
	static const uint32_t kat[][10] = {
		{ 0x00000000, 0x00000000, 0x00000000, 0x00000000,
		  0x00000000, 0x00000000,
		  0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8 },
		{ 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff,
		  0xffffffff, 0xffffffff,
		  0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd },
		{ 0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344,
		  0xa4093822, 0x299f31d0,
		  0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1 },
	};
	uint32_t out[4];
	size_t i;
	int w;

	for (i = 0; i < LQ_ARRAY_LEN(kat); i++) {
		rng_philox4x32_10(kat[i], kat[i] + 4, out);
		for (w = 0; w < 4; w++)
			CHECK_INT(out[w], kat[i][6 + w]);
	}
}

static void
test_reference_values(void)
{
	/* python3 tests/sampler/rng_reference.py */
	static const struct {
		uint64_t seed;
		uint32_t purpose;
		uint64_t index;
		uint32_t bits;
	} ref[] = {
		{ 0x0000000000000000ull, 0x1, 0x0ull, 0x3f88a6cb },
		{ 0x0000000000000000ull, 0x1, 0x1ull, 0xbed9c6b5 },
		{ 0x0000000000000000ull, 0x1, 0x2ull, 0xc0178cdf },
		{ 0x0000000000000000ull, 0x1, 0x3ull, 0xbe6d0d85 },
		{ 0x0000000000000000ull, 0x1, 0x4ull, 0x3ecf57cf },
		{ 0x0000000000000000ull, 0x1, 0x5ull, 0xbf0d6118 },
		{ 0x0000000000000000ull, 0x1, 0x6ull, 0xbf887d8b },
		{ 0x0000000000000000ull, 0x1, 0x7ull, 0x3f061779 },
		{ 0xffffffffffffffffull, 0x2, 0x10000000003ull, 0x3f207428 },
		{ 0x0000011f71fb04cbull, 0x105, 0x5ull, 0xbf923e9f },
		{ 0x000000000000002aull, 0x1, 0xf4241ull, 0xbfc3fe28 },
		{ 0x8000000000000000ull, 0x100, 0x6ull, 0x3eadff40 },
	};
	size_t i;
	uint32_t bits;
	float z;

	for (i = 0; i < LQ_ARRAY_LEN(ref); i++) {
		z = rng_normal(ref[i].seed, ref[i].purpose, ref[i].index);
		memcpy(&bits, &z, 4);
		CHECK_INT(bits, ref[i].bits);
		rng_fill_normal(ref[i].seed, ref[i].purpose, ref[i].index,
		    &z, 1);
		memcpy(&bits, &z, 4);
		CHECK_INT(bits, ref[i].bits);
	}
	CHECK_INT(RNG_PURPOSE_INJECTED_NOISE(5), 0x105);
}

static void
test_fill(void)
{
	enum { N = 1003 };
	float *a = xmalloc(N * sizeof(float));
	float *b = xmalloc(N * sizeof(float));
	float *c = xmalloc(N * sizeof(float));
	size_t i, diff_seed = 0, diff_purpose = 0;
	int same;

	rng_fill_normal(7, RNG_PURPOSE_INITIAL_LATENTS, 0, a, N);
	/* Deterministic, and any split gives the same values. */
	rng_fill_normal(7, RNG_PURPOSE_INITIAL_LATENTS, 0, b, 5);
	rng_fill_normal(7, RNG_PURPOSE_INITIAL_LATENTS, 5, b + 5, 2);
	rng_fill_normal(7, RNG_PURPOSE_INITIAL_LATENTS, 7, b + 7, N - 7);
	same = memcmp(a, b, N * sizeof(float)) == 0;
	CHECK(same);
	for (i = 0; i < N; i++)
		CHECK(a[i] == rng_normal(7, RNG_PURPOSE_INITIAL_LATENTS, i));
	/* Seed and purpose select other streams. */
	rng_fill_normal(8, RNG_PURPOSE_INITIAL_LATENTS, 0, b, N);
	rng_fill_normal(7, RNG_PURPOSE_DECODE_NOISE, 0, c, N);
	for (i = 0; i < N; i++) {
		diff_seed += a[i] != b[i];
		diff_purpose += a[i] != c[i];
	}
	CHECK_INT(diff_seed, N);
	CHECK_INT(diff_purpose, N);
	free(a);
	free(b);
	free(c);
}

static void
test_statistics(void)
{
	enum { N = 1 << 20 };
	float *z = xmalloc(N * sizeof(float));
	double sum = 0, sum2 = 0, sum3 = 0, sum4 = 0, mean, var, x, lag = 0;
	size_t i, within1 = 0, finite = 0;

	rng_fill_normal(0x5eed, RNG_PURPOSE_INITIAL_LATENTS, 0, z, N);
	for (i = 0; i < N; i++) {
		x = z[i];
		finite += isfinite(x) != 0;
		sum += x;
		sum2 += x * x;
		sum3 += x * x * x;
		sum4 += x * x * x * x;
		within1 += fabs(x) < 1.0;
		if (i > 0)
			lag += x * z[i - 1];
	}
	CHECK_INT(finite, N);
	mean = sum / N;
	var = sum2 / N - mean * mean;
	printf("1M normals: mean %.5f var %.5f skew %.5f kurt %.5f "
	    "P(|z|<1) %.5f lag-1 corr %.5f\n", mean, var, sum3 / N,
	    sum4 / N, (double)within1 / N, lag / N);
	/* 5 standard errors for N = 2^20 */
	CHECK_NEAR(mean, 0.0, 5 * 0.001);
	CHECK_NEAR(var, 1.0, 5 * 0.0014);
	CHECK_NEAR(sum3 / N, 0.0, 5 * 0.0024);
	CHECK_NEAR(sum4 / N, 3.0, 5 * 0.0095);
	CHECK_NEAR((double)within1 / N, 0.682689, 5 * 0.00046);
	CHECK_NEAR(lag / N, 0.0, 5 * 0.001);
	free(z);
}

int
main(void)
{
	test_kat();
	test_reference_values();
	test_fill();
	test_statistics();
	return test_summary();
}
