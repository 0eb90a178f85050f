/*
 * gen-models.c — writes the small model folders, LoRAs and prompt_embeds
 * files the preflight tests and benchmark use (see gen-models.h).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "core/json.h"
#include "core/util.h"
#include "media/media.h"
#include "model/diffusers.h"
#include "model/expected.h"
#include "model/safetensors.h"
#include "preflight/gen-models.h"

static char tmp[1024];
static const char *srcdir;

struct gen {
	int latent;		/* VAE latent channels (8) */
	int tin;		/* transformer in/out channels (8) */
	int caption;		/* transformer caption_channels (16) */
	int te_dmodel;		/* T5 d_model (16); 0: no text encoder */
	int truncate;		/* cut the transformer weights in half */
	int no_vae_weights;
	int bad_config;		/* num_attention_heads -2 */
	int missing, extra, misshape;	/* transformer tensor mutations */
	int upsampler;		/* 1 matching, 2 mis-configured, 3 temporal */
};

static void
write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	LQ_ASSERT(f != NULL);
	fputs(text, f);
	fclose(f);
}

static void
write_json(const char *path, cJSON *j)
{
	char *s = json_pretty(j);
	write_text(path, s);
	free(s);
	cJSON_Delete(j);
}

static void
write_table(const char *path, const struct tensor_table *t, int drop, int extra,
    int misshape)
{
	struct st_writer *w = st_writer_new();
	static float zeros[1 << 16];
	int done_drop = 0, done_shape = 0;
	for (size_t i = 0; i < t->n; i++) {
		const struct tensor_spec *s = &t->specs[i];
		if (s->flags & TENSOR_SPEC_OPTIONAL)
			continue;
		if (drop && !done_drop) {
			done_drop = 1;
			continue;
		}
		int64_t shape[ST_MAX_DIMS];
		memcpy(shape, s->shape, sizeof(shape));
		if (misshape && !done_shape) {
			shape[0]++;
			done_shape = 1;
		}
		int64_t n = 1;
		for (int d = 0; d < s->ndim; d++)
			n *= shape[d];
		LQ_ASSERT(n <= (int64_t)LQ_ARRAY_LEN(zeros));
		st_writer_add(w, s->name, ST_F32, s->ndim, shape, zeros);
	}
	if (extra)
		st_writer_add(w, "extra_head.weight", ST_F32, 1, (int64_t[]){4}, zeros);
	struct lq_error err;
	error_clear(&err);
	LQ_ASSERT(st_writer_write(w, path, &err) == LQ_OK);
	st_writer_free(w);
}

static void
mkdirs(const char *path)
{
	char *cmd = xasprintf("mkdir -p '%s'", path);
	LQ_ASSERT(system(cmd) == 0);
	free(cmd);
}

static void
gen_model(const char *name, const struct gen *g)
{
	char *root = xasprintf("%s/models/%s", tmp, name), *p;
	struct lq_error err;
	error_clear(&err);
	struct tensor_table t = {0};
	cJSON *index = cJSON_Parse("{\"_class_name\": \"LTXPipeline\", "
	    "\"_diffusers_version\": \"0.40.0.dev0\", "
	    "\"scheduler\": [\"diffusers\", \"FlowMatchEulerDiscreteScheduler\"], "
	    "\"transformer\": [\"diffusers\", \"LTXVideoTransformer3DModel\"], "
	    "\"vae\": [\"diffusers\", \"AutoencoderKLLTXVideo\"]}");
	if (g->te_dmodel) {
		cJSON_AddItemToObject(index, "text_encoder",
		    cJSON_Parse("[\"transformers\", \"T5EncoderModel\"]"));
		cJSON_AddItemToObject(index, "tokenizer",
		    cJSON_Parse("[\"transformers\", \"T5Tokenizer\"]"));
	} else {
		cJSON_AddItemToObject(index, "text_encoder", cJSON_Parse("[null, null]"));
		cJSON_AddItemToObject(index, "tokenizer", cJSON_Parse("[null, null]"));
	}
	if (g->upsampler)
		cJSON_AddItemToObject(index, "latent_upsampler",
		    cJSON_Parse("[\"diffusers\", \"LTXLatentUpsamplerModel\"]"));
	mkdirs(root);
	p = xasprintf("%s/model_index.json", root);
	write_json(p, index);
	free(p);

	/* transformer */
	char *cfg = xasprintf("{\"_class_name\": \"LTXVideoTransformer3DModel\", "
	    "\"in_channels\": %d, \"out_channels\": %d, \"patch_size\": 1, "
	    "\"patch_size_t\": 1, \"num_attention_heads\": %d, "
	    "\"attention_head_dim\": 4, \"cross_attention_dim\": 16, "
	    "\"num_layers\": 1, \"caption_channels\": %d, "
	    "\"activation_fn\": \"gelu-approximate\", "
	    "\"qk_norm\": \"rms_norm_across_heads\", "
	    "\"norm_elementwise_affine\": false, \"norm_eps\": 1e-06, "
	    "\"attention_bias\": true, \"attention_out_bias\": true}",
	    g->tin, g->tin, g->bad_config ? -2 : 4, g->caption);
	p = xasprintf("%s/transformer", root);
	mkdirs(p);
	free(p);
	p = xasprintf("%s/transformer/config.json", root);
	write_text(p, cfg);
	free(p);
	cJSON *j = cJSON_Parse(cfg);
	struct ltxv_transformer_config tc;
	if (diffusers_parse_transformer(j, "t", &tc, &err) == LQ_OK) {
		expected_ltxv_transformer(&tc, &t);
		p = xasprintf("%s/transformer/diffusion_pytorch_model.safetensors", root);
		write_table(p, &t, g->missing, g->extra, g->misshape);
		if (g->truncate) {
			struct stat sb;
			LQ_ASSERT(stat(p, &sb) == 0);
			LQ_ASSERT(truncate(p, sb.st_size / 2) == 0);
		}
		free(p);
	} else {
		/* the bad config still has weights beside it */
		p = xasprintf("%s/transformer/diffusion_pytorch_model.safetensors", root);
		write_text(p, "");
		free(p);
	}
	cJSON_Delete(j);
	free(cfg);

	/* VAE: patch 4 and three spatio-temporal stages = 32 spatial, 8 temporal */
	cfg = xasprintf("{\"_class_name\": \"AutoencoderKLLTXVideo\", "
	    "\"in_channels\": 3, \"out_channels\": 3, \"latent_channels\": %d, "
	    "\"block_out_channels\": [8, 8, 8], "
	    "\"decoder_block_out_channels\": [8, 8, 8], "
	    "\"layers_per_block\": [1, 1, 1, 1], "
	    "\"decoder_layers_per_block\": [1, 1, 1, 1], "
	    "\"spatio_temporal_scaling\": [true, true, true], "
	    "\"decoder_spatio_temporal_scaling\": [true, true, true], "
	    "\"decoder_inject_noise\": [false, false, false, false], "
	    "\"downsample_type\": [\"conv\", \"conv\", \"conv\"], "
	    "\"down_block_types\": [\"LTXVideoDownBlock3D\", "
	    "\"LTXVideoDownBlock3D\", \"LTXVideoDownBlock3D\"], "
	    "\"upsample_residual\": [false, false, false], "
	    "\"upsample_factor\": [1, 1, 1], \"timestep_conditioning\": false, "
	    "\"patch_size\": 4, \"patch_size_t\": 1, \"resnet_norm_eps\": 1e-06, "
	    "\"scaling_factor\": 1.0, \"encoder_causal\": true, "
	    "\"decoder_causal\": false}", g->latent);
	p = xasprintf("%s/vae", root);
	mkdirs(p);
	free(p);
	p = xasprintf("%s/vae/config.json", root);
	write_text(p, cfg);
	free(p);
	j = cJSON_Parse(cfg);
	struct ltxv_vae_config vc;
	error_clear(&err);
	LQ_ASSERT(diffusers_parse_vae(j, "vae", &vc, &err) == LQ_OK);
	if (err.message[0])
		fprintf(stderr, "vae config: %s\n", err.message);
	LQ_ASSERT(vc.spatial_compression_ratio == 32);
	LQ_ASSERT(vc.temporal_compression_ratio == 8);
	cJSON_Delete(j);
	free(cfg);
	if (!g->no_vae_weights) {
		expected_ltxv_vae(&vc, &t);
		p = xasprintf("%s/vae/diffusion_pytorch_model.safetensors", root);
		write_table(p, &t, 0, 0, 0);
		free(p);
	}

	/* T5 and its tokenizer (the demo's) */
	if (g->te_dmodel) {
		cfg = xasprintf("{\"architectures\": [\"T5EncoderModel\"], "
		    "\"model_type\": \"t5\", \"d_model\": %d, \"d_kv\": 4, "
		    "\"d_ff\": 16, \"num_layers\": 1, \"num_heads\": 2, "
		    "\"vocab_size\": 100, \"feed_forward_proj\": \"gated-gelu\", "
		    "\"relative_attention_num_buckets\": 8, "
		    "\"relative_attention_max_distance\": 16}", g->te_dmodel);
		p = xasprintf("%s/text_encoder", root);
		mkdirs(p);
		free(p);
		p = xasprintf("%s/text_encoder/config.json", root);
		write_text(p, cfg);
		free(p);
		j = cJSON_Parse(cfg);
		struct t5_config t5;
		LQ_ASSERT(diffusers_parse_t5(j, "t5", &t5, &err) == LQ_OK);
		expected_t5_encoder(&t5, &t);
		p = xasprintf("%s/text_encoder/model.safetensors", root);
		write_table(p, &t, 0, 0, 0);
		free(p);
		cJSON_Delete(j);
		free(cfg);
		char *cmd = xasprintf("cp -r '%s/tests/data/text/ltxv-demo/tokenizer' "
		    "'%s/tokenizer' && chmod -R u+w '%s/tokenizer'", srcdir, root, root);
		LQ_ASSERT(system(cmd) == 0);
		free(cmd);
	}

	/* scheduler: the demo's (0.9.0-style dynamic shifting, shift_terminal) */
	p = xasprintf("%s/scheduler", root);
	mkdirs(p);
	free(p);
	p = xasprintf("%s/scheduler/scheduler_config.json", root);
	write_text(p, "{\"_class_name\": \"FlowMatchEulerDiscreteScheduler\", "
	    "\"base_image_seq_len\": 1024, \"base_shift\": 0.95, "
	    "\"max_image_seq_len\": 4096, \"max_shift\": 2.05, "
	    "\"num_train_timesteps\": 1000, \"shift\": 1.0, "
	    "\"shift_terminal\": 0.1, \"time_shift_type\": \"exponential\", "
	    "\"use_dynamic_shifting\": true}");
	free(p);

	if (g->upsampler) {
		p = xasprintf("%s/latent_upsampler", root);
		mkdirs(p);
		free(p);
		p = xasprintf("%s/latent_upsampler/config.json", root);
		/* mid_channels a multiple of GroupNorm's 32 groups;
		 * 3: a temporal upsampler (second_stage refuses it) */
		cfg = xasprintf("{\"_class_name\": \"LTXLatentUpsamplerModel\", "
		    "\"in_channels\": %d, \"mid_channels\": 32, \"dims\": 3%s}",
		    g->latent, g->upsampler == 3 ? ", \"temporal_upsample\": true"
		    : "");
		write_text(p, cfg);
		free(cfg);
		free(p);
		struct st_writer *w = st_writer_new();
		static float z[32 * 16 * 27];
		int64_t mid = g->upsampler == 2 ? 24 : 32;
		st_writer_add(w, "initial_conv.weight", ST_F32, 5,
		    (int64_t[]){mid, g->latent, 3, 3, 3}, z);
		st_writer_add(w, "final_conv.weight", ST_F32, 5,
		    (int64_t[]){g->latent, mid, 3, 3, 3}, z);
		p = xasprintf("%s/latent_upsampler/diffusion_pytorch_model.safetensors", root);
		LQ_ASSERT(st_writer_write(w, p, &err) == LQ_OK);
		st_writer_free(w);
		free(p);
	}
	tensor_table_free(&t);
	free(root);
}

/* LoRAs on transformer_blocks.0.attn1.to_q (inner 16 -> 16), good and broken. */
enum lora_kind { LORA_GOOD, LORA_UNPAIRED, LORA_RANK, LORA_BADKEY, LORA_NOMATCH,
	LORA_SHAPE, LORA_ALPHA };

static void
gen_lora(const char *name, enum lora_kind k)
{
	static float z[64 * 64];
	const char *pa = "transformer.transformer_blocks.0.attn1.to_q.lora_A.weight";
	const char *pb = "transformer.transformer_blocks.0.attn1.to_q.lora_B.weight";
	struct st_writer *w = st_writer_new();
	st_writer_add(w, pa, ST_F32, 2, (int64_t[]){2, k == LORA_SHAPE ? 17 : 16}, z);
	if (k != LORA_UNPAIRED)
		st_writer_add(w, pb, ST_F32, 2, (int64_t[]){16, k == LORA_RANK ? 3 : 2}, z);
	if (k == LORA_BADKEY)
		st_writer_add(w, "transformer.transformer_blocks.0.attn1.to_q.weight",
		    ST_F32, 2, (int64_t[]){16, 16}, z);
	if (k == LORA_NOMATCH) {
		st_writer_add(w, "transformer.transformer_blocks.0.attn1.to_qkv.lora_A.weight",
		    ST_F32, 2, (int64_t[]){2, 16}, z);
		st_writer_add(w, "transformer.transformer_blocks.0.attn1.to_qkv.lora_B.weight",
		    ST_F32, 2, (int64_t[]){16, 2}, z);
	}
	if (k == LORA_ALPHA)
		st_writer_add(w, "transformer.transformer_blocks.0.attn1.to_q.alpha",
		    ST_F32, 1, (int64_t[]){2}, z);
	char *p = xasprintf("%s/%s", tmp, name);
	struct lq_error err;
	error_clear(&err);
	LQ_ASSERT(st_writer_write(w, p, &err) == LQ_OK);
	st_writer_free(w);
	free(p);
}

static void
gen_embeds(const char *name, int C, int negative)
{
	static float z[8 * 64];
	struct st_writer *w = st_writer_new();
	st_writer_add(w, "prompt_embeds", ST_F32, 3, (int64_t[]){1, 8, C}, z);
	st_writer_add(w, "prompt_attention_mask", ST_F32, 2, (int64_t[]){1, 8}, z);
	if (negative) {
		st_writer_add(w, "negative_prompt_embeds", ST_F32, 3,
		    (int64_t[]){1, 8, C}, z);
		st_writer_add(w, "negative_prompt_attention_mask", ST_F32, 2,
		    (int64_t[]){1, 8}, z);
	}
	char *p = xasprintf("%s/%s", tmp, name);
	struct lq_error err;
	error_clear(&err);
	LQ_ASSERT(st_writer_write(w, p, &err) == LQ_OK);
	st_writer_free(w);
	free(p);
}

/*
 * A scheduler folder (for `scheduler:` overrides): the demo's config with
 * `extra` keys, each one a config the sampler refuses.
 */
static void
gen_scheduler(const char *name, const char *extra)
{
	char *p = xasprintf("%s/%s", tmp, name);
	mkdirs(p);
	free(p);
	p = xasprintf("%s/%s/scheduler_config.json", tmp, name);
	char *text = xasprintf("{\"_class_name\": "
	    "\"FlowMatchEulerDiscreteScheduler\", "
	    "\"base_image_seq_len\": 1024, \"base_shift\": 0.95, "
	    "\"max_image_seq_len\": 4096, \"max_shift\": 2.05, "
	    "\"shift\": 1.0, \"shift_terminal\": 0.1, "
	    "\"time_shift_type\": \"exponential\", "
	    "\"use_dynamic_shifting\": true, %s}", extra);
	write_text(p, text);
	free(text);
	free(p);
}

/* A scheduler folder without dynamic shifting (as converted for LTX-Video
 * 0.9.5 / 0.9.7): what LTXConditionPipeline jobs need. */
static void
gen_scheduler_static(const char *name)
{
	char *p = xasprintf("%s/%s", tmp, name);
	mkdirs(p);
	free(p);
	p = xasprintf("%s/%s/scheduler_config.json", tmp, name);
	write_text(p, "{\"_class_name\": \"FlowMatchEulerDiscreteScheduler\", "
	    "\"use_dynamic_shifting\": false}");
	free(p);
}

/* A symlink at tmp/`name` to the absolute path of `target`. */
static void
link_abs(const char *target, const char *name)
{
	char *abs = realpath(target, NULL);
	char *p = xasprintf("%s/%s", tmp, name);
	LQ_ASSERT(abs != NULL && symlink(abs, p) == 0);
	free(abs);
	free(p);
}

/*
 * LTX-2: models/ltx2, the pipeline golden's LTX2Pipeline folder
 * (tests/data/ltx2/pipeline/pipe/model), its embeddings as
 * ltx2-embeds.safetensors, models/ltx2-voc22k, the same with a
 * vocoder at 22000 Hz (a rate AAC does not have), and models/ltx2-bwe16,
 * the same with the goldens' LTX2VocoderWithBWE at hop_length 16 (its
 * stage 1 gives 8 samples a mel frame; bwe_upsample_factors [4, 8] to
 * keep the config upstream's).
 */
static void
gen_ltx2(void)
{
	char *m = xasprintf("%s/tests/data/ltx2/pipeline/pipe/model", srcdir);
	char *e = xasprintf("%s/tests/data/ltx2/pipeline/pipe/inputs.safetensors",
	    srcdir);
	char *v = xasprintf("%s/models/ltx2-voc22k/vocoder", tmp);
	mkdirs(v);
	link_abs(m, "models/ltx2");
	link_abs(e, "ltx2-embeds.safetensors");
	static const char *const parts[] = { "model_index.json", "transformer",
	    "vae", "audio_vae", "connectors", "scheduler" };
	for (size_t i = 0; i < LQ_ARRAY_LEN(parts); i++) {
		char *from = xasprintf("%s/%s", m, parts[i]);
		char *to = xasprintf("models/ltx2-voc22k/%s", parts[i]);
		link_abs(from, to);
		free(from);
		free(to);
	}
	char *cfg = xasprintf("%s/vocoder/config.json", m);
	char *text = util_read_file(cfg, NULL);
	LQ_ASSERT(text != NULL);
	const char *key = "\"output_sampling_rate\": ";
	char *r = strstr(text, key);
	LQ_ASSERT(r != NULL && strncmp(r + strlen(key), "24000", 5) == 0);
	memcpy(r + strlen(key), "22000", 5);
	char *out = xasprintf("%s/config.json", v);
	write_text(out, text);
	char *w = xasprintf("%s/vocoder/diffusion_pytorch_model.safetensors", m);
	link_abs(w, "models/ltx2-voc22k/vocoder/"
	    "diffusion_pytorch_model.safetensors");
	free(w);
	free(out);
	free(text);
	free(cfg);
	free(v);
	/* the BWE vocoder with a hop its stage 1 does not divide */
	v = xasprintf("%s/models/ltx2-bwe16/vocoder", tmp);
	mkdirs(v);
	for (size_t i = 0; i < LQ_ARRAY_LEN(parts); i++) {
		char *from = xasprintf("%s/%s", m, parts[i]);
		char *to = xasprintf("models/ltx2-bwe16/%s", parts[i]);
		link_abs(from, to);
		free(from);
		free(to);
	}
	char *bw = xasprintf("%s/tests/data/ltx2/vocoder/voc_bwe/model/vocoder",
	    srcdir);
	cfg = xasprintf("%s/config.json", bw);
	text = util_read_file(cfg, NULL);
	LQ_ASSERT(text != NULL);
	const char *edits[][2] = {
		{"  \"hop_length\": 8,", " \"hop_length\": 16,"},
		{"\"bwe_upsample_factors\": [\n    4,\n    4\n  ]",
		    "\"bwe_upsample_factors\": [\n    4,\n    8\n  ]"},
	};
	for (size_t i = 0; i < LQ_ARRAY_LEN(edits); i++) {
		r = strstr(text, edits[i][0]);
		LQ_ASSERT(r != NULL && strlen(edits[i][1]) <= strlen(edits[i][0]));
		/* in place: the replacement is no longer */
		size_t n = strlen(edits[i][0]), k = strlen(edits[i][1]);
		memcpy(r, edits[i][1], k);
		memset(r + k, ' ', n - k);
	}
	out = xasprintf("%s/config.json", v);
	write_text(out, text);
	w = xasprintf("%s/diffusion_pytorch_model.safetensors", bw);
	link_abs(w, "models/ltx2-bwe16/vocoder/"
	    "diffusion_pytorch_model.safetensors");
	free(w);
	free(out);
	free(text);
	free(cfg);
	free(bw);
	free(v);
	free(e);
	free(m);
}

/*
 * Wan: models/wan, the pipeline golden's WanPipeline folder
 * (tests/data/wan/pipeline/model), and wan-embeds.safetensors with
 * prompt_embeds and negative_prompt_embeds of its shape [1, 8, 32].
 */
static void
gen_wan(void)
{
	char *m = xasprintf("%s/tests/data/wan/pipeline/model", srcdir);
	link_abs(m, "models/wan");
	struct st_writer *w = st_writer_new();
	float z[8 * 32] = {0};
	int64_t shape[3] = {1, 8, 32};
	st_writer_add(w, "prompt_embeds", ST_F32, 3, shape, z);
	st_writer_add(w, "negative_prompt_embeds", ST_F32, 3, shape, z);
	char *e = xasprintf("%s/wan-embeds.safetensors", tmp);
	struct lq_error err;
	LQ_ASSERT(st_writer_write(w, e, &err) == LQ_OK);
	st_writer_free(w);
	free(e);
	free(m);
}

void
pfgen_generate(const char *dir, const char *top_srcdir)
{
	snprintf(tmp, sizeof(tmp), "%s", dir);
	srcdir = top_srcdir;
	const struct gen good = { .latent = 8, .tin = 8, .caption = 16, .te_dmodel = 16 };
	struct gen g;
	gen_model("good", &good);
	g = good; g.te_dmodel = 0; gen_model("no-te", &g);
	g = good; g.bad_config = 1; gen_model("bad-config", &g);
	g = good; g.no_vae_weights = 1; gen_model("no-vae-weights", &g);
	g = good; g.truncate = 1; gen_model("truncated", &g);
	g = good; g.missing = 1; gen_model("missing-tensor", &g);
	g = good; g.misshape = 1; gen_model("misshaped", &g);
	g = good; g.extra = 1; gen_model("extra-tensor", &g);
	g = good; g.latent = 64; g.tin = 128; gen_model("vae64", &g);
	g = good; g.te_dmodel = 32; gen_model("te-mismatch", &g);
	g = good; g.upsampler = 1; gen_model("upsampler-good", &g);
	g = good; g.upsampler = 2; gen_model("upsampler-bad", &g);
	g = good; g.upsampler = 3; gen_model("upsampler-temporal", &g);
	gen_ltx2();
	gen_wan();
	gen_scheduler_static("sched-static");
	gen_scheduler("sched-karras", "\"use_karras_sigmas\": true");
	gen_scheduler("sched-exponential", "\"use_exponential_sigmas\": true");
	gen_scheduler("sched-beta", "\"use_beta_sigmas\": true");
	gen_scheduler("sched-stochastic", "\"stochastic_sampling\": true");
	gen_scheduler("sched-invert", "\"invert_sigmas\": true");
	gen_scheduler("sched-timesteps0", "\"num_train_timesteps\": 0");
	gen_scheduler("sched-type", "\"num_train_timesteps\": \"1000\"");
	gen_scheduler("sched-false", "\"use_karras_sigmas\": false, "
	    "\"invert_sigmas\": false, \"num_train_timesteps\": 1000");
	gen_lora("lora-good.safetensors", LORA_GOOD);
	gen_lora("lora-unpaired.safetensors", LORA_UNPAIRED);
	gen_lora("lora-rank.safetensors", LORA_RANK);
	gen_lora("lora-badkey.safetensors", LORA_BADKEY);
	gen_lora("lora-nomatch.safetensors", LORA_NOMATCH);
	gen_lora("lora-shape.safetensors", LORA_SHAPE);
	gen_lora("lora-alpha.safetensors", LORA_ALPHA);
	char *p = xasprintf("%s/lora-corrupt.safetensors", tmp);
	write_text(p, "this is not a safetensors file\n");
	free(p);
	gen_embeds("embeds-good.safetensors", 16, 1);
	gen_embeds("embeds-noneg.safetensors", 16, 0);
	gen_embeds("embeds-shape.safetensors", 24, 1);
	p = xasprintf("%s/embeds-corrupt.safetensors", tmp);
	write_text(p, "\x10\x00\x00\x00\x00\x00\x00\x00{\"a\":");
	free(p);
	/*
	 * latents: of the good model at 64 x 64, 9 frames [1, 8, 2, 2, 2];
	 * the same packed [1, 8 tokens, 8]; one of a 64 x 128 job (LQ-LAT-001
	 * here); one tensor of another name (read as the only one).
	 */
	{
		static float z[128];
		static const struct {
			const char *file, *tensor;
			int ndim;
			int64_t shape[5];
		} lat[] = {
			{ "latents-good", "latents", 5, {1, 8, 2, 2, 2} },
			{ "latents-packed", "latents", 3, {1, 8, 8} },
			{ "latents-wide", "latents", 5, {1, 8, 2, 2, 4} },
			{ "latents-only", "x", 3, {1, 8, 8} },
		};
		for (size_t i = 0; i < LQ_ARRAY_LEN(lat); i++) {
			struct st_writer *w = st_writer_new();
			struct lq_error err;

			error_clear(&err);
			st_writer_add(w, lat[i].tensor, ST_F32, lat[i].ndim,
			    lat[i].shape, z);
			p = xasprintf("%s/%s.safetensors", tmp, lat[i].file);
			if (st_writer_write(w, p, &err) != LQ_OK) {
				error_print(&err, stderr);
				exit(99);
			}
			st_writer_free(w);
			free(p);
		}
	}
	/* image-to-video: a 96 x 64 (width x height) PNG */
	{
		uint8_t *rgb = xcalloc(64 * 96 * 3, 1);
		struct lq_error err;

		error_clear(&err);
		p = xasprintf("%s/image-96x64.png", tmp);
		if (media_write_png(p, rgb, 64, 96, NULL, &err) != LQ_OK) {
			error_print(&err, stderr);
			exit(99);
		}
		free(p);
		free(rgb);
	}
}

