/*
 * test-latents.c — latent packing against a literal transcription of
 * upstream's reshape/permute, and pipeB's pre-decode and post-processing
 * against its goldens: latents_after_step[-1] -> unpack -> denormalise ->
 * decode-noise mix == decoder_input_z, decoder_output_raw -> video_np ->
 * video_uint8.
 */
#include "../test.h"
#include "golden.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "sampler/latents.h"
#include "sampler/rng.h"

/*
 * out = in.reshape(dims).permute(perm) made contiguous, for 8-D tensors:
 * the torch semantics that _pack_latents / _unpack_latents spell out.
 */
static void
permute8(const float *in, float *out, const int64_t dims[8],
    const int perm[8])
{
	int64_t stride[8], odims[8], idx[8], total = 1, o, src;
	int k;

	for (k = 7; k >= 0; k--) {
		stride[k] = total;
		total *= dims[k];
	}
	for (k = 0; k < 8; k++)
		odims[k] = dims[perm[k]];
	for (o = 0; o < total; o++) {
		int64_t rem = o;

		for (k = 7; k >= 0; k--) {
			idx[k] = rem % odims[k];
			rem /= odims[k];
		}
		src = 0;
		for (k = 0; k < 8; k++)
			src += idx[k] * stride[perm[k]];
		out[o] = in[src];
	}
}

static void
test_pack(int64_t p, int64_t pt)
{
	struct latents_shape sh = { 2, 3, 2 * pt, 2 * p, 3 * p, p, pt };
	size_t n = latents_numel(&sh), i;
	float *x = xmalloc(n * sizeof(float)), *ref = xmalloc(n * sizeof(float));
	float *packed = xmalloc(n * sizeof(float));
	float *back = xmalloc(n * sizeof(float));
	int64_t F = sh.frames / pt, H = sh.height / p, W = sh.width / p;
	/* _pack_latents: reshape [B, C, F', pt, H', p, W', p],
	 * permute(0, 2, 4, 6, 1, 3, 5, 7), flatten */
	const int64_t dims_in[8] = { sh.batch, sh.channels, F, pt, H, p, W, p };
	const int perm_pack[8] = { 0, 2, 4, 6, 1, 3, 5, 7 };
	/* _unpack_latents: reshape [B, F', H', W', C, pt, p, p],
	 * permute(0, 4, 1, 5, 2, 6, 3, 7), flatten */
	const int64_t dims_packed[8] = { sh.batch, F, H, W, sh.channels, pt,
	    p, p };
	const int perm_unpack[8] = { 0, 4, 1, 5, 2, 6, 3, 7 };

	for (i = 0; i < n; i++)
		x[i] = (float)i;
	CHECK_INT(latents_seq_len(&sh), F * H * W);
	CHECK_INT(latents_token_dim(&sh), sh.channels * pt * p * p);
	latents_pack(&sh, x, packed);
	permute8(x, ref, dims_in, perm_pack);
	CHECK(memcmp(packed, ref, n * sizeof(float)) == 0);
	latents_unpack(&sh, packed, back);
	CHECK(memcmp(back, x, n * sizeof(float)) == 0);
	permute8(packed, ref, dims_packed, perm_unpack);
	CHECK(memcmp(back, ref, n * sizeof(float)) == 0);
	if (p == 1 && pt == 1) {
		/* token n = (f*H + h)*W + w, channel c */
		int64_t b = 1, c = 2, f = 1, h = 1, w = 2;
		size_t u = (size_t)((((b * 3 + c) * 2 + f) * 2 + h) * 3 + w);
		size_t k = (size_t)((b * 12 + (f * 2 + h) * 3 + w) * 3 + c);
		CHECK(packed[k] == x[u]);
	}
	free(x);
	free(ref);
	free(packed);
	free(back);
}

static void
test_pipeB_decode_input(void)
{
	struct st_file *steps = golden_open("pipeB/steps.safetensors");
	struct st_file *inputs = golden_open("pipeB/inputs.safetensors");
	struct st_file *output = golden_open("pipeB/output.safetensors");
	struct st_file *stats = golden_open("pipeB/vae_latents_stats.safetensors");
	/* latent grid F,H,W = 3,4,4, C 16, B 1; patch 1 */
	struct latents_shape sh = { 1, 16, 3, 4, 4, 1, 1 };
	size_t n = latents_numel(&sh), cnt;
	const struct st_tensor *t = golden_tensor(steps, "latents_after_step",
	    ST_F32);
	float *after = golden_f32(steps, "latents_after_step", NULL);
	float *noise = golden_f32(inputs, "decode_noise", &cnt);
	float *z = golden_f32(output, "decoder_input_z", NULL);
	float *temb = golden_f32(output, "decoder_input_temb", NULL);
	float *mean = golden_f32(stats, "latents_mean", NULL);
	float *std = golden_f32(stats, "latents_std", NULL);
	float *x = xmalloc(n * sizeof(float));
	/* pipeline_args: decode_timestep 0.05, decode_noise_scale 0.025 */
	const float scale[1] = { 0.025f };
	size_t last = (size_t)(t->shape[0] - 1) * n, i, same = 0;
	double d;

	CHECK_INT(cnt, n);
	CHECK(temb[0] == 0.05f);
	latents_unpack(&sh, after + last, x);
	latents_denormalize(&sh, x, mean, std, 1.0);
	latents_mix_noise(x, noise, 1, n, scale);
	d = golden_max_abs(x, z, n);
	for (i = 0; i < n; i++)
		same += golden_same_f32(x[i], z[i]);
	printf("pipeB decoder_input_z: max abs err %.3g, %zu/%zu bitwise "
	    "(atol 0.0003)\n", d, same, n);
	CHECK(d <= 0.0003);
	free(after);
	free(noise);
	free(z);
	free(temb);
	free(mean);
	free(std);
	free(x);
	st_file_close(steps);
	st_file_close(inputs);
	st_file_close(output);
	st_file_close(stats);
}

static void
test_pipeB_postprocess(void)
{
	struct st_file *output = golden_open("pipeB/output.safetensors");
	const struct st_tensor *tr = golden_tensor(output, "decoder_output_raw",
	    ST_F32);
	const struct st_tensor *tu = golden_tensor(output, "video_uint8",
	    ST_U8);
	float *raw = golden_f32(output, "decoder_output_raw", NULL);
	float *vnp = golden_f32(output, "video_np", NULL);
	size_t n = tu->nbytes, i, same = 0, u8same = 0, u8same2 = 0;
	float *mine = xmalloc(n * sizeof(float));
	uint8_t *u8 = xmalloc(n), *u8b = xmalloc(n);
	const uint8_t *gold = tu->data;

	CHECK_INT(tr->shape[1], 3);
	latents_postprocess_video(raw, tr->shape[0], tr->shape[2],
	    tr->shape[3], tr->shape[4], mine, u8);
	for (i = 0; i < n; i++) {
		same += golden_same_f32(mine[i], vnp[i]);
		u8same += u8[i] == gold[i];
	}
	latents_video_to_uint8(vnp, n, u8b);
	for (i = 0; i < n; i++)
		u8same2 += u8b[i] == gold[i];
	printf("pipeB video_np %zu/%zu bitwise (max abs err %.3g); "
	    "video_uint8 %zu/%zu from raw, %zu/%zu from video_np\n", same, n,
	    golden_max_abs(mine, vnp, n), u8same, n, u8same2, n);
	CHECK_INT(same, n);
	CHECK_INT(u8same, n);
	CHECK_INT(u8same2, n);
	latents_postprocess_video(raw, tr->shape[0], tr->shape[2],
	    tr->shape[3], tr->shape[4], NULL, u8b);
	CHECK(memcmp(u8, u8b, n) == 0);
	free(raw);
	free(vnp);
	free(mine);
	free(u8);
	free(u8b);
	st_file_close(output);
}

static void
test_rounding(void)
{
	/* Values whose float32 product with 255 is exactly k + 0.5: NumPy
	 * rounds those half to even. */
	float v[3], target[3] = { 126.5f, 127.5f, 0.5f };
	uint8_t want[3] = { 126, 128, 0 }, out[3];
	int k, found = 0;

	for (k = 0; k < 3; k++) {
		float c = target[k] / 255.0f;
		int step;

		v[k] = -1.0f;
		for (step = 0; step < 64 && v[k] < 0; step++) {
			if (c * 255.0f == target[k])
				v[k] = c;
			c = nextafterf(c, c * 255.0f < target[k] ? 2.0f : 0.0f);
		}
		found += v[k] >= 0;
	}
	CHECK_INT(found, 3);
	latents_video_to_uint8(v, 3, out);
	for (k = 0; k < 3; k++)
		CHECK_INT(out[k], want[k]);
}

static void
test_init_import_guard(void)
{
	struct latents_shape sh = { 2, 4, 3, 2, 2, 1, 1 };
	size_t n = latents_numel(&sh), i;
	float *packed = xmalloc(n * sizeof(float));
	float *unpacked = xmalloc(n * sizeof(float));
	float *imported = xmalloc(n * sizeof(float));
	const int64_t dims5[5] = { 2, 4, 3, 2, 2 }, dims3[3] = { 2, 12, 4 };
	const int64_t bad[3] = { 2, 4, 12 };
	struct lq_error err;
	int64_t b = 1, c = 3, f = 2, h = 1, w = 0;

	/* Noise index = row-major index in the unpacked [B, C, F, H, W]. */
	latents_init_noise(&sh, 99, packed);
	CHECK(packed[((b * 12 + (f * 2 + h) * 2 + w) * 4 + c)] ==
	    rng_normal(99, RNG_PURPOSE_INITIAL_LATENTS,
	    (uint64_t)((((b * 4 + c) * 3 + f) * 2 + h) * 2 + w)));
	CHECK(packed[0] == rng_normal(99, RNG_PURPOSE_INITIAL_LATENTS, 0));
	latents_unpack(&sh, packed, unpacked);

	error_clear(&err);
	CHECK_INT(latents_import(&sh, 5, dims5, unpacked, imported, &err),
	    LQ_OK);
	CHECK(memcmp(imported, packed, n * sizeof(float)) == 0);
	memset(imported, 0, n * sizeof(float));
	CHECK_INT(latents_import(&sh, 3, dims3, packed, imported, &err),
	    LQ_OK);
	CHECK(memcmp(imported, packed, n * sizeof(float)) == 0);
	memset(imported, 0, n * sizeof(float));
	CHECK_INT(latents_import(&sh, 3, bad, packed, imported, &err),
	    LQ_FAILED);
	CHECK_STR(err.code, "LQ-LAT-001");
	CHECK_CONTAINS(err.message, "[2, 4, 12]");
	CHECK_CONTAINS(err.message, "[2, 12, 4]");
	CHECK_CONTAINS(err.message, "[2, 4, 3, 2, 2]");
	CHECK(imported[0] == 0.0f);

	CHECK_INT(latents_find_nonfinite(packed, n), -1);
	packed[5] = NAN;
	packed[9] = INFINITY;
	CHECK_INT(latents_find_nonfinite(packed, n), 5);
	CHECK_INT(latents_find_nonfinite(packed + 6, n - 6), 3);
	packed[7] = -INFINITY;
	CHECK_INT(latents_find_nonfinite(packed + 6, n - 6), 1);
	for (i = 0; i < n; i++)
		packed[i] = 0.0f;
	CHECK_INT(latents_find_nonfinite(packed, n), -1);
	free(packed);
	free(unpacked);
	free(imported);
}

int
main(void)
{
	test_init_import_guard();
	test_pack(1, 1);
	test_pack(2, 1);
	test_pack(2, 2);
	test_pack(1, 3);
	test_pipeB_decode_input();
	test_pipeB_postprocess();
	test_rounding();
	return test_summary();
}
