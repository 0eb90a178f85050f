/*
 * test-store.c — the queue database: migrations, the job state machine,
 * leases, a claim race between processes and three supervisors of two
 * hosts draining one queue.
 *
 * With LATENTQ_TEST_PG set to a PostgreSQL URL holding "%s" where the
 * database name goes (tests/store/pg-store.sh starts the server and
 * creates the databases), the state machine, lease, race and drain tests
 * run against PostgreSQL; the migration tests, which write SQLite files
 * with the sqlite3 tool, run on SQLite only.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/util.h"
#include "store/jobs.h"
#include "store/store.h"
#include "test.h"

static char dir[] = "/tmp/lq-test-store-XXXXXX";
static const char *pg_url;	/* LATENTQ_TEST_PG, or NULL: SQLite */

static struct store *
open_db(const char *name)
{
	char *path;
	if (pg_url != NULL) {
		/* "race.db" is database race */
		char base[64];
		snprintf(base, sizeof(base), "%.*s", (int)strcspn(name, "."), name);
		path = xasprintf(pg_url, base);
	} else {
		path = xasprintf("%s/%s", dir, name);
	}
	struct store *st = NULL;
	struct lq_error err;
	error_clear(&err);
	if (store_open(path, &st, &err) != LQ_OK) {
		error_print(&err, stderr);
		exit(99);
	}
	free(path);
	return st;
}

static int64_t
add_job(struct store *st, const char *name, const char *digest, int max_attempts)
{
	struct lq_error err;
	error_clear(&err);
	struct store_request req = {"m.yaml", "d", 0, 1, "{}"};
	int64_t rid = 0, jid = 0;
	CHECK_INT(store_add_request(st, &req, &rid, &err), LQ_OK);
	struct store_job_new j = {
		.request_id = rid, .name = name, .state = JOB_STATE_QUEUED,
		.config_json = "{}", .config_digest = digest,
		.max_attempts = max_attempts, .total_steps = 4,
	};
	CHECK_INT(store_add_job(st, &j, &jid, &err), LQ_OK);
	return jid;
}

static enum job_state
state_of(struct store *st, int64_t id)
{
	struct store_job j;
	struct lq_error err;
	LQ_ASSERT(store_get_job(st, id, &j, &err) == LQ_OK);
	enum job_state s = j.state;
	store_job_clear(&j);
	return s;
}

static void
test_migrations(void)
{
	struct lq_error err;
	int latest = store_schema_latest();
	CHECK(latest >= 1);
	/* From empty and from every earlier version up to the latest. */
	for (int v = 0; v <= latest; v++) {
		char name[32];
		snprintf(name, sizeof(name), "mig%d.db", v);
		store_set_migration_limit(v);
		struct store *st = open_db(name);
		CHECK_INT(store_schema_version(st), v);
		store_close(st);
		store_set_migration_limit(-1);
		st = open_db(name);
		CHECK_INT(store_schema_version(st), latest);
		int64_t id = add_job(st, "j", "dig", 3);
		CHECK(id > 0);
		store_close(st);
	}
	/* A database from a newer latentq is refused, naming both versions. */
	struct store *st = open_db("newer.db");
	store_close(st);
	char *cmd = xasprintf("sqlite3 %s/newer.db 'PRAGMA user_version = %d'",
	    dir, latest + 7);
	CHECK_INT(system(cmd), 0);
	free(cmd);
	char *path = xasprintf("%s/newer.db", dir);
	error_clear(&err);
	CHECK_INT(store_open(path, &st, &err), LQ_FAILED);
	CHECK_STR(err.code, "LQ-DB-002");
	CHECK_CONTAINS(err.message, "newer");
	free(path);
}

/*
 * Schema 0002 (one model identity): digests pinned before it are marked
 * legacy, and store_repin_legacy_model_digest replaces a job's legacy pin
 * once.
 */
static void
test_legacy_digests(void)
{
	struct lq_error err;
	error_clear(&err);
	store_set_migration_limit(1);
	struct store *st = open_db("legacy.db");
	struct store_request req = {"m.yaml", "d", 0, 1, "{}"};
	int64_t rid = 0, jid = 0;
	CHECK_INT(store_add_request(st, &req, &rid, &err), LQ_OK);
	struct store_job_new nj = {
		.request_id = rid, .name = "old", .state = JOB_STATE_QUEUED,
		.config_json = "{}", .config_digest = "c", .max_attempts = 3,
		.total_steps = 4, .model_digests = "abc123",
	};
	CHECK_INT(store_add_job(st, &nj, &jid, &err), LQ_OK);
	store_close(st);
	store_set_migration_limit(-1);
	st = open_db("legacy.db");
	CHECK(store_schema_version(st) >= 2);
	struct store_job j;
	CHECK_INT(store_get_job(st, jid, &j, &err), LQ_OK);
	CHECK_STR(j.model_digests, STORE_LEGACY_DIGEST_PREFIX "abc123");
	store_job_clear(&j);
	/* a pin that is not the legacy one is left alone */
	CHECK_INT(store_repin_legacy_model_digest(st, jid, "legacy:other", "new",
	    &err), LQ_OK);
	CHECK_INT(store_get_job(st, jid, &j, &err), LQ_OK);
	CHECK_STR(j.model_digests, "legacy:abc123");
	store_job_clear(&j);
	CHECK_INT(store_repin_legacy_model_digest(st, jid, "legacy:abc123",
	    "new", &err), LQ_OK);
	CHECK_INT(store_get_job(st, jid, &j, &err), LQ_OK);
	CHECK_STR(j.model_digests, "new");
	store_job_clear(&j);
	store_close(st);
}

static void
test_transitions(void)
{
	struct store *st = open_db("states.db");
	struct lq_error err;
	error_clear(&err);
	int64_t a = add_job(st, "a", "da", 2);
	CHECK_INT(state_of(st, a), JOB_STATE_QUEUED);

	/* Illegal: finish/requeue a queued job, retry a queued job. */
	CHECK_INT(store_finish_job(st, a, "me", NULL, &err), LQ_FAILED);
	CHECK_STR(err.code, "LQ-JOB-002");
	CHECK_INT(store_retry_job(st, a, &err), LQ_FAILED);
	CHECK_CONTAINS(err.message, "queued");

	struct store_job j;
	int claimed = 0;
	CHECK_INT(store_claim_job(st, "me", 60, NULL, 0, &j, &claimed, &err), LQ_OK);
	CHECK_INT(claimed, 1);
	CHECK_INT(j.id, a);
	CHECK_INT(j.attempts, 1);
	CHECK_INT(j.state, JOB_STATE_RUNNING);
	store_job_clear(&j);

	/* Someone else cannot finish it; its owner can requeue it. */
	CHECK_INT(store_finish_job(st, a, "other", NULL, &err), LQ_FAILED);
	enum job_state ns;
	CHECK_INT(store_requeue_job(st, a, "me", 0, JOB_REQUEUE_CRASH, "E", LQ_FAILED, "boom", &ns, &err), LQ_OK);
	CHECK_INT(ns, JOB_STATE_QUEUED);
	CHECK_INT(store_claim_job(st, "me", 60, NULL, 0, &j, &claimed, &err), LQ_OK);
	CHECK_INT(j.attempts, 2);
	store_job_clear(&j);
	/* Attempts spent: requeue poisons. */
	CHECK_INT(store_requeue_job(st, a, "me", 0, JOB_REQUEUE_CRASH, "E", LQ_FAILED, "boom", &ns, &err), LQ_OK);
	CHECK_INT(ns, JOB_STATE_POISONED);
	CHECK_INT(store_claim_job(st, "me", 60, NULL, 0, &j, &claimed, &err), LQ_OK);
	CHECK_INT(claimed, 0);
	/* retry: poisoned → queued with attempts reset; then cancel. */
	CHECK_INT(store_retry_job(st, a, &err), LQ_OK);
	CHECK_INT(state_of(st, a), JOB_STATE_QUEUED);
	CHECK_INT(store_cancel_job(st, a, &err), LQ_OK);
	CHECK_INT(store_cancel_job(st, a, &err), LQ_FAILED);
	CHECK_CONTAINS(err.message, "cancelled");
	CHECK_INT(store_retry_job(st, a, &err), LQ_OK);
	CHECK_INT(store_claim_job(st, "me", 60, NULL, 0, &j, &claimed, &err), LQ_OK);
	CHECK_INT(j.attempts, 1);
	store_job_clear(&j);
	CHECK_INT(store_finish_job(st, a, "me", "out.mp4", &err), LQ_OK);
	CHECK_INT(state_of(st, a), JOB_STATE_DONE);
	/* done is terminal */
	CHECK_INT(store_cancel_job(st, a, &err), LQ_FAILED);
	CHECK_INT(store_retry_job(st, a, &err), LQ_FAILED);

	/* Idempotent submit support: a live job is found by digest. */
	int64_t found = 0;
	CHECK_INT(store_find_live_job(st, "da", &found, &ns, &err), LQ_OK);
	CHECK_INT(found, a);
	CHECK_INT(ns, JOB_STATE_DONE);
	CHECK_INT(store_find_live_job(st, "nope", &found, &ns, &err), LQ_OK);
	CHECK_INT(found, 0);

	/* Backoff: a requeued job is not claimable before not_before. */
	int64_t b = add_job(st, "b", "db", 3);
	CHECK_INT(store_claim_job(st, "me", 60, NULL, 0, &j, &claimed, &err), LQ_OK);
	CHECK_INT(j.id, b);
	store_job_clear(&j);
	CHECK_INT(store_requeue_job(st, b, "me", 3600, JOB_REQUEUE_RETRY, "E", LQ_RETRY, "x", &ns, &err), LQ_OK);
	CHECK_INT(store_claim_job(st, "me", 60, NULL, 0, &j, &claimed, &err), LQ_OK);
	CHECK_INT(claimed, 0);
	store_close(st);
}

/* Claims job id as "me" and returns its row after the claim. */
static struct store_job
claim(struct store *st, int64_t id)
{
	struct lq_error err;
	error_clear(&err);
	struct store_job j;
	int claimed = 0;
	CHECK_INT(store_claim_job(st, "me", 60, &id, 1, &j, &claimed, &err), LQ_OK);
	CHECK_INT(claimed, 1);
	return j;
}

static enum job_state
requeue(struct store *st, int64_t id, enum job_requeue_reason why)
{
	struct lq_error err;
	error_clear(&err);
	enum job_state ns = JOB_STATE_RUNNING;
	CHECK_INT(store_requeue_job(st, id, "me", 0, why, "E", LQ_FAILED, "m", &ns,
	    &err), LQ_OK);
	return ns;
}

static int
failures_of(struct store *st, int64_t id)
{
	struct store_job j;
	struct lq_error err;
	LQ_ASSERT(store_get_job(st, id, &j, &err) == LQ_OK);
	int f = j.failures;
	store_job_clear(&j);
	return f;
}

struct reasons {
	int requeued, poisoned, with_reason;
};

static int
count_reasons(double at, const char *kind, const char *detail, void *ud)
{
	(void)at;
	struct reasons *r = ud;
	r->requeued += strcmp(kind, "requeued") == 0;
	r->poisoned += strcmp(kind, "poisoned") == 0;
	r->with_reason += detail != NULL && strstr(detail, "\"reason\":") != NULL;
	return 0;
}

/*
 * Attempts and failures (jobs.h): only crashes count, progress restarts
 * the count, interruptions / retries / host faults never count, a host
 * fault gives the attempt back.
 */
static void
test_failures(void)
{
	struct store *st = open_db("failures.db");
	struct lq_error err;
	error_clear(&err);
	int64_t a = add_job(st, "a", "fa", 3);
	struct store_job j;
	/* Five interruptions, retries and host faults: no failure. */
	enum job_requeue_reason free_reasons[] = {JOB_REQUEUE_INTERRUPTED,
	    JOB_REQUEUE_RETRY, JOB_REQUEUE_HOST, JOB_REQUEUE_INTERRUPTED,
	    JOB_REQUEUE_RETRY};
	for (int i = 0; i < 5; i++) {
		j = claim(st, a);
		store_job_clear(&j);
		CHECK_INT(requeue(st, a, free_reasons[i]), JOB_STATE_QUEUED);
	}
	CHECK_INT(failures_of(st, a), 0);
	j = claim(st, a);
	CHECK_INT(j.attempts, 5);	/* 6 claims, the host fault given back */
	store_job_clear(&j);
	/* Two crashes without progress count two failures. */
	CHECK_INT(requeue(st, a, JOB_REQUEUE_CRASH), JOB_STATE_QUEUED);
	j = claim(st, a);
	store_job_clear(&j);
	CHECK_INT(requeue(st, a, JOB_REQUEUE_CRASH), JOB_STATE_QUEUED);
	CHECK_INT(failures_of(st, a), 2);
	/* A crash after a committed step restarts the count at 1 ... */
	j = claim(st, a);
	store_job_clear(&j);
	CHECK_INT(store_set_progress(st, a, "denoise", 2, 4, &err), LQ_OK);
	CHECK_INT(requeue(st, a, JOB_REQUEUE_CRASH), JOB_STATE_QUEUED);
	CHECK_INT(failures_of(st, a), 1);
	/* ... an interruption after progress at 0 ... */
	j = claim(st, a);
	CHECK_INT(j.claim_step, 2);
	store_job_clear(&j);
	CHECK_INT(store_set_progress(st, a, "denoise", 3, 4, &err), LQ_OK);
	CHECK_INT(requeue(st, a, JOB_REQUEUE_INTERRUPTED), JOB_STATE_QUEUED);
	CHECK_INT(failures_of(st, a), 0);
	/* ... and three crashes at the same step poison it. */
	for (int i = 1; i <= 3; i++) {
		j = claim(st, a);
		store_job_clear(&j);
		CHECK_INT(requeue(st, a, JOB_REQUEUE_CRASH), i < 3 ?
		    JOB_STATE_QUEUED : JOB_STATE_POISONED);
	}
	CHECK_INT(failures_of(st, a), 3);
	/* Every requeue left an event naming its reason. */
	struct reasons r = {0};
	CHECK_INT(store_list_events(st, a, count_reasons, &r, &err), LQ_OK);
	CHECK_INT(r.requeued, 11);
	CHECK_INT(r.poisoned, 1);
	CHECK_INT(r.with_reason, 12);
	CHECK_INT(store_retry_job(st, a, &err), LQ_OK);
	CHECK_INT(failures_of(st, a), 0);
	store_close(st);
}

static void
test_lease_expiry(void)
{
	struct store *st = open_db("lease.db");
	struct lq_error err;
	error_clear(&err);
	int64_t a = add_job(st, "a", "da", 3);
	struct store_job j;
	int claimed;
	/* A lease of 0.2 s held by a remote owner that never renews. */
	CHECK_INT(store_claim_job(st, "elsewhere:1:1", 0.2, NULL, 0, &j, &claimed,
	    &err), LQ_OK);
	CHECK_INT(claimed, 1);
	store_job_clear(&j);
	CHECK_INT(store_claim_job(st, "me", 60, NULL, 0, &j, &claimed, &err), LQ_OK);
	CHECK_INT(claimed, 0);		/* still leased */
	CHECK_INT(store_renew_lease(st, a, "me", 60, &err), LQ_FAILED);
	CHECK_STR(err.code, "LQ-JOB-003");
	usleep(300 * 1000);
	CHECK_INT(store_claim_job(st, "me", 60, NULL, 0, &j, &claimed, &err), LQ_OK);
	CHECK_INT(claimed, 1);		/* expired: claimable again */
	CHECK_INT(j.attempts, 2);
	store_job_clear(&j);
	CHECK_INT(store_renew_lease(st, a, "me", 60, &err), LQ_OK);

	/* A lease owned by a dead process on this host is reclaimed at once. */
	int64_t b = add_job(st, "b", "db", 3);
	char host[256];
	gethostname(host, sizeof(host));
	pid_t pid = fork();
	if (pid == 0)
		_exit(0);
	waitpid(pid, NULL, 0);
	char *owner = xasprintf("%s:%d:12345", host, (int)pid);
	CHECK(store_lease_owner_dead(owner));
	CHECK(!store_lease_owner_dead("elsewhere:1:1"));
	/* Five dead owners in a row (preempted hosts) never poison it. */
	for (int i = 0; i < 5; i++) {
		CHECK_INT(store_claim_job(st, owner, 3600, &b, 1, &j, &claimed,
		    &err), LQ_OK);
		CHECK_INT(claimed, 1);
		store_job_clear(&j);
	}
	free(owner);
	CHECK_INT(store_claim_job(st, "me", 60, &b, 1, &j, &claimed, &err), LQ_OK);
	CHECK_INT(claimed, 1);
	CHECK_INT(j.attempts, 6);
	CHECK_INT(j.failures, 0);
	CHECK_INT(j.state, JOB_STATE_RUNNING);
	store_job_clear(&j);
	store_close(st);
}

/*
 * PostgreSQL only: the server drops the connection (pg_terminate_backend,
 * from psql) after the claim and lease statements were prepared on it.
 * The next call is LQ_RETRY; the one after reconnects and prepares them
 * again on the new connection (a statement of the old one would be
 * "prepared statement does not exist", LQ_FAILED).
 */
static void
test_reconnect(void)
{
	struct store *st = open_db("reconnect.db");
	struct lq_error err;
	error_clear(&err);
	int64_t a = add_job(st, "a", "ra", 3);
	int64_t b = add_job(st, "b", "rb", 3);
	struct store_job j;
	int claimed;
	CHECK_INT(store_claim_job(st, "me", 60, NULL, 0, &j, &claimed, &err),
	    LQ_OK);
	CHECK_INT(claimed, 1);
	CHECK_INT(j.id, a);
	store_job_clear(&j);
	CHECK_INT(store_renew_lease(st, a, "me", 60, &err), LQ_OK);
	char *url = xasprintf(pg_url, "reconnect");
	char *cmd = xasprintf("psql -X -q -At -d '%s' -c \"SELECT count("
	    "pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = "
	    "current_database() AND pid <> pg_backend_pid()\" > /dev/null", url);
	CHECK_INT(system(cmd), 0);
	free(cmd);
	free(url);
	usleep(100 * 1000);
	CHECK_INT(store_renew_lease(st, a, "me", 60, &err), LQ_RETRY);
	error_clear(&err);
	CHECK_INT(store_renew_lease(st, a, "me", 60, &err), LQ_OK);
	CHECK_INT(store_claim_job(st, "me", 60, NULL, 0, &j, &claimed, &err),
	    LQ_OK);
	CHECK_INT(claimed, 1);
	CHECK_INT(j.id, b);
	store_job_clear(&j);
	store_close(st);
}

/* Two processes claim from 40 jobs at once: each job is claimed once. */
static void
test_claim_race(void)
{
	struct store *st = open_db("race.db");
	enum { NJOBS = 40 };
	for (int i = 0; i < NJOBS; i++) {
		char d[16];
		snprintf(d, sizeof(d), "d%d", i);
		add_job(st, "r", d, 3);
	}
	store_close(st);
	int fds[2][2];
	pid_t pids[2];
	for (int p = 0; p < 2; p++) {
		CHECK_INT(pipe(fds[p]), 0);
		pids[p] = fork();
		if (pids[p] == 0) {
			close(fds[p][0]);
			struct store *cs = open_db("race.db");
			struct lq_error err;
			char owner[32];
			snprintf(owner, sizeof(owner), "proc%d", p);
			for (;;) {
				struct store_job j;
				int claimed = 0;
				enum lq_status r = store_claim_job(cs, owner, 60, NULL,
				    0, &j, &claimed, &err);
				if (r == LQ_RETRY)
					continue;
				if (r != LQ_OK || !claimed)
					break;
				int64_t id = j.id;
				usleep(1000);	/* let the other process in */
				if (write(fds[p][1], &id, sizeof(id)) != sizeof(id))
					_exit(3);
				store_job_clear(&j);
			}
			store_close(cs);
			_exit(0);
		}
		close(fds[p][1]);
	}
	int seen[NJOBS + 1] = {0};
	int total = 0, per[2] = {0, 0};
	for (int p = 0; p < 2; p++) {
		int64_t id;
		while (read(fds[p][0], &id, sizeof(id)) == sizeof(id)) {
			if (id >= 1 && id <= NJOBS)
				seen[id]++;
			total++;
			per[p]++;
		}
		close(fds[p][0]);
		int status;
		waitpid(pids[p], &status, 0);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	CHECK_INT(total, NJOBS);
	for (int i = 1; i <= NJOBS; i++)
		CHECK_INT(seen[i], 1);
	printf("claim race: process 0 claimed %d, process 1 claimed %d\n",
	    per[0], per[1]);
}

struct drain_count {
	int claimed, finished, other_owner;
	char owner[64];
};

static int
count_event(double at, const char *kind, const char *detail, void *ud)
{
	(void)at;
	struct drain_count *c = ud;
	if (strcmp(kind, "claimed") == 0) {
		c->claimed++;
		/* {"owner":"hostA:...","lease_token":1} */
		const char *o = detail ? strstr(detail, "\"owner\":\"") : NULL;
		if (o != NULL)
			snprintf(c->owner, sizeof(c->owner), "%.*s",
			    (int)strcspn(o + 9, "\""), o + 9);
	} else if (strcmp(kind, "finished") == 0) {
		c->finished++;
	}
	return 0;
}

/*
 * Three supervisors of two hosts (lease owners "hostA:..." twice and
 * "hostB:..." once) drain 30 jobs: each job is claimed once and finished
 * once, by the owner that claimed it, as the events record it.
 */
static void
test_drain(void)
{
	struct store *st = open_db("drain.db");
	enum { NJOBS = 30, NPROC = 3 };
	int64_t ids[NJOBS];
	for (int i = 0; i < NJOBS; i++) {
		char d[16];
		snprintf(d, sizeof(d), "drain%d", i);
		ids[i] = add_job(st, "d", d, 3);
	}
	store_close(st);
	pid_t pids[NPROC];
	for (int p = 0; p < NPROC; p++) {
		pids[p] = fork();
		if (pids[p] != 0)
			continue;
		struct store *cs = open_db("drain.db");
		struct lq_error err;
		error_clear(&err);
		char owner[64];
		snprintf(owner, sizeof(owner), "host%c:%d:1:boot", p < 2 ? 'A' :
		    'B', (int)getpid());
		int done = 0;
		for (;;) {
			struct store_job j;
			int claimed = 0;
			enum lq_status r = store_claim_job(cs, owner, 60, NULL, 0,
			    &j, &claimed, &err);
			if (r == LQ_RETRY)
				continue;
			if (r != LQ_OK)
				_exit(2);
			if (!claimed)
				break;
			/* a step of work, then done: both fenced by the owner */
			if (store_set_progress(cs, j.id, "denoise", 1, 4, &err) !=
			    LQ_OK || store_finish_job(cs, j.id, owner, NULL, &err) !=
			    LQ_OK) {
				error_print(&err, stderr);
				_exit(3);
			}
			store_job_clear(&j);
			done++;
		}
		store_close(cs);
		_exit(done > 0 ? 0 : 4);	/* 4: a supervisor got nothing */
	}
	for (int p = 0; p < NPROC; p++) {
		int status;
		waitpid(pids[p], &status, 0);
		CHECK(WIFEXITED(status));
		/* exit 4 (drained by the others first) is allowed, not 2, 3 */
		CHECK(WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == 4);
	}
	st = open_db("drain.db");
	struct lq_error err;
	error_clear(&err);
	int hosts[2] = {0, 0};
	for (int i = 0; i < NJOBS; i++) {
		struct drain_count c = {0};
		CHECK_INT(store_list_events(st, ids[i], count_event, &c, &err),
		    LQ_OK);
		CHECK_INT(c.claimed, 1);
		CHECK_INT(c.finished, 1);
		CHECK_INT(state_of(st, ids[i]), JOB_STATE_DONE);
		hosts[c.owner[4] == 'B']++;
	}
	CHECK_INT(hosts[0] + hosts[1], NJOBS);
	printf("drain: host A claimed %d, host B %d\n", hosts[0], hosts[1]);
	store_close(st);
}

int
main(void)
{
	if (mkdtemp(dir) == NULL)
		return 99;
	pg_url = getenv("LATENTQ_TEST_PG");
	if (pg_url == NULL) {
		test_migrations();
		test_legacy_digests();
	}
	test_transitions();
	test_failures();
	test_lease_expiry();
	test_claim_race();
	test_drain();
	if (pg_url != NULL)
		test_reconnect();
	char *cmd = xasprintf("rm -rf %s", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "warning: could not remove %s\n", dir);
	free(cmd);
	return test_summary();
}
