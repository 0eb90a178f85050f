/*
 * synth.c — deterministic random LTX-Video and LTX-2 models in diffusers
 * layout (see synth.h).
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/embed.h"
#include "core/json.h"
#include "core/util.h"
#include "model/expected.h"
#include "model/safetensors.h"
#include "model/synth.h"

extern const struct embed_file model_embedded[];

static const struct {
	const char *name, *transformer, *vae, *t5;
} presets[] = {
	{"tiny",
	    "{\"in_channels\": 16, \"out_channels\": 16, \"num_attention_heads\": 2,"
	    " \"attention_head_dim\": 16, \"cross_attention_dim\": 32, \"num_layers\": 2,"
	    " \"caption_channels\": 32}",
	    "{\"block_out_channels\": [8, 16, 24], \"decoder_block_out_channels\": [8, 16, 24],"
	    " \"layers_per_block\": [1, 1, 1, 1], \"decoder_layers_per_block\": [1, 2, 1, 1],"
	    " \"spatio_temporal_scaling\": [true, true, false],"
	    " \"decoder_spatio_temporal_scaling\": [true, true, false],"
	    " \"decoder_inject_noise\": [false, false, false, false],"
	    " \"down_block_types\": [\"LTXVideoDownBlock3D\", \"LTXVideoDownBlock3D\","
	    " \"LTXVideoDownBlock3D\"], \"downsample_type\": [\"conv\", \"conv\", \"conv\"],"
	    " \"upsample_residual\": [false, false, false], \"upsample_factor\": [1, 1, 1],"
	    " \"latent_channels\": 16}",
	    "{\"vocab_size\": 160, \"d_model\": 32, \"d_kv\": 8, \"d_ff\": 64, \"num_layers\": 2,"
	    " \"num_heads\": 4, \"feed_forward_proj\": \"gated-gelu\"}"},
	{"small",
	    "{\"in_channels\": 16, \"out_channels\": 16, \"num_attention_heads\": 4,"
	    " \"attention_head_dim\": 32, \"cross_attention_dim\": 128, \"num_layers\": 4,"
	    " \"caption_channels\": 64}",
	    "{\"block_out_channels\": [32, 64], \"decoder_block_out_channels\": [32, 64],"
	    " \"layers_per_block\": [0, 1, 2], \"decoder_layers_per_block\": [0, 2, 2],"
	    " \"spatio_temporal_scaling\": [true, false],"
	    " \"decoder_spatio_temporal_scaling\": [true, false],"
	    " \"decoder_inject_noise\": [false, false, false],"
	    " \"down_block_types\": [\"LTXVideoDownBlock3D\", \"LTXVideoDownBlock3D\"],"
	    " \"downsample_type\": [\"conv\", \"conv\"], \"upsample_residual\": [false, false],"
	    " \"upsample_factor\": [1, 1], \"latent_channels\": 16}",
	    "{\"vocab_size\": 160, \"d_model\": 64, \"d_kv\": 16, \"d_ff\": 128, \"num_layers\": 2,"
	    " \"num_heads\": 4, \"feed_forward_proj\": \"gated-gelu\"}"},
};

/*
 * Released checkpoints' dimensions, from diffusers 58eb52c
 * scripts/convert_ltx_to_diffusers.py (get_transformer_config,
 * get_vae_config for versions 0.9.1, 0.9.5 and 0.9.7: the config.json
 * files of Lightricks/LTX-Video's transformer/ and vae/ are what it
 * saves), and google/t5-v1_1-xxl's config.json (the text_encoder/ of
 * every LTX-Video release: d_model 4096, d_kv 64, d_ff 10240, 24 layers x
 * 64 heads, vocab 32128, gated-gelu).
 */
#define T5_XXL "{\"vocab_size\": 32128, \"d_model\": 4096, \"d_kv\": 64," \
	" \"d_ff\": 10240, \"num_layers\": 24, \"num_heads\": 64," \
	" \"relative_attention_num_buckets\": 32," \
	" \"relative_attention_max_distance\": 128, \"layer_norm_epsilon\": 1e-06," \
	" \"feed_forward_proj\": \"gated-gelu\"}"
#define LTXV_2B "{\"in_channels\": 128, \"out_channels\": 128, \"patch_size\": 1," \
	" \"patch_size_t\": 1, \"num_attention_heads\": 32, \"attention_head_dim\": 64," \
	" \"cross_attention_dim\": 2048, \"num_layers\": 28," \
	" \"activation_fn\": \"gelu-approximate\", \"qk_norm\": \"rms_norm_across_heads\"," \
	" \"norm_elementwise_affine\": false, \"norm_eps\": 1e-06," \
	" \"caption_channels\": 4096, \"attention_bias\": true, \"attention_out_bias\": true}"
#define LTXV_13B "{\"in_channels\": 128, \"out_channels\": 128, \"patch_size\": 1," \
	" \"patch_size_t\": 1, \"num_attention_heads\": 32, \"attention_head_dim\": 128," \
	" \"cross_attention_dim\": 4096, \"num_layers\": 48," \
	" \"activation_fn\": \"gelu-approximate\", \"qk_norm\": \"rms_norm_across_heads\"," \
	" \"norm_elementwise_affine\": false, \"norm_eps\": 1e-06," \
	" \"caption_channels\": 4096, \"attention_bias\": true, \"attention_out_bias\": true}"
#define VAE_091 "{\"in_channels\": 3, \"out_channels\": 3, \"latent_channels\": 128," \
	" \"block_out_channels\": [128, 256, 512, 512]," \
	" \"down_block_types\": [\"LTXVideoDownBlock3D\", \"LTXVideoDownBlock3D\"," \
	" \"LTXVideoDownBlock3D\", \"LTXVideoDownBlock3D\"]," \
	" \"decoder_block_out_channels\": [256, 512, 1024]," \
	" \"layers_per_block\": [4, 3, 3, 3, 4], \"decoder_layers_per_block\": [5, 6, 7, 8]," \
	" \"spatio_temporal_scaling\": [true, true, true, false]," \
	" \"decoder_spatio_temporal_scaling\": [true, true, true]," \
	" \"decoder_inject_noise\": [true, true, true, false]," \
	" \"downsample_type\": [\"conv\", \"conv\", \"conv\", \"conv\"]," \
	" \"upsample_residual\": [true, true, true], \"upsample_factor\": [2, 2, 2]," \
	" \"timestep_conditioning\": true, \"patch_size\": 4, \"patch_size_t\": 1," \
	" \"resnet_norm_eps\": 1e-06, \"scaling_factor\": 1.0, \"encoder_causal\": true," \
	" \"decoder_causal\": false}"
/* 0.9.5 and 0.9.7 share the VAE (get_vae_config) */
#define VAE_095 "{\"in_channels\": 3, \"out_channels\": 3, \"latent_channels\": 128," \
	" \"block_out_channels\": [128, 256, 512, 1024, 2048]," \
	" \"down_block_types\": [\"LTXVideo095DownBlock3D\", \"LTXVideo095DownBlock3D\"," \
	" \"LTXVideo095DownBlock3D\", \"LTXVideo095DownBlock3D\"]," \
	" \"decoder_block_out_channels\": [256, 512, 1024]," \
	" \"layers_per_block\": [4, 6, 6, 2, 2], \"decoder_layers_per_block\": [5, 5, 5, 5]," \
	" \"spatio_temporal_scaling\": [true, true, true, true]," \
	" \"decoder_spatio_temporal_scaling\": [true, true, true]," \
	" \"decoder_inject_noise\": [false, false, false, false]," \
	" \"downsample_type\": [\"spatial\", \"temporal\", \"spatiotemporal\", \"spatiotemporal\"]," \
	" \"upsample_residual\": [true, true, true], \"upsample_factor\": [2, 2, 2]," \
	" \"timestep_conditioning\": true, \"patch_size\": 4, \"patch_size_t\": 1," \
	" \"resnet_norm_eps\": 1e-06, \"scaling_factor\": 1.0, \"encoder_causal\": true," \
	" \"decoder_causal\": false, \"spatial_compression_ratio\": 32," \
	" \"temporal_compression_ratio\": 8}"

static const struct {
	const char *name, *transformer, *vae, *t5;
} real_presets[] = {
	{"0.9.1-2b", LTXV_2B, VAE_091, T5_XXL},
	{"0.9.5-2b", LTXV_2B, VAE_095, T5_XXL},
	{"0.9.7-13b", LTXV_13B, VAE_095, T5_XXL},
};

/* The preset's three config objects (caller frees), NULL when unknown. */
static int
preset_json(const char *family, const char *preset, cJSON *out[3])
{
	const char *t = NULL, *v = NULL, *c = NULL;

	if (strcmp(family, "ltxv") != 0)
		return -1;
	for (size_t i = 0; i < LQ_ARRAY_LEN(presets); i++)
		if (strcmp(preset, presets[i].name) == 0) {
			t = presets[i].transformer;
			v = presets[i].vae;
			c = presets[i].t5;
		}
	for (size_t i = 0; i < LQ_ARRAY_LEN(real_presets); i++)
		if (strcmp(preset, real_presets[i].name) == 0) {
			t = real_presets[i].transformer;
			v = real_presets[i].vae;
			c = real_presets[i].t5;
		}
	if (t == NULL)
		return -1;
	out[0] = cJSON_Parse(t);
	out[1] = cJSON_Parse(v);
	out[2] = cJSON_Parse(c);
	LQ_ASSERT(out[0] && out[1] && out[2]);
	return 0;
}

int
model_synth_preset(const char *family, const char *preset,
    struct ltxv_transformer_config *t, struct ltxv_vae_config *v, struct t5_config *c)
{
	cJSON *j[3];
	struct lq_error err;

	if (preset_json(family, preset, j) != 0)
		return -1;
	LQ_ASSERT(diffusers_parse_transformer(j[0], "preset", t, &err) == LQ_OK);
	LQ_ASSERT(diffusers_parse_vae(j[1], "preset", v, &err) == LQ_OK);
	LQ_ASSERT(diffusers_parse_t5(j[2], "preset", c, &err) == LQ_OK);
	for (int i = 0; i < 3; i++)
		cJSON_Delete(j[i]);
	return 0;
}

/* ---- deterministic weights ---- */

static uint64_t
splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* uniform in (0, 1) */
static double
uniform(uint64_t *s)
{
	return ((double)(splitmix64(s) >> 11) + 0.5) / 9007199254740992.0;
}

static double
normal(uint64_t *s)
{
	double u1 = uniform(s), u2 = uniform(s);
	return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

static uint64_t
fnv1a(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

static int
ends(const char *s, const char *suf)
{
	size_t n = strlen(s), m = strlen(suf);
	return n >= m && strcmp(s + n - m, suf) == 0;
}

static void
fill(const struct tensor_spec *sp, uint64_t seed, float *v, size_t n)
{
	uint64_t s = seed ^ fnv1a(sp->name);
	const char *nm = sp->name;
	for (size_t i = 0; i < n; i++) {
		double x;
		if (strcmp(nm, "latents_std") == 0)
			x = 0.5 + uniform(&s);
		else if (strcmp(nm, "latents_mean") == 0)
			x = 0.2 * normal(&s);
		else if (ends(nm, "timestep_scale_multiplier"))
			x = 1000.0;
		else if (ends(nm, ".bias"))
			x = 0.02 * normal(&s);
		else if (strstr(nm, "scale_shift_table"))
			x = normal(&s) / sqrt((double)sp->shape[sp->ndim - 1]);
		else if (ends(nm, ".gamma"))	/* WanRMS_norm */
			x = 1.0 + 0.1 * normal(&s);
		else if (strstr(nm, "per_channel_scale"))
			x = 0.2 * normal(&s);
		else if (ends(nm, ".alpha") || ends(nm, ".beta"))
			/* SnakeBeta's log-scale parameters (upstream: 0) */
			x = 0.1 * normal(&s);
		else if (ends(nm, "learnable_registers"))
			/* upstream: torch.rand * 2 - 1 */
			x = 2.0 * uniform(&s) - 1.0;
		else if (sp->ndim == 1)	/* norm weights */
			x = 1.0 + 0.1 * normal(&s);
		else if (strcmp(nm, "shared.weight") == 0 || strstr(nm, "relative_attention_bias"))
			x = normal(&s);
		else {
			double fan_in = 1;
			for (int d = 1; d < sp->ndim; d++)
				fan_in *= (double)sp->shape[d];
			x = normal(&s) / sqrt(fan_in);
		}
		v[i] = (float)x;
	}
}

/* ---- files ---- */

static enum lq_status
io_fail(struct lq_error *err, const char *path, const char *what)
{
	error_set(err, LQ_FAILED, "LQ-MODEL-031", "%s: %s", what, strerror(errno));
	error_set_where(err, path, 0, 0);
	return LQ_FAILED;
}

static enum lq_status
write_bytes(const char *path, const void *data, size_t n, struct lq_error *err)
{
	FILE *fp = fopen(path, "wb");
	if (fp == NULL)
		return io_fail(err, path, "cannot create");
	int ok = fwrite(data, 1, n, fp) == n;
	if (fclose(fp) != 0 || !ok)
		return io_fail(err, path, "cannot write");
	return LQ_OK;
}

static void
newline(struct strbuf *sb, int depth)
{
	strbuf_append(sb, "\n", 1);
	for (int i = 0; i < depth; i++)
		strbuf_append(sb, "  ", 2);
}

/* Re-indents compact JSON the way Python's json.dumps(indent=2) does. */
static void
reindent(const char *t, struct strbuf *sb)
{
	int depth = 0, in_str = 0;
	for (const char *p = t; *p; p++) {
		char c = *p;
		if (in_str) {
			strbuf_append(sb, p, 1);
			if (c == '\\' && p[1]) {
				strbuf_append(sb, ++p, 1);
			} else if (c == '"') {
				in_str = 0;
			}
			continue;
		}
		switch (c) {
		case '"':
			in_str = 1;
			strbuf_append(sb, p, 1);
			break;
		case '{':
		case '[':
			strbuf_append(sb, p, 1);
			if (p[1] == (c == '{' ? '}' : ']')) {
				strbuf_append(sb, ++p, 1);
				break;
			}
			newline(sb, ++depth);
			break;
		case '}':
		case ']':
			newline(sb, --depth);
			strbuf_append(sb, p, 1);
			break;
		case ',':
			strbuf_append(sb, ",", 1);
			newline(sb, depth);
			break;
		case ':':
			strbuf_append(sb, ": ", 2);
			break;
		default:
			strbuf_append(sb, p, 1);
		}
	}
}

/* JSON as save_pretrained writes it: keys sorted, 2-space indent, newline. */
static enum lq_status
write_json(const char *dir, const char *name, cJSON *j, struct lq_error *err)
{
	json_sort_keys(j);
	char *text = cJSON_PrintUnformatted(j);
	char *path = xasprintf("%s/%s", dir, name);
	struct strbuf sb = {0};
	reindent(text, &sb);
	strbuf_append(&sb, "\n", 1);
	enum lq_status rc = write_bytes(path, sb.buf, sb.len, err);
	free(sb.buf);
	free(text);
	free(path);
	cJSON_Delete(j);
	return rc;
}

/* mkdir -p: the output folder's missing parents are made too */
static enum lq_status
make_dir(const char *path, struct lq_error *err)
{
	char *failed = NULL;
	if (util_mkdir_p(path, 0777, &failed) != 0) {
		enum lq_status st = io_fail(err, failed ? failed : path,
		    "cannot create folder");
		free(failed);
		return st;
	}
	return LQ_OK;
}

/* Fills tensors whose values are computed, not drawn (LTX-2's vocoder
 * filters and STFT bases); returns 1 when it filled `v`. */
typedef int (*fill_special_fn)(const struct tensor_spec *sp, const void *ud,
    uint64_t seed, float *v, size_t n);

static enum lq_status
write_weights_ex(const char *path, const struct tensor_table *t, uint64_t seed,
    const struct model_synth_opts *o, fill_special_fn special, const void *ud,
    struct lq_error *err);

static enum lq_status
write_weights(const char *path, const struct tensor_table *t, uint64_t seed,
    const struct model_synth_opts *o, struct lq_error *err)
{
	return write_weights_ex(path, t, seed, o, NULL, NULL, err);
}

/* `dir` created if missing, and empty (LQ-MODEL-031 otherwise). */
static enum lq_status
new_dir(const char *dir, struct lq_error *err)
{
	if (make_dir(dir, err) != LQ_OK)
		return LQ_FAILED;
	DIR *d = opendir(dir);
	if (d == NULL)
		return io_fail(err, dir, "cannot open folder");
	struct dirent *de;
	int empty = 1;
	while ((de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			empty = 0;
	closedir(d);
	if (!empty) {
		error_set(err, LQ_FAILED, "LQ-MODEL-031", "folder is not empty");
		error_set_where(err, dir, 0, 0);
		error_set_hint(err, "give a new or empty folder");
		return LQ_FAILED;
	}
	return LQ_OK;
}

static enum lq_status
write_weights_ex(const char *path, const struct tensor_table *t, uint64_t seed,
    const struct model_synth_opts *o, fill_special_fn special, const void *ud,
    struct lq_error *err)
{
	struct st_writer *w = st_writer_new();
	st_writer_set_metadata(w, "format", "pt");
	for (size_t i = 0; i < t->n; i++) {
		const struct tensor_spec *sp = &t->specs[i];
		/* tied duplicates (T5 encoder.embed_tokens) are not saved */
		if ((sp->flags & TENSOR_SPEC_OPTIONAL) && !(sp->flags & TENSOR_SPEC_UNUSED))
			continue;
		/* every tensor in the requested dtype, as the conversion
		 * script's model.to(dtype) casts parameters and buffers */
		enum st_dtype dt = o->dtype;
		if (o->sparse) {
			st_writer_add_zeros(w, sp->name, dt, sp->ndim, sp->shape);
			continue;
		}
		size_t n = 1;
		for (int d = 0; d < sp->ndim; d++)
			n *= (size_t)sp->shape[d];
		float *v = xmalloc((n ? n : 1) * sizeof(float));
		if (special == NULL || !special(sp, ud, seed, v, n))
			fill(sp, seed, v, n);
		st_writer_add_f32(w, sp->name, dt, sp->ndim, sp->shape, v);
		free(v);
	}
	enum lq_status rc = st_writer_write(w, path, err);
	st_writer_free(w);
	return rc;
}

static cJSON *
pair(const char *lib, const char *cls)
{
	cJSON *a = cJSON_CreateArray();
	cJSON_AddItemToArray(a, cJSON_CreateString(lib));
	cJSON_AddItemToArray(a, cJSON_CreateString(cls));
	return a;
}

static cJSON *
special_token(const char *content)
{
	cJSON *t = cJSON_CreateObject();
	cJSON_AddStringToObject(t, "content", content);
	cJSON_AddBoolToObject(t, "lstrip", 0);
	cJSON_AddBoolToObject(t, "normalized", 0);
	cJSON_AddBoolToObject(t, "rstrip", 0);
	cJSON_AddBoolToObject(t, "single_word", 0);
	return t;
}

static enum lq_status
write_tokenizer(const char *dir, struct lq_error *err)
{
	const struct embed_file *sp = embed_find(model_embedded, "spiece.model");
	LQ_ASSERT(sp != NULL);
	char *p = xasprintf("%s/spiece.model", dir);
	enum lq_status rc = write_bytes(p, sp->data, sp->size, err);
	free(p);
	if (rc != LQ_OK)
		return rc;
	cJSON *j = cJSON_CreateObject();
	cJSON_AddItemToObject(j, "eos_token", special_token("</s>"));
	cJSON_AddItemToObject(j, "pad_token", special_token("<pad>"));
	cJSON_AddItemToObject(j, "unk_token", special_token("<unk>"));
	if (write_json(dir, "special_tokens_map.json", j, err) != LQ_OK)
		return LQ_FAILED;
	j = cJSON_CreateObject();
	cJSON_AddBoolToObject(j, "add_prefix_space", 1);
	cJSON *dec = cJSON_AddObjectToObject(j, "added_tokens_decoder");
	const char *sp3[3] = {"<pad>", "</s>", "<unk>"};
	for (int i = 0; i < 3; i++) {
		cJSON *t = special_token(sp3[i]);
		cJSON_AddBoolToObject(t, "special", 1);
		char k[4];
		snprintf(k, sizeof(k), "%d", i);
		cJSON_AddItemToObject(dec, k, t);
	}
	cJSON_AddArrayToObject(j, "additional_special_tokens");
	cJSON_AddBoolToObject(j, "clean_up_tokenization_spaces", 1);
	cJSON_AddStringToObject(j, "eos_token", "</s>");
	cJSON_AddNumberToObject(j, "extra_ids", 0);
	cJSON_AddBoolToObject(j, "legacy", 1);
	cJSON_AddNumberToObject(j, "model_max_length", 128);
	cJSON_AddStringToObject(j, "pad_token", "<pad>");
	cJSON_AddObjectToObject(j, "sp_model_kwargs");
	cJSON_AddStringToObject(j, "tokenizer_class", "T5Tokenizer");
	cJSON_AddStringToObject(j, "unk_token", "<unk>");
	return write_json(dir, "tokenizer_config.json", j, err);
}

static cJSON *
scheduler_json(void)
{
	/* LTX-Video 0.9.0 / 0.9.1 scheduler (diffusers conversion script) */
	cJSON *j = cJSON_CreateObject();
	cJSON_AddStringToObject(j, "_class_name", "FlowMatchEulerDiscreteScheduler");
	cJSON_AddStringToObject(j, "_diffusers_version", "0.40.0.dev0");
	cJSON_AddNumberToObject(j, "base_image_seq_len", 1024);
	cJSON_AddNumberToObject(j, "base_shift", 0.95);
	cJSON_AddBoolToObject(j, "invert_sigmas", 0);
	cJSON_AddNumberToObject(j, "max_image_seq_len", 4096);
	cJSON_AddNumberToObject(j, "max_shift", 2.05);
	cJSON_AddNumberToObject(j, "num_train_timesteps", 1000);
	cJSON_AddNumberToObject(j, "shift", 1.0);
	cJSON_AddNumberToObject(j, "shift_terminal", 0.1);
	cJSON_AddBoolToObject(j, "stochastic_sampling", 0);
	cJSON_AddStringToObject(j, "time_shift_type", "exponential");
	cJSON_AddBoolToObject(j, "use_beta_sigmas", 0);
	cJSON_AddBoolToObject(j, "use_dynamic_shifting", 1);
	cJSON_AddBoolToObject(j, "use_exponential_sigmas", 0);
	cJSON_AddBoolToObject(j, "use_karras_sigmas", 0);
	return j;
}

/*
 * Applies "component.key=JSON" to the preset's configs: the key must be
 * one the component's config.json has (the keys diffusers_*_to_json
 * writes), the value any JSON; then the configs are parsed again with
 * upstream's rules.
 */
static enum lq_status
apply_sets(cJSON *j[3], const struct model_synth_opts *o,
    struct ltxv_transformer_config *tc, struct ltxv_vae_config *vc,
    struct t5_config *cc, struct lq_error *err)
{
	static const char *const comps[3] = {"transformer", "vae", "text_encoder"};
	cJSON *full[3];
	enum lq_status st;

	/* every key the component's config.json has, with the preset's values */
	LQ_ASSERT(diffusers_parse_transformer(j[0], "preset", tc, err) == LQ_OK);
	LQ_ASSERT(diffusers_parse_vae(j[1], "preset", vc, err) == LQ_OK);
	LQ_ASSERT(diffusers_parse_t5(j[2], "preset", cc, err) == LQ_OK);
	full[0] = diffusers_transformer_to_json(tc);
	full[1] = diffusers_vae_to_json(vc);
	full[2] = diffusers_t5_to_json(cc);
	st = LQ_OK;
	for (size_t i = 0; i < o->nsets && st == LQ_OK; i++) {
		const char *a = o->sets[i], *dot = strchr(a, '.');
		const char *eq = dot ? strchr(dot, '=') : NULL;
		int c = -1;

		for (int k = 0; dot && k < 3; k++)
			if (strlen(comps[k]) == (size_t)(dot - a) &&
			    strncmp(a, comps[k], (size_t)(dot - a)) == 0)
				c = k;
		if (c < 0 || eq == NULL || eq == dot + 1) {
			st = error_set(err, LQ_FAILED, "LQ-MODEL-032",
			    "--set %s: not COMPONENT.KEY=JSON", a);
			error_set_hint(err, "COMPONENT is transformer, vae or "
			    "text_encoder, e.g. --set transformer.num_layers=1");
			break;
		}
		char *key = xstrndup(dot + 1, (size_t)(eq - dot - 1));
		cJSON *v = cJSON_Parse(eq + 1);
		if (cJSON_GetObjectItemCaseSensitive(full[c], key) == NULL ||
		    key[0] == '_') {
			st = error_set(err, LQ_FAILED, "LQ-MODEL-032",
			    "--set %s: %s/config.json has no key \"%s\"", a,
			    comps[c], key);
			error_set_hint(err, "a key diffusers writes for %s, e.g. %s",
			    comps[c], c == 0 ? "num_layers" : c == 1 ?
			    "decoder_block_out_channels" : "d_model");
		} else if (v == NULL) {
			st = error_set(err, LQ_FAILED, "LQ-MODEL-032",
			    "--set %s: \"%s\" is not JSON", a, eq + 1);
			error_set_hint(err, "numbers as 8, lists as [8,16,16,16], "
			    "strings quoted: '\"gelu\"'");
		} else {
			cJSON_DeleteItemFromObjectCaseSensitive(j[c], key);
			cJSON_AddItemToObject(j[c], key, v);
			v = NULL;
		}
		cJSON_Delete(v);
		free(key);
	}
	for (int k = 0; k < 3; k++)
		cJSON_Delete(full[k]);
	if (st != LQ_OK)
		return st;
	/* upstream's rules on the result, naming the --set that broke one */
	if ((st = diffusers_parse_transformer(j[0], "--set transformer", tc, err)) ||
	    (st = diffusers_parse_vae(j[1], "--set vae", vc, err)) ||
	    (st = diffusers_parse_t5(j[2], "--set text_encoder", cc, err)))
		return st;
	return LQ_OK;
}

/* ---- Wan 2.1 (WanPipeline) ---- */

/*
 * Wan presets: every key the upstream classes' save_pretrained writes.
 * "tiny" is the goldens' (tests/data/wan: transformer 2 layers x 2 heads
 * x 12, VAE base_dim 8, z_dim 4), "demo" a few-MB model of Wan 2.1's
 * layout (z_dim 16, patch [1, 2, 2], text_dim 64, 4 layers x 4 heads x
 * 16; VAE base_dim 16, dim_mult [1, 2, 2, 2]: 8x spatial, 4x temporal).
 * latents_mean / latents_std: the tiny preset's are the goldens', the
 * demo's drawn from the seed (wan_latents_stats).
 */
static const struct {
	const char *name, *transformer, *vae;
	int stats_from_seed;
} wan_presets[] = {
	{"tiny",
	    "{\"added_kv_proj_dim\": null, \"attention_head_dim\": 12,"
	    " \"cross_attn_norm\": true, \"eps\": 1e-06, \"ffn_dim\": 40,"
	    " \"freq_dim\": 32, \"image_dim\": null, \"in_channels\": 4,"
	    " \"num_attention_heads\": 2, \"num_layers\": 2, \"out_channels\": 4,"
	    " \"patch_size\": [1, 2, 2], \"pos_embed_seq_len\": null,"
	    " \"qk_norm\": \"rms_norm_across_heads\", \"rope_max_seq_len\": 32,"
	    " \"text_dim\": 32}",
	    "{\"attn_scales\": [], \"base_dim\": 8, \"decoder_base_dim\": null,"
	    " \"dim_mult\": [1, 2, 2, 2], \"dropout\": 0.0, \"in_channels\": 3,"
	    " \"is_residual\": false, \"latents_mean\": [0.3, -0.2, 0.1, -0.4],"
	    " \"latents_std\": [1.5, 0.8, 2.0, 1.2], \"num_res_blocks\": 1,"
	    " \"out_channels\": 3, \"patch_size\": null,"
	    " \"scale_factor_spatial\": 8, \"scale_factor_temporal\": 4,"
	    " \"temperal_downsample\": [false, true, true], \"z_dim\": 4}", 0},
	{"demo",
	    "{\"added_kv_proj_dim\": null, \"attention_head_dim\": 16,"
	    " \"cross_attn_norm\": true, \"eps\": 1e-06, \"ffn_dim\": 128,"
	    " \"freq_dim\": 64, \"image_dim\": null, \"in_channels\": 16,"
	    " \"num_attention_heads\": 4, \"num_layers\": 4, \"out_channels\": 16,"
	    " \"patch_size\": [1, 2, 2], \"pos_embed_seq_len\": null,"
	    " \"qk_norm\": \"rms_norm_across_heads\", \"rope_max_seq_len\": 1024,"
	    " \"text_dim\": 64}",
	    "{\"attn_scales\": [], \"base_dim\": 16, \"decoder_base_dim\": null,"
	    " \"dim_mult\": [1, 2, 2, 2], \"dropout\": 0.0, \"in_channels\": 3,"
	    " \"is_residual\": false, \"num_res_blocks\": 1,"
	    " \"out_channels\": 3, \"patch_size\": null,"
	    " \"scale_factor_spatial\": 8, \"scale_factor_temporal\": 4,"
	    " \"temperal_downsample\": [false, true, true], \"z_dim\": 16}", 1},
};

/* UniPCMultistepScheduler as Wan 2.1's 480p scheduler folders write it. */
static cJSON *
wan_scheduler_json(void)
{
	static const char *const text =
	    "{\"_class_name\": \"UniPCMultistepScheduler\","
	    " \"_diffusers_version\": \"0.40.0.dev0\", \"beta_end\": 0.02,"
	    " \"beta_schedule\": \"linear\", \"beta_start\": 0.0001,"
	    " \"disable_corrector\": [], \"dynamic_thresholding_ratio\": 0.995,"
	    " \"final_sigmas_type\": \"zero\", \"flow_shift\": 3.0,"
	    " \"lower_order_final\": true, \"num_train_timesteps\": 1000,"
	    " \"predict_x0\": true, \"prediction_type\": \"flow_prediction\","
	    " \"rescale_betas_zero_snr\": false, \"sample_max_value\": 1.0,"
	    " \"shift_terminal\": null, \"sigma_max\": null, \"sigma_min\": null,"
	    " \"solver_order\": 2, \"solver_p\": null, \"solver_type\": \"bh2\","
	    " \"steps_offset\": 0, \"thresholding\": false,"
	    " \"time_shift_type\": \"exponential\","
	    " \"timestep_spacing\": \"linspace\", \"trained_betas\": null,"
	    " \"use_beta_sigmas\": false, \"use_dynamic_shifting\": false,"
	    " \"use_exponential_sigmas\": false, \"use_flow_sigmas\": true,"
	    " \"use_karras_sigmas\": false}";
	cJSON *j = cJSON_Parse(text);
	LQ_ASSERT(j != NULL);
	return j;
}

/* latents_mean 0.2 N, latents_std 0.5 + U(0, 1) for z channels, drawn
 * from the seed as the LTX VAE's buffers are. */
static void
wan_latents_stats(cJSON *vae, int z, uint64_t seed)
{
	uint64_t sm = seed ^ fnv1a("latents_mean"), ss = seed ^
	    fnv1a("latents_std");
	cJSON *m = cJSON_CreateArray(), *d = cJSON_CreateArray();
	for (int i = 0; i < z; i++) {
		/* rounded to 4 decimals: a config a person can read */
		cJSON_AddItemToArray(m, cJSON_CreateNumber(
		    round(0.2 * normal(&sm) * 1e4) / 1e4));
		cJSON_AddItemToArray(d, cJSON_CreateNumber(
		    round((0.5 + uniform(&ss)) * 1e4) / 1e4));
	}
	cJSON_AddItemToObject(vae, "latents_mean", m);
	cJSON_AddItemToObject(vae, "latents_std", d);
}

/*
 * prompt_embeds / negative_prompt_embeds [1, 16, text_dim] standing in for
 * UMT5's output (latentq has no UMT5): seeded normals in the first 10 / 4
 * rows, zeros after, as UMT5 pads.  Not part of the diffusers layout; the
 * demo job (jobs/wan.yaml) reads it.
 */
static enum lq_status
wan_demo_embeds(const char *path, int text_dim, uint64_t seed,
    struct lq_error *err)
{
	const int T = 16, valid[2] = {10, 4};
	static const char *const names[2] = {"prompt_embeds",
	    "negative_prompt_embeds"};
	struct st_writer *w = st_writer_new();
	st_writer_set_metadata(w, "format", "pt");
	float *v = xcalloc((size_t)T * text_dim, sizeof(float));
	for (int k = 0; k < 2; k++) {
		uint64_t sd = seed ^ fnv1a(names[k]);
		memset(v, 0, (size_t)T * text_dim * sizeof(float));
		for (int i = 0; i < valid[k] * text_dim; i++)
			v[i] = (float)(0.5 * normal(&sd));
		int64_t shape[3] = {1, T, text_dim};
		st_writer_add_f32(w, names[k], ST_F32, 3, shape, v);
	}
	free(v);
	enum lq_status rc = st_writer_write(w, path, err);
	st_writer_free(w);
	return rc;
}

/* "transformer.key=JSON" / "vae.key=JSON" onto the preset's objects. */
static enum lq_status
wan_apply_sets(cJSON *j[2], const struct model_synth_opts *o,
    struct lq_error *err)
{
	static const char *const comps[2] = {"transformer", "vae"};
	for (size_t i = 0; i < o->nsets; i++) {
		const char *a = o->sets[i], *dot = strchr(a, '.');
		const char *eq = dot ? strchr(dot, '=') : NULL;
		int c = -1;
		for (int k = 0; dot && k < 2; k++)
			if (strlen(comps[k]) == (size_t)(dot - a) &&
			    strncmp(a, comps[k], (size_t)(dot - a)) == 0)
				c = k;
		if (c < 0 || eq == NULL || eq == dot + 1) {
			error_set(err, LQ_FAILED, "LQ-MODEL-032",
			    "--set %s: not COMPONENT.KEY=JSON", a);
			error_set_hint(err, "COMPONENT is transformer or vae for "
			    "family wan, e.g. --set transformer.num_layers=1");
			return LQ_FAILED;
		}
		char *key = xstrndup(dot + 1, (size_t)(eq - dot - 1));
		cJSON *v = cJSON_Parse(eq + 1);
		enum lq_status st = LQ_OK;
		if (cJSON_GetObjectItemCaseSensitive(j[c], key) == NULL) {
			st = error_set(err, LQ_FAILED, "LQ-MODEL-032", "--set %s: "
			    "%s/config.json has no key \"%s\"", a, comps[c], key);
			error_set_hint(err, "a key diffusers writes for %s, e.g. "
			    "%s", comps[c], c == 0 ? "num_layers" : "base_dim");
		} else if (v == NULL) {
			st = error_set(err, LQ_FAILED, "LQ-MODEL-032", "--set %s: "
			    "\"%s\" is not JSON", a, eq + 1);
		} else {
			cJSON_DeleteItemFromObjectCaseSensitive(j[c], key);
			cJSON_AddItemToObject(j[c], key, v);
			v = NULL;
		}
		cJSON_Delete(v);
		free(key);
		if (st != LQ_OK)
			return st;
	}
	return LQ_OK;
}

static enum lq_status
synth_wan(const char *dir, const char *preset, uint64_t seed,
    const struct model_synth_opts *o, struct lq_error *err)
{
	int pi = -1;
	for (size_t i = 0; i < LQ_ARRAY_LEN(wan_presets); i++)
		if (strcmp(preset, wan_presets[i].name) == 0)
			pi = (int)i;
	if (pi < 0) {
		error_set(err, LQ_FAILED, "LQ-MODEL-030", "no preset \"%s\" "
		    "for family \"wan\"", preset);
		error_set_hint(err, "family wan, preset tiny or demo");
		return LQ_FAILED;
	}
	cJSON *j[2] = {cJSON_Parse(wan_presets[pi].transformer),
	    cJSON_Parse(wan_presets[pi].vae)};
	LQ_ASSERT(j[0] && j[1]);
	struct wan_transformer_config tc;
	struct wan_vae_config vc;
	enum lq_status rc = wan_apply_sets(j, o, err);
	if (rc == LQ_OK && wan_presets[pi].stats_from_seed) {
		const cJSON *z = cJSON_GetObjectItemCaseSensitive(j[1], "z_dim");
		if (cJSON_GetObjectItemCaseSensitive(j[1], "latents_mean") ==
		    NULL && cJSON_IsNumber(z) && z->valueint >= 1 &&
		    z->valueint <= DIFFUSERS_MAX_WAN_Z)
			wan_latents_stats(j[1], z->valueint, seed);
	}
	/* upstream's rules on the result, naming the --set that broke one */
	if (rc == LQ_OK)
		rc = diffusers_parse_wan_transformer(j[0], "--set transformer",
		    &tc, err);
	if (rc == LQ_OK)
		rc = diffusers_parse_wan_vae(j[1], "--set vae", &vc, err);
	if (rc == LQ_OK)
		rc = new_dir(dir, err);
	const char *subs[] = {"transformer", "vae", "scheduler"};
	for (size_t i = 0; rc == LQ_OK && i < LQ_ARRAY_LEN(subs); i++) {
		char *p = xasprintf("%s/%s", dir, subs[i]);
		rc = make_dir(p, err);
		free(p);
	}
	if (rc == LQ_OK) {
		/* as WanPipeline.save_pretrained writes it with
		 * text_encoder=None, tokenizer=None */
		cJSON *idx = cJSON_CreateObject();
		cJSON_AddStringToObject(idx, "_class_name", "WanPipeline");
		cJSON_AddStringToObject(idx, "_diffusers_version", "0.40.0.dev0");
		cJSON_AddNullToObject(idx, "boundary_ratio");
		cJSON_AddBoolToObject(idx, "expand_timesteps", 0);
		cJSON_AddItemToObject(idx, "scheduler", pair("diffusers",
		    "UniPCMultistepScheduler"));
		static const char *const none[] = {"text_encoder", "tokenizer",
		    "transformer_2"};
		for (size_t i = 0; i < LQ_ARRAY_LEN(none); i++) {
			cJSON *a = cJSON_CreateArray();
			cJSON_AddItemToArray(a, cJSON_CreateNull());
			cJSON_AddItemToArray(a, cJSON_CreateNull());
			cJSON_AddItemToObject(idx, none[i], a);
		}
		cJSON_AddItemToObject(idx, "transformer", pair("diffusers",
		    "WanTransformer3DModel"));
		cJSON_AddItemToObject(idx, "vae", pair("diffusers",
		    "AutoencoderKLWan"));
		rc = write_json(dir, "model_index.json", idx, err);
	}
	struct tensor_table t = {0};
	for (int c = 0; c < 2 && rc == LQ_OK; c++) {
		char *sub = xasprintf("%s/%s", dir, subs[c]);
		char *wp = xasprintf("%s/diffusion_pytorch_model.safetensors",
		    sub);
		if (c == 0)
			expected_wan_transformer(&tc, &t);
		else
			expected_wan_vae(&vc, &t);
		cJSON_AddStringToObject(j[c], "_class_name", c == 0 ?
		    "WanTransformer3DModel" : "AutoencoderKLWan");
		cJSON_AddStringToObject(j[c], "_diffusers_version",
		    "0.40.0.dev0");
		rc = write_json(sub, "config.json", j[c], err);
		j[c] = NULL;
		if (rc == LQ_OK)
			rc = write_weights(wp, &t, seed, o, err);
		free(sub);
		free(wp);
	}
	tensor_table_free(&t);
	cJSON_Delete(j[0]);
	cJSON_Delete(j[1]);
	if (rc == LQ_OK) {
		char *sub = xasprintf("%s/scheduler", dir);
		rc = write_json(sub, "scheduler_config.json",
		    wan_scheduler_json(), err);
		free(sub);
	}
	if (rc == LQ_OK) {
		char *ep = xasprintf("%s/demo_prompt_embeds.safetensors", dir);
		rc = wan_demo_embeds(ep, tc.text_dim, seed, err);
		free(ep);
	}
	return rc;
}

enum lq_status
model_synth(const char *dir, const char *family, const char *preset, uint64_t seed,
    struct lq_error *err)
{
	static const struct model_synth_opts none = {.dtype = ST_F32};

	return model_synth_ex(dir, family, preset, seed, &none, err);
}

static enum lq_status synth_ltx2(const char *dir, const char *preset,
    uint64_t seed, const struct model_synth_opts *o, struct lq_error *err);

enum lq_status
model_synth_ex(const char *dir, const char *family, const char *preset,
    uint64_t seed, const struct model_synth_opts *o, struct lq_error *err)
{
	if (strcmp(family, "ltx2") == 0)
		return synth_ltx2(dir, preset, seed, o, err);
	struct ltxv_transformer_config tc;
	struct ltxv_vae_config vc;
	struct t5_config cc;
	cJSON *pj[3];
	if (strcmp(family, "wan") == 0)
		return synth_wan(dir, preset, seed, o, err);
	if (preset_json(family, preset, pj) != 0) {
		error_set(err, LQ_FAILED, "LQ-MODEL-030", "no preset \"%s\" for family \"%s\"",
		    preset, family);
		error_set_hint(err, "family ltxv, preset tiny, small, 0.9.1-2b, "
		    "0.9.5-2b or 0.9.7-13b; family ltx2, preset tiny, demo or "
		    "demo-bwe; family wan, preset tiny or demo");
		return LQ_FAILED;
	}
	enum lq_status sst = apply_sets(pj, o, &tc, &vc, &cc, err);
	for (int i = 0; i < 3; i++)
		cJSON_Delete(pj[i]);
	if (sst != LQ_OK)
		return sst;
	if (new_dir(dir, err) != LQ_OK)
		return LQ_FAILED;
	const char *subs[] = {"transformer", "vae", "text_encoder", "tokenizer", "scheduler"};
	for (size_t i = 0; i < LQ_ARRAY_LEN(subs); i++) {
		char *p = xasprintf("%s/%s", dir, subs[i]);
		enum lq_status rc = make_dir(p, err);
		free(p);
		if (rc != LQ_OK)
			return rc;
	}
	cJSON *idx = cJSON_CreateObject();
	cJSON_AddStringToObject(idx, "_class_name", "LTXPipeline");
	cJSON_AddStringToObject(idx, "_diffusers_version", "0.40.0.dev0");
	cJSON_AddItemToObject(idx, "scheduler", pair("diffusers", "FlowMatchEulerDiscreteScheduler"));
	cJSON_AddItemToObject(idx, "text_encoder", pair("transformers", "T5EncoderModel"));
	cJSON_AddItemToObject(idx, "tokenizer", pair("transformers", "T5Tokenizer"));
	cJSON_AddItemToObject(idx, "transformer", pair("diffusers", "LTXVideoTransformer3DModel"));
	cJSON_AddItemToObject(idx, "vae", pair("diffusers", "AutoencoderKLLTXVideo"));
	if (write_json(dir, "model_index.json", idx, err) != LQ_OK)
		return LQ_FAILED;

	struct tensor_table t = {0};
	enum lq_status rc = LQ_OK;
	char *sub = xasprintf("%s/transformer", dir);
	char *wp = xasprintf("%s/diffusion_pytorch_model.safetensors", sub);
	expected_ltxv_transformer(&tc, &t);
	if (write_json(sub, "config.json", diffusers_transformer_to_json(&tc), err) != LQ_OK ||
	    write_weights(wp, &t, seed, o, err) != LQ_OK)
		rc = LQ_FAILED;
	free(sub);
	free(wp);
	if (rc == LQ_OK) {
		sub = xasprintf("%s/vae", dir);
		wp = xasprintf("%s/diffusion_pytorch_model.safetensors", sub);
		expected_ltxv_vae(&vc, &t);
		if (write_json(sub, "config.json", diffusers_vae_to_json(&vc), err) != LQ_OK ||
		    write_weights(wp, &t, seed, o, err) != LQ_OK)
			rc = LQ_FAILED;
		free(sub);
		free(wp);
	}
	if (rc == LQ_OK) {
		sub = xasprintf("%s/text_encoder", dir);
		wp = xasprintf("%s/model.safetensors", sub);
		expected_t5_encoder(&cc, &t);
		if (write_json(sub, "config.json", diffusers_t5_to_json(&cc), err) != LQ_OK ||
		    write_weights(wp, &t, seed, o, err) != LQ_OK)
			rc = LQ_FAILED;
		free(sub);
		free(wp);
	}
	tensor_table_free(&t);
	if (rc == LQ_OK) {
		sub = xasprintf("%s/tokenizer", dir);
		rc = write_tokenizer(sub, err);
		free(sub);
	}
	if (rc == LQ_OK) {
		sub = xasprintf("%s/scheduler", dir);
		rc = write_json(sub, "scheduler_config.json", scheduler_json(), err);
		free(sub);
	}
	return rc;
}

/* ---- LTX-2 (LTX2Pipeline) ---- */

/*
 * The LTX-2 presets' components, each as its config.json (what
 * save_pretrained writes, less _class_name / _diffusers_version), chosen
 * so that the audio lasts as long as the video: the audio VAE's mel frames
 * are mel_hop_length / sample_rate = 160 / 16000 s (10 ms), and the
 * vocoder's upsample_factors multiply to that in samples at its
 * output_sampling_rate (240 at 24 kHz, as LTX-2's 6·5·2·2·2; for the BWE
 * vocoder 160 at its 16 kHz stage 1, then x3 to 48 kHz), every kernel -
 * factor even so that each ConvTranspose1d gives exactly T x factor
 * samples.  The audio VAE's base_channels = latent_channels x mel_bins / 4
 * (the packed latents' statistics) = the transformer's audio_in_channels;
 * the VAE's latent_channels its in_channels and its compression the
 * transformer's vae_scale_factors; the connectors' caption_channels its
 * caption_channels.  Both presets take the goldens' prompt_embeds
 * (caption_channels 32 x text_proj_in_factor 3 = 96 features).
 */
#define L2_CONNECTORS \
	"{\"caption_channels\": 32, \"text_proj_in_factor\": 3," \
	" \"video_connector_num_attention_heads\": 4," \
	" \"video_connector_attention_head_dim\": 8, \"video_connector_num_layers\": 2," \
	" \"video_connector_num_learnable_registers\": 4, \"video_gated_attn\": false," \
	" \"audio_connector_num_attention_heads\": 4," \
	" \"audio_connector_attention_head_dim\": 8, \"audio_connector_num_layers\": 2," \
	" \"audio_connector_num_learnable_registers\": 4, \"audio_gated_attn\": false," \
	" \"connector_rope_base_seq_len\": 32, \"rope_theta\": 10000.0," \
	" \"rope_double_precision\": true, \"causal_temporal_positioning\": false," \
	" \"rope_type\": \"interleaved\", \"per_modality_projections\": false," \
	" \"video_hidden_dim\": 4096, \"audio_hidden_dim\": 2048, \"proj_bias\": false}"
#define L2_TRANSFORMER(IN, HEADS, HD, AIN, AHEADS, AHD, LAYERS, VSF) \
	"{\"in_channels\": " #IN ", \"out_channels\": " #IN ", \"patch_size\": 1," \
	" \"patch_size_t\": 1, \"num_attention_heads\": " #HEADS "," \
	" \"attention_head_dim\": " #HD ", \"cross_attention_dim\": " \
	"(" #HEADS "*" #HD ")," \
	" \"vae_scale_factors\": " VSF ", \"pos_embed_max_pos\": 20," \
	" \"base_height\": 2048, \"base_width\": 2048, \"gated_attn\": false," \
	" \"cross_attn_mod\": false, \"audio_in_channels\": " #AIN "," \
	" \"audio_out_channels\": " #AIN ", \"audio_patch_size\": 1," \
	" \"audio_patch_size_t\": 1, \"audio_num_attention_heads\": " #AHEADS "," \
	" \"audio_attention_head_dim\": " #AHD "," \
	" \"audio_cross_attention_dim\": (" #AHEADS "*" #AHD ")," \
	" \"audio_scale_factor\": 4, \"audio_pos_embed_max_pos\": 20," \
	" \"audio_sampling_rate\": 16000, \"audio_hop_length\": 160," \
	" \"audio_gated_attn\": false, \"audio_cross_attn_mod\": false," \
	" \"num_layers\": " #LAYERS ", \"activation_fn\": \"gelu-approximate\"," \
	" \"qk_norm\": \"rms_norm_across_heads\", \"norm_elementwise_affine\": false," \
	" \"norm_eps\": 1e-06, \"caption_channels\": 32, \"attention_bias\": true," \
	" \"attention_out_bias\": true, \"rope_theta\": 10000.0," \
	" \"rope_double_precision\": true, \"causal_offset\": 1," \
	" \"timestep_scale_multiplier\": 1000," \
	" \"cross_attn_timestep_scale_multiplier\": 1000, \"rope_type\": \"interleaved\"," \
	" \"use_prompt_embeddings\": true, \"perturbed_attn\": true, \"ff_bias\": true," \
	" \"audio_ff_bias\": true, \"use_prompt_adaln_single\": true," \
	" \"use_keyframes_abs_pos_embedding\": false}"
/* the goldens' vae_a: compression 16 x 4 */
#define L2_VAE_TINY \
	"{\"in_channels\": 3, \"out_channels\": 3, \"latent_channels\": 8," \
	" \"block_out_channels\": [8, 8], \"down_block_types\": [\"LTX2VideoDownBlock3D\"," \
	" \"LTX2VideoDownBlock3D\"], \"decoder_block_out_channels\": [16, 24]," \
	" \"layers_per_block\": [1, 1, 1], \"decoder_layers_per_block\": [1, 1, 1]," \
	" \"spatio_temporal_scaling\": [true, true]," \
	" \"decoder_spatio_temporal_scaling\": [true, true]," \
	" \"decoder_inject_noise\": [false, false, false]," \
	" \"downsample_type\": [\"spatiotemporal\", \"spatiotemporal\"]," \
	" \"upsample_type\": [\"spatiotemporal\", \"spatiotemporal\"]," \
	" \"upsample_residual\": [true, true], \"upsample_factor\": [1, 2]," \
	" \"timestep_conditioning\": false, \"patch_size\": 4, \"patch_size_t\": 1," \
	" \"resnet_norm_eps\": 1e-06, \"scaling_factor\": 1.0, \"encoder_causal\": true," \
	" \"decoder_causal\": false, \"encoder_spatial_padding_mode\": \"zeros\"," \
	" \"decoder_spatial_padding_mode\": \"reflect\"}"
/* LTX-2's geometry (compression 32 x 8, three x2 upsamplers that halve the
 * channels), narrow */
#define L2_VAE_DEMO \
	"{\"in_channels\": 3, \"out_channels\": 3, \"latent_channels\": 16," \
	" \"block_out_channels\": [16, 32, 64], \"down_block_types\":" \
	" [\"LTX2VideoDownBlock3D\", \"LTX2VideoDownBlock3D\", \"LTX2VideoDownBlock3D\"]," \
	" \"decoder_block_out_channels\": [16, 32, 64]," \
	" \"layers_per_block\": [1, 1, 1, 1], \"decoder_layers_per_block\": [1, 1, 1, 1]," \
	" \"spatio_temporal_scaling\": [true, true, true]," \
	" \"decoder_spatio_temporal_scaling\": [true, true, true]," \
	" \"decoder_inject_noise\": [false, false, false, false]," \
	" \"downsample_type\": [\"spatiotemporal\", \"spatiotemporal\", \"spatiotemporal\"]," \
	" \"upsample_type\": [\"spatiotemporal\", \"spatiotemporal\", \"spatiotemporal\"]," \
	" \"upsample_residual\": [true, true, true], \"upsample_factor\": [2, 2, 2]," \
	" \"timestep_conditioning\": false, \"patch_size\": 4, \"patch_size_t\": 1," \
	" \"resnet_norm_eps\": 1e-06, \"scaling_factor\": 1.0, \"encoder_causal\": true," \
	" \"decoder_causal\": false, \"encoder_spatial_padding_mode\": \"zeros\"," \
	" \"decoder_spatial_padding_mode\": \"reflect\"}"
#define L2_AUDIO_VAE(BASE, LATENT, MEL) \
	"{\"base_channels\": " #BASE ", \"output_channels\": 2, \"ch_mult\": [1, 2, 4]," \
	" \"num_res_blocks\": 1, \"attn_resolutions\": null, \"in_channels\": 2," \
	" \"resolution\": 32, \"latent_channels\": " #LATENT "," \
	" \"norm_type\": \"pixel\", \"causality_axis\": \"height\", \"dropout\": 0.0," \
	" \"mid_block_add_attention\": false, \"sample_rate\": 16000," \
	" \"mel_hop_length\": 160, \"is_causal\": true, \"mel_bins\": " #MEL "," \
	" \"double_z\": true}"
/* LTX2Vocoder, 240 samples per mel frame at 24 kHz */
#define L2_VOCODER(IN, HIDDEN) \
	"{\"in_channels\": " #IN ", \"hidden_channels\": " #HIDDEN ", \"out_channels\": 2," \
	" \"upsample_kernel_sizes\": [12, 11, 8, 4], \"upsample_factors\": [6, 5, 4, 2]," \
	" \"resnet_kernel_sizes\": [3, 5], \"resnet_dilations\": [[1, 3], [1, 2]]," \
	" \"act_fn\": \"leaky_relu\", \"leaky_relu_negative_slope\": 0.1," \
	" \"antialias\": false, \"antialias_ratio\": 2, \"antialias_kernel_size\": 12," \
	" \"final_act_fn\": \"tanh\", \"final_bias\": true, \"output_sampling_rate\": 24000}"
/* LTX2VocoderWithBWE (LTX-2.3's layout): stage 1 160 samples per mel frame
 * at 16 kHz (snakebeta, anti-aliased), its log-mel (hop 16), the BWE
 * generator x48 on it = hop x the rate ratio 3, to 48 kHz */
#define L2_VOCODER_BWE(IN) \
	"{\"in_channels\": " #IN ", \"hidden_channels\": 32, \"out_channels\": 2," \
	" \"upsample_kernel_sizes\": [11, 8, 8, 4], \"upsample_factors\": [5, 4, 4, 2]," \
	" \"resnet_kernel_sizes\": [3], \"resnet_dilations\": [[1, 3]]," \
	" \"act_fn\": \"snakebeta\", \"leaky_relu_negative_slope\": 0.1," \
	" \"antialias\": true, \"antialias_ratio\": 2, \"antialias_kernel_size\": 12," \
	" \"final_act_fn\": null, \"final_bias\": false," \
	" \"bwe_in_channels\": 32, \"bwe_hidden_channels\": 32, \"bwe_out_channels\": 2," \
	" \"bwe_upsample_kernel_sizes\": [8, 8, 7], \"bwe_upsample_factors\": [4, 4, 3]," \
	" \"bwe_resnet_kernel_sizes\": [3], \"bwe_resnet_dilations\": [[1, 2]]," \
	" \"bwe_act_fn\": \"snakebeta\", \"bwe_leaky_relu_negative_slope\": 0.1," \
	" \"bwe_antialias\": true, \"bwe_antialias_ratio\": 2," \
	" \"bwe_antialias_kernel_size\": 12, \"bwe_final_act_fn\": null," \
	" \"bwe_final_bias\": false, \"filter_length\": 64, \"hop_length\": 16," \
	" \"window_length\": 64, \"num_mel_channels\": 16," \
	" \"input_sampling_rate\": 16000, \"output_sampling_rate\": 48000}"

/* component order of model_index.json / the --set names */
enum { L2_T, L2_C, L2_V, L2_A, L2_VOC, L2_N };
static const char *const l2_names[L2_N] = {
	"transformer", "connectors", "vae", "audio_vae", "vocoder",
};

static const struct {
	const char *name;
	const char *json[L2_N];
	int bwe;
} l2_presets[] = {
	/* the goldens' transformer, connectors widths, VAE and audio VAE,
	 * with a vocoder of the real hop */
	{"tiny", {L2_TRANSFORMER(8, 4, 16, 8, 4, 8, 2, "[4, 16, 16]"),
	    L2_CONNECTORS, L2_VAE_TINY, L2_AUDIO_VAE(8, 2, 16),
	    L2_VOCODER(32, 32)}, 0},
	{"demo", {L2_TRANSFORMER(16, 4, 32, 16, 4, 16, 4, "[8, 32, 32]"),
	    L2_CONNECTORS, L2_VAE_DEMO, L2_AUDIO_VAE(16, 2, 32),
	    L2_VOCODER(64, 64)}, 0},
	{"demo-bwe", {L2_TRANSFORMER(16, 4, 32, 16, 4, 16, 4, "[8, 32, 32]"),
	    L2_CONNECTORS, L2_VAE_DEMO, L2_AUDIO_VAE(16, 2, 32),
	    L2_VOCODER_BWE(64)}, 1},
};

/* The macros' "(H*D)" products, evaluated (JSON has no arithmetic). */
static char *
l2_eval_products(const char *t)
{
	struct strbuf sb = {0};
	for (const char *p = t; *p; p++) {
		int a, b, n = 0;
		if (*p == '(' && sscanf(p, "(%d*%d)%n", &a, &b, &n) == 2 && n > 0) {
			char num[24];
			int len = snprintf(num, sizeof(num), "%d", a * b);
			strbuf_append(&sb, num, (size_t)len);
			p += n - 1;
		} else {
			strbuf_append(&sb, p, 1);
		}
	}
	strbuf_append(&sb, "", 1);
	return sb.buf;
}

/* Kaiser-windowed sinc low-pass of vocoder.py kaiser_sinc_filter1d
 * (cutoff 0.5 / ratio, half_width 0.6 / ratio), as UpSample1d and
 * DownSample1d of AntiAliasAct1d build it; torch.kaiser_window
 * (periodic=False) with I0 from its series. */
static double
bessel_i0(double x)
{
	double sum = 1, term = 1;
	for (int k = 1; k < 64; k++) {
		term *= (x / (2.0 * k)) * (x / (2.0 * k));
		sum += term;
		if (term < 1e-17 * sum)
			break;
	}
	return sum;
}

static void
kaiser_sinc(int ratio, int K, float *f)
{
	double cutoff = 0.5 / ratio, half_width = 0.6 / ratio;
	double delta_f = 4 * half_width;
	int half = K / 2, even = K % 2 == 0;
	double A = 2.285 * (half - 1) * M_PI * delta_f + 7.95, beta;
	double sum = 0, *v = xmalloc(sizeof(double) * (size_t)K);

	if (A > 50.0)
		beta = 0.1102 * (A - 8.7);
	else if (A >= 21.0)
		beta = 0.5842 * pow(A - 21, 0.4) + 0.07886 * (A - 21.0);
	else
		beta = 0.0;
	for (int i = 0; i < K; i++) {
		double r = K > 1 ? 2.0 * i / (K - 1) - 1.0 : 0.0;
		double w = bessel_i0(beta * sqrt(1.0 - r * r)) / bessel_i0(beta);
		double t = 2 * cutoff * (even ? (double)(i - half) + 0.5 :
		    (double)(i - half));
		double sinc = t == 0 ? 1.0 : sin(M_PI * t) / M_PI / t;
		v[i] = 2 * cutoff * w * sinc;
		sum += v[i];
	}
	for (int i = 0; i < K; i++)
		f[i] = (float)(v[i] / sum);
	free(v);
}

struct l2_fill {
	const struct ltx2_vocoder_config *voc;		/* plain or stage 1 */
	const struct ltx2_vocoder_bwe_config *bwe;	/* NULL: plain */
};

/*
 * The vocoder's computed buffers: the anti-aliasing filters (upstream
 * computes them at init and saves them), and for the BWE vocoder's MelSTFT
 * (zeros at upstream's init, loaded from the checkpoint) a Hann-windowed
 * DFT basis (rows: real parts, then imaginary) and a random non-negative
 * mel matrix (each row summing to 1).
 */
static int
l2_fill_special(const struct tensor_spec *sp, const void *ud, uint64_t seed,
    float *v, size_t n)
{
	const struct l2_fill *lf = ud;
	const char *nm = sp->name;

	if (ends(nm, "sample.filter")) {
		const struct ltx2_vocoder_config *c = lf->voc;
		if (lf->bwe && strncmp(nm, "bwe_generator.", 14) == 0)
			c = &lf->bwe->bwe_generator;
		kaiser_sinc(c->antialias_ratio, (int)n, v);
		return 1;
	}
	if (lf->bwe == NULL)
		return 0;
	if (ends(nm, "forward_basis") || ends(nm, "inverse_basis")) {
		int N = lf->bwe->filter_length, W = lf->bwe->window_length;
		int nf = N / 2 + 1;
		for (int k = 0; k < 2 * nf; k++)
			for (int i = 0; i < N; i++) {
				double w = i < W ? 0.5 - 0.5 * cos(2 * M_PI * i / W) : 0;
				double a = 2 * M_PI * (k % nf) * i / N;
				v[(size_t)k * N + i] = (float)(w * (k < nf ? cos(a) :
				    -sin(a)));
			}
		return 1;
	}
	if (ends(nm, "mel_basis")) {
		uint64_t s = seed ^ fnv1a(nm);
		size_t cols = (size_t)sp->shape[1];
		for (size_t r = 0; r < n / cols; r++) {
			double sum = 0;
			for (size_t c = 0; c < cols; c++)
				sum += v[r * cols + c] = (float)uniform(&s);
			for (size_t c = 0; c < cols; c++)
				v[r * cols + c] = (float)(v[r * cols + c] / sum);
		}
		return 1;
	}
	return 0;
}

/* "component.key=JSON" on the preset's configs: key one the preset's
 * config.json has (LQ-MODEL-032 otherwise). */
static enum lq_status
l2_apply_sets(cJSON *j[L2_N], const struct model_synth_opts *o,
    struct lq_error *err)
{
	for (size_t i = 0; i < o->nsets; i++) {
		const char *a = o->sets[i], *dot = strchr(a, '.');
		const char *eq = dot ? strchr(dot, '=') : NULL;
		int c = -1;

		for (int k = 0; dot && k < L2_N; k++)
			if (strlen(l2_names[k]) == (size_t)(dot - a) &&
			    strncmp(a, l2_names[k], (size_t)(dot - a)) == 0)
				c = k;
		if (c < 0 || eq == NULL || eq == dot + 1) {
			error_set(err, LQ_FAILED, "LQ-MODEL-032",
			    "--set %s: not COMPONENT.KEY=JSON", a);
			error_set_hint(err, "COMPONENT is transformer, connectors, "
			    "vae, audio_vae or vocoder, e.g. --set "
			    "transformer.num_layers=1");
			return LQ_FAILED;
		}
		char *key = xstrndup(dot + 1, (size_t)(eq - dot - 1));
		cJSON *v = cJSON_Parse(eq + 1);
		enum lq_status st = LQ_OK;
		if (cJSON_GetObjectItemCaseSensitive(j[c], key) == NULL) {
			st = error_set(err, LQ_FAILED, "LQ-MODEL-032",
			    "--set %s: %s/config.json has no key \"%s\"", a,
			    l2_names[c], key);
			error_set_hint(err, "a key of the preset's %s/config.json, "
			    "e.g. %s", l2_names[c], c == L2_T ? "num_layers" :
			    c == L2_V ? "decoder_block_out_channels" :
			    c == L2_VOC ? "hidden_channels" : "base_channels");
		} else if (v == NULL) {
			st = error_set(err, LQ_FAILED, "LQ-MODEL-032",
			    "--set %s: \"%s\" is not JSON", a, eq + 1);
			error_set_hint(err, "numbers as 8, lists as [8,16], "
			    "strings quoted: '\"snakebeta\"'");
		} else {
			cJSON_ReplaceItemInObjectCaseSensitive(j[c], key, v);
			v = NULL;
		}
		cJSON_Delete(v);
		free(key);
		if (st != LQ_OK)
			return st;
	}
	return LQ_OK;
}

static enum lq_status
synth_ltx2(const char *dir, const char *preset, uint64_t seed,
    const struct model_synth_opts *o, struct lq_error *err)
{
	static const char *const classes[L2_N] = {
		"LTX2VideoTransformer3DModel", "LTX2TextConnectors",
		"AutoencoderKLLTX2Video", "AutoencoderKLLTX2Audio", "LTX2Vocoder",
	};
	int p = -1;
	for (size_t i = 0; i < LQ_ARRAY_LEN(l2_presets); i++)
		if (strcmp(preset, l2_presets[i].name) == 0)
			p = (int)i;
	if (p < 0) {
		error_set(err, LQ_FAILED, "LQ-MODEL-030", "no preset \"%s\" for "
		    "family \"ltx2\"", preset);
		error_set_hint(err, "family ltx2, preset tiny, demo or demo-bwe");
		return LQ_FAILED;
	}
	cJSON *j[L2_N];
	for (int c = 0; c < L2_N; c++) {
		char *t = l2_eval_products(l2_presets[p].json[c]);
		j[c] = cJSON_Parse(t);
		free(t);
		LQ_ASSERT(j[c] != NULL);
		const char *cls = c == L2_VOC && l2_presets[p].bwe ?
		    "LTX2VocoderWithBWE" : classes[c];
		cJSON_AddStringToObject(j[c], "_class_name", cls);
		cJSON_AddStringToObject(j[c], "_diffusers_version", "0.40.0.dev0");
	}
	/* the configs as upstream's __init__ takes them (and latentq), then
	 * each component's tensor table */
	struct ltx2_transformer_config tc;
	struct ltx2_connectors_config cc;
	struct ltxv_vae_config vc;
	struct ltx2_audio_vae_config ac;
	struct ltx2_vocoder_config voc;
	struct ltx2_vocoder_bwe_config bwe;
	enum lq_status st = l2_apply_sets(j, o, err);
	if (st == LQ_OK)
		st = diffusers_parse_ltx2_transformer(j[L2_T], "--set transformer",
		    &tc, err);
	if (st == LQ_OK)
		st = diffusers_parse_ltx2_connectors(j[L2_C], "--set connectors",
		    &cc, err);
	if (st == LQ_OK)
		st = diffusers_parse_vae(j[L2_V], "--set vae", &vc, err);
	if (st == LQ_OK)
		st = diffusers_parse_ltx2_audio_vae(j[L2_A], "--set audio_vae", &ac,
		    err);
	if (st == LQ_OK && l2_presets[p].bwe) {
		st = diffusers_parse_ltx2_vocoder_bwe(j[L2_VOC], "--set vocoder",
		    &bwe, err);
		voc = bwe.vocoder;
	} else if (st == LQ_OK) {
		st = diffusers_parse_ltx2_vocoder(j[L2_VOC], "--set vocoder", &voc,
		    err);
	}
	if (st == LQ_OK)
		st = new_dir(dir, err);
	if (st != LQ_OK) {
		for (int c = 0; c < L2_N; c++)
			cJSON_Delete(j[c]);
		return st;
	}
	cJSON *idx = cJSON_CreateObject();
	cJSON_AddStringToObject(idx, "_class_name", "LTX2Pipeline");
	cJSON_AddStringToObject(idx, "_diffusers_version", "0.40.0.dev0");
	cJSON_AddItemToObject(idx, "audio_vae", pair("diffusers", classes[L2_A]));
	cJSON_AddItemToObject(idx, "connectors", pair("diffusers", classes[L2_C]));
	cJSON_AddItemToObject(idx, "scheduler", pair("diffusers",
	    "FlowMatchEulerDiscreteScheduler"));
	/* no Gemma 3: the jobs give prompt_embeds */
	cJSON *none = cJSON_CreateArray();
	cJSON_AddItemToArray(none, cJSON_CreateNull());
	cJSON_AddItemToArray(none, cJSON_CreateNull());
	cJSON_AddItemToObject(idx, "text_encoder", none);
	cJSON_AddItemToObject(idx, "tokenizer", cJSON_Duplicate(none, 1));
	cJSON_AddItemToObject(idx, "transformer", pair("diffusers", classes[L2_T]));
	cJSON_AddItemToObject(idx, "vae", pair("diffusers", classes[L2_V]));
	cJSON_AddItemToObject(idx, "vocoder", pair("diffusers",
	    l2_presets[p].bwe ? "LTX2VocoderWithBWE" : classes[L2_VOC]));
	st = write_json(dir, "model_index.json", idx, err);
	struct l2_fill lf = {&voc, l2_presets[p].bwe ? &bwe : NULL};
	struct tensor_table t = {0};
	for (int c = 0; c < L2_N; c++) {
		char *sub = xasprintf("%s/%s", dir, l2_names[c]);
		char *wp = xasprintf("%s/diffusion_pytorch_model.safetensors", sub);
		if (c == L2_T)
			expected_ltx2_transformer(&tc, &t);
		else if (c == L2_C)
			expected_ltx2_connectors(&cc, &t);
		else if (c == L2_V)
			expected_ltxv_vae(&vc, &t);
		else if (c == L2_A)
			expected_ltx2_audio_vae(&ac, &t);
		else if (l2_presets[p].bwe)
			expected_ltx2_vocoder_bwe(&bwe, &t);
		else
			expected_ltx2_vocoder(&voc, &t);
		if (st == LQ_OK)
			st = make_dir(sub, err);
		if (st == LQ_OK) {
			st = write_json(sub, "config.json", j[c], err);
			j[c] = NULL;
		}
		if (st == LQ_OK)
			st = write_weights_ex(wp, &t, seed, o, l2_fill_special, &lf,
			    err);
		cJSON_Delete(j[c]);
		free(sub);
		free(wp);
	}
	tensor_table_free(&t);
	if (st == LQ_OK) {
		char *sub = xasprintf("%s/scheduler", dir);
		if ((st = make_dir(sub, err)) == LQ_OK)
			st = write_json(sub, "scheduler_config.json",
			    scheduler_json(), err);
		free(sub);
	}
	return st;
}
