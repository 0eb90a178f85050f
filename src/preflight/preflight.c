/*
 * preflight.c — runs the checks of checks.c over every job of one or more
 * manifests, compares output paths across jobs, and prints the report as
 * text or JSON.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "core/util.h"
#include "manifest/manifest.h"
#include "preflight/preflight-int.h"

/* Loader errors of one job: every m->errors entry of its manifest entry. */
static void
loader_errors(const struct manifest *m, const struct manifest_job *job,
    struct pf_list *out)
{
	char prefix[48];
	int n = snprintf(prefix, sizeof(prefix), "jobs[%zu]", job->entry);
	for (size_t i = 0; i < m->n_errors; i++) {
		const struct lq_error *e = &m->errors[i];
		char next = e->field[n];
		if (strncmp(e->field, prefix, (size_t)n) != 0 ||
		    (next != '\0' && next != '.' && next != '['))
			continue;
		struct lq_error *d = pf_list_add(out, LQ_FAILED, e->code, "%s",
		    e->message);
		*d = *e;
		d->status = LQ_FAILED;
	}
	if (out->n == 0 && job->error != NULL) {
		struct lq_error *d = pf_list_add(out, LQ_FAILED, job->error->code,
		    "%s", job->error->message);
		*d = *job->error;
		d->status = LQ_FAILED;
	}
}

struct out_path {
	char *path;
	size_t job;
	int key;
};

static int
cmp_out(const void *a, const void *b)
{
	const struct out_path *x = a, *y = b;
	int c = strcmp(x->path, y->path);
	if (c != 0)
		return c;
	return x->job < y->job ? -1 : x->job > y->job;
}

static void
finish_job(struct preflight_job *pj, struct pf_list *l)
{
	pj->problems = l->v;
	pj->n_problems = l->n;
	pj->n_errors = pj->n_warnings = 0;
	for (size_t i = 0; i < l->n; i++) {
		if (l->v[i].status == LQ_WARN)
			pj->n_warnings++;
		else
			pj->n_errors++;
	}
}

enum lq_status
preflight_check_manifests(struct manifest *const *ms, size_t n_ms,
    const struct preflight_options *opt, struct preflight_report **out)
{
	static const struct preflight_options none;
	if (opt == NULL)
		opt = &none;
	struct preflight_report *r = xcalloc(1, sizeof(*r));
	*out = r;
	size_t total = 0;
	for (size_t i = 0; i < n_ms; i++)
		total += ms[i]->n_jobs;
	r->jobs = xcalloc(total ? total : 1, sizeof(*r->jobs));
	struct pf_list *lists = xcalloc(total ? total : 1, sizeof(*lists));
	struct out_path *paths = xcalloc(3 * (total ? total : 1), sizeof(*paths));
	size_t n_paths = 0;
	struct pf_ctx ctx = { .opt = opt };

	size_t k = 0;
	for (size_t mi = 0; mi < n_ms; mi++) {
		const struct manifest *m = ms[mi];
		for (size_t ji = 0; ji < m->n_jobs; ji++, k++) {
			const struct manifest_job *job = &m->jobs[ji];
			struct preflight_job *pj = &r->jobs[k];
			pj->manifest = m;
			pj->job = job;
			if (job->error != NULL || job->config == NULL) {
				loader_errors(m, job, &lists[k]);
				continue;
			}
			struct pf_job_state s = {
				.ctx = &ctx, .m = m, .job = job, .out = &lists[k],
				.config = cJSON_Duplicate(job->config, 1),
			};
			struct lq_error jerr;
			error_clear(&jerr);
			if (job_config_from_json(s.config, &s.jc, &jerr) != LQ_OK) {
				/* the manifest checked every type: a bug */
				LQ_ASSERT(!"manifest config has a mistyped key");
			}
			pf_check_config(&s);
			pf_check_model(&s);
			pf_check_geometry(&s);
			pf_check_sampling(&s);
			pf_check_condition(&s);
			pf_check_second_stage(&s);
			pf_check_prompt(&s);
			pf_check_mesh(&s);
			pf_check_latents(&s);
			pf_check_ltx2(&s);
			pf_check_wan(&s);
			pf_check_lora(&s);
			pf_check_image(&s);
			pf_check_device(&s);
			char *p[3];
			pf_check_output(&s, p);
			for (int i = 0; i < 3; i++)
				if (p[i] != NULL)
					paths[n_paths++] = (struct out_path){ p[i], k, i };
			job_config_free(&s.jc);
			pj->config = s.config;
			pj->snapped = s.snapped;
			pj->has_plan = s.has_plan;
			pj->plan = s.plan;
			pj->video_tokens = s.tokens;
			pj->batch = s.global_batch;
		}
	}

	/* Two jobs writing one file: the later job is told which wrote it first. */
	static const char *const keys[3] = { "output", "frames", "save_tensors" };
	qsort(paths, n_paths, sizeof(*paths), cmp_out);
	for (size_t i = 1; i < n_paths; i++) {
		size_t first = i - 1;
		while (first > 0 && strcmp(paths[first - 1].path, paths[i].path) == 0)
			first--;
		if (strcmp(paths[first].path, paths[i].path) != 0 ||
		    paths[first].job == paths[i].job)
			continue;
		struct preflight_job *a = &r->jobs[paths[first].job];
		struct preflight_job *b = &r->jobs[paths[i].job];
		struct pf_job_state s = { .ctx = &ctx, .m = b->manifest,
		    .job = b->job, .out = &lists[paths[i].job], .config = b->config };
		struct manifest_where w;
		manifest_job_where(a->manifest, a->job, keys[paths[first].key], &w);
		struct lq_error *e = pf_job_add(&s, keys[paths[i].key], LQ_FAILED,
		    "LQ-OUT-003", "%s is also written by job %s (%s:%d, %s)",
		    paths[i].path, a->job->name, a->manifest->path, w.line,
		    keys[paths[first].key]);
		error_set_hint(e, "put {name}, {seed} or {index} in the template");
	}
	for (size_t i = 0; i < n_paths; i++)
		free(paths[i].path);
	free(paths);

	for (size_t i = 0; i < total; i++) {
		struct preflight_job *pj = &r->jobs[i];
		finish_job(pj, &lists[i]);
		if (pj->n_errors > 0) {
			cJSON_Delete(pj->config);
			pj->config = NULL;
			r->n_rejected++;
		} else {
			r->n_valid++;
		}
		if (pj->n_warnings > 0)
			r->n_warned++;
	}
	r->n_jobs = total;
	free(lists);
	for (size_t i = 0; i < ctx.n_models; i++)
		pf_model_free(ctx.models[i]);
	free(ctx.models);
	for (size_t i = 0; i < ctx.n_files; i++)
		pf_file_free(ctx.files[i]);
	free(ctx.files);
	size_t retryable = 0;
	for (size_t i = 0; i < total; i++)
		retryable += (size_t)preflight_job_retryable(&r->jobs[i]);
	if (r->n_rejected == 0)
		return LQ_OK;
	return retryable == r->n_rejected ? LQ_RETRY : LQ_FAILED;
}

int
preflight_job_retryable(const struct preflight_job *pj)
{
	int retry = 0;
	for (size_t k = 0; k < pj->n_problems; k++) {
		enum lq_status st = pj->problems[k].status;
		if (st == LQ_RETRY)
			retry = 1;
		else if (st != LQ_WARN)
			return 0;
	}
	return retry;
}

enum lq_status
preflight_check_manifest(struct manifest *m,
    const struct preflight_options *opt, struct preflight_report **out)
{
	return preflight_check_manifests(&m, 1, opt, out);
}

void
preflight_report_free(struct preflight_report *r)
{
	if (r == NULL)
		return;
	for (size_t i = 0; i < r->n_jobs; i++) {
		free(r->jobs[i].problems);
		cJSON_Delete(r->jobs[i].config);
	}
	free(r->jobs);
	free(r);
}

static const char *
severity(const struct lq_error *e)
{
	return e->status == LQ_WARN ? "warning" : "error";
}

void
preflight_report_print(const struct preflight_report *r, FILE *fp,
    int verbose)
{
	for (size_t i = 0; i < r->n_jobs; i++) {
		const struct preflight_job *pj = &r->jobs[i];
		for (size_t k = 0; k < pj->n_problems; k++) {
			const struct lq_error *e = &pj->problems[k];
			fprintf(fp, "%s:%d:%d: %s %s: job %s: %s%s%s%s%s\n",
			    e->file, e->line, e->column, severity(e), e->code,
			    pj->job->name, e->field, e->field[0] ? ": " : "",
			    e->message, e->hint[0] ? "; " : "", e->hint);
		}
		if (pj->n_errors > 0)
			fprintf(fp, "job %s: rejected (%d error%s, %d warning%s)\n",
			    pj->job->name, pj->n_errors,
			    pj->n_errors == 1 ? "" : "s", pj->n_warnings,
			    pj->n_warnings == 1 ? "" : "s");
		else if (pj->n_warnings > 0 || verbose)
			fprintf(fp, "job %s: valid (%d warning%s%s)\n",
			    pj->job->name, pj->n_warnings,
			    pj->n_warnings == 1 ? "" : "s",
			    pj->snapped ? ", geometry snapped" : "");
		if (verbose && pj->has_plan) {
			const struct nn_plan *p = &pj->plan;
			char tiling[96] = "untiled";

			if (p->vae_tiled)
				snprintf(tiling, sizeof(tiling), "tiled %s%dx%d, "
				    "latent tile %dx%dx%d",
				    p->tiling.use_framewise_decoding ?
				    "framewise " : "",
				    p->tiling.tile_sample_min_width,
				    p->tiling.tile_sample_min_height,
				    p->vae_tile[0], p->vae_tile[1], p->vae_tile[2]);
			fprintf(fp, "job %s: plan: peak %" PRIu64 " device bytes "
			    "(%.3f GiB) while %s, host %.3f GiB, budget %.3f GiB; "
			    "VAE %s; weights %s; %" PRId64 " video tokens%s%s\n",
			    pj->job->name, p->peak_device_bytes,
			    (double)p->peak_device_bytes / (1 << 30),
			    nn_plan_phase_name(p->peak_phase),
			    (double)p->host_bytes / (1 << 30),
			    (double)p->budget / (1 << 30), tiling,
			    p->streaming == NN_WEIGHTS_STREAMED ?
			    "streamed (two blocks resident)" : "resident",
			    pj->video_tokens, p->fits ? "" : "; does not fit: ",
			    p->fits ? "" : p->change);
		}
	}
	fprintf(fp, "%zu valid, %zu rejected\n", r->n_valid, r->n_rejected);
}

const struct lq_error *
preflight_job_first_error(const struct preflight_job *pj)
{
	for (size_t k = 0; k < pj->n_problems; k++)
		if (pj->problems[k].status != LQ_WARN)
			return &pj->problems[k];
	return NULL;
}

char *
preflight_job_problems_text(const struct preflight_job *pj)
{
	struct strbuf sb = {0};
	strbuf_append(&sb, "", 0);
	for (size_t k = 0; k < pj->n_problems; k++) {
		const struct lq_error *e = &pj->problems[k];
		strbuf_printf(&sb, "%s%s:%d:%d: %s %s: %s%s%s%s%s", k ? "\n" : "",
		    e->file, e->line, e->column, severity(e), e->code, e->field,
		    e->field[0] ? ": " : "", e->message, e->hint[0] ? "; " : "",
		    e->hint);
	}
	return strbuf_release(&sb);
}

cJSON *
preflight_problem_to_json(const struct lq_error *e)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "severity", severity(e));
	cJSON_AddStringToObject(o, "code", e->code);
	cJSON_AddStringToObject(o, "file", e->file);
	cJSON_AddNumberToObject(o, "line", e->line);
	cJSON_AddNumberToObject(o, "column", e->column);
	cJSON_AddStringToObject(o, "field", e->field);
	cJSON_AddStringToObject(o, "message", e->message);
	cJSON_AddStringToObject(o, "hint", e->hint);
	return o;
}

cJSON *
preflight_report_to_json(const struct preflight_report *r)
{
	cJSON *root = cJSON_CreateObject();
	cJSON_AddNumberToObject(root, "valid", (double)r->n_valid);
	cJSON_AddNumberToObject(root, "rejected", (double)r->n_rejected);
	cJSON *jobs = cJSON_AddArrayToObject(root, "jobs");
	for (size_t i = 0; i < r->n_jobs; i++) {
		const struct preflight_job *pj = &r->jobs[i];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "manifest", pj->manifest->path);
		cJSON_AddNumberToObject(o, "entry", (double)pj->job->entry);
		cJSON_AddNumberToObject(o, "index", (double)pj->job->index);
		cJSON_AddStringToObject(o, "name", pj->job->name);
		cJSON_AddBoolToObject(o, "valid", pj->n_errors == 0);
		cJSON_AddBoolToObject(o, "snapped", pj->snapped);
		cJSON_AddItemToObject(o, "config", pj->config
		    ? cJSON_Duplicate(pj->config, 1) : cJSON_CreateNull());
		cJSON *est = cJSON_AddObjectToObject(o, "estimates");
		cJSON_AddNumberToObject(est, "batch", (double)pj->batch);
		cJSON_AddNumberToObject(est, "video_tokens", (double)pj->video_tokens);
		cJSON_AddItemToObject(o, "plan", pj->has_plan ?
		    nn_plan_to_json(&pj->plan) : cJSON_CreateNull());
		cJSON *ps = cJSON_AddArrayToObject(o, "problems");
		for (size_t k = 0; k < pj->n_problems; k++)
			cJSON_AddItemToArray(ps,
			    preflight_problem_to_json(&pj->problems[k]));
		cJSON_AddItemToArray(jobs, o);
	}
	return root;
}
