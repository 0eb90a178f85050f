/*
 * test-ltx2-rope.c — ltx2_rope_table (nn/ltx2_attn.h), LTX-2's RoPE
 * tables (diffusers transformer_ltx2.py LTX2AudioVideoRotaryPosEmbed),
 * against values worked out by hand: dim 16 over 3 axes gives
 * 16 // 6 = 2 frequencies per axis, freq_k = theta^linspace(0, 1, 2)_k ·
 * pi/2 = (pi/2, theta·pi/2); with theta 4 that is (pi/2, 2 pi), so the
 * chosen fractions give angles that are multiples of pi/4.
 * Split: [N, 8] = 2 padding values (8 - 3·2) then angle k·3 + axis;
 * interleaved: [N, 16] = 4 padding channels (16 % 6) then each angle
 * twice.  The goldens cover interleaved end to end
 * (tests/nn/ltx2-transformer.sh); split has no golden.
 */
#include <math.h>

#include "nn/ltx2_attn.h"
#include "test.h"

#define TOL 1e-6

int
main(void)
{
	/* two tokens, three axes each */
	static const float frac[2][3] = {
		{ 0.75f, 0.5f, 1.0f },	/* 2f - 1 = 0.5, 0, 1 */
		{ 0.5f, 0.25f, 0.5f },	/* 0, -0.5, 0 */
	};
	const double r = sqrt(0.5);
	/* cos, sin of angle k·3 + axis, worked out by hand */
	static const double pi = M_PI;
	const double ang[2][6] = {
		/* k 0 (pi/2): axes 0..2, then k 1 (2 pi): axes 0..2 */
		{ pi / 4, 0, pi / 2, pi, 0, 2 * pi },
		{ 0, -pi / 4, 0, 0, -pi, 0 },
	};
	const double c_hand[2][6] = {
		{ r, 1, 0, -1, 1, 1 },
		{ 1, r, 1, 1, -1, 1 },
	};
	const double s_hand[2][6] = {
		{ r, 0, 1, 0, 0, 0 },
		{ 0, -r, 0, 0, 0, 0 },
	};
	float cs[2 * 16], sn[2 * 16];

	for (int t = 0; t < 2; t++)
		for (int i = 0; i < 6; i++) {
			CHECK_NEAR(cos(ang[t][i]), c_hand[t][i], 1e-12);
			CHECK_NEAR(sin(ang[t][i]), s_hand[t][i], 1e-12);
		}

	/* split: [2, 8] */
	ltx2_rope_table(&frac[0][0], 2, 3, 16, 4.0, 1, 1, cs, sn);
	for (int t = 0; t < 2; t++) {
		for (int p = 0; p < 2; p++) {
			CHECK_NEAR(cs[t * 8 + p], 1.0, 0);
			CHECK_NEAR(sn[t * 8 + p], 0.0, 0);
		}
		for (int i = 0; i < 6; i++) {
			CHECK_NEAR(cs[t * 8 + 2 + i], c_hand[t][i], TOL);
			CHECK_NEAR(sn[t * 8 + 2 + i], s_hand[t][i], TOL);
		}
	}
	/* interleaved: [2, 16], the same angles each twice */
	ltx2_rope_table(&frac[0][0], 2, 3, 16, 4.0, 1, 0, cs, sn);
	for (int t = 0; t < 2; t++) {
		for (int p = 0; p < 4; p++) {
			CHECK_NEAR(cs[t * 16 + p], 1.0, 0);
			CHECK_NEAR(sn[t * 16 + p], 0.0, 0);
		}
		for (int i = 0; i < 6; i++)
			for (int e = 0; e < 2; e++) {
				CHECK_NEAR(cs[t * 16 + 4 + 2 * i + e], c_hand[t][i],
				    TOL);
				CHECK_NEAR(sn[t * 16 + 4 + 2 * i + e], s_hand[t][i],
				    TOL);
			}
	}
	/* float32 frequencies (rope_double_precision false) agree here */
	ltx2_rope_table(&frac[0][0], 2, 3, 16, 4.0, 0, 1, cs, sn);
	CHECK_NEAR(cs[2 + 0], r, TOL);
	CHECK_NEAR(cs[2 + 3], -1.0, TOL);
	/* one axis (the connectors' and the a2v tables): dim 8 -> 4
	 * frequencies, no split padding (4 - 4) and none interleaved (8 % 2);
	 * freq_3 = theta · pi/2 = 2 pi, at 2f - 1 = 0.5: pi, cos -1 */
	{
		const float f1[1] = { 0.75f };

		ltx2_rope_table(f1, 1, 1, 8, 4.0, 1, 1, cs, sn);
		CHECK_NEAR(cs[0], cos(0.5 * pi / 2), TOL);
		CHECK_NEAR(cs[3], -1.0, TOL);
		CHECK_NEAR(sn[3], 0.0, TOL);
		ltx2_rope_table(f1, 1, 1, 8, 4.0, 1, 0, cs, sn);
		CHECK_NEAR(cs[6], -1.0, TOL);
		CHECK_NEAR(cs[7], -1.0, TOL);
		CHECK_NEAR(sn[0], sin(0.5 * pi / 2), TOL);
	}
	return test_summary();
}
