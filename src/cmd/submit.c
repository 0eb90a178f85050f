/*
 * submit.c — `latentq submit MANIFEST...`: record and queue jobs.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "cmd/preflight.h"
#include "cmd/submit.h"
#include "core/digest.h"
#include "core/json.h"
#include "core/util.h"
#include "manifest/job.h"
#include "manifest/manifest.h"
#include "model/hash.h"
#include "model/ref.h"
#include "net/layout.h"
#include "preflight/preflight.h"
#include "store/jobs.h"
#include "store/models.h"
#include "store/store.h"

static char *
request_text(const struct manifest_job *job)
{
	char *s = cJSON_PrintUnformatted(job->request);
	LQ_ASSERT(s != NULL);
	char *r = xstrdup(s);
	cJSON_free(s);
	return r;
}

/*
 * Model digests computed during one submit, by the config keys that name
 * the model's files (most manifests use one model for every job).
 */
struct digest_memo {
	char **keys;
	char (*digests)[DIGEST_HEX_SIZE];
	size_t n;
};

static char *
model_key(const cJSON *config)
{
	struct strbuf sb = {0};
	for (size_t i = 0; i < JOB_MODEL_KEYS; i++)
		strbuf_printf(&sb, "%s\n", json_get_string(config,
		    job_model_keys[i], ""));
	return strbuf_release(&sb);
}

/* Pins the digest of the model files the job will render with. */
static enum lq_status
pin_digest(struct store *st, const struct manifest *m,
    const cJSON *config_json, struct digest_memo *memo,
    char out[DIGEST_HEX_SIZE], struct lq_error *err)
{
	char *key = model_key(config_json);
	for (size_t i = 0; i < memo->n; i++) {
		if (strcmp(memo->keys[i], key) == 0) {
			memcpy(out, memo->digests[i], DIGEST_HEX_SIZE);
			free(key);
			return LQ_OK;
		}
	}
	struct job_config jc;
	enum lq_status r = job_config_from_json(config_json, &jc, err);
	struct model_ref ref;
	memset(&ref, 0, sizeof(ref));
	struct model_ref_resolver res = {st, store_model_path_resolve};
	struct model_hash_cache cache = {st, store_file_hash_lookup,
	    store_file_hash_record};
	if (r == LQ_OK)
		r = model_ref_resolve(jc.model, jc.transformer, jc.vae,
		    jc.text_encoder, jc.scheduler, m->dir, &res, &ref, err);
	if (r == LQ_OK)
		r = model_ref_digest(&ref, &cache, out, err);
	model_ref_clear(&ref);
	job_config_free(&jc);
	if (r != LQ_OK) {
		free(key);
		return r;
	}
	memo->keys = xrealloc(memo->keys, (memo->n + 1) * sizeof(char *));
	memo->digests = xrealloc(memo->digests, (memo->n + 1) * DIGEST_HEX_SIZE);
	memo->keys[memo->n] = key;
	memcpy(memo->digests[memo->n], out, DIGEST_HEX_SIZE);
	memo->n++;
	return LQ_OK;
}

static void
digest_memo_free(struct digest_memo *memo)
{
	for (size_t i = 0; i < memo->n; i++)
		free(memo->keys[i]);
	free(memo->keys);
	free(memo->digests);
}

/*
 * Records one job.  *entry_rid is the request row of the job's entry: 0
 * for the first job of an entry, which records the request and sets it;
 * the other jobs its seeds expand into share that row.
 */
static enum lq_status
record_job(struct store *st, const struct manifest *m,
    const struct manifest_job *job, const struct preflight_job *pj,
    const struct submit_options *opt, struct digest_memo *memo,
    int64_t *entry_rid, struct submit_result *res, struct strbuf *lines,
    struct lq_error *err)
{
	enum lq_status r;
	if (preflight_job_retryable(pj)) {
		/* a download that may pass next time: nothing recorded, so
		 * submitting again queues the job (exit 75 says so) */
		res->deferred++;
		if (!opt->quiet)
			strbuf_printf(lines, "deferred  -      %s (its model did "
			    "not download; submit again)\n", cmd_esc(job->name));
		return LQ_OK;
	}
	if (*entry_rid == 0) {
		char *req_json = request_text(job);
		struct store_request req = {
			.manifest_path = m->path,
			.manifest_digest = m->digest,
			.entry_index = (int)job->entry, .line = job->line,
			.request_json = req_json,
		};
		r = store_add_request(st, &req, entry_rid, err);
		free(req_json);
		if (r != LQ_OK)
			return r;
	}
	int64_t rid = *entry_rid, jid = 0;

	const struct lq_error *fe = preflight_job_first_error(pj);
	if (fe != NULL) {
		char *msg = preflight_job_problems_text(pj);
		struct store_job_new nj = {
			.request_id = rid, .name = job->name,
			.state = JOB_STATE_REJECTED, .config_json = "null",
			.config_digest = "", .max_attempts = 0,
			.error_code = fe->code, .error_message = msg,
		};
		r = store_add_job(st, &nj, &jid, err);
		free(msg);
		if (r != LQ_OK)
			return r;
		res->rejected++;
		if (!opt->quiet)
			strbuf_printf(lines, "rejected  %-6lld %s\n",
			    (long long)jid, cmd_esc(job->name));
		return LQ_OK;
	}

	char *config = json_canonical(pj->config);
	char digest[DIGEST_HEX_SIZE];
	digest_hex(config, strlen(config), digest);
	int64_t existing = 0;
	enum job_state state;
	if (!opt->again &&
	    (r = store_find_live_job(st, digest, &existing, &state, err)) != LQ_OK) {
		free(config);
		return r;
	}
	if (existing != 0) {
		res->job_ids[res->n_jobs++] = existing;
		res->existing++;
		if (!opt->quiet)
			strbuf_printf(lines, "already   %-6lld %s (%s; --again "
			    "queues it anew)\n", (long long)existing,
			    cmd_esc(job->name),
			    job_state_name(state));
		free(config);
		return LQ_OK;
	}
	char model_digest[DIGEST_HEX_SIZE] = "";
	if ((r = pin_digest(st, m, pj->config, memo, model_digest,
	    err)) == LQ_FAILED) {
		/* preflight opened the model; if hashing fails now, render
		 * pins the digest instead */
		error_print(err, stderr);
		error_clear(err);
		model_digest[0] = '\0';
	} else if (r != LQ_OK) {
		free(config);
		return r;
	}
	struct job_config jc;
	if ((r = job_config_from_json(pj->config, &jc, err)) != LQ_OK) {
		free(config);
		return r;
	}
	struct store_job_new nj = {
		.request_id = rid, .name = job->name, .state = JOB_STATE_QUEUED,
		.config_json = config, .config_digest = digest,
		.model_digests = model_digest[0] ? model_digest : NULL,
		.priority = jc.priority,
		.max_attempts = (int)jc.max_attempts,
		.total_steps = (int)jc.num_inference_steps,
		.output_path = jc.output,
	};
	r = store_add_job(st, &nj, &jid, err);
	job_config_free(&jc);
	free(config);
	if (r != LQ_OK)
		return r;
	if (pj->n_warnings > 0) {
		cJSON *d = cJSON_CreateArray();
		for (size_t k = 0; k < pj->n_problems; k++)
			cJSON_AddItemToArray(d,
			    preflight_problem_to_json(&pj->problems[k]));
		char *t = cJSON_PrintUnformatted(d);
		cJSON_Delete(d);
		r = store_add_event(st, jid, "preflight", t, err);
		cJSON_free(t);
		if (r != LQ_OK)
			return r;
	}
	res->job_ids[res->n_jobs++] = jid;
	res->queued++;
	if (!opt->quiet)
		strbuf_printf(lines, "queued    %-6lld %s\n", (long long)jid,
		    cmd_esc(job->name));
	return LQ_OK;
}

enum lq_status
submit_manifest(struct store *st, const char *path,
    const struct submit_options *opt, struct submit_result *res)
{
	memset(res, 0, sizeof(*res));
	struct manifest *m = NULL;
	struct lq_error err;
	error_clear(&err);
	/* Record where the manifest really is: jobs outlive the shell's cwd. */
	char *abs = realpath(path, NULL);
	enum lq_status r = manifest_load(abs ? abs : path, &m, &err);
	free(abs);
	for (size_t i = 0; i < m->n_errors; i++)
		error_print(&m->errors[i], stderr);
	if (r == LQ_FAILED) {
		/* a manifest that is not there is "no input", else bad data */
		res->exit_status = m->n_errors > 0 &&
		    lq_exit_for_error(&m->errors[0]) == EXIT_NOINPUT ?
		    EXIT_NOINPUT : EXIT_DATAERR;
		manifest_free(m);
		return LQ_FAILED;
	}
	res->job_ids = xcalloc(m->n_jobs + 1, sizeof(int64_t));
	struct model_hash_cache cache = { st, store_file_hash_lookup,
	    store_file_hash_record };
	struct preflight_options po = {
		.snap = opt->snap, .caps = opt->caps,
		.resolve_model = store_model_path_resolve, .resolve_ctx = st,
		.hash_cache = &cache,
		.fetch_model = opt->allow_download ? net_layout_fetch_url : NULL,
	};
	struct preflight_report *rep = NULL;
	preflight_check_manifest(m, &po, &rep);
	for (size_t i = 0; i < rep->n_jobs; i++) {
		char *t = preflight_job_problems_text(&rep->jobs[i]);
		if (t[0] != '\0' && rep->jobs[i].job->error == NULL)
			fprintf(stderr, "%s\n", t);
		free(t);
	}
	/* Hash the models first: outside the write transaction, which other
	 * processes wait on. */
	struct digest_memo memo = {0};
	for (size_t i = 0; i < m->n_jobs; i++) {
		if (rep->jobs[i].config == NULL)
			continue;
		char d[DIGEST_HEX_SIZE];
		error_clear(&err);
		pin_digest(st, m, rep->jobs[i].config, &memo, d, &err);
	}
	error_clear(&err);
	if ((r = store_begin(st, &err)) != LQ_OK) {
		error_print(&err, stderr);
		res->exit_status = lq_exit_for_error(&err);
		digest_memo_free(&memo);
		preflight_report_free(rep);
		manifest_free(m);
		return r;
	}
	/* Each job's line waits for the COMMIT: a "queued" line is a promise
	 * that the job is in the database. */
	struct strbuf lines = {0};
	int64_t entry_rid = 0;
	for (size_t i = 0; i < m->n_jobs; i++) {
		if (i > 0 && m->jobs[i].entry != m->jobs[i - 1].entry)
			entry_rid = 0;
		if ((r = record_job(st, m, &m->jobs[i], &rep->jobs[i], opt, &memo,
		    &entry_rid, res, &lines, &err)) != LQ_OK) {
			free(lines.buf);
			store_rollback(st);
			error_print(&err, stderr);
			res->exit_status = lq_exit_for_error(&err);
			digest_memo_free(&memo);
			preflight_report_free(rep);
			manifest_free(m);
			res->n_jobs = 0;
			res->queued = res->existing = res->rejected = 0;
			return r;
		}
	}
	digest_memo_free(&memo);
	if ((r = store_commit(st, &err)) != LQ_OK) {
		error_print(&err, stderr);
		res->exit_status = lq_exit_for_error(&err);
		res->n_jobs = 0;
		res->queued = res->existing = res->rejected = 0;
	} else if (lines.len > 0) {
		fputs(lines.buf, stdout);
		fflush(stdout);
	}
	free(lines.buf);
	preflight_report_free(rep);
	manifest_free(m);
	return r;
}

static int
cmd_submit_exec(const struct cmd_globals *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{"again", no_argument, NULL, 'a'},
		{"quiet", no_argument, NULL, 'q'},
		{"snap", no_argument, NULL, 's'},
		{"device-caps", required_argument, NULL, 'c'},
		{"no-device", no_argument, NULL, 'n'},
		{"allow-download", no_argument, NULL, 'D'},
		{NULL, 0, NULL, 0},
	};
	struct submit_options opt = {.quiet = g->verbose < 0};	/* latentq -q */
	const char *caps_path = NULL;
	int no_device = 0, c;
	while ((c = getopt_long(argc, argv, "aqsc:n", opts, NULL)) != -1) {
		switch (c) {
		case 'D': opt.allow_download = 1; break;
		case 'a': opt.again = 1; break;
		case 'q': opt.quiet = 1; break;
		case 's': opt.snap = 1; break;
		case 'c': caps_path = optarg; break;
		case 'n': no_device = 1; break;
		default: return cmd_misuse(&cmd_submit_entry, NULL);
		}
	}
	if (optind >= argc)
		return cmd_misuse(&cmd_submit_entry, "submit needs a manifest");
	struct device_caps caps;
	int have = cmd_preflight_caps(g, caps_path, no_device, &caps);
	if (have < 0)
		return -have;
	opt.caps = have ? &caps : NULL;
	int open_rc;
	struct store *st = cmd_open_store_checked(g, &open_rc);
	if (st == NULL)
		return open_rc;
	int rc = 0, queued = 0, existing = 0, rejected = 0, deferred = 0;
	for (int i = optind; i < argc; i++) {
		struct submit_result res;
		enum lq_status r = submit_manifest(st, argv[i], &opt, &res);
		free(res.job_ids);
		if (r == LQ_FAILED && res.exit_status != EXIT_IOERR) {
			rc = rc ? rc : res.exit_status;
			continue;
		}
		if (r != LQ_OK) {
			rc = res.exit_status;
			break;
		}
		queued += res.queued;
		existing += res.existing;
		rejected += res.rejected;
		deferred += res.deferred;
	}
	/* deferred jobs need this command run again: 75 says "retry me"
	 * even when others were rejected (those are recorded already) */
	if (deferred > 0 && (rc == 0 || rc == EXIT_DATAERR))
		rc = EXIT_TEMPFAIL;
	else if (rejected > 0 && rc == 0)
		rc = EXIT_DATAERR;
	if (!opt.quiet) {
		printf("%d queued, %d already queued, %d rejected", queued,
		    existing, rejected);
		if (deferred > 0)
			printf(", %d deferred", deferred);
		printf("\n");
	}
	store_close(st);
	return rc;
}

const struct cmd_entry cmd_submit_entry = {
	.name = "submit",
	.usage = "[--again] [--quiet] [--snap] [--allow-download] "
	    "[--device-caps FILE.json | --no-device] MANIFEST...",
	.summary = "validate a manifest's jobs and queue them",
	.creates_db = 1,
	.exec = cmd_submit_exec,
};
