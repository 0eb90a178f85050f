/*
 * ref.c — model references and the model identity (see ref.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/digest.h"
#include "core/util.h"
#include "model/hash.h"
#include "model/ref.h"

int
model_ref_is_url(const char *v)
{
	const char *h = strncmp(v, "http://", 7) == 0 ? v + 7 :
	    strncmp(v, "https://", 8) == 0 ? v + 8 : NULL;
	return h != NULL && *h != '\0' && *h != '/';
}

int
model_ref_is_path(const char *model)
{
	if (model_ref_is_url(model))
		return 0;
	return strchr(model, '/') != NULL || model[0] == '.' || model[0] == '~';
}

char *
model_ref_cache_dir(const char *url)
{
	/* one URL, one folder: trailing slashes do not make another */
	size_t n = strlen(url);
	while (n > 0 && url[n - 1] == '/')
		n--;
	struct digest_state ds;
	char hex[DIGEST_HEX_SIZE];
	digest_begin(&ds);
	digest_update(&ds, url, n);
	digest_end(&ds, hex);
	const char *xdg = getenv("XDG_CACHE_HOME");
	if (xdg != NULL && xdg[0] == '/')
		return xasprintf("%s/latentq/models/%s", xdg, hex);
	const char *home = getenv("HOME");
	return xasprintf("%s/.cache/latentq/models/%s", home != NULL ? home :
	    ".", hex);
}

int
model_ref_cache_complete(const char *url)
{
	char *dir = model_ref_cache_dir(url);
	char *mark = xasprintf("%s/%s", dir, MODEL_REF_CACHE_COMPLETE);
	struct stat sb;
	int ok = stat(mark, &sb) == 0 && S_ISREG(sb.st_mode);
	free(mark);
	free(dir);
	return ok;
}

/* A folder value: a URL's cache folder, else the path against base_dir. */
static enum lq_status
in_base(const char *base_dir, const char *p, const char *field, char **out,
    struct lq_error *err)
{
	*out = NULL;
	if (p == NULL)
		return LQ_OK;
	if (model_ref_is_url(p)) {
		if (!model_ref_cache_complete(p)) {
			char *dir = model_ref_cache_dir(p);
			error_set(err, LQ_FAILED, "LQ-MODEL-041", "%s is a URL "
			    "that has not been downloaded (no complete copy in "
			    "%s)", p, dir);
			free(dir);
			error_set_field(err, "%s", field);
			error_set_hint(err, "pass --allow-download, or fetch it "
			    "with `latentq model pull`");
			return LQ_FAILED;
		}
		*out = model_ref_cache_dir(p);
	} else if (p[0] == '/' || base_dir == NULL || strcmp(base_dir, ".") ==
	    0) {
		*out = xstrdup(p);
	} else {
		*out = xasprintf("%s/%s", base_dir, p);
	}
	return LQ_OK;
}

void
model_ref_clear(struct model_ref *ref)
{
	free(ref->root);
	free(ref->name);
	free(ref->transformer);
	free(ref->vae);
	free(ref->text_encoder);
	free(ref->scheduler);
	memset(ref, 0, sizeof(*ref));
}

enum lq_status
model_ref_resolve(const char *model, const char *transformer, const char *vae,
    const char *text_encoder, const char *scheduler, const char *base_dir,
    const struct model_ref_resolver *res, struct model_ref *out,
    struct lq_error *err)
{
	memset(out, 0, sizeof(*out));
	if (model == NULL || model[0] == '\0') {
		error_set(err, LQ_FAILED, "LQ-MODEL-040", "no model given");
		error_set_field(err, "model");
		return LQ_FAILED;
	}
	if (model_ref_is_path(model) || model_ref_is_url(model)) {
		if (in_base(base_dir, model, "model", &out->root, err) != LQ_OK)
			return LQ_FAILED;
	} else {
		char *dir = res && res->resolve ? res->resolve(res->ctx, model)
		    : NULL;
		if (dir == NULL) {
			error_set(err, LQ_FAILED, "LQ-MODEL-040", "no model named "
			    "%s in the queue database", model);
			error_set_field(err, "model");
			error_set_hint(err, "add it with `latentq model add DIR "
			    "--name %s`, or give the folder's path (./%s)", model,
			    model);
			return LQ_FAILED;
		}
		out->root = dir;
		out->name = xstrdup(model);
	}
	if (in_base(base_dir, transformer, "transformer", &out->transformer,
	    err) != LQ_OK ||
	    in_base(base_dir, vae, "vae", &out->vae, err) != LQ_OK ||
	    in_base(base_dir, text_encoder, "text_encoder", &out->text_encoder,
	    err) != LQ_OK ||
	    in_base(base_dir, scheduler, "scheduler", &out->scheduler, err) !=
	    LQ_OK) {
		model_ref_clear(out);
		return LQ_FAILED;
	}
	return LQ_OK;
}

struct diffusers_overrides
model_ref_overrides(const struct model_ref *ref)
{
	return (struct diffusers_overrides){ .transformer = ref->transformer,
	    .vae = ref->vae, .text_encoder = ref->text_encoder,
	    .scheduler = ref->scheduler };
}

enum lq_status
model_ref_open(const struct model_ref *ref, struct diffusers_model **out,
    struct lq_error *err)
{
	struct diffusers_overrides ov = model_ref_overrides(ref);
	return diffusers_open(ref->root, &ov, out, err);
}

static int
ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n > k && strcmp(s + n - k, suffix) == 0;
}

int
model_ref_reads_file(const char *relpath)
{
	/* configs and shard indexes, weights, SentencePiece models */
	return strchr(relpath, '/') == NULL && (ends_with(relpath, ".json") ||
	    ends_with(relpath, ".safetensors") || ends_with(relpath, ".model"));
}

/* One named component of an identity. */
struct part {
	const char *name;
	const struct diffusers_component *c;
};

/* The identity over `parts` in order (see ref.h). */
static enum lq_status
identity_of(const struct part *parts, size_t n,
    const struct model_hash_cache *cache, char out[DIGEST_HEX_SIZE],
    struct lq_error *err)
{
	struct digest_state st;
	digest_begin(&st);
	for (size_t i = 0; i < n; i++) {
		if (!parts[i].c->present || parts[i].c->dir == NULL)
			continue;
		struct model_digest d;
		if (model_hash_files(parts[i].c->dir, model_ref_reads_file, cache,
		    0, &d, err) != LQ_OK)
			return LQ_FAILED;
		char line[160];
		int n = snprintf(line, sizeof(line), "%s\t%s\n", parts[i].name,
		    d.digest);
		digest_update(&st, line, (size_t)n);
		model_digest_clear(&d);
	}
	digest_end(&st, out);
	return LQ_OK;
}

enum lq_status
model_ref_identity(const struct diffusers_model *dm,
    const struct model_hash_cache *cache, char out[DIGEST_HEX_SIZE],
    struct lq_error *err)
{
	const struct part parts[] = {
		{"transformer", &dm->transformer}, {"vae", &dm->vae},
		{"text_encoder", &dm->text_encoder},
		{"tokenizer", &dm->tokenizer}, {"scheduler", &dm->scheduler},
	};
	return identity_of(parts, LQ_ARRAY_LEN(parts), cache, out, err);
}

enum lq_status
model_ref_identity_ltx2(const struct diffusers_ltx2_model *dm,
    const struct model_hash_cache *cache, char out[DIGEST_HEX_SIZE],
    struct lq_error *err)
{
	const struct part parts[] = {
		{"transformer", &dm->transformer}, {"vae", &dm->vae},
		{"text_encoder", &dm->text_encoder},
		{"tokenizer", &dm->tokenizer}, {"scheduler", &dm->scheduler},
		{"audio_vae", &dm->audio_vae}, {"vocoder", &dm->vocoder},
		{"connectors", &dm->connectors},
	};
	return identity_of(parts, LQ_ARRAY_LEN(parts), cache, out, err);
}

/* 1 when the reference's model_index.json names pipeline class `want`. */
static int
is_pipeline(const struct model_ref *ref, const char *want)
{
	char cls[64] = "";
	struct lq_error e;
	error_clear(&e);
	return diffusers_pipeline_class(ref->root, cls, sizeof(cls), &e) ==
	    LQ_OK && strcmp(cls, want) == 0;
}

int
model_ref_is_ltx2(const struct model_ref *ref)
{
	return is_pipeline(ref, "LTX2Pipeline");
}

int
model_ref_is_wan(const struct model_ref *ref)
{
	return is_pipeline(ref, DIFFUSERS_WAN_PIPELINE);
}

const char *
model_ref_family(const struct model_ref *ref)
{
	if (model_ref_is_wan(ref))
		return "wan";
	return model_ref_is_ltx2(ref) ? "ltx2" : "ltxv";
}

enum lq_status
model_ref_identity_wan(const struct diffusers_wan_model *dm,
    const struct model_hash_cache *cache, char out[DIGEST_HEX_SIZE],
    struct lq_error *err)
{
	const struct part parts[] = {
		{"transformer", &dm->transformer}, {"vae", &dm->vae},
		{"text_encoder", &dm->text_encoder},
		{"tokenizer", &dm->tokenizer}, {"scheduler", &dm->scheduler},
	};
	return identity_of(parts, LQ_ARRAY_LEN(parts), cache, out, err);
}

enum lq_status
model_ref_open_wan(const struct model_ref *ref,
    struct diffusers_wan_model **out, struct lq_error *err)
{
	struct diffusers_overrides ov = model_ref_overrides(ref);
	return diffusers_open_wan(ref->root, &ov, out, err);
}

enum lq_status
model_ref_open_ltx2(const struct model_ref *ref,
    struct diffusers_ltx2_model **out, struct lq_error *err)
{
	struct diffusers_overrides ov = model_ref_overrides(ref);
	return diffusers_open_ltx2(ref->root, &ov, out, err);
}

enum lq_status
model_ref_digest(const struct model_ref *ref,
    const struct model_hash_cache *cache, char out[DIGEST_HEX_SIZE],
    struct lq_error *err)
{
	if (model_ref_is_wan(ref)) {
		struct diffusers_wan_model *w = NULL;
		enum lq_status s = model_ref_open_wan(ref, &w, err);
		if (s == LQ_OK)
			s = model_ref_identity_wan(w, cache, out, err);
		diffusers_wan_free(w);
		return s;
	}
	if (model_ref_is_ltx2(ref)) {
		struct diffusers_ltx2_model *l2 = NULL;
		enum lq_status s = model_ref_open_ltx2(ref, &l2, err);
		if (s == LQ_OK)
			s = model_ref_identity_ltx2(l2, cache, out, err);
		diffusers_ltx2_free(l2);
		return s;
	}
	struct diffusers_model *dm = NULL;
	enum lq_status s = model_ref_open(ref, &dm, err);
	if (s == LQ_OK)
		s = model_ref_identity(dm, cache, out, err);
	diffusers_free(dm);
	return s;
}
