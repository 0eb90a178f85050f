/*
 * preflight-int.h — private to src/preflight: the per-run context, the model
 * inspection cache and the problem lists the checks append to.
 *
 * Problems found once for a shared input (a model folder, a LoRA file, a
 * prompt_embeds file) are stored without a manifest location, then copied to
 * every job using that input and placed at the job's key with
 * manifest_job_error_at.
 */
#ifndef LQ_PREFLIGHT_INT_H
#define LQ_PREFLIGHT_INT_H

#include <stdint.h>

#include "core/error.h"
#include "manifest/job.h"
#include "manifest/manifest.h"
#include "model/diffusers.h"
#include "model/expected.h"
#include "model/safetensors.h"
#include "nn/plan.h"
#include "preflight/preflight.h"
#include "sampler/scheduler.h"
#include "sampler/unipc.h"

struct text_tokenizer;

struct pf_list {
	struct lq_error *v;
	size_t n, cap;
};

/* Appends a problem (status LQ_FAILED or LQ_WARN) and returns it to fill. */
struct lq_error *pf_list_add(struct pf_list *l, enum lq_status status,
    const char *code, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
void pf_list_free(struct pf_list *l);

/* A latent upsampler (or other extra component) named in model_index.json. */
struct pf_extra {
	char name[64], class_name[64];
};

/* pf_model.l2_w's components */
enum pf_l2_weights { PF_L2_TRANSFORMER, PF_L2_VAE, PF_L2_AUDIO_VAE,
	PF_L2_VOCODER, PF_L2_CONNECTORS };

/* One inspected model folder (with a set of overrides). */
struct pf_model {
	char *key;			/* folder + overrides, the cache key */
	char *dir;
	struct pf_list problems;	/* field = the manifest key at fault */
	struct diffusers_model *dm;	/* NULL when the configs are unusable */
	/* an LTX2Pipeline folder instead (dm NULL): its components, the
	 * transformer's and the VAE's configs (l2 NULL when unusable) */
	struct diffusers_ltx2_model *l2;
	struct ltx2_transformer_config l2_t;
	struct ltxv_vae_config l2_v;
	/* a WanPipeline folder instead (dm, l2 NULL): its components, the
	 * transformer's, VAE's and UniPC scheduler's configs (wan NULL when
	 * unusable; wan_sched_ok 0 when the scheduler is refused) */
	struct diffusers_wan_model *wan;
	struct wan_transformer_config wan_t;
	struct wan_vae_config wan_v;
	struct unipc_config wan_sched;
	int wan_sched_ok;
	struct st_set *w_transformer, *w_vae, *w_text;	/* NULL: absent or broken */
	/* an LTX2Pipeline's weights, checked against their tables
	 * (model/expected.h), in enum pf_l2_weights order; NULL: broken */
	struct st_set *l2_w[5];
	int has_16bit;			/* any F16/BF16 weight */
	/* scheduler_config.json as the render's sampler parses it
	 * (sampler/scheduler.h); sched_ok 0 when absent or refused (the
	 * refusal, with the sampler's code, is in problems). */
	int sched_ok;
	struct scheduler_config sched;
	int have_table;			/* table: the transformer's, for LoRAs */
	struct tensor_table table;
	/* tokenizer, loaded on first use */
	int tok_tried;
	struct text_tokenizer *tok;
	struct lq_error tok_err;
	/* digest of the folder, computed on first pin */
	int digest_tried;
	char digest[65];
	struct lq_error digest_err;
};

/* A file checked once per run (LoRA, prompt_embeds), with its findings. */
struct pf_file {
	char *key;
	struct pf_list problems;	/* located at the job's key when copied */
	int64_t embeds_T, embeds_B;	/* prompt_embeds: tokens, batch (0 when absent) */
	int has_negative;
};

struct pf_ctx {
	const struct preflight_options *opt;
	struct pf_model **models;
	size_t n_models, cap_models;
	struct pf_file **files;
	size_t n_files, cap_files;
};

/* Inspects (or finds in the cache) the model of a job.  Never NULL. */
struct pf_model *pf_model_get(struct pf_ctx *c, const char *dir,
    const struct diffusers_overrides *ov);
void pf_model_free(struct pf_model *pm);
/* Loads the model's tokenizer once; NULL (and pm->tok_err) on failure. */
struct text_tokenizer *pf_model_tokenizer(struct pf_model *pm);
/* The model's digest (see latentq-preflight(7)); NULL and err on failure. */
struct model_hash_cache;
const char *pf_model_digest(struct pf_model *pm,
    const struct model_hash_cache *cache, struct lq_error *err);

/* LoRA file checked against a model's transformer (cached). */
struct pf_file *pf_lora_get(struct pf_ctx *c, const char *path,
    struct pf_model *pm);
/* prompt_embeds file checked against a caption width (cached). */
struct pf_file *pf_embeds_get(struct pf_ctx *c, const char *path,
    int caption_channels);
void pf_file_free(struct pf_file *f);

/* Per-job checks: fill `out` (located problems). */
struct pf_job_state {
	struct pf_ctx *ctx;
	const struct manifest *m;
	const struct manifest_job *job;
	struct pf_list *out;
	cJSON *config;			/* working copy (snap, mesh) */
	struct job_config jc;		/* typed view of config (strings borrowed) */
	int snapped;
	struct pf_model *pm;		/* NULL when no model could be read */
	/* resolved values */
	int64_t height, width, num_frames;
	int geometry_ok;		/* positive and on the grid (after snapping) */
	int64_t lat_f, lat_h, lat_w, tokens;
	int64_t devices, data, context, tensor;
	int mesh_ok;
	double per_device_batch;
	int64_t global_batch;
	int cfg_on;
	int64_t embeds_T, embeds_B;	/* prompt_embeds file: tokens, batch */
	struct nn_plan plan;		/* pf_check_device's memory plan */
	int has_plan;
};

/* Adds a problem at `key` of the job (file:line:column, field path). */
struct lq_error *pf_job_add(struct pf_job_state *s, const char *key,
    enum lq_status status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* The value of `key` as written ("1.0"), or the config's value printed. */
const char *pf_job_text(struct pf_job_state *s, const char *key, char *buf,
    size_t n);
/* Copies shared problems to the job at `key`. */
void pf_job_copy(struct pf_job_state *s, const struct pf_list *from,
    const char *key);

void pf_check_config(struct pf_job_state *s);
void pf_check_model(struct pf_job_state *s);
void pf_check_geometry(struct pf_job_state *s);
void pf_check_latents(struct pf_job_state *s);
void pf_check_ltx2(struct pf_job_state *s);
void pf_check_wan(struct pf_job_state *s);
void pf_check_sampling(struct pf_job_state *s);
void pf_check_condition(struct pf_job_state *s);
void pf_check_second_stage(struct pf_job_state *s);
void pf_check_prompt(struct pf_job_state *s);
void pf_check_mesh(struct pf_job_state *s);
/* LQ-MESH-004 for one stream of the job (after pf_check_mesh): the
 * context degree divides its `tokens` ("the audio stream's"; `what`: where
 * they come from, for the message). */
void pf_mesh_check_tokens(struct pf_job_state *s, const char *stream,
    int64_t tokens, const char *what);
void pf_check_lora(struct pf_job_state *s);
void pf_check_image(struct pf_job_state *s);
void pf_check_device(struct pf_job_state *s);
/* Output paths of one job: prefix and containment (collisions are
 * compared across jobs in preflight.c).  Returns normalized paths. */
void pf_check_output(struct pf_job_state *s, char *paths[3]);

#endif
