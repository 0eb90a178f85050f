/*
 * ref.h — a job's model reference: the `model:` value (a folder or a name
 * given to `latentq model add`) with its component overrides, resolved to
 * folders, opened, and the ONE model identity.
 *
 * Render, submit and preflight all resolve a model here, with one rule for
 * "is this a path" (model_ref_is_path, also the manifest loader's), and all
 * of `model add`/`model list`, the job's pinned digest, the checkpoints and
 * the MP4's latentq_model_digest metadata carry the identity computed by
 * model_ref_identity, so a digest copied from any of them is accepted by
 * `model_digest:`.
 *
 * The identity hashes only what a render reads: in each component folder
 * (transformer, vae, text_encoder, tokenizer, scheduler; and for LTX-2
 * audio_vae, vocoder, connectors after them) its top-level
 * *.json, *.safetensors and *.model files (configs, weights and shard
 * indexes, tokenizer files, the scheduler config).  READMEs, licences,
 * other weight formats and subfolders do not change it.
 *   identity = BLAKE2b-256 over "<component>\t<digest>\n" per present
 *   component in that order, <digest> = model_hash_files of the component
 *   folder restricted to those files (model/hash.h).
 *
 * Name resolution goes through a callback, so this module does not depend
 * on the store: callers wire it to store_find_model.
 *
 * Ownership: a struct model_ref owns its strings (model_ref_clear).
 */
#ifndef LQ_MODEL_REF_H
#define LQ_MODEL_REF_H

#include "core/digest.h"
#include "core/error.h"
#include "model/diffusers.h"

struct model_hash_cache;

/*
 * The one rule: a `model:` value is a URL when it starts with http:// or
 * https:// and names a host (model_ref_is_url); else a path when it
 * contains '/' or starts with '.' or '~'; otherwise a registered name.
 */
int model_ref_is_path(const char *model);

/*
 * A model folder given as a URL (`model:` or an override): the URL of a
 * diffusers-layout folder (Hugging Face style .../resolve/main; mirrors use
 * it), downloaded by net/layout.h into the folder model_ref_cache_dir names
 * and used from there.  The download ends by writing
 * MODEL_REF_CACHE_COMPLETE into that folder; a folder without it is never
 * read (a download in progress or interrupted).
 */
int model_ref_is_url(const char *v);
#define MODEL_REF_CACHE_COMPLETE ".latentq-complete"

/*
 * The cache folder of a model URL:
 * $XDG_CACHE_HOME/latentq/models/<BLAKE2b-256 hex of the URL, trailing
 * slashes dropped> ($HOME/.cache when XDG_CACHE_HOME is unset or not
 * absolute).  Caller-owned.
 */
char *model_ref_cache_dir(const char *url);

/* 1 when url's cache folder holds a complete download. */
int model_ref_cache_complete(const char *url);

/* Registered name → folder (caller frees), or NULL when unknown. */
struct model_ref_resolver {
	void *ctx;
	char *(*resolve)(void *ctx, const char *name);
};

struct model_ref {
	char *root;		/* the pipeline folder */
	char *name;		/* the registered name it came from; NULL: a path */
	char *transformer, *vae, *text_encoder, *scheduler;	/* overrides or NULL */
};

/*
 * Resolves `model` (a path, relative ones against base_dir, a URL to its
 * cache folder, or a name through `res`, which may be NULL: then every
 * name is unknown) and the override folders (paths or URLs, may be NULL;
 * relative against base_dir).
 * Errors: an unknown name, LQ_FAILED code LQ-MODEL-040 ("no model named
 * X"), field "model"; a URL with no complete download, LQ-MODEL-041 with
 * the key as field; *out is then cleared.  Nothing is downloaded here.
 */
enum lq_status model_ref_resolve(const char *model, const char *transformer,
    const char *vae, const char *text_encoder, const char *scheduler,
    const char *base_dir, const struct model_ref_resolver *res,
    struct model_ref *out, struct lq_error *err);

/* The overrides as diffusers_open takes them (borrowed from ref). */
struct diffusers_overrides model_ref_overrides(const struct model_ref *ref);

/* diffusers_open of the folder with the overrides (diffusers.h errors). */
enum lq_status model_ref_open(const struct model_ref *ref,
    struct diffusers_model **out, struct lq_error *err);

/*
 * The identity (see above) of an opened model; `cache` may be NULL.
 * Errors: a folder or file that cannot be read (LQ-MODEL-020).
 */
enum lq_status model_ref_identity(const struct diffusers_model *dm,
    const struct model_hash_cache *cache, char out[DIGEST_HEX_SIZE],
    struct lq_error *err);

/* The same for an LTX2Pipeline folder: its components in the order
 * transformer, vae, text_encoder, tokenizer, scheduler, audio_vae,
 * vocoder, connectors. */
enum lq_status model_ref_identity_ltx2(const struct diffusers_ltx2_model *dm,
    const struct model_hash_cache *cache, char out[DIGEST_HEX_SIZE],
    struct lq_error *err);

/* 1 when the reference's folder is an LTX2Pipeline (its model_index.json
 * says so); 0 otherwise, also when it cannot be read. */
int model_ref_is_ltx2(const struct model_ref *ref);

/* diffusers_open_ltx2 of the folder with the overrides. */
enum lq_status model_ref_open_ltx2(const struct model_ref *ref,
    struct diffusers_ltx2_model **out, struct lq_error *err);

/* The same for a WanPipeline folder: transformer, vae, text_encoder,
 * tokenizer, scheduler. */
enum lq_status model_ref_identity_wan(const struct diffusers_wan_model *dm,
    const struct model_hash_cache *cache, char out[DIGEST_HEX_SIZE],
    struct lq_error *err);

/* 1 when the reference's folder is a WanPipeline; 0 otherwise, also when
 * it cannot be read. */
int model_ref_is_wan(const struct model_ref *ref);

/* The model family of the reference's folder as latentq records it
 * (`latentq model add`, `model list`): "wan" for a WanPipeline, "ltx2"
 * for an LTX2Pipeline, else "ltxv". */
const char *model_ref_family(const struct model_ref *ref);

/* diffusers_open_wan of the folder with the overrides. */
enum lq_status model_ref_open_wan(const struct model_ref *ref,
    struct diffusers_wan_model **out, struct lq_error *err);

/* Opens the reference and computes its identity (both of the above). */
enum lq_status model_ref_digest(const struct model_ref *ref,
    const struct model_hash_cache *cache, char out[DIGEST_HEX_SIZE],
    struct lq_error *err);

/* Does the identity count this file of a component folder? */
int model_ref_reads_file(const char *relpath);

void model_ref_clear(struct model_ref *ref);

#endif
