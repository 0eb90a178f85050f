/*
 * diffusers.c — model_index.json and component configs into typed structs.
 *
 * Defaults mirror the upstream __init__ signatures (see diffusers.h); the
 * derived VAE decoder plan mirrors LTXVideoDecoder3d.__init__ in diffusers
 * autoencoder_kl_ltx.py (lists reversed, channels divided by the upsample
 * factor).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/json.h"
#include "core/util.h"
#include "model/diffusers.h"

#define DIFFUSERS_VERSION "0.40.0.dev0"
#define TRANSFORMERS_VERSION "4.44.0.dev0"

static enum lq_status
cfg_fail(struct lq_error *err, const char *path, const char *key, const char *code,
    const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static enum lq_status
cfg_fail(struct lq_error *err, const char *path, const char *key, const char *code,
    const char *fmt, ...)
{
	char msg[600];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (err == NULL)
		return LQ_FAILED;
	error_set(err, LQ_FAILED, code, "%s", msg);
	error_set_where(err, path, 0, 0);
	if (key)
		error_set_field(err, "%s", key);
	return LQ_FAILED;
}

enum lq_status
diffusers_load_json(const char *path, cJSON **out, struct lq_error *err)
{
	*out = NULL;
	size_t n;
	char *text = util_read_file(path, &n);
	if (text == NULL)
		return cfg_fail(err, path, NULL, "LQ-MODEL-001", "cannot read: %s",
		    util_strerror(errno));
	cJSON *j = json_parse_document(text, n);
	free(text);
	if (j == NULL)
		return cfg_fail(err, path, NULL, "LQ-MODEL-001", "not valid JSON");
	if (!cJSON_IsObject(j)) {
		cJSON_Delete(j);
		return cfg_fail(err, path, NULL, "LQ-MODEL-001", "not a JSON object");
	}
	*out = j;
	return LQ_OK;
}

/* ---- typed getters: absent or null gives the default ---- */

struct cfg {
	const cJSON *j;
	const char *path;
	struct lq_error *err;
	int failed;
};

static const cJSON *
cfg_item(struct cfg *c, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(c->j, key);
	return (v == NULL || cJSON_IsNull(v)) ? NULL : v;
}

static int
cfg_bad(struct cfg *c, const char *key, const char *what)
{
	if (!c->failed)
		cfg_fail(c->err, c->path, key, "LQ-MODEL-003", "\"%s\" must be %s", key, what);
	c->failed = 1;
	return 0;
}

static int
is_int(const cJSON *v)
{
	return cJSON_IsNumber(v) && v->valuedouble == floor(v->valuedouble) &&
	    fabs(v->valuedouble) < 2147483648.0;
}

static int
cfg_int(struct cfg *c, const char *key, int def, int min)
{
	const cJSON *v = cfg_item(c, key);
	if (v == NULL)
		return def;
	if (!is_int(v) || v->valuedouble < min) {
		char what[64];
		snprintf(what, sizeof(what), "an integer >= %d", min);
		return cfg_bad(c, key, what), def;
	}
	return (int)v->valuedouble;
}

static double
cfg_num(struct cfg *c, const char *key, double def, int positive)
{
	const cJSON *v = cfg_item(c, key);
	if (v == NULL)
		return def;
	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) ||
	    (positive && !(v->valuedouble > 0)))
		return cfg_bad(c, key, positive ? "a positive number" : "a number"), def;
	return v->valuedouble;
}

static int
cfg_bool(struct cfg *c, const char *key, int def)
{
	const cJSON *v = cfg_item(c, key);
	if (v == NULL)
		return def;
	if (!cJSON_IsBool(v))
		return cfg_bad(c, key, "true or false"), def;
	return cJSON_IsTrue(v);
}

static void
cfg_str(struct cfg *c, const char *key, const char *def, char *dst, size_t n)
{
	const cJSON *v = cfg_item(c, key);
	if (v != NULL && (!cJSON_IsString(v) || strlen(v->valuestring) >= n)) {
		cfg_bad(c, key, "a short string");
		v = NULL;
	}
	snprintf(dst, n, "%s", v ? v->valuestring : def);
}

/* kind: 'i' ints >= 1 (or >= 0 with allow0), 'b' bools, 's' strings */
static int
cfg_list(struct cfg *c, const char *key, char kind, int min, void *dst, size_t strsz,
    int max, const void *def, int ndef)
{
	const cJSON *v = cfg_item(c, key);
	if (v == NULL) {
		if (kind == 's')
			memcpy(dst, def, (size_t)ndef * strsz);
		else
			memcpy(dst, def, (size_t)ndef * sizeof(int));
		return ndef;
	}
	if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) > max || cJSON_GetArraySize(v) == 0) {
		char what[64];
		snprintf(what, sizeof(what), "a list of 1 to %d entries", max);
		return cfg_bad(c, key, what), 0;
	}
	int n = 0;
	const cJSON *e;
	cJSON_ArrayForEach(e, v) {
		if (kind == 'i') {
			if (!is_int(e) || e->valuedouble < min) {
				char what[64];
				snprintf(what, sizeof(what), "a list of integers >= %d", min);
				return cfg_bad(c, key, what), 0;
			}
			((int *)dst)[n] = (int)e->valuedouble;
		} else if (kind == 'b') {
			if (!cJSON_IsBool(e))
				return cfg_bad(c, key, "a list of true/false"), 0;
			((int *)dst)[n] = cJSON_IsTrue(e);
		} else {
			if (!cJSON_IsString(e) || strlen(e->valuestring) >= strsz)
				return cfg_bad(c, key, "a list of short strings"), 0;
			snprintf((char *)dst + (size_t)n * strsz, strsz, "%s", e->valuestring);
		}
		n++;
	}
	return n;
}

static enum lq_status
check_class(struct cfg *c, const char *want)
{
	const cJSON *v = cfg_item(c, "_class_name");
	if (v != NULL && (!cJSON_IsString(v) || strcmp(v->valuestring, want) != 0))
		return cfg_fail(c->err, c->path, "_class_name", "LQ-MODEL-002",
		    "class \"%s\" is not supported here (latentq implements %s)",
		    cJSON_IsString(v) ? v->valuestring : "?", want);
	return LQ_OK;
}

/* ---- latent upsampler ---- */

enum lq_status
diffusers_parse_latent_upsampler(const cJSON *j, const char *path,
    struct ltxv_upsampler_config *o, struct lq_error *err)
{
	struct cfg c = {j, path, err, 0};
	if (check_class(&c, "LTXLatentUpsamplerModel") != LQ_OK)
		return LQ_FAILED;
	memset(o, 0, sizeof(*o));
	o->in_channels = cfg_int(&c, "in_channels", 128, 1);
	o->mid_channels = cfg_int(&c, "mid_channels", 512, 1);
	o->num_blocks_per_stage = cfg_int(&c, "num_blocks_per_stage", 4, 0);
	o->dims = cfg_int(&c, "dims", 3, 2);
	o->spatial_upsample = cfg_bool(&c, "spatial_upsample", 1);
	o->temporal_upsample = cfg_bool(&c, "temporal_upsample", 0);
	if (c.failed)
		return LQ_FAILED;
	if (o->dims != 2 && o->dims != 3)
		return cfg_fail(err, path, "dims", "LQ-MODEL-003",
		    "dims %d is not 2 or 3", o->dims);
	if (!o->spatial_upsample && !o->temporal_upsample)
		return cfg_fail(err, path, "spatial_upsample", "LQ-MODEL-003",
		    "either spatial_upsample or temporal_upsample must be true");
	if (o->mid_channels % 32 != 0)
		return cfg_fail(err, path, "mid_channels", "LQ-MODEL-003",
		    "mid_channels %d is not a multiple of GroupNorm's 32 groups",
		    o->mid_channels);
	if (o->dims == 2 && o->temporal_upsample)
		return cfg_fail(err, path, "temporal_upsample", "LQ-MODEL-003",
		    "dims 2 with temporal_upsample cannot run upstream (its "
		    "Conv3d upsampler receives frames folded into the batch)");
	return LQ_OK;
}

/* ---- LTX-2 vocoder ---- */

/* One LTX2Vocoder's __init__ defaults: LTX2Vocoder's own, or those
 * LTX2VocoderWithBWE passes to its `vocoder` (stage 1) and `bwe_generator`. */
struct voc_defaults {
	int in_channels, hidden_channels, out_channels;
	int n_up;
	int uk[DIFFUSERS_MAX_VOCODER], uf[DIFFUSERS_MAX_VOCODER];
	const char *act_fn;
	int antialias;
	const char *final_act_fn;	/* "" = None */
	int final_bias, output_sampling_rate;
};

static const struct voc_defaults voc_ltx2 = {
	128, 1024, 2, 5, {16, 15, 8, 4, 4}, {6, 5, 2, 2, 2}, "leaky_relu", 0,
	"tanh", 1, 24000,
};
static const struct voc_defaults voc_bwe_stage1 = {
	128, 1536, 2, 6, {11, 4, 4, 4, 4, 4}, {5, 2, 2, 2, 2, 2}, "snakebeta", 1,
	"", 0, 16000,
};
static const struct voc_defaults voc_bwe_generator = {
	128, 512, 2, 5, {12, 11, 4, 4, 4}, {6, 5, 2, 2, 2}, "snakebeta", 1,
	"", 0, 48000,
};

/*
 * The keys of one LTX2Vocoder, each named `pre` + upstream's argument
 * ("" or LTX2VocoderWithBWE's "bwe_"); `rate_key` is the key whose value
 * becomes output_sampling_rate.  Checks as diffusers_parse_ltx2_vocoder.
 */
static enum lq_status
parse_vocoder_keys(const cJSON *j, const char *path, const char *pre,
    const char *rate_key, const struct voc_defaults *d,
    struct ltx2_vocoder_config *o, struct lq_error *err)
{
	static const int def_rk[] = {3, 7, 11};
	struct cfg c = {j, path, err, 0};
	const cJSON *dl, *e;
	char k[22][64];
	int nuf, ch;

#define KEY(i, name) (snprintf(k[i], sizeof(k[i]), "%s%s", pre, name), k[i])
	memset(o, 0, sizeof(*o));
	o->in_channels = cfg_int(&c, KEY(0, "in_channels"), d->in_channels, 1);
	o->hidden_channels = cfg_int(&c, KEY(1, "hidden_channels"),
	    d->hidden_channels, 1);
	o->out_channels = cfg_int(&c, KEY(2, "out_channels"), d->out_channels, 1);
	o->n_upsample = cfg_list(&c, KEY(3, "upsample_kernel_sizes"), 'i', 1,
	    o->upsample_kernel_sizes, 0, DIFFUSERS_MAX_VOCODER, d->uk, d->n_up);
	nuf = cfg_list(&c, KEY(4, "upsample_factors"), 'i', 1, o->upsample_factors,
	    0, DIFFUSERS_MAX_VOCODER, d->uf, d->n_up);
	o->n_resnets = cfg_list(&c, KEY(5, "resnet_kernel_sizes"), 'i', 1,
	    o->resnet_kernel_sizes, 0, DIFFUSERS_MAX_VOCODER, def_rk, 3);
	cfg_str(&c, KEY(6, "act_fn"), d->act_fn, o->act_fn, sizeof(o->act_fn));
	o->leaky_relu_negative_slope = cfg_num(&c,
	    KEY(7, "leaky_relu_negative_slope"), 0.1, 0);
	o->antialias = cfg_bool(&c, KEY(8, "antialias"), d->antialias);
	o->antialias_ratio = cfg_int(&c, KEY(9, "antialias_ratio"), 2, 1);
	o->antialias_kernel_size = cfg_int(&c, KEY(10, "antialias_kernel_size"),
	    12, 1);
	/* null is a valid value here (no final activation) */
	KEY(11, "final_act_fn");
	cfg_str(&c, k[11], cfg_item(&c, k[11]) == NULL &&
	    cJSON_GetObjectItemCaseSensitive(j, k[11]) != NULL ? "" :
	    d->final_act_fn, o->final_act_fn, sizeof(o->final_act_fn));
	o->final_bias = cfg_bool(&c, KEY(12, "final_bias"), d->final_bias);
	o->output_sampling_rate = cfg_int(&c, rate_key, d->output_sampling_rate, 1);
	if (c.failed)
		return LQ_FAILED;
	/* resnet_dilations: a list of lists, one per resnet kernel size */
	dl = cfg_item(&c, KEY(13, "resnet_dilations"));
	if (dl == NULL) {
		for (int i = 0; i < 3; i++) {
			o->n_resnet_dilations[i] = 3;
			o->resnet_dilations[i][0] = 1;
			o->resnet_dilations[i][1] = 3;
			o->resnet_dilations[i][2] = 5;
		}
		if (o->n_resnets != 3)
			return cfg_fail(err, path, k[13],
			    "LQ-MODEL-004", "%sresnet_kernel_sizes has %d entries "
			    "but the default %s has 3", pre, o->n_resnets, k[13]);
	} else {
		int n = 0;

		if (!cJSON_IsArray(dl) || cJSON_GetArraySize(dl) !=
		    o->n_resnets)
			return cfg_fail(err, path, k[13],
			    "LQ-MODEL-004", "%s must be a list of "
			    "%d lists (one per %sresnet_kernel_sizes entry)",
			    k[13], o->n_resnets, pre);
		cJSON_ArrayForEach(e, dl) {
			const cJSON *dd;
			int m = 0;

			if (!cJSON_IsArray(e) || cJSON_GetArraySize(e) < 1 ||
			    cJSON_GetArraySize(e) > DIFFUSERS_MAX_VOCODER)
				return cfg_fail(err, path, k[13],
				    "LQ-MODEL-003", "%s[%d] must be "
				    "a list of 1 to %d integers >= 1", k[13], n,
				    DIFFUSERS_MAX_VOCODER);
			cJSON_ArrayForEach(dd, e) {
				if (!is_int(dd) || dd->valuedouble < 1)
					return cfg_fail(err, path,
					    k[13], "LQ-MODEL-003",
					    "%s[%d][%d] must be an "
					    "integer >= 1", k[13], n, m);
				o->resnet_dilations[n][m++] = (int)dd->valuedouble;
			}
			o->n_resnet_dilations[n++] = m;
		}
	}
	if (nuf != o->n_upsample)
		return cfg_fail(err, path, k[4], "LQ-MODEL-004",
		    "%s has %d entries and %s "
		    "%d; they must be the same length", k[3], o->n_upsample,
		    k[4], nuf);
	if (strcmp(o->act_fn, "leaky_relu") != 0 &&
	    strcmp(o->act_fn, "snakebeta") != 0 && strcmp(o->act_fn, "snake") != 0)
		return cfg_fail(err, path, k[6], "LQ-MODEL-003",
		    "%s \"%s\" is not one of snakebeta, snake, leaky_relu",
		    k[6], o->act_fn);
	if (o->antialias && strcmp(o->act_fn, "leaky_relu") == 0)
		/* ResBlock's `act_fn =` typo nests the anti-alias wrappers of
		 * acts2; no released vocoder has this */
		return cfg_fail(err, path, k[8], "LQ-MODEL-006",
		    "%s true with %s \"leaky_relu\" (upstream nests its "
		    "anti-aliasing wrappers there) is not implemented; use "
		    "\"snakebeta\" or %s false", k[8], k[6], k[8]);
	if (o->antialias_kernel_size < o->antialias_ratio ||
	    o->antialias_kernel_size > 64)
		return cfg_fail(err, path, k[10], "LQ-MODEL-003",
		    "%s %d must be in %s (%d) .. 64", k[10],
		    o->antialias_kernel_size, k[9], o->antialias_ratio);
	if (o->final_act_fn[0] != '\0' && strcmp(o->final_act_fn, "tanh") != 0 &&
	    strcmp(o->final_act_fn, "clamp") != 0)
		/* upstream silently applies none for any other string */
		return cfg_fail(err, path, k[11], "LQ-MODEL-003",
		    "%s \"%s\" is not \"tanh\", \"clamp\" or null",
		    k[11], o->final_act_fn);
	ch = o->hidden_channels;
	o->hop = 1;
	for (int i = 0; i < o->n_upsample; i++) {
		if (o->upsample_kernel_sizes[i] < o->upsample_factors[i])
			return cfg_fail(err, path, k[3],
			    "LQ-MODEL-003", "%s[%d] = %d is "
			    "smaller than %s[%d] = %d (negative "
			    "ConvTranspose1d padding)", k[3], i,
			    o->upsample_kernel_sizes[i], k[4], i,
			    o->upsample_factors[i]);
		if (o->hop > (1 << 16) / o->upsample_factors[i])
			return cfg_fail(err, path, k[4],
			    "LQ-MODEL-003", "%s multiply to more "
			    "than 65536 samples per mel frame (LTX-2: 6*5*2*2*2 "
			    "= 240)", k[4]);
		o->hop *= o->upsample_factors[i];
		ch /= 2;
	}
	if (ch < 1)
		return cfg_fail(err, path, k[1], "LQ-MODEL-003",
		    "%s %d halves to 0 over %d upsamplers; use at "
		    "least %d", k[1], o->hidden_channels, o->n_upsample,
		    1 << o->n_upsample);
#undef KEY
	return LQ_OK;
}

enum lq_status
diffusers_parse_ltx2_vocoder(const cJSON *j, const char *path,
    struct ltx2_vocoder_config *o, struct lq_error *err)
{
	struct cfg c = {j, path, err, 0};
	const cJSON *cls = cfg_item(&c, "_class_name");

	if (cJSON_IsString(cls) && strcmp(cls->valuestring,
	    "LTX2VocoderWithBWE") == 0)
		return cfg_fail(err, path, "_class_name", "LQ-MODEL-002",
		    "LTX2VocoderWithBWE is not an LTX2Vocoder: its config has "
		    "the bwe_* keys (diffusers_parse_ltx2_vocoder_bwe reads it)");
	if (check_class(&c, "LTX2Vocoder") != LQ_OK)
		return LQ_FAILED;
	return parse_vocoder_keys(j, path, "", "output_sampling_rate", &voc_ltx2,
	    o, err);
}

int
diffusers_ltx2_vocoder_is_bwe(const cJSON *j)
{
	const cJSON *cls = cJSON_GetObjectItemCaseSensitive(j, "_class_name");

	return cJSON_IsString(cls) && strcmp(cls->valuestring,
	    "LTX2VocoderWithBWE") == 0;
}

enum lq_status
diffusers_parse_ltx2_vocoder_bwe(const cJSON *j, const char *path,
    struct ltx2_vocoder_bwe_config *o, struct lq_error *err)
{
	struct cfg c = {j, path, err, 0};
	enum lq_status st;

	if (check_class(&c, "LTX2VocoderWithBWE") != LQ_OK)
		return LQ_FAILED;
	memset(o, 0, sizeof(*o));
	if ((st = parse_vocoder_keys(j, path, "", "input_sampling_rate",
	    &voc_bwe_stage1, &o->vocoder, err)) ||
	    (st = parse_vocoder_keys(j, path, "bwe_", "output_sampling_rate",
	    &voc_bwe_generator, &o->bwe_generator, err)))
		return st;
	o->filter_length = cfg_int(&c, "filter_length", 512, 2);
	o->hop_length = cfg_int(&c, "hop_length", 80, 1);
	o->window_length = cfg_int(&c, "window_length", 512, 1);
	o->num_mel_channels = cfg_int(&c, "num_mel_channels", 64, 1);
	o->input_sampling_rate = o->vocoder.output_sampling_rate;
	o->output_sampling_rate = o->bwe_generator.output_sampling_rate;
	if (c.failed)
		return LQ_FAILED;
	/* the stage-1 waveform's channels, as mel channels, make the BWE
	 * generator's input: out_channels x num_mel_channels */
	if (o->vocoder.out_channels * o->num_mel_channels !=
	    o->bwe_generator.in_channels)
		return cfg_fail(err, path, "bwe_in_channels", "LQ-MODEL-003",
		    "bwe_in_channels %d is not out_channels %d x "
		    "num_mel_channels %d (the stage-1 waveform's log-mel)",
		    o->bwe_generator.in_channels, o->vocoder.out_channels,
		    o->num_mel_channels);
	if (o->output_sampling_rate % o->input_sampling_rate != 0 ||
	    o->output_sampling_rate < o->input_sampling_rate)
		return cfg_fail(err, path, "output_sampling_rate", "LQ-MODEL-003",
		    "output_sampling_rate %d is not a multiple of "
		    "input_sampling_rate %d (the resampler's integer ratio)",
		    o->output_sampling_rate, o->input_sampling_rate);
	if (o->bwe_generator.hop != o->hop_length *
	    (o->output_sampling_rate / o->input_sampling_rate))
		return cfg_fail(err, path, "bwe_upsample_factors", "LQ-MODEL-003",
		    "bwe_upsample_factors multiply to %d, not hop_length %d x "
		    "the rate ratio %d: the BWE residual and the resampled "
		    "waveform would differ in length", o->bwe_generator.hop,
		    o->hop_length, o->output_sampling_rate /
		    o->input_sampling_rate);
	if (o->window_length < o->hop_length)
		return cfg_fail(err, path, "window_length", "LQ-MODEL-003",
		    "window_length %d is below hop_length %d",
		    o->window_length, o->hop_length);
	return LQ_OK;
}

/* ---- LTX-2 audio VAE ---- */

enum lq_status
diffusers_parse_ltx2_audio_vae(const cJSON *j, const char *path,
    struct ltx2_audio_vae_config *o, struct lq_error *err)
{
	static const int def_mult[] = {1, 2, 4}, def_none[1] = {0};
	static const char *axes[] = {
		[LTX2_CAUSAL_NONE] = "none", [LTX2_CAUSAL_WIDTH] = "width",
		[LTX2_CAUSAL_HEIGHT] = "height",
		[LTX2_CAUSAL_WIDTH_COMPAT] = "width-compatibility",
	};
	struct cfg c = {j, path, err, 0};
	char norm[16], axis[32];
	int found = 0;

	if (check_class(&c, "AutoencoderKLLTX2Audio") != LQ_OK)
		return LQ_FAILED;
	memset(o, 0, sizeof(*o));
	o->base_channels = cfg_int(&c, "base_channels", 128, 1);
	o->output_channels = cfg_int(&c, "output_channels", 2, 1);
	o->n_ch_mult = cfg_list(&c, "ch_mult", 'i', 1, o->ch_mult, 0,
	    DIFFUSERS_MAX_BLOCKS, def_mult, 3);
	o->num_res_blocks = cfg_int(&c, "num_res_blocks", 2, 0);
	o->n_attn_resolutions = cfg_list(&c, "attn_resolutions", 'i', 1,
	    o->attn_resolutions, 0, DIFFUSERS_MAX_BLOCKS, def_none, 0);
	o->in_channels = cfg_int(&c, "in_channels", 2, 1);
	o->resolution = cfg_int(&c, "resolution", 256, 1);
	o->latent_channels = cfg_int(&c, "latent_channels", 8, 1);
	cfg_str(&c, "norm_type", "pixel", norm, sizeof(norm));
	o->mid_block_add_attention = cfg_bool(&c, "mid_block_add_attention", 0);
	o->sample_rate = cfg_int(&c, "sample_rate", 16000, 1);
	o->mel_hop_length = cfg_int(&c, "mel_hop_length", 160, 1);
	o->mel_bins = cfg_item(&c, "mel_bins") == NULL &&
	    cJSON_GetObjectItemCaseSensitive(j, "mel_bins") != NULL ? 0 :
	    cfg_int(&c, "mel_bins", 64, 1);
	(void)cfg_num(&c, "dropout", 0.0, 0);	/* eval: no effect */
	o->double_z = cfg_bool(&c, "double_z", 1);	/* the encoder's */
	(void)cfg_bool(&c, "is_causal", 1);	/* the patchifier's */
	if (c.failed)
		return LQ_FAILED;
	if (cJSON_GetObjectItemCaseSensitive(j, "causality_axis") != NULL &&
	    cfg_item(&c, "causality_axis") == NULL)
		return cfg_fail(err, path, "causality_axis", "LQ-MODEL-003",
		    "causality_axis null is refused upstream; use \"height\" "
		    "(LTX-2), \"width\", \"width-compatibility\" or \"none\"");
	cfg_str(&c, "causality_axis", "height", axis, sizeof(axis));
	if (c.failed)
		return LQ_FAILED;
	for (size_t i = 0; i < sizeof(axes) / sizeof(axes[0]); i++) {
		if (strcmp(axis, axes[i]) == 0) {
			o->causality_axis = (enum ltx2_causality)i;
			found = 1;
		}
	}
	if (!found)
		return cfg_fail(err, path, "causality_axis", "LQ-MODEL-003",
		    "causality_axis \"%s\" is not one of none, width, height, "
		    "width-compatibility", axis);
	if (strcmp(norm, "pixel") == 0)
		o->norm_group = 0;
	else if (strcmp(norm, "group") == 0)
		o->norm_group = 1;
	else
		return cfg_fail(err, path, "norm_type", "LQ-MODEL-003",
		    "norm_type \"%s\" is not \"pixel\" (LTX-2) or \"group\"",
		    norm);
	if (o->norm_group && o->causality_axis != LTX2_CAUSAL_NONE)
		return cfg_fail(err, path, "norm_type", "LQ-MODEL-003",
		    "norm_type \"group\" with causality_axis \"%s\" is refused "
		    "upstream (a causal ResnetBlock has no GroupNorm); use "
		    "\"pixel\" or causality_axis \"none\"", axis);
	for (int i = 0; i < o->n_ch_mult; i++) {
		if (o->norm_group && (o->base_channels * o->ch_mult[i]) % 32 != 0)
			return cfg_fail(err, path, "base_channels",
			    "LQ-MODEL-003", "norm_type \"group\" needs channels "
			    "that are multiples of GroupNorm's 32 groups: "
			    "base_channels %d x ch_mult[%d] %d is not",
			    o->base_channels, i, o->ch_mult[i]);
		if (o->ch_mult[i] > (1 << 20) / o->base_channels)
			return cfg_fail(err, path, "ch_mult", "LQ-MODEL-003",
			    "base_channels x ch_mult[%d] is over 2^20 channels", i);
	}
	return LQ_OK;
}

/* ---- LTX-2 text connectors ---- */

/* The `<side>_connector_*` and `<side>_gated_attn` keys of one connector. */
static void
connector_keys(struct cfg *c, const char *side, struct ltx2_connector_config *o)
{
	char k[64];

	snprintf(k, sizeof(k), "%s_connector_num_attention_heads", side);
	o->num_attention_heads = cfg_int(c, k, 30, 1);
	snprintf(k, sizeof(k), "%s_connector_attention_head_dim", side);
	o->attention_head_dim = cfg_int(c, k, 128, 1);
	snprintf(k, sizeof(k), "%s_connector_num_layers", side);
	o->num_layers = cfg_int(c, k, 2, 0);
	snprintf(k, sizeof(k), "%s_connector_num_learnable_registers", side);
	/* null: no registers (the key present and null, not absent) */
	o->num_learnable_registers = cfg_item(c, k) == NULL &&
	    cJSON_GetObjectItemCaseSensitive(c->j, k) != NULL ? 0 :
	    cfg_int(c, k, 128, 1);
	snprintf(k, sizeof(k), "%s_gated_attn", side);
	o->gated_attn = cfg_bool(c, k, 0);
}

enum lq_status
diffusers_parse_ltx2_connectors(const cJSON *j, const char *path,
    struct ltx2_connectors_config *o, struct lq_error *err)
{
	struct cfg c = {j, path, err, 0};
	char rope[16];
	const struct ltx2_connector_config *sides[2];
	static const char *names[2] = { "video", "audio" };

	if (check_class(&c, "LTX2TextConnectors") != LQ_OK)
		return LQ_FAILED;
	memset(o, 0, sizeof(*o));
	o->caption_channels = cfg_int(&c, "caption_channels", 3840, 1);
	o->text_proj_in_factor = cfg_int(&c, "text_proj_in_factor", 49, 1);
	connector_keys(&c, "video", &o->video);
	connector_keys(&c, "audio", &o->audio);
	o->connector_rope_base_seq_len = cfg_int(&c,
	    "connector_rope_base_seq_len", 4096, 1);
	o->rope_theta = cfg_num(&c, "rope_theta", 10000.0, 1);
	o->rope_double_precision = cfg_bool(&c, "rope_double_precision", 1);
	(void)cfg_bool(&c, "causal_temporal_positioning", 0);
	cfg_str(&c, "rope_type", "interleaved", rope, sizeof(rope));
	o->proj_bias = cfg_bool(&c, "proj_bias", 0);
	if (cfg_bool(&c, "per_modality_projections", 0) && !c.failed)
		return cfg_fail(err, path, "per_modality_projections",
		    "LQ-MODEL-006", "per_modality_projections true (the LTX-2.3 "
		    "connectors: per-token RMS norm and video/audio text_proj_in) "
		    "is not implemented yet; LTX-2.0 has false");
	(void)cfg_int(&c, "video_hidden_dim", 4096, 1);	/* LTX-2.3 only */
	(void)cfg_int(&c, "audio_hidden_dim", 2048, 1);
	if (c.failed)
		return LQ_FAILED;
	o->rope_split = strcmp(rope, "split") == 0;
	if (!o->rope_split && strcmp(rope, "interleaved") != 0)
		return cfg_fail(err, path, "rope_type", "LQ-MODEL-003",
		    "rope_type \"%s\" is not \"interleaved\" or \"split\"", rope);
	sides[0] = &o->video;
	sides[1] = &o->audio;
	for (int i = 0; i < 2; i++) {
		const struct ltx2_connector_config *s = sides[i];

		if ((int64_t)s->num_attention_heads * s->attention_head_dim !=
		    o->caption_channels)
			return cfg_fail(err, path, names[i][0] == 'v' ?
			    "video_connector_num_attention_heads" :
			    "audio_connector_num_attention_heads", "LQ-MODEL-003",
			    "the %s connector's %d heads x %d head_dim is not "
			    "caption_channels %d (text_proj_in feeds it %d "
			    "channels)", names[i], s->num_attention_heads,
			    s->attention_head_dim, o->caption_channels,
			    o->caption_channels);
		if (s->attention_head_dim > 256)
			return cfg_fail(err, path, names[i][0] == 'v' ?
			    "video_connector_attention_head_dim" :
			    "audio_connector_attention_head_dim", "LQ-MODEL-006",
			    "the %s connector's attention_head_dim %d is over "
			    "latentq's attention kernel limit 256", names[i],
			    s->attention_head_dim);
	}
	return LQ_OK;
}

/* ---- LTX-2 transformer ---- */

int
diffusers_is_ltx2_transformer(const cJSON *j)
{
	const cJSON *cls = cJSON_GetObjectItemCaseSensitive(j, "_class_name");

	if (cJSON_IsString(cls))
		return strcmp(cls->valuestring, "LTX2VideoTransformer3DModel") == 0;
	return cJSON_GetObjectItemCaseSensitive(j, "audio_in_channels") != NULL ||
	    cJSON_GetObjectItemCaseSensitive(j, "audio_num_attention_heads") != NULL;
}

/* A split-RoPE table of `dim` reshaped over `heads` (upstream's
 * cos.reshape(B, T, heads, -1) of dim // 2 values, then x.reshape(B, T,
 * heads, -1) of the attention's `inner` channels split in halves). */
static int
split_fits(int dim, int heads, int inner)
{
	return (dim / 2) % heads == 0 && inner % heads == 0 &&
	    inner / heads == 2 * (dim / 2 / heads);
}

enum lq_status
diffusers_parse_ltx2_transformer(const cJSON *j, const char *path,
    struct ltx2_transformer_config *o, struct lq_error *err)
{
	static const int def_vsf[3] = {8, 32, 32};
	struct cfg c = {j, path, err, 0};
	char rope[16], act[32], qk[32];
	int n;

	if (check_class(&c, "LTX2VideoTransformer3DModel") != LQ_OK)
		return LQ_FAILED;
	memset(o, 0, sizeof(*o));
	o->in_channels = cfg_int(&c, "in_channels", 128, 1);
	o->out_channels = cfg_int(&c, "out_channels", 128, 0);
	if (cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(j, "out_channels")) ||
	    o->out_channels == 0)
		o->out_channels = o->in_channels;	/* out_channels or in_channels */
	o->num_attention_heads = cfg_int(&c, "num_attention_heads", 32, 1);
	o->attention_head_dim = cfg_int(&c, "attention_head_dim", 128, 1);
	o->cross_attention_dim = cfg_int(&c, "cross_attention_dim", 4096, 1);
	n = cfg_list(&c, "vae_scale_factors", 'i', 1, o->vae_scale_factors, 0, 3,
	    def_vsf, 3);
	if (n != 3 && !c.failed)
		cfg_bad(&c, "vae_scale_factors", "a list of 3 integers >= 1");
	o->pos_embed_max_pos = cfg_int(&c, "pos_embed_max_pos", 20, 1);
	o->base_height = cfg_int(&c, "base_height", 2048, 1);
	o->base_width = cfg_int(&c, "base_width", 2048, 1);
	o->gated_attn = cfg_bool(&c, "gated_attn", 0);
	o->cross_attn_mod = cfg_bool(&c, "cross_attn_mod", 0);
	o->audio_in_channels = cfg_int(&c, "audio_in_channels", 128, 1);
	o->audio_out_channels = cfg_int(&c, "audio_out_channels", 128, 0);
	if (cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(j,
	    "audio_out_channels")) || o->audio_out_channels == 0)
		o->audio_out_channels = o->audio_in_channels;
	o->audio_num_attention_heads = cfg_int(&c, "audio_num_attention_heads",
	    32, 1);
	o->audio_attention_head_dim = cfg_int(&c, "audio_attention_head_dim", 64,
	    1);
	o->audio_cross_attention_dim = cfg_int(&c, "audio_cross_attention_dim",
	    2048, 1);
	o->audio_scale_factor = cfg_int(&c, "audio_scale_factor", 4, 1);
	o->audio_pos_embed_max_pos = cfg_int(&c, "audio_pos_embed_max_pos", 20, 1);
	o->audio_sampling_rate = cfg_int(&c, "audio_sampling_rate", 16000, 1);
	o->audio_hop_length = cfg_int(&c, "audio_hop_length", 160, 1);
	o->audio_gated_attn = cfg_bool(&c, "audio_gated_attn", 0);
	o->audio_cross_attn_mod = cfg_bool(&c, "audio_cross_attn_mod", 0);
	o->num_layers = cfg_int(&c, "num_layers", 48, 0);
	cfg_str(&c, "activation_fn", "gelu-approximate", act, sizeof(act));
	cfg_str(&c, "qk_norm", "rms_norm_across_heads", qk, sizeof(qk));
	o->norm_eps = cfg_num(&c, "norm_eps", 1e-6, 1);
	o->caption_channels = cfg_int(&c, "caption_channels", 3840, 1);
	o->attention_bias = cfg_bool(&c, "attention_bias", 1);
	o->attention_out_bias = cfg_bool(&c, "attention_out_bias", 1);
	o->rope_theta = cfg_num(&c, "rope_theta", 10000.0, 1);
	o->rope_double_precision = cfg_bool(&c, "rope_double_precision", 1);
	o->causal_offset = cfg_int(&c, "causal_offset", 1, 0);
	o->timestep_scale_multiplier = cfg_int(&c, "timestep_scale_multiplier",
	    1000, 1);
	o->cross_attn_timestep_scale_multiplier = cfg_int(&c,
	    "cross_attn_timestep_scale_multiplier", 1000, 1);
	cfg_str(&c, "rope_type", "interleaved", rope, sizeof(rope));
	o->perturbed_attn = cfg_bool(&c, "perturbed_attn", 0);
	(void)cfg_bool(&c, "use_keyframes_abs_pos_embedding", 0);
	if (c.failed)
		return LQ_FAILED;
	/* what latentq does not implement yet, by name */
	if (!cfg_bool(&c, "use_prompt_embeddings", 1))
		return cfg_fail(err, path, "use_prompt_embeddings", "LQ-MODEL-006",
		    "use_prompt_embeddings false (LTX-2.3: the connectors' "
		    "per_modality_projections replace the caption projections) "
		    "is not implemented yet; LTX-2.0 has true");
	if (!cfg_bool(&c, "ff_bias", 1) || !cfg_bool(&c, "audio_ff_bias", 1))
		return cfg_fail(err, path, cfg_bool(&c, "ff_bias", 1) ?
		    "audio_ff_bias" : "ff_bias", "LQ-MODEL-006",
		    "%s false (LTX-2.5: feed-forward layers without bias) is not "
		    "implemented yet; LTX-2.0 has true", cfg_bool(&c, "ff_bias", 1) ?
		    "audio_ff_bias" : "ff_bias");
	if (!cfg_bool(&c, "use_prompt_adaln_single", 1))
		return cfg_fail(err, path, "use_prompt_adaln_single",
		    "LQ-MODEL-006", "use_prompt_adaln_single false (LTX-2.5: "
		    "timestep-independent prompt modulation) is not implemented "
		    "yet; LTX-2.0 has true");
	{
		static const char *pk[] = { "patch_size", "patch_size_t",
		    "audio_patch_size", "audio_patch_size_t" };

		for (int i = 0; i < 4; i++) {
			int v = cfg_int(&c, pk[i], 1, 1);

			if (c.failed)
				return LQ_FAILED;
			if (v != 1)
				return cfg_fail(err, path, pk[i], "LQ-MODEL-006",
				    "%s %d is not implemented (every released "
				    "LTX-2 checkpoint uses 1)", pk[i], v);
		}
	}
	if (cfg_bool(&c, "norm_elementwise_affine", 0))
		return cfg_fail(err, path, "norm_elementwise_affine",
		    "LQ-MODEL-006", "norm_elementwise_affine true (block norms "
		    "with weights) is not implemented; LTX-2 has false");
	if (c.failed)
		return LQ_FAILED;
	if (strcmp(qk, "rms_norm_across_heads") != 0)
		return cfg_fail(err, path, "qk_norm", "LQ-MODEL-003",
		    "qk_norm \"%s\" is refused upstream (only "
		    "rms_norm_across_heads)", qk);
	if (strcmp(act, "gelu-approximate") != 0 && strcmp(act, "gelu") != 0)
		return cfg_fail(err, path, "activation_fn", "LQ-MODEL-006",
		    "activation_fn \"%s\" is not implemented (gelu-approximate, "
		    "gelu)", act);
	o->ff_gelu_tanh = strcmp(act, "gelu-approximate") == 0;
	o->rope_split = strcmp(rope, "split") == 0;
	if (!o->rope_split && strcmp(rope, "interleaved") != 0)
		return cfg_fail(err, path, "rope_type", "LQ-MODEL-003",
		    "rope_type \"%s\" is not \"interleaved\" or \"split\"", rope);
	o->inner_dim = o->num_attention_heads * o->attention_head_dim;
	o->audio_inner_dim = o->audio_num_attention_heads *
	    o->audio_attention_head_dim;
	o->prompt_modulation = o->cross_attn_mod || o->audio_cross_attn_mod;
	if (o->attention_head_dim > 256 || o->audio_attention_head_dim > 256)
		return cfg_fail(err, path, o->attention_head_dim > 256 ?
		    "attention_head_dim" : "audio_attention_head_dim",
		    "LQ-MODEL-006", "an attention_head_dim of %d is over latentq's "
		    "attention kernel limit 256", o->attention_head_dim > 256 ?
		    o->attention_head_dim : o->audio_attention_head_dim);
	if (o->cross_attention_dim != o->inner_dim)
		return cfg_fail(err, path, "cross_attention_dim", "LQ-MODEL-003",
		    "cross_attention_dim %d is not the video stream's %d heads x "
		    "%d head_dim = %d (attn2's keys are the caption projection's "
		    "output)", o->cross_attention_dim, o->num_attention_heads,
		    o->attention_head_dim, o->inner_dim);
	if (o->audio_cross_attention_dim != o->audio_inner_dim)
		return cfg_fail(err, path, "audio_cross_attention_dim",
		    "LQ-MODEL-003", "audio_cross_attention_dim %d is not the audio "
		    "stream's %d heads x %d head_dim = %d (audio_attn2's keys are "
		    "the audio caption projection's output, and the a2v / v2a "
		    "RoPE tables of that width rotate its queries and keys)",
		    o->audio_cross_attention_dim, o->audio_num_attention_heads,
		    o->audio_attention_head_dim, o->audio_inner_dim);
	if (o->rope_split &&
	    (!split_fits(o->inner_dim, o->num_attention_heads, o->inner_dim) ||
	    !split_fits(o->audio_inner_dim, o->audio_num_attention_heads,
	    o->audio_inner_dim) ||
	    !split_fits(o->audio_cross_attention_dim, o->num_attention_heads,
	    o->audio_inner_dim)))
		return cfg_fail(err, path, "rope_type", "LQ-MODEL-003",
		    "rope_type \"split\" needs half of each RoPE width (%d, %d, "
		    "%d) to divide by its heads (%d video, %d audio; the a2v "
		    "video-side table uses the video heads)", o->inner_dim,
		    o->audio_inner_dim, o->audio_cross_attention_dim,
		    o->num_attention_heads, o->audio_num_attention_heads);
	return LQ_OK;
}

/* ---- Wan VAE ---- */

/* A list of numbers (any sign) into dst[max]; returns its length, the
 * default when absent or null. */
static int
cfg_dlist(struct cfg *c, const char *key, double *dst, int max,
    const double *def, int ndef, int allow_empty)
{
	const cJSON *v = cfg_item(c, key), *e;
	int n = 0;

	if (v == NULL) {
		if (ndef > 0)
			memcpy(dst, def, (size_t)ndef * sizeof(*dst));
		return ndef;
	}
	if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) > max ||
	    (!allow_empty && cJSON_GetArraySize(v) == 0)) {
		char what[64];

		snprintf(what, sizeof(what), "a list of %d to %d numbers",
		    allow_empty ? 0 : 1, max);
		return cfg_bad(c, key, what), 0;
	}
	cJSON_ArrayForEach(e, v) {
		if (!cJSON_IsNumber(e) || !isfinite(e->valuedouble))
			return cfg_bad(c, key, "a list of numbers"), 0;
		dst[n++] = e->valuedouble;
	}
	return n;
}

enum lq_status
diffusers_parse_wan_vae(const cJSON *j, const char *path,
    struct wan_vae_config *o, struct lq_error *err)
{
	/* AutoencoderKLWan.__init__'s defaults (Wan 2.1) */
	static const int def_mult[] = {1, 2, 4, 4};
	static const int def_tds[] = {0, 1, 1};
	static const double def_mean[16] = {
		-0.7571, -0.7089, -0.9113, 0.1075, -0.1745, 0.9653, -0.1517,
		1.5508, 0.4134, -0.0715, 0.5517, -0.3632, -0.1922, -0.9497,
		0.2503, -0.2921,
	};
	static const double def_std[16] = {
		2.8184, 1.4541, 2.3275, 2.6558, 1.2196, 1.7708, 2.6052, 2.0743,
		3.2687, 2.1526, 2.8652, 1.5579, 1.6382, 1.1253, 2.8251, 1.9160,
	};
	struct cfg c = {j, path, err, 0};
	int nm, ns, t = 0;

	if (check_class(&c, "AutoencoderKLWan") != LQ_OK)
		return LQ_FAILED;
	memset(o, 0, sizeof(*o));
	o->base_dim = cfg_int(&c, "base_dim", 96, 1);
	o->decoder_base_dim = cfg_int(&c, "decoder_base_dim", o->base_dim, 1);
	o->z_dim = cfg_int(&c, "z_dim", 16, 1);
	o->n_dim_mult = cfg_list(&c, "dim_mult", 'i', 1, o->dim_mult, 0,
	    DIFFUSERS_MAX_BLOCKS, def_mult, 4);
	o->num_res_blocks = cfg_int(&c, "num_res_blocks", 2, 0);
	o->n_attn_scales = cfg_dlist(&c, "attn_scales", o->attn_scales,
	    DIFFUSERS_MAX_BLOCKS, NULL, 0, 1);
	o->n_temperal_downsample = cfg_item(&c, "temperal_downsample") != NULL &&
	    cJSON_IsArray(cfg_item(&c, "temperal_downsample")) &&
	    cJSON_GetArraySize(cfg_item(&c, "temperal_downsample")) == 0 ? 0 :
	    cfg_list(&c, "temperal_downsample", 'b', 0, o->temperal_downsample,
	    0, DIFFUSERS_MAX_BLOCKS, def_tds, 3);
	(void)cfg_num(&c, "dropout", 0.0, 0);	/* eval: no effect */
	nm = cfg_dlist(&c, "latents_mean", o->latents_mean,
	    DIFFUSERS_MAX_WAN_Z, def_mean, 16, 0);
	ns = cfg_dlist(&c, "latents_std", o->latents_std,
	    DIFFUSERS_MAX_WAN_Z, def_std, 16, 0);
	o->in_channels = cfg_int(&c, "in_channels", 3, 1);
	o->out_channels = cfg_int(&c, "out_channels", 3, 1);
	o->scale_factor_temporal = cfg_int(&c, "scale_factor_temporal", 4, 1);
	o->scale_factor_spatial = cfg_int(&c, "scale_factor_spatial", 8, 1);
	if (c.failed)
		return LQ_FAILED;
	if (cfg_bool(&c, "is_residual", 0) && !c.failed)
		return cfg_fail(err, path, "is_residual", "LQ-MODEL-006",
		    "is_residual true (the Wan 2.2 TI2V VAE: residual up/down "
		    "blocks with DupUp3D / AvgDown3D shortcuts) is not "
		    "implemented; Wan 2.1's VAE has false");
	if (cfg_item(&c, "patch_size") != NULL &&
	    cfg_int(&c, "patch_size", 1, 1) != 1 && !c.failed)
		return cfg_fail(err, path, "patch_size", "LQ-MODEL-006",
		    "patch_size %d (the Wan 2.2 TI2V VAE's patchify) is not "
		    "implemented; Wan 2.1's VAE has null",
		    cfg_int(&c, "patch_size", 1, 1));
	if (c.failed)
		return LQ_FAILED;
	if (o->n_temperal_downsample < o->n_dim_mult - 1)
		return cfg_fail(err, path, "temperal_downsample", "LQ-MODEL-004",
		    "temperal_downsample has %d entries; dim_mult's %d levels "
		    "need %d (one per downsampling level)",
		    o->n_temperal_downsample, o->n_dim_mult, o->n_dim_mult - 1);
	if (nm != ns)
		return cfg_fail(err, path, "latents_std", "LQ-MODEL-004",
		    "latents_mean has %d entries and latents_std %d; both "
		    "need z_dim (%d)", nm, ns, o->z_dim);
	if (o->z_dim > DIFFUSERS_MAX_WAN_Z)
		return cfg_fail(err, path, "z_dim", "LQ-MODEL-006",
		    "z_dim %d is over latentq's %d latent channels", o->z_dim,
		    DIFFUSERS_MAX_WAN_Z);
	if (nm != o->z_dim)
		return cfg_fail(err, path, "latents_mean", "LQ-MODEL-004",
		    "latents_mean and latents_std have %d entries%s but z_dim "
		    "is %d: WanPipeline views them as (1, z_dim, 1, 1, 1); give "
		    "z_dim values of each", nm, cfg_item(&c, "latents_mean") ?
		    "" : " (upstream's Wan 2.1 defaults)", o->z_dim);
	for (int i = 0; i < ns; i++)
		if (o->latents_std[i] == 0.0)
			return cfg_fail(err, path, "latents_std", "LQ-MODEL-003",
			    "latents_std[%d] is 0 (the pipeline divides by "
			    "1 / std)", i);
	for (int i = 0; i < o->n_dim_mult; i++)
		if (o->dim_mult[i] > (1 << 16) / o->base_dim ||
		    o->dim_mult[i] > (1 << 16) / o->decoder_base_dim)
			return cfg_fail(err, path, "dim_mult", "LQ-MODEL-003",
			    "base_dim x dim_mult[%d] is over 2^16 channels", i);
	o->n_latents = nm;
	o->spatial_ratio = 1 << (o->n_dim_mult - 1);
	for (int i = 0; i + 1 < o->n_dim_mult; i++)
		t += o->temperal_downsample[i];
	o->temporal_ratio = 1 << t;
	return LQ_OK;
}

/* ---- Wan transformer ---- */

int
diffusers_is_wan_transformer(const cJSON *j)
{
	const cJSON *cls = cJSON_GetObjectItemCaseSensitive(j, "_class_name");

	if (cJSON_IsString(cls))
		return strcmp(cls->valuestring, "WanTransformer3DModel") == 0;
	return cJSON_GetObjectItemCaseSensitive(j, "freq_dim") != NULL &&
	    (cJSON_GetObjectItemCaseSensitive(j, "ffn_dim") != NULL ||
	    cJSON_GetObjectItemCaseSensitive(j, "text_dim") != NULL);
}

enum lq_status
diffusers_parse_wan_transformer(const cJSON *j, const char *path,
    struct wan_transformer_config *o, struct lq_error *err)
{
	static const int def_patch[3] = {1, 2, 2};
	static const char *const i2v[] = { "image_dim", "added_kv_proj_dim",
	    "pos_embed_seq_len" };
	struct cfg c = {j, path, err, 0};
	char qk[32];
	int n, d;

	if (check_class(&c, "WanTransformer3DModel") != LQ_OK)
		return LQ_FAILED;
	memset(o, 0, sizeof(*o));
	n = cfg_list(&c, "patch_size", 'i', 1, o->patch_size, 0, 3, def_patch, 3);
	if (n != 3 && !c.failed)
		cfg_bad(&c, "patch_size", "a list of 3 integers >= 1 (t, h, w)");
	o->num_attention_heads = cfg_int(&c, "num_attention_heads", 40, 1);
	o->attention_head_dim = cfg_int(&c, "attention_head_dim", 128, 1);
	o->in_channels = cfg_int(&c, "in_channels", 16, 1);
	o->out_channels = cfg_int(&c, "out_channels", 16, 0);
	if (cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(j, "out_channels")) ||
	    o->out_channels == 0)
		o->out_channels = o->in_channels;	/* out_channels or in_channels */
	o->text_dim = cfg_int(&c, "text_dim", 4096, 1);
	o->freq_dim = cfg_int(&c, "freq_dim", 256, 1);
	o->ffn_dim = cfg_int(&c, "ffn_dim", 13824, 1);
	o->num_layers = cfg_int(&c, "num_layers", 40, 0);
	o->cross_attn_norm = cfg_bool(&c, "cross_attn_norm", 1);
	cfg_str(&c, "qk_norm", "rms_norm_across_heads", qk, sizeof(qk));
	o->eps = cfg_num(&c, "eps", 1e-6, 1);
	o->rope_max_seq_len = cfg_int(&c, "rope_max_seq_len", 1024, 1);
	if (c.failed)
		return LQ_FAILED;
	for (int i = 0; i < 3; i++)
		if (cfg_item(&c, i2v[i]) != NULL)
			return cfg_fail(err, path, i2v[i], "LQ-MODEL-006",
			    "%s is set: Wan image-to-video (the image embedder "
			    "and the added key / value projections) is not "
			    "implemented; text-to-video checkpoints have null",
			    i2v[i]);
	d = o->attention_head_dim;
	if (d % 2 != 0)
		return cfg_fail(err, path, "attention_head_dim", "LQ-MODEL-003",
		    "attention_head_dim %d is odd; WanRotaryPosEmbed rotates "
		    "channel pairs (upstream asserts an even size)", d);
	if (d > 256)
		return cfg_fail(err, path, "attention_head_dim", "LQ-MODEL-006",
		    "an attention_head_dim of %d is over latentq's attention "
		    "kernel limit 256", d);
	if (o->freq_dim % 2 != 0)
		return cfg_fail(err, path, "freq_dim", "LQ-MODEL-006",
		    "freq_dim %d is odd (upstream zero-pads the timestep "
		    "sinusoids); not implemented, Wan uses 256", o->freq_dim);
	o->inner_dim = o->num_attention_heads * d;
	/* WanRotaryPosEmbed: h_dim = w_dim = 2 * (d // 6), t_dim the rest */
	o->rope_dim[1] = o->rope_dim[2] = 2 * (d / 6);
	o->rope_dim[0] = d - o->rope_dim[1] - o->rope_dim[2];
	o->patch_volume = o->patch_size[0] * o->patch_size[1] *
	    o->patch_size[2];
	return LQ_OK;
}

/* ---- transformer ---- */

enum lq_status
diffusers_parse_transformer(const cJSON *j, const char *path,
    struct ltxv_transformer_config *o, struct lq_error *err)
{
	struct cfg c = {j, path, err, 0};
	if (check_class(&c, "LTXVideoTransformer3DModel") != LQ_OK)
		return LQ_FAILED;
	memset(o, 0, sizeof(*o));
	o->in_channels = cfg_int(&c, "in_channels", 128, 1);
	/* absent: the default 128; null or 0: `out_channels or in_channels` */
	o->out_channels = cJSON_GetObjectItemCaseSensitive(j, "out_channels") == NULL ? 128
	    : cfg_int(&c, "out_channels", 0, 0);
	if (o->out_channels == 0)
		o->out_channels = o->in_channels;
	o->patch_size = cfg_int(&c, "patch_size", 1, 1);
	o->patch_size_t = cfg_int(&c, "patch_size_t", 1, 1);
	o->num_attention_heads = cfg_int(&c, "num_attention_heads", 32, 1);
	o->attention_head_dim = cfg_int(&c, "attention_head_dim", 64, 1);
	o->cross_attention_dim = cfg_int(&c, "cross_attention_dim", 2048, 1);
	o->num_layers = cfg_int(&c, "num_layers", 28, 0);
	cfg_str(&c, "activation_fn", "gelu-approximate", o->activation_fn, sizeof(o->activation_fn));
	cfg_str(&c, "qk_norm", "rms_norm_across_heads", o->qk_norm, sizeof(o->qk_norm));
	o->norm_elementwise_affine = cfg_bool(&c, "norm_elementwise_affine", 0);
	o->norm_eps = cfg_num(&c, "norm_eps", 1e-6, 1);
	o->caption_channels = cfg_int(&c, "caption_channels", 4096, 1);
	o->attention_bias = cfg_bool(&c, "attention_bias", 1);
	o->attention_out_bias = cfg_bool(&c, "attention_out_bias", 1);
	if (c.failed)
		return LQ_FAILED;
	if (o->patch_size != 1 || o->patch_size_t != 1)
		return cfg_fail(err, path, o->patch_size != 1 ? "patch_size" : "patch_size_t",
		    "LQ-MODEL-006", "patch sizes other than 1 are not implemented "
		    "(no released LTX-Video checkpoint uses them)");
	if (strcmp(o->qk_norm, "rms_norm_across_heads") != 0)
		return cfg_fail(err, path, "qk_norm", "LQ-MODEL-006",
		    "qk_norm \"%s\" is not implemented (upstream supports only "
		    "rms_norm_across_heads)", o->qk_norm);
	if (strcmp(o->activation_fn, "gelu-approximate") != 0 &&
	    strcmp(o->activation_fn, "gelu") != 0)
		return cfg_fail(err, path, "activation_fn", "LQ-MODEL-006",
		    "activation_fn \"%s\" is not implemented (gelu-approximate, gelu)",
		    o->activation_fn);
	o->inner_dim = o->num_attention_heads * o->attention_head_dim;
	o->ff_inner_dim = 4 * o->inner_dim;
	return LQ_OK;
}

cJSON *
diffusers_transformer_to_json(const struct ltxv_transformer_config *o)
{
	cJSON *j = cJSON_CreateObject();
	cJSON_AddStringToObject(j, "_class_name", "LTXVideoTransformer3DModel");
	cJSON_AddStringToObject(j, "_diffusers_version", DIFFUSERS_VERSION);
	cJSON_AddStringToObject(j, "activation_fn", o->activation_fn);
	cJSON_AddBoolToObject(j, "attention_bias", o->attention_bias);
	cJSON_AddNumberToObject(j, "attention_head_dim", o->attention_head_dim);
	cJSON_AddBoolToObject(j, "attention_out_bias", o->attention_out_bias);
	cJSON_AddNumberToObject(j, "caption_channels", o->caption_channels);
	cJSON_AddNumberToObject(j, "cross_attention_dim", o->cross_attention_dim);
	cJSON_AddNumberToObject(j, "in_channels", o->in_channels);
	cJSON_AddBoolToObject(j, "norm_elementwise_affine", o->norm_elementwise_affine);
	cJSON_AddNumberToObject(j, "norm_eps", o->norm_eps);
	cJSON_AddNumberToObject(j, "num_attention_heads", o->num_attention_heads);
	cJSON_AddNumberToObject(j, "num_layers", o->num_layers);
	cJSON_AddNumberToObject(j, "out_channels", o->out_channels);
	cJSON_AddNumberToObject(j, "patch_size", o->patch_size);
	cJSON_AddNumberToObject(j, "patch_size_t", o->patch_size_t);
	cJSON_AddStringToObject(j, "qk_norm", o->qk_norm);
	return j;
}

/* ---- VAE ---- */

/* Upstream reverses decoder lists with tuple(reversed(x)); entry i of the
 * reversed list is x[len-1-i]. */
static int
rev(const int *x, int n, int i)
{
	return x[n - 1 - i];
}

/* The keys only AutoencoderKLLTX2Video's config has: with no _class_name,
 * any of them makes a config LTX-2's. */
static const char *const ltx2_vae_keys[] = {
	"encoder_spatial_padding_mode", "decoder_spatial_padding_mode",
	"upsample_type", NULL,
};

/* A bool-or-list key of AutoencoderKLLTX2Video.__init__: a bare bool is
 * broadcast to n entries (upstream's `(x,) * n`), else as cfg_list. */
static int
cfg_blist(struct cfg *c, const char *key, int *dst, int max, const int *def,
    int ndef, int n)
{
	const cJSON *v = cfg_item(c, key);

	if (v != NULL && cJSON_IsBool(v)) {
		if (n < 1 || n > max)
			return cfg_bad(c, key, "a list (the block count is out "
			    "of range)"), 0;
		for (int i = 0; i < n; i++)
			dst[i] = cJSON_IsTrue(v);
		return n;
	}
	return cfg_list(c, key, 'b', 0, dst, 0, max, def, ndef);
}

/* A spatial_padding_mode key: "zeros" or "reflect" (torch's "replicate"
 * and "circular" are refused by name). */
static enum lq_status
vae_padding_mode(struct cfg *c, const char *key, char *dst, size_t n)
{
	cfg_str(c, key, key[0] == 'e' ? "zeros" : "reflect", dst, n);
	if (c->failed)
		return LQ_FAILED;
	if (strcmp(dst, "zeros") == 0 || strcmp(dst, "reflect") == 0)
		return LQ_OK;
	if (strcmp(dst, "replicate") == 0 || strcmp(dst, "circular") == 0)
		return cfg_fail(c->err, c->path, key, "LQ-MODEL-006",
		    "%s \"%s\" is not implemented; use \"zeros\" or "
		    "\"reflect\"", key, dst);
	return cfg_fail(c->err, c->path, key, "LQ-MODEL-003",
	    "%s \"%s\" is not a torch padding_mode (zeros, reflect, "
	    "replicate, circular)", key, dst);
}

enum lq_status
diffusers_parse_vae(const cJSON *j, const char *path, struct ltxv_vae_config *o,
    struct lq_error *err)
{
	struct cfg c = {j, path, err, 0};
	const cJSON *cls = cfg_item(&c, "_class_name");
	int ltx2 = cls != NULL && cJSON_IsString(cls) &&
	    strcmp(cls->valuestring, "AutoencoderKLLTX2Video") == 0;

	for (int i = 0; cls == NULL && ltx2_vae_keys[i]; i++)
		ltx2 |= cfg_item(&c, ltx2_vae_keys[i]) != NULL;
	if (!ltx2 && check_class(&c, "AutoencoderKLLTXVideo") != LQ_OK)
		return LQ_FAILED;
	memset(o, 0, sizeof(*o));
	o->ltx2 = ltx2;
	const int M = DIFFUSERS_MAX_BLOCKS;
	/* AutoencoderKLLTXVideo.__init__'s defaults ... */
	static const int d_boc[] = {128, 256, 512, 512};
	static const int d_lpb[] = {4, 3, 3, 3, 4};
	static const int d_sts[] = {1, 1, 1, 0};
	static const int d_inj[] = {0, 0, 0, 0, 0};
	static const int d_res[] = {0, 0, 0, 0};
	static const int d_fac[] = {1, 1, 1, 1};
	static const char d_dbt[4][32] = {"LTXVideoDownBlock3D", "LTXVideoDownBlock3D",
	    "LTXVideoDownBlock3D", "LTXVideoDownBlock3D"};
	static const char d_dst[4][16] = {"conv", "conv", "conv", "conv"};
	/* ... and AutoencoderKLLTX2Video's */
	static const int d2_boc[] = {256, 512, 1024, 2048};
	static const int d2_dboc[] = {256, 512, 1024};
	static const int d2_lpb[] = {4, 6, 6, 2, 2};
	static const int d2_dlpb[] = {5, 5, 5, 5};
	static const int d2_sts[] = {1, 1, 1, 1};
	static const int d2_dsts[] = {1, 1, 1};
	static const int d2_inj[] = {0, 0, 0, 0};
	static const int d2_res[] = {1, 1, 1};
	static const int d2_fac[] = {2, 2, 2};
	static const char d2_dbt[4][32] = {"LTX2VideoDownBlock3D", "LTX2VideoDownBlock3D",
	    "LTX2VideoDownBlock3D", "LTX2VideoDownBlock3D"};
	static const char d2_dst[4][16] = {"spatial", "temporal", "spatiotemporal",
	    "spatiotemporal"};
	static const char d2_ut[3][16] = {"spatiotemporal", "spatiotemporal",
	    "spatiotemporal"};
	o->in_channels = cfg_int(&c, "in_channels", 3, 1);
	o->out_channels = cfg_int(&c, "out_channels", 3, 1);
	o->latent_channels = cfg_int(&c, "latent_channels", 128, 1);
	o->n_block_out_channels = cfg_list(&c, "block_out_channels", 'i', 1,
	    o->block_out_channels, 0, M, ltx2 ? d2_boc : d_boc, 4);
	o->n_down_block_types = cfg_list(&c, "down_block_types", 's', 0, o->down_block_types,
	    sizeof(o->down_block_types[0]), M, ltx2 ? d2_dbt : d_dbt, 4);
	o->n_decoder_block_out_channels = cfg_list(&c, "decoder_block_out_channels", 'i', 1,
	    o->decoder_block_out_channels, 0, M, ltx2 ? d2_dboc : d_boc, ltx2 ? 3 : 4);
	o->n_layers_per_block = cfg_list(&c, "layers_per_block", 'i', 0, o->layers_per_block, 0,
	    M + 1, ltx2 ? d2_lpb : d_lpb, 5);
	o->n_decoder_layers_per_block = cfg_list(&c, "decoder_layers_per_block", 'i', 0,
	    o->decoder_layers_per_block, 0, M + 1, ltx2 ? d2_dlpb : d_lpb, ltx2 ? 4 : 5);
	if (ltx2) {
		int ne = o->n_layers_per_block, nd = o->n_decoder_layers_per_block;

		o->n_spatio_temporal_scaling = cfg_blist(&c, "spatio_temporal_scaling",
		    o->spatio_temporal_scaling, M, d2_sts, 4, ne - 1);
		o->n_decoder_spatio_temporal_scaling = cfg_blist(&c,
		    "decoder_spatio_temporal_scaling",
		    o->decoder_spatio_temporal_scaling, M, d2_dsts, 3, nd - 1);
		o->n_decoder_inject_noise = cfg_blist(&c, "decoder_inject_noise",
		    o->decoder_inject_noise, M + 1, d2_inj, 4, nd);
		o->n_upsample_residual = cfg_blist(&c, "upsample_residual",
		    o->upsample_residual, M, d2_res, 3, nd - 1);
	} else {
		o->n_spatio_temporal_scaling = cfg_list(&c, "spatio_temporal_scaling", 'b', 0,
		    o->spatio_temporal_scaling, 0, M, d_sts, 4);
		o->n_decoder_spatio_temporal_scaling = cfg_list(&c,
		    "decoder_spatio_temporal_scaling", 'b', 0,
		    o->decoder_spatio_temporal_scaling, 0, M, d_sts, 4);
		o->n_decoder_inject_noise = cfg_list(&c, "decoder_inject_noise", 'b', 0,
		    o->decoder_inject_noise, 0, M + 1, d_inj, 5);
		o->n_upsample_residual = cfg_list(&c, "upsample_residual", 'b', 0,
		    o->upsample_residual, 0, M, d_res, 4);
	}
	o->n_downsample_type = cfg_list(&c, "downsample_type", 's', 0, o->downsample_type,
	    sizeof(o->downsample_type[0]), M, ltx2 ? d2_dst : d_dst, 4);
	o->n_upsample_factor = cfg_list(&c, "upsample_factor", 'i', 1, o->upsample_factor, 0, M,
	    ltx2 ? d2_fac : d_fac, ltx2 ? 3 : 4);
	o->timestep_conditioning = cfg_bool(&c, "timestep_conditioning", 0);
	o->patch_size = cfg_int(&c, "patch_size", 4, 1);
	o->patch_size_t = cfg_int(&c, "patch_size_t", 1, 1);
	o->resnet_norm_eps = cfg_num(&c, "resnet_norm_eps", 1e-6, 1);
	o->scaling_factor = cfg_num(&c, "scaling_factor", 1.0, 1);
	o->encoder_causal = cfg_bool(&c, "encoder_causal", 1);
	o->decoder_causal = cfg_bool(&c, "decoder_causal", ltx2);
	o->spatial_compression_ratio = cfg_int(&c, "spatial_compression_ratio", 0, 1);
	o->temporal_compression_ratio = cfg_int(&c, "temporal_compression_ratio", 0, 1);
	if (ltx2) {
		o->n_upsample_type = cfg_list(&c, "upsample_type", 's', 0, o->upsample_type,
		    sizeof(o->upsample_type[0]), M, d2_ut, 3);
	} else {
		snprintf(o->encoder_spatial_padding_mode,
		    sizeof(o->encoder_spatial_padding_mode), "zeros");
		snprintf(o->decoder_spatial_padding_mode,
		    sizeof(o->decoder_spatial_padding_mode), "zeros");
	}
	if (c.failed)
		return LQ_FAILED;
	if (ltx2 && (vae_padding_mode(&c, "encoder_spatial_padding_mode",
	    o->encoder_spatial_padding_mode,
	    sizeof(o->encoder_spatial_padding_mode)) != LQ_OK ||
	    vae_padding_mode(&c, "decoder_spatial_padding_mode",
	    o->decoder_spatial_padding_mode,
	    sizeof(o->decoder_spatial_padding_mode)) != LQ_OK))
		return LQ_FAILED;
	if (o->patch_size_t != 1)
		return cfg_fail(err, path, "patch_size_t", "LQ-MODEL-006",
		    "patch_size_t %d is not implemented (1 only)", o->patch_size_t);

	/* Encoder (LTXVideoEncoder3d): only the shape of the lists matters. */
	int n = o->n_block_out_channels;
	o->is_ltx_095_encoder = o->n_down_block_types > 0 && strcmp(
	    o->down_block_types[o->n_down_block_types - 1], "LTXVideo095DownBlock3D") == 0;
	int nenc = n - (o->is_ltx_095_encoder ? 1 : 0);
	if (nenc < 1 || o->n_down_block_types < nenc || o->n_spatio_temporal_scaling < nenc ||
	    o->n_layers_per_block < nenc || (o->is_ltx_095_encoder && o->n_downsample_type < nenc))
		return cfg_fail(err, path, o->n_down_block_types < nenc ? "down_block_types"
		    : o->n_spatio_temporal_scaling < nenc ? "spatio_temporal_scaling"
		    : o->n_layers_per_block < nenc ? "layers_per_block" : "downsample_type",
		    "LQ-MODEL-004", "list is shorter than the %d encoder blocks "
		    "block_out_channels implies", nenc);
	for (int i = 0; i < nenc && !ltx2; i++) {
		const char *t = o->down_block_types[i];
		if (strcmp(t, "LTXVideoDownBlock3D") != 0 && strcmp(t, "LTXVideo095DownBlock3D") != 0)
			return cfg_fail(err, path, "down_block_types", "LQ-MODEL-002",
			    "down block type \"%s\" is unknown (LTXVideoDownBlock3D, "
			    "LTXVideo095DownBlock3D)", t);
		if (o->is_ltx_095_encoder) {
			const char *d = o->downsample_type[i];
			if (strcmp(d, "conv") && strcmp(d, "spatial") && strcmp(d, "temporal") &&
			    strcmp(d, "spatiotemporal"))
				return cfg_fail(err, path, "downsample_type", "LQ-MODEL-003",
				    "downsample type \"%s\" is unknown", d);
		}
	}
	int nscale = 0;
	for (int i = 0; i < o->n_spatio_temporal_scaling; i++)
		nscale += o->spatio_temporal_scaling[i];
	if (o->spatial_compression_ratio == 0)
		o->spatial_compression_ratio = o->patch_size << nscale;
	if (o->temporal_compression_ratio == 0)
		o->temporal_compression_ratio = o->patch_size_t << nscale;

	/* Decoder plan (LTXVideoDecoder3d). */
	int m = o->n_decoder_block_out_channels;
	const char *shortkey = o->n_decoder_spatio_temporal_scaling < m
	    ? "decoder_spatio_temporal_scaling"
	    : ltx2 && o->n_upsample_type < m ? "upsample_type"
	    : o->n_decoder_layers_per_block < m + 1 ? "decoder_layers_per_block"
	    : o->n_decoder_inject_noise < m + 1 ? "decoder_inject_noise"
	    : o->n_upsample_residual < m ? "upsample_residual"
	    : o->n_upsample_factor < m ? "upsample_factor" : NULL;
	if (shortkey)
		return cfg_fail(err, path, shortkey, "LQ-MODEL-004",
		    "list is shorter than the %d decoder blocks decoder_block_out_channels "
		    "implies (+1 for the mid block in *_layers_per_block and inject_noise)", m);
	const int *dboc = o->decoder_block_out_channels;
	int out = rev(dboc, m, 0);
	/* LTX2VideoUpBlock3d's strides other than (2, 2, 2) are not
	 * implemented: name the first one */
	for (int i = 0; ltx2 && i < m; i++) {
		const char *t = o->upsample_type[i];

		if (strcmp(t, "spatiotemporal") == 0)
			continue;
		if (strcmp(t, "spatial") == 0 || strcmp(t, "temporal") == 0)
			return cfg_fail(err, path, "upsample_type", "LQ-MODEL-006",
			    "upsample_type \"%s\" (entry %d) is not implemented; "
			    "use \"spatiotemporal\"", t, i);
		return cfg_fail(err, path, "upsample_type", "LQ-MODEL-003",
		    "upsample_type \"%s\" (entry %d) is not spatial, temporal "
		    "or spatiotemporal", t, i);
	}
	o->dec_conv_in_out = out;
	o->dec_mid_layers = rev(o->decoder_layers_per_block, o->n_decoder_layers_per_block, 0);
	o->dec_mid_inject_noise = rev(o->decoder_inject_noise, o->n_decoder_inject_noise, 0);
	o->dec_n_up = m;
	for (int i = 0; i < m; i++) {
		struct ltxv_vae_up_block *u = &o->dec_up[i];
		int f = rev(o->upsample_factor, o->n_upsample_factor, i);
		int ch = rev(dboc, m, i);
		if (out % f != 0 || ch % f != 0)
			return cfg_fail(err, path, "upsample_factor", "LQ-MODEL-003",
			    "decoder block %d: channels %d / %d not divisible by upsample factor %d",
			    i, out, ch, f);
		u->upsample_factor = f;
		u->in_channels = out / f;
		u->out_channels = ch / f;
		u->num_layers = rev(o->decoder_layers_per_block, o->n_decoder_layers_per_block,
		    i + 1);
		u->has_conv_in = u->in_channels != u->out_channels;
		u->spatio_temporal_scale = rev(o->decoder_spatio_temporal_scaling,
		    o->n_decoder_spatio_temporal_scaling, i);
		u->inject_noise = rev(o->decoder_inject_noise, o->n_decoder_inject_noise, i + 1);
		u->upsample_residual = rev(o->upsample_residual, o->n_upsample_residual, i);
		u->upsampler_in = u->out_channels * f;
		u->upsampler_out = u->out_channels * f * 8 / f;
		out = u->out_channels;
	}
	o->dec_conv_out_in = out;
	o->dec_conv_out_out = o->out_channels * o->patch_size * o->patch_size;
	return LQ_OK;
}

static void
add_ints(cJSON *j, const char *key, const int *v, int n)
{
	cJSON *a = cJSON_AddArrayToObject(j, key);
	for (int i = 0; i < n; i++)
		cJSON_AddItemToArray(a, cJSON_CreateNumber(v[i]));
}

static void
add_bools(cJSON *j, const char *key, const int *v, int n)
{
	cJSON *a = cJSON_AddArrayToObject(j, key);
	for (int i = 0; i < n; i++)
		cJSON_AddItemToArray(a, cJSON_CreateBool(v[i]));
}

cJSON *
diffusers_vae_to_json(const struct ltxv_vae_config *o)
{
	cJSON *j = cJSON_CreateObject();
	cJSON_AddStringToObject(j, "_class_name", o->ltx2 ? "AutoencoderKLLTX2Video" :
	    "AutoencoderKLLTXVideo");
	cJSON_AddStringToObject(j, "_diffusers_version", DIFFUSERS_VERSION);
	add_ints(j, "block_out_channels", o->block_out_channels, o->n_block_out_channels);
	add_ints(j, "decoder_block_out_channels", o->decoder_block_out_channels,
	    o->n_decoder_block_out_channels);
	cJSON_AddBoolToObject(j, "decoder_causal", o->decoder_causal);
	add_bools(j, "decoder_inject_noise", o->decoder_inject_noise, o->n_decoder_inject_noise);
	add_ints(j, "decoder_layers_per_block", o->decoder_layers_per_block,
	    o->n_decoder_layers_per_block);
	add_bools(j, "decoder_spatio_temporal_scaling", o->decoder_spatio_temporal_scaling,
	    o->n_decoder_spatio_temporal_scaling);
	cJSON *a = cJSON_AddArrayToObject(j, "down_block_types");
	for (int i = 0; i < o->n_down_block_types; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(o->down_block_types[i]));
	a = cJSON_AddArrayToObject(j, "downsample_type");
	for (int i = 0; i < o->n_downsample_type; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(o->downsample_type[i]));
	cJSON_AddBoolToObject(j, "encoder_causal", o->encoder_causal);
	cJSON_AddNumberToObject(j, "in_channels", o->in_channels);
	cJSON_AddNumberToObject(j, "latent_channels", o->latent_channels);
	add_ints(j, "layers_per_block", o->layers_per_block, o->n_layers_per_block);
	cJSON_AddNumberToObject(j, "out_channels", o->out_channels);
	cJSON_AddNumberToObject(j, "patch_size", o->patch_size);
	cJSON_AddNumberToObject(j, "patch_size_t", o->patch_size_t);
	cJSON_AddNumberToObject(j, "resnet_norm_eps", o->resnet_norm_eps);
	cJSON_AddNumberToObject(j, "scaling_factor", o->scaling_factor);
	cJSON_AddNullToObject(j, "spatial_compression_ratio");
	add_bools(j, "spatio_temporal_scaling", o->spatio_temporal_scaling,
	    o->n_spatio_temporal_scaling);
	cJSON_AddNullToObject(j, "temporal_compression_ratio");
	cJSON_AddBoolToObject(j, "timestep_conditioning", o->timestep_conditioning);
	add_ints(j, "upsample_factor", o->upsample_factor, o->n_upsample_factor);
	add_bools(j, "upsample_residual", o->upsample_residual, o->n_upsample_residual);
	if (o->ltx2) {
		cJSON_AddStringToObject(j, "encoder_spatial_padding_mode",
		    o->encoder_spatial_padding_mode);
		cJSON_AddStringToObject(j, "decoder_spatial_padding_mode",
		    o->decoder_spatial_padding_mode);
		a = cJSON_AddArrayToObject(j, "upsample_type");
		for (int i = 0; i < o->n_upsample_type; i++)
			cJSON_AddItemToArray(a, cJSON_CreateString(o->upsample_type[i]));
	}
	return j;
}

/* ---- T5 ---- */

enum lq_status
diffusers_parse_t5(const cJSON *j, const char *path, struct t5_config *o,
    struct lq_error *err)
{
	struct cfg c = {j, path, err, 0};
	const cJSON *arch = cfg_item(&c, "architectures");
	if (arch != NULL) {
		const cJSON *a0 = cJSON_GetArrayItem(arch, 0);
		if (!cJSON_IsArray(arch) || !cJSON_IsString(a0))
			return cfg_fail(err, path, "architectures", "LQ-MODEL-003",
			    "\"architectures\" must be a list of class names");
		if (strcmp(a0->valuestring, "T5EncoderModel") != 0)
			return cfg_fail(err, path, "architectures", "LQ-MODEL-002",
			    "text encoder class \"%s\" is not supported (T5EncoderModel)",
			    a0->valuestring);
	}
	const cJSON *mt = cfg_item(&c, "model_type");
	if (mt != NULL && (!cJSON_IsString(mt) || strcmp(mt->valuestring, "t5") != 0))
		return cfg_fail(err, path, "model_type", "LQ-MODEL-002",
		    "model_type \"%s\" is not supported (t5)",
		    cJSON_IsString(mt) ? mt->valuestring : "?");
	memset(o, 0, sizeof(*o));
	o->vocab_size = cfg_int(&c, "vocab_size", 32128, 1);
	o->d_model = cfg_int(&c, "d_model", 512, 1);
	o->d_kv = cfg_int(&c, "d_kv", 64, 1);
	o->d_ff = cfg_int(&c, "d_ff", 2048, 1);
	o->num_layers = cfg_int(&c, "num_layers", 6, 1);
	o->num_heads = cfg_int(&c, "num_heads", 8, 1);
	o->relative_attention_num_buckets = cfg_int(&c, "relative_attention_num_buckets", 32, 2);
	o->relative_attention_max_distance = cfg_int(&c, "relative_attention_max_distance", 128, 1);
	o->layer_norm_epsilon = cfg_num(&c, "layer_norm_epsilon", 1e-6, 1);
	cfg_str(&c, "feed_forward_proj", "relu", o->feed_forward_proj,
	    sizeof(o->feed_forward_proj));
	o->pad_token_id = cfg_int(&c, "pad_token_id", 0, 0);
	o->eos_token_id = cfg_int(&c, "eos_token_id", 1, 0);
	if (c.failed)
		return LQ_FAILED;
	/* T5Config.__init__: act_info = feed_forward_proj.split("-") */
	const char *dash = strchr(o->feed_forward_proj, '-');
	if (dash && (strncmp(o->feed_forward_proj, "gated-", 6) != 0 || strchr(dash + 1, '-')))
		return cfg_fail(err, path, "feed_forward_proj", "LQ-MODEL-003",
		    "\"%s\" is not gated-ACT or ACT", o->feed_forward_proj);
	o->is_gated_act = dash != NULL;
	snprintf(o->dense_act_fn, sizeof(o->dense_act_fn), "%s",
	    dash ? dash + 1 : o->feed_forward_proj);
	if (strcmp(o->feed_forward_proj, "gated-gelu") == 0)
		snprintf(o->dense_act_fn, sizeof(o->dense_act_fn), "gelu_new");
	/* Saved configs also carry the derived keys; PretrainedConfig sets them
	 * from kwargs after __init__, so they win. */
	o->is_gated_act = cfg_bool(&c, "is_gated_act", o->is_gated_act);
	char act[32];
	cfg_str(&c, "dense_act_fn", o->dense_act_fn, act, sizeof(act));
	snprintf(o->dense_act_fn, sizeof(o->dense_act_fn), "%s", act);
	if (c.failed)
		return LQ_FAILED;
	if (strcmp(o->dense_act_fn, "gelu_new") != 0 && strcmp(o->dense_act_fn, "relu") != 0 &&
	    strcmp(o->dense_act_fn, "gelu_pytorch_tanh") != 0 && strcmp(o->dense_act_fn, "gelu") != 0)
		return cfg_fail(err, path, "dense_act_fn", "LQ-MODEL-006",
		    "activation \"%s\" is not implemented (gelu_new, gelu_pytorch_tanh, gelu, relu)",
		    o->dense_act_fn);
	return LQ_OK;
}

cJSON *
diffusers_t5_to_json(const struct t5_config *o)
{
	cJSON *j = cJSON_CreateObject();
	cJSON *a = cJSON_AddArrayToObject(j, "architectures");
	cJSON_AddItemToArray(a, cJSON_CreateString("T5EncoderModel"));
	cJSON_AddNumberToObject(j, "classifier_dropout", 0.0);
	cJSON_AddNumberToObject(j, "d_ff", o->d_ff);
	cJSON_AddNumberToObject(j, "d_kv", o->d_kv);
	cJSON_AddNumberToObject(j, "d_model", o->d_model);
	cJSON_AddNumberToObject(j, "decoder_start_token_id", 0);
	cJSON_AddStringToObject(j, "dense_act_fn", o->dense_act_fn);
	cJSON_AddNumberToObject(j, "dropout_rate", 0.0);
	cJSON_AddNumberToObject(j, "eos_token_id", o->eos_token_id);
	cJSON_AddStringToObject(j, "feed_forward_proj", o->feed_forward_proj);
	cJSON_AddNumberToObject(j, "initializer_factor", 1.0);
	cJSON_AddBoolToObject(j, "is_encoder_decoder", 0);
	cJSON_AddBoolToObject(j, "is_gated_act", o->is_gated_act);
	cJSON_AddNumberToObject(j, "layer_norm_epsilon", o->layer_norm_epsilon);
	cJSON_AddStringToObject(j, "model_type", "t5");
	cJSON_AddNumberToObject(j, "num_decoder_layers", o->num_layers);
	cJSON_AddNumberToObject(j, "num_heads", o->num_heads);
	cJSON_AddNumberToObject(j, "num_layers", o->num_layers);
	cJSON_AddNumberToObject(j, "pad_token_id", o->pad_token_id);
	cJSON_AddNumberToObject(j, "relative_attention_max_distance",
	    o->relative_attention_max_distance);
	cJSON_AddNumberToObject(j, "relative_attention_num_buckets",
	    o->relative_attention_num_buckets);
	cJSON_AddBoolToObject(j, "tie_word_embeddings", 0);
	cJSON_AddStringToObject(j, "torch_dtype", "float32");
	cJSON_AddStringToObject(j, "transformers_version", TRANSFORMERS_VERSION);
	cJSON_AddBoolToObject(j, "use_cache", 0);
	cJSON_AddNumberToObject(j, "vocab_size", o->vocab_size);
	return j;
}

/* ---- tokenizer ---- */

static char *
file_in(const char *dir, const char *name)
{
	char *p = xasprintf("%s/%s", dir, name);
	struct stat sb;
	if (stat(p, &sb) != 0 || !S_ISREG(sb.st_mode)) {
		free(p);
		return NULL;
	}
	return p;
}

void
diffusers_tokenizer_free(struct t5_tokenizer_files *t)
{
	free(t->dir);
	free(t->spiece_model);
	free(t->tokenizer_json);
	free(t->tokenizer_config);
	memset(t, 0, sizeof(*t));
}

enum lq_status
diffusers_parse_tokenizer(const char *dir, struct t5_tokenizer_files *o,
    struct lq_error *err)
{
	memset(o, 0, sizeof(*o));
	o->dir = xstrdup(dir);
	o->spiece_model = file_in(dir, "spiece.model");
	o->tokenizer_json = file_in(dir, "tokenizer.json");
	o->tokenizer_config = file_in(dir, "tokenizer_config.json");
	o->model_max_length = 512;
	o->extra_ids = 100;
	o->legacy = 1;
	snprintf(o->class_name, sizeof(o->class_name), "T5Tokenizer");
	if (o->tokenizer_config) {
		cJSON *j;
		if (diffusers_load_json(o->tokenizer_config, &j, err) != LQ_OK)
			goto fail;
		struct cfg c = {j, o->tokenizer_config, err, 0};
		cfg_str(&c, "tokenizer_class", "T5Tokenizer", o->class_name,
		    sizeof(o->class_name));
		const cJSON *v = cfg_item(&c, "model_max_length");
		if (v != NULL) {
			if (!cJSON_IsNumber(v) || !(v->valuedouble >= 1))
				cfg_bad(&c, "model_max_length", "a positive number");
			else
				o->model_max_length = v->valuedouble >= 9.2e18 ? INT64_MAX
				    : (int64_t)v->valuedouble;
		}
		o->extra_ids = cfg_int(&c, "extra_ids", 100, 0);
		o->legacy = cfg_bool(&c, "legacy", 1);
		cJSON_Delete(j);
		if (c.failed)
			goto fail;
	}
	if (strcmp(o->class_name, "T5Tokenizer") != 0 &&
	    strcmp(o->class_name, "T5TokenizerFast") != 0) {
		cfg_fail(err, o->tokenizer_config, "tokenizer_class", "LQ-MODEL-002",
		    "tokenizer class \"%s\" is not supported (T5Tokenizer, T5TokenizerFast)",
		    o->class_name);
		goto fail;
	}
	if (o->spiece_model == NULL) {
		cfg_fail(err, dir, NULL, "LQ-MODEL-007",
		    "tokenizer folder has no spiece.model (latentq tokenizes with SentencePiece%s)",
		    o->tokenizer_json ? "; tokenizer.json alone is not enough" : "");
		goto fail;
	}
	return LQ_OK;
fail:
	diffusers_tokenizer_free(o);
	return LQ_FAILED;
}

/* ---- folders ---- */

void
diffusers_free(struct diffusers_model *m)
{
	if (m == NULL)
		return;
	struct diffusers_component *cs[] = {&m->transformer, &m->vae, &m->text_encoder,
	    &m->tokenizer, &m->scheduler};
	for (size_t i = 0; i < LQ_ARRAY_LEN(cs); i++) {
		free(cs[i]->dir);
		free(cs[i]->config_path);
	}
	diffusers_tokenizer_free(&m->tokenizer_files);
	free(m->root);
	free(m);
}

const struct diffusers_layout *
diffusers_component_layout(const char *name)
{
	static const char *const none[] = {NULL};
	static const char *const tok_required[] = {"spiece.model", NULL};
	static const char *const tok_optional[] = {"tokenizer_config.json",
	    "special_tokens_map.json", "added_tokens.json", "tokenizer.json",
	    NULL};
	static const struct {
		const char *name;
		struct diffusers_layout layout;
	} known[] = {
		{"transformer", {"config.json", "diffusion_pytorch_model", none,
		    none}},
		{"vae", {"config.json", "diffusion_pytorch_model", none, none}},
		{"text_encoder", {"config.json", "model", none, none}},
		{"tokenizer", {NULL, NULL, tok_required, tok_optional}},
		{"scheduler", {"scheduler_config.json", NULL, none, none}},
	};
	static const struct diffusers_layout model_mixin = {"config.json",
	    "diffusion_pytorch_model", none, none};
	for (size_t i = 0; i < LQ_ARRAY_LEN(known); i++)
		if (strcmp(known[i].name, name) == 0)
			return &known[i].layout;
	return &model_mixin;
}

/* Fills c from model_index.json's entry `name` and the override. */
static enum lq_status
component_locate(const cJSON *index, const char *index_path, const char *root,
    const char *name, const char *override, struct diffusers_component *c,
    struct lq_error *err)
{
	memset(c, 0, sizeof(*c));
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(index, name);
	if (override != NULL) {
		struct stat sb;
		if (stat(override, &sb) != 0 || !S_ISDIR(sb.st_mode))
			return cfg_fail(err, override, name, "LQ-MODEL-001",
			    "%s override is not a folder: %s", name,
			    errno ? strerror(errno) : "not a directory");
		c->present = 1;
		c->dir = xstrdup(override);
		return LQ_OK;
	}
	if (e == NULL || cJSON_IsNull(e))
		return LQ_OK;
	const cJSON *lib = cJSON_GetArrayItem(e, 0), *cls = cJSON_GetArrayItem(e, 1);
	if (!cJSON_IsArray(e) || cJSON_GetArraySize(e) != 2)
		return cfg_fail(err, index_path, name, "LQ-MODEL-003",
		    "entry must be [library, class]");
	if (cJSON_IsNull(lib) && cJSON_IsNull(cls))
		return LQ_OK;
	if (!cJSON_IsString(lib) || !cJSON_IsString(cls))
		return cfg_fail(err, index_path, name, "LQ-MODEL-003",
		    "entry must be [library, class] strings or [null, null]");
	snprintf(c->library, sizeof(c->library), "%s", lib->valuestring);
	snprintf(c->class_name, sizeof(c->class_name), "%s", cls->valuestring);
	c->present = 1;
	c->dir = xasprintf("%s/%s", root, name);
	struct stat sb;
	if (stat(c->dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
		return cfg_fail(err, index_path, name, "LQ-MODEL-001",
		    "model_index.json lists %s but folder %s is missing", name, c->dir);
	return LQ_OK;
}

static enum lq_status
want_class(const struct diffusers_component *c, const char *index_path, const char *name,
    const char *want, const char *want2, struct lq_error *err)
{
	if (c->class_name[0] == '\0' || strcmp(c->class_name, want) == 0 ||
	    (want2 && strcmp(c->class_name, want2) == 0))
		return LQ_OK;
	return cfg_fail(err, index_path, name, "LQ-MODEL-002",
	    "%s class \"%s\" is not supported (latentq implements %s%s%s)", name,
	    c->class_name, want, want2 ? ", " : "", want2 ? want2 : "");
}

static enum lq_status
load_component_json(struct diffusers_component *c, const char *file, cJSON **j,
    struct lq_error *err)
{
	c->config_path = xasprintf("%s/%s", c->dir, file);
	return diffusers_load_json(c->config_path, j, err);
}

enum lq_status
diffusers_open(const char *dir, const struct diffusers_overrides *ov,
    struct diffusers_model **out, struct lq_error *err)
{
	static const struct diffusers_overrides none;
	if (ov == NULL)
		ov = &none;
	*out = NULL;
	char *index_path = xasprintf("%s/" DIFFUSERS_MODEL_INDEX, dir);
	cJSON *index = NULL, *j = NULL;
	struct diffusers_model *m = xcalloc(1, sizeof(*m));
	m->root = xstrdup(dir);
	if (diffusers_load_json(index_path, &index, err) != LQ_OK)
		goto fail;
	const char *pc = json_get_string(index, "_class_name", NULL);
	if (pc != NULL && strcmp(pc, "LTX2Pipeline") == 0) {
		cfg_fail(err, index_path, "_class_name", "LQ-MODEL-002",
		    "pipeline class \"LTX2Pipeline\" is LTX-2's: this takes an "
		    "LTXPipeline (LTX-Video) folder (LTX-2 folders are opened "
		    "by diffusers_open_ltx2: render, preflight, model add and "
		    "forward take them)");
		goto fail;
	}
	if (pc == NULL || strcmp(pc, "LTXPipeline") != 0) {
		cfg_fail(err, index_path, "_class_name", "LQ-MODEL-002",
		    "pipeline class \"%s\" is not supported (latentq implements LTXPipeline)",
		    pc ? pc : "(none)");
		goto fail;
	}
	snprintf(m->pipeline_class, sizeof(m->pipeline_class), "%s", pc);
	if (component_locate(index, index_path, dir, "transformer", ov->transformer,
	    &m->transformer, err) != LQ_OK ||
	    component_locate(index, index_path, dir, "vae", ov->vae, &m->vae, err) != LQ_OK ||
	    component_locate(index, index_path, dir, "text_encoder", ov->text_encoder,
	    &m->text_encoder, err) != LQ_OK ||
	    component_locate(index, index_path, dir, "tokenizer", ov->tokenizer, &m->tokenizer,
	    err) != LQ_OK ||
	    component_locate(index, index_path, dir, "scheduler", ov->scheduler, &m->scheduler,
	    err) != LQ_OK)
		goto fail;
	const char *missing = !m->transformer.present ? "transformer"
	    : !m->vae.present ? "vae" : !m->scheduler.present ? "scheduler" : NULL;
	if (missing) {
		cfg_fail(err, index_path, missing, "LQ-MODEL-005",
		    "the model has no %s (model_index.json lists none and no override names one)",
		    missing);
		goto fail;
	}
	if (want_class(&m->transformer, index_path, "transformer", "LTXVideoTransformer3DModel",
	    NULL, err) != LQ_OK ||
	    want_class(&m->vae, index_path, "vae", "AutoencoderKLLTXVideo", NULL, err) != LQ_OK ||
	    want_class(&m->text_encoder, index_path, "text_encoder", "T5EncoderModel", NULL,
	    err) != LQ_OK ||
	    want_class(&m->tokenizer, index_path, "tokenizer", "T5Tokenizer", "T5TokenizerFast",
	    err) != LQ_OK ||
	    want_class(&m->scheduler, index_path, "scheduler", "FlowMatchEulerDiscreteScheduler",
	    NULL, err) != LQ_OK)
		goto fail;

	if (load_component_json(&m->transformer,
	    diffusers_component_layout("transformer")->config, &j, err) != LQ_OK ||
	    diffusers_parse_transformer(j, m->transformer.config_path, &m->transformer_config,
	    err) != LQ_OK)
		goto fail;
	snprintf(m->transformer.class_name, sizeof(m->transformer.class_name),
	    "LTXVideoTransformer3DModel");
	cJSON_Delete(j);
	j = NULL;
	if (load_component_json(&m->vae, diffusers_component_layout("vae")->config,
	    &j, err) != LQ_OK ||
	    diffusers_parse_vae(j, m->vae.config_path, &m->vae_config, err) != LQ_OK)
		goto fail;
	snprintf(m->vae.class_name, sizeof(m->vae.class_name), "AutoencoderKLLTXVideo");
	cJSON_Delete(j);
	j = NULL;
	if (m->text_encoder.present) {
		if (load_component_json(&m->text_encoder,
		    diffusers_component_layout("text_encoder")->config, &j,
		    err) != LQ_OK ||
		    diffusers_parse_t5(j, m->text_encoder.config_path, &m->text_encoder_config,
		    err) != LQ_OK)
			goto fail;
		snprintf(m->text_encoder.class_name, sizeof(m->text_encoder.class_name),
		    "T5EncoderModel");
		cJSON_Delete(j);
		j = NULL;
	}
	if (m->tokenizer.present) {
		if (diffusers_parse_tokenizer(m->tokenizer.dir, &m->tokenizer_files, err) != LQ_OK)
			goto fail;
		if (m->tokenizer.class_name[0] == '\0')
			snprintf(m->tokenizer.class_name, sizeof(m->tokenizer.class_name), "%s",
			    m->tokenizer_files.class_name);
		if (m->tokenizer_files.tokenizer_config)
			m->tokenizer.config_path = xstrdup(m->tokenizer_files.tokenizer_config);
	}
	/* Scheduler: class check only; the sampler parses the rest. */
	if (load_component_json(&m->scheduler,
	    diffusers_component_layout("scheduler")->config, &j, err) != LQ_OK)
		goto fail;
	{
		struct cfg c = {j, m->scheduler.config_path, err, 0};
		if (check_class(&c, "FlowMatchEulerDiscreteScheduler") != LQ_OK)
			goto fail;
		snprintf(m->scheduler.class_name, sizeof(m->scheduler.class_name),
		    "FlowMatchEulerDiscreteScheduler");
	}
	cJSON_Delete(j);
	cJSON_Delete(index);
	free(index_path);
	*out = m;
	return LQ_OK;
fail:
	cJSON_Delete(j);
	cJSON_Delete(index);
	free(index_path);
	diffusers_free(m);
	return LQ_FAILED;
}

/* ---- LTX2Pipeline folders ---- */

enum lq_status
diffusers_pipeline_class(const char *dir, char *out, size_t n,
    struct lq_error *err)
{
	char *index_path = xasprintf("%s/" DIFFUSERS_MODEL_INDEX, dir);
	cJSON *index = NULL;
	enum lq_status s = diffusers_load_json(index_path, &index, err);
	if (s == LQ_OK) {
		const char *pc = json_get_string(index, "_class_name", NULL);
		if (pc == NULL)
			s = cfg_fail(err, index_path, "_class_name",
			    "LQ-MODEL-001", "model_index.json names no pipeline "
			    "class");
		else
			snprintf(out, n, "%s", pc);
	}
	cJSON_Delete(index);
	free(index_path);
	return s;
}

void
diffusers_ltx2_free(struct diffusers_ltx2_model *m)
{
	if (m == NULL)
		return;
	struct diffusers_component *cs[] = {&m->transformer, &m->vae,
	    &m->audio_vae, &m->vocoder, &m->connectors, &m->text_encoder,
	    &m->tokenizer, &m->scheduler};
	for (size_t i = 0; i < LQ_ARRAY_LEN(cs); i++) {
		free(cs[i]->dir);
		free(cs[i]->config_path);
	}
	free(m->root);
	free(m);
}

enum lq_status
diffusers_open_ltx2(const char *dir, const struct diffusers_overrides *ov,
    struct diffusers_ltx2_model **out, struct lq_error *err)
{
	static const struct diffusers_overrides none;
	if (ov == NULL)
		ov = &none;
	*out = NULL;
	char *index_path = xasprintf("%s/" DIFFUSERS_MODEL_INDEX, dir);
	cJSON *index = NULL, *j = NULL;
	struct diffusers_ltx2_model *m = xcalloc(1, sizeof(*m));
	m->root = xstrdup(dir);
	if (diffusers_load_json(index_path, &index, err) != LQ_OK)
		goto fail;
	const char *pc = json_get_string(index, "_class_name", NULL);
	if (pc == NULL || strcmp(pc, "LTX2Pipeline") != 0) {
		cfg_fail(err, index_path, "_class_name", "LQ-MODEL-002",
		    "pipeline class \"%s\" is not LTX2Pipeline",
		    pc ? pc : "(none)");
		goto fail;
	}
	/* components in pipeline_ltx2.py's __init__ order */
	struct {
		const char *name, *override;
		struct diffusers_component *c;
		int required;
		const char *cls, *cls2;
	} comps[] = {
		{"scheduler", ov->scheduler, &m->scheduler, 1,
		    "FlowMatchEulerDiscreteScheduler", NULL},
		{"vae", ov->vae, &m->vae, 1, "AutoencoderKLLTX2Video", NULL},
		{"audio_vae", NULL, &m->audio_vae, 1, "AutoencoderKLLTX2Audio",
		    NULL},
		{"text_encoder", ov->text_encoder, &m->text_encoder, 0,
		    "Gemma3ForConditionalGeneration", NULL},
		{"tokenizer", ov->tokenizer, &m->tokenizer, 0,
		    "GemmaTokenizer", "GemmaTokenizerFast"},
		{"connectors", NULL, &m->connectors, 1, "LTX2TextConnectors",
		    NULL},
		{"transformer", ov->transformer, &m->transformer, 1,
		    "LTX2VideoTransformer3DModel", NULL},
		{"vocoder", NULL, &m->vocoder, 1, "LTX2Vocoder",
		    "LTX2VocoderWithBWE"},
	};
	for (size_t i = 0; i < LQ_ARRAY_LEN(comps); i++) {
		if (component_locate(index, index_path, dir, comps[i].name,
		    comps[i].override, comps[i].c, err) != LQ_OK)
			goto fail;
		if (comps[i].required && !comps[i].c->present) {
			cfg_fail(err, index_path, comps[i].name, "LQ-MODEL-005",
			    "the LTX-2 model has no %s (model_index.json lists "
			    "none and no override names one)", comps[i].name);
			goto fail;
		}
		if (want_class(comps[i].c, index_path, comps[i].name,
		    comps[i].cls, comps[i].cls2, err) != LQ_OK)
			goto fail;
	}
	const char *cf = diffusers_component_layout("audio_vae")->config;
	if (load_component_json(&m->audio_vae, cf, &j, err) != LQ_OK ||
	    diffusers_parse_ltx2_audio_vae(j, m->audio_vae.config_path,
	    &m->audio_vae_config, err) != LQ_OK)
		goto fail;
	cJSON_Delete(j);
	j = NULL;
	if (load_component_json(&m->vocoder, cf, &j, err) != LQ_OK)
		goto fail;
	if (diffusers_ltx2_vocoder_is_bwe(j)) {
		/* LTX-2.3's: stage 1, then bandwidth extension */
		m->vocoder_bwe = 1;
		if (diffusers_parse_ltx2_vocoder_bwe(j, m->vocoder.config_path,
		    &m->vocoder_bwe_config, err) != LQ_OK)
			goto fail;
		m->vocoder_config = m->vocoder_bwe_config.vocoder;
		m->audio_sample_rate = m->vocoder_bwe_config.output_sampling_rate;
		m->audio_channels = m->vocoder_bwe_config.vocoder.out_channels;
	} else {
		if (diffusers_parse_ltx2_vocoder(j, m->vocoder.config_path,
		    &m->vocoder_config, err) != LQ_OK)
			goto fail;
		m->audio_sample_rate = m->vocoder_config.output_sampling_rate;
		m->audio_channels = m->vocoder_config.out_channels;
	}
	cJSON_Delete(j);
	j = NULL;
	if (load_component_json(&m->connectors, cf, &j, err) != LQ_OK ||
	    diffusers_parse_ltx2_connectors(j,
	    m->connectors.config_path, &m->connectors_config, err) != LQ_OK)
		goto fail;
	cJSON_Delete(j);
	j = NULL;
	m->transformer.config_path = xasprintf("%s/%s", m->transformer.dir, cf);
	m->vae.config_path = xasprintf("%s/%s", m->vae.dir, cf);
	if (load_component_json(&m->scheduler,
	    diffusers_component_layout("scheduler")->config, &j, err) != LQ_OK)
		goto fail;
	{
		struct cfg c = {j, m->scheduler.config_path, err, 0};
		if (check_class(&c, "FlowMatchEulerDiscreteScheduler") != LQ_OK)
			goto fail;
	}
	cJSON_Delete(j);
	cJSON_Delete(index);
	free(index_path);
	*out = m;
	return LQ_OK;
fail:
	cJSON_Delete(j);
	cJSON_Delete(index);
	free(index_path);
	diffusers_ltx2_free(m);
	return LQ_FAILED;
}

/* ---- WanPipeline folder ---- */

void
diffusers_wan_free(struct diffusers_wan_model *m)
{
	if (m == NULL)
		return;
	struct diffusers_component *cs[] = {&m->transformer, &m->vae,
	    &m->text_encoder, &m->tokenizer, &m->scheduler};
	for (size_t i = 0; i < LQ_ARRAY_LEN(cs); i++) {
		free(cs[i]->dir);
		free(cs[i]->config_path);
	}
	free(m->root);
	free(m);
}

enum lq_status
diffusers_open_wan(const char *dir, const struct diffusers_overrides *ov,
    struct diffusers_wan_model **out, struct lq_error *err)
{
	static const struct diffusers_overrides none;
	if (ov == NULL)
		ov = &none;
	*out = NULL;
	char *index_path = xasprintf("%s/" DIFFUSERS_MODEL_INDEX, dir);
	cJSON *index = NULL, *j = NULL;
	struct diffusers_wan_model *m = xcalloc(1, sizeof(*m));
	struct diffusers_component t2 = {0};
	m->root = xstrdup(dir);
	if (diffusers_load_json(index_path, &index, err) != LQ_OK)
		goto fail;
	const char *pc = json_get_string(index, "_class_name", NULL);
	if (pc == NULL || strcmp(pc, DIFFUSERS_WAN_PIPELINE) != 0) {
		cfg_fail(err, index_path, "_class_name", "LQ-MODEL-002",
		    "pipeline class \"%s\" is not " DIFFUSERS_WAN_PIPELINE,
		    pc ? pc : "(none)");
		goto fail;
	}
	/* components in pipeline_wan.py's __init__ order */
	struct {
		const char *name, *override;
		struct diffusers_component *c;
		int required;
		const char *cls;
	} comps[] = {
		{"tokenizer", ov->tokenizer, &m->tokenizer, 0, NULL},
		{"text_encoder", ov->text_encoder, &m->text_encoder, 0,
		    "UMT5EncoderModel"},
		{"vae", ov->vae, &m->vae, 1, "AutoencoderKLWan"},
		{"scheduler", ov->scheduler, &m->scheduler, 1,
		    "UniPCMultistepScheduler"},
		{"transformer", ov->transformer, &m->transformer, 1,
		    "WanTransformer3DModel"},
	};
	for (size_t i = 0; i < LQ_ARRAY_LEN(comps); i++) {
		if (component_locate(index, index_path, dir, comps[i].name,
		    comps[i].override, comps[i].c, err) != LQ_OK)
			goto fail;
		if (comps[i].required && !comps[i].c->present) {
			cfg_fail(err, index_path, comps[i].name, "LQ-MODEL-005",
			    "the Wan model has no %s (model_index.json lists "
			    "none and no override names one)", comps[i].name);
			goto fail;
		}
		if (comps[i].cls != NULL && want_class(comps[i].c, index_path,
		    comps[i].name, comps[i].cls, NULL, err) != LQ_OK)
			goto fail;
	}
	/* Wan 2.2 A14B: a low-noise expert below boundary_ratio */
	if (component_locate(index, index_path, dir, "transformer_2", NULL,
	    &t2, err) != LQ_OK)
		goto fail;
	const cJSON *br = cJSON_GetObjectItemCaseSensitive(index,
	    "boundary_ratio");
	if (t2.present || (br != NULL && !cJSON_IsNull(br))) {
		cfg_fail(err, index_path, t2.present ? "transformer_2" :
		    "boundary_ratio", "LQ-MODEL-006", "Wan 2.2's two-expert "
		    "denoising (transformer_2, boundary_ratio) is not "
		    "implemented; latentq renders Wan 2.1 text-to-video");
		error_set_hint(err, "use a Wan 2.1 T2V folder (transformer_2 "
		    "[null, null], boundary_ratio null)");
		goto fail;
	}
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(index,
	    "expand_timesteps"))) {
		cfg_fail(err, index_path, "expand_timesteps", "LQ-MODEL-006",
		    "expand_timesteps (Wan 2.2 TI2V's per-token timesteps) is "
		    "not implemented");
		error_set_hint(err, "use a Wan 2.1 T2V folder "
		    "(expand_timesteps false)");
		goto fail;
	}
	const char *cf = diffusers_component_layout("transformer")->config;
	m->transformer.config_path = xasprintf("%s/%s", m->transformer.dir, cf);
	m->vae.config_path = xasprintf("%s/%s", m->vae.dir, cf);
	if (load_component_json(&m->scheduler,
	    diffusers_component_layout("scheduler")->config, &j, err) != LQ_OK)
		goto fail;
	{
		struct cfg c = {j, m->scheduler.config_path, err, 0};
		if (check_class(&c, "UniPCMultistepScheduler") != LQ_OK)
			goto fail;
	}
	cJSON_Delete(j);
	cJSON_Delete(index);
	free(index_path);
	free(t2.dir);
	*out = m;
	return LQ_OK;
fail:
	cJSON_Delete(j);
	cJSON_Delete(index);
	free(index_path);
	free(t2.dir);
	diffusers_wan_free(m);
	return LQ_FAILED;
}
