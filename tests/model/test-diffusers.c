/*
 * test-diffusers.c — component configs: upstream defaults for absent keys,
 * derived values (VAE compression, decoder plan), the shared model folders'
 * real configs, unsupported classes refused by name, overrides.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/util.h"
#include "model/diffusers.h"
#include "../test.h"

static const char *top;

static cJSON *
parse(const char *text)
{
	cJSON *j = cJSON_Parse(text);
	LQ_ASSERT(j != NULL);
	return j;
}

static void
test_defaults(void)
{
	struct lq_error err;
	error_clear(&err);
	cJSON *e = parse("{}");
	struct ltxv_transformer_config t;
	CHECK_INT(diffusers_parse_transformer(e, "t.json", &t, &err), LQ_OK);
	/* LTXVideoTransformer3DModel.__init__ defaults */
	CHECK_INT(t.in_channels, 128);
	CHECK_INT(t.out_channels, 128);
	CHECK_INT(t.num_attention_heads, 32);
	CHECK_INT(t.attention_head_dim, 64);
	CHECK_INT(t.cross_attention_dim, 2048);
	CHECK_INT(t.num_layers, 28);
	CHECK_INT(t.caption_channels, 4096);
	CHECK_STR(t.activation_fn, "gelu-approximate");
	CHECK_STR(t.qk_norm, "rms_norm_across_heads");
	CHECK_INT(t.norm_elementwise_affine, 0);
	CHECK_NEAR(t.norm_eps, 1e-6, 0);
	CHECK_INT(t.attention_bias, 1);
	CHECK_INT(t.attention_out_bias, 1);
	CHECK_INT(t.inner_dim, 2048);
	CHECK_INT(t.ff_inner_dim, 8192);

	struct ltxv_vae_config v;
	CHECK_INT(diffusers_parse_vae(e, "v.json", &v, &err), LQ_OK);
	/* AutoencoderKLLTXVideo.__init__ defaults */
	CHECK_INT(v.latent_channels, 128);
	CHECK_INT(v.n_block_out_channels, 4);
	CHECK_INT(v.block_out_channels[3], 512);
	CHECK_INT(v.n_layers_per_block, 5);
	CHECK_INT(v.n_decoder_inject_noise, 5);
	CHECK_INT(v.patch_size, 4);
	CHECK_INT(v.encoder_causal, 1);
	CHECK_INT(v.decoder_causal, 0);
	CHECK_INT(v.timestep_conditioning, 0);
	CHECK_NEAR(v.scaling_factor, 1.0, 0);
	/* 4 * 2^3 and 1 * 2^3 */
	CHECK_INT(v.spatial_compression_ratio, 32);
	CHECK_INT(v.temporal_compression_ratio, 8);
	CHECK_INT(v.dec_conv_in_out, 512);
	CHECK_INT(v.dec_mid_layers, 4);
	CHECK_INT(v.dec_n_up, 4);
	CHECK_INT(v.dec_up[0].in_channels, 512);
	CHECK_INT(v.dec_up[0].spatio_temporal_scale, 0);	/* reversed T,T,T,F */
	CHECK_INT(v.dec_up[3].out_channels, 128);
	CHECK_INT(v.dec_up[3].spatio_temporal_scale, 1);
	CHECK_INT(v.dec_conv_out_out, 48);

	struct t5_config c;
	CHECK_INT(diffusers_parse_t5(e, "c.json", &c, &err), LQ_OK);
	/* transformers T5Config defaults */
	CHECK_INT(c.vocab_size, 32128);
	CHECK_INT(c.d_model, 512);
	CHECK_INT(c.d_kv, 64);
	CHECK_INT(c.d_ff, 2048);
	CHECK_INT(c.num_layers, 6);
	CHECK_INT(c.num_heads, 8);
	CHECK_INT(c.relative_attention_num_buckets, 32);
	CHECK_INT(c.relative_attention_max_distance, 128);
	CHECK_STR(c.feed_forward_proj, "relu");
	CHECK_INT(c.is_gated_act, 0);
	CHECK_STR(c.dense_act_fn, "relu");
	cJSON_Delete(e);

	/* T5 v1.1: gated-gelu means gelu_new */
	e = parse("{\"feed_forward_proj\": \"gated-gelu\"}");
	CHECK_INT(diffusers_parse_t5(e, "c.json", &c, &err), LQ_OK);
	CHECK_INT(c.is_gated_act, 1);
	CHECK_STR(c.dense_act_fn, "gelu_new");
	cJSON_Delete(e);

	/* out_channels null: `out_channels or in_channels` */
	e = parse("{\"in_channels\": 16, \"out_channels\": null}");
	CHECK_INT(diffusers_parse_transformer(e, "t.json", &t, &err), LQ_OK);
	CHECK_INT(t.out_channels, 16);
	cJSON_Delete(e);

	/* explicit compression ratios win */
	e = parse("{\"spatial_compression_ratio\": 32, \"temporal_compression_ratio\": 8,"
	    "\"spatio_temporal_scaling\": [true, false, false, false]}");
	CHECK_INT(diffusers_parse_vae(e, "v.json", &v, &err), LQ_OK);
	CHECK_INT(v.spatial_compression_ratio, 32);
	CHECK_INT(v.temporal_compression_ratio, 8);
	cJSON_Delete(e);
}

static void
test_refusals(void)
{
	struct lq_error err;
	struct ltxv_transformer_config t;
	struct ltxv_vae_config v;
	struct t5_config c;
	cJSON *e;

	e = parse("{\"_class_name\": \"WanTransformer3DModel\"}");
	error_clear(&err);
	CHECK_INT(diffusers_parse_transformer(e, "t.json", &t, &err), LQ_FAILED);
	CHECK_STR(err.code, "LQ-MODEL-002");
	CHECK_CONTAINS(err.message, "WanTransformer3DModel");
	CHECK_STR(err.file, "t.json");
	cJSON_Delete(e);

	e = parse("{\"architectures\": [\"UMT5EncoderModel\"]}");
	error_clear(&err);
	CHECK_INT(diffusers_parse_t5(e, "c.json", &c, &err), LQ_FAILED);
	CHECK_STR(err.code, "LQ-MODEL-002");
	CHECK_CONTAINS(err.message, "UMT5EncoderModel");
	cJSON_Delete(e);

	e = parse("{\"num_layers\": \"four\"}");
	error_clear(&err);
	CHECK_INT(diffusers_parse_transformer(e, "t.json", &t, &err), LQ_FAILED);
	CHECK_STR(err.code, "LQ-MODEL-003");
	CHECK_STR(err.field, "num_layers");
	cJSON_Delete(e);

	e = parse("{\"qk_norm\": \"rms_norm\"}");
	error_clear(&err);
	CHECK_INT(diffusers_parse_transformer(e, "t.json", &t, &err), LQ_FAILED);
	CHECK_STR(err.code, "LQ-MODEL-006");
	cJSON_Delete(e);

	e = parse("{\"block_out_channels\": [8, 16], \"decoder_block_out_channels\": [8, 16],"
	    "\"decoder_layers_per_block\": [1, 1]}");
	error_clear(&err);
	CHECK_INT(diffusers_parse_vae(e, "v.json", &v, &err), LQ_FAILED);
	CHECK_STR(err.code, "LQ-MODEL-004");
	CHECK_STR(err.field, "decoder_layers_per_block");
	cJSON_Delete(e);

	e = parse("{\"down_block_types\": [\"CogVideoXDownBlock3D\"], \"block_out_channels\": [8]}");
	error_clear(&err);
	CHECK_INT(diffusers_parse_vae(e, "v.json", &v, &err), LQ_FAILED);
	CHECK_STR(err.code, "LQ-MODEL-002");
	CHECK_CONTAINS(err.message, "CogVideoXDownBlock3D");
	cJSON_Delete(e);
}

static char *
data(const char *rel)
{
	return xasprintf("%s/tests/data/model/%s", top, rel);
}

static void
test_shared_configs(void)
{
	struct lq_error err;
	cJSON *j;
	struct ltxv_vae_config v;
	/* demo VAE: patch 4, one spatio-temporal stage -> 8 / 2 (its README) */
	char *p = data("ltxv-demo/vae/config.json");
	CHECK_INT(diffusers_load_json(p, &j, &err), LQ_OK);
	CHECK_INT(diffusers_parse_vae(j, p, &v, &err), LQ_OK);
	CHECK_INT(v.spatial_compression_ratio, 8);
	CHECK_INT(v.temporal_compression_ratio, 2);
	CHECK_INT(v.latent_channels, 16);
	CHECK_INT(v.dec_mid_layers, 2);
	CHECK_INT(v.dec_up[1].num_layers, 0);
	cJSON_Delete(j);
	free(p);
	/* goldens VAEs: 16 / 4 (goldens README) and vae091's decoder plan */
	const char *vaes[] = {"goldens-vae090", "goldens-vae091", "goldens-vae_causal"};
	for (size_t i = 0; i < LQ_ARRAY_LEN(vaes); i++) {
		char *rel = xasprintf("%s/vae/config.json", vaes[i]);
		p = data(rel);
		CHECK_INT(diffusers_load_json(p, &j, &err), LQ_OK);
		CHECK_INT(diffusers_parse_vae(j, p, &v, &err), LQ_OK);
		CHECK_INT(v.spatial_compression_ratio, 16);
		CHECK_INT(v.temporal_compression_ratio, 4);
		if (i == 1) {
			CHECK_INT(v.timestep_conditioning, 1);
			CHECK_INT(v.dec_conv_in_out, 32);
			CHECK_INT(v.dec_up[0].in_channels, 16);
			CHECK_INT(v.dec_up[0].upsampler_out, 128);
			CHECK_INT(v.dec_up[0].inject_noise, 1);
			CHECK_INT(v.dec_up[1].inject_noise, 0);
			CHECK_INT(v.dec_up[2].in_channels, 8);
			CHECK_INT(v.dec_conv_out_in, 8);
		}
		if (i == 2)
			CHECK_INT(v.decoder_causal, 1);
		cJSON_Delete(j);
		free(p);
		free(rel);
	}
	struct t5_config c;
	p = data("goldens-t5/text_encoder/config.json");
	CHECK_INT(diffusers_load_json(p, &j, &err), LQ_OK);
	CHECK_INT(diffusers_parse_t5(j, p, &c, &err), LQ_OK);
	CHECK_INT(c.d_model, 32);
	CHECK_INT(c.relative_attention_num_buckets, 8);
	CHECK_INT(c.relative_attention_max_distance, 8);
	CHECK_STR(c.dense_act_fn, "gelu_new");
	cJSON_Delete(j);
	free(p);
}

/* Copies a tests/data/model folder to tmp (configs only, plus an empty
 * spiece.model beside any tokenizer_config.json). */
static char *
copy_folder(const char *name, const char *tmp)
{
	char *dst = xasprintf("%s/%s", tmp, name);
	char *cmd = xasprintf("cp -r '%s/tests/data/model/%s' '%s' && chmod -R u+w '%s' && "
	    "for d in '%s'/*/; do [ -f \"$d/tokenizer_config.json\" ] && : > \"$d/spiece.model\"; "
	    "done; true", top, name, dst, dst, dst);
	LQ_ASSERT(system(cmd) == 0);
	free(cmd);
	return dst;
}

static void
test_folders(const char *tmp)
{
	struct lq_error err;
	struct diffusers_model *m = NULL;
	char *demo = copy_folder("ltxv-demo", tmp);
	error_clear(&err);
	CHECK_INT(diffusers_open(demo, NULL, &m, &err), LQ_OK);
	if (m) {
		CHECK_STR(m->pipeline_class, "LTXPipeline");
		CHECK(m->text_encoder.present);
		CHECK(m->tokenizer.present);
		CHECK_STR(m->tokenizer.class_name, "T5Tokenizer");
		CHECK_INT(m->tokenizer_files.model_max_length, 128);
		CHECK_INT(m->tokenizer_files.extra_ids, 0);
		CHECK_CONTAINS(m->tokenizer_files.spiece_model, "tokenizer/spiece.model");
		CHECK_INT(m->transformer_config.num_layers, 4);
		CHECK_INT(m->transformer_config.inner_dim, 128);
		CHECK_INT(m->text_encoder_config.d_model, 64);
		CHECK_CONTAINS(m->scheduler.config_path, "scheduler/scheduler_config.json");
		diffusers_free(m);
	}
	/* the goldens pipelines have no text encoder or tokenizer ([null, null]) */
	char *pa = copy_folder("goldens-pipeA", tmp);
	char *pb = copy_folder("goldens-pipeB", tmp);
	CHECK_INT(diffusers_open(pa, NULL, &m, &err), LQ_OK);
	if (m) {
		CHECK(!m->text_encoder.present);
		CHECK(!m->tokenizer.present);
		CHECK_INT(m->vae_config.timestep_conditioning, 0);
		diffusers_free(m);
	}
	/* override: pipeA with pipeB's VAE, and the demo's text encoder */
	char *vb = xasprintf("%s/vae", pb);
	char *te = xasprintf("%s/text_encoder", demo);
	struct diffusers_overrides ov = {.vae = vb, .text_encoder = te};
	CHECK_INT(diffusers_open(pa, &ov, &m, &err), LQ_OK);
	if (m) {
		CHECK_INT(m->vae_config.timestep_conditioning, 1);
		CHECK_STR(m->vae.dir, vb);
		CHECK(m->text_encoder.present);
		CHECK_INT(m->text_encoder_config.d_model, 64);
		diffusers_free(m);
	}
	/* an override that is not a folder */
	ov = (struct diffusers_overrides){.vae = "/nonexistent/vae"};
	error_clear(&err);
	CHECK_INT(diffusers_open(pa, &ov, &m, &err), LQ_FAILED);
	CHECK(m == NULL);
	CHECK_STR(err.code, "LQ-MODEL-001");
	CHECK_STR(err.field, "vae");

	/* unsupported pipeline and component classes are refused by name */
	char *idx = xasprintf("%s/model_index.json", pa);
	FILE *fp = fopen(idx, "w");
	fputs("{\"_class_name\": \"LTXPipeline\", \"transformer\": [\"diffusers\", "
	    "\"LTXVideoTransformer3DModel\"], \"vae\": [\"diffusers\", \"AutoencoderKLWan\"], "
	    "\"scheduler\": [\"diffusers\", \"FlowMatchEulerDiscreteScheduler\"]}", fp);
	fclose(fp);
	error_clear(&err);
	CHECK_INT(diffusers_open(pa, NULL, &m, &err), LQ_FAILED);
	CHECK_STR(err.code, "LQ-MODEL-002");
	CHECK_STR(err.field, "vae");
	CHECK_CONTAINS(err.message, "AutoencoderKLWan");
	fp = fopen(idx, "w");
	fputs("{\"_class_name\": \"WanPipeline\"}", fp);
	fclose(fp);
	error_clear(&err);
	CHECK_INT(diffusers_open(pa, NULL, &m, &err), LQ_FAILED);
	CHECK_STR(err.code, "LQ-MODEL-002");
	CHECK_CONTAINS(err.message, "WanPipeline");
	/* a required component missing */
	fp = fopen(idx, "w");
	fputs("{\"_class_name\": \"LTXPipeline\", \"transformer\": [\"diffusers\", "
	    "\"LTXVideoTransformer3DModel\"], \"scheduler\": [\"diffusers\", "
	    "\"FlowMatchEulerDiscreteScheduler\"]}", fp);
	fclose(fp);
	error_clear(&err);
	CHECK_INT(diffusers_open(pa, NULL, &m, &err), LQ_FAILED);
	CHECK_STR(err.code, "LQ-MODEL-005");
	CHECK_STR(err.field, "vae");
	/* tokenizer without spiece.model */
	char *sp = xasprintf("%s/tokenizer/spiece.model", demo);
	unlink(sp);
	error_clear(&err);
	CHECK_INT(diffusers_open(demo, NULL, &m, &err), LQ_FAILED);
	CHECK_STR(err.code, "LQ-MODEL-007");
	free(sp);
	free(idx);
	free(vb);
	free(te);
	free(pa);
	free(pb);
	free(demo);
}

/* Writes `text` to dir/name (dir created). */
static void
put(const char *dir, const char *name, const char *text)
{
	mkdir(dir, 0755);
	char *p = xasprintf("%s/%s", dir, name);
	FILE *f = fopen(p, "w");
	LQ_ASSERT(f != NULL);
	fputs(text, f);
	fclose(f);
	free(p);
}

/*
 * An LTX2Pipeline folder of the LTX-2 goldens' components (tests/data/
 * ltx2: audio VAE, vocoder, connectors, scheduler config; a transformer
 * and a video VAE folder of their class alone): opened with every config
 * parsed; the class read; a missing vocoder, a wrong component class and
 * an LTXPipeline index refused with their codes.
 */
static void
test_ltx2_folder(const char *tmp)
{
	struct lq_error err;
	char *root = xasprintf("%s/ltx2", tmp);
	char *d = xasprintf("%s/tests/data/ltx2", top);
	static const char index[] = "{\"_class_name\": \"LTX2Pipeline\", "
	    "\"scheduler\": [\"diffusers\", \"FlowMatchEulerDiscreteScheduler\"], "
	    "\"vae\": [\"diffusers\", \"AutoencoderKLLTX2Video\"], "
	    "\"audio_vae\": [\"diffusers\", \"AutoencoderKLLTX2Audio\"], "
	    "\"text_encoder\": [null, null], \"tokenizer\": [null, null], "
	    "\"connectors\": [\"diffusers\", \"LTX2TextConnectors\"], "
	    "\"transformer\": [\"diffusers\", \"LTX2VideoTransformer3DModel\"], "
	    "\"vocoder\": [\"diffusers\", \"LTX2Vocoder\"]}";
	mkdir(root, 0755);
	put(root, "model_index.json", index);
	char *tr = xasprintf("%s/transformer", root), *va = xasprintf("%s/vae", root);
	put(tr, "config.json", "{\"_class_name\": \"LTX2VideoTransformer3DModel\"}");
	put(va, "config.json", "{\"_class_name\": \"AutoencoderKLLTX2Video\"}");
	static const char *const links[][2] = {
		{ "audio_vae", "audio_vae/avae/model/audio_vae" },
		{ "vocoder", "vocoder/voc/model/vocoder" },
		{ "connectors", "connectors/model/connectors" },
	};
	for (size_t i = 0; i < LQ_ARRAY_LEN(links); i++) {
		char *from = xasprintf("%s/%s", d, links[i][1]);
		char *to = xasprintf("%s/%s", root, links[i][0]);
		char *abs = realpath(from, NULL);
		CHECK(abs != NULL && symlink(abs, to) == 0);
		free(abs);
		free(from);
		free(to);
	}
	char *sd = xasprintf("%s/scheduler", root);
	char *sc = xasprintf("%s/pipeline/pipe/scheduler_config.json", d);
	char *text = util_read_file(sc, NULL);
	CHECK(text != NULL);
	put(sd, "scheduler_config.json", text ? text : "{}");
	free(text);

	char cls[64] = "";
	error_clear(&err);
	CHECK_INT(diffusers_pipeline_class(root, cls, sizeof(cls), &err), LQ_OK);
	CHECK_STR(cls, "LTX2Pipeline");
	struct diffusers_ltx2_model *m = NULL;
	CHECK_INT(diffusers_open_ltx2(root, NULL, &m, &err), LQ_OK);
	CHECK(m != NULL);
	if (m != NULL) {
		CHECK_INT(m->audio_vae_config.sample_rate, 16000);
		CHECK_INT(m->audio_vae_config.mel_hop_length, 160);
		CHECK_INT(m->vocoder_config.n_upsample, 2);
		CHECK_INT(m->connectors_config.caption_channels, 32);
		CHECK(!m->text_encoder.present);
		CHECK(strstr(m->transformer.config_path, "/transformer/config.json"));
	}
	diffusers_ltx2_free(m);
	/* the LTX-Video opener says what it is not */
	struct diffusers_model *lm = NULL;
	error_clear(&err);
	CHECK_INT(diffusers_open(root, NULL, &lm, &err), LQ_FAILED);
	CHECK_STR(err.code, "LQ-MODEL-002");
	CHECK(strstr(err.message, "LTX2Pipeline") != NULL);

	/* a wrong class, a missing vocoder */
	char *bad = xstrdup(index);
	memcpy(strstr(bad, "LTX2Vocoder"), "HifiGan____", 11);
	put(root, "model_index.json", bad);
	error_clear(&err);
	CHECK_INT(diffusers_open_ltx2(root, NULL, &m, &err), LQ_FAILED);
	CHECK_STR(err.code, "LQ-MODEL-002");
	CHECK(m == NULL);
	char *gone = xstrdup(index);
	char *v = strstr(gone, ", \"vocoder\"");
	strcpy(v, "}");
	put(root, "model_index.json", gone);
	error_clear(&err);
	CHECK_INT(diffusers_open_ltx2(root, NULL, &m, &err), LQ_FAILED);
	CHECK_STR(err.code, "LQ-MODEL-005");
	CHECK_STR(err.field, "vocoder");
	put(root, "model_index.json", "{\"_class_name\": \"LTXPipeline\"}");
	error_clear(&err);
	CHECK_INT(diffusers_open_ltx2(root, NULL, &m, &err), LQ_FAILED);
	CHECK_STR(err.code, "LQ-MODEL-002");
	free(bad);
	free(gone);
	free(sc);
	free(sd);
	free(tr);
	free(va);
	free(d);
	free(root);
}

int
main(void)
{
	top = getenv("top_srcdir");
	if (top == NULL)
		top = ".";
	char tmp[] = "/tmp/lq-dif-XXXXXX";
	LQ_ASSERT(mkdtemp(tmp) != NULL);
	test_defaults();
	test_refusals();
	test_shared_configs();
	test_folders(tmp);
	test_ltx2_folder(tmp);
	char *cmd = xasprintf("rm -rf '%s'", tmp);
	(void)!system(cmd);
	free(cmd);
	return test_summary();
}
