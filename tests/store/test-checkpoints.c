/*
 * test-checkpoints.c — latent checkpoints and artifacts in the queue
 * database: round trip, pruning to the newest K, a corrupted blob skipped
 * for the previous checkpoint, mismatches refused (and --resume-anywhere
 * recorded), artifacts with digests, writes fenced by the lease.  Corruption is injected with SQL
 * through the store's internal header, as only store code may.
 */
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/digest.h"
#include "core/file.h"
#include "core/util.h"
#include "store/checkpoints.h"
#include "store/jobs.h"
#include "store/store-int.h"
#include "test.h"

static char dir[] = "/tmp/lq-test-ckpt-XXXXXX";
static const int64_t shape[3] = { 1, 16, 8 };
#define NFLOAT (1 * 16 * 8)

static const char CONFIG[] = "cfg-digest", MODEL[] = "model-digest",
    DEVICE[] = "lavapipe:uuid-1";

static int64_t
add_job(struct store *st, const char *name)
{
	struct lq_error err;
	error_clear(&err);
	struct store_request req = { "m.yaml", "d", 0, 1, "{}" };
	int64_t rid = 0, jid = 0;
	CHECK_INT(store_add_request(st, &req, &rid, &err), LQ_OK);
	struct store_job_new j = {
		.request_id = rid, .name = name, .state = JOB_STATE_QUEUED,
		.config_json = "{}", .config_digest = CONFIG,
		.max_attempts = 3, .total_steps = 8,
	};
	CHECK_INT(store_add_job(st, &j, &jid, &err), LQ_OK);
	return jid;
}

static void
fill(float *x, int step)
{
	for (int i = 0; i < NFLOAT; i++)
		x[i] = (float)step + 0.25f * (float)i;
}

static enum lq_status
save(struct store *st, int64_t job, int step, int keep, char *digest)
{
	float x[NFLOAT];
	fill(x, step);
	struct store_checkpoint_new cp = {
		.job_id = job, .step = step, .sigma = 1.0 - step / 10.0,
		.dtype = "F32", .ndim = 3, .shape = shape, .latent = x,
		.size = sizeof(x), .config_digest = CONFIG,
		.model_digest = MODEL, .device_fingerprint = DEVICE,
	};
	struct lq_error err;
	error_clear(&err);
	enum lq_status r = store_save_checkpoint(st, &cp, keep, digest, &err);
	if (r != LQ_OK)
		error_print(&err, stderr);
	return r;
}

struct steps {
	int n, step[16];
};

static int
collect_step(const struct store_checkpoint *cp, void *ud)
{
	struct steps *s = ud;
	if (s->n < 16)
		s->step[s->n++] = cp->step;
	return 0;
}

static struct steps
steps_of(struct store *st, int64_t job)
{
	struct steps s = { 0 };
	struct lq_error err;
	error_clear(&err);
	CHECK_INT(store_list_checkpoints(st, job, collect_step, &s, &err),
	    LQ_OK);
	return s;
}

static int
count_kind(double at, const char *kind, const char *detail, void *ud)
{
	(void)at;
	const char **want = ud;
	if (strcmp(kind, want[0]) == 0) {
		want[1] = (const char *)((intptr_t)want[1] + 1);
		if (detail != NULL)
			snprintf((char *)want[2], 512, "%s", detail);
	}
	return 0;
}

/* Number of events of a kind; *last gets the last one's detail. */
static int
events_of(struct store *st, int64_t job, const char *kind, char last[512])
{
	const char *want[3] = { kind, (const char *)0, last };
	struct lq_error err;
	error_clear(&err);
	last[0] = '\0';
	CHECK_INT(store_list_events(st, job, count_kind, want, &err), LQ_OK);
	return (int)(intptr_t)want[1];
}

static void
test_round_trip(struct store *st)
{
	int64_t job = add_job(st, "rt");
	char digest[DIGEST_HEX_SIZE] = "";
	for (int step = 1; step <= 5; step++)
		CHECK_INT(save(st, job, step, 0, digest), LQ_OK);
	float want[NFLOAT];
	fill(want, 5);
	char want_digest[DIGEST_HEX_SIZE];
	digest_hex(want, sizeof(want), want_digest);
	CHECK_STR(digest, want_digest);

	struct store_resume_key key = { CONFIG, MODEL, DEVICE, 0 };
	struct store_checkpoint cp;
	int found = -1, skipped = -1;
	struct lq_error err;
	error_clear(&err);
	CHECK_INT(store_load_checkpoint(st, job, &key, &cp, &found, &skipped,
	    &err), LQ_OK);
	CHECK_INT(found, 1);
	CHECK_INT(skipped, 0);
	CHECK_INT(cp.job_id, job);
	CHECK_INT(cp.step, 5);
	CHECK_NEAR(cp.sigma, 0.5, 0);
	CHECK_STR(cp.dtype, "F32");
	CHECK_INT(cp.ndim, 3);
	CHECK_INT(cp.shape[0], 1);
	CHECK_INT(cp.shape[1], 16);
	CHECK_INT(cp.shape[2], 8);
	CHECK_INT(cp.size, sizeof(want));
	CHECK(cp.latent != NULL && memcmp(cp.latent, want, sizeof(want)) == 0);
	CHECK_STR(cp.digest, want_digest);
	CHECK_STR(cp.config_digest, CONFIG);
	CHECK_STR(cp.model_digest, MODEL);
	CHECK_STR(cp.device_fingerprint, DEVICE);
	CHECK(cp.created_at > 1e9);
	store_checkpoint_clear(&cp);

	struct steps s = steps_of(st, job);
	CHECK_INT(s.n, 5);
	CHECK_INT(s.step[0], 5);
	CHECK_INT(s.step[4], 1);

	/* No checkpoints: found 0, not an error. */
	int64_t empty = add_job(st, "empty");
	CHECK_INT(store_load_checkpoint(st, empty, &key, &cp, &found, NULL,
	    &err), LQ_OK);
	CHECK_INT(found, 0);
	CHECK(cp.latent == NULL);

	/* A blob that does not fit its shape is refused; nothing saved. */
	float x[NFLOAT];
	fill(x, 6);
	struct store_checkpoint_new bad = {
		.job_id = job, .step = 6, .sigma = 0.4, .dtype = "F32",
		.ndim = 3, .shape = shape, .latent = x, .size = sizeof(x) - 4,
		.config_digest = CONFIG, .model_digest = MODEL,
		.device_fingerprint = DEVICE,
	};
	error_clear(&err);
	CHECK_INT(store_save_checkpoint(st, &bad, 0, NULL, &err), LQ_FAILED);
	CHECK_STR(err.code, "LQ-CKPT-005");
	CHECK_CONTAINS(err.message, "[1,16,8]");
	CHECK_INT(steps_of(st, job).n, 5);

	/* The save joins an outer transaction: rolled back with it. */
	error_clear(&err);
	CHECK_INT(store_begin(st, &err), LQ_OK);
	CHECK_INT(save(st, job, 6, 0, NULL), LQ_OK);
	store_rollback(st);
	CHECK_INT(steps_of(st, job).step[0], 5);

	/* Survives closing the database. */
	char *path = xstrdup(store_path(st));
	store_close(st);
	CHECK_INT(store_open(path, &st, &err), LQ_OK);
	CHECK_INT(store_load_checkpoint(st, job, &key, &cp, &found, NULL,
	    &err), LQ_OK);
	CHECK_INT(cp.step, 5);
	store_checkpoint_clear(&cp);

	CHECK_INT(store_delete_checkpoints(st, job, &err), LQ_OK);
	CHECK_INT(steps_of(st, job).n, 0);
	store_close(st);
	free(path);
}

static void
test_pruning(struct store *st)
{
	int64_t job = add_job(st, "prune");
	for (int step = 1; step <= 6; step++)
		CHECK_INT(save(st, job, step, 2, NULL), LQ_OK);
	struct steps s = steps_of(st, job);
	CHECK_INT(s.n, 2);
	CHECK_INT(s.step[0], 6);
	CHECK_INT(s.step[1], 5);

	/* keep = 1 after the fact prunes down further. */
	CHECK_INT(save(st, job, 7, 1, NULL), LQ_OK);
	s = steps_of(st, job);
	CHECK_INT(s.n, 1);
	CHECK_INT(s.step[0], 7);

	/* Saving an earlier step drops the abandoned later ones. */
	int64_t job2 = add_job(st, "trajectory");
	for (int step = 1; step <= 5; step++)
		CHECK_INT(save(st, job2, step, 0, NULL), LQ_OK);
	CHECK_INT(save(st, job2, 3, 0, NULL), LQ_OK);
	s = steps_of(st, job2);
	CHECK_INT(s.n, 3);
	CHECK_INT(s.step[0], 3);
	CHECK_INT(s.step[2], 1);

	/* Pruning is per job: the other job kept all of its own. */
	CHECK_INT(steps_of(st, job).n, 1);
}

static void
test_corrupt(struct store *st)
{
	int64_t job = add_job(st, "corrupt");
	for (int step = 1; step <= 4; step++)
		CHECK_INT(save(st, job, step, 0, NULL), LQ_OK);
	struct lq_error err;
	error_clear(&err);
	char *sql = xasprintf("UPDATE checkpoints SET latent = "
	    "zeroblob(length(latent)) WHERE job_id = %lld AND step = 4",
	    (long long)job);
	CHECK_INT(store_exec(st, sql, &err), LQ_OK);
	free(sql);

	struct store_resume_key key = { CONFIG, MODEL, DEVICE, 0 };
	struct store_checkpoint cp;
	int found = 0, skipped = 0;
	CHECK_INT(store_load_checkpoint(st, job, &key, &cp, &found, &skipped,
	    &err), LQ_OK);
	CHECK_INT(found, 1);
	CHECK_INT(skipped, 1);
	CHECK_INT(cp.step, 3);
	float want[NFLOAT];
	fill(want, 3);
	CHECK(cp.latent != NULL && memcmp(cp.latent, want, sizeof(want)) == 0);
	store_checkpoint_clear(&cp);
	char detail[512];
	CHECK_INT(events_of(st, job, "checkpoint_corrupt", detail), 1);
	CHECK_CONTAINS(detail, "\"step\":4");

	/* Resuming from 3 and saving 4 again replaces the corrupt one. */
	CHECK_INT(save(st, job, 4, 0, NULL), LQ_OK);
	CHECK_INT(store_load_checkpoint(st, job, &key, &cp, &found, &skipped,
	    &err), LQ_OK);
	CHECK_INT(cp.step, 4);
	CHECK_INT(skipped, 0);
	store_checkpoint_clear(&cp);

	/* An unreadable shape counts as corrupt too; all bad → none found. */
	sql = xasprintf("UPDATE checkpoints SET shape = 'x' WHERE job_id = "
	    "%lld AND step = 4; UPDATE checkpoints SET latent = x'00' WHERE "
	    "job_id = %lld AND step < 4", (long long)job, (long long)job);
	CHECK_INT(store_exec(st, sql, &err), LQ_OK);
	free(sql);
	CHECK_INT(store_load_checkpoint(st, job, &key, &cp, &found, &skipped,
	    &err), LQ_OK);
	CHECK_INT(found, 0);
	CHECK_INT(skipped, 4);
	CHECK(cp.latent == NULL);
	CHECK_INT(events_of(st, job, "checkpoint_corrupt", detail), 5);
	CHECK_CONTAINS(detail, "\"step\":1");
}

static void
test_mismatch(struct store *st)
{
	int64_t job = add_job(st, "mismatch");
	for (int step = 1; step <= 3; step++)
		CHECK_INT(save(st, job, step, 2, NULL), LQ_OK);
	struct store_checkpoint cp;
	int found = -1;
	struct lq_error err;

	/* A changed model is refused, naming both digests. */
	struct store_resume_key key = { CONFIG, "other-model", DEVICE, 1 };
	error_clear(&err);
	CHECK_INT(store_load_checkpoint(st, job, &key, &cp, &found, NULL,
	    &err), LQ_FAILED);
	CHECK_STR(err.code, "LQ-CKPT-003");
	CHECK_CONTAINS(err.message, "model-digest");
	CHECK_CONTAINS(err.message, "other-model");
	CHECK_INT(found, 0);
	CHECK(cp.latent == NULL);

	key = (struct store_resume_key){ "other-cfg", MODEL, DEVICE, 1 };
	error_clear(&err);
	CHECK_INT(store_load_checkpoint(st, job, &key, &cp, &found, NULL,
	    &err), LQ_FAILED);
	CHECK_STR(err.code, "LQ-CKPT-002");

	/* Another device: refused, unless resume_anywhere (recorded). */
	key = (struct store_resume_key){ CONFIG, MODEL, "nvidia:uuid-2", 0 };
	error_clear(&err);
	CHECK_INT(store_load_checkpoint(st, job, &key, &cp, &found, NULL,
	    &err), LQ_FAILED);
	CHECK_STR(err.code, "LQ-CKPT-004");
	CHECK_CONTAINS(err.message, DEVICE);
	CHECK_CONTAINS(err.message, "nvidia:uuid-2");
	CHECK_CONTAINS(err.hint, "--resume-anywhere");
	char detail[512];
	CHECK_INT(events_of(st, job, "resume_anywhere", detail), 0);

	key.resume_anywhere = 1;
	error_clear(&err);
	CHECK_INT(store_load_checkpoint(st, job, &key, &cp, &found, NULL,
	    &err), LQ_OK);
	CHECK_INT(found, 1);
	CHECK_INT(cp.step, 3);
	store_checkpoint_clear(&cp);
	CHECK_INT(events_of(st, job, "resume_anywhere", detail), 1);
	CHECK_CONTAINS(detail, "\"checkpoint_device\":\"lavapipe:uuid-1\"");
	CHECK_CONTAINS(detail, "\"device\":\"nvidia:uuid-2\"");
}

static int
collect_artifact(const struct store_artifact *a, void *ud)
{
	struct store_artifact *out = ud;
	int i = 0;
	while (out[i].path != NULL)
		i++;
	if (i < 3) {
		out[i] = *a;
		out[i].kind = xstrdup(a->kind);
		out[i].path = xstrdup(a->path);
	}
	return 0;
}

/* Writes text into a fresh temporary for path (file_open_temp). */
static void
temp_with(const char *path, const char *text, struct file_temp *t)
{
	struct lq_error err;
	error_clear(&err);
	CHECK_INT(file_open_temp(path, ".part", "LQ-TEST", t, &err), LQ_OK);
	CHECK(write(t->fd, text, strlen(text)) == (ssize_t)strlen(text));
}

static void
test_artifacts(struct store *st)
{
	int64_t job = add_job(st, "artifacts");
	struct lq_error err;
	error_clear(&err);
	char *path = xasprintf("%s/out.mp4", dir);
	const char *text = "not really a video";
	char digest[DIGEST_HEX_SIZE] = "", want[DIGEST_HEX_SIZE] = "";
	digest_hex(text, strlen(text), want);

	CHECK_INT(store_add_artifact(st, job, "png", "/x/frame_0001.png", 10,
	    "d1", &err), LQ_OK);
	struct file_temp t;
	temp_with(path, text, &t);
	CHECK_INT(store_commit_artifact(st, job, "mp4", &t, "LQ-TEST", digest,
	    &err), LQ_OK);
	CHECK(access(t.tmp, F_OK) != 0);	/* renamed, not copied */
	file_discard_temp(&t);
	CHECK_STR(digest, want);
	char disk[DIGEST_HEX_SIZE];
	CHECK_INT(digest_file(path, disk, &err), LQ_OK);
	CHECK_STR(disk, want);
	/* A retry rewrites the file: same path, one row. */
	temp_with(path, text, &t);
	CHECK_INT(store_commit_artifact(st, job, "mp4", &t, "LQ-TEST", NULL,
	    &err), LQ_OK);
	file_discard_temp(&t);

	struct store_artifact got[4];
	memset(got, 0, sizeof(got));
	CHECK_INT(store_list_artifacts(st, job, collect_artifact, got, &err),
	    LQ_OK);
	CHECK_STR(got[0].kind, "png");
	CHECK_INT(got[0].size, 10);
	CHECK_STR(got[0].digest, "d1");
	CHECK_STR(got[1].kind, "mp4");
	CHECK_STR(got[1].path, path);
	CHECK_INT(got[1].size, strlen(text));
	CHECK_STR(got[1].digest, want);
	CHECK(got[2].path == NULL);
	for (int i = 0; i < 3; i++)
		store_artifact_clear(&got[i]);
	free(path);
}

/*
 * Fencing (jobs.h): a handle bound to a claim writes the job's records
 * while the claim is current, and nothing at all once another claim took
 * the job — no checkpoint, no artifact (the file is not renamed), no
 * progress, no event, no done.
 */
static void
test_fence(struct store *st)
{
	struct lq_error err;
	error_clear(&err);
	int64_t job = add_job(st, "fenced");
	struct store_job j;
	int claimed = 0;
	int64_t only[1] = { job };
	CHECK_INT(store_claim_job(st, "host:1:1", 60, only, 1, &j, &claimed,
	    &err), LQ_OK);
	CHECK_INT(claimed, 1);
	CHECK(j.lease_token >= 1);
	struct store_lease lease = { job, "host:1:1", j.lease_token };
	store_hold_lease(st, &lease);
	CHECK_INT(save(st, job, 1, 0, NULL), LQ_OK);
	CHECK_INT(store_set_progress(st, job, "denoise", 1, 8, &err), LQ_OK);

	/* Another worker takes the job over (its lease was reaped). */
	char *sql = xasprintf("UPDATE jobs SET lease_owner = 'other:2:2', "
	    "lease_token = lease_token + 1 WHERE id = %lld", (long long)job);
	CHECK_INT(store_exec(st, sql, &err), LQ_OK);
	free(sql);
	int events = 0;
	struct store_stmt *s = store_prepare(st, "SELECT count(*) FROM events", &err);
	CHECK_INT(store_step(s), STORE_ROW);
	events = store_column_int(s, 0);
	store_finalize(s);

	float x[NFLOAT];
	fill(x, 2);
	struct store_checkpoint_new cp = {
		.job_id = job, .step = 2, .sigma = 0.8, .dtype = "F32",
		.ndim = 3, .shape = shape, .latent = x, .size = sizeof(x),
		.config_digest = CONFIG, .model_digest = MODEL,
		.device_fingerprint = DEVICE,
	};
	error_clear(&err);
	CHECK_INT(store_save_checkpoint(st, &cp, 0, NULL, &err), LQ_FAILED);
	CHECK_STR(err.code, "LQ-JOB-005");
	CHECK_CONTAINS(err.message, "other:2:2");
	CHECK_INT(steps_of(st, job).n, 1);
	CHECK_INT(store_set_progress(st, job, "denoise", 2, 8, &err),
	    LQ_FAILED);
	CHECK_INT(store_add_event(st, job, "phase", NULL, &err), LQ_FAILED);
	char *path = xasprintf("%s/fenced.mp4", dir);
	struct file_temp t;
	temp_with(path, "late", &t);
	error_clear(&err);
	CHECK_INT(store_commit_artifact(st, job, "mp4", &t, "LQ-TEST", NULL,
	    &err), LQ_FAILED);
	CHECK_STR(err.code, "LQ-JOB-005");
	CHECK(access(path, F_OK) != 0);		/* not renamed into place */
	char *tmp = xstrdup(t.tmp);	/* file_discard_temp clears t */
	file_discard_temp(&t);
	CHECK(access(tmp, F_OK) != 0);		/* and the temporary removed */
	free(tmp);
	CHECK_INT(store_finish_job(st, job, "host:1:1", NULL, &err), LQ_FAILED);
	CHECK_INT(store_fail_job(st, job, "host:1:1", "X", "x", &err),
	    LQ_FAILED);

	s = store_prepare(st, "SELECT count(*), (SELECT step || state || "
	    "lease_owner FROM jobs WHERE id = ?) FROM events", &err);
	store_bind_int64(s, 1, job);
	CHECK_INT(store_step(s), STORE_ROW);
	CHECK_INT(store_column_int(s, 0), events);
	CHECK_STR(store_column_str(s, 1), "1runningother:2:2");
	store_finalize(s);

	/* The other jobs of the database are not this lease's business, and
	 * unbinding ends the fence. */
	store_hold_lease(st, NULL);
	CHECK_INT(store_set_progress(st, job, "denoise", 1, 8, &err), LQ_OK);
	free(path);
	store_job_clear(&j);
}

/*
 * A worker killed with SIGKILL in the middle of saving leaves the newest
 * checkpoint intact: SQLite's commit is atomic, nothing is torn.  The kill
 * lands at a different moment each round.
 */
static void
test_kill_while_saving(const char *path)
{
	struct lq_error err;
	error_clear(&err);
	struct store *st = NULL;
	CHECK_INT(store_open(path, &st, &err), LQ_OK);
	int64_t job = add_job(st, "killed");
	store_close(st);
	srand((unsigned)time(NULL));
	for (int round = 0; round < 3; round++) {
		pid_t pid = fork();
		if (pid == 0) {
			struct store *cs = NULL;
			if (store_open(path, &cs, &err) != LQ_OK)
				_exit(99);
			for (int step = 1; ; step++)
				if (save(cs, job, step, 2, NULL) != LQ_OK)
					_exit(98);
		}
		usleep(40000 + (useconds_t)(rand() % 150000));
		kill(pid, SIGKILL);
		int status = 0;
		waitpid(pid, &status, 0);
		CHECK(WIFSIGNALED(status));

		CHECK_INT(store_open(path, &st, &err), LQ_OK);
		struct store_resume_key key = { CONFIG, MODEL, DEVICE, 0 };
		struct store_checkpoint cp;
		int found = 0, skipped = -1;
		CHECK_INT(store_load_checkpoint(st, job, &key, &cp, &found,
		    &skipped, &err), LQ_OK);
		CHECK_INT(skipped, 0);
		if (found) {
			float want[NFLOAT];
			fill(want, cp.step);
			CHECK(memcmp(cp.latent, want, sizeof(want)) == 0);
			printf("round %d: killed after step %d was committed\n",
			    round, cp.step);
		}
		store_checkpoint_clear(&cp);
		CHECK(steps_of(st, job).n <= 2);
		CHECK_INT(store_delete_checkpoints(st, job, &err), LQ_OK);
		store_close(st);
	}
}

int
main(void)
{
	digest_init();
	if (mkdtemp(dir) == NULL) {
		perror("mkdtemp");
		return 99;
	}
	char *path = xasprintf("%s/q.db", dir);
	struct store *st = NULL;
	struct lq_error err;
	error_clear(&err);
	if (store_open(path, &st, &err) != LQ_OK) {
		error_print(&err, stderr);
		return 99;
	}
	test_round_trip(st);	/* closes st */
	CHECK_INT(store_open(path, &st, &err), LQ_OK);
	test_pruning(st);
	test_corrupt(st);
	test_mismatch(st);
	test_artifacts(st);
	test_fence(st);
	store_close(st);
	test_kill_while_saving(path);
	char *cmd = xasprintf("rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	free(cmd);
	free(path);
	return test_summary();
}
