/*
 * preflight.h — every check a job must pass before anything is compiled or
 * loaded: manifest ranges, geometry, sampling, prompt, batch and mesh, model
 * folder, LoRA, device memory and limits, output paths.
 *
 * Preflight reads only a loaded manifest (manifest/manifest.h), model
 * configs, safetensors HEADERS (the files are mapped, never read beyond their
 * headers, except to hash them when a job pins `model_digest:`), tokenizer
 * files and a plain `struct device_caps` (gpu/caps.h: from the device, or a
 * JSON file for another machine).  It needs no GPU.
 *
 * Every problem is a `struct lq_error`: status LQ_FAILED (an error: the job
 * is rejected) or LQ_WARN (a warning: the job runs, the user is told), a
 * stable code from the table in core/codes.def (`LQ-GEOM-001`, listed with failing
 * and fixed examples in latentq-preflight(7)), file:line:column and field
 * path of the manifest value at fault ("jobs[2].height"), a message naming
 * the offending value and the rule, and a hint with a valid nearby value.
 * ALL problems of a job are reported, not only the first.
 *
 * Ownership: a `struct preflight_report` owns its job records, their problem
 * arrays and their configs; free it with preflight_report_free().  It
 * borrows the manifests (and their jobs) it was built from: free the report
 * before them.
 */
#ifndef LQ_PREFLIGHT_PREFLIGHT_H
#define LQ_PREFLIGHT_PREFLIGHT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "core/error.h"
#include "nn/plan.h"

struct manifest;
struct manifest_job;
struct device_caps;
struct model_hash_cache;

struct preflight_options {
	int snap;		/* round off-grid height/width/num_frames (warning) */
	int allow_absolute;	/* output templates may be absolute paths */
	/*
	 * Folder output/frames/save_tensors resolve inside; NULL: the folder
	 * of each job's manifest.  Only used to compare paths: nothing is
	 * created.
	 */
	const char *output_dir;
	/* Device the jobs are checked against; NULL: device checks skipped
	 * (and the mesh is checked against no device count). */
	const struct device_caps *caps;
	/* Fraction of the device heap kept free; 0 means the default 0.10. */
	double memory_margin;
	/*
	 * Resolves a registered model name (`model: ltxv-2b`) to a folder
	 * (caller-owned result, free()d by preflight) or NULL when unknown.
	 * NULL callback: every model must be a folder.
	 */
	char *(*resolve_model)(void *ctx, const char *name);
	void *resolve_ctx;
	/* File-hash cache for `model_digest:` pins (model/hash.h; submit wires
	 * it to the store); NULL: every pinned folder is hashed in full. */
	const struct model_hash_cache *hash_cache;
	/*
	 * Model folders given as URLs (`model:` or an override; model/ref.h).
	 * NULL (no --allow-download): a job naming one is refused,
	 * LQ-MDL-012.  Else it is called for each such key before the model
	 * is checked, with component NULL for `model:` and the key's name for
	 * an override, and returns LQ_OK once the URL's cache folder is
	 * complete (net_layout_fetch_url): preflight checks the downloaded
	 * folder as any other, configs, headers and pinned digest alike.  A
	 * failed download is the job's problem, with the network's code.
	 */
	enum lq_status (*fetch_model)(const char *url, const char *component,
	    struct lq_error *err);
};

/* One job's result. */
struct preflight_job {
	const struct manifest *manifest;	/* borrowed */
	const struct manifest_job *job;		/* borrowed */
	struct lq_error *problems;		/* errors and warnings, in check order */
	size_t n_problems;
	int n_errors, n_warnings;
	int snapped;				/* --snap changed the geometry */
	/*
	 * The validated config to record (owned; NULL when the job is
	 * rejected): job->config with snapped geometry and the resolved mesh
	 * (a -1 axis replaced by its inferred value).
	 */
	cJSON *config;
	/* The memory plan (nn/plan.h) when the model and geometry could be
	 * read (has_plan), without a device its budget is 0. */
	int has_plan;
	struct nn_plan plan;
	int64_t video_tokens;		/* latent F*H*W / patch volume */
	int64_t batch;			/* videos rendered (job_batch); 0 when unknown */
};

struct preflight_report {
	struct preflight_job *jobs;	/* every job of every manifest, in order */
	size_t n_jobs;
	size_t n_valid, n_rejected, n_warned;
};

/*
 * Checks every job of `n` loaded manifests (manifest_load's result, also
 * when it returned LQ_WARN: a job the loader rejected is reported with its
 * loader errors and not checked further).  Model folders are inspected once
 * per distinct folder and override set; output paths are compared across
 * all the manifests.  *out is always set (free with preflight_report_free).
 * Returns LQ_OK when every job is valid (warnings allowed), LQ_FAILED when
 * any job is rejected, LQ_RETRY when every rejected job is rejected only
 * for problems that may pass next time (preflight_job_retryable: a model
 * download that failed retryably).
 */
/*
 * 1 when the job's errors are all retryable (graded LQ_RETRY: a download of
 * its model from a URL failed in a way that may pass next time), so submit
 * leaves it out rather than recording it rejected, and exits 75.
 */
int preflight_job_retryable(const struct preflight_job *pj);

enum lq_status preflight_check_manifests(struct manifest *const *ms, size_t n,
    const struct preflight_options *opt, struct preflight_report **out);

/* The same for one manifest. */
enum lq_status preflight_check_manifest(struct manifest *m,
    const struct preflight_options *opt, struct preflight_report **out);

void preflight_report_free(struct preflight_report *r);

/*
 * Text form, one line per problem then one per job:
 *   jobs.yaml:14:9: error LQ-GEOM-001: job clip2: jobs[2].height: 500 is not
 *   a multiple of 32 (...); nearest valid: 480 or 512
 *   job clip2: rejected (2 errors, 0 warnings)
 * and a closing "N valid, N rejected" line.  `verbose` adds a line per
 * valid job with its memory plan (peak, phase, tiling, streaming).
 */
void preflight_report_print(const struct preflight_report *r, FILE *fp,
    int verbose);

/* JSON form (caller frees with cJSON_Delete):
 *   {"valid": N, "rejected": N, "jobs": [{"manifest", "entry", "index",
 *    "name", "valid", "snapped", "config", "estimates": {"batch",
 *    "video_tokens"}, "plan": nn_plan_to_json (null when the model or
 *    geometry could not be read),
 *    "problems": [{"severity", "code", "file", "line", "column", "field",
 *    "message", "hint"}]}]} */
cJSON *preflight_report_to_json(const struct preflight_report *r);

/* A job's first error, or NULL when it is valid (for a store's
 * error_code / error_message columns). */
const struct lq_error *preflight_job_first_error(const struct preflight_job *pj);

/*
 * Every problem of a job, one line each, as the text report prints them
 * ("file:line:col: error CODE: field: message; hint"); "" when none.
 * Caller frees.
 */
char *preflight_job_problems_text(const struct preflight_job *pj);

/* JSON object of one problem (as in the report's "problems"). */
cJSON *preflight_problem_to_json(const struct lq_error *e);

/* The table of codes: the rows of core/codes.def whose section is
 * latentq-preflight(7): code, severity it is reported with ("error",
 * "warning", or "error|warning" when --snap/truncate downgrade it) and the
 * rule in one line.  For docs and tests; pointers are static. */
struct preflight_code {
	const char *code;
	const char *severity;
	const char *rule;
};
size_t preflight_code_count(void);
const struct preflight_code *preflight_code_at(size_t i);
const struct preflight_code *preflight_code_find(const char *code);

#endif
