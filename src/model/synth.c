/*
 * synth.c — deterministic random LTX-Video models in diffusers layout (see
 * synth.h).
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

static enum lq_status
make_dir(const char *path, struct lq_error *err)
{
	if (mkdir(path, 0777) != 0 && errno != EEXIST)
		return io_fail(err, path, "cannot create folder");
	return LQ_OK;
}

static enum lq_status
write_weights(const char *path, const struct tensor_table *t, uint64_t seed,
    const struct model_synth_opts *o, struct lq_error *err)
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
	if (rc == LQ_OK && (rc = make_dir(dir, err)) == LQ_OK) {
		DIR *d = opendir(dir);
		struct dirent *de;
		int empty = 1;
		if (d == NULL) {
			rc = io_fail(err, dir, "cannot open folder");
		} else {
			while ((de = readdir(d)) != NULL)
				if (strcmp(de->d_name, ".") != 0 &&
				    strcmp(de->d_name, "..") != 0)
					empty = 0;
			closedir(d);
			if (!empty) {
				error_set(err, LQ_FAILED, "LQ-MODEL-031",
				    "folder is not empty");
				error_set_where(err, dir, 0, 0);
				error_set_hint(err, "give a new or empty folder");
				rc = LQ_FAILED;
			}
		}
	}
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

enum lq_status
model_synth_ex(const char *dir, const char *family, const char *preset,
    uint64_t seed, const struct model_synth_opts *o, struct lq_error *err)
{
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
		    "0.9.5-2b or 0.9.7-13b; family wan, preset tiny or demo");
		return LQ_FAILED;
	}
	enum lq_status sst = apply_sets(pj, o, &tc, &vc, &cc, err);
	for (int i = 0; i < 3; i++)
		cJSON_Delete(pj[i]);
	if (sst != LQ_OK)
		return sst;
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
