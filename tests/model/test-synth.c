/*
 * test-synth.c — `model synth` output read back by the loader: every preset
 * opens as a diffusers folder, every component's weights are exactly its
 * expected table, the configs are the preset's, weights follow the
 * documented initialisation, and the same seed gives the same bytes.
 * The LTX-2 presets likewise, with the agreement of their components
 * (the audio as long as the video) and upstream's anti-aliasing filters.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/digest.h"
#include "core/util.h"
#include "model/diffusers.h"
#include "model/expected.h"
#include "model/safetensors.h"
#include "model/synth.h"
#include "../test.h"

static char tmp[] = "/tmp/lq-synth-XXXXXX";

static void
check_component(const char *dir, const struct tensor_table *t)
{
	struct st_set *s = NULL;
	struct lq_error err;
	error_clear(&err);
	CHECK_INT(st_set_open(dir, &s, &err), LQ_OK);
	if (s == NULL)
		return;
	CHECK_INT(expected_check(t, s, dir, NULL, &err), LQ_OK);
	if (err.status != LQ_OK)
		error_print(&err, stderr);
	for (size_t i = 0; i < st_set_count(s); i++)
		CHECK_INT(st_set_tensor(s, i)->dtype, ST_F32);
	st_set_close(s);
}

static void
test_preset(const char *preset)
{
	char *dir = xasprintf("%s/%s", tmp, preset);
	struct lq_error err;
	error_clear(&err);
	CHECK_INT(model_synth(dir, "ltxv", preset, 42, &err), LQ_OK);
	struct diffusers_model *m = NULL;
	CHECK_INT(diffusers_open(dir, NULL, &m, &err), LQ_OK);
	if (m == NULL) {
		error_print(&err, stderr);
		free(dir);
		return;
	}
	struct ltxv_transformer_config tc;
	struct ltxv_vae_config vc;
	struct t5_config cc;
	CHECK_INT(model_synth_preset("ltxv", preset, &tc, &vc, &cc), 0);
	CHECK_INT(m->transformer_config.num_layers, tc.num_layers);
	CHECK_INT(m->transformer_config.inner_dim, tc.inner_dim);
	/* the transformer's caption features are the T5's hidden states */
	CHECK_INT(m->transformer_config.caption_channels, m->text_encoder_config.d_model);
	CHECK_INT(m->vae_config.spatial_compression_ratio, vc.spatial_compression_ratio);
	CHECK_INT(m->vae_config.latent_channels, m->transformer_config.in_channels);
	CHECK_INT(m->text_encoder_config.vocab_size, 160);
	CHECK(m->tokenizer_files.spiece_model != NULL);
	CHECK_INT(m->tokenizer_files.model_max_length, 128);
	printf("%s: transformer D=%d x%d, VAE %d/%d, T5 d_model %d\n", preset,
	    m->transformer_config.inner_dim, m->transformer_config.num_layers,
	    m->vae_config.spatial_compression_ratio, m->vae_config.temporal_compression_ratio,
	    m->text_encoder_config.d_model);

	struct expected_report reps[EXPECTED_NCOMPONENTS];
	CHECK_INT(expected_check_model(m, reps, &err), LQ_OK);
	for (int c = 0; c < EXPECTED_NCOMPONENTS; c++) {
		CHECK_INT(reps[c].n_missing + reps[c].n_unexpected + reps[c].n_misshaped +
		    reps[c].n_bad_dtype, 0);
		expected_report_free(&reps[c]);
	}
	struct tensor_table t = {0};
	expected_ltxv_transformer(&m->transformer_config, &t);
	check_component(m->transformer.dir, &t);
	expected_ltxv_vae(&m->vae_config, &t);
	check_component(m->vae.dir, &t);
	expected_t5_encoder(&m->text_encoder_config, &t);
	check_component(m->text_encoder.dir, &t);
	tensor_table_free(&t);

	/* initialisation as documented */
	struct st_set *s;
	CHECK_INT(st_set_open(m->vae.dir, &s, &err), LQ_OK);
	float *sd = st_tensor_to_f32(st_set_find(s, "latents_std"));
	for (int i = 0; i < vc.latent_channels; i++)
		CHECK(sd[i] > 0.5f && sd[i] < 1.5f);
	free(sd);
	st_set_close(s);
	CHECK_INT(st_set_open(m->transformer.dir, &s, &err), LQ_OK);
	const struct st_tensor *w = st_set_find(s, "transformer_blocks.0.attn1.to_q.weight");
	float *v = st_tensor_to_f32(w);
	double sum2 = 0;
	int64_t n = st_tensor_numel(w);
	for (int64_t i = 0; i < n; i++)
		sum2 += (double)v[i] * v[i];
	double var = sum2 / (double)n, want = 1.0 / (double)w->shape[1];
	printf("  to_q variance %.4g (1/fan_in = %.4g)\n", var, want);
	CHECK(var > 0.7 * want && var < 1.3 * want);
	free(v);
	v = st_tensor_to_f32(st_set_find(s, "transformer_blocks.0.attn1.norm_q.weight"));
	double mean = 0;
	for (int i = 0; i < tc.inner_dim; i++)
		mean += v[i] / tc.inner_dim;
	CHECK_NEAR(mean, 1.0, 0.05);
	free(v);
	st_set_close(s);
	diffusers_free(m);

	/* same seed, same bytes; the weights depend on the seed */
	char *again = xasprintf("%s/%s-again", tmp, preset);
	char *other = xasprintf("%s/%s-other", tmp, preset);
	CHECK_INT(model_synth(again, "ltxv", preset, 42, &err), LQ_OK);
	CHECK_INT(model_synth(other, "ltxv", preset, 43, &err), LQ_OK);
	const char *files[] = {"transformer/diffusion_pytorch_model.safetensors",
	    "vae/diffusion_pytorch_model.safetensors", "text_encoder/model.safetensors"};
	for (size_t i = 0; i < LQ_ARRAY_LEN(files); i++) {
		char h1[DIGEST_HEX_SIZE], h2[DIGEST_HEX_SIZE], h3[DIGEST_HEX_SIZE];
		char *p1 = xasprintf("%s/%s", dir, files[i]);
		char *p2 = xasprintf("%s/%s", again, files[i]);
		char *p3 = xasprintf("%s/%s", other, files[i]);
		CHECK_INT(digest_file(p1, h1, &err), LQ_OK);
		CHECK_INT(digest_file(p2, h2, &err), LQ_OK);
		CHECK_INT(digest_file(p3, h3, &err), LQ_OK);
		CHECK_STR(h1, h2);
		CHECK(strcmp(h1, h3) != 0);
		free(p1);
		free(p2);
		free(p3);
	}
	free(again);
	free(other);
	free(dir);
}

/* The synthesised transformer re-written as two shards and an index is the
 * same logical tensor set: the expected table still matches exactly. */
static void
test_sharded(void)
{
	char *dir = xasprintf("%s/tiny", tmp);
	char *tdir = xasprintf("%s/transformer", dir);
	char *single = xasprintf("%s/diffusion_pytorch_model.safetensors", tdir);
	struct lq_error err;
	error_clear(&err);
	struct st_file *f;
	CHECK_INT(st_file_open(single, &f, &err), LQ_OK);
	if (f == NULL)
		return;
	struct st_writer *w[2] = {st_writer_new(), st_writer_new()};
	const char *shard[2] = {"diffusion_pytorch_model-00001-of-00002.safetensors",
	    "diffusion_pytorch_model-00002-of-00002.safetensors"};
	struct strbuf idx = {0};
	strbuf_printf(&idx, "{\"metadata\": {\"total_size\": 0}, \"weight_map\": {");
	for (size_t i = 0; i < st_file_count(f); i++) {
		const struct st_tensor *t = st_file_tensor(f, i);
		int k = strncmp(t->name, "transformer_blocks.1.", 21) == 0;
		st_writer_add(w[k], t->name, t->dtype, t->ndim, t->shape, t->data);
		strbuf_printf(&idx, "%s\"%s\": \"%s\"", i ? ", " : "", t->name, shard[k]);
	}
	strbuf_printf(&idx, "}}");
	size_t n = st_file_count(f);
	st_file_close(f);
	for (int k = 0; k < 2; k++) {
		char *p = xasprintf("%s/%s", tdir, shard[k]);
		CHECK_INT(st_writer_write(w[k], p, &err), LQ_OK);
		st_writer_free(w[k]);
		free(p);
	}
	char *ip = xasprintf("%s/diffusion_pytorch_model.safetensors.index.json", tdir);
	FILE *fp = fopen(ip, "w");
	fputs(idx.buf, fp);
	fclose(fp);
	unlink(single);
	struct diffusers_model *m = NULL;
	CHECK_INT(diffusers_open(dir, NULL, &m, &err), LQ_OK);
	if (m) {
		struct tensor_table t = {0};
		expected_ltxv_transformer(&m->transformer_config, &t);
		check_component(m->transformer.dir, &t);
		struct st_set *s;
		CHECK_INT(st_set_open(m->transformer.dir, &s, &err), LQ_OK);
		CHECK_INT(st_set_file_count(s), 2);
		CHECK_INT(st_set_count(s), n);
		st_set_close(s);
		tensor_table_free(&t);
		diffusers_free(m);
	}
	free(idx.buf);
	free(ip);
	free(single);
	free(tdir);
	free(dir);
}

/* The float values of tensor `name` of a safetensors file (caller frees),
 * NULL when absent; *n its count. */
static float *
tensor_values(const char *path, const char *name, size_t *n)
{
	struct st_file *f = NULL;
	struct lq_error err;
	float *v = NULL;
	*n = 0;
	CHECK_INT(st_file_open(path, &f, &err), LQ_OK);
	if (f == NULL)
		return NULL;
	const struct st_tensor *t = st_file_find(f, name);
	CHECK(t != NULL);
	if (t != NULL) {
		v = st_tensor_to_f32(t);
		*n = (size_t)st_tensor_numel(t);
	}
	st_file_close(f);
	return v;
}

/* Byte equality of two files. */
static int
same_file(const char *a, const char *b)
{
	char *cmd = xasprintf("cmp -s '%s' '%s'", a, b);
	int r = system(cmd);
	free(cmd);
	return r == 0;
}

/*
 * An LTX-2 preset: it opens as an LTX2Pipeline folder, each component's
 * weights are exactly its expected table, its configs agree (the checks
 * preflight makes of a folder: latent channels, packed audio features,
 * caption channels, the transformer's RoPE scale factors the VAE's
 * compression) and the vocoder gives 10 ms of waveform per 10 ms mel frame.
 */
static void
test_ltx2_preset(const char *preset, int bwe)
{
	const char *top = getenv("top_srcdir") ? getenv("top_srcdir") : ".";
	char *dir = xasprintf("%s/ltx2-%s", tmp, preset);
	struct lq_error err;
	error_clear(&err);
	CHECK_INT(model_synth(dir, "ltx2", preset, 42, &err), LQ_OK);
	struct diffusers_ltx2_model *m = NULL;
	CHECK_INT(diffusers_open_ltx2(dir, NULL, &m, &err), LQ_OK);
	if (m == NULL) {
		error_print(&err, stderr);
		free(dir);
		return;
	}
	struct ltx2_transformer_config tc;
	struct ltxv_vae_config vc;
	cJSON *j = NULL;
	struct tensor_table t = {0};
	CHECK_INT(diffusers_load_json(m->transformer.config_path, &j, &err), LQ_OK);
	CHECK_INT(diffusers_parse_ltx2_transformer(j, "t", &tc, &err), LQ_OK);
	cJSON_Delete(j);
	CHECK_INT(diffusers_load_json(m->vae.config_path, &j, &err), LQ_OK);
	CHECK_INT(diffusers_parse_vae(j, "v", &vc, &err), LQ_OK);
	cJSON_Delete(j);
	expected_ltx2_transformer(&tc, &t);
	check_component(m->transformer.dir, &t);
	expected_ltxv_vae(&vc, &t);
	check_component(m->vae.dir, &t);
	expected_ltx2_audio_vae(&m->audio_vae_config, &t);
	check_component(m->audio_vae.dir, &t);
	expected_ltx2_connectors(&m->connectors_config, &t);
	check_component(m->connectors.dir, &t);
	CHECK_INT(m->vocoder_bwe, bwe);
	if (bwe)
		expected_ltx2_vocoder_bwe(&m->vocoder_bwe_config, &t);
	else
		expected_ltx2_vocoder(&m->vocoder_config, &t);
	check_component(m->vocoder.dir, &t);
	tensor_table_free(&t);
	const struct ltx2_audio_vae_config *ac = &m->audio_vae_config;
	CHECK_INT(vc.latent_channels, tc.in_channels);
	CHECK_INT(ac->latent_channels * ac->mel_bins / 4, tc.audio_in_channels);
	CHECK_INT(ac->base_channels, tc.audio_in_channels);
	CHECK_INT(m->connectors_config.caption_channels, tc.caption_channels);
	CHECK_INT(vc.spatial_compression_ratio, tc.vae_scale_factors[1]);
	CHECK_INT(vc.temporal_compression_ratio, tc.vae_scale_factors[0]);
	CHECK_INT(ac->sample_rate, tc.audio_sampling_rate);
	CHECK_INT(ac->mel_hop_length, tc.audio_hop_length);
	/* samples per mel frame at the output rate = the mel frame's length */
	int hop = m->vocoder_config.hop;
	if (bwe)
		hop *= m->vocoder_bwe_config.output_sampling_rate /
		    m->vocoder_bwe_config.input_sampling_rate;
	CHECK_INT((int64_t)hop * ac->sample_rate,
	    (int64_t)ac->mel_hop_length * m->audio_sample_rate);
	CHECK_INT(m->audio_channels, 2);
	if (bwe) {
		/* upstream's Kaiser-sinc filters: the goldens' (same ratio 2
		 * and 12 taps) */
		char *mine = xasprintf("%s/diffusion_pytorch_model.safetensors",
		    m->vocoder.dir);
		char *gold = xasprintf("%s/tests/data/ltx2/vocoder/voc_bwe/model/"
		    "vocoder/diffusion_pytorch_model.safetensors", top);
		const char *names[] = {"vocoder.act_out.upsample.filter",
		    "vocoder.act_out.downsample.filter",
		    "bwe_generator.resnets.0.acts1.0.upsample.filter"};
		for (size_t i = 0; i < LQ_ARRAY_LEN(names); i++) {
			size_t na, nb;
			float *a = tensor_values(mine, names[i], &na);
			float *b = tensor_values(gold, names[i], &nb);
			CHECK_INT(na, nb);
			double d = 0;
			for (size_t k = 0; a && b && k < na && k < nb; k++)
				d = fabs(a[k] - b[k]) > d ? fabs(a[k] - b[k]) : d;
			if (d > 1e-6)
				fprintf(stderr, "%s: %g from upstream's\n", names[i], d);
			CHECK(d <= 1e-6);
			free(a);
			free(b);
		}
		free(mine);
		free(gold);
	}
	/* the same seed, the same bytes; another seed, other weights */
	char *again = xasprintf("%s-again", dir), *other = xasprintf("%s-other", dir);
	CHECK_INT(model_synth(again, "ltx2", preset, 42, &err), LQ_OK);
	CHECK_INT(model_synth(other, "ltx2", preset, 43, &err), LQ_OK);
	const char *comps[] = {"transformer", "vocoder", "audio_vae"};
	for (size_t i = 0; i < LQ_ARRAY_LEN(comps); i++) {
		char *a = xasprintf("%s/%s/diffusion_pytorch_model.safetensors", dir,
		    comps[i]);
		char *b = xasprintf("%s/%s/diffusion_pytorch_model.safetensors",
		    again, comps[i]);
		char *c = xasprintf("%s/%s/diffusion_pytorch_model.safetensors",
		    other, comps[i]);
		CHECK(same_file(a, b));
		CHECK(!same_file(a, c));
		free(a);
		free(b);
		free(c);
	}
	free(again);
	free(other);
	diffusers_ltx2_free(m);
	free(dir);
}

/* --set on an LTX-2 preset: applied, re-checked by upstream's rules. */
static void
test_ltx2_sets(void)
{
	struct lq_error err;
	char *dir = xasprintf("%s/ltx2-set", tmp);
	const char *ok[] = {"transformer.num_layers=1"};
	struct model_synth_opts o = {.dtype = ST_F32, .sets = ok, .nsets = 1};
	error_clear(&err);
	CHECK_INT(model_synth_ex(dir, "ltx2", "tiny", 1, &o, &err), LQ_OK);
	char *cfg = xasprintf("%s/transformer/config.json", dir);
	cJSON *j = NULL;
	CHECK_INT(diffusers_load_json(cfg, &j, &err), LQ_OK);
	CHECK_INT(cJSON_GetObjectItem(j, "num_layers")->valueint, 1);
	cJSON_Delete(j);
	free(cfg);
	const char *nokey[] = {"vocoder.no_such_key=1"};
	o.sets = nokey;
	error_clear(&err);
	CHECK_INT(model_synth_ex(dir, "ltx2", "tiny", 1, &o, &err), LQ_FAILED);
	CHECK_STR(err.code, "LQ-MODEL-032");
	const char *bad[] = {"vocoder.act_fn=\"relu\""};
	o.sets = bad;
	error_clear(&err);
	CHECK_INT(model_synth_ex(dir, "ltx2", "tiny", 1, &o, &err), LQ_FAILED);
	CHECK_STR(err.code, "LQ-MODEL-003");
	error_clear(&err);
	CHECK_INT(model_synth(dir, "ltx2", "huge", 1, &err), LQ_FAILED);
	CHECK_STR(err.code, "LQ-MODEL-030");
	free(dir);
}

/*
 * A Wan model: a WanPipeline folder diffusers_open_wan takes, whose
 * configs parse with upstream's rules (z_dim, text_dim as the preset
 * says), whose weights are exactly the Wan tensor tables, and whose demo
 * embeddings have the transformer's text_dim.
 */
static void
test_wan(const char *preset, int z_dim, int text_dim)
{
	struct lq_error err;
	char *dir = xasprintf("%s/wan-%s", tmp, preset);
	error_clear(&err);
	CHECK_INT(model_synth(dir, "wan", preset, 3, &err), LQ_OK);
	struct diffusers_wan_model *m = NULL;
	CHECK_INT(diffusers_open_wan(dir, NULL, &m, &err), LQ_OK);
	if (m == NULL) {
		error_print(&err, stderr);
		free(dir);
		return;
	}
	cJSON *j = NULL;
	struct wan_transformer_config tc;
	struct wan_vae_config vc;
	LQ_ASSERT(diffusers_load_json(m->transformer.config_path, &j, &err) ==
	    LQ_OK);
	CHECK_INT(diffusers_parse_wan_transformer(j, "t", &tc, &err), LQ_OK);
	cJSON_Delete(j);
	LQ_ASSERT(diffusers_load_json(m->vae.config_path, &j, &err) == LQ_OK);
	CHECK_INT(diffusers_parse_wan_vae(j, "v", &vc, &err), LQ_OK);
	cJSON_Delete(j);
	CHECK_INT(vc.z_dim, z_dim);
	CHECK_INT(vc.n_latents, z_dim);
	CHECK_INT(tc.in_channels, z_dim);
	CHECK_INT(tc.text_dim, text_dim);
	struct tensor_table t = {0};
	for (int c = 0; c < 2; c++) {
		struct st_set *set = NULL;
		struct expected_report r;
		if (c == 0)
			expected_wan_transformer(&tc, &t);
		else
			expected_wan_vae(&vc, &t);
		CHECK_INT(st_set_open(c == 0 ? m->transformer.dir : m->vae.dir,
		    &set, &err), LQ_OK);
		CHECK_INT(expected_check(&t, set, "wan", &r, &err), LQ_OK);
		CHECK_INT(st_set_count(set), t.n);
		expected_report_free(&r);
		st_set_close(set);
	}
	tensor_table_free(&t);
	char *ep = xasprintf("%s/demo_prompt_embeds.safetensors", dir);
	struct st_file *f = NULL;
	CHECK_INT(st_file_open(ep, &f, &err), LQ_OK);
	const struct st_tensor *pe = f ? st_file_find(f, "prompt_embeds") : NULL;
	CHECK(pe != NULL && pe->ndim == 3 && pe->shape[2] == text_dim);
	CHECK(f != NULL && st_file_find(f, "negative_prompt_embeds") != NULL);
	st_file_close(f);
	printf("wan %s: transformer %d layers, z_dim %d, text_dim %d\n",
	    preset, tc.num_layers, z_dim, text_dim);
	diffusers_wan_free(m);
	free(ep);
	free(dir);
}

int
main(void)
{
	LQ_ASSERT(mkdtemp(tmp) != NULL);
	test_preset("tiny");
	test_preset("small");
	test_sharded();
	test_ltx2_preset("tiny", 0);
	test_ltx2_preset("demo", 0);
	test_ltx2_preset("demo-bwe", 1);
	test_ltx2_sets();
	struct lq_error err;
	error_clear(&err);
	char *bad = xasprintf("%s/bad", tmp);
	CHECK_INT(model_synth(bad, "hunyuan", "tiny", 1, &err), LQ_FAILED);
	CHECK_STR(err.code, "LQ-MODEL-030");
	error_clear(&err);
	CHECK_INT(model_synth(bad, "wan", "huge", 1, &err), LQ_FAILED);
	CHECK_STR(err.code, "LQ-MODEL-030");
	test_wan("tiny", 4, 32);
	test_wan("demo", 16, 64);
	/* tiny again into a non-empty folder */
	char *tiny = xasprintf("%s/tiny", tmp);
	error_clear(&err);
	CHECK_INT(model_synth(tiny, "ltxv", "tiny", 1, &err), LQ_FAILED);
	CHECK_STR(err.code, "LQ-MODEL-031");
	free(bad);
	free(tiny);
	char *cmd = xasprintf("rm -rf '%s'", tmp);
	(void)!system(cmd);
	free(cmd);
	return test_summary();
}
