/*
 * test-job.c — struct job_config (manifest/job.h): defaults come from the
 * key table, wrong types are refused, and the derived values (batch over a
 * mesh, latent shape, output paths) each have one answer.
 */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "manifest/job.h"
#include "manifest/manifest.h"
#include "manifest/schema.h"
#include "test.h"

static struct job_config
parse(const char *json, enum lq_status want)
{
	struct job_config jc;
	struct lq_error err;
	error_clear(&err);
	cJSON *c = cJSON_Parse(json);
	CHECK(c != NULL);
	enum lq_status s = job_config_from_json(c, &jc, &err);
	CHECK_INT(s, want);
	if (s != want)
		fprintf(stderr, "%s: %s\n", json, err.message);
	if (s != LQ_OK) {
		CHECK_STR(err.code, "LQ-RUN-CFG");
		CHECK(json[0] != '{' || err.field[0] != '\0');
	}
	/* strings of jc borrow from c: keep it for the test's life */
	static cJSON *keep[64];
	static int n;
	if (n < 64)
		keep[n++] = c;
	return jc;
}

/* An absent key takes its table row's default, whatever that is. */
static void
test_defaults(void)
{
	struct job_config jc = parse("{\"model\": \"m\"}", LQ_OK);
	const struct manifest_key *k = manifest_key_find("num_inference_steps");
	CHECK_INT(jc.num_inference_steps, strtoll(k->def, NULL, 10));
	k = manifest_key_find("max_sequence_length");
	CHECK_INT(jc.max_sequence_length, strtoll(k->def, NULL, 10));
	k = manifest_key_find("guidance_scale");
	CHECK_NEAR(jc.guidance_scale, strtod(k->def, NULL), 0);
	k = manifest_key_find("max_attempts");
	CHECK_INT(jc.max_attempts, strtoll(k->def, NULL, 10));
	k = manifest_key_find("height");
	CHECK_INT(jc.height, strtoll(k->def, NULL, 10));
	k = manifest_key_find("mesh");
	CHECK_INT(jc.mesh.data, strtoll(manifest_key_field(k, "data")->def,
	    NULL, 10));
	CHECK_STR(jc.negative_prompt, "");
	CHECK_INT(jc.seed, 0);
	/* a template's default is the manifest's to expand, per job */
	CHECK(jc.output == NULL);
	/* decode_noise_scale null: decode_timestep */
	job_config_free(&jc);
	jc = parse("{\"decode_timestep\": 0.05, \"decode_noise_scale\": null}",
	    LQ_OK);
	CHECK_NEAR(jc.decode_noise_scale, 0.05, 0);
	job_config_free(&jc);
	jc = parse("{\"seed\": \"18446744073709551615\", \"height\": 96, "
	    "\"loras\": [{\"path\": \"/l.safetensors\"}]}", LQ_OK);
	CHECK(jc.seed == UINT64_MAX);
	CHECK_INT(jc.height, 96);
	CHECK_INT(jc.n_loras, 1);
	CHECK_NEAR(jc.loras[0].scale, strtod(manifest_key_field(
	    manifest_key_find("loras"), "scale")->def, NULL), 0);
	job_config_free(&jc);
	CHECK(jc.loras == NULL);
}

static void
test_types(void)
{
	parse("{\"height\": \"512\"}", LQ_FAILED);
	parse("{\"height\": 512.5}", LQ_FAILED);
	parse("{\"seed\": \"-1\"}", LQ_FAILED);
	parse("{\"seed\": \"18446744073709551616\"}", LQ_FAILED);
	parse("{\"mesh\": {\"data\": \"2\"}}", LQ_FAILED);
	parse("{\"truncate\": 1}", LQ_FAILED);
	parse("{\"loras\": [{\"scale\": 1}]}", LQ_FAILED);
	parse("[]", LQ_FAILED);
}

/* The batch: data parallel splits it, context and tensor split one video. */
static void
test_batch(void)
{
	static const struct {
		const char *json;
		int64_t batch;
	} cases[] = {
		{ "{}", 1 },
		{ "{\"mesh\": {\"devices\": 2, \"context\": 2}}", 1 },
		{ "{\"mesh\": {\"devices\": 2, \"tensor\": 2}}", 1 },
		{ "{\"mesh\": {\"devices\": 2, \"data\": 2}}", 2 },
		{ "{\"per_device_batch_size\": 2, \"mesh\": {\"devices\": 4, "
		  "\"data\": 2, \"context\": 2}}", 4 },
		{ "{\"per_device_batch_size\": 0.5, \"mesh\": {\"devices\": 2, "
		  "\"data\": 2}}", 1 },
		{ "{\"per_device_batch_size\": 0.5}", 0 },
		{ "{\"per_device_batch_size\": 0}", 0 },
		{ "{\"per_device_batch_size\": -1, \"mesh\": {\"data\": 2}}", 0 },
		{ "{\"mesh\": {\"devices\": 2, \"data\": -1}}", 1 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct job_config jc = parse(cases[i].json, LQ_OK);
		double exact;
		int64_t b = job_batch(&jc, &exact);
		if (b != cases[i].batch)
			fprintf(stderr, "%s\n", cases[i].json);
		CHECK_INT(b, cases[i].batch);
		job_config_free(&jc);
	}
}

/* issue 16: the data axis splits transformer rows (videos × CFG halves) */
static void
test_rows(void)
{
	static const struct {
		const char *json;
		int cfg;
		int64_t rows, per_device;
	} cases[] = {
		{ "{}", 2, 2, 2 },
		{ "{\"guidance_scale\": 1}", 1, 1, 1 },
		{ "{\"guidance_scale\": 1.0001}", 2, 2, 2 },
		{ "{\"per_device_batch_size\": 0.5, \"mesh\": {\"devices\": 2, "
		  "\"data\": 2}}", 2, 2, 1 },
		{ "{\"per_device_batch_size\": 0.5, \"guidance_scale\": 1, "
		  "\"mesh\": {\"devices\": 2, \"data\": 2}}", 1, 1, 0 },
		{ "{\"per_device_batch_size\": 0.25, \"mesh\": {\"devices\": 4, "
		  "\"data\": 4}}", 2, 2, 0 },
		{ "{\"per_device_batch_size\": 1.5, \"mesh\": {\"devices\": 2, "
		  "\"data\": 2}}", 2, 6, 3 },
		{ "{\"per_device_batch_size\": 0.5}", 2, 0, 0 },
		{ "{\"per_device_batch_size\": 2, \"mesh\": {\"devices\": 4, "
		  "\"data\": 2, \"context\": 2}}", 2, 8, 4 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct job_config jc = parse(cases[i].json, LQ_OK);
		int64_t rows = -1;
		int64_t pd = job_rows_per_device(&jc, &rows);
		if (pd != cases[i].per_device || rows != cases[i].rows)
			fprintf(stderr, "%s\n", cases[i].json);
		CHECK_INT(job_cfg_rows(&jc), cases[i].cfg);
		CHECK_INT(rows, cases[i].rows);
		CHECK_INT(pd, cases[i].per_device);
		job_config_free(&jc);
	}
}

static void
test_shape(void)
{
	struct job_config jc = parse("{\"height\": 512, \"width\": 704, "
	    "\"num_frames\": 161, \"mesh\": {\"devices\": 2, \"context\": 2}}",
	    LQ_OK);
	struct job_latent_shape ls;
	CHECK_INT(job_latent_shape(&jc, 32, 8, 1, 1, &ls), 0);
	CHECK_INT(ls.batch, 1);
	CHECK_INT(ls.frames, 21);
	CHECK_INT(ls.height, 16);
	CHECK_INT(ls.width, 22);
	CHECK_INT(ls.tokens, 21 * 16 * 22);
	CHECK_INT(job_latent_shape(&jc, 32, 8, 2, 1, &ls), 0);
	CHECK_INT(ls.tokens, 21 * 8 * 11);
	CHECK_INT(job_latent_shape(&jc, 32, 8, 1, 2, &ls), -1);	/* 21 frames */
	CHECK_INT(job_latent_shape(&jc, 128, 8, 1, 1, &ls), -1);	/* 704 */
	jc.num_frames = 160;
	CHECK_INT(job_latent_shape(&jc, 32, 8, 1, 1, &ls), -1);
	CHECK_INT(ls.tokens, 0);
	job_config_free(&jc);
}

static void
test_paths(void)
{
	struct job_config jc = parse("{\"output\": \"out/a.mp4\", "
	    "\"frames\": \"f/a\"}", LQ_OK);
	char *p = job_output_path(&jc, "/m", 0, 1);
	CHECK_STR(p, "/m/out/a.mp4");
	free(p);
	p = job_output_path(&jc, "/m", 1, 2);
	CHECK_STR(p, "/m/out/a-1.mp4");
	free(p);
	p = job_frames_path(&jc, "/m", 1, 2);
	CHECK_STR(p, "/m/f/a/1");
	free(p);
	/* expanded once by the manifest: braces left in a name stay */
	job_config_free(&jc);
	jc = parse("{\"output\": \"/abs/{x}.mp4\"}", LQ_OK);
	p = job_output_path(&jc, "/m", 0, 1);
	CHECK_STR(p, "/abs/{x}.mp4");
	free(p);
	CHECK(job_frames_path(&jc, "/m", 0, 1) == NULL);
	p = job_path_sibling("d.x/name", ".sheet.png");
	CHECK_STR(p, "d.x/name.sheet.png");
	free(p);
	job_config_free(&jc);
}

/* A loaded manifest's config reads back with the values written. */
static void
test_manifest(void)
{
	static const char text[] =
	    "defaults: {model: /m, prompt: p, num_inference_steps: 7}\n"
	    "jobs:\n  - name: a\n    mesh: {devices: 2, context: 2}\n";
	struct manifest *m = NULL;
	struct lq_error err;
	error_clear(&err);
	CHECK_INT(manifest_load_buffer("/tmp/x.yaml", text, sizeof(text) - 1,
	    &m, &err), LQ_OK);
	CHECK_INT(m->n_jobs, 1);
	struct job_config jc;
	CHECK_INT(job_config_from_json(m->jobs[0].config, &jc, &err), LQ_OK);
	CHECK_INT(jc.num_inference_steps, 7);
	CHECK_STR(jc.output, "a.mp4");
	CHECK_INT(jc.mesh.context, 2);
	CHECK_INT(job_batch(&jc, NULL), 1);
	job_config_free(&jc);
	manifest_free(m);
}

/*
 * LTX-2's audio scales: upstream's `audio_x or x` (0 is the video's
 * value), audio_scales_literal keeping a 0, and the STG blocks, from a
 * manifest (the table's defaults) and from a config.
 */
static void
test_ltx2_guidance(void)
{
	static const char text[] =
	    "defaults: {model: /m, prompt: p, guidance_scale: 4, stg_scale: 2,"
	    " guidance_rescale: 0.3}\n"
	    "jobs:\n"
	    "  - name: a\n"
	    "  - name: b\n    audio_guidance_scale: 0\n    audio_stg_scale: 0\n"
	    "    audio_guidance_rescale: 0\n"
	    "    spatio_temporal_guidance_blocks: [1, 3]\n"
	    "  - name: c\n    audio_guidance_scale: 0\n    audio_stg_scale: 0\n"
	    "    audio_scales_literal: true\n"
	    "    spatio_temporal_guidance_blocks: []\n";
	struct manifest *m = NULL;
	struct lq_error err;
	error_clear(&err);
	CHECK_INT(manifest_load_buffer("/tmp/x.yaml", text, sizeof(text) - 1,
	    &m, &err), LQ_OK);
	if (m == NULL)
		return;
	CHECK_INT(m->n_jobs, 3);
	struct job_config a, b, c;
	CHECK_INT(job_config_from_json(m->jobs[0].config, &a, &err), LQ_OK);
	CHECK_INT(job_config_from_json(m->jobs[1].config, &b, &err), LQ_OK);
	CHECK_INT(job_config_from_json(m->jobs[2].config, &c, &err), LQ_OK);
	/* a: the table's LTX2Pipeline defaults */
	CHECK_NEAR(a.audio_guidance_scale, strtod(manifest_key_find(
	    "audio_guidance_scale")->def, NULL), 0);
	CHECK_NEAR(a.modality_scale, 3.0, 0);
	CHECK_INT(a.n_stg_blocks, 1);
	CHECK_INT(a.n_stg_blocks ? a.stg_blocks[0] : -1, 28);
	CHECK_INT(a.use_cross_timestep, 1);
	/* b: 0 falls back to the video's value, as upstream */
	CHECK_NEAR(b.audio_guidance_scale, 4.0, 0);
	CHECK_NEAR(b.audio_stg_scale, 2.0, 0);
	CHECK_NEAR(b.audio_guidance_rescale, 0.3, 0);
	CHECK_INT(b.n_stg_blocks, 2);
	CHECK_INT(b.n_stg_blocks == 2 ? b.stg_blocks[1] : -1, 3);
	/* c: literally 0 */
	CHECK_NEAR(c.audio_guidance_scale, 0.0, 0);
	CHECK_NEAR(c.audio_stg_scale, 0.0, 0);
	CHECK_INT(c.n_stg_blocks, 0);
	job_config_free(&a);
	job_config_free(&b);
	job_config_free(&c);
	manifest_free(m);
	/* not a list of integers */
	static const char bad[] = "defaults: {model: /m, prompt: p}\n"
	    "jobs:\n  - spatio_temporal_guidance_blocks: [1.5]\n";
	error_clear(&err);
	m = NULL;
	(void)manifest_load_buffer("/tmp/x.yaml", bad, sizeof(bad) - 1, &m,
	    &err);
	CHECK(m != NULL && m->n_jobs == 1 && m->jobs[0].error != NULL);
	if (m != NULL && m->n_jobs == 1 && m->jobs[0].error != NULL)
		CHECK_STR(m->jobs[0].error->code, "LQ-MAN-005");
	manifest_free(m);
	(void)parse("{\"spatio_temporal_guidance_blocks\": 3}", LQ_FAILED);
}

int
main(void)
{
	test_defaults();
	test_types();
	test_batch();
	test_rows();
	test_shape();
	test_paths();
	test_manifest();
	test_ltx2_guidance();
	return test_summary();
}
