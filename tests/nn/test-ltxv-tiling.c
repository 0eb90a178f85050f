/*
 * test-ltxv-tiling.c — the pure parts of tiled VAE decoding (nn/ltxv_vae.h):
 * attribute parsing and checks, the OOM shrink ladder, the device-bytes
 * function and the `vae_tiling: auto` choice, on the goldens' 0.9.1-style
 * config (spatial ratio 16, temporal 4) and a 32x / 8x geometry.
 */
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "manifest/schema.h"
#include "model/diffusers.h"
#include "nn/ltxv_vae.h"
#include "nn/plan.h"
#include "test.h"

static void
load_config(const char *rel, struct ltxv_vae_config *c)
{
	char *p = xasprintf("%s/%s", LQ_SRCDIR, rel);
	cJSON *root = NULL;
	struct lq_error err;

	error_clear(&err);
	if (diffusers_load_json(p, &root, &err) != LQ_OK ||
	    diffusers_parse_vae(root, p, c, &err) != LQ_OK) {
		error_print(&err, stderr);
		exit(99);
	}
	cJSON_Delete(root);
	free(p);
}

static void
test_set(void)
{
	struct ltxv_vae_tiling t, u;
	struct lq_error err;

	ltxv_vae_tiling_init(&t);
	CHECK_INT(t.use_tiling, 0);
	CHECK_INT(t.use_framewise_decoding, 0);
	CHECK_INT(t.tile_sample_min_height, 512);
	CHECK_INT(t.tile_sample_stride_num_frames, 8);
	error_clear(&err);
	CHECK_INT(ltxv_vae_tiling_set(&t, "use_tiling", "true", &err), LQ_OK);
	CHECK_INT(ltxv_vae_tiling_set(&t, "tile_sample_stride_width", "96", &err),
	    LQ_OK);
	CHECK_INT(t.use_tiling, 1);
	CHECK_INT(t.tile_sample_stride_width, 96);
	u = t;
	CHECK_INT(ltxv_vae_tiling_set(&t, "tile_sample_min_height", "-3", &err),
	    LQ_FAILED);
	CHECK_STR(err.code, "LQ-NN-TILING");
	CHECK_CONTAINS(err.message, "\"-3\" is not a size");
	CHECK(memcmp(&t, &u, sizeof(t)) == 0);
	error_clear(&err);
	CHECK_INT(ltxv_vae_tiling_set(&t, "tile_height", "64", &err), LQ_FAILED);
	CHECK_CONTAINS(err.message, "not a VAE tiling attribute");
	for (int i = 0; ltxv_vae_tiling_names[i]; i++) {
		error_clear(&err);
		CHECK_INT(ltxv_vae_tiling_set(&t, ltxv_vae_tiling_names[i],
		    i < 2 ? "false" : "64", &err), LQ_OK);
	}
}

/* The manifest's vae_tiling sub-keys are the decoder's attribute names. */
static void
test_manifest_names(void)
{
	const struct manifest_key *k = manifest_key_find("vae_tiling");
	int n = 0;

	CHECK(k != NULL && k->fields != NULL);
	if (k == NULL || k->fields == NULL)
		return;
	for (; k->fields[n].name && ltxv_vae_tiling_names[n]; n++)
		CHECK_STR(k->fields[n].name, ltxv_vae_tiling_names[n]);
	CHECK(k->fields[n].name == NULL && ltxv_vae_tiling_names[n] == NULL);
	CHECK_INT(n, 8);
}

static void
test_shrink(const struct ltxv_vae_config *c)
{
	struct ltxv_vae_tiling t;
	struct lq_error err;
	int s = c->spatial_compression_ratio, r = c->temporal_compression_ratio;
	int n = 0;

	ltxv_vae_tiling_init(&t);
	CHECK_INT(ltxv_vae_tiling_shrink(c, &t), 1);
	CHECK_INT(t.use_tiling, 1);
	CHECK_INT(t.use_framewise_decoding, 1);
	CHECK_INT(t.tile_sample_min_height, 256);
	CHECK_INT(t.tile_sample_stride_height, 224 / s * s);
	do {
		error_clear(&err);
		CHECK_INT(ltxv_vae_tiling_check(c, &t, &err), LQ_OK);
		CHECK(t.tile_sample_stride_height <= t.tile_sample_min_height);
		CHECK(t.tile_sample_stride_num_frames <= t.tile_sample_min_num_frames);
		CHECK_INT(t.tile_sample_min_width % s, 0);
		CHECK_INT(t.tile_sample_stride_num_frames % r, 0);
		n++;
	} while (ltxv_vae_tiling_shrink(c, &t) && n < 64);
	CHECK(n < 64);
	CHECK_INT(t.tile_sample_min_height, s);
	CHECK_INT(t.tile_sample_stride_width, s);
	CHECK_INT(t.tile_sample_min_num_frames, r);
}

/* Device bytes of a decode besides the weights (ltxv_vae_plan: the
 * pool for the largest call plus its latent and sample), and the largest
 * single buffer it binds. */
static uint64_t
decode_bytes(const struct ltxv_vae_config *c, const int64_t z[5],
    const struct ltxv_vae_tiling *t, uint64_t *binding)
{
	struct nn_plan_bytes p;

	ltxv_vae_plan(c, NULL, NULL, (int)z[0], (int)z[2], (int)z[3],
	    (int)z[4], t, &p);
	if (binding)
		*binding = p.largest;
	return p.activations + p.io;
}

static void
test_plan_tiles(const struct ltxv_vae_config *c)
{
	/* 512 x 768 x 121 in latents of this VAE */
	int s = c->spatial_compression_ratio, r = c->temporal_compression_ratio;
	int64_t z[5] = { 1, c->latent_channels, 120 / r + 1, 512 / s, 768 / s };
	struct ltxv_vae_tiling t, d;
	uint64_t untiled, tiled, bind_u, bind_t, prev;

	ltxv_vae_tiling_init(&d);
	untiled = decode_bytes(c, z, NULL, &bind_u);
	CHECK(decode_bytes(c, z, &d, NULL) == untiled);	/* flags off */
	d.use_tiling = d.use_framewise_decoding = 1;
	tiled = decode_bytes(c, z, &d, &bind_t);
	CHECK(tiled < untiled);
	CHECK(bind_t < bind_u);
	/* the untiled sample alone: [1, 3, 121, 512, 768] f32 */
	CHECK(untiled > (uint64_t)3 * 121 * 512 * 768 * 4);
	CHECK(bind_u >= (uint64_t)3 * 121 * 512 * 768 * 4);
	/* each shrink step (the auto choice's and the OOM retry's ladder)
	 * never needs more */
	t = d;
	prev = tiled;
	while (ltxv_vae_tiling_shrink(c, &t)) {
		uint64_t b = decode_bytes(c, z, &t, NULL);

		CHECK(b <= prev);
		prev = b;
	}
	CHECK(prev < tiled);
	CHECK_INT(t.tile_sample_min_height, s);
}

/* The 0.9.1 VAE's geometry (128 latent channels, three upsampling up
 * blocks: 32x spatial, 8x temporal, timestep conditioning, noise
 * injection) at a narrow width. */
static const char narrow091[] =
    "{\"block_out_channels\": [8, 16, 16, 16],"
    " \"decoder_block_out_channels\": [8, 16, 32],"
    " \"layers_per_block\": [1, 1, 1, 1, 1], \"decoder_layers_per_block\": [1, 1, 1, 1],"
    " \"spatio_temporal_scaling\": [true, true, true, false],"
    " \"decoder_spatio_temporal_scaling\": [true, true, true],"
    " \"decoder_inject_noise\": [true, true, true, false],"
    " \"down_block_types\": [\"LTXVideoDownBlock3D\", \"LTXVideoDownBlock3D\","
    " \"LTXVideoDownBlock3D\", \"LTXVideoDownBlock3D\"],"
    " \"downsample_type\": [\"conv\", \"conv\", \"conv\", \"conv\"],"
    " \"upsample_residual\": [true, true, true], \"upsample_factor\": [2, 2, 2],"
    " \"timestep_conditioning\": true, \"latent_channels\": 128}";

int
main(void)
{
	struct ltxv_vae_config c091, c32;
	struct lq_error err;
	cJSON *j = cJSON_Parse(narrow091);

	load_config("tests/data/ltxv-extra/models/vae091/config.json", &c091);
	error_clear(&err);
	if (j == NULL || diffusers_parse_vae(j, "narrow091", &c32, &err) != LQ_OK) {
		error_print(&err, stderr);
		return 99;
	}
	cJSON_Delete(j);
	CHECK_INT(c32.spatial_compression_ratio, 32);
	CHECK_INT(c32.temporal_compression_ratio, 8);
	test_set();
	test_manifest_names();
	test_shrink(&c091);
	test_plan_tiles(&c091);
	test_shrink(&c32);
	test_plan_tiles(&c32);
	return test_summary();
}
