/*
 * verify.c — `latentq verify [--bundle FILE [--key KEY]] VIDEO.mp4`: does
 * this video come from the job it says it comes from?
 *
 * The MP4's latentq_config_digest tag (media.h's provenance) names the
 * job's validated config; the file's BLAKE2b-256 must be an output that a
 * record of that job lists.  With --bundle the record is the bundle's
 * bundle.json, whose Ed25519 signature must verify against KEY (default
 * `default`): only the index is read, not the outputs it carries.  Without
 * it the record is this queue's artifacts table (unsigned: it proves the
 * file is what this queue wrote).
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "core/digest.h"
#include "core/sign.h"
#include "media/bundle.h"
#include "media/media.h"
#include "store/store.h"
#include "store/transfer.h"

struct local_match {
	const char *config_digest;
	int64_t job;
	char *name;
	int other;		/* the bytes are recorded, for another config */
};

static int
local_hit(int64_t job_id, const char *job_name, const char *config_digest,
    const char *path, void *ud)
{
	struct local_match *m = ud;
	if (config_digest != NULL && strcmp(config_digest, m->config_digest) ==
	    0) {
		m->job = job_id;
		m->name = strdup(job_name ? job_name : "");
		return 1;
	}
	m->other = 1;
	return 0;
}

static enum lq_status
verify_bundle(const char *bundle, const char *key, const char *config_digest,
    const char *digest, const char *video, struct lq_error *err)
{
	struct sign_key trusted;
	enum lq_status s = sign_load_key(key ? key : SIGN_DEFAULT_NAME, 0,
	    &trusted, err);
	if (s != LQ_OK)
		return s;
	struct media_bundle_reader *r;
	if ((s = media_bundle_open(bundle, 0, &r, err)) != LQ_OK)
		return s;
	struct media_bundle_index idx;
	char index_digest[DIGEST_HEX_SIZE];
	char *sig = NULL;
	size_t sig_len = 0;
	s = media_bundle_read_head(r, &idx, index_digest, &sig, &sig_len, err);
	media_bundle_close(r);
	if (s != LQ_OK)
		return s;
	if (sig == NULL) {
		s = error_set(err, LQ_FAILED, "LQ-SIGN-004", "%s is not signed; "
		    "verify needs a signed record", bundle);
		error_set_hint(err, "export the job with --sign");
	} else {
		s = sign_verify_record(sig, sig_len, SIGN_CONTEXT_BUNDLE,
		    index_digest, &trusted, NULL, err);
		if (s != LQ_OK)
			error_set_where(err, bundle, 0, 0);
	}
	const struct media_bundle_job *job = NULL;
	const struct media_bundle_artifact *art = NULL;
	for (size_t i = 0; s == LQ_OK && i < idx.n_jobs && art == NULL; i++) {
		if (strcmp(idx.jobs[i].config_digest, config_digest) != 0)
			continue;
		job = &idx.jobs[i];
		for (size_t k = 0; k < job->n_artifacts; k++)
			if (strcmp(job->artifacts[k].file.digest, digest) == 0)
				art = &job->artifacts[k];
	}
	if (s == LQ_OK && job == NULL)
		s = error_set(err, LQ_FAILED, "LQ-VERIFY-002", "%s: no job in %s "
		    "has config digest %.16s…", video, bundle, config_digest);
	else if (s == LQ_OK && art == NULL)
		s = error_set(err, LQ_FAILED, "LQ-VERIFY-003", "%s is not an "
		    "output of job %s in %s: its BLAKE2b-256 %.16s… is none of the "
		    "job's outputs (the video was changed)", video, job->name,
		    bundle, digest);
	if (s == LQ_OK)
		printf("verified: %s is %s of job %s (config %.16s…), signed by "
		    "%.16s… in %s\n", video, art->path, job->name, config_digest,
		    trusted.public_hex, bundle);
	free(sig);
	media_bundle_index_clear(&idx);
	return s;
}

static int
cmd_verify_exec(const struct cmd_globals *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{"bundle", required_argument, NULL, 'b'},
		{"key", required_argument, NULL, 'k'},
		{NULL, 0, NULL, 0},
	};
	const char *bundle = NULL, *key = NULL;
	int ch;
	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (ch == 'b')
			bundle = optarg;
		else if (ch == 'k')
			key = optarg;
		else
			return cmd_misuse(&cmd_verify_entry, NULL);
	}
	if (argc - optind != 1)
		return cmd_misuse(&cmd_verify_entry, "verify takes one VIDEO");
	if (key != NULL && bundle == NULL)
		return cmd_misuse(&cmd_verify_entry, "--key needs --bundle");
	const char *video = argv[optind];
	struct lq_error err;
	error_clear(&err);
	struct media_video v;
	enum lq_status s = media_read_video(video, 0, &v, &err);
	char digest[DIGEST_HEX_SIZE];
	char *config_digest = NULL;
	if (s == LQ_OK) {
		const char *t = media_video_tag(&v, "latentq_config_digest");
		if (t == NULL)
			s = error_set(&err, LQ_FAILED, "LQ-VERIFY-001", "%s has no "
			    "latentq_config_digest tag: latentq did not write it, or "
			    "its tags were stripped", video);
		else
			config_digest = strdup(t);
		media_video_clear(&v);
	}
	if (s == LQ_OK)
		s = digest_file(video, digest, &err);
	if (s == LQ_OK && bundle != NULL) {
		s = verify_bundle(bundle, key, config_digest, digest, video, &err);
	} else if (s == LQ_OK) {
		struct store *st = cmd_open_store(g);
		if (st == NULL) {
			free(config_digest);
			return cmd_open_status();
		}
		struct local_match m = {.config_digest = config_digest};
		s = store_find_artifacts_by_digest(st, digest, local_hit, &m, &err);
		store_close(st);
		if (s == LQ_OK && m.name == NULL)
			s = error_set(&err, LQ_FAILED, m.other ? "LQ-VERIFY-002" :
			    "LQ-VERIFY-003", "%s: %s", video, m.other ?
			    "its bytes are recorded for a job of another config "
			    "than its tag names (the tags were changed)" :
			    "no job in this queue recorded an output with these "
			    "bytes (the video was changed, or comes from elsewhere)");
		if (s == LQ_OK)
			printf("verified: %s is an output of job %" PRId64 " %s "
			    "(config %.16s…) in this queue (unsigned record)\n",
			    video, m.job, m.name, config_digest);
		free(m.name);
	}
	free(config_digest);
	if (s != LQ_OK) {
		error_print(&err, stderr);
		return cmd_exit_for_error(&err);
	}
	return 0;
}

const struct cmd_entry cmd_verify_entry = {
	.name = "verify",
	.usage = "[--bundle FILE [--key KEY]] VIDEO",
	.summary = "check that a video matches a (signed) record of its job",
	.exec = cmd_verify_exec,
};
