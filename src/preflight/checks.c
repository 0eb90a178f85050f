/*
 * checks.c — the per-job checks: ranges, geometry (and --snap), sampling
 * schedule, prompt length and embeddings, batch and mesh, LoRA, device
 * memory and limits, output paths.  Each appends located problems to the
 * job's list and never stops at the first; later checks use what earlier
 * ones resolved (snapped geometry, inferred mesh) and skip what they cannot
 * judge (no model: no token count).
 *
 * Model math mirrors diffusers 0.40 (58eb52c): pipelines/ltx/pipeline_ltx.py
 * (LTXPipeline.check_inputs, __call__), models/transformers/
 * transformer_ltx.py (LTXVideoRotaryPosEmbed: base_num_frames 20,
 * base_height 2048, base_width 2048).  The sigma schedule is not computed
 * here: preflight asks the sampler (scheduler_set_timesteps), as the
 * render does.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/digest.h"
#include "core/json.h"
#include "core/util.h"
#include "gpu/caps.h"
#include "media/media.h"
#include "model/ref.h"
#include "nn/plan.h"
#include "nn/weights.h"
#include "model/safetensors.h"
#include "nn/ltx2_audio_vae.h"
#include "nn/ltx2_vocoder.h"
#include "nn/ltxv_transformer.h"
#include "nn/ltxv_vae.h"
#include "nn/wan_transformer.h"
#include "nn/wan_vae.h"
#include "preflight/preflight-int.h"
#include "sampler/latents.h"
#include "sampler/unipc.h"
#include "text/tokenizer.h"

#define RAW_ROPE_BASE_FRAMES 20
#define RAW_ROPE_BASE_SIZE 2048
#define MAX_STEPS 1000		/* num_train_timesteps of every LTX scheduler */

struct lq_error *
pf_job_add(struct pf_job_state *s, const char *key, enum lq_status status,
    const char *code, const char *fmt, ...)
{
	struct lq_error *e = pf_list_add(s->out, status, code, "%s", "");
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e->message, sizeof(e->message), fmt, ap);
	util_utf8_trim(e->message);
	va_end(ap);
	struct manifest_where w;
	manifest_job_where(s->m, s->job, key, &w);
	error_set_where(e, s->m->path, w.line, w.column);
	if (w.written)
		error_set_field(e, "%s", w.field);
	else
		error_set_field(e, "jobs[%zu].%s", s->job->entry, key);
	return e;
}

/*
 * v into buf (n bytes) for a message: control characters escaped, cut at
 * a character with "…" when long (util_text_fit), and in quotes when it
 * is empty or starts or ends with a space, so "precision:  bf16" cannot
 * be read as bf16.
 */
static const char *
value_text(char *buf, size_t n, const char *v)
{
	size_t l = strlen(v);
	if (l > 0 && v[0] != ' ' && v[l - 1] != ' ')
		return util_text_fit(buf, n, v);
	if (n < 6)
		return util_text_fit(buf, n, v);
	util_text_fit(buf + 1, n - 2, v);
	buf[0] = '"';
	strcat(buf, "\"");
	return buf;
}

const char *
pf_job_text(struct pf_job_state *s, const char *key, char *buf, size_t n)
{
	struct manifest_where w;
	if (manifest_job_where(s->m, s->job, key, &w) && w.text)
		return value_text(buf, n, w.text);
	const cJSON *v = s->config;
	char part[64];
	const char *k = key;
	while (v && *k) {
		size_t l = strcspn(k, ".");
		snprintf(part, sizeof(part), "%.*s", (int)l, k);
		v = cJSON_GetObjectItemCaseSensitive(v, part);
		k += l + (k[l] == '.');
	}
	if (v == NULL) {
		snprintf(buf, n, "(none)");
	} else if (cJSON_IsString(v)) {
		value_text(buf, n, v->valuestring);
	} else {
		char *t = cJSON_PrintUnformatted(v);
		util_text_fit(buf, n, t ? t : "?");
		cJSON_free(t);
	}
	return buf;
}

void
pf_job_copy(struct pf_job_state *s, const struct pf_list *from,
    const char *key)
{
	for (size_t i = 0; i < from->n; i++) {
		const struct lq_error *src = &from->v[i];
		const char *k = src->field[0] ? src->field : key;
		struct lq_error *e = pf_job_add(s, k, src->status, src->code,
		    "%s", src->message);
		snprintf(e->hint, sizeof(e->hint), "%s", src->hint);
	}
}

static double
num(const struct pf_job_state *s, const char *key, double def)
{
	return json_get_number(s->config, key, def);
}

static int
present(const struct pf_job_state *s, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(s->config, key);
	return v != NULL && !cJSON_IsNull(v);
}

static void
set_int(cJSON *obj, const char *key, int64_t v)
{
	cJSON *n = cJSON_CreateNumber((double)v);
	if (cJSON_GetObjectItemCaseSensitive(obj, key))
		cJSON_ReplaceItemInObjectCaseSensitive(obj, key, n);
	else
		cJSON_AddItemToObject(obj, key, n);
}

/* ---- manifest: required keys and ranges ------------------------------ */

static void
range(struct pf_job_state *s, const char *key, double lo, int lo_open,
    double hi, const char *rule, const char *hint)
{
	if (!present(s, key))
		return;
	double v = num(s, key, 0);
	if ((lo_open ? v > lo : v >= lo) && v <= hi)
		return;
	char t[64];
	struct lq_error *e = pf_job_add(s, key, LQ_FAILED, "LQ-CFG-002",
	    "%s is out of range: %s", pf_job_text(s, key, t, sizeof(t)), rule);
	error_set_hint(e, "%s", hint);
}
/*
 * The supplied-tensor inputs (latents, decode_noise): the file exists and
 * its header is valid (safetensors.h validates every span without reading
 * data), and a latents file names its tensor as the render reads it.
 */
static void
check_input_file(struct pf_job_state *s, const char *key)
{
	const char *path = json_get_string(s->config, key, NULL);
	if (path == NULL)
		return;
	struct st_file *f = NULL;
	struct lq_error fe;
	error_clear(&fe);
	if (st_file_open(path, &f, &fe) != LQ_OK) {
		struct lq_error *e = pf_job_add(s, key, LQ_FAILED, "LQ-CFG-003",
		    "%s is not a readable safetensors file: %s", path,
		    fe.message);
		error_set_hint(e, "write it with safetensors' save_file, "
		    "tensors named as diffusers names them");
		return;
	}
	if (strcmp(key, "latents") == 0 && st_file_find(f, "latents") == NULL &&
	    st_file_count(f) != 1) {
		struct lq_error *e = pf_job_add(s, key, LQ_FAILED, "LQ-CFG-003",
		    "%s has no tensor named latents (and more than one tensor)",
		    path);
		error_set_hint(e, "name the initial latents `latents`, packed "
		    "[B, N, C] or [B, C, F, H, W]");
	}
	st_file_close(f);
}


/*
 * The job's name is shown by status, show and list and goes into file names
 * through {name}: printable UTF-8 only.  A control character (a newline,
 * ESC, DEL or a C1 control) or a byte that is not UTF-8 is refused.
 */
static void
check_name(struct pf_job_state *s)
{
	const char *name = s->job->name;
	for (const char *p = name; *p;) {
		uint32_t cp;
		size_t n = util_utf8_decode(p, &cp);
		const char *what = n == 0 ? "a byte that is not UTF-8" :
		    cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f) ?
		    "a control character" : NULL;
		if (what != NULL) {
			char *shown = util_escape_control(name);
			struct lq_error *e = pf_job_add(s, "name", LQ_FAILED,
			    "LQ-NAME-001", "the name \"%s\" has %s at byte %zu; "
			    "names are printable text", shown, what,
			    (size_t)(p - name));
			error_set_hint(e, "letters, digits, spaces and "
			    "punctuation");
			free(shown);
			return;
		}
		p += n;
	}
}

void
pf_check_config(struct pf_job_state *s)
{
	check_name(s);
	if (!present(s, "model")) {
		struct lq_error *e = pf_job_add(s, "model", LQ_FAILED,
		    "LQ-CFG-001", "no model: every job needs `model:` (in the "
		    "entry or in defaults)");
		error_set_hint(e, "add `model: PATH` to defaults");
	}
	range(s, "frame_rate", 0, 1, 1000, "frame_rate must be > 0 and <= 1000",
	    "25 is LTX-Video's rate");
	range(s, "decode_timestep", 0, 0, 1, "decode_timestep is in [0, 1]",
	    "0 (or 0.05 for timestep-conditioned VAEs)");
	range(s, "decode_noise_scale", 0, 0, 1,
	    "decode_noise_scale is in [0, 1]", "0.025, or leave it out");
	range(s, "max_sequence_length", 1, 0, 4096,
	    "max_sequence_length is in [1, 4096]", "128, as LTXPipeline");
	range(s, "max_attempts", 1, 0, 1000, "max_attempts is in [1, 1000]", "3");
	check_input_file(s, "latents");
	check_input_file(s, "decode_noise");
	check_input_file(s, "noise");
	enum nn_plan_choice ws;
	if (nn_plan_choice_parse(s->jc.weight_streaming, &ws) != 0) {
		char t[64];
		struct lq_error *e = pf_job_add(s, "weight_streaming", LQ_FAILED,
		    "LQ-CFG-002", "%s is out of range: weight_streaming is "
		    "auto, on or off", pf_job_text(s, "weight_streaming", t,
		    sizeof(t)));
		error_set_hint(e, "auto: stream the transformer's blocks only "
		    "when its weights do not fit next to the activations");
	}
	enum gpu_precision prec;
	if (gpu_precision_parse(s->jc.precision, &prec) != 0) {
		char t[64], vals[32];
		struct lq_error *e = pf_job_add(s, "precision", LQ_FAILED,
		    "LQ-CFG-002", "%s is out of range: precision is %s",
		    pf_job_text(s, "precision", t, sizeof(t)),
		    gpu_precision_list(vals, sizeof(vals)));
		/* the nearest value: bfloat16 / bf16 / fp16 / float16 /
		 * half name the 16-bit types, anything else f32 */
		char v[64];
		snprintf(v, sizeof(v), "%s", s->jc.precision != NULL ?
		    s->jc.precision : "");
		for (char *c = v; *c; c++)	/* ASCII case only */
			*c = (char)(*c >= 'A' && *c <= 'Z' ? *c + 32 : *c);
		const char *near = strstr(v, "bf") ? "bf16" :
		    strstr(v, "16") || strstr(v, "half") ? "f16" : "f32";
		error_set_hint(e, "try %s; f32 (the default) matches "
		    "diffusers' float32 goldens, bf16 and f16 round the "
		    "transformer's matrix-product operands as GPU tensor cores "
		    "do", near);
	}
	for (size_t i = 0; i < s->jc.n_loras; i++) {
		double sc = s->jc.loras[i].scale;
		if (!(fabs(sc) <= 100)) {
			char key[48], t[64];
			snprintf(key, sizeof(key), "loras[%zu].scale", i);
			struct lq_error *e = pf_job_add(s, key, LQ_FAILED,
			    "LQ-CFG-002", "%s is out of range: |scale| <= 100",
			    pf_job_text(s, key, t, sizeof(t)));
			error_set_hint(e, "1.0 applies the LoRA as trained");
		}
	}
}

/* ---- model ----------------------------------------------------------- */

void
pf_check_model(struct pf_job_state *s)
{
	if (s->jc.model == NULL)
		return;
	/* Folders named by URL: downloaded into the cache only when asked. */
	const char *const *keys = job_model_keys;
	const char *vals[JOB_MODEL_KEYS];
	job_model_values(&s->jc, vals);
	int refused = 0;
	for (size_t i = 0; i < JOB_MODEL_KEYS; i++) {
		if (vals[i] == NULL || !model_ref_is_url(vals[i]))
			continue;
		if (s->ctx->opt->fetch_model == NULL) {
			char *dir = model_ref_cache_dir(vals[i]);
			struct lq_error *e = pf_job_add(s, keys[i], LQ_FAILED,
			    "LQ-MDL-012", "%s is a URL; latentq downloads a model "
			    "only when asked", vals[i]);
			error_set_hint(e, "pass --allow-download to fetch it into "
			    "%s, or run `latentq model pull --name NAME URL... "
			    "DIR` first and write %s: NAME", dir, keys[i]);
			free(dir);
			refused = 1;
			continue;
		}
		struct lq_error ferr;
		error_clear(&ferr);
		if (s->ctx->opt->fetch_model(vals[i], i == 0 ? NULL : keys[i],
		    &ferr) != LQ_OK) {
			/* a retryable failure (the network, a 5xx) stays one:
			 * submit leaves the job out and exits 75 */
			int retry = ferr.status == LQ_RETRY;
			struct lq_error *e = pf_job_add(s, keys[i], retry ?
			    LQ_RETRY : LQ_FAILED, ferr.code, "download failed: "
			    "%s", ferr.message);
			if (ferr.hint[0] != '\0')
				error_set_hint(e, "%s", ferr.hint);
			else if (retry)
				error_set_hint(e, "it may pass next time: run the "
				    "command again (what was fetched is kept)");
			refused = 1;
		}
	}
	if (refused)
		return;
	/* The loader resolved paths; model/ref.h says what is a name. */
	struct model_ref_resolver res = {s->ctx->opt->resolve_ctx,
	    s->ctx->opt->resolve_model};
	struct model_ref ref;
	struct lq_error rerr;
	error_clear(&rerr);
	if (model_ref_resolve(s->jc.model, s->jc.transformer, s->jc.vae,
	    s->jc.text_encoder, s->jc.scheduler, NULL, &res, &ref,
	    &rerr) != LQ_OK) {
		struct lq_error *e = pf_job_add(s, "model", LQ_FAILED,
		    "LQ-MDL-001", "\"%s\" is not a folder nor a registered "
		    "model name", s->jc.model);
		error_set_hint(e, "write a path (./%s) or register it with "
		    "`latentq model add`", s->jc.model);
		return;
	}
	struct diffusers_overrides ov = model_ref_overrides(&ref);
	s->pm = pf_model_get(s->ctx, ref.root, &ov);
	model_ref_clear(&ref);
	pf_job_copy(s, &s->pm->problems, "model");

	const char *pin = s->jc.model_digest;
	if (pin != NULL && s->pm->dm != NULL) {
		const char *want = pin;
		if (strncmp(want, "blake2b:", 8) == 0)
			want += 8;
		struct lq_error err;
		error_clear(&err);
		const char *have = pf_model_digest(s->pm, s->ctx->opt->hash_cache, &err);
		size_t wl = strlen(want);
		if (have == NULL) {
			struct lq_error *e = pf_job_add(s, "model_digest",
			    LQ_FAILED, "LQ-MDL-011", "cannot hash the model: %s",
			    err.message);
			error_set_hint(e, "check the folder's permissions");
		} else if (wl < 12 || wl > 64 || strncmp(have, want, wl) != 0) {
			struct lq_error *e = pf_job_add(s, "model_digest",
			    LQ_FAILED, "LQ-MDL-011", "the model's digest is %s, "
			    "not the pinned %s%s", have, want, wl < 12
			    ? " (a pin needs at least 12 hex digits)" : "");
			error_set_hint(e, "the folder changed since it was "
			    "pinned; pin %.16s after checking it", have);
		}
	}
}

/* ---- geometry -------------------------------------------------------- */

static int64_t
gcd64(int64_t a, int64_t b)
{
	while (b) {
		int64_t t = a % b;
		a = b;
		b = t;
	}
	return a;
}

/* Checks one of height/width against `grid`; snaps when asked. */
static int
check_grid(struct pf_job_state *s, const char *key, const char *code,
    int64_t *v, int64_t grid, const char *why)
{
	if (*v % grid == 0)
		return 1;
	int64_t lo = *v / grid * grid, hi = lo + grid;
	char t[64], alt[96];
	pf_job_text(s, key, t, sizeof(t));
	if (lo >= grid)
		snprintf(alt, sizeof(alt), "%" PRId64 " or %" PRId64, lo, hi);
	else
		snprintf(alt, sizeof(alt), "%" PRId64, hi);
	int64_t snap = (lo >= grid && *v - lo < hi - *v) ? lo : hi;
	if (s->ctx->opt->snap) {
		struct lq_error *e = pf_job_add(s, key, LQ_WARN, code,
		    "%s is not a multiple of %" PRId64 " (%s); snapped to %"
		    PRId64, t, grid, why, snap);
		error_set_hint(e, "nearest valid: %s", alt);
		*v = snap;
		set_int(s->config, key, snap);
		s->snapped = 1;
		return 1;
	}
	struct lq_error *e = pf_job_add(s, key, LQ_FAILED, code,
	    "%s is not a multiple of %" PRId64 " (%s)", t, grid, why);
	error_set_hint(e, "nearest valid: %s", alt);
	return 0;
}

/*
 * An image (image:, or a condition's image at `field`): a PNG or JPEG the
 * render can read, of exactly the job's size (latentq does not resample
 * it), with a patch_size_t 1 transformer.  Its content digest is recorded
 * as image_digest in `digest_into` (the config, or the condition's
 * mapping), so it is part of the job's config digest (a changed image is
 * a different job) and the render checks the file still has it.
 */
static void
check_image_file(struct pf_job_state *s, const char *field, const char *path,
    cJSON *digest_into)
{
	uint8_t *rgb = NULL;
	int h = 0, w = 0;
	struct lq_error fe;
	error_clear(&fe);
	if (media_read_image(path, &rgb, &h, &w, &fe) != LQ_OK) {
		struct lq_error *e = pf_job_add(s, field, LQ_FAILED, "LQ-IMG-001",
		    "%s is not a readable PNG or JPEG image: %s", path, fe.message);
		error_set_hint(e, "give a PNG or JPEG of the job's width x height");
		return;
	}
	free(rgb);
	/* a two-stage job's conditions are stage 2's size (stage 1 resizes
	 * them as upstream does) */
	const struct job_second_stage *ss = &s->jc.second_stage;
	int64_t eh = ss->present ? ss->height : s->height;
	int64_t ew = ss->present ? ss->width : s->width;
	if (s->geometry_ok && (h != eh || w != ew)) {
		struct lq_error *e = pf_job_add(s, field, LQ_FAILED, "LQ-IMG-002",
		    "image %s is %dx%d (width x height); the job renders %" PRId64
		    "x%" PRId64 "%s and latentq does not resample images", path, w,
		    h, ew, eh, ss->present ? " in its second stage" : "");
		if (ss->present)
			error_set_hint(e, "resize the image to %" PRId64 "x%" PRId64
			    ", or set second_stage's width: %d and height: %d",
			    ew, eh, w, h);
		else
			error_set_hint(e, "resize the image to %" PRId64 "x%"
			    PRId64 ", or set width: %d and height: %d", ew, eh,
			    w, h);
		return;
	}
	if (s->pm && s->pm->dm && s->pm->dm->transformer_config.patch_size_t != 1) {
		struct lq_error *e = pf_job_add(s, field, LQ_FAILED, "LQ-IMG-002",
		    "image-to-video needs the transformer's patch_size_t 1, not %d",
		    s->pm->dm->transformer_config.patch_size_t);
		error_set_hint(e, "use an LTX-Video transformer (patch_size_t 1)");
		return;
	}
	char hex[DIGEST_HEX_SIZE];
	if (digest_file(path, hex, &fe) == LQ_OK) {
		cJSON_DeleteItemFromObjectCaseSensitive(digest_into, "image_digest");
		cJSON_AddStringToObject(digest_into, "image_digest", hex);
	}
}

void
pf_check_image(struct pf_job_state *s)
{
	const char *path = json_get_string(s->config, "image", NULL);
	if (path != NULL)
		check_image_file(s, "image", path, s->config);
}

void
pf_check_geometry(struct pf_job_state *s)
{
	static const char *const keys[3] = { "height", "width", "num_frames" };
	int64_t *vals[3] = { &s->height, &s->width, &s->num_frames };
	int ok = 1;
	for (int i = 0; i < 3; i++) {
		*vals[i] = json_get_int(s->config, keys[i], 0);
		if (*vals[i] <= 0) {
			char t[64];
			struct lq_error *e = pf_job_add(s, keys[i], LQ_FAILED,
			    "LQ-GEOM-004", "%s must be positive",
			    pf_job_text(s, keys[i], t, sizeof(t)));
			error_set_hint(e, "%s", i == 0 ? "512" : i == 1 ? "704"
			    : "161 (or 8k + 1 frames)");
			ok = 0;
		}
	}
	/* LTXPipeline.check_inputs: height and width divisible by 32. */
	int64_t sp = 1, tp = 0, patch = 1, patch_t = 1;
	int wan = 0;
	char why[160];
	if (s->pm && s->pm->dm) {
		sp = s->pm->dm->vae_config.spatial_compression_ratio;
		tp = s->pm->dm->vae_config.temporal_compression_ratio;
		patch = s->pm->dm->transformer_config.patch_size;
		patch_t = s->pm->dm->transformer_config.patch_size_t;
	} else if (s->pm && s->pm->l2) {
		/* LTX2Pipeline: patch 1 (the released checkpoints';
		 * pf_check_ltx2 refuses others) */
		sp = s->pm->l2_v.spatial_compression_ratio;
		tp = s->pm->l2_v.temporal_compression_ratio;
	} else if (s->pm && s->pm->wan) {
		/* WanPipeline: multiples of vae_scale_factor_spatial x the
		 * transformer's patch (its own rule, not LTX's 32), frames
		 * vae_scale_factor_temporal k + 1; upstream rounds both
		 * with a warning, latentq refuses (or snaps frames) */
		const struct wan_transformer_config *wt = &s->pm->wan_t;
		sp = s->pm->wan_v.scale_factor_spatial;
		tp = s->pm->wan_v.scale_factor_temporal;
		patch = wt->patch_size[1] / gcd64(wt->patch_size[1],
		    wt->patch_size[2]) * wt->patch_size[2];
		wan = 1;
	}
	int have_model = s->pm && (s->pm->dm || s->pm->l2 || s->pm->wan);
	/* diffusers_parse_* refuse values below 1; be safe all the same. */
	if (sp < 1)
		sp = 1;
	if (patch < 1)
		patch = 1;
	if (patch_t < 1)
		patch_t = 1;
	if (have_model && tp < 1)
		tp = 1;
	int64_t model_grid = sp * patch;
	int64_t grid = wan ? model_grid : model_grid / gcd64(model_grid, 32) *
	    32;
	if (wan) {
		snprintf(why, sizeof(why), "WanPipeline: VAE spatial %" PRId64
		    " × patch %" PRId64, sp, patch);
	} else if (have_model) {
		if (grid == model_grid)
			snprintf(why, sizeof(why), "VAE spatial compression %"
			    PRId64 " × patch %" PRId64, sp, patch);
		else
			snprintf(why, sizeof(why), "VAE spatial compression %"
			    PRId64 " × patch %" PRId64 " = %" PRId64
			    "; LTXPipeline needs multiples of 32", sp, patch,
			    model_grid);
	} else {
		snprintf(why, sizeof(why), "LTXPipeline needs multiples of 32");
	}
	if (s->height > 0)
		ok &= check_grid(s, "height", "LQ-GEOM-001", &s->height, grid, why);
	if (s->width > 0)
		ok &= check_grid(s, "width", "LQ-GEOM-002", &s->width, grid, why);
	int64_t tgrid = tp * patch_t;
	if (s->num_frames > 0 && tgrid > 0 && (s->num_frames - 1) % tgrid != 0) {
		int64_t k = (s->num_frames - 1) / tgrid;
		int64_t lo = tgrid * k + 1, hi = lo + tgrid;
		int64_t snap = (s->num_frames - lo < hi - s->num_frames) ? lo : hi;
		char t[64], alt[96];
		pf_job_text(s, "num_frames", t, sizeof(t));
		snprintf(alt, sizeof(alt), "%" PRId64 " or %" PRId64, lo, hi);
		if (s->ctx->opt->snap) {
			struct lq_error *e = pf_job_add(s, "num_frames", LQ_WARN,
			    "LQ-GEOM-003", "%s is not %" PRId64 "·k + 1 (VAE "
			    "temporal compression %" PRId64 " × patch_t %" PRId64
			    "); snapped to %" PRId64, t, tgrid, tp, patch_t, snap);
			error_set_hint(e, "nearest valid: %s", alt);
			s->num_frames = snap;
			set_int(s->config, "num_frames", snap);
			s->snapped = 1;
		} else {
			struct lq_error *e = pf_job_add(s, "num_frames",
			    LQ_FAILED, "LQ-GEOM-003", "%s is not %" PRId64
			    "·k + 1 (VAE temporal compression %" PRId64
			    " × patch_t %" PRId64 ")", t, tgrid, tp, patch_t);
			error_set_hint(e, "nearest valid: %s", alt);
			ok = 0;
		}
	}
	if (!ok || !have_model)
		return;
	s->jc.height = s->height;
	s->jc.width = s->width;
	s->jc.num_frames = s->num_frames;
	struct job_latent_shape ls;
	if (job_latent_shape(&s->jc, (int)sp, (int)tp, (int)patch, (int)patch_t,
	    &ls) != 0) {
		struct lq_error *e = pf_job_add(s, "num_frames", LQ_FAILED,
		    "LQ-GEOM-003", "%" PRId64 " frames give latent frames the "
		    "transformer's patch_t %" PRId64 " does not divide",
		    s->num_frames, patch_t);
		error_set_hint(e, "a frame count whose latent frames patch_t "
		    "divides");
		return;
	}
	s->lat_f = ls.frames;
	s->lat_h = ls.height;
	s->lat_w = ls.width;
	s->tokens = ls.tokens;
	s->geometry_ok = 1;
	if (s->pm->dm == NULL)
		return;		/* LTX-2's RoPE range: pf_check_ltx2 */

	/*
	 * LTXVideoRotaryPosEmbed scales coordinates by rope_interpolation_scale
	 * (temporal/frame_rate, spatial, spatial) and divides by base_num_frames
	 * 20 and base_height/width 2048: past 1 the rotary frequencies leave the
	 * range the model was built for.
	 */
	double fr = s->jc.frame_rate;
	double cf = fr > 0 ? (double)((s->lat_f - 1) * tp) / fr / RAW_ROPE_BASE_FRAMES : 0;
	if (s->height > RAW_ROPE_BASE_SIZE || s->width > RAW_ROPE_BASE_SIZE) {
		const char *key = s->height > RAW_ROPE_BASE_SIZE ? "height" : "width";
		char t[64];
		struct lq_error *e = pf_job_add(s, key, LQ_FAILED, "LQ-GEOM-005",
		    "%s is past the positional embedding's range (%" PRId64
		    " video tokens; rotary base %d pixels)",
		    pf_job_text(s, key, t, sizeof(t)), s->tokens,
		    RAW_ROPE_BASE_SIZE);
		error_set_hint(e, "at most %d", RAW_ROPE_BASE_SIZE);
	}
	if (cf > 1.0) {
		char t[64];
		int64_t maxf = (int64_t)floor(RAW_ROPE_BASE_FRAMES * fr / tgrid) * tgrid + 1;
		struct lq_error *e = pf_job_add(s, "num_frames", LQ_FAILED,
		    "LQ-GEOM-005", "%s frames at %g fps is past the positional "
		    "embedding's range (%" PRId64 " latent frames × %" PRId64
		    " / frame_rate > base_num_frames %d)",
		    pf_job_text(s, "num_frames", t, sizeof(t)), fr, s->lat_f - 1,
		    tp, RAW_ROPE_BASE_FRAMES);
		error_set_hint(e, "at most %" PRId64 " frames at %g fps", maxf, fr);
	}
}

/* ---- sampling -------------------------------------------------------- */

void
pf_check_sampling(struct pf_job_state *s)
{
	char t[64];
	int64_t steps = s->jc.num_inference_steps;
	if (steps < 1 || steps > MAX_STEPS) {
		struct lq_error *e = pf_job_add(s, "num_inference_steps",
		    LQ_FAILED, "LQ-SAMP-001", "%s steps: the schedule needs "
		    "1 to %d steps (linspace(1, 1/steps, steps))",
		    pf_job_text(s, "num_inference_steps", t, sizeof(t)), MAX_STEPS);
		error_set_hint(e, "nearest valid: %d", steps < 1 ? 1 : MAX_STEPS);
	} else if (s->pm && s->pm->sched_ok) {
		/*
		 * The render's own schedule (scheduler_set_timesteps) for this
		 * step count at this token count.  Without a token count
		 * (geometry rejected) the base sequence length shows the same
		 * failures of the step count alone.
		 */
		const struct scheduler_config *sc = &s->pm->sched;
		int64_t tok = s->geometry_ok ? s->tokens : sc->base_image_seq_len;
		struct scheduler_schedule sch;
		struct lq_error serr;
		error_clear(&serr);
		if (job_condition_pipeline(&s->jc)) {
			/* LTXConditionPipeline's schedule: its one failure
			 * (dynamic shifting) is pf_check_condition's */
			if (scheduler_set_timesteps_condition(sc, (int)steps,
			    &sch, &serr) == LQ_OK)
				scheduler_schedule_free(&sch);
		} else if (scheduler_set_timesteps(sc, (int)steps, tok, &sch,
		    &serr) == LQ_OK) {
			scheduler_schedule_free(&sch);
		} else {
			struct lq_error *e = pf_job_add(s, "num_inference_steps",
			    LQ_FAILED, "LQ-SAMP-002", "with %" PRId64 " step%s "
			    "at %" PRId64 " video tokens the sampler refuses the "
			    "schedule: %s (%s)", steps, steps == 1 ? "" : "s",
			    tok, serr.message, serr.code);
			/* More steps, when some count works at this size. */
			int64_t ok = 0;
			for (int64_t k = steps + 1; k <= MAX_STEPS &&
			    k <= steps + 64 && !ok; k++) {
				error_clear(&serr);
				if (scheduler_set_timesteps(sc, (int)k, tok, &sch,
				    &serr) == LQ_OK) {
					scheduler_schedule_free(&sch);
					ok = k;
				}
			}
			if (ok)
				error_set_hint(e, "nearest valid: %" PRId64, ok);
			else
				error_set_hint(e, "the shift saturates the sigmas "
				    "at this size: fewer video tokens (smaller "
				    "size or fewer frames), or a scheduler config "
				    "without dynamic shifting");
		}
	}
	double g = s->jc.guidance_scale;
	s->cfg_on = job_cfg_rows(&s->jc) == 2;
	if (g < 1.0) {
		struct lq_error *e = pf_job_add(s, "guidance_scale", LQ_FAILED,
		    "LQ-SAMP-003", "%s is below 1: guidance_scale 1 disables "
		    "classifier-free guidance, values > 1 enable it",
		    pf_job_text(s, "guidance_scale", t, sizeof(t)));
		error_set_hint(e, "nearest valid: 1 (no guidance), or 3 (LTX-Video's default)");
	}
	double r = s->jc.guidance_rescale;
	if (r < 0.0 || r > 1.0) {
		struct lq_error *e = pf_job_add(s, "guidance_rescale", LQ_FAILED,
		    "LQ-SAMP-004", "%s is outside [0, 1]",
		    pf_job_text(s, "guidance_rescale", t, sizeof(t)));
		error_set_hint(e, "nearest valid: %g", r < 0 ? 0.0 : 1.0);
	} else if (r > 0.0 && !s->cfg_on) {
		struct lq_error *e = pf_job_add(s, "guidance_rescale", LQ_WARN,
		    "LQ-SAMP-005", "%s has no effect: guidance_scale %g disables "
		    "classifier-free guidance",
		    pf_job_text(s, "guidance_rescale", t, sizeof(t)), g);
		error_set_hint(e, "remove guidance_rescale or raise guidance_scale above 1");
	}
}

/* ---- LTXConditionPipeline -------------------------------------------- */

/*
 * denoise_strength (LTXConditionPipeline, pipelines/ltx/
 * pipeline_ltx_condition.py): in (0, 1]; it runs int(N * s) of the N
 * steps (scheduler_denoise_start), at least one; with `latents:` it must
 * be below 1 (upstream ignores the latents at 1); `image:` is
 * LTXImageToVideoPipeline's key, not this pipeline's; and the schedule
 * must be one the pipeline can set (no dynamic shifting).
 */
void
pf_check_condition(struct pf_job_state *s)
{
	char t[64];
	if (!job_condition_pipeline(&s->jc))
		return;
	double ds = s->jc.denoise_strength;
	int64_t steps = s->jc.num_inference_steps;
	if (!(ds > 0.0 && ds <= 1.0)) {
		struct lq_error *e = pf_job_add(s, "denoise_strength", LQ_FAILED,
		    "LQ-COND-001", "%s is outside (0, 1]: denoise_strength is the "
		    "share of the schedule that runs",
		    pf_job_text(s, "denoise_strength", t, sizeof(t)));
		error_set_hint(e, "nearest valid: %g (0.4 refines upsampled "
		    "latents as LTX-Video's two-stage recipe does)",
		    ds <= 0.0 ? 0.4 : 1.0);
	} else if (steps >= 1 && steps <= MAX_STEPS &&
	    scheduler_denoise_start((int)steps, ds) >= steps) {
		/* the smallest strength that runs one step */
		double lo = 1.0 / (double)steps;
		while (scheduler_denoise_start((int)steps, lo) >= steps)
			lo = nextafter(lo, 2.0);
		struct lq_error *e = pf_job_add(s, "denoise_strength", LQ_FAILED,
		    "LQ-COND-002", "%s of %" PRId64 " steps runs no step "
		    "(int(%" PRId64 " x %g) = 0)",
		    pf_job_text(s, "denoise_strength", t, sizeof(t)), steps,
		    steps, ds);
		error_set_hint(e, "denoise_strength at least %.17g, or more "
		    "num_inference_steps (%d at this strength)", lo,
		    (int)ceil(1.0 / ds));
	}
	if (ds == 1.0 && s->jc.latents != NULL) {
		struct lq_error *e = pf_job_add(s, "denoise_strength", LQ_FAILED,
		    "LQ-COND-003", "denoise_strength 1 with latents: "
		    "LTXConditionPipeline ignores the given latents and starts "
		    "from pure noise");
		error_set_hint(e, "denoise_strength: 0.999 (what the distilled "
		    "recipe uses), or drop latents");
	}
	if (s->jc.image != NULL) {
		struct lq_error *e = pf_job_add(s, "image", LQ_FAILED,
		    "LQ-COND-005", "image: is LTXImageToVideoPipeline's key; a "
		    "job with denoise_strength or conditions renders with "
		    "LTXConditionPipeline");
		error_set_hint(e, "write the image as conditions: [{image: %s}], "
		    "or drop denoise_strength and conditions",
		    s->jc.image);
	}
	double ns = s->jc.image_cond_noise_scale;
	if (s->jc.n_conditions > 0 && !(ns >= 0.0)) {
		struct lq_error *e = pf_job_add(s, "image_cond_noise_scale",
		    LQ_FAILED, "LQ-COND-008", "%s is negative: it scales the "
		    "noise put on condition tokens",
		    pf_job_text(s, "image_cond_noise_scale", t, sizeof(t)));
		error_set_hint(e, "nearest valid: 0 (none, as the two-stage "
		    "recipe), or 0.15 (the pipeline's default)");
	}
	cJSON *conds = cJSON_GetObjectItemCaseSensitive(s->config, "conditions");
	for (size_t i = 0; i < s->jc.n_conditions; i++) {
		const struct job_condition *c = &s->jc.conditions[i];
		char field[64];
		snprintf(field, sizeof(field), "conditions[%zu]", i);
		if (i > 0) {
			struct lq_error *e = pf_job_add(s, field, LQ_FAILED,
			    "LQ-COND-006", "%zu conditions: latentq renders one "
			    "image condition", s->jc.n_conditions);
			error_set_hint(e, "keep one condition, at frame_index 0");
			break;
		}
		if (c->frame_index != 0) {
			snprintf(field, sizeof(field), "conditions[%zu].frame_index",
			    i);
			struct lq_error *e = pf_job_add(s, field, LQ_FAILED,
			    "LQ-COND-006", "frame_index %" PRId64 ": latentq "
			    "conditions on frame 0 only (other frames append "
			    "condition tokens upstream, not implemented)",
			    c->frame_index);
			error_set_hint(e, "frame_index: 0");
			continue;
		}
		if (!(c->strength >= 0.0 && c->strength <= 1.0)) {
			snprintf(field, sizeof(field), "conditions[%zu].strength", i);
			struct lq_error *e = pf_job_add(s, field, LQ_FAILED,
			    "LQ-COND-007", "strength %g is outside [0, 1] (the "
			    "lerp weight of the condition's latents)", c->strength);
			error_set_hint(e, "nearest valid: %g", c->strength < 0 ?
			    0.0 : 1.0);
			continue;
		}
		snprintf(field, sizeof(field), "conditions[%zu].image", i);
		check_image_file(s, field, c->image,
		    cJSON_GetArrayItem(conds, (int)i));
	}
	if (s->pm && s->pm->sched_ok && s->pm->sched.use_dynamic_shifting) {
		struct lq_error *e = pf_job_add(s, "scheduler", LQ_FAILED,
		    "LQ-COND-004", "the scheduler config has "
		    "use_dynamic_shifting true; LTXConditionPipeline (a job with "
		    "denoise_strength or conditions) never passes mu, and "
		    "diffusers refuses that schedule");
		error_set_hint(e, "give `scheduler:` a folder whose "
		    "scheduler_config.json has \"use_dynamic_shifting\": false "
		    "(as converted for LTX-Video 0.9.5 and 0.9.7)");
	}
}

/* ---- second_stage: the two-stage recipe ------------------------------ */

/* A second_stage number outside [lo, hi] (LQ-STAGE-006). */
static void
stage_range(struct pf_job_state *s, const char *key, double v, double lo,
    double hi, const char *what)
{
	if (v >= lo && v <= hi)
		return;
	char field[64];
	snprintf(field, sizeof(field), "second_stage.%s", key);
	struct lq_error *e = pf_job_add(s, field, LQ_FAILED, "LQ-STAGE-006",
	    "second_stage.%s %g is outside [%g, %g] (%s)", key, v, lo, hi,
	    what);
	error_set_hint(e, "nearest valid: %g", v < lo ? lo : hi);
}

/*
 * `second_stage:` (LTX-Video's two-stage recipe; pipelines/ltx/
 * pipeline_ltx_latent_upsample.py and pipeline_ltx_condition.py): the
 * latent upsampler is a readable LTXLatentUpsamplerModel of the
 * transformer's channels (LQ-STAGE-001) that keeps the latent frames
 * (spatial only, LQ-STAGE-002: the job has one num_frames); stage 2's size
 * is a multiple of the grid times the upsampler's scale (LQ-STAGE-003:
 * 64 for LTX-Video, the size rule of upstream's two-stage bug reports,
 * where a stage-2 size not divisible by 64 gives a stage 1 off the VAE's
 * grid) and exactly stage 1's times that scale (LQ-STAGE-004); its
 * schedule runs at least one step at a denoise_strength below 1
 * (LQ-STAGE-005; at 1 upstream ignores the upsampled latents); and its
 * numbers are in range (LQ-STAGE-006).
 */
void
pf_check_second_stage(struct pf_job_state *s)
{
	const struct job_second_stage *ss = &s->jc.second_stage;
	if (!ss->present)
		return;
	const struct diffusers_model *dm = s->pm ? s->pm->dm : NULL;
	int scale = 2, ok_up = 0;
	struct ltxv_upsampler_config uc;
	memset(&uc, 0, sizeof(uc));
	char *cfg_path = xasprintf("%s/config.json", ss->latent_upsampler);
	cJSON *cfg = NULL;
	struct lq_error fe;
	error_clear(&fe);
	if (diffusers_load_json(cfg_path, &cfg, &fe) == LQ_OK &&
	    diffusers_parse_latent_upsampler(cfg, cfg_path, &uc, &fe) == LQ_OK)
		ok_up = 1;
	cJSON_Delete(cfg);
	if (!ok_up) {
		struct lq_error *e = pf_job_add(s, "second_stage.latent_upsampler",
		    LQ_FAILED, "LQ-STAGE-001", "%s is not a latent upsampler "
		    "folder latentq can load: %s", ss->latent_upsampler,
		    fe.message);
		error_set_hint(e, "the latent_upsampler/ folder of an LTX-Video "
		    "0.9.7+ pipeline (config.json of LTXLatentUpsamplerModel and "
		    "its weights)");
	} else if (dm != NULL && uc.in_channels !=
	    dm->transformer_config.in_channels) {
		struct lq_error *e = pf_job_add(s, "second_stage.latent_upsampler",
		    LQ_FAILED, "LQ-STAGE-001", "the latent upsampler takes %d "
		    "channels; the transformer's latents have %d",
		    uc.in_channels, dm->transformer_config.in_channels);
		error_set_hint(e, "the upsampler released with this model "
		    "version (in_channels %d)", dm->transformer_config.in_channels);
	}
	free(cfg_path);
	if (ok_up && uc.temporal_upsample) {
		struct lq_error *e = pf_job_add(s, "second_stage.latent_upsampler",
		    LQ_FAILED, "LQ-STAGE-002", "the latent upsampler is temporal "
		    "(2F - 1 latent frames); the job's num_frames %" PRId64 " is "
		    "both stages'", s->jc.num_frames);
		error_set_hint(e, "a spatial upsampler (spatial_upsample true, "
		    "temporal_upsample false), as the recipe's "
		    "ltxv-spatial-upscaler");
	}
	if (ok_up && !uc.spatial_upsample)
		scale = 1;
	/* stage 2's size: grid × scale, and stage 1's × scale */
	int64_t grid = 32;
	if (dm != NULL) {
		int64_t mg = (int64_t)dm->vae_config.spatial_compression_ratio *
		    dm->transformer_config.patch_size;
		grid = mg / gcd64(mg, 32) * 32;
	}
	const char *keys[2] = {"height", "width"};
	int64_t v2[2] = {ss->height, ss->width}, v1[2] = {s->height, s->width};
	int sized = 1;
	for (int i = 0; i < 2; i++) {
		char field[64];
		snprintf(field, sizeof(field), "second_stage.%s", keys[i]);
		int64_t g = grid * scale;
		if (v2[i] < 1 || v2[i] % g != 0) {
			int64_t lo = v2[i] / g * g, hi = lo + g;
			struct lq_error *e = pf_job_add(s, field, LQ_FAILED,
			    "LQ-STAGE-003", "second_stage.%s %" PRId64 " is not a "
			    "multiple of %" PRId64 " (the grid %" PRId64 " times "
			    "the upsampler's %dx): stage 1 would render %s %"
			    PRId64 "/%d, off the VAE's grid", keys[i], v2[i], g,
			    grid, scale, keys[i], v2[i], scale);
			if (lo >= g)
				error_set_hint(e, "nearest valid: %" PRId64 " or %"
				    PRId64 " (stage 1 %s %" PRId64 " or %" PRId64
				    ")", lo, hi, keys[i], lo / scale, hi / scale);
			else
				error_set_hint(e, "nearest valid: %" PRId64
				    " (stage 1 %s %" PRId64 ")", hi, keys[i],
				    hi / scale);
			sized = 0;
		}
	}
	for (int i = 0; sized && s->geometry_ok && i < 2; i++) {
		if (v2[i] == v1[i] * scale)
			continue;
		char field[64];
		snprintf(field, sizeof(field), "second_stage.%s", keys[i]);
		struct lq_error *e = pf_job_add(s, field, LQ_FAILED,
		    "LQ-STAGE-004", "second_stage.%s %" PRId64 " is not the "
		    "job's %s %" PRId64 " times the upsampler's scale %d",
		    keys[i], v2[i], keys[i], v1[i], scale);
		error_set_hint(e, "nearest valid: second_stage.%s: %" PRId64
		    ", or %s: %" PRId64, keys[i], v1[i] * scale, keys[i],
		    v2[i] / scale);
	}
	int64_t n = ss->num_inference_steps;
	double ds = ss->denoise_strength;
	if (n < 1 || n > MAX_STEPS) {
		struct lq_error *e = pf_job_add(s,
		    "second_stage.num_inference_steps", LQ_FAILED, "LQ-STAGE-005",
		    "second_stage.num_inference_steps %" PRId64 " is outside "
		    "1..%d", n, MAX_STEPS);
		error_set_hint(e, "nearest valid: %d (10, as the recipe)",
		    n < 1 ? 1 : MAX_STEPS);
	} else if (!(ds > 0.0 && ds < 1.0)) {
		struct lq_error *e = pf_job_add(s, "second_stage.denoise_strength",
		    LQ_FAILED, "LQ-STAGE-005", "second_stage.denoise_strength %g "
		    "is outside (0, 1): stage 2 refines the upsampled latents "
		    "(at 1 LTXConditionPipeline ignores them)", ds);
		error_set_hint(e, "nearest valid: %g (0.4 as the recipe)",
		    ds <= 0.0 ? 0.4 : 0.999);
	} else if (scheduler_denoise_start((int)n, ds) >= n) {
		double lo = 1.0 / (double)n;
		while (scheduler_denoise_start((int)n, lo) >= n)
			lo = nextafter(lo, 2.0);
		struct lq_error *e = pf_job_add(s, "second_stage.denoise_strength",
		    LQ_FAILED, "LQ-STAGE-005", "second_stage.denoise_strength %g "
		    "of %" PRId64 " steps runs no step (int(%" PRId64 " x %g) = "
		    "0)", ds, n, n, ds);
		error_set_hint(e, "denoise_strength at least %.17g, or more "
		    "num_inference_steps (%d at this strength)", lo,
		    (int)ceil(1.0 / ds));
	}
	stage_range(s, "adain_factor", ss->adain_factor, 0, 1,
	    "the lerp weight of AdaIN toward stage 1's statistics");
	stage_range(s, "tone_map_compression_ratio",
	    ss->tone_map_compression_ratio, 0, 1, "LTXLatentUpsamplePipeline's "
	    "tone mapping strength");
	stage_range(s, "guidance_scale", ss->guidance_scale, 1, 1e9,
	    "1 disables classifier-free guidance");
	stage_range(s, "guidance_rescale", ss->guidance_rescale, 0, 1,
	    "rescale_noise_cfg's factor");
	stage_range(s, "image_cond_noise_scale", ss->image_cond_noise_scale, 0,
	    1e9, "it scales noise");
	stage_range(s, "decode_timestep", ss->decode_timestep, 0, 1,
	    "the VAE decoder's timestep");
	stage_range(s, "decode_noise_scale", ss->decode_noise_scale, 0, 1,
	    "the share of noise mixed in before decoding");
	/* stage 2's guidance rows must be stage 1's (one text batch) */
	if ((ss->guidance_scale > 1.0) != (s->jc.guidance_scale > 1.0)) {
		struct lq_error *e = pf_job_add(s, "second_stage.guidance_scale",
		    LQ_FAILED, "LQ-STAGE-006", "second_stage.guidance_scale %g "
		    "and guidance_scale %g: one stage with classifier-free "
		    "guidance and one without is not implemented",
		    ss->guidance_scale, s->jc.guidance_scale);
		error_set_hint(e, "guidance above 1 in both stages, or 1 in both");
	}
}

/* ---- prompt ---------------------------------------------------------- */

static void
check_prompt_text(struct pf_job_state *s, struct text_tokenizer *tok,
    const char *key, int64_t maxlen)
{
	const char *p = json_get_string(s->config, key, NULL);
	if (p == NULL)
		return;
	struct text_tokens tt;
	struct lq_error err;
	error_clear(&err);
	if (text_tokenizer_encode(tok, p, (int)maxlen, &tt, &err) != LQ_OK) {
		struct lq_error *e = pf_job_add(s, key, LQ_FAILED,
		    "LQ-PROMPT-003", "cannot tokenise the prompt: %s (%s)",
		    err.message, err.code);
		error_set_hint(e, "write the prompt as UTF-8 text");
		return;
	}
	if (tt.num_dropped > 0) {
		if (s->jc.truncate) {
			struct lq_error *e = pf_job_add(s, key, LQ_WARN,
			    "LQ-PROMPT-002", "%d tokens (end of text included) "
			    "truncated to max_sequence_length %" PRId64 "; "
			    "dropped %d: \"%s\"", tt.untruncated_len, maxlen,
			    tt.num_dropped, tt.dropped_text);
			error_set_hint(e, "max_sequence_length: %d keeps it whole",
			    tt.untruncated_len);
		} else {
			struct lq_error *e = pf_job_add(s, key, LQ_FAILED,
			    "LQ-PROMPT-001", "%d tokens (end of text included) "
			    "exceed max_sequence_length %" PRId64 "; it would "
			    "lose \"%s\"", tt.untruncated_len, maxlen,
			    tt.dropped_text);
			error_set_hint(e, "shorten it, set max_sequence_length: "
			    "%d, or truncate: true", tt.untruncated_len);
		}
	}
	text_tokens_release(&tt);
}

void
pf_check_prompt(struct pf_job_state *s)
{
	int has_p = present(s, "prompt"), has_e = present(s, "prompt_embeds");
	if (has_p == has_e) {
		struct lq_error *e = pf_job_add(s, has_p ? "prompt_embeds"
		    : "prompt", LQ_FAILED, "LQ-PROMPT-003", "%s",
		    has_p ? "prompt and prompt_embeds are both given"
		    : "no prompt: give prompt (or prompt_embeds)");
		error_set_hint(e, "%s", has_p ? "keep one of them"
		    : "prompt: \"a red circle moving left\"");
		return;
	}
	if (s->pm == NULL || s->pm->dm == NULL)
		return;
	const struct diffusers_model *dm = s->pm->dm;
	int64_t maxlen = s->jc.max_sequence_length;
	if (has_p) {
		if (!dm->text_encoder.present) {
			struct lq_error *e = pf_job_add(s, "prompt", LQ_FAILED,
			    "LQ-PROMPT-003", "the model has no text encoder to "
			    "encode the prompt");
			error_set_hint(e, "give prompt_embeds, or a model with "
			    "text_encoder and tokenizer");
			return;
		}
		struct text_tokenizer *tok = pf_model_tokenizer(s->pm);
		if (tok == NULL) {
			struct lq_error *e = pf_job_add(s, "prompt", LQ_FAILED,
			    "LQ-PROMPT-003", "the model's tokenizer cannot be "
			    "loaded: %s (%s)", s->pm->tok_err.message,
			    s->pm->tok_err.code);
			error_set_hint(e, "restore tokenizer/ (spiece.model, "
			    "tokenizer_config.json)");
			return;
		}
		if (maxlen < 1 || maxlen > 4096)
			return;	/* LQ-CFG-002 said so */
		check_prompt_text(s, tok, "prompt", maxlen);
		if (s->cfg_on)
			check_prompt_text(s, tok, "negative_prompt", maxlen);
		return;
	}
	const char *path = json_get_string(s->config, "prompt_embeds", NULL);
	struct pf_file *f = pf_embeds_get(s->ctx, path,
	    dm->transformer_config.caption_channels);
	pf_job_copy(s, &f->problems, "prompt_embeds");
	s->embeds_T = f->embeds_T;
	s->embeds_B = f->embeds_B;
	if (f->problems.n == 0 && s->cfg_on && !f->has_negative &&
	    !(dm->text_encoder.present && dm->tokenizer.present)) {
		struct lq_error *e = pf_job_add(s, "prompt_embeds", LQ_FAILED,
		    "LQ-PROMPT-006", "guidance_scale %g needs "
		    "negative_prompt_embeds in %s: the model has no text "
		    "encoder for the negative prompt",
		    s->jc.guidance_scale, path);
		error_set_hint(e, "add negative_prompt_embeds (the empty "
		    "prompt's), or guidance_scale: 1");
	}
}

/* ---- batch and mesh -------------------------------------------------- */

/*
 * The batch the render runs: the prompt_embeds file's when the job gives
 * one (render.c phase_load lets the embeddings decide), else job_batch's.
 * 0 until pf_check_mesh and pf_check_prompt have run or when either failed.
 */
static int64_t
render_batch(struct pf_job_state *s)
{
	if (present(s, "prompt_embeds") && s->embeds_B > 0)
		return s->embeds_B;
	return s->global_batch;
}

/*
 * A `latents:` file's tensor has one of the two shapes the render accepts
 * (latents_import: packed [B, S, D] or [B, C, F, H, W] of this job), read
 * from the header before anything is loaded.  Needs the geometry, the
 * batch and the model.
 */
void
pf_check_latents(struct pf_job_state *s)
{
	const char *path = json_get_string(s->config, "latents", NULL);
	if (path == NULL || !s->geometry_ok || s->pm == NULL ||
	    s->pm->dm == NULL || render_batch(s) < 1)
		return;
	struct st_file *f = NULL;
	struct lq_error fe;
	error_clear(&fe);
	if (st_file_open(path, &f, &fe) != LQ_OK)
		return;		/* check_input_file said why */
	const struct st_tensor *t = st_file_find_or_only(f, "latents");
	const struct ltxv_transformer_config *tc =
	    &s->pm->dm->transformer_config;
	struct latents_shape sh = {
		.batch = render_batch(s), .channels = tc->in_channels,
		.frames = s->lat_f, .height = s->lat_h, .width = s->lat_w,
		.patch_size = tc->patch_size, .patch_size_t = tc->patch_size_t,
	};
	if (t != NULL && latents_import_check(&sh, t->ndim, t->shape, &fe) !=
	    LQ_OK) {
		struct lq_error *e = pf_job_add(s, "latents", LQ_FAILED,
		    "LQ-LAT-001", "%s: %s", path, fe.message);
		error_set_hint(e, "write the latents of a job with this "
		    "height, width, num_frames and batch, or change the job to "
		    "the latents' size");
	}
	st_file_close(f);
}

/*
 * LQ-MESH-005 for one stream: the context and tensor degrees divide its
 * `heads` attention heads ("the transformer's" for LTX-Video, "the video
 * stream's" / "the audio stream's" for LTX-2: every stream is checked,
 * never the video alone, issue 15).
 */
static void
mesh_check_heads(struct pf_job_state *s, const char *stream, int heads)
{
	static const char *const axes[3] = { "data", "context", "tensor" };
	const int64_t ax[3] = { s->data, s->context, s->tensor };
	char key[32];
	for (int i = 1; i < 3; i++) {
		if (heads % ax[i] == 0)
			continue;
		snprintf(key, sizeof(key), "mesh.%s", axes[i]);
		struct lq_error *e = pf_job_add(s, key, LQ_FAILED,
		    "LQ-MESH-005", "%s degree %" PRId64 " does not "
		    "divide %s %d attention heads", axes[i], ax[i], stream,
		    heads);
		int64_t lo = ax[i];
		while (lo > 1 && heads % lo != 0)
			lo--;
		error_set_hint(e, "nearest valid: %" PRId64, lo);
	}
}

/*
 * LQ-MESH-004 for one stream: the context degree divides its `tokens`
 * (`what` says where they come from); latentq does not pad sequences.
 */
void
pf_mesh_check_tokens(struct pf_job_state *s, const char *stream,
    int64_t tokens, const char *what)
{
	if (!s->mesh_ok || tokens < 1 || tokens % s->context == 0)
		return;
	struct lq_error *e = pf_job_add(s, "mesh.context", LQ_FAILED,
	    "LQ-MESH-004", "context degree %" PRId64 " does not divide %s %"
	    PRId64 " tokens (%s); latentq does not pad sequences", s->context,
	    stream, tokens, what);
	int64_t lo = s->context;
	while (lo > 1 && tokens % lo != 0)
		lo--;
	error_set_hint(e, "nearest valid context: %" PRId64
	    ", or a size whose token count it divides", lo);
}

void
pf_check_mesh(struct pf_job_state *s)
{
	static const char *const axes[3] = { "data", "context", "tensor" };
	const cJSON *mesh = cJSON_GetObjectItemCaseSensitive(s->config, "mesh");
	s->devices = json_get_int(mesh, "devices", 1);
	int64_t ax[3];
	for (int i = 0; i < 3; i++)
		ax[i] = json_get_int(mesh, axes[i], 1);
	char t[64], key[32];
	int ok = 1;
	if (s->devices < 1) {
		struct lq_error *e = pf_job_add(s, "mesh.devices", LQ_FAILED,
		    "LQ-MESH-002", "%s devices: a mesh has at least one",
		    pf_job_text(s, "mesh.devices", t, sizeof(t)));
		error_set_hint(e, "nearest valid: 1");
		ok = 0;
	}
	int n_infer = 0, infer = -1;
	for (int i = 0; i < 3; i++) {
		snprintf(key, sizeof(key), "mesh.%s", axes[i]);
		if (ax[i] == -1) {
			if (n_infer++ == 0) {
				infer = i;
				continue;
			}
			struct lq_error *e = pf_job_add(s, key, LQ_FAILED,
			    "LQ-MESH-002", "-1 on a second axis (%s is already "
			    "-1): only one axis can be inferred", axes[infer]);
			error_set_hint(e, "give %s a size", axes[i]);
			ok = 0;
		} else if (ax[i] < 1) {
			struct lq_error *e = pf_job_add(s, key, LQ_FAILED,
			    "LQ-MESH-002", "%s: an axis is a positive size or -1",
			    pf_job_text(s, key, t, sizeof(t)));
			error_set_hint(e, "nearest valid: 1");
			ok = 0;
		}
	}
	if (ok && n_infer == 1) {
		int64_t prod = 1;
		for (int i = 0; i < 3; i++)
			if (i != infer)
				prod *= ax[i];
		snprintf(key, sizeof(key), "mesh.%s", axes[infer]);
		if (s->devices % prod != 0) {
			struct lq_error *e = pf_job_add(s, key, LQ_FAILED,
			    "LQ-MESH-003", "-1 cannot be inferred: %" PRId64
			    " devices / %" PRId64 " (the other axes) is %g, not "
			    "a positive integer", s->devices, prod,
			    (double)s->devices / (double)prod);
			error_set_hint(e, "make devices a multiple of %" PRId64, prod);
			ok = 0;
		} else {
			ax[infer] = s->devices / prod;
		}
	} else if (ok) {
		int64_t prod = ax[0] * ax[1] * ax[2];
		if (prod != s->devices) {
			const char *k = ax[1] != 1 ? "mesh.context" : ax[2] != 1
			    ? "mesh.tensor" : ax[0] != 1 ? "mesh.data" : "mesh.devices";
			struct lq_error *e = pf_job_add(s, k, LQ_FAILED,
			    "LQ-MESH-002", "data %" PRId64 " × context %" PRId64
			    " × tensor %" PRId64 " = %" PRId64 " devices, but "
			    "mesh.devices is %" PRId64, ax[0], ax[1], ax[2], prod,
			    s->devices);
			if (s->devices % (prod / ax[0]) == 0)
				error_set_hint(e, "data: %" PRId64 " (or -1 on one "
				    "axis to infer it)", s->devices / (prod / ax[0]));
			else
				error_set_hint(e, "devices: %" PRId64 ", or -1 "
				    "on one axis to infer it", prod);
			ok = 0;
		}
	}
	if (s->ctx->opt->caps && s->devices > s->ctx->opt->caps->device_count) {
		struct lq_error *e = pf_job_add(s, "mesh.devices", LQ_FAILED,
		    "LQ-MESH-007", "the mesh needs %" PRId64 " devices but the "
		    "host has %d", s->devices, s->ctx->opt->caps->device_count);
		error_set_hint(e, "nearest valid: %d",
		    s->ctx->opt->caps->device_count);
		ok = 0;
	}

	/* The batch (job_batch: per_device_batch_size × mesh.data) must be a
	 * positive whole number of videos. */
	s->jc.mesh.data = ok ? ax[0] : 1;
	s->per_device_batch = s->jc.per_device_batch_size;
	double gb;
	int64_t gbi = job_batch(&s->jc, &gb);
	if (gbi == 0) {
		int64_t data = s->jc.mesh.data;
		struct lq_error *e = pf_job_add(s, "per_device_batch_size",
		    LQ_FAILED, "LQ-MESH-001", "%s × data %" PRId64 " = %g "
		    "is not a positive whole batch",
		    pf_job_text(s, "per_device_batch_size", t, sizeof(t)),
		    data, gb);
		int64_t up = llround(gb) < 1 ? 1 : llround(gb);
		error_set_hint(e, "per_device_batch_size: %g (batch %" PRId64 ")",
		    (double)up / (double)data, up);
		ok = 0;
	}
	s->global_batch = gbi;
	if (!ok)
		return;
	s->data = ax[0];
	s->context = ax[1];
	s->tensor = ax[2];
	s->mesh_ok = 1;
	cJSON *cm = cJSON_GetObjectItemCaseSensitive(s->config, "mesh");
	if (cm == NULL) {
		cm = cJSON_CreateObject();
		cJSON_AddItemToObject(s->config, "mesh", cm);
	}
	set_int(cm, "devices", s->devices);
	for (int i = 0; i < 3; i++)
		set_int(cm, axes[i], ax[i]);

	/* the data axis splits transformer rows (videos × CFG halves; for
	 * LTX-2 × its passes), as the render does (job_rows_per_device_of) */
	int64_t rows;
	int ltx2 = s->pm != NULL && s->pm->l2 != NULL;
	int cfg = ltx2 ? job_ltx2_passes(&s->jc, NULL) : job_cfg_rows(&s->jc);
	if (job_rows_per_device_of(&s->jc, cfg, &rows) == 0) {
		struct lq_error *e = pf_job_add(s, "per_device_batch_size",
		    LQ_FAILED, "LQ-MESH-006", "%" PRId64 " transformer rows "
		    "(batch %" PRId64 " × %d %s) do not split across data %"
		    PRId64 ": %s per device is not a whole number of rows",
		    rows, s->global_batch, cfg, ltx2 ? "guidance passes" :
		    cfg == 2 ? "CFG halves" : "row without guidance", s->data,
		    pf_job_text(s, "per_device_batch_size", t, sizeof(t)));
		/* the nearest larger size that is whole rows per device and
		 * a whole batch (per_device_batch_size × data) */
		int64_t r = (int64_t)ceil(s->jc.per_device_batch_size * cfg);
		while ((r * s->data) % cfg != 0)
			r++;
		error_set_hint(e, "per_device_batch_size: %g (a whole number "
		    "of rows per device: %" PRId64 " in all)", (double)r / cfg,
		    r * s->data);
	}
	if (s->pm && s->pm->dm)
		mesh_check_heads(s, "the transformer's",
		    s->pm->dm->transformer_config.num_attention_heads);
	if (s->pm && s->pm->wan)
		mesh_check_heads(s, "the transformer's",
		    s->pm->wan_t.num_attention_heads);
	if (ltx2) {
		/* both streams; a2v / v2a attention has the audio's heads */
		mesh_check_heads(s, "the video stream's",
		    s->pm->l2_t.num_attention_heads);
		mesh_check_heads(s, "the audio stream's (and the a2v / v2a "
		    "cross-attention's)", s->pm->l2_t.audio_num_attention_heads);
	}
	if (s->geometry_ok) {
		char what[96];
		snprintf(what, sizeof(what), "latent %" PRId64 " × %" PRId64
		    " × %" PRId64, s->lat_f, s->lat_h, s->lat_w);
		pf_mesh_check_tokens(s, ltx2 ? "the video stream's" :
		    "the video's", s->tokens, what);
	}
}

/* ---- LoRA ------------------------------------------------------------ */

void
pf_check_lora(struct pf_job_state *s)
{
	const cJSON *loras = cJSON_GetObjectItemCaseSensitive(s->config, "loras");
	const cJSON *l;
	int i = 0;
	cJSON_ArrayForEach(l, loras) {
		const char *path = json_get_string(l, "path", NULL);
		char key[48];
		snprintf(key, sizeof(key), "loras[%d].path", i++);
		if (path == NULL)
			continue;
		if (s->pm != NULL && s->pm->dm != NULL && s->pm->w_transformer == NULL)
			continue;	/* the model's own error says why */
		struct pf_file *f = pf_lora_get(s->ctx, path, s->pm);
		pf_job_copy(s, &f->problems, key);
	}
}

/* ---- device ---------------------------------------------------------- */

/* "1.25 GiB", "640 KiB", "512 bytes" into one of four rotating buffers. */
static const char *
size_text(double b)
{
	static char bufs[4][32];
	static int k;
	char *s = bufs[k++ & 3];
	if (b >= (double)(1ull << 30))
		snprintf(s, 32, "%.2f GiB", b / (double)(1ull << 30));
	else if (b >= (double)(1u << 20))
		snprintf(s, 32, "%.2f MiB", b / (double)(1u << 20));
	else if (b >= 1024)
		snprintf(s, 32, "%.1f KiB", b / 1024);
	else
		snprintf(s, 32, "%.0f bytes", b);
	return s;
}

/*
 * The LTX-2 job's memory plan (nn_plan_ltx2: connectors, the dual-stream
 * transformer, the audio VAE, the vocoder and the video VAE, each alone,
 * weights from the headers preflight opened) and, with a device, the
 * refusal of a job that does not fit (LQ-DEV-001, naming the phase, the
 * component and the plan's change), a tensor larger than one buffer
 * (LQ-DEV-002) and 16-bit weights without 16-bit storage (LQ-DEV-003).
 */
static void
check_device_ltx2(struct pf_job_state *s)
{
	const struct device_caps *caps = s->ctx->opt->caps;
	const struct pf_model *pm = s->pm;
	const struct job_config *jc = &s->jc;
	if (!s->geometry_ok || jc->frame_rate <= 0)
		return;
	struct nn_weights_layout w[5];
	static const char *const prefix[5] = {
		[PF_L2_TRANSFORMER] = NULL, [PF_L2_VAE] = "decoder.",
		[PF_L2_AUDIO_VAE] = "decoder.", [PF_L2_VOCODER] = NULL,
		[PF_L2_CONNECTORS] = NULL,
	};
	memset(w, 0, sizeof(w));
	for (int i = 0; i < 5; i++) {
		struct lq_error werr;
		error_clear(&werr);
		/* a tensor larger than a buffer is the LQ-DEV-002 check */
		if (pm->l2_w[i] != NULL)
			(void)nn_weights_plan(pm->l2_w[i], prefix[i], NULL, caps,
			    &w[i].resident, &werr);
	}
	int embeds = present(s, "prompt_embeds");
	struct job_ltx2_passes ps;
	(void)job_ltx2_passes(jc, &ps);
	struct nn_plan_ltx2_request rq = {
		.model = pm->l2, .transformer = &pm->l2_t, .vae = &pm->l2_v,
		.w_transformer = pm->l2_w[PF_L2_TRANSFORMER] ?
		    &w[PF_L2_TRANSFORMER] : NULL,
		.w_vae = pm->l2_w[PF_L2_VAE] ? &w[PF_L2_VAE] : NULL,
		.w_audio_vae = pm->l2_w[PF_L2_AUDIO_VAE] ? &w[PF_L2_AUDIO_VAE] :
		    NULL,
		.w_vocoder = pm->l2_w[PF_L2_VOCODER] ? &w[PF_L2_VOCODER] : NULL,
		.w_connectors = pm->l2_w[PF_L2_CONNECTORS] ?
		    &w[PF_L2_CONNECTORS] : NULL,
		.batch = (int)render_batch(s),
		/* the render's CFG pass (job_ltx2_passes: either stream's
		 * scale > 1); on a mesh a rank runs at most that */
		.guidance = ps.cfg,
		.use_cross_timestep = jc->use_cross_timestep,
		.num_frames = (int)s->num_frames,
		.height = (int)s->height,
		.width = (int)s->width,
		.frame_rate = jc->frame_rate,
		.max_sequence_length = embeds && s->embeds_T > 0 ?
		    (int)s->embeds_T : (int)jc->max_sequence_length,
		.caps = caps,
		.memory_margin = s->ctx->opt->memory_margin,
	};
	nn_plan_ltx2(&rq, &s->plan);
	s->has_plan = 1;
	if (caps == NULL)
		return;
	const struct nn_plan *p = &s->plan;
	const struct {
		const struct nn_plan_bytes *b;
		const char *name;
		enum nn_plan_phase phase;
	} parts[] = {
		{&p->connectors, "connectors", NN_PHASE_ENCODE_TEXT},
		{&p->transformer, "transformer", NN_PHASE_DENOISE},
		{&p->audio_vae, "audio VAE decoder", NN_PHASE_DECODE},
		{&p->vocoder, "vocoder", NN_PHASE_DECODE},
		{&p->vae, "VAE decoder", NN_PHASE_DECODE},
	};
	if (!p->fits) {
		const char *what = "transformer";
		for (size_t i = 0; i < LQ_ARRAY_LEN(parts); i++)
			if (parts[i].phase == p->peak_phase &&
			    nn_plan_bytes_device(parts[i].b) == p->peak_device_bytes)
				what = parts[i].name;
		const char *key = p->change_key[0] ? p->change_key : "model";
		struct lq_error *e = pf_job_add(s, key, LQ_FAILED,
		    "LQ-DEV-001", "planned peak device memory %s while %s "
		    "(%s) exceeds %s: the %s heap less a %.0f%% margin",
		    size_text((double)p->peak_device_bytes),
		    nn_plan_phase_name(p->peak_phase), what,
		    size_text((double)p->budget), caps->name,
		    (s->ctx->opt->memory_margin > 0 && s->ctx->opt->memory_margin
		    < 1 ? s->ctx->opt->memory_margin : DEVICE_CAPS_MEMORY_MARGIN) *
		    100);
		if (p->change[0])
			error_set_hint(e, "%s", p->change);
		else
			error_set_hint(e, "a device with more memory");
	}
	const struct nn_plan_bytes *big = parts[0].b;
	for (size_t i = 1; i < LQ_ARRAY_LEN(parts); i++)
		if (parts[i].b->largest > big->largest)
			big = parts[i].b;
	struct lq_error terr;
	error_clear(&terr);
	if (device_caps_check_tensor(caps, big->largest_what, big->largest,
	    &terr) != LQ_OK) {
		struct lq_error *e = pf_job_add(s, "model", LQ_FAILED,
		    "LQ-DEV-002", "%s", terr.message);
		error_set_hint(e, "a smaller size or fewer frames");
	}
	if (pm->has_16bit && !caps->storage_16bit) {
		struct lq_error *e = pf_job_add(s, "model", LQ_FAILED,
		    "LQ-DEV-003", "the model has F16/BF16 weights but %s lacks "
		    "storageBuffer16BitAccess", caps->name);
		error_set_hint(e, "F32 weights, or another device");
	}
}

/*
 * The device check asks the memory plan (nn/plan.h: the functions render
 * sizes its allocations with) for this job's bytes, from the configs and
 * the safetensors headers, and refuses a job whose plan does not fit the
 * device's heap less the margin, naming the smallest change that would.
 */
void
pf_check_device(struct pf_job_state *s)
{
	const struct device_caps *caps = s->ctx->opt->caps;
	if (s->pm != NULL && s->pm->l2 != NULL) {
		check_device_ltx2(s);
		return;
	}
	if (s->pm == NULL || s->pm->dm == NULL)
		return;
	const struct diffusers_model *dm = s->pm->dm;
	if (!s->geometry_ok || !s->mesh_ok)
		return;
	struct nn_weights_layout wt, wv;
	memset(&wt, 0, sizeof(wt));
	memset(&wv, 0, sizeof(wv));
	struct lq_error werr;
	error_clear(&werr);
	/* a tensor larger than a buffer is the LQ-DEV-002 check below */
	if (s->pm->w_transformer)
		(void)ltxv_transformer_weights_layout(s->pm->w_transformer, caps,
		    &wt, &werr);
	if (s->pm->w_vae)
		(void)nn_weights_plan(s->pm->w_vae, "decoder.", NULL, caps,
		    &wv.resident, &werr);
	int embeds = present(s, "prompt_embeds");
	struct nn_plan_request rq = {
		.transformer = &dm->transformer_config,
		.vae = &dm->vae_config,
		.text_encoder = !embeds && dm->text_encoder.present ?
		    &dm->text_encoder_config : NULL,
		.w_transformer = s->pm->w_transformer ? &wt : NULL,
		.w_vae = s->pm->w_vae ? &wv : NULL,
		.text_set = s->pm->w_text,
		/* the render's batch and text length: the embeddings file's
		 * when the job gives one (render.c phase_load) */
		.batch = (int)render_batch(s),
		.guidance = s->cfg_on,
		.data = (int)s->data,
		.context = (int)s->context,
		.num_frames = (int)s->num_frames,
		.height = (int)s->height,
		.width = (int)s->width,
		.max_sequence_length = embeds && s->embeds_T > 0 ?
		    (int)s->embeds_T : (int)s->jc.max_sequence_length,
		.caps = caps,
		.memory_margin = s->ctx->opt->memory_margin,
	};
	/* vae_tiling as the render reads it (ltxv_vae_tiling_from_json owns
	 * its defaults and rules) */
	enum ltxv_vae_tiling_mode tmode;
	struct lq_error terr;
	error_clear(&terr);
	if (ltxv_vae_tiling_from_json(s->jc.vae_tiling, &tmode, &rq.tiling,
	    &terr) != LQ_OK || (tmode == LTXV_VAE_TILING_SET &&
	    ltxv_vae_tiling_check(&dm->vae_config, &rq.tiling, &terr) != LQ_OK)) {
		struct lq_error *e = pf_job_add(s, "vae_tiling", LQ_FAILED,
		    "LQ-CFG-002", "%s", terr.message);
		if (terr.hint[0])
			error_set_hint(e, "%s", terr.hint);
		return;
	}
	rq.vae_tiling = tmode == LTXV_VAE_TILING_AUTO ? NN_PLAN_AUTO :
	    tmode == LTXV_VAE_TILING_OFF ? NN_PLAN_OFF : NN_PLAN_ON;
	if (nn_plan_choice_parse(s->jc.weight_streaming, &rq.weight_streaming))
		rq.weight_streaming = NN_PLAN_AUTO;	/* refused above */
	nn_plan_render(&rq, &s->plan);
	s->has_plan = 1;
	if (caps == NULL)
		return;

	const struct nn_plan *p = &s->plan;
	if (!p->fits) {
		const char *key = p->change_key[0] ? p->change_key : "mesh";
		struct lq_error *e = pf_job_add(s, key, LQ_FAILED,
		    "LQ-DEV-001", "planned peak device memory %s while %s "
		    "(%s; VAE %s, weights %s) exceeds %s: the %s heap less a "
		    "%.0f%% margin",
		    size_text((double)p->peak_device_bytes),
		    nn_plan_phase_name(p->peak_phase),
		    p->peak_phase == NN_PHASE_ENCODE_TEXT ? "text encoder" :
		    p->peak_phase == NN_PHASE_DENOISE ? "transformer" : "VAE decoder",
		    p->vae_tiled ? "tiled" : "untiled",
		    p->streaming == NN_WEIGHTS_STREAMED ? "streamed" : "resident",
		    size_text((double)p->budget), caps->name,
		    (s->ctx->opt->memory_margin > 0 && s->ctx->opt->memory_margin
		    < 1 ? s->ctx->opt->memory_margin : DEVICE_CAPS_MEMORY_MARGIN) *
		    100);
		if (p->change[0])
			error_set_hint(e, "%s", p->change);
		else
			error_set_hint(e, "a device with more memory, or a larger "
			    "mesh.context");
	}
	/* the largest single tensor of the phases that run, against what
	 * the gpu module can hold in one buffer */
	const struct nn_plan_bytes *parts[3] = {
		&p->text_encoder, &p->transformer, &p->vae,
	};
	const struct nn_plan_bytes *big = parts[1];
	for (int i = 0; i < 3; i++)
		if (parts[i]->largest > big->largest)
			big = parts[i];
	error_clear(&terr);
	if (device_caps_check_tensor(caps, big->largest_what, big->largest,
	    &terr) != LQ_OK) {
		struct lq_error *e = pf_job_add(s, "mesh", LQ_FAILED,
		    "LQ-DEV-002", "%s", terr.message);
		error_set_hint(e, "a smaller size or fewer frames, vae_tiling, "
		    "or a larger mesh.context / mesh.tensor");
	}
	if (s->pm->has_16bit && !caps->storage_16bit) {
		struct lq_error *e = pf_job_add(s, "model", LQ_FAILED,
		    "LQ-DEV-003", "the model has F16/BF16 weights but %s lacks "
		    "storageBuffer16BitAccess", caps->name);
		error_set_hint(e, "F32 weights, or another device");
	}
	if (caps->max_compute_shared_memory_size > 0 &&
	    caps->max_compute_shared_memory_size < 16384) {
		struct lq_error *e = pf_job_add(s, "model", LQ_FAILED,
		    "LQ-DEV-003", "%s has %u bytes of compute shared memory; "
		    "latentq's kernels need 16384", caps->name,
		    caps->max_compute_shared_memory_size);
		error_set_hint(e, "another device");
	}
}

/* ---- output paths ---------------------------------------------------- */

/* Lexically normalises `p` (relative); returns NULL when it climbs out. */
static char *
normalize(const char *p)
{
	size_t n = strlen(p);
	char *out = xmalloc(n + 2);
	size_t len = 0;
	int depth = 0;
	const char *c = p;
	while (*c) {
		size_t l = strcspn(c, "/");
		if (l == 0 || (l == 1 && c[0] == '.')) {
			/* skip */
		} else if (l == 2 && c[0] == '.' && c[1] == '.') {
			if (depth == 0) {
				free(out);
				return NULL;
			}
			depth--;
			while (len > 0 && out[len - 1] != '/')
				len--;
			if (len > 0)
				len--;
		} else {
			if (len > 0)
				out[len++] = '/';
			memcpy(out + len, c, l);
			len += l;
			depth++;
		}
		c += l;
		if (*c == '/')
			c++;
	}
	out[len] = '\0';
	return out;
}

/*
 * An output's path fits the file system: each component at most NAME_MAX
 * bytes, the last one with MEDIA_NAME_RESERVE to spare for the files
 * written beside it (NAME.mp4.part, NAME.sheet.png, frame_0001.png), and
 * the whole path with as much to spare under PATH_MAX.  Otherwise the job
 * would pass preflight and fail at encode with ENAMETOOLONG.  Returns 0
 * after adding the error.
 */
static int
check_path_length(struct pf_job_state *s, const char *key, const char *path)
{
	const size_t name_max = NAME_MAX - MEDIA_NAME_RESERVE;
	size_t total = strlen(path);
	if (total + MEDIA_NAME_RESERVE >= PATH_MAX) {
		struct lq_error *e = pf_job_add(s, key, LQ_FAILED, "LQ-OUT-006",
		    "the path is %zu bytes; an output path may be at most %d "
		    "(PATH_MAX %d less %d for the files written beside it)",
		    total, PATH_MAX - 1 - MEDIA_NAME_RESERVE, PATH_MAX,
		    MEDIA_NAME_RESERVE);
		error_set_hint(e, "a shorter output folder or template");
		return 0;
	}
	for (const char *c = path; *c;) {
		size_t l = strcspn(c, "/");
		int last = c[l] == '\0';
		size_t max = last ? name_max : NAME_MAX;
		if (l > max) {
			struct lq_error *e = pf_job_add(s, key, LQ_FAILED,
			    "LQ-OUT-006", "\"%.32s...\" is %zu bytes; a %s name "
			    "may be at most %zu (NAME_MAX %d%s)", c, l,
			    last ? "file" : "folder", max, NAME_MAX,
			    last ? " less room for the files written beside it" :
			    "");
			error_set_hint(e, "a shorter name, or an output template "
			    "without {name}");
			return 0;
		}
		c += l;
		if (*c == '/')
			c++;
	}
	return 1;
}

/*
 * Containment after resolving symlinks: the deepest existing folder on the
 * way to `path` (path itself when it names a folder) must resolve inside
 * `root`.  Returns 1 when it does (or when nothing can be resolved: the
 * render creates the folders, inside root); 0 when a symlink leads out,
 * with *link (the existing name) and *target (where it resolves) set,
 * caller-owned.
 */
static int
resolves_inside(const char *root, const char *path, int is_folder,
    char **link, char **target)
{
	*link = *target = NULL;
	char *real_root = realpath(root, NULL);
	if (real_root == NULL)
		return 1;
	char *p = xstrdup(path);
	size_t root_len = strlen(root);
	if (!is_folder) {
		char *slash = strrchr(p, '/');
		if (slash != NULL && (size_t)(slash - p) >= root_len)
			*slash = '\0';
	}
	int inside = 1;
	for (;;) {
		char *r = realpath(p, NULL);
		struct stat sb;
		if (r == NULL && errno == ENOENT && lstat(p, &sb) == 0) {
			/* a dangling symlink: where it points is not ours to
			 * judge, and mkdir would not follow it anyway */
			char buf[4096];
			ssize_t n = readlink(p, buf, sizeof(buf) - 1);
			buf[n > 0 ? n : 0] = '\0';
			*link = xstrdup(p);
			*target = xstrdup(buf);
			inside = 0;
			break;
		}
		if (r != NULL) {
			size_t n = strlen(real_root);
			if (!(strncmp(r, real_root, n) == 0 && (r[n] == '\0' ||
			    r[n] == '/' || strcmp(real_root, "/") == 0))) {
				*link = xstrdup(p);
				*target = r;
				inside = 0;
			} else {
				free(r);
			}
			break;
		}
		char *slash = strrchr(p, '/');
		if (errno != ENOENT || slash == NULL ||
		    (size_t)(slash - p) < root_len)
			break;	/* nothing more to resolve below root */
		*slash = '\0';
	}
	free(p);
	free(real_root);
	return inside;
}

void
pf_check_output(struct pf_job_state *s, char *paths[3])
{
	static const char *const keys[3] = { "output", "frames", "save_tensors" };
	const char *root = s->ctx->opt->output_dir ? s->ctx->opt->output_dir
	    : s->m->dir;
	for (int i = 0; i < 3; i++) {
		paths[i] = NULL;
		const char *p = json_get_string(s->config, keys[i], NULL);
		if (p == NULL)
			continue;
		const char *last = strrchr(p, '/');
		last = last ? last + 1 : p;
		if (i != 1 && (last[0] == '\0' || strcmp(last, ".") == 0 ||
		    strcmp(last, "..") == 0)) {
			/* output and save_tensors are files; frames a folder */
			struct lq_error *e = pf_job_add(s, keys[i], LQ_FAILED,
			    "LQ-OUT-004", "\"%s\" names a folder; %s is a file",
			    p, keys[i]);
			error_set_hint(e, "%s", i == 0 ? "{name}.mp4" :
			    "{name}.safetensors");
			continue;
		}
		if (p[0] == '/') {
			if (!s->ctx->opt->allow_absolute) {
				const char *base = strrchr(p, '/') + 1;
				struct lq_error *e = pf_job_add(s, keys[i],
				    LQ_FAILED, "LQ-OUT-002", "\"%s\" is an "
				    "absolute path; outputs go inside the output "
				    "folder", p);
				error_set_hint(e, "%s (or allow absolute paths)",
				    base[0] ? base : "{name}.mp4");
				continue;
			}
			char *nm = normalize(p + 1);
			paths[i] = xasprintf("/%s", nm ? nm : "");
			free(nm);
			if (!check_path_length(s, keys[i], paths[i])) {
				free(paths[i]);
				paths[i] = NULL;
			}
			continue;
		}
		char *nm = normalize(p);
		if (nm == NULL || nm[0] == '\0') {
			const char *base = strrchr(p, '/');
			base = base ? base + 1 : p;
			struct lq_error *e = pf_job_add(s, keys[i], LQ_FAILED,
			    "LQ-OUT-001", "\"%s\" resolves outside the output "
			    "folder %s", p, root);
			error_set_hint(e, "%s", strcmp(base, "..") && base[0]
			    ? base : "{name}.mp4");
			free(nm);
			continue;
		}
		paths[i] = xasprintf("%s/%s", root, nm);
		free(nm);
		char *link, *target;
		if (!check_path_length(s, keys[i], paths[i])) {
			free(paths[i]);
			paths[i] = NULL;
		} else if (!resolves_inside(root, paths[i], i == 1, &link,
		    &target)) {
			struct lq_error *e = pf_job_add(s, keys[i], LQ_FAILED,
			    "LQ-OUT-005", "\"%s\" leaves the output folder %s "
			    "through a symbolic link: %s resolves to %s", p, root,
			    link, target);
			error_set_hint(e, "make %s a real folder inside %s (or "
			    "give the target's absolute path and allow absolute "
			    "paths)", link, root);
			free(link);
			free(target);
			free(paths[i]);
			paths[i] = NULL;
		}
	}
}

/* ---- LTX-2 ------------------------------------------------------------ */

/*
 * The audio's length against the video's (issue 15, preflight item 5):
 * the waveform the audio VAE and the vocoder make of L latent frames
 * (4L - 3 mel frames of mel_hop_length / sample_rate s, each turned into
 * the vocoder's samples) against num_frames / frame_rate.  Upstream's own
 * rounding (L = round(...), the 3 mel frames the causal decoder drops)
 * leaves the audio up to 5 mel frames short; a vocoder whose upsampling
 * does not match the mel hop (the goldens' tiny 8x one: 11 ms of audio
 * for 375 ms of video) makes it differ by more than one mel frame from
 * what the mel covers: a warning (LQ-LTX2-007, the render goes on and
 * writes what upstream would) naming both lengths and the upsampling
 * that fits.  An LTX2VocoderWithBWE whose stage-1 waveform is not a
 * multiple of its hop_length fails upstream and in latentq alike:
 * LQ-LTX2-008.
 */
static void
ltx2_audio_length(struct pf_job_state *s, int64_t L)
{
	const struct diffusers_ltx2_model *m = s->pm->l2;
	const struct ltx2_audio_vae_config *ac = &m->audio_vae_config;
	const struct job_config *jc = &s->jc;
	const struct ltx2_vocoder_bwe_config *bwe = m->vocoder_bwe ?
	    &m->vocoder_bwe_config : NULL;
	int64_t M = (ac->mel_bins > 0 ? ac->mel_bins : 64) / 4;
	int64_t z[4] = {1, ac->latent_channels, L, M}, mel[4], wave[3];
	char t[64];

	ltx2_audio_vae_mel_shape(ac, z, mel);
	ltx2_vocoder_waveform_shape(&m->vocoder_config, bwe, mel, wave);
	double frame = (double)ac->mel_hop_length / ac->sample_rate;
	double covered = (double)mel[2] * frame;
	double audio = (double)wave[2] / m->audio_sample_rate;
	double video = jc->num_frames / jc->frame_rate;
	if (fabs(audio - covered) > frame) {
		double per = (double)wave[2] / (double)mel[2];
		double want = frame * m->audio_sample_rate;
		struct lq_error *e = pf_job_add(s, "model", LQ_WARN,
		    "LQ-LTX2-007", "the audio lasts %.3f s for %.3f s of video "
		    "(%s frames at %g fps): the vocoder gives %.4g samples at %d "
		    "Hz per mel frame, but the audio VAE's mel frames are %g ms "
		    "(mel_hop_length %d at %d Hz) = %.4g samples", audio, video,
		    pf_job_text(s, "num_frames", t, sizeof(t)), jc->frame_rate,
		    per, m->audio_sample_rate, frame * 1000, ac->mel_hop_length,
		    ac->sample_rate, want);
		error_set_hint(e, "a vocoder whose upsample_factors multiply to "
		    "%.4g%s (LTX-2's 6 x 5 x 2 x 2 x 2 = 240 at 24 kHz), e.g. "
		    "`latentq model synth --family ltx2 --preset demo`", want,
		    bwe ? " with the BWE's rate ratio" : "");
	}
	if (bwe != NULL) {
		int64_t n1 = ltx2_vocoder_stage1_samples(&bwe->vocoder, mel[2]);
		if (n1 % bwe->hop_length != 0) {
			struct lq_error *e = pf_job_add(s, "model", LQ_FAILED,
			    "LQ-LTX2-008", "the BWE vocoder's stage 1 gives %"
			    PRId64 " samples for %" PRId64 " mel frames, not a "
			    "multiple of its hop_length %d (upstream pads with a "
			    "missing attribute and fails)", n1, mel[2],
			    bwe->hop_length);
			error_set_hint(e, "a stage 1 whose upsample_factors "
			    "multiply to a multiple of hop_length %d",
			    bwe->hop_length);
		}
	}
}

/*
 * What an LTX2Pipeline job needs beyond the shared checks: prompt_embeds
 * of the connectors' width (latentq has no Gemma 3 text encoder), one
 * device (LTX-2 meshes are not implemented), an audio track of at least
 * one latent frame at a rate the MP4's AAC track carries and as long as
 * the video (ltx2_audio_length), STG blocks the transformer has (and
 * perturbed_attn, without which upstream silently ignores them).
 */
void
pf_check_ltx2(struct pf_job_state *s)
{
	if (s->pm == NULL || s->pm->l2 == NULL)
		return;
	const struct diffusers_ltx2_model *m = s->pm->l2;
	const struct ltx2_transformer_config *tc = &s->pm->l2_t;
	const struct job_config *jc = &s->jc;
	char t[64];
	if (!present(s, "prompt_embeds")) {
		struct lq_error *e = pf_job_add(s, "prompt", LQ_FAILED,
		    "LQ-LTX2-001", "an LTX-2 job needs prompt_embeds: latentq "
		    "does not run LTX-2's Gemma 3 text encoder");
		error_set_hint(e, "give prompt_embeds: a safetensors of "
		    "prompt_embeds [B, T, %d] (the encoder's stacked hidden "
		    "states) and prompt_attention_mask [B, T], with their "
		    "negative_ pair for guidance",
		    m->connectors_config.caption_channels *
		    m->connectors_config.text_proj_in_factor);
	} else {
		const char *path = json_get_string(s->config, "prompt_embeds",
		    NULL);
		struct st_file *f = NULL;
		struct lq_error fe;
		error_clear(&fe);
		int want = m->connectors_config.caption_channels *
		    m->connectors_config.text_proj_in_factor;
		if (st_file_open(path, &f, &fe) == LQ_OK) {
			const struct st_tensor *e = st_file_find(f, "prompt_embeds");
			struct job_ltx2_passes ps;
			(void)job_ltx2_passes(jc, &ps);
			int cfg = ps.cfg;
			/* the render's batch and text length (the plan's) */
			if (e != NULL && e->ndim == 3) {
				s->embeds_B = e->shape[0];
				s->embeds_T = e->shape[1];
			}
			if (e == NULL || e->ndim != 3 || e->shape[2] != want ||
			    st_file_find(f, "prompt_attention_mask") == NULL ||
			    (cfg && (st_file_find(f, "negative_prompt_embeds") ==
			    NULL || st_file_find(f,
			    "negative_prompt_attention_mask") == NULL))) {
				struct lq_error *x = pf_job_add(s, "prompt_embeds",
				    LQ_FAILED, "LQ-LTX2-001", "%s does not hold "
				    "prompt_embeds [B, T, %d] and "
				    "prompt_attention_mask [B, T]%s", path, want,
				    cfg ? ", with their negative_ pair (guidance "
				    "is on)" : "");
				error_set_hint(x, "the connectors take caption_"
				    "channels %d x text_proj_in_factor %d stacked "
				    "features", m->connectors_config.caption_channels,
				    m->connectors_config.text_proj_in_factor);
			}
			st_file_close(f);
		}
	}
	static const char *const ltxv_only[] = { "image", "conditions",
	    "latents", "denoise_strength", "loras", "second_stage",
	    "vae_tiling" };
	for (size_t i = 0; i < LQ_ARRAY_LEN(ltxv_only); i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(s->config,
		    ltxv_only[i]);
		if (v == NULL || cJSON_IsNull(v) || (cJSON_IsArray(v) &&
		    cJSON_GetArraySize(v) == 0))
			continue;
		struct lq_error *e = pf_job_add(s, ltxv_only[i], LQ_FAILED,
		    "LQ-LTX2-006", "%s is an LTX-Video key; latentq's LTX-2 "
		    "render (text-to-audio+video) does not take it yet",
		    ltxv_only[i]);
		error_set_hint(e, "leave %s out of LTX-2 jobs", ltxv_only[i]);
	}
	const struct ltx2_audio_vae_config *ac = &m->audio_vae_config;
	int64_t L = latents_audio_num_frames((int)jc->num_frames, jc->frame_rate,
	    ac->sample_rate, ac->mel_hop_length, 4);
	/* the mesh shards both streams' tokens (pf_check_mesh: the video's
	 * and both streams' heads) */
	if (jc->frame_rate > 0 && L >= 1) {
		char what[96];
		snprintf(what, sizeof(what), "%" PRId64 " frames at %g fps",
		    jc->num_frames, jc->frame_rate);
		pf_mesh_check_tokens(s, "the audio stream's", L, what);
	}
	if (jc->frame_rate > 0 && L < 1) {
		/* round(num_frames / frame_rate x sample_rate / hop / 4) */
		double per = (double)ac->sample_rate / ac->mel_hop_length / 4.0;
		int64_t need = (int64_t)ceil(0.5 / per * jc->frame_rate);
		struct lq_error *e = pf_job_add(s, "num_frames", LQ_FAILED,
		    "LQ-LTX2-003", "%s frames at %g fps are %g s of audio, less "
		    "than half of one audio latent frame (%g per second)",
		    pf_job_text(s, "num_frames", t, sizeof(t)), jc->frame_rate,
		    jc->num_frames / jc->frame_rate, per);
		error_set_hint(e, "at least %" PRId64 " frames", need);
	}
	if (jc->frame_rate > 0 && L >= 1)
		ltx2_audio_length(s, L);
	int rate = m->audio_sample_rate;
	if (!media_audio_rate_ok(rate) || m->audio_channels > 2) {
		struct lq_error *e = pf_job_add(s, "model", LQ_FAILED,
		    "LQ-LTX2-004", "the vocoder gives %d channels at %d Hz; the "
		    "MP4's AAC track carries 1 or 2 channels at 8000 to 96000 Hz "
		    "(the AAC rates)", m->audio_channels, rate);
		error_set_hint(e, "use an LTX-2 vocoder (24000 Hz stereo)");
	}
	if ((jc->stg_scale > 0 || jc->audio_stg_scale > 0) &&
	    jc->n_stg_blocks > 0) {
		for (size_t i = 0; i < jc->n_stg_blocks; i++) {
			int64_t b = jc->stg_blocks[i];
			if (b < 0 || b >= tc->num_layers) {
				struct lq_error *e = pf_job_add(s,
				    "spatio_temporal_guidance_blocks", LQ_FAILED,
				    "LQ-LTX2-005", "block %" PRId64 " is not one of "
				    "the transformer's %d (0 to %d)", b,
				    tc->num_layers, tc->num_layers - 1);
				error_set_hint(e, "spatio_temporal_guidance_blocks: "
				    "[%d]", tc->num_layers - 1);
				break;
			}
		}
		if (!tc->perturbed_attn) {
			struct lq_error *e = pf_job_add(s, "stg_scale", LQ_FAILED,
			    "LQ-LTX2-005", "spatio-temporal guidance needs a "
			    "transformer with perturbed_attn; this one would "
			    "ignore the blocks (as upstream does, silently)");
			error_set_hint(e, "stg_scale: 0 and audio_stg_scale: 0");
		}
	}
}

/* ---- Wan 2.1 ---------------------------------------------------------- */

/* prompt_embeds' tensor `name` [B, T, text_dim] of the file; 0 when fine. */
static int
wan_embeds_bad(const struct st_file *f, const char *name, int64_t B,
    int64_t D, int64_t *T)
{
	const struct st_tensor *t = st_file_find(f, name);
	if (t == NULL || t->ndim != 3 || t->shape[2] != D || t->shape[1] < 1 ||
	    (B > 0 && t->shape[0] != B) || t->shape[0] < 1)
		return 1;
	if (T != NULL)
		*T = t->shape[1];
	return 0;
}

/*
 * What a WanPipeline job needs beyond the shared checks (geometry is
 * pf_check_geometry's with the Wan grid; config against weights and the
 * components' agreement pf_model_get's): prompt_embeds of the
 * transformer's text_dim, with negative_prompt_embeds of the same batch
 * under guidance (latentq has no UMT5 encoder: LQ-WAN-001); a latent grid
 * the transformer runs (each axis a multiple of its patch, at most
 * rope_max_seq_len after patching: wan_transformer_check_grid, LQ-WAN-002);
 * no key of the LTX families (LQ-WAN-003); the
 * job's flow_shift (LQ-WAN-005; on an LTX model, LQ-WAN-006) and the
 * schedule of its step count
 * (unipc_set_timesteps, LQ-SAMP-002); and the memory plan of the
 * transformer and the VAE decoder (their plan functions, LQ-DEV-001).
 */
void
pf_check_wan(struct pf_job_state *s)
{
	if (s->pm != NULL && s->pm->wan == NULL && (s->pm->dm != NULL ||
	    s->pm->l2 != NULL) && s->jc.has_flow_shift) {
		struct lq_error *e = pf_job_add(s, "flow_shift", LQ_FAILED,
		    "LQ-WAN-006", "flow_shift is the Wan scheduler's "
		    "(UniPCMultistepScheduler); this model is an LTX pipeline, "
		    "whose FlowMatchEulerDiscreteScheduler would ignore it");
		error_set_hint(e, "leave flow_shift out (the LTX schedulers' "
		    "shift is their scheduler_config.json's), or use a "
		    "WanPipeline model");
	}
	if (s->pm == NULL || s->pm->wan == NULL)
		return;
	const struct wan_transformer_config *tc = &s->pm->wan_t;
	const struct wan_vae_config *vc = &s->pm->wan_v;
	const struct job_config *jc = &s->jc;
	int cfg = jc->guidance_scale > 1.0;
	char t[64];

	/* the text */
	if (!present(s, "prompt_embeds")) {
		struct lq_error *e = pf_job_add(s, "prompt", LQ_FAILED,
		    "LQ-WAN-001", "a Wan job needs prompt_embeds: latentq does "
		    "not run Wan's UMT5 text encoder");
		error_set_hint(e, "give prompt_embeds: a safetensors of "
		    "prompt_embeds [B, T, %d] (UMT5 last_hidden_state, zero "
		    "rows past the prompt), with negative_prompt_embeds for "
		    "guidance", tc->text_dim);
	} else {
		const char *path = json_get_string(s->config, "prompt_embeds",
		    NULL);
		struct st_file *f = NULL;
		struct lq_error fe;
		error_clear(&fe);
		if (path != NULL && st_file_open(path, &f, &fe) == LQ_OK) {
			int64_t T = 0, Tn = 0;
			const struct st_tensor *pe = st_file_find(f,
			    "prompt_embeds");
			int64_t B = pe != NULL && pe->ndim == 3 ? pe->shape[0] : 0;
			if (wan_embeds_bad(f, "prompt_embeds", 0, tc->text_dim,
			    &T) || (cfg && wan_embeds_bad(f,
			    "negative_prompt_embeds", B, tc->text_dim, &Tn))) {
				struct lq_error *e = pf_job_add(s,
				    "prompt_embeds", LQ_FAILED, "LQ-WAN-001",
				    "%s does not hold prompt_embeds [B, T, %d]%s",
				    path, tc->text_dim, cfg ? " and "
				    "negative_prompt_embeds [B, T', same width] "
				    "(guidance is on)" : "");
				error_set_hint(e, "the transformer's text_dim is "
				    "%d (UMT5-XXL's 4096 for Wan 2.1)%s",
				    tc->text_dim, cfg ? "; or guidance_scale: 1" :
				    "");
			} else {
				s->embeds_B = B;
				s->embeds_T = T > Tn ? T : Tn;
			}
			st_file_close(f);
		}
	}

	/* the data axis splits a step's rows as render/wan.c ranks_load
	 * does: the embeddings' batch, twice with CFG */
	if (s->mesh_ok && s->embeds_B > 0 && s->data > 1 &&
	    (s->embeds_B * (s->cfg_on ? 2 : 1)) % s->data != 0) {
		int64_t R = s->embeds_B * (s->cfg_on ? 2 : 1);
		struct lq_error *e = pf_job_add(s, "mesh.data", LQ_FAILED,
		    "LQ-MESH-006", "%" PRId64 " transformer rows (prompt_embeds' "
		    "batch %" PRId64 " × %s) do not split across data %" PRId64,
		    R, s->embeds_B, s->cfg_on ? "2 CFG halves" :
		    "1 row without guidance", s->data);
		int64_t lo = s->data;
		while (lo > 1 && R % lo != 0)
			lo--;
		error_set_hint(e, "nearest valid data: %" PRId64 ", or a "
		    "prompt_embeds batch whose rows it divides", lo);
	}

	/* the latent grid against the transformer's patch and RoPE tables */
	if (s->geometry_ok) {
		struct lq_error ge;
		error_clear(&ge);
		if (wan_transformer_check_grid(tc, (int)s->lat_f, (int)s->lat_h,
		    (int)s->lat_w, &ge) != LQ_OK) {
			int64_t ms = (int64_t)tc->rope_max_seq_len *
			    tc->patch_size[1] * vc->scale_factor_spatial;
			int64_t mf = ((int64_t)tc->rope_max_seq_len *
			    tc->patch_size[0] - 1) * vc->scale_factor_temporal + 1;
			struct lq_error *e = pf_job_add(s, s->lat_f >
			    (int64_t)tc->rope_max_seq_len * tc->patch_size[0] ?
			    "num_frames" : s->height >= s->width ? "height" :
			    "width", LQ_FAILED, "LQ-WAN-002", "the transformer "
			    "cannot run this video: %s", ge.message);
			error_set_hint(e, "at most %" PRId64 " frames and %" PRId64
			    " pixels a side (rope_max_seq_len %d x patch x VAE "
			    "scale)", mf, ms, tc->rope_max_seq_len);
		}
	}

	/* latents: FILE, as prepare_latents takes it: [B, C, F, H, W] */
	const char *lp = json_get_string(s->config, "latents", NULL);
	if (lp != NULL && s->geometry_ok && s->embeds_B > 0) {
		struct st_file *f = NULL;
		struct lq_error le;
		error_clear(&le);
		if (st_file_open(lp, &f, &le) == LQ_OK) {
			const struct st_tensor *x = st_file_find_or_only(f,
			    "latents");
			int64_t want[5] = {s->embeds_B, tc->in_channels, s->lat_f,
			    s->lat_h, s->lat_w};
			if (x == NULL || x->ndim != 5 || memcmp(x->shape, want,
			    sizeof(want)) != 0) {
				struct lq_error *e = pf_job_add(s, "latents",
				    LQ_FAILED, "LQ-LAT-001", "%s: latents must be "
				    "[%" PRId64 ", %" PRId64 ", %" PRId64 ", %"
				    PRId64 ", %" PRId64 "] (B, C, F, H, W) for "
				    "this job", lp, want[0], want[1], want[2],
				    want[3], want[4]);
				error_set_hint(e, "write the latents of a job with "
				    "this height, width, num_frames and batch, or "
				    "change the job to the latents' size");
			}
			st_file_close(f);
		}
	}

	/* keys of the LTX families the Wan render does not take */
	static const char *const ltx_only[] = { "image", "conditions",
	    "denoise_strength", "loras", "second_stage", "vae_tiling",
	    "decode_noise" };
	for (size_t i = 0; i < LQ_ARRAY_LEN(ltx_only); i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(s->config,
		    ltx_only[i]);
		if (v == NULL || cJSON_IsNull(v) || (cJSON_IsArray(v) &&
		    cJSON_GetArraySize(v) == 0))
			continue;
		struct lq_error *e = pf_job_add(s, ltx_only[i], LQ_FAILED,
		    "LQ-WAN-003", "%s is an LTX key; latentq's Wan render "
		    "(text-to-video, WanPipeline) does not take it", ltx_only[i]);
		error_set_hint(e, "leave %s out of Wan jobs", ltx_only[i]);
	}
	if (jc->guidance_rescale != 0.0 || jc->decode_timestep != 0.0) {
		const char *k = jc->guidance_rescale != 0.0 ?
		    "guidance_rescale" : "decode_timestep";
		struct lq_error *e = pf_job_add(s, k, LQ_FAILED, "LQ-WAN-003",
		    "%s is %s: WanPipeline has no %s", k,
		    pf_job_text(s, k, t, sizeof(t)), k);
		error_set_hint(e, "%s: 0", k);
	}
	/* the scheduler the render resolves, and its schedule */
	struct unipc_config sc = s->pm->wan_sched;
	struct lq_error se;
	error_clear(&se);
	if (jc->has_flow_shift && unipc_config_set_flow_shift(&sc,
	    jc->flow_shift, &se) != LQ_OK) {
		struct lq_error *e = pf_job_add(s, "flow_shift", LQ_FAILED,
		    se.code, "%s is not above 0",
		    pf_job_text(s, "flow_shift", t, sizeof(t)));
		error_set_hint(e, "%s", se.hint);
	} else if (s->pm->wan_sched_ok && jc->num_inference_steps >= 1) {
		struct unipc_schedule sch;
		if (unipc_set_timesteps(&sc, (int)jc->num_inference_steps, &sch,
		    &se) == LQ_OK) {
			unipc_schedule_free(&sch);
		} else {
			struct lq_error *e = pf_job_add(s, "num_inference_steps",
			    LQ_FAILED, "LQ-SAMP-002", "the UniPC scheduler "
			    "refuses the schedule: %s (%s)", se.message, se.code);
			error_set_hint(e, "%s", se.hint[0] ? se.hint :
			    "another flow_shift");
		}
	}

	/* the memory plan: the transformer (denoise), then the VAE decoder,
	 * each alone on the device as the render loads them */
	const struct device_caps *caps = s->ctx->opt->caps;
	if (!s->geometry_ok || s->embeds_B < 1)
		return;
	struct nn_weights_layout wt, wv;
	memset(&wt, 0, sizeof(wt));
	memset(&wv, 0, sizeof(wv));
	struct lq_error werr;
	error_clear(&werr);
	if (s->pm->w_transformer)
		(void)nn_weights_plan(s->pm->w_transformer, NULL, NULL, caps,
		    &wt.resident, &werr);
	if (s->pm->w_vae)
		(void)nn_weights_plan(s->pm->w_vae, "decoder.", NULL, caps,
		    &wv.resident, &werr);
	/* a forward's rows on one rank, as render/wan.c ranks_load cuts
	 * them: its data coordinate's share of the step's B or 2B rows, at
	 * most B (one text); its context group's share of the tokens */
	int64_t R = s->embeds_B * (s->cfg_on ? 2 : 1);
	int64_t data = s->mesh_ok && s->data > 0 && R % s->data == 0 ?
	    s->data : 1;
	int64_t rows = R / data < s->embeds_B ? R / data : s->embeds_B;
	struct wan_transformer_shape shp = {
		.B = (int)rows, .F = (int)s->lat_f, .H = (int)s->lat_h,
		.W = (int)s->lat_w, .T = (int)s->embeds_T,
		.context = s->mesh_ok ? (int)s->context : 1,
		.streaming = NN_WEIGHTS_RESIDENT,
	};
	struct nn_plan_bytes pt, pv;
	memset(&pt, 0, sizeof(pt));
	memset(&pv, 0, sizeof(pv));
	wan_transformer_plan(tc, &wt, caps, &shp, &pt);
	wan_vae_plan(vc, &wv, caps, (int)s->embeds_B, (int)s->lat_f,
	    (int)s->lat_h, (int)s->lat_w, &pv);
	if (caps == NULL)
		return;
	uint64_t budget = device_caps_memory_budget(caps,
	    s->ctx->opt->memory_margin);
	uint64_t dt = nn_plan_bytes_device(&pt), dv = nn_plan_bytes_device(&pv);
	if (budget > 0 && (dt > budget || dv > budget)) {
		int vae = dv > dt;
		struct lq_error *e = pf_job_add(s, "height", LQ_FAILED,
		    "LQ-DEV-001", "planned peak device memory %s while %s (the "
		    "%s) exceeds %s on %s", size_text((double)(vae ? dv : dt)),
		    vae ? "decoding" : "denoising", vae ? "Wan VAE decoder" :
		    "Wan transformer", size_text((double)budget), caps->name);
		error_set_hint(e, "a smaller height and width or fewer frames "
		    "(latentq has no VAE tiling for Wan yet), or a device with "
		    "more memory");
	}
	const struct nn_plan_bytes *big = pt.largest >= pv.largest ? &pt : &pv;
	struct lq_error terr;
	error_clear(&terr);
	if (device_caps_check_tensor(caps, big->largest_what, big->largest,
	    &terr) != LQ_OK) {
		struct lq_error *e = pf_job_add(s, "height", LQ_FAILED,
		    "LQ-DEV-002", "%s", terr.message);
		error_set_hint(e, "a smaller size or fewer frames");
	}
}
