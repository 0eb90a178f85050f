/*
 * model.c — preflight's look at a model folder, once per folder and override
 * set: configs (model/diffusers.h), safetensors headers of every component
 * (mapped, not read), the tensors the configs imply (model/expected.h),
 * component agreement, extra components such as a latent upsampler, the
 * scheduler values that shape the schedule; and the shared files jobs name
 * (LoRAs, prompt_embeds), checked once each.
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/codes.h"
#include "core/digest.h"
#include "core/json.h"
#include "core/util.h"
#include "model/expected.h"
#include "model/hash.h"
#include "model/lora.h"
#include "model/ref.h"
#include "preflight/preflight-int.h"
#include "text/tokenizer.h"

struct lq_error *
pf_list_add(struct pf_list *l, enum lq_status status, const char *code,
    const char *fmt, ...)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 4;
		l->v = xrealloc(l->v, l->cap * sizeof(*l->v));
	}
	struct lq_error *e = &l->v[l->n++];
	error_clear(e);
	e->status = status;
	snprintf(e->code, sizeof(e->code), "%s", code);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e->message, sizeof(e->message), fmt, ap);
	va_end(ap);
	return e;
}

void
pf_list_free(struct pf_list *l)
{
	free(l->v);
	memset(l, 0, sizeof(*l));
}

static int
is_dir(const char *p)
{
	struct stat sb;
	return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* Name relative to the model root, for messages. */
static const char *
rel(const struct pf_model *pm, const char *path)
{
	size_t n = strlen(pm->dir);
	if (strncmp(path, pm->dir, n) == 0 && path[n] == '/')
		return path + n + 1;
	return path;
}

/* Does `dir` hold a weights file st_set_open would pick? */
static int
has_weights(const char *dir)
{
	DIR *d = opendir(dir);
	if (d == NULL)
		return 0;
	struct dirent *e;
	int found = 0;
	while ((e = readdir(d)) != NULL) {
		size_t n = strlen(e->d_name);
		if ((n > 12 && strcmp(e->d_name + n - 12, ".safetensors") == 0) ||
		    (n > 23 && strcmp(e->d_name + n - 23, ".safetensors.index.json") == 0))
			found = 1;
	}
	closedir(d);
	return found;
}

/* Lists up to 4 names of a report list for a message. */
static void
names(char *buf, size_t n, char **v, size_t count)
{
	size_t len = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < count && i < 4; i++) {
		int r = snprintf(buf + len, n - len, "%s%s", i ? "; " : "", v[i]);
		if (r < 0 || (size_t)r >= n - len)
			return;
		len += (size_t)r;
	}
	if (count > 4)
		snprintf(buf + len, n - len, "; and %zu more", count - 4);
}

/* Opens one component's weights and compares them with its table. */
static struct st_set *
open_weights(struct pf_model *pm, const char *key, const char *what,
    const char *dir, const struct tensor_table *t)
{
	char buf[600];
	if (!has_weights(dir)) {
		struct lq_error *e = pf_list_add(&pm->problems, LQ_FAILED,
		    "LQ-MDL-003", "%s: %s/ has no weights file "
		    "(diffusion_pytorch_model.safetensors or model.safetensors)",
		    what, rel(pm, dir));
		snprintf(e->field, sizeof(e->field), "%s", key);
		error_set_hint(e, "download the component again; a missing "
		    "component is never initialised at random");
		return NULL;
	}
	struct st_set *s = NULL;
	struct lq_error err;
	error_clear(&err);
	if (st_set_open(dir, &s, &err) != LQ_OK) {
		struct lq_error *e = pf_list_add(&pm->problems, LQ_FAILED,
		    "LQ-MDL-004", "%s: %s%s%s: %s (%s)", what,
		    rel(pm, err.file[0] ? err.file : dir),
		    err.field[0] ? ": " : "", err.field, err.message, err.code);
		snprintf(e->field, sizeof(e->field), "%s", key);
		error_set_hint(e, "a truncated or interrupted download; fetch "
		    "the file again");
		return NULL;
	}
	for (size_t i = 0; i < st_set_count(s); i++) {
		const struct st_tensor *x = st_set_tensor(s, i);
		if (x->dtype == ST_F16 || x->dtype == ST_BF16)
			pm->has_16bit = 1;
	}
	if (t == NULL)
		return s;
	struct expected_report r;
	memset(&r, 0, sizeof(r));
	error_clear(&err);
	if (expected_check(t, s, dir, &r, &err) != LQ_OK) {
		struct {
			size_t n;
			char **v;
			const char *code, *what;
		} kinds[] = {
			{ r.n_missing, r.missing, "LQ-MDL-005", "missing" },
			{ r.n_misshaped, r.misshaped, "LQ-MDL-006", "mis-shaped" },
			{ r.n_bad_dtype, r.bad_dtype, "LQ-MDL-006", "of a wrong dtype" },
			{ r.n_unexpected, r.unexpected, "LQ-MDL-007", "unexpected" },
		};
		for (size_t k = 0; k < LQ_ARRAY_LEN(kinds); k++) {
			if (kinds[k].n == 0)
				continue;
			names(buf, sizeof(buf), kinds[k].v, kinds[k].n);
			struct lq_error *e = pf_list_add(&pm->problems,
			    LQ_FAILED, kinds[k].code,
			    "%s: %zu tensor%s %s for its config.json: %s", what,
			    kinds[k].n, kinds[k].n == 1 ? "" : "s",
			    kinds[k].what, buf);
			snprintf(e->field, sizeof(e->field), "%s", key);
			error_set_hint(e, "the weights do not belong to this "
			    "config: use the config the weights were saved with");
		}
	}
	expected_report_free(&r);
	return s;
}

/*
 * The scheduler config, parsed by the sampler's own parser
 * (scheduler_config_load), so every config the render would refuse
 * (use_karras_sigmas, invert_sigmas, num_train_timesteps 0, another class)
 * is refused here with the sampler's code (LQ-SCHED-001..005).
 */
static void
read_scheduler(struct pf_model *pm, const struct diffusers_overrides *ov)
{
	struct lq_error err;
	error_clear(&err);
	if (pm->dm->scheduler.config_path == NULL)
		return;
	if (scheduler_config_load(pm->dm->scheduler.config_path, &pm->sched,
	    &err) == LQ_OK) {
		pm->sched_ok = 1;
		return;
	}
	struct lq_error *e = pf_list_add(&pm->problems, LQ_FAILED, err.code,
	    "%s: %s", rel(pm, err.file[0] ? err.file
	    : pm->dm->scheduler.config_path), err.message);
	snprintf(e->field, sizeof(e->field), "%s",
	    ov->scheduler ? "scheduler" : "model");
	error_set_hint(e, "%s", err.hint[0] ? err.hint : "use the scheduler "
	    "config LTX-Video ships (FlowMatchEulerDiscreteScheduler)");
}

/*
 * Extra components: model_index.json entries other than the five LTXPipeline
 * has.  A latent upsampler (diffusers LTXLatentUpsamplerModel,
 * pipelines/ltx/modeling_latent_upsampler.py) must have its folder, config
 * and weights, its in_channels must equal the VAE's latent channels and its
 * initial_conv / final_conv must match its config.
 */
static void
check_extras(struct pf_model *pm)
{
	char *index_path = xasprintf("%s/model_index.json", pm->dir);
	cJSON *index = NULL;
	struct lq_error err;
	error_clear(&err);
	if (diffusers_load_json(index_path, &index, &err) != LQ_OK) {
		free(index_path);
		return;
	}
	static const char *const known[] = { "transformer", "vae",
	    "text_encoder", "tokenizer", "scheduler" };
	const cJSON *e;
	cJSON_ArrayForEach(e, index) {
		if (e->string[0] == '_' || !cJSON_IsArray(e))
			continue;
		int k = 0;
		for (size_t i = 0; i < LQ_ARRAY_LEN(known); i++)
			k |= strcmp(known[i], e->string) == 0;
		const cJSON *cls = cJSON_GetArrayItem(e, 1);
		if (k || !cJSON_IsString(cls))
			continue;
		char *dir = xasprintf("%s/%s", pm->dir, e->string);
		char *cfg_path = xasprintf("%s/config.json", dir);
		cJSON *cfg = NULL;
		struct lq_error *p;
		if (!is_dir(dir) || diffusers_load_json(cfg_path, &cfg, &err) != LQ_OK) {
			p = pf_list_add(&pm->problems, LQ_FAILED, "LQ-MDL-003",
			    "model_index.json lists %s (%s) but %s is missing",
			    e->string, cls->valuestring,
			    is_dir(dir) ? rel(pm, cfg_path) : rel(pm, dir));
			snprintf(p->field, sizeof(p->field), "model");
			error_set_hint(p, "restore the component's folder or "
			    "remove its entry from model_index.json");
			goto next;
		}
		if (strcmp(cls->valuestring, "LTXLatentUpsamplerModel") == 0) {
			int64_t in = json_get_int(cfg, "in_channels", 128);
			int64_t mid = json_get_int(cfg, "mid_channels", 512);
			int64_t dims = json_get_int(cfg, "dims", 3);
			int lat = pm->dm ? pm->dm->vae_config.latent_channels : 0;
			if (lat && in != lat) {
				p = pf_list_add(&pm->problems, LQ_FAILED,
				    "LQ-MDL-010", "%s: in_channels %lld in its "
				    "config.json, but the VAE's latent_channels is %d",
				    e->string, (long long)in, lat);
				snprintf(p->field, sizeof(p->field), "model");
				error_set_hint(p, "use the upsampler trained "
				    "for this VAE (in_channels %d)", lat);
			}
			struct st_set *s = open_weights(pm, "model", e->string,
			    dir, NULL);
			if (s == NULL)
				goto next;
			static const char *const convs[] = {
			    "initial_conv.weight", "final_conv.weight" };
			for (int c = 0; c < 2; c++) {
				const struct st_tensor *t = st_set_find(s, convs[c]);
				int64_t want0 = c ? in : mid, want1 = c ? mid : in;
				if (t == NULL) {
					p = pf_list_add(&pm->problems,
					    LQ_FAILED, "LQ-MDL-010",
					    "%s: tensor %s is missing", e->string,
					    convs[c]);
				} else if (t->ndim != (int)dims + 2 ||
				    t->shape[0] != want0 || t->shape[1] != want1) {
					p = pf_list_add(&pm->problems,
					    LQ_FAILED, "LQ-MDL-010",
					    "%s: %s is [%lld, %lld, ...] but its "
					    "config (in_channels %lld, mid_channels "
					    "%lld, dims %lld) implies [%lld, %lld, ...]",
					    e->string, convs[c],
					    (long long)t->shape[0],
					    (long long)t->shape[1], (long long)in,
					    (long long)mid, (long long)dims,
					    (long long)want0, (long long)want1);
				} else {
					continue;
				}
				snprintf(p->field, sizeof(p->field), "model");
				error_set_hint(p, "the config does not describe "
				    "these weights: use the config.json saved with them");
			}
			st_set_close(s);
		}
	next:
		cJSON_Delete(cfg);
		free(cfg_path);
		free(dir);
	}
	cJSON_Delete(index);
	free(index_path);
}

/* A problem of the model from a diffusers_* error: a missing file or
 * component is LQ-MDL-003, a bad config LQ-MDL-002. */
static void
model_problem(struct pf_model *pm, const struct lq_error *err,
    const char *key)
{
	enum lq_code why = error_code(err);
	int missing = why == LQ_CODE_MODEL_001 || why == LQ_CODE_MODEL_005 ||
	    why == LQ_CODE_MODEL_007;
	struct lq_error *e = pf_list_add(&pm->problems, LQ_FAILED, missing ?
	    "LQ-MDL-003" : "LQ-MDL-002", "%s%s%s: %s (%s)", rel(pm,
	    err->file[0] ? err->file : pm->dir), err->field[0] ? ": " : "",
	    err->field, err->message, err->code);
	snprintf(e->field, sizeof(e->field), "%s", key);
	if (err->hint[0])
		error_set_hint(e, "%s", err->hint);
	else if (missing)
		error_set_hint(e, "the folder is incomplete: download the "
		    "missing component again");
}

/*
 * An LTX2Pipeline folder: its components (diffusers_open_ltx2), the
 * transformer's and the VAE's configs, the scheduler's, and that they
 * agree (the VAE's latent channels are the transformer's in_channels; the
 * audio VAE's latent channels x mel bins / 4 its audio_in_channels; the
 * connectors' caption_channels its caption_channels).
 */
static void
inspect_ltx2(struct pf_model *pm, const struct diffusers_overrides *ov)
{
	struct lq_error err;
	error_clear(&err);
	if (diffusers_open_ltx2(pm->dir, ov, &pm->l2, &err) != LQ_OK) {
		model_problem(pm, &err, "model");
		return;
	}
	cJSON *j = NULL;
	enum lq_status s = diffusers_load_json(pm->l2->transformer.config_path,
	    &j, &err);
	if (s == LQ_OK)
		s = diffusers_parse_ltx2_transformer(j,
		    pm->l2->transformer.config_path, &pm->l2_t, &err);
	cJSON_Delete(j);
	j = NULL;
	if (s == LQ_OK && (s = diffusers_load_json(pm->l2->vae.config_path, &j,
	    &err)) == LQ_OK)
		s = diffusers_parse_vae(j, pm->l2->vae.config_path, &pm->l2_v,
		    &err);
	cJSON_Delete(j);
	if (s == LQ_OK && scheduler_config_load(pm->l2->scheduler.config_path,
	    &pm->sched, &err) == LQ_OK)
		pm->sched_ok = 1;
	else if (s == LQ_OK)
		s = LQ_FAILED;
	if (s != LQ_OK) {
		model_problem(pm, &err, "model");
		diffusers_ltx2_free(pm->l2);
		pm->l2 = NULL;
		return;
	}
	const struct ltx2_transformer_config *tc = &pm->l2_t;
	const struct ltx2_audio_vae_config *ac = &pm->l2->audio_vae_config;
	int amel = (ac->mel_bins > 0 ? ac->mel_bins : 64) / 4;
	const char *why = NULL;
	char msg[256];
	if (pm->l2_v.latent_channels != tc->in_channels) {
		snprintf(msg, sizeof(msg), "the VAE has %d latent channels but "
		    "the transformer takes %d", pm->l2_v.latent_channels,
		    tc->in_channels);
		why = msg;
	} else if (ac->latent_channels * amel != tc->audio_in_channels) {
		snprintf(msg, sizeof(msg), "the audio VAE's latents pack to %d "
		    "features (latent_channels %d x mel_bins / 4 = %d) but the "
		    "transformer's audio_in_channels is %d",
		    ac->latent_channels * amel, ac->latent_channels, amel,
		    tc->audio_in_channels);
		why = msg;
	} else if (pm->l2->connectors_config.caption_channels !=
	    tc->caption_channels) {
		snprintf(msg, sizeof(msg), "the connectors give %d caption "
		    "channels but the transformer takes %d",
		    pm->l2->connectors_config.caption_channels,
		    tc->caption_channels);
		why = msg;
	}
	if (why != NULL) {
		struct lq_error *e = pf_list_add(&pm->problems, LQ_FAILED,
		    "LQ-MDL-008", "%s", why);
		snprintf(e->field, sizeof(e->field), "model");
		error_set_hint(e, "use the components of one LTX-2 release "
		    "together");
	}
	/* each component's weights against its config's table (seed bug
	 * 1b: one release's config with another's weights) */
	struct diffusers_ltx2_model *m = pm->l2;
	struct tensor_table t = {0};
	expected_ltx2_transformer(tc, &t);
	pm->l2_w[PF_L2_TRANSFORMER] = open_weights(pm, ov->transformer ?
	    "transformer" : "model", "transformer", m->transformer.dir, &t);
	expected_ltxv_vae(&pm->l2_v, &t);
	pm->l2_w[PF_L2_VAE] = open_weights(pm, ov->vae ? "vae" : "model", "vae",
	    m->vae.dir, &t);
	expected_ltx2_audio_vae(ac, &t);
	pm->l2_w[PF_L2_AUDIO_VAE] = open_weights(pm, "model", "audio_vae",
	    m->audio_vae.dir, &t);
	if (m->vocoder_bwe)
		expected_ltx2_vocoder_bwe(&m->vocoder_bwe_config, &t);
	else
		expected_ltx2_vocoder(&m->vocoder_config, &t);
	pm->l2_w[PF_L2_VOCODER] = open_weights(pm, "model", "vocoder",
	    m->vocoder.dir, &t);
	expected_ltx2_connectors(&m->connectors_config, &t);
	pm->l2_w[PF_L2_CONNECTORS] = open_weights(pm, "model", "connectors",
	    m->connectors.dir, &t);
	tensor_table_free(&t);
}

/*
 * A WanPipeline folder: its components (diffusers_open_wan), the
 * transformer's and the VAE's configs (their parsers), each component's
 * weights against its tensor table (expected_wan_*: LQ-MDL-005..007),
 * the UniPC scheduler's config (the sampler's parser, its codes), and
 * that they agree: the VAE's z_dim is the transformer's in_channels and
 * out_channels, and it has one latents_mean / latents_std entry per
 * latent channel (LQ-MDL-008).
 */
static void
inspect_wan(struct pf_model *pm, const struct diffusers_overrides *ov)
{
	struct lq_error err;
	error_clear(&err);
	if (diffusers_open_wan(pm->dir, ov, &pm->wan, &err) != LQ_OK) {
		model_problem(pm, &err, "model");
		return;
	}
	cJSON *j = NULL;
	enum lq_status s = diffusers_load_json(pm->wan->transformer.config_path,
	    &j, &err);
	if (s == LQ_OK)
		s = diffusers_parse_wan_transformer(j,
		    pm->wan->transformer.config_path, &pm->wan_t, &err);
	cJSON_Delete(j);
	j = NULL;
	if (s == LQ_OK && (s = diffusers_load_json(pm->wan->vae.config_path,
	    &j, &err)) == LQ_OK)
		s = diffusers_parse_wan_vae(j, pm->wan->vae.config_path,
		    &pm->wan_v, &err);
	cJSON_Delete(j);
	if (s != LQ_OK) {
		model_problem(pm, &err, "model");
		diffusers_wan_free(pm->wan);
		pm->wan = NULL;
		return;
	}
	struct tensor_table t = {0};
	expected_wan_transformer(&pm->wan_t, &t);
	pm->w_transformer = open_weights(pm, ov->transformer ? "transformer"
	    : "model", "transformer", pm->wan->transformer.dir, &t);
	expected_wan_vae(&pm->wan_v, &t);
	pm->w_vae = open_weights(pm, ov->vae ? "vae" : "model", "vae",
	    pm->wan->vae.dir, &t);
	tensor_table_free(&t);

	error_clear(&err);
	if (unipc_config_load(pm->wan->scheduler.config_path, &pm->wan_sched,
	    &err) == LQ_OK) {
		pm->wan_sched_ok = 1;
	} else {
		struct lq_error *e = pf_list_add(&pm->problems, LQ_FAILED,
		    err.code, "%s: %s%s%s", rel(pm, err.file[0] ? err.file :
		    pm->wan->scheduler.config_path), err.field[0] ? err.field :
		    "", err.field[0] ? ": " : "", err.message);
		snprintf(e->field, sizeof(e->field), "%s",
		    ov->scheduler ? "scheduler" : "model");
		error_set_hint(e, "%s", err.hint[0] ? err.hint : "use the "
		    "scheduler config Wan 2.1 ships (UniPCMultistepScheduler, "
		    "flow sigmas)");
	}

	const struct wan_transformer_config *tc = &pm->wan_t;
	const struct wan_vae_config *vc = &pm->wan_v;
	char msg[256] = "";
	if (vc->z_dim != tc->in_channels || vc->z_dim != tc->out_channels)
		snprintf(msg, sizeof(msg), "the VAE has %d latent channels "
		    "(z_dim) but the transformer takes %d in and gives %d out",
		    vc->z_dim, tc->in_channels, tc->out_channels);
	else if (vc->n_latents != vc->z_dim)
		snprintf(msg, sizeof(msg), "the VAE's latents_mean / "
		    "latents_std have %d entries for its %d latent channels",
		    vc->n_latents, vc->z_dim);
	if (msg[0] != '\0') {
		struct lq_error *e = pf_list_add(&pm->problems, LQ_FAILED,
		    "LQ-MDL-008", "%s", msg);
		snprintf(e->field, sizeof(e->field), "%s", ov->vae ? "vae" :
		    ov->transformer ? "transformer" : "model");
		error_set_hint(e, "use the transformer and VAE of one Wan "
		    "release together (Wan 2.1: z_dim 16)");
	}
}

static void
inspect(struct pf_model *pm, const struct diffusers_overrides *ov)
{
	struct lq_error err;
	error_clear(&err);
	if (!is_dir(pm->dir)) {
		struct lq_error *e = pf_list_add(&pm->problems, LQ_FAILED,
		    "LQ-MDL-001", "model folder %s does not exist", pm->dir);
		snprintf(e->field, sizeof(e->field), "model");
		error_set_hint(e, "give a diffusers folder (with "
		    "model_index.json) or a name from `latentq model list`");
		return;
	}
	char cls[64] = "";
	if (diffusers_pipeline_class(pm->dir, cls, sizeof(cls), &err) ==
	    LQ_OK && strcmp(cls, "LTX2Pipeline") == 0) {
		inspect_ltx2(pm, ov);
		return;
	}
	if (strcmp(cls, DIFFUSERS_WAN_PIPELINE) == 0) {
		inspect_wan(pm, ov);
		return;
	}
	error_clear(&err);
	if (diffusers_open(pm->dir, ov, &pm->dm, &err) != LQ_OK) {
		/* the key at fault: an override's when its folder failed */
		const char *key = "model";
		static const char *const comps[] = { "transformer", "vae",
		    "text_encoder", "scheduler" };
		for (size_t i = 0; i < LQ_ARRAY_LEN(comps); i++) {
			const char *o = i == 0 ? ov->transformer : i == 1 ? ov->vae
			    : i == 2 ? ov->text_encoder : ov->scheduler;
			if (o && strncmp(err.file, o, strlen(o)) == 0)
				key = comps[i];
		}
		model_problem(pm, &err, key);
		pm->dm = NULL;
		check_extras(pm);
		return;
	}
	struct diffusers_model *dm = pm->dm;
	struct tensor_table t = {0};
	expected_ltxv_transformer(&dm->transformer_config, &t);
	pm->w_transformer = open_weights(pm, ov->transformer ? "transformer"
	    : "model", "transformer", dm->transformer.dir, &t);
	expected_ltxv_vae(&dm->vae_config, &t);
	pm->w_vae = open_weights(pm, ov->vae ? "vae" : "model", "vae",
	    dm->vae.dir, &t);
	if (dm->text_encoder.present) {
		expected_t5_encoder(&dm->text_encoder_config, &t);
		pm->w_text = open_weights(pm, ov->text_encoder ? "text_encoder"
		    : "model", "text_encoder", dm->text_encoder.dir, &t);
	}
	tensor_table_free(&t);

	/* Components agree (LTXPipeline feeds VAE latents to the transformer
	 * and T5 hidden states to its caption_projection). */
	const struct ltxv_transformer_config *tc = &dm->transformer_config;
	int lat = dm->vae_config.latent_channels;
	int tin = tc->in_channels / (tc->patch_size * tc->patch_size * tc->patch_size_t);
	int tout = tc->out_channels / (tc->patch_size * tc->patch_size * tc->patch_size_t);
	if (lat != tin || lat != tout) {
		struct lq_error *e = pf_list_add(&pm->problems, LQ_FAILED,
		    "LQ-MDL-008", "the VAE has %d latent channels but the "
		    "transformer takes %d in and gives %d out (in_channels %d, "
		    "out_channels %d, patch %dx%dx%d)", lat, tin, tout,
		    tc->in_channels, tc->out_channels, tc->patch_size_t,
		    tc->patch_size, tc->patch_size);
		snprintf(e->field, sizeof(e->field), "%s",
		    ov->vae ? "vae" : ov->transformer ? "transformer" : "model");
		error_set_hint(e, "pair the transformer with the VAE it was "
		    "trained on (latent_channels %d)", tin);
	}
	if (dm->text_encoder.present &&
	    dm->text_encoder_config.d_model != tc->caption_channels) {
		struct lq_error *e = pf_list_add(&pm->problems, LQ_FAILED,
		    "LQ-MDL-009", "the text encoder's d_model is %d but the "
		    "transformer's caption_channels is %d",
		    dm->text_encoder_config.d_model, tc->caption_channels);
		snprintf(e->field, sizeof(e->field), "%s",
		    ov->text_encoder ? "text_encoder" : "model");
		error_set_hint(e, "use the text encoder the transformer was "
		    "trained with (d_model %d)", tc->caption_channels);
	}
	read_scheduler(pm, ov);
	check_extras(pm);
}

struct pf_model *
pf_model_get(struct pf_ctx *c, const char *dir,
    const struct diffusers_overrides *ov)
{
	char *key = xasprintf("%s\n%s\n%s\n%s\n%s", dir,
	    ov->transformer ? ov->transformer : "", ov->vae ? ov->vae : "",
	    ov->text_encoder ? ov->text_encoder : "",
	    ov->scheduler ? ov->scheduler : "");
	for (size_t i = 0; i < c->n_models; i++)
		if (strcmp(c->models[i]->key, key) == 0) {
			free(key);
			return c->models[i];
		}
	struct pf_model *pm = xcalloc(1, sizeof(*pm));
	pm->key = key;
	pm->dir = xstrdup(dir);
	error_clear(&pm->tok_err);
	error_clear(&pm->digest_err);
	inspect(pm, ov);
	if (c->n_models == c->cap_models) {
		c->cap_models = c->cap_models ? 2 * c->cap_models : 4;
		c->models = xrealloc(c->models, c->cap_models * sizeof(*c->models));
	}
	c->models[c->n_models++] = pm;
	return pm;
}

void
pf_model_free(struct pf_model *pm)
{
	if (pm == NULL)
		return;
	st_set_close(pm->w_transformer);
	st_set_close(pm->w_vae);
	st_set_close(pm->w_text);
	for (size_t i = 0; i < LQ_ARRAY_LEN(pm->l2_w); i++)
		st_set_close(pm->l2_w[i]);
	diffusers_free(pm->dm);
	diffusers_ltx2_free(pm->l2);
	diffusers_wan_free(pm->wan);
	text_tokenizer_free(pm->tok);
	tensor_table_free(&pm->table);
	pf_list_free(&pm->problems);
	free(pm->dir);
	free(pm->key);
	free(pm);
}

struct text_tokenizer *
pf_model_tokenizer(struct pf_model *pm)
{
	if (pm->tok_tried)
		return pm->tok;
	pm->tok_tried = 1;
	if (pm->dm == NULL || !pm->dm->tokenizer.present) {
		error_set(&pm->tok_err, LQ_FAILED, "LQ-PROMPT-003",
		    "the model has no tokenizer");
		return NULL;
	}
	if (text_tokenizer_load(pm->dm->tokenizer.dir, &pm->tok,
	    &pm->tok_err) != LQ_OK)
		pm->tok = NULL;
	return pm->tok;
}

/*
 * The model identity (model/ref.h), as `latentq model list` shows it, the
 * job pins it and the MP4 carries it.  Computed once per folder and
 * override set, and only when a job pins one.
 */
const char *
pf_model_digest(struct pf_model *pm, const struct model_hash_cache *cache,
    struct lq_error *err)
{
	if (!pm->digest_tried) {
		pm->digest_tried = 1;
		pm->digest[0] = '\0';
		if (pm->dm != NULL && model_ref_identity(pm->dm, cache, pm->digest,
		    &pm->digest_err) != LQ_OK)
			pm->digest[0] = '\0';
		if (pm->l2 != NULL && model_ref_identity_ltx2(pm->l2, cache,
		    pm->digest, &pm->digest_err) != LQ_OK)
			pm->digest[0] = '\0';
		if (pm->wan != NULL && model_ref_identity_wan(pm->wan, cache,
		    pm->digest, &pm->digest_err) != LQ_OK)
			pm->digest[0] = '\0';
	}
	if (pm->digest[0] == '\0') {
		if (err)
			*err = pm->digest_err;
		return NULL;
	}
	return pm->digest;
}

static struct pf_file *
file_find(struct pf_ctx *c, const char *key)
{
	for (size_t i = 0; i < c->n_files; i++)
		if (strcmp(c->files[i]->key, key) == 0)
			return c->files[i];
	return NULL;
}

static struct pf_file *
file_new(struct pf_ctx *c, char *key)
{
	struct pf_file *f = xcalloc(1, sizeof(*f));
	f->key = key;
	if (c->n_files == c->cap_files) {
		c->cap_files = c->cap_files ? 2 * c->cap_files : 4;
		c->files = xrealloc(c->files, c->cap_files * sizeof(*c->files));
	}
	c->files[c->n_files++] = f;
	return f;
}

void
pf_file_free(struct pf_file *f)
{
	if (f == NULL)
		return;
	pf_list_free(&f->problems);
	free(f->key);
	free(f);
}

/*
 * A LoRA file, opened and paired by model/lora.h (the loader's own rules,
 * so preflight and load agree) and checked against the transformer's
 * expected table without fusing.  lora_open reports the file's first problem
 * with the count of the others; lora_check lists every module problem.
 */
struct pf_file *
pf_lora_get(struct pf_ctx *c, const char *path, struct pf_model *pm)
{
	char *key = xasprintf("lora\n%s\n%s", path, pm ? pm->key : "");
	struct pf_file *f = file_find(c, key);
	if (f != NULL) {
		free(key);
		return f;
	}
	f = file_new(c, key);
	struct lora *l = NULL;
	struct lq_error err;
	error_clear(&err);
	if (lora_open(path, &l, &err) != LQ_OK) {
		struct lq_error *e = pf_list_add(&f->problems, LQ_FAILED,
		    err.code[0] ? err.code : "LQ-LORA-001", "%s: %s%s%s", path,
		    err.field[0] ? err.field : "", err.field[0] ? ": " : "",
		    err.message);
		error_set_hint(e, "%s", err.hint[0] ? err.hint
		    : error_code(e) == LQ_CODE_LORA_001
		    ? "check the path, or download the LoRA again"
		    : "a LoRA for LTX-Video pairs <module>.lora_A.weight [rank, in] "
		    "with <module>.lora_B.weight [out, rank]");
		return f;
	}
	if (pm == NULL || pm->dm == NULL) {
		lora_free(l);
		return f;
	}
	if (!pm->have_table) {
		expected_ltxv_transformer(&pm->dm->transformer_config, &pm->table);
		pm->have_table = 1;
	}
	char **probs = NULL;
	size_t n = 0;
	error_clear(&err);
	lora_check(l, &pm->table, &probs, &n, &err);
	for (size_t i = 0; i < n; i++) {
		int nomod = strstr(probs[i], "matches no weight") != NULL;
		struct lq_error *e = pf_list_add(&f->problems, LQ_FAILED,
		    nomod ? "LQ-LORA-005" : "LQ-LORA-006", "%s: %s", path,
		    probs[i]);
		error_set_hint(e, "%s", nomod ? "a LoRA for another model, or "
		    "keys named another way; modules look like "
		    "transformer_blocks.0.attn1.to_q"
		    : "a LoRA trained for another model size");
		free(probs[i]);
	}
	free(probs);
	lora_free(l);
	return f;
}

/*
 * prompt_embeds file (LTXPipeline's prompt_embeds / prompt_attention_mask /
 * negative_prompt_embeds / negative_prompt_attention_mask): embeddings
 * [B, T, caption_channels] (or [T, C]), masks [B, T].
 */
struct pf_file *
pf_embeds_get(struct pf_ctx *c, const char *path, int caption_channels)
{
	char *key = xasprintf("embeds\n%s\n%d", path, caption_channels);
	struct pf_file *f = file_find(c, key);
	if (f != NULL) {
		free(key);
		return f;
	}
	f = file_new(c, key);
	struct st_file *sf = NULL;
	struct lq_error err;
	error_clear(&err);
	if (st_file_open(path, &sf, &err) != LQ_OK) {
		struct lq_error *e = pf_list_add(&f->problems, LQ_FAILED,
		    "LQ-PROMPT-004", "%s: %s (%s)", path, err.message, err.code);
		error_set_hint(e, "write the embeddings with `prompt_embeds` "
		    "[1, T, C] and `prompt_attention_mask` [1, T]");
		return f;
	}
	static const char *const pairs[2][2] = {
		{ "prompt_embeds", "prompt_attention_mask" },
		{ "negative_prompt_embeds", "negative_prompt_attention_mask" },
	};
	for (int k = 0; k < 2; k++) {
		const struct st_tensor *emb = st_file_find(sf, pairs[k][0]);
		const struct st_tensor *mask = st_file_find(sf, pairs[k][1]);
		struct lq_error *e;
		if (emb == NULL) {
			if (k == 0) {
				e = pf_list_add(&f->problems, LQ_FAILED,
				    "LQ-PROMPT-005", "%s has no tensor "
				    "prompt_embeds", path);
				error_set_hint(e, "name the embeddings "
				    "prompt_embeds, shaped [1, T, %d]",
				    caption_channels);
			}
			continue;
		}
		if (k == 1)
			f->has_negative = 1;
		int64_t B = emb->ndim == 3 ? emb->shape[0] : 1;
		int64_t T = emb->ndim == 3 ? emb->shape[1]
		    : emb->ndim == 2 ? emb->shape[0] : 0;
		int64_t C = emb->ndim >= 2 ? emb->shape[emb->ndim - 1] : 0;
		if ((emb->ndim != 2 && emb->ndim != 3) ||
		    (caption_channels > 0 && C != caption_channels) || T < 1) {
			e = pf_list_add(&f->problems, LQ_FAILED, "LQ-PROMPT-005",
			    "%s: %s has %d dimension%s, last %lld, but the "
			    "transformer needs [B, T, caption_channels %d]",
			    path, pairs[k][0], emb->ndim,
			    emb->ndim == 1 ? "" : "s", (long long)C,
			    caption_channels);
			error_set_hint(e, "encode the prompt with the text "
			    "encoder this transformer was trained with");
			continue;
		}
		if (k == 0) {
			f->embeds_B = B;
			f->embeds_T = T;
		}
		if (mask != NULL &&
		    !((mask->ndim == 2 && mask->shape[0] == B && mask->shape[1] == T) ||
		    (mask->ndim == 1 && mask->shape[0] == T))) {
			e = pf_list_add(&f->problems, LQ_FAILED, "LQ-PROMPT-005",
			    "%s: %s is not [%lld, %lld] like %s", path,
			    pairs[k][1], (long long)B, (long long)T,
			    pairs[k][0]);
			error_set_hint(e, "one mask entry per embedding token");
		}
	}
	st_file_close(sf);
	return f;
}
