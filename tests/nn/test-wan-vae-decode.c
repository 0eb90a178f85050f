/*
 * test-wan-vae-decode.c — WanPipeline's decode step (pipelines/wan/
 * pipeline_wan.py after the loop) with the Wan render's entry points:
 * the pipeline golden's final latents (step3.latents_after of
 * tests/data/wan/pipeline/run.safetensors) through latents_denormalize_wan,
 * wan_vae_decode_host with the pipeline's own VAE (another weight draw than
 * tests/data/wan/vae) and the video processor's postprocess
 * (clamp(x / 2 + 0.5, 0, 1), [B, F, H, W, C]) against video_float within
 * its suggested_atol 2e-5, and round(x * 255) against video_uint8 within
 * +-1.  Negative control: the latents without the de-normalisation are far
 * off.  Skips (77) without a Vulkan device.  (tests/render/wan.sh runs the
 * whole pipeline; this is the VAE's part of it alone.)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/util.h"
#include "gpu/gpu.h"
#include "model/safetensors.h"
#include "nn/wan_vae.h"
#include "sampler/latents.h"
#include "../test.h"

/* max |postprocess(sample) - gold|, and of the uint8 frames */
static double
compare(const float *sample, const int64_t o[5], const float *gold,
    const uint8_t *gold8, int *max8)
{
	double mx = 0;

	*max8 = 0;
	for (int64_t b = 0; b < o[0]; b++)
		for (int64_t c = 0; c < o[1]; c++)
			for (int64_t f = 0; f < o[2]; f++)
				for (int64_t y = 0; y < o[3]; y++)
					for (int64_t x = 0; x < o[4]; x++) {
						float v = sample[(((b * o[1] + c) * o[2] + f) *
						    o[3] + y) * o[4] + x] / 2.0f + 0.5f;
						int64_t g = (((b * o[2] + f) * o[3] + y) *
						    o[4] + x) * o[1] + c;
						int u, d;

						v = v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v;
						if (fabs((double)v - gold[g]) > mx)
							mx = fabs((double)v - gold[g]);
						u = (int)lrintf(v * 255.0f);
						d = abs(u - (int)gold8[g]);
						if (d > *max8)
							*max8 = d;
					}
	return mx;
}

int
main(void)
{
	char *run = xasprintf("%s/tests/data/wan/pipeline/run.safetensors",
	    LQ_SRCDIR);
	char *dir = xasprintf("%s/tests/data/wan/pipeline/model/vae", LQ_SRCDIR);
	struct gpu_ctx *ctx = NULL;
	struct wan_vae *v = NULL;
	struct st_file *f = NULL;
	struct lq_error err;
	const struct st_tensor *tl, *tv, *t8;
	float *lat, *z, *sample, *gold;
	int64_t o[5], S, n;
	int max8;
	double mx;

	error_clear(&err);
	if (gpu_ctx_create(NULL, &ctx, &err) != LQ_OK) {
		error_print(&err, stderr);
		return 77;
	}
	CHECK(st_file_open(run, &f, &err) == LQ_OK);
	CHECK(wan_vae_load(ctx, dir, &v, &err) == LQ_OK);
	if (f == NULL || v == NULL) {
		error_print(&err, stderr);
		return test_summary();
	}
	tl = st_file_find(f, "step3.latents_after");
	tv = st_file_find(f, "video_float");
	t8 = st_file_find(f, "video_uint8");
	CHECK(tl != NULL && tv != NULL && t8 != NULL && tl->ndim == 5);
	if (tl == NULL || tv == NULL || t8 == NULL)
		return test_summary();
	wan_vae_output_shape(wan_vae_config(v), tl->shape, o);
	CHECK_INT(o[2], tv->shape[1]);
	CHECK_INT(o[3], tv->shape[2]);
	CHECK_INT(o[4], tv->shape[3]);
	S = tl->shape[2] * tl->shape[3] * tl->shape[4];
	n = o[0] * o[1] * o[2] * o[3] * o[4];
	lat = st_tensor_to_f32(tl);
	gold = st_tensor_to_f32(tv);
	z = xmalloc(sizeof(float) * (size_t)(tl->shape[0] * tl->shape[1] * S));
	sample = xmalloc(sizeof(float) * (size_t)n);
	{
		struct latents_shape sh = { tl->shape[0], tl->shape[1],
		    tl->shape[2], tl->shape[3], tl->shape[4], 1, 1 };

		memcpy(z, lat, sizeof(float) * (size_t)(tl->shape[0] *
		    tl->shape[1] * S));
		latents_denormalize_wan(&sh, z, wan_vae_config(v)->latents_mean,
		    wan_vae_config(v)->latents_std);
	}
	CHECK(wan_vae_decode_host(v, z, tl->shape, sample, &err) == LQ_OK);
	mx = compare(sample, o, gold, t8->data, &max8);
	printf("video_float max abs %.3g (atol 2e-05), video_uint8 max %d\n",
	    mx, max8);
	CHECK(mx <= 2e-5);
	CHECK(max8 <= 1);
	/* without the de-normalisation the video is another one */
	CHECK(wan_vae_decode_host(v, lat, tl->shape, sample, &err) == LQ_OK);
	mx = compare(sample, o, gold, t8->data, &max8);
	CHECK(mx > 1e-2);
	free(lat);
	free(gold);
	free(z);
	free(sample);
	st_file_close(f);
	wan_vae_free(v);
	gpu_ctx_free(ctx);
	free(run);
	free(dir);
	return test_summary();
}
