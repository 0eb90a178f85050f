/*
 * job.c — the typed job config and its derived values (see job.h).  The
 * defaults are the key table's (schema.c): this file holds no default of
 * its own.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "manifest/job.h"
#include "manifest/schema.h"

/* Reads keys of one object (the config, its mesh, a LoRA) with defaults. */
struct reader {
	const cJSON *obj;
	const struct manifest_key *parent;	/* NULL: top level; else MESH/LORAS */
	struct lq_error *err;
	int failed;
};

/*
 * The table's defaults, parsed on first use and kept for the life of the
 * program (strings of a job_config may point into them).  Keyed
 * "<parent>.<key>" for sub-keys.
 */
static cJSON *table_defaults;

static const struct manifest_key *
row(const struct reader *r, const char *key)
{
	const struct manifest_key *k = r->parent
	    ? manifest_key_field(r->parent, key) : manifest_key_find(key);
	LQ_ASSERT(k != NULL);	/* a field without a table row is a bug */
	return k;
}

/* The value of `key`: as written, else the table's default; NULL: none. */
static const cJSON *
value(struct reader *r, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(r->obj, key);
	if (v != NULL && !cJSON_IsNull(v))
		return v;
	const struct manifest_key *k = row(r, key);
	/* A template's default is expanded by the manifest, per job: a config
	 * without the key has no value for it. */
	if (k->def == NULL || k->type == MANIFEST_TEMPLATE)
		return NULL;
	if (table_defaults == NULL)
		table_defaults = cJSON_CreateObject();
	char name[96];
	snprintf(name, sizeof(name), "%s%s%s", r->parent ? r->parent->name : "",
	    r->parent ? "." : "", key);
	cJSON *d = cJSON_GetObjectItemCaseSensitive(table_defaults, name);
	if (d == NULL) {
		d = cJSON_Parse(k->def);
		LQ_ASSERT(d != NULL);	/* the table's JSON is ours */
		cJSON_AddItemToObject(table_defaults, name, d);
	}
	return cJSON_IsNull(d) ? NULL : d;
}

static void
bad(struct reader *r, const char *key, const char *what)
{
	if (r->failed++)
		return;
	error_set(r->err, LQ_FAILED, "LQ-RUN-CFG", "job config: %s%s%s is not "
	    "%s", r->parent ? r->parent->name : "", r->parent ? "." : "", key,
	    what);
	error_set_field(r->err, "%s%s%s", r->parent ? r->parent->name : "",
	    r->parent ? "." : "", key);
}

static const char *
get_string(struct reader *r, const char *key)
{
	const cJSON *v = value(r, key);
	if (v == NULL)
		return NULL;
	if (!cJSON_IsString(v)) {
		bad(r, key, "a string");
		return NULL;
	}
	return v->valuestring;
}

static double
get_number(struct reader *r, const char *key)
{
	const cJSON *v = value(r, key);
	if (v == NULL)
		return 0;
	if (!cJSON_IsNumber(v)) {
		bad(r, key, "a number");
		return 0;
	}
	return v->valuedouble;
}

static int64_t
get_int(struct reader *r, const char *key)
{
	double d = get_number(r, key);
	if (d != floor(d) || fabs(d) > 9007199254740992.0) {
		bad(r, key, "an integer");
		return 0;
	}
	return (int64_t)d;
}

static int
get_bool(struct reader *r, const char *key)
{
	const cJSON *v = value(r, key);
	if (v == NULL)
		return 0;
	if (!cJSON_IsBool(v)) {
		bad(r, key, "true or false");
		return 0;
	}
	return cJSON_IsTrue(v);
}

/* u64 keys are decimal strings in a config (a double cannot hold them). */
static uint64_t
get_u64(struct reader *r, const char *key)
{
	const cJSON *v = value(r, key);
	if (v == NULL)
		return 0;
	if (cJSON_IsNumber(v) && v->valuedouble >= 0 &&
	    v->valuedouble == floor(v->valuedouble) &&
	    v->valuedouble <= 9007199254740992.0)
		return (uint64_t)v->valuedouble;
	const char *s = cJSON_IsString(v) ? v->valuestring : NULL;
	char *end = NULL;
	errno = 0;
	unsigned long long u = s && s[0] >= '0' && s[0] <= '9'
	    ? strtoull(s, &end, 10) : 0;
	if (s == NULL || end == NULL || *end != '\0' || errno == ERANGE) {
		bad(r, key, "an unsigned 64-bit integer");
		return 0;
	}
	return (uint64_t)u;
}

/*
 * LTX2Pipeline.__call__'s `audio_guidance_scale = audio_guidance_scale or
 * guidance_scale` (and the same for stg, modality, rescale): an audio
 * value of 0 is the video's, unless the job asks for its values literally.
 */
static double
audio_or(const struct job_config *jc, double audio, double video)
{
	return audio == 0.0 && !jc->audio_scales_literal ? video : audio;
}

enum lq_status
job_config_from_json(const cJSON *config, struct job_config *jc,
    struct lq_error *err)
{
	memset(jc, 0, sizeof(*jc));
	if (!cJSON_IsObject(config))
		return error_set(err, LQ_FAILED, "LQ-RUN-CFG", "job config is "
		    "not a JSON object");
	struct reader r = { .obj = config, .err = err };
	jc->name = get_string(&r, "name");
	jc->prompt = get_string(&r, "prompt");
	jc->negative_prompt = get_string(&r, "negative_prompt");
	jc->prompt_embeds = get_string(&r, "prompt_embeds");
	jc->height = get_int(&r, "height");
	jc->width = get_int(&r, "width");
	jc->num_frames = get_int(&r, "num_frames");
	jc->frame_rate = get_number(&r, "frame_rate");
	jc->num_inference_steps = get_int(&r, "num_inference_steps");
	jc->guidance_scale = get_number(&r, "guidance_scale");
	jc->guidance_rescale = get_number(&r, "guidance_rescale");
	jc->decode_timestep = get_number(&r, "decode_timestep");
	/* diffusers: decode_noise_scale None means decode_timestep */
	jc->decode_noise_scale = value(&r, "decode_noise_scale")
	    ? get_number(&r, "decode_noise_scale") : jc->decode_timestep;
	jc->seed = get_u64(&r, "seed");
	jc->latents = get_string(&r, "latents");
	jc->decode_noise = get_string(&r, "decode_noise");
	jc->noise = get_string(&r, "noise");
	jc->image = get_string(&r, "image");
	jc->has_denoise_strength = value(&r, "denoise_strength") != NULL;
	jc->denoise_strength = jc->has_denoise_strength ?
	    get_number(&r, "denoise_strength") : 1.0;
	jc->image_cond_noise_scale = get_number(&r, "image_cond_noise_scale");
	jc->stg_scale = get_number(&r, "stg_scale");
	jc->modality_scale = get_number(&r, "modality_scale");
	jc->audio_scales_literal = get_bool(&r, "audio_scales_literal");
	jc->audio_guidance_scale = audio_or(jc, get_number(&r,
	    "audio_guidance_scale"), jc->guidance_scale);
	jc->audio_stg_scale = audio_or(jc, get_number(&r, "audio_stg_scale"),
	    jc->stg_scale);
	jc->audio_modality_scale = audio_or(jc, get_number(&r,
	    "audio_modality_scale"), jc->modality_scale);
	jc->audio_guidance_rescale = audio_or(jc, get_number(&r,
	    "audio_guidance_rescale"), jc->guidance_rescale);
	jc->use_cross_timestep = get_bool(&r, "use_cross_timestep");
	const cJSON *blocks = value(&r, "spatio_temporal_guidance_blocks");
	if (blocks != NULL && !cJSON_IsArray(blocks))
		bad(&r, "spatio_temporal_guidance_blocks", "a list");
	if (cJSON_IsArray(blocks) && cJSON_GetArraySize(blocks) > 0) {
		jc->n_stg_blocks = (size_t)cJSON_GetArraySize(blocks);
		jc->stg_blocks = xcalloc(jc->n_stg_blocks,
		    sizeof(*jc->stg_blocks));
		size_t i = 0;
		const cJSON *b;
		cJSON_ArrayForEach(b, blocks) {
			if (!cJSON_IsNumber(b) || b->valuedouble !=
			    floor(b->valuedouble))
				bad(&r, "spatio_temporal_guidance_blocks",
				    "a list of integers");
			jc->stg_blocks[i++] = cJSON_IsNumber(b) ?
			    (int64_t)b->valuedouble : 0;
		}
	}
	jc->has_flow_shift = value(&r, "flow_shift") != NULL;
	jc->flow_shift = jc->has_flow_shift ? get_number(&r, "flow_shift") :
	    0.0;
	jc->model = get_string(&r, "model");
	jc->transformer = get_string(&r, "transformer");
	jc->vae = get_string(&r, "vae");
	jc->text_encoder = get_string(&r, "text_encoder");
	jc->scheduler = get_string(&r, "scheduler");
	jc->model_digest = get_string(&r, "model_digest");
	jc->max_sequence_length = get_int(&r, "max_sequence_length");
	jc->truncate = get_bool(&r, "truncate");
	jc->per_device_batch_size = get_number(&r, "per_device_batch_size");
	jc->weight_streaming = get_string(&r, "weight_streaming");
	jc->precision = get_string(&r, "precision");
	jc->output = get_string(&r, "output");
	jc->frames = get_string(&r, "frames");
	jc->save_tensors = get_string(&r, "save_tensors");
	jc->max_attempts = get_int(&r, "max_attempts");
	jc->priority = get_int(&r, "priority");

	const cJSON *mesh = cJSON_GetObjectItemCaseSensitive(config, "mesh");
	if (mesh != NULL && !cJSON_IsNull(mesh) && !cJSON_IsObject(mesh))
		bad(&r, "mesh", "a mapping");
	struct reader m = { .obj = cJSON_IsObject(mesh) ? mesh : NULL,
	    .parent = manifest_key_find("mesh"), .err = err,
	    .failed = r.failed };
	jc->mesh.devices = get_int(&m, "devices");
	jc->mesh.data = get_int(&m, "data");
	jc->mesh.context = get_int(&m, "context");
	jc->mesh.tensor = get_int(&m, "tensor");
	r.failed = m.failed;

	/* vae_tiling: kept as written; the VAE decoder reads it
	 * (ltxv_vae_tiling_from_json owns its defaults and rules) */
	const cJSON *vt = cJSON_GetObjectItemCaseSensitive(config, "vae_tiling");
	if (vt != NULL && !cJSON_IsNull(vt) && !cJSON_IsObject(vt) &&
	    !cJSON_IsString(vt))
		bad(&r, "vae_tiling", "auto, off or a mapping");
	jc->vae_tiling = vt != NULL && !cJSON_IsNull(vt) ? vt : NULL;

	const cJSON *loras = cJSON_GetObjectItemCaseSensitive(config, "loras");
	if (loras != NULL && !cJSON_IsNull(loras) && !cJSON_IsArray(loras))
		bad(&r, "loras", "a list");
	if (cJSON_IsArray(loras) && cJSON_GetArraySize(loras) > 0) {
		jc->n_loras = (size_t)cJSON_GetArraySize(loras);
		jc->loras = xcalloc(jc->n_loras, sizeof(*jc->loras));
		size_t i = 0;
		const cJSON *l;
		cJSON_ArrayForEach(l, loras) {
			struct reader lr = { .obj = l,
			    .parent = manifest_key_find("loras"), .err = err,
			    .failed = r.failed };
			if (!cJSON_IsObject(l))
				bad(&lr, "[]", "a {path, scale} mapping");
			jc->loras[i].path = get_string(&lr, "path");
			jc->loras[i].scale = get_number(&lr, "scale");
			if (jc->loras[i].path == NULL)
				bad(&lr, "path", "given");
			r.failed = lr.failed;
			i++;
		}
	}
	const cJSON *conds = cJSON_GetObjectItemCaseSensitive(config,
	    "conditions");
	if (conds != NULL && !cJSON_IsNull(conds) && !cJSON_IsArray(conds))
		bad(&r, "conditions", "a list");
	if (cJSON_IsArray(conds) && cJSON_GetArraySize(conds) > 0) {
		jc->n_conditions = (size_t)cJSON_GetArraySize(conds);
		jc->conditions = xcalloc(jc->n_conditions,
		    sizeof(*jc->conditions));
		size_t i = 0;
		const cJSON *c;
		cJSON_ArrayForEach(c, conds) {
			struct reader cr = { .obj = c,
			    .parent = manifest_key_find("conditions"), .err = err,
			    .failed = r.failed };
			if (!cJSON_IsObject(c))
				bad(&cr, "[]", "an {image, frame_index, strength} "
				    "mapping");
			jc->conditions[i].image = get_string(&cr, "image");
			jc->conditions[i].frame_index = get_int(&cr, "frame_index");
			jc->conditions[i].strength = get_number(&cr, "strength");
			if (jc->conditions[i].image == NULL)
				bad(&cr, "image", "given");
			r.failed = cr.failed;
			i++;
		}
	}
	const cJSON *ss = cJSON_GetObjectItemCaseSensitive(config,
	    "second_stage");
	if (ss != NULL && !cJSON_IsNull(ss) && !cJSON_IsObject(ss))
		bad(&r, "second_stage", "a mapping");
	if (cJSON_IsObject(ss)) {
		struct job_second_stage *t = &jc->second_stage;
		struct reader sr = { .obj = ss,
		    .parent = manifest_key_find("second_stage"), .err = err,
		    .failed = r.failed };
		t->present = 1;
		t->latent_upsampler = get_string(&sr, "latent_upsampler");
		t->adain_factor = get_number(&sr, "adain_factor");
		t->tone_map_compression_ratio = get_number(&sr,
		    "tone_map_compression_ratio");
		t->height = get_int(&sr, "height");
		t->width = get_int(&sr, "width");
		t->denoise_strength = get_number(&sr, "denoise_strength");
		/* absent: the job's own (stage 1's) value */
#define INHERIT(f, get) t->f = value(&sr, #f) ? get(&sr, #f) : jc->f
		INHERIT(num_inference_steps, get_int);
		INHERIT(guidance_scale, get_number);
		INHERIT(guidance_rescale, get_number);
		INHERIT(image_cond_noise_scale, get_number);
		INHERIT(decode_timestep, get_number);
		INHERIT(decode_noise_scale, get_number);
#undef INHERIT
		if (t->latent_upsampler == NULL)
			bad(&sr, "latent_upsampler", "given");
		r.failed = sr.failed;
	}
	if (r.failed) {
		job_config_free(jc);
		return LQ_FAILED;
	}
	return LQ_OK;
}

void
job_stage_config(const struct job_config *jc, int stage,
    struct job_config *out)
{
	const struct job_second_stage *t = &jc->second_stage;

	LQ_ASSERT(t->present && (stage == 1 || stage == 2));
	*out = *jc;
	memset(&out->second_stage, 0, sizeof(out->second_stage));
	out->stage = stage;
	if (stage == 1)
		return;
	out->height = t->height;
	out->width = t->width;
	out->num_inference_steps = t->num_inference_steps;
	out->denoise_strength = t->denoise_strength;
	out->has_denoise_strength = 1;
	out->guidance_scale = t->guidance_scale;
	out->guidance_rescale = t->guidance_rescale;
	out->image_cond_noise_scale = t->image_cond_noise_scale;
	out->decode_timestep = t->decode_timestep;
	out->decode_noise_scale = t->decode_noise_scale;
	out->latents = NULL;
}

int
job_two_stage(const struct job_config *jc)
{
	return jc->second_stage.present;
}

void
job_config_free(struct job_config *jc)
{
	free(jc->loras);
	free(jc->conditions);
	free(jc->stg_blocks);
	memset(jc, 0, sizeof(*jc));
}

int
job_condition_pipeline(const struct job_config *jc)
{
	return jc->has_denoise_strength || jc->n_conditions > 0 ||
	    jc->stage > 0 || jc->second_stage.present;
}

int64_t
job_batch(const struct job_config *jc, double *exact)
{
	double data = jc->mesh.data >= 1 ? (double)jc->mesh.data : 1.0;
	double b = jc->per_device_batch_size * data;
	if (exact != NULL)
		*exact = b;
	int64_t bi = (int64_t)llround(b);
	if (!(jc->per_device_batch_size > 0) || bi < 1 ||
	    fabs(b - (double)bi) > 1e-9)
		return 0;
	return bi;
}

int
job_cfg_rows(const struct job_config *jc)
{
	return jc->guidance_scale > 1.0 ? 2 : 1;
}

int64_t
job_rows_per_device_of(const struct job_config *jc, int per_video,
    int64_t *rows)
{
	int64_t videos = job_batch(jc, NULL);
	if (rows != NULL)
		*rows = videos * per_video;
	if (videos == 0)
		return 0;
	double r = jc->per_device_batch_size * (double)per_video;
	int64_t ri = (int64_t)llround(r);
	if (ri < 1 || fabs(r - (double)ri) > 1e-9)
		return 0;
	return ri;
}

int64_t
job_rows_per_device(const struct job_config *jc, int64_t *rows)
{
	return job_rows_per_device_of(jc, job_cfg_rows(jc), rows);
}

int
job_ltx2_passes(const struct job_config *jc, struct job_ltx2_passes *p)
{
	struct job_ltx2_passes q = {
		.cfg = jc->guidance_scale > 1.0 || jc->audio_guidance_scale > 1.0,
		.stg = jc->stg_scale > 0.0 || jc->audio_stg_scale > 0.0,
		.iso = jc->modality_scale > 1.0 || jc->audio_modality_scale > 1.0,
	};
	if (p != NULL)
		*p = q;
	return (q.cfg ? 2 : 1) + q.stg + q.iso;
}

int
job_latent_shape(const struct job_config *jc, int spatial, int temporal,
    int patch, int patch_t, struct job_latent_shape *out)
{
	memset(out, 0, sizeof(*out));
	LQ_ASSERT(spatial >= 1 && temporal >= 1 && patch >= 1 && patch_t >= 1);
	int64_t grid = (int64_t)spatial * patch;
	if (jc->height < 1 || jc->width < 1 || jc->num_frames < 1 ||
	    jc->height % grid != 0 || jc->width % grid != 0 ||
	    (jc->num_frames - 1) % temporal != 0)
		return -1;
	int64_t f = (jc->num_frames - 1) / temporal + 1;
	if (f % patch_t != 0)
		return -1;
	out->batch = job_batch(jc, NULL);
	out->frames = f;
	out->height = jc->height / spatial;
	out->width = jc->width / spatial;
	out->tokens = (f / patch_t) * (out->height / patch) *
	    (out->width / patch);
	return 0;
}

char *
job_resolve_path(const char *base_dir, const char *p)
{
	if (p == NULL)
		return NULL;
	if (p[0] == '/' || base_dir == NULL)
		return xstrdup(p);
	return xasprintf("%s/%s", base_dir, p);
}

char *
job_path_sibling(const char *path, const char *suffix)
{
	const char *dot = strrchr(path, '.');
	const char *slash = strrchr(path, '/');
	size_t stem = (dot != NULL && (slash == NULL || dot > slash)) ?
	    (size_t)(dot - path) : strlen(path);
	return xasprintf("%.*s%s", (int)stem, path, suffix);
}

char *
job_output_path(const struct job_config *jc, const char *base_dir, int video,
    int n_videos)
{
	if (jc->output == NULL)
		return NULL;
	char *p = job_resolve_path(base_dir, jc->output);
	if (n_videos <= 1)
		return p;
	char suffix[32];
	snprintf(suffix, sizeof(suffix), "-%d.mp4", video);
	char *r = job_path_sibling(p, suffix);
	free(p);
	return r;
}

char *
job_frames_path(const struct job_config *jc, const char *base_dir, int video,
    int n_videos)
{
	if (jc->frames == NULL)
		return NULL;
	char *dir = job_resolve_path(base_dir, jc->frames);
	if (n_videos <= 1)
		return dir;
	char *r = xasprintf("%s/%d", dir, video);
	free(dir);
	return r;
}

const char *const job_model_keys[JOB_MODEL_KEYS] = {"model", "transformer",
    "vae", "text_encoder", "scheduler"};

void
job_model_values(const struct job_config *jc, const char *out[JOB_MODEL_KEYS])
{
	out[0] = jc->model;
	out[1] = jc->transformer;
	out[2] = jc->vae;
	out[3] = jc->text_encoder;
	out[4] = jc->scheduler;
}
