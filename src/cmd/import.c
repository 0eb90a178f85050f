/*
 * import.c — `latentq import [--verify KEY] [-C DIR] [--max-member-size N]
 * [--again] FILE`: records the jobs of a bundle (media/bundle.h) in this
 * queue.
 *
 * Nothing is recorded until every member has been read, checked by the
 * reader's rules, and found to have the size and BLAKE2b-256 the index
 * lists; with --verify the index's signature must come from KEY.  Members
 * are staged in DIR/.latentq-import.XXXXXX and moved to their places only
 * inside the transaction that records the jobs, so a refused or failed
 * import leaves the queue and DIR as they were.
 *
 * Each job's outputs go to DIR/PATH (PATH as relative to the manifest's
 * folder on the exporting host) and the job's request records
 * DIR/<manifest name> as its manifest, so a resumed render writes where
 * the outputs are.  A job whose config digest is already queued, running
 * or done here is skipped (as submit does) unless --again.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cmd/cmd.h"
#include "core/digest.h"
#include "core/json.h"
#include "core/log.h"
#include "core/sign.h"
#include "core/util.h"
#include "manifest/job.h"
#include "model/ref.h"
#include "media/bundle.h"
#include "store/checkpoints.h"
#include "store/transfer.h"
#include "store/jobs.h"
#include "store/store.h"

/* A member staged on disk. */
struct staged {
	const struct media_bundle_file *file;	/* borrowed from the index */
	char *path;				/* in the staging folder */
	char *dest;				/* final place, or NULL */
	int installed;
};

struct import_ctx {
	const char *bundle;
	char *dir;			/* absolute destination folder */
	char *staging;
	struct media_bundle_index idx;
	struct staged *staged;
	size_t n_staged;
	int *skip;			/* per job: already here */
};

static struct staged *
find_staged(struct import_ctx *c, const char *member)
{
	for (size_t i = 0; i < c->n_staged; i++)
		if (strcmp(c->staged[i].file->member, member) == 0)
			return &c->staged[i];
	return NULL;
}

static void
ctx_clear(struct import_ctx *c)
{
	for (size_t i = 0; i < c->n_staged; i++) {
		if (!c->staged[i].installed)
			unlink(c->staged[i].path);
		free(c->staged[i].path);
		free(c->staged[i].dest);
	}
	free(c->staged);
	if (c->staging != NULL)
		rmdir(c->staging);
	free(c->staging);
	free(c->dir);
	free(c->skip);
	media_bundle_index_clear(&c->idx);
}

/* Pass 1: read and check every member; stage the files. */
static enum lq_status
read_bundle(struct import_ctx *c, int64_t max_member, const char *verify,
    struct lq_error *err)
{
	struct media_bundle_reader *r;
	enum lq_status s = media_bundle_open(c->bundle, max_member, &r, err);
	if (s != LQ_OK)
		return s;
	const char *name;
	int64_t size;
	int done;
	char *sig = NULL;
	size_t sig_len = 0;
	char index_digest[DIGEST_HEX_SIZE];
	if ((s = media_bundle_read_head(r, &c->idx, index_digest, &sig,
	    &sig_len, err)) != LQ_OK)
		goto out;
	c->staged = xcalloc(c->idx.n_jobs * 64 + 16, sizeof(*c->staged));
	size_t cap = c->idx.n_jobs * 64 + 16;
	for (;;) {
		if ((s = media_bundle_next(r, &name, &size, &done, err)) != LQ_OK ||
		    done)
			break;
		const struct media_bundle_file *f =
		    media_bundle_find_member(&c->idx, name);
		if (f == NULL) {
			s = error_set(err, LQ_FAILED, "LQ-BUNDLE-005", "%s: member "
			    "\"%s\" is refused: bundle.json does not list it",
			    c->bundle, name);
			break;
		}
		if (size != f->size) {
			s = error_set(err, LQ_FAILED, "LQ-BUNDLE-005", "%s: member %s "
			    "holds %" PRId64 " bytes; bundle.json lists %" PRId64,
			    c->bundle, name, size, f->size);
			break;
		}
		if (c->n_staged == cap) {
			cap *= 2;
			c->staged = xrealloc(c->staged, cap * sizeof(*c->staged));
		}
		struct staged *sg = &c->staged[c->n_staged];
		memset(sg, 0, sizeof(*sg));
		sg->file = f;
		sg->path = xasprintf("%s/%zu", c->staging, c->n_staged);
		char hex[DIGEST_HEX_SIZE];
		if ((s = media_bundle_extract(r, sg->path, hex, err)) != LQ_OK) {
			free(sg->path);
			break;
		}
		c->n_staged++;
		if (strcmp(hex, f->digest) != 0) {
			s = error_set(err, LQ_FAILED, "LQ-BUNDLE-005", "%s: member %s "
			    "has BLAKE2b-256 %.16s…, bundle.json lists %.16s… (the "
			    "member was changed)", c->bundle, name, hex, f->digest);
			break;
		}
	}
	if (s != LQ_OK)
		goto out;
	/* every listed file arrived */
	for (size_t i = 0; i < c->idx.n_jobs && s == LQ_OK; i++) {
		const struct media_bundle_job *j = &c->idx.jobs[i];
		for (size_t k = 0; k < j->n_artifacts + (size_t)j->has_checkpoint;
		    k++) {
			const char *m = k < j->n_artifacts ?
			    j->artifacts[k].file.member : j->checkpoint.file.member;
			if (find_staged(c, m) == NULL) {
				s = error_set(err, LQ_FAILED, "LQ-BUNDLE-011", "%s: "
				    "member %s, listed in bundle.json, is missing",
				    c->bundle, m);
				break;
			}
		}
	}
	if (s != LQ_OK)
		goto out;
	if (sig != NULL || verify != NULL) {
		struct sign_key trusted;
		memset(&trusted, 0, sizeof(trusted));
		if (verify != NULL && (s = sign_load_key(verify, 0, &trusted, err)) !=
		    LQ_OK)
			goto out;
		if (sig == NULL) {
			s = error_set(err, LQ_FAILED, "LQ-SIGN-004", "%s is not "
			    "signed (no %s member)", c->bundle, MEDIA_BUNDLE_SIG);
			error_set_hint(err, "export it with --sign, or import "
			    "without --verify");
			goto out;
		}
		char signer[SIGN_PUBLIC_HEX_SIZE];
		s = sign_verify_record(sig, sig_len, SIGN_CONTEXT_BUNDLE,
		    index_digest, verify != NULL ? &trusted : NULL, signer, err);
		if (s != LQ_OK) {
			error_set_where(err, c->bundle, 0, 0);
			goto out;
		}
		if (verify == NULL)
			log_warn("%s is signed by key %.16s…, not checked against a "
			    "trusted key (use --verify KEY)", c->bundle, signer);
		else
			log_info("%s: signature by %.16s… verified", c->bundle,
			    signer);
	}
out:
	free(sig);
	media_bundle_close(r);
	return s;
}

static enum lq_status
dest_for(struct import_ctx *c, const char *rel, char **out,
    struct lq_error *err)
{
	*out = xasprintf("%s/%s", c->dir, rel);
	return LQ_OK;
}

/* Checks a staged file's destination: absent, or the same bytes. */
static enum lq_status
check_dest(struct staged *sg, struct lq_error *err)
{
	struct stat sb;
	if (lstat(sg->dest, &sb) != 0)
		return LQ_OK;
	char hex[DIGEST_HEX_SIZE];
	if (S_ISREG(sb.st_mode) && digest_file(sg->dest, hex, err) == LQ_OK &&
	    strcmp(hex, sg->file->digest) == 0) {
		sg->installed = 0;
		free(sg->dest);
		sg->dest = NULL;	/* already there */
		return LQ_OK;
	}
	error_set(err, LQ_FAILED, "LQ-BUNDLE-008", "%s already exists with "
	    "other content; import does not overwrite files", sg->dest);
	error_set_hint(err, "import into another folder with -C DIR, or move "
	    "the file away");
	return LQ_FAILED;
}

static enum lq_status
record_job(struct store *st, struct import_ctx *c, size_t i,
    int64_t *new_id, struct lq_error *err)
{
	const struct media_bundle_job *j = &c->idx.jobs[i];
	enum job_state state;
	if (job_state_parse(j->state, &state) != 0) {
		error_set(err, LQ_FAILED, "LQ-BUNDLE-004", "bundle.json: \"%s\" "
		    "is not a job state", j->state);
		error_set_field(err, "jobs[%zu].state", i);
		return LQ_FAILED;
	}
	char *mp = xstrdup(j->manifest_path);
	char *manifest = xasprintf("%s/%s", c->dir, basename(mp));
	free(mp);
	struct store_request req = {
		.manifest_path = manifest, .manifest_digest = j->manifest_digest,
		.entry_index = j->entry_index, .line = j->line,
		.request_json = j->request_json,
	};
	int64_t rid;
	enum lq_status s = store_add_request(st, &req, &rid, err);
	free(manifest);
	if (s != LQ_OK)
		return s;
	char *output = NULL;
	if (j->output_path != NULL) {
		if (media_bundle_check_name(j->output_path) != NULL) {
			error_set(err, LQ_FAILED, "LQ-BUNDLE-004", "bundle.json: "
			    "output_path is refused: %s",
			    media_bundle_check_name(j->output_path));
			error_set_field(err, "jobs[%zu].output_path", i);
			return LQ_FAILED;
		}
		dest_for(c, j->output_path, &output, err);
	}
	struct store_job_import ji = {
		.request_id = rid, .name = j->name, .state = state,
		.config_json = j->config_json, .config_digest = j->config_digest,
		.model_digests = j->model_digests, .priority = j->priority,
		.max_attempts = j->max_attempts, .attempts = j->attempts,
		.step = j->has_checkpoint ? j->checkpoint.step :
		    (state == JOB_STATE_DONE ? j->step : 0),
		.total_steps = j->total_steps, .phase = j->phase,
		.error_code = j->error_code, .error_message = j->error_message,
		.output_path = output, .created_at = j->created_at,
		.finished_at = j->finished_at,
	};
	s = store_import_job(st, &ji, new_id, err);
	free(output);
	if (s != LQ_OK)
		return s;
	for (const cJSON *e = j->events->child; e != NULL && s == LQ_OK;
	    e = e->next)
		s = store_import_event(st, *new_id, json_get_number(e, "at", 0),
		    json_get_string(e, "kind", ""),
		    json_get_string(e, "detail", NULL), err);
	if (s != LQ_OK)
		return s;
	cJSON *d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "bundle", c->bundle);
	cJSON_AddNumberToObject(d, "job", (double)j->id);
	cJSON_AddStringToObject(d, "state", j->state);
	if (j->has_checkpoint)
		cJSON_AddNumberToObject(d, "checkpoint_step", j->checkpoint.step);
	char *dt = json_canonical(d);
	cJSON_Delete(d);
	s = store_add_event(st, *new_id, "imported", dt, err);
	free(dt);
	for (size_t k = 0; k < j->n_artifacts && s == LQ_OK; k++) {
		const struct media_bundle_artifact *a = &j->artifacts[k];
		char *path;
		dest_for(c, a->path, &path, err);
		s = store_add_artifact(st, *new_id, a->kind, path, a->file.size,
		    a->file.digest, err);
		free(path);
	}
	if (s != LQ_OK || !j->has_checkpoint)
		return s;
	const struct media_bundle_checkpoint *ck = &j->checkpoint;
	struct staged *sg = find_staged(c, ck->file.member);
	size_t size = 0;
	char *blob = util_read_file(sg->path, &size);
	if (blob == NULL)
		return error_set(err, LQ_FAILED, "LQ-BUNDLE-007", "cannot read "
		    "staged %s: %s", sg->path, strerror(errno));
	struct store_checkpoint_new cp = {
		.job_id = *new_id, .step = ck->step, .sigma = ck->sigma,
		.dtype = ck->dtype, .ndim = ck->ndim, .shape = ck->shape,
		.latent = blob, .size = size, .config_digest = ck->config_digest,
		.model_digest = ck->model_digest,
		.device_fingerprint = ck->device_fingerprint,
	};
	char got[DIGEST_HEX_SIZE];
	s = store_save_checkpoint(st, &cp, 0, got, err);
	free(blob);
	if (s == LQ_OK && strcmp(got, ck->file.digest) != 0)
		s = error_set(err, LQ_FAILED, "LQ-BUNDLE-005", "checkpoint of %s "
		    "changed while it was recorded", j->name);
	return s;
}

/* Moves the staged outputs of the jobs being recorded into place. */
static enum lq_status
install(struct import_ctx *c, struct lq_error *err)
{
	for (size_t i = 0; i < c->n_staged; i++) {
		struct staged *sg = &c->staged[i];
		if (sg->dest == NULL)
			continue;
		char *failed = NULL;
		char *dir = xstrdup(sg->dest);
		char *slash = strrchr(dir, '/');
		*slash = '\0';
		int rc = util_mkdir_p(dir, 0755, &failed);
		free(dir);
		if (rc != 0) {
			error_set(err, LQ_FAILED, "LQ-BUNDLE-007", "cannot create "
			    "folder %s: %s", failed, strerror(errno));
			free(failed);
			return LQ_FAILED;
		}
		/* link(2) refuses to replace a file that appeared meanwhile */
		if (link(sg->path, sg->dest) != 0)
			return error_set(err, LQ_FAILED, "LQ-BUNDLE-007", "cannot "
			    "place %s: %s", sg->dest, strerror(errno));
		sg->installed = 1;
		unlink(sg->path);
	}
	return LQ_OK;
}

static void
uninstall(struct import_ctx *c)
{
	for (size_t i = 0; i < c->n_staged; i++)
		if (c->staged[i].installed && c->staged[i].dest != NULL) {
			unlink(c->staged[i].dest);
			c->staged[i].installed = 0;
		}
}

/* A warning when a job's model folder is not on this host. */
static void
check_model(const struct media_bundle_job *j)
{
	cJSON *cfg = cJSON_Parse(j->config_json);
	struct job_config jc;
	struct lq_error err;
	error_clear(&err);
	const char *m = job_config_from_json(cfg, &jc, &err) == LQ_OK
	    ? jc.model : NULL;
	struct stat sb;
	/* a registered name resolves on this host; a path must exist here */
	if (m != NULL && model_ref_is_path(m) && stat(m, &sb) != 0)
		log_warn("job %s: its model folder %s is not on this host; the "
		    "render fails until it is (same files: their digest is "
		    "pinned)", j->name, m);
	job_config_free(&jc);
	cJSON_Delete(cfg);
}

static int
cmd_import_exec(const struct cmd_globals *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{"verify", required_argument, NULL, 'k'},
		{"directory", required_argument, NULL, 'C'},
		{"max-member-size", required_argument, NULL, 'm'},
		{"again", no_argument, NULL, 'a'},
		{NULL, 0, NULL, 0},
	};
	const char *verify = NULL, *dir = ".";
	int64_t max_member = MEDIA_BUNDLE_MEMBER_MAX;
	int again = 0, ch;
	while ((ch = getopt_long(argc, argv, "C:", opts, NULL)) != -1) {
		switch (ch) {
		case 'k':
			verify = optarg;
			break;
		case 'C':
			dir = optarg;
			break;
		case 'm': {
			char *end;
			errno = 0;
			long long v = strtoll(optarg, &end, 10);
			if (errno != 0 || *end != '\0' || v <= 0)
				return cmd_misuse(&cmd_import_entry, "--max-member-size "
				    "%s: not a positive number of bytes", optarg);
			max_member = v;
			break;
		}
		case 'a':
			again = 1;
			break;
		default:
			return cmd_misuse(&cmd_import_entry, NULL);
		}
	}
	if (argc - optind != 1)
		return cmd_misuse(&cmd_import_entry, "import takes one FILE");
	struct import_ctx c;
	memset(&c, 0, sizeof(c));
	c.bundle = argv[optind];
	struct lq_error err;
	error_clear(&err);
	char *failed = NULL;
	char real[PATH_MAX];
	if (util_mkdir_p(dir, 0755, &failed) != 0 || realpath(dir, real) ==
	    NULL) {
		error_set(&err, LQ_FAILED, "LQ-BUNDLE-007", "cannot use folder "
		    "%s: %s", failed ? failed : dir, strerror(errno));
		free(failed);
		error_print(&err, stderr);
		return cmd_exit_for_error(&err);
	}
	c.dir = xstrdup(real);
	c.staging = xasprintf("%s/.latentq-import.XXXXXX", c.dir);
	if (mkdtemp(c.staging) == NULL) {
		error_set(&err, LQ_FAILED, "LQ-BUNDLE-007", "cannot create a "
		    "staging folder in %s: %s", c.dir, strerror(errno));
		free(c.staging);
		c.staging = NULL;
		ctx_clear(&c);
		error_print(&err, stderr);
		return cmd_exit_for_error(&err);
	}
	enum lq_status s = read_bundle(&c, max_member, verify, &err);
	struct store *st = NULL;
	if (s == LQ_OK && (st = cmd_open_store(g)) == NULL) {
		ctx_clear(&c);
		return cmd_open_status();
	}
	c.skip = xcalloc(c.idx.n_jobs + 1, sizeof(int));
	int64_t *ids = xcalloc(c.idx.n_jobs + 1, sizeof(int64_t));
	/* Which jobs are new here, found inside the transaction that records
	 * them (store_find_live_job then keeps other submitters and importers
	 * of the same config out until COMMIT), and where their files go. */
	int began = 0;
	if (s == LQ_OK && (s = store_begin(st, &err)) == LQ_OK)
		began = 1;
	for (size_t i = 0; s == LQ_OK && i < c.idx.n_jobs; i++) {
		const struct media_bundle_job *j = &c.idx.jobs[i];
		int64_t existing = 0;
		enum job_state es;
		if (!again && (s = store_find_live_job(st, j->config_digest,
		    &existing, &es, &err)) != LQ_OK)
			break;
		if (existing != 0) {
			c.skip[i] = 1;
			ids[i] = existing;
			continue;
		}
		for (size_t k = 0; k < j->n_artifacts && s == LQ_OK; k++) {
			struct staged *sg = find_staged(&c, j->artifacts[k].file.member);
			dest_for(&c, j->artifacts[k].path, &sg->dest, &err);
			for (size_t q = 0; q < c.n_staged; q++)
				if (&c.staged[q] != sg && c.staged[q].dest != NULL &&
				    strcmp(c.staged[q].dest, sg->dest) == 0)
					s = error_set(&err, LQ_FAILED, "LQ-BUNDLE-008",
					    "two outputs of the bundle go to %s", sg->dest);
			if (s == LQ_OK)
				s = check_dest(sg, &err);
		}
	}
	for (size_t i = 0; s == LQ_OK && i < c.idx.n_jobs; i++)
		if (!c.skip[i])
			s = record_job(st, &c, i, &ids[i], &err);
	if (s == LQ_OK)
		s = install(&c, &err);
	if (s == LQ_OK)
		s = store_commit(st, &err);
	if (s != LQ_OK && began) {
		store_rollback(st);
		uninstall(&c);
	}
	if (s == LQ_OK && g->verbose >= 0) {
		for (size_t i = 0; i < c.idx.n_jobs; i++) {
			const struct media_bundle_job *j = &c.idx.jobs[i];
			if (c.skip[i]) {
				printf("already   %-6" PRId64 " %s (--again imports it "
				    "anew)\n", ids[i], j->name);
				continue;
			}
			printf("imported  %-6" PRId64 " %s %s", ids[i], j->name,
			    strcmp(j->state, "running") == 0 ? "queued" : j->state);
			if (j->has_checkpoint)
				printf(" (resumes after step %d)", j->checkpoint.step);
			printf("\n");
			check_model(j);
		}
	}
	if (s != LQ_OK)
		error_print(&err, stderr);
	free(ids);
	ctx_clear(&c);
	if (st != NULL)
		store_close(st);
	return s == LQ_OK ? 0 : cmd_exit_for_error(&err);
}

const struct cmd_entry cmd_import_entry = {
	.name = "import",
	.usage = "[--verify KEY] [-C DIR] [--max-member-size BYTES] [--again] "
	    "FILE",
	.summary = "record the jobs of a bundle in this queue",
	.creates_db = 1,
	.exec = cmd_import_exec,
};
