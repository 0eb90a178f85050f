/*
 * export.c — `latentq export [--checkpoints] [--sign[=KEY]] -o FILE JOB...`:
 * writes the jobs (request as written, validated config and digest,
 * pinned model digest, state, events, outputs, and with --checkpoints the
 * newest intact checkpoint of each unfinished job) into a bundle
 * (media/bundle.h), optionally signed (core/sign.h).
 *
 * Every output is hashed again while it is archived and must still be the
 * file recorded in the artifacts table; a bundle is written to FILE.part
 * and renamed, so FILE is either absent or whole.
 */
#include <getopt.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cmd/cmd.h"
#include "core/digest.h"
#include "core/json.h"
#include "core/sign.h"
#include "core/util.h"
#include "media/bundle.h"
#include "store/checkpoints.h"
#include "store/transfer.h"
#include "store/jobs.h"
#include "store/store.h"

/* Everything one job contributes, owned here until the bundle is written. */
struct export_job {
	struct store_job job;
	struct store_request_row req;
	char *base_dir;			/* the manifest's folder */
	cJSON *events;
	struct store_artifact *artifacts;
	char **artifact_rel, **artifact_member;
	size_t n_artifacts;
	struct store_checkpoint cp;
	int has_cp;
	char *cp_member;
	struct media_bundle_job bj;
	struct media_bundle_artifact *bja;
};

static void
export_job_clear(struct export_job *e)
{
	for (size_t i = 0; i < e->n_artifacts; i++) {
		store_artifact_clear(&e->artifacts[i]);
		free(e->artifact_rel[i]);
		free(e->artifact_member[i]);
	}
	free(e->artifacts);
	free(e->artifact_rel);
	free(e->artifact_member);
	free(e->bja);
	store_checkpoint_clear(&e->cp);
	free(e->cp_member);
	cJSON_Delete(e->events);
	free(e->base_dir);
	store_request_row_clear(&e->req);
	store_job_clear(&e->job);
}

static int
add_event(double at, const char *kind, const char *detail, void *ud)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "at", at);
	cJSON_AddStringToObject(o, "kind", kind);
	if (detail != NULL)
		cJSON_AddStringToObject(o, "detail", detail);
	else
		cJSON_AddNullToObject(o, "detail");
	cJSON_AddItemToArray(ud, o);
	return 0;
}

static int
add_artifact(const struct store_artifact *a, void *ud)
{
	struct export_job *e = ud;
	size_t i = e->n_artifacts++;
	e->artifacts = xrealloc(e->artifacts, e->n_artifacts *
	    sizeof(*e->artifacts));
	struct store_artifact *c = &e->artifacts[i];
	*c = *a;
	c->kind = xstrdup(a->kind);
	c->path = xstrdup(a->path);
	return 0;
}

/*
 * An output's path relative to the manifest's folder (where an imported
 * job's render writes it again); a path outside it keeps its absolute
 * components under "root/".  A relative path (the job's output template
 * as submitted) is relative to that folder already.
 */
static char *
relative_path(const char *base_dir, const char *path)
{
	if (path[0] != '/')
		return xstrdup(path);	/* already relative to that folder */
	size_t n = strlen(base_dir);
	if (strncmp(path, base_dir, n) == 0 && path[n] == '/' && path[n + 1])
		return xstrdup(path + n + 1);
	while (path[0] == '/')
		path++;
	return xasprintf("root/%s", path);
}

static enum lq_status
collect(struct store *st, const char *ref, int with_checkpoints,
    struct export_job *e, struct lq_error *err)
{
	enum lq_status s;
	if ((s = store_find_job(st, ref, &e->job, err)) != LQ_OK ||
	    (s = store_get_request(st, e->job.request_id, &e->req, err)) !=
	    LQ_OK)
		return s;
	char *mp = xstrdup(e->req.manifest_path);
	e->base_dir = xstrdup(dirname(mp));
	free(mp);
	e->events = cJSON_CreateArray();
	if ((s = store_list_events(st, e->job.id, add_event, e->events, err)) !=
	    LQ_OK ||
	    (s = store_list_artifacts(st, e->job.id, add_artifact, e, err)) !=
	    LQ_OK)
		return s;
	e->artifact_rel = xcalloc(e->n_artifacts + 1, sizeof(char *));
	e->artifact_member = xcalloc(e->n_artifacts + 1, sizeof(char *));
	e->bja = xcalloc(e->n_artifacts + 1, sizeof(*e->bja));
	for (size_t i = 0; i < e->n_artifacts; i++) {
		struct store_artifact *a = &e->artifacts[i];
		e->artifact_rel[i] = relative_path(e->base_dir, a->path);
		e->artifact_member[i] = xasprintf("jobs/%" PRId64 "/%s", e->job.id,
		    e->artifact_rel[i]);
		if (media_bundle_check_name(e->artifact_member[i]) != NULL)
			return error_set(err, LQ_FAILED, "LQ-BUNDLE-009", "job %"
			    PRId64 ": output %s has a name a bundle cannot carry "
			    "(%s)", e->job.id, a->path,
			    media_bundle_check_name(e->artifact_member[i]));
		/* the file must still be the one recorded */
		char hex[DIGEST_HEX_SIZE];
		if ((s = digest_file(a->path, hex, err)) != LQ_OK) {
			error_set_hint(err, "job %" PRId64 " (%s) recorded it as its "
			    "%s output", e->job.id, e->job.name, a->kind);
			return s;
		}
		if (strcmp(hex, a->digest) != 0)
			return error_set(err, LQ_FAILED, "LQ-BUNDLE-009", "output %s "
			    "of job %" PRId64 " changed after it was recorded "
			    "(BLAKE2b %.16s…, recorded %.16s…)", a->path, e->job.id,
			    hex, a->digest);
		e->bja[i] = (struct media_bundle_artifact){a->kind,
		    e->artifact_rel[i], {e->artifact_member[i], a->size,
		    a->digest}};
	}
	int unfinished = e->job.state != JOB_STATE_DONE &&
	    e->job.state != JOB_STATE_REJECTED;
	if (with_checkpoints && unfinished) {
		int found = 0;
		if ((s = store_load_checkpoint(st, e->job.id, NULL, &e->cp, &found,
		    NULL, err)) != LQ_OK)
			return s;
		e->has_cp = found;
		if (found)
			e->cp_member = xasprintf("jobs/%" PRId64 "/checkpoint-%d."
			    "latent", e->job.id, e->cp.step);
	}
	struct store_job *j = &e->job;
	e->bj = (struct media_bundle_job){
		.id = j->id, .name = j->name, .state = job_state_name(j->state),
		.manifest_path = e->req.manifest_path,
		.manifest_digest = e->req.manifest_digest,
		.request_json = e->req.request_json,
		.entry_index = e->req.entry_index, .line = e->req.line,
		.config_json = j->config_json, .config_digest = j->config_digest,
		.model_digests = j->model_digests, .priority = j->priority,
		.max_attempts = j->max_attempts, .attempts = j->attempts,
		.step = j->step, .total_steps = j->total_steps,
		.phase = j->phase, .error_code = j->error_code,
		.error_message = j->error_message,
		.output_path = j->output_path != NULL ?
		    relative_path(e->base_dir, j->output_path) : NULL,
		.created_at = j->created_at, .finished_at = j->finished_at,
		.events = e->events, .n_artifacts = e->n_artifacts,
		.artifacts = e->bja, .has_checkpoint = e->has_cp,
	};
	if (e->has_cp) {
		struct media_bundle_checkpoint *c = &e->bj.checkpoint;
		c->step = e->cp.step;
		c->sigma = e->cp.sigma;
		c->dtype = e->cp.dtype;
		c->ndim = e->cp.ndim;
		memcpy(c->shape, e->cp.shape, sizeof(c->shape));
		c->config_digest = e->cp.config_digest;
		c->model_digest = e->cp.model_digest;
		c->device_fingerprint = e->cp.device_fingerprint;
		c->file = (struct media_bundle_file){e->cp_member,
		    (int64_t)e->cp.size, e->cp.digest};
	}
	return LQ_OK;
}

static int
cmd_export_exec(const struct cmd_globals *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{"output", required_argument, NULL, 'o'},
		{"checkpoints", no_argument, NULL, 'c'},
		{"sign", optional_argument, NULL, 's'},
		{NULL, 0, NULL, 0},
	};
	const char *out = NULL, *key = NULL;
	int with_cp = 0, sign = 0, ch;
	while ((ch = getopt_long(argc, argv, "o:", opts, NULL)) != -1) {
		switch (ch) {
		case 'o':
			out = optarg;
			break;
		case 'c':
			with_cp = 1;
			break;
		case 's':
			sign = 1;
			key = optarg;
			break;
		default:
			return cmd_misuse(&cmd_export_entry, NULL);
		}
	}
	if (out == NULL)
		return cmd_misuse(&cmd_export_entry, "export needs -o FILE");
	if (optind >= argc)
		return cmd_misuse(&cmd_export_entry, "export needs at least one "
		    "JOB");
	struct lq_error err;
	error_clear(&err);
	struct sign_key sk;
	memset(&sk, 0, sizeof(sk));
	if (sign && sign_load_key(key ? key : SIGN_DEFAULT_NAME, 1, &sk, &err) !=
	    LQ_OK) {
		error_print(&err, stderr);
		return cmd_exit_for_error(&err);
	}
	struct store *st = cmd_open_store(g);
	if (st == NULL) {
		sign_key_clear(&sk);
		return cmd_open_status();
	}
	size_t n = (size_t)(argc - optind);
	struct export_job *ej = xcalloc(n, sizeof(*ej));
	struct media_bundle_job *bj = xcalloc(n, sizeof(*bj));
	enum lq_status s = LQ_OK;
	size_t got = 0;
	for (size_t i = 0; i < n && s == LQ_OK; i++, got++) {
		s = collect(st, argv[optind + i], with_cp, &ej[i], &err);
		for (size_t k = 0; s == LQ_OK && k < i; k++)
			if (ej[k].job.id == ej[i].job.id)
				s = error_set(&err, LQ_FAILED, "LQ-BUNDLE-010", "job %"
				    PRId64 " (%s) is named twice", ej[i].job.id,
				    argv[optind + i]);
		bj[i] = ej[i].bj;
	}
	char *index = NULL, *sig = NULL;
	struct media_bundle_writer *w = NULL;
	if (s == LQ_OK) {
		index = media_bundle_format_index(bj, n);
		if (sign) {
			char d[DIGEST_HEX_SIZE];
			digest_hex(index, strlen(index), d);
			sig = sign_digest_record(&sk, SIGN_CONTEXT_BUNDLE, d);
		}
		s = media_bundle_create(out, &w, &err);
	}
	if (s == LQ_OK)
		s = media_bundle_add_data(w, MEDIA_BUNDLE_INDEX, index,
		    strlen(index), &err);
	if (s == LQ_OK && sig != NULL)
		s = media_bundle_add_data(w, MEDIA_BUNDLE_SIG, sig, strlen(sig),
		    &err);
	for (size_t i = 0; i < n && s == LQ_OK; i++) {
		struct export_job *e = &ej[i];
		for (size_t k = 0; k < e->n_artifacts && s == LQ_OK; k++)
			s = media_bundle_add_file(w, e->artifact_member[k],
			    e->artifacts[k].path, e->artifacts[k].size,
			    e->artifacts[k].digest, &err);
		if (s == LQ_OK && e->has_cp)
			s = media_bundle_add_data(w, e->cp_member, e->cp.latent,
			    e->cp.size, &err);
	}
	if (s == LQ_OK) {
		s = media_bundle_commit(w, &err);
		w = NULL;
	}
	media_bundle_abort(w);
	if (s == LQ_OK && g->verbose >= 0) {
		for (size_t i = 0; i < n; i++) {
			printf("exported %" PRId64 " %s %s", ej[i].job.id,
			    ej[i].job.name, job_state_name(ej[i].job.state));
			if (ej[i].has_cp)
				printf(" checkpoint at step %d", ej[i].cp.step);
			printf(", %zu outputs\n", ej[i].n_artifacts);
		}
		printf("wrote %s%s\n", out, sig != NULL ? " (signed)" : "");
	}
	if (s != LQ_OK)
		error_print(&err, stderr);
	for (size_t i = 0; i < got; i++) {
		free((char *)ej[i].bj.output_path);
		export_job_clear(&ej[i]);
	}
	free(ej);
	free(bj);
	free(index);
	free(sig);
	sign_key_clear(&sk);
	store_close(st);
	return s == LQ_OK ? 0 : cmd_exit_for_error(&err);
}

const struct cmd_entry cmd_export_entry = {
	.name = "export",
	.usage = "[--checkpoints] [--sign[=KEY]] -o FILE JOB...",
	.summary = "write jobs, their outputs and checkpoints into a bundle",
	.exec = cmd_export_exec,
};
