/*
 * jobs.c — requests, jobs, leases and events (see the state diagram in
 * jobs.h).  Every transition is one UPDATE whose WHERE clause names the
 * states it may leave (and the lease owner, for a running job), so an
 * illegal or stale transition changes no row and is reported instead.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "core/digest.h"
#include "core/util.h"
#include "store/jobs.h"
#include "store/store-int.h"

static const char *const state_names[] = {
	[JOB_STATE_QUEUED] = "queued",
	[JOB_STATE_RUNNING] = "running",
	[JOB_STATE_DONE] = "done",
	[JOB_STATE_REJECTED] = "rejected",
	[JOB_STATE_CANCELLED] = "cancelled",
	[JOB_STATE_POISONED] = "poisoned",
};

const char *
job_state_name(enum job_state s)
{
	if ((size_t)s < LQ_ARRAY_LEN(state_names))
		return state_names[s];
	return "unknown";
}

int
job_state_parse(const char *name, enum job_state *out)
{
	for (size_t i = 0; i < LQ_ARRAY_LEN(state_names); i++) {
		if (strcmp(state_names[i], name) == 0) {
			*out = (enum job_state)i;
			return 0;
		}
	}
	return -1;
}

/*
 * Ends the transaction a single write opened with store_begin_fenced:
 * commits after `r` == LQ_OK, else rolls back.  Returns the outcome.
 */
static enum lq_status
finish_write(struct store *st, enum lq_status r, struct lq_error *err)
{
	if (r != LQ_OK) {
		store_rollback(st);
		return r;
	}
	return store_commit(st, err);
}

void
store_hold_lease(struct store *st, const struct store_lease *lease)
{
	free(st->lease_owner);
	st->lease_owner = NULL;
	st->lease_job = 0;
	st->lease_token = 0;
	if (lease == NULL)
		return;
	LQ_ASSERT(lease->job_id > 0 && lease->owner != NULL);
	st->lease_job = lease->job_id;
	st->lease_owner = xstrdup(lease->owner);
	st->lease_token = lease->token;
}

enum lq_status
store_begin_fenced(struct store *st, int64_t job_id, struct lq_error *err)
{
	enum lq_status r = store_begin(st, err);
	/* Once checked, the write lock keeps the lease as it was until the
	 * transaction ends (a transition of our own may then change it). */
	if (r != LQ_OK || st->lease_job == 0 || st->lease_job != job_id ||
	    st->lease_checked)
		return r;
	/* FOR UPDATE: on PostgreSQL the row lock keeps the lease as checked
	 * until the commit (SQLite's write lock does that already) */
	struct store_stmt *s = store_prepare_cached(st, "SELECT state, lease_owner, "
	    "lease_token FROM jobs WHERE id = ? FOR UPDATE", err);
	if (s == NULL) {
		store_rollback(st);
		return err->status;
	}
	store_bind_int64(s, 1, job_id);
	int rc = store_step(s);
	if (rc != STORE_ROW && rc != STORE_DONE) {
		r = store_sql_error(st, "SELECT jobs (lease check)", err);
		store_done(s);
		store_rollback(st);
		return r;
	}
	const char *state = rc == STORE_ROW ?
	    store_column_str(s, 0) : NULL;
	const char *owner = rc == STORE_ROW ?
	    store_column_str(s, 1) : NULL;
	int64_t token = rc == STORE_ROW ? store_column_int64(s, 2) : -1;
	if (state != NULL && strcmp(state, "running") == 0 && owner != NULL &&
	    strcmp(owner, st->lease_owner) == 0 && token == st->lease_token) {
		store_done(s);
		st->lease_checked = 1;
		return LQ_OK;
	}
	error_set(err, LQ_FAILED, JOB_CODE_LEASE_LOST, "job %lld is no longer leased "
	    "to %s (claim %lld): it is %s%s%s (claim %lld); this worker stops "
	    "and writes nothing more", (long long)job_id, st->lease_owner,
	    (long long)st->lease_token, state ? state : "gone",
	    owner ? ", leased to " : "", owner ? owner : "", (long long)token);
	error_set_hint(err, "nothing to do: the job's current holder (or the "
	    "next claim) carries on from the last checkpoint");
	store_done(s);
	store_rollback(st);
	return LQ_FAILED;
}

enum lq_status
store_add_request(struct store *st, const struct store_request *req,
    int64_t *id, struct lq_error *err)
{
	struct store_stmt *s = store_prepare_cached(st,
	    "INSERT INTO requests(manifest_path, manifest_digest, entry_index, "
	    "line, request_json, created_at) VALUES (?, ?, ?, ?, ?, ?) RETURNING id",
	    err);
	if (s == NULL)
		return err->status;
	store_bind_text(s, 1, req->manifest_path);
	store_bind_text(s, 2, req->manifest_digest);
	store_bind_int(s, 3, req->entry_index);
	store_bind_int(s, 4, req->line);
	store_bind_text(s, 5, req->request_json);
	store_bind_double(s, 6, util_now());
	return store_step_id(st, s, "INSERT requests", id, err);
}

enum lq_status
store_add_event(struct store *st, int64_t job_id, const char *kind,
    const char *detail, struct lq_error *err)
{
	enum lq_status r = store_begin_fenced(st, job_id, err);
	if (r != LQ_OK)
		return r;
	struct store_stmt *s = store_prepare_cached(st,
	    "INSERT INTO events(job_id, at, kind, detail) VALUES (?, ?, ?, ?)",
	    err);
	if (s == NULL) {
		store_rollback(st);
		return err->status;
	}
	store_bind_int64(s, 1, job_id);
	store_bind_double(s, 2, util_now());
	store_bind_text(s, 3, kind);
	store_bind_text(s, 4, detail);
	return finish_write(st, store_step_done(st, s, "INSERT events", err),
	    err);
}

enum lq_status
store_add_job(struct store *st, const struct store_job_new *job, int64_t *id,
    struct lq_error *err)
{
	LQ_ASSERT(job->state == JOB_STATE_QUEUED ||
	    job->state == JOB_STATE_REJECTED);
	enum lq_status r = store_begin(st, err);
	if (r != LQ_OK)
		return r;
	struct store_stmt *s = store_prepare_cached(st,
	    "INSERT INTO jobs(request_id, name, state, config_json, "
	    "config_digest, model_digests, priority, max_attempts, total_steps, "
	    "output_path, error_code, error_message, created_at, updated_at, "
	    "finished_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) RETURNING id", err);
	if (s == NULL) {
		store_rollback(st);
		return err->status;
	}
	double now = util_now();
	store_bind_int64(s, 1, job->request_id);
	store_bind_text(s, 2, job->name);
	store_bind_text(s, 3, job_state_name(job->state));
	store_bind_text(s, 4, job->config_json);
	store_bind_text(s, 5, job->config_digest);
	store_bind_text(s, 6, job->model_digests);
	store_bind_int64(s, 7, job->priority);
	store_bind_int(s, 8, job->max_attempts);
	store_bind_int(s, 9, job->total_steps);
	store_bind_text(s, 10, job->output_path);
	store_bind_text(s, 11, job->error_code);
	store_bind_text(s, 12, job->error_message);
	store_bind_double(s, 13, now);
	store_bind_double(s, 14, now);
	if (job->state == JOB_STATE_REJECTED)
		store_bind_double(s, 15, now);
	else
		store_bind_null(s, 15);
	if ((r = store_step_id(st, s, "INSERT jobs", id, err)) != LQ_OK) {
		store_rollback(st);
		return r;
	}
	if ((r = store_add_event(st, *id, job->state == JOB_STATE_QUEUED ?
	    "submitted" : "rejected", NULL, err)) != LQ_OK) {
		store_rollback(st);
		return r;
	}
	return store_commit(st, err);
}

void
store_job_clear(struct store_job *job)
{
	free(job->name);
	free(job->config_json);
	free(job->config_digest);
	free(job->model_digests);
	free(job->lease_owner);
	free(job->phase);
	free(job->error_code);
	free(job->error_message);
	free(job->output_path);
	free(job->manifest_path);
	free(job->request_json);
	free(job->error_grade);
	memset(job, 0, sizeof(*job));
}

#define JOB_COLUMNS \
	"j.id, j.request_id, j.name, j.state, j.config_json, j.config_digest, " \
	"j.model_digests, j.priority, j.attempts, j.max_attempts, j.step, " \
	"j.total_steps, j.lease_owner, j.lease_expires, j.not_before, j.phase, " \
	"j.error_code, j.error_message, j.output_path, j.created_at, " \
	"j.updated_at, j.finished_at, r.manifest_path, r.request_json, r.line, " \
	"j.lease_token, " \
	"j.failures, coalesce(j.claim_step, 0), j.claimed_at, j.started_at, " \
	"j.run_seconds, j.error_grade " \
	"FROM jobs j JOIN requests r ON r.id = j.request_id "

static void
read_job(struct store_stmt *s, struct store_job *j)
{
	memset(j, 0, sizeof(*j));
	j->id = store_column_int64(s, 0);
	j->request_id = store_column_int64(s, 1);
	j->name = store_column_text(s, 2);
	const char *state = store_column_str(s, 3);
	if (state == NULL || job_state_parse(state, &j->state) != 0)
		j->state = JOB_STATE_REJECTED;	/* CHECK constraint forbids this */
	j->config_json = store_column_text(s, 4);
	j->config_digest = store_column_text(s, 5);
	j->model_digests = store_column_text(s, 6);
	j->priority = store_column_int64(s, 7);
	j->attempts = store_column_int(s, 8);
	j->max_attempts = store_column_int(s, 9);
	j->step = store_column_int(s, 10);
	j->total_steps = store_column_int(s, 11);
	j->lease_owner = store_column_text(s, 12);
	j->lease_expires = store_column_double(s, 13);
	j->not_before = store_column_double(s, 14);
	j->phase = store_column_text(s, 15);
	j->error_code = store_column_text(s, 16);
	j->error_message = store_column_text(s, 17);
	j->output_path = store_column_text(s, 18);
	j->created_at = store_column_double(s, 19);
	j->updated_at = store_column_double(s, 20);
	j->finished_at = store_column_double(s, 21);
	j->manifest_path = store_column_text(s, 22);
	j->request_json = store_column_text(s, 23);
	j->request_line = store_column_int(s, 24);
	j->lease_token = store_column_int64(s, 25);
	j->failures = store_column_int(s, 26);
	j->claim_step = store_column_int(s, 27);
	j->claimed_at = store_column_double(s, 28);
	j->started_at = store_column_double(s, 29);
	j->run_seconds = store_column_double(s, 30);
	j->error_grade = store_column_text(s, 31);
}

static enum lq_status
get_one(struct store *st, struct store_stmt *s, const char *ref,
    struct store_job *out, struct lq_error *err)
{
	int rc = store_step(s);
	if (rc == STORE_ROW) {
		read_job(s, out);
		store_done(s);
		return LQ_OK;
	}
	store_done(s);
	if (rc != STORE_DONE)
		return store_sql_error(st, "SELECT jobs", err);
	error_set(err, LQ_FAILED, "LQ-JOB-001", "no job %s in %s", ref,
	    st->path);
	error_set_hint(err, "see `latentq status` for the jobs there are");
	return LQ_FAILED;
}

enum lq_status
store_get_job(struct store *st, int64_t id, struct store_job *out,
    struct lq_error *err)
{
	struct store_stmt *s = store_prepare_cached(st, "SELECT " JOB_COLUMNS
	    "WHERE j.id = ?", err);
	if (s == NULL)
		return err->status;
	store_bind_int64(s, 1, id);
	char ref[32];
	snprintf(ref, sizeof(ref), "%lld", (long long)id);
	return get_one(st, s, ref, out, err);
}

enum lq_status
store_find_job(struct store *st, const char *ref, struct store_job *out,
    struct lq_error *err)
{
	char *end;
	errno = 0;
	long long id = strtoll(ref, &end, 10);
	if (ref[0] != '\0' && *end == '\0' && errno == 0 && id > 0)
		return store_get_job(st, id, out, err);
	struct store_stmt *s = store_prepare_cached(st, "SELECT " JOB_COLUMNS
	    "WHERE j.name = ? ORDER BY j.id DESC LIMIT 1", err);
	if (s == NULL)
		return err->status;
	store_bind_text(s, 1, ref);
	return get_one(st, s, ref, out, err);
}

enum lq_status
store_find_live_job(struct store *st, const char *config_digest, int64_t *id,
    enum job_state *state, struct lq_error *err)
{
	*id = 0;
	enum lq_status r;
	if (st->txn_depth > 0 && st->drv->lock_submit != NULL &&
	    (r = st->drv->lock_submit(st, err)) != LQ_OK)
		return r;
	struct store_stmt *s = store_prepare_cached(st,
	    "SELECT id, state FROM jobs WHERE config_digest = ? AND state IN "
	    "('queued', 'running', 'done') ORDER BY id DESC LIMIT 1", err);
	if (s == NULL)
		return err->status;
	store_bind_text(s, 1, config_digest);
	int rc = store_step(s);
	if (rc == STORE_ROW) {
		*id = store_column_int64(s, 0);
		job_state_parse(store_column_str(s, 1), state);
	}
	store_done(s);
	if (rc != STORE_ROW && rc != STORE_DONE)
		return store_sql_error(st, "SELECT jobs", err);
	return LQ_OK;
}

int
store_job_config_intact(const struct store_job *job)
{
	char d[DIGEST_HEX_SIZE];
	if (job->config_json == NULL || job->config_digest == NULL)
		return 0;
	digest_hex(job->config_json, strlen(job->config_json), d);
	return strcmp(d, job->config_digest) == 0;
}

enum lq_status
store_list_jobs(struct store *st, int filter,
    int (*fn)(const struct store_job *job, void *ud), void *ud,
    struct lq_error *err)
{
	struct store_stmt *s = store_prepare_cached(st, filter < 0 ?
	    "SELECT " JOB_COLUMNS "ORDER BY j.id" :
	    "SELECT " JOB_COLUMNS "WHERE j.state = ? ORDER BY j.id", err);
	if (s == NULL)
		return err->status;
	if (filter >= 0)
		store_bind_text(s, 1, job_state_name((enum job_state)filter));
	int rc;
	while ((rc = store_step(s)) == STORE_ROW) {
		struct store_job j;
		read_job(s, &j);
		int stop = fn(&j, ud);
		store_job_clear(&j);
		if (stop) {
			rc = STORE_DONE;
			break;
		}
	}
	store_done(s);
	if (rc != STORE_DONE)
		return store_sql_error(st, "SELECT jobs", err);
	return LQ_OK;
}

/* This host's name in lease owners: LATENTQ_HOST, else gethostname. */
static void
host_name(char *buf, size_t n)
{
	const char *env = getenv("LATENTQ_HOST");
	if (env != NULL && *env != '\0') {
		snprintf(buf, n, "%s", env);
	} else if (gethostname(buf, n) != 0) {
		snprintf(buf, n, "localhost");
	}
	buf[n - 1] = '\0';
	for (char *p = buf; *p; p++)
		if (*p == ':')
			*p = '_';	/* the owner's field separator */
}

/* The kernel's boot id (a UUID), or "" where /proc does not give it. */
static void
boot_id(char *buf, size_t n)
{
	buf[0] = '\0';
	FILE *fp = fopen("/proc/sys/kernel/random/boot_id", "r");
	if (fp == NULL)
		return;
	if (fgets(buf, (int)n, fp) == NULL)
		buf[0] = '\0';
	fclose(fp);
	buf[strcspn(buf, ":\n")] = '\0';
}

/* Field 22 of /proc/PID/stat (start time in clock ticks after boot), or
 * 0; *found = 0 when the process does not exist. */
static unsigned long long
proc_start_time(const char *pid, int *found)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%s/stat", pid);
	FILE *fp = fopen(path, "r");
	*found = fp != NULL || errno != ENOENT;
	if (fp == NULL)
		return 0;
	char buf[1024];
	size_t n = fread(buf, 1, sizeof(buf) - 1, fp);
	fclose(fp);
	buf[n] = '\0';
	char *p = strrchr(buf, ')');	/* comm may hold spaces */
	int field = 2;
	for (char *tok = p ? strtok(p + 1, " ") : NULL; tok;
	    tok = strtok(NULL, " "))
		if (++field == 22)
			return strtoull(tok, NULL, 10);
	return 0;
}

void
store_lease_owner_self(char *buf, size_t n)
{
	char host[256], boot[64];
	host_name(host, sizeof(host));
	boot_id(boot, sizeof(boot));
	int found;
	unsigned long long start = proc_start_time("self", &found);
	snprintf(buf, n, "%s:%ld:%llu:%s", host, (long)getpid(), start, boot);
}

/*
 * Is the lease owner ("host:pid:starttime:bootid") a process that provably
 * no longer exists?  Only decidable on this host (same name): another boot
 * id (the owner died with the previous boot), pid gone, or a pid reused by
 * a process with another start time (field 22 of /proc/PID/stat).  Owners
 * written before the boot id was recorded have three fields.
 */
int
store_lease_owner_dead(const char *owner)
{
	char host[256], me[256], boot[64] = "", my_boot[64];
	long pid;
	unsigned long long start;
	if (owner == NULL || sscanf(owner, "%255[^:]:%ld:%llu:%63s", host, &pid,
	    &start, boot) < 3)
		return 0;
	host_name(me, sizeof(me));
	if (strcmp(me, host) != 0)
		return 0;
	boot_id(my_boot, sizeof(my_boot));
	if (boot[0] != '\0' && my_boot[0] != '\0' && strcmp(boot, my_boot) != 0)
		return 1;
	char spid[32];
	snprintf(spid, sizeof(spid), "%ld", pid);
	int found;
	unsigned long long now_start = proc_start_time(spid, &found);
	if (!found)
		return 1;
	return now_start != 0 && now_start != start;
}

static enum lq_status requeue(struct store *st, int64_t id, const char *owner,
    double backoff, enum job_requeue_reason reason, const char *code,
    enum lq_status grade, const char *message, enum job_state *new_state,
    struct lq_error *err);

/*
 * Returns running jobs whose lease expired or whose owner is dead to the
 * queue (or to poisoned, attempts spent).  Runs inside the claim's
 * transaction.
 */
static enum lq_status
reap_leases(struct store *st, struct lq_error *err)
{
	struct store_stmt *s = store_prepare_cached(st,
	    "SELECT id, lease_owner, lease_expires FROM jobs WHERE state = "
	    "'running' FOR UPDATE SKIP LOCKED", err);
	if (s == NULL)
		return err->status;
	double now = util_now();
	int64_t ids[64];
	int reasons[64];
	size_t n = 0;
	int rc;
	while ((rc = store_step(s)) == STORE_ROW && n < LQ_ARRAY_LEN(ids)) {
		const char *owner = store_column_str(s, 1);
		double exp = store_column_double(s, 2);
		int expired = exp < now;
		if (expired || store_lease_owner_dead(owner)) {
			ids[n] = store_column_int64(s, 0);
			reasons[n] = expired;
			n++;
		}
	}
	store_done(s);
	if (rc != STORE_DONE && rc != STORE_ROW)
		return store_sql_error(st, "SELECT jobs", err);
	for (size_t i = 0; i < n; i++) {
		const char *why = reasons[i] ? "lease expired" :
		    "lease owner died";
		char detail[96];
		snprintf(detail, sizeof(detail), "{\"reason\":\"%s\"}", why);
		enum lq_status r = store_add_event(st, ids[i], "lease_lost", detail,
		    err);
		if (r == LQ_OK)
			r = requeue(st, ids[i], NULL, 0, JOB_REQUEUE_LEASE_LOST,
			    "LQ-JOB-004", LQ_RETRY, reasons[i] ? "its worker stopped "
			    "renewing the lease; resumes from its last checkpoint" :
			    "its worker died; resumes from its last checkpoint", NULL,
			    err);
		if (r != LQ_OK)
			return r;
	}
	return LQ_OK;
}

enum lq_status
store_claim_job(struct store *st, const char *owner, double lease_seconds,
    const int64_t *ids, size_t n, struct store_job *out, int *claimed,
    struct lq_error *err)
{
	*claimed = 0;
	enum lq_status r = store_begin(st, err);
	if (r != LQ_OK)
		return r;
	if ((r = reap_leases(st, err)) != LQ_OK) {
		store_rollback(st);
		return r;
	}
#define CLAIM_SELECT "SELECT id FROM jobs WHERE state = 'queued' AND " \
	"(not_before IS NULL OR not_before <= ?)"
	/* another host's claim in flight holds its row: take the next */
#define CLAIM_ORDER " ORDER BY priority DESC, id LIMIT 1 FOR UPDATE SKIP LOCKED"
	struct store_stmt *s;
	if (ids == NULL) {
		/* the whole queue: every claim's statement, kept */
		s = store_prepare_cached(st, CLAIM_SELECT CLAIM_ORDER, err);
	} else {
		struct strbuf sql = {0};
		strbuf_printf(&sql, CLAIM_SELECT " AND id IN (");
		for (size_t i = 0; i < n; i++)
			strbuf_printf(&sql, "%s%lld", i ? "," : "",
			    (long long)ids[i]);
		/* PostgreSQL has no empty list; (NULL) matches nothing */
		strbuf_printf(&sql, "%s)" CLAIM_ORDER, n == 0 ? "NULL" : "");
		s = store_prepare(st, sql.buf, err);
		free(sql.buf);
	}
#undef CLAIM_SELECT
#undef CLAIM_ORDER
	if (s == NULL) {
		store_rollback(st);
		return err->status;
	}
	double now = util_now();
	store_bind_double(s, 1, now);
	int rc = store_step(s);
	int64_t id = rc == STORE_ROW ? store_column_int64(s, 0) : 0;
	if (ids == NULL)
		store_done(s);
	else
		store_finalize(s);
	if (rc != STORE_ROW && rc != STORE_DONE) {
		r = store_sql_error(st, "SELECT jobs", err);
		store_rollback(st);
		return r;
	}
	if (id == 0 || (ids != NULL && n == 0))
		return store_commit(st, err);	/* commits the reaping */
	/* a new attempt: its last error is history (the events keep it) */
	s = store_prepare_cached(st, "UPDATE jobs SET state = 'running', attempts = "
	    "attempts + 1, lease_owner = ?1, lease_expires = ?2, not_before = NULL, "
	    "lease_token = lease_token + 1, "
	    "updated_at = ?3, claim_step = step, claimed_at = ?3, started_at = "
	    "coalesce(started_at, ?3), error_code = NULL, error_message = NULL, "
	    "error_grade = NULL WHERE id = ?4 AND state = 'queued'", err);
	if (s == NULL) {
		store_rollback(st);
		return err->status;
	}
	store_bind_text(s, 1, owner);
	store_bind_double(s, 2, now + lease_seconds);
	store_bind_double(s, 3, now);
	store_bind_int64(s, 4, id);
	char *detail = NULL;
	if ((r = store_step_done(st, s, "UPDATE jobs", err)) != LQ_OK ||
	    (r = store_get_job(st, id, out, err)) != LQ_OK) {
		store_rollback(st);
		return r;
	}
	detail = xasprintf("{\"owner\":\"%s\",\"lease_token\":%lld}", owner,
	    (long long)out->lease_token);
	if ((r = store_add_event(st, id, "claimed", detail, err)) != LQ_OK) {
		free(detail);
		store_job_clear(out);
		store_rollback(st);
		return r;
	}
	free(detail);
	if ((r = store_commit(st, err)) != LQ_OK) {
		store_job_clear(out);
		return r;
	}
	*claimed = 1;
	return LQ_OK;
}

enum lq_status
store_next_claimable(struct store *st, const int64_t *ids, size_t n,
    double *at, int *running, struct lq_error *err)
{
	struct strbuf sql = {0};
	strbuf_printf(&sql, "SELECT min(CASE WHEN state = 'queued' THEN "
	    "coalesce(not_before, 0) END), "
	    "sum(CASE WHEN state = 'queued' THEN 1 ELSE 0 END), "
	    "sum(CASE WHEN state = 'running' THEN 1 ELSE 0 END) FROM jobs");
	if (ids != NULL) {
		strbuf_printf(&sql, " WHERE id IN (");
		for (size_t i = 0; i < n; i++)
			strbuf_printf(&sql, "%s%lld", i ? "," : "",
			    (long long)ids[i]);
		/* PostgreSQL has no empty list; (NULL) matches nothing */
		strbuf_printf(&sql, "%s)", n == 0 ? "NULL" : "");
	}
	struct store_stmt *s = store_prepare(st, sql.buf, err);
	free(sql.buf);
	if (s == NULL)
		return err->status;
	int rc = store_step(s);
	if (rc != STORE_ROW) {
		store_finalize(s);
		return store_sql_error(st, "SELECT jobs", err);
	}
	*at = store_column_int(s, 1) > 0 ? store_column_double(s, 0) : -1;
	if (running != NULL)
		*running = store_column_int(s, 2);
	store_finalize(s);
	return LQ_OK;
}

/*
 * Runs an UPDATE that must change exactly one row; zero rows means the job
 * was not in a state this transition may leave: LQ-JOB-002 naming it.
 */
static enum lq_status
transition(struct store *st, struct store_stmt *s, int64_t id, const char *what,
    struct lq_error *err)
{
	int rc = store_step(s);
	store_done(s);
	if (rc != STORE_DONE)
		return store_sql_error(st, "UPDATE jobs", err);
	if (store_changes(st) == 1)
		return LQ_OK;
	struct store_job j;
	struct lq_error e2;
	error_clear(&e2);
	if (store_get_job(st, id, &j, &e2) != LQ_OK) {
		*err = e2;
		return e2.status;
	}
	error_set(err, LQ_FAILED, "LQ-JOB-002", "cannot %s job %lld (%s): it is %s",
	    what, (long long)id, j.name, job_state_name(j.state));
	store_job_clear(&j);
	return LQ_FAILED;
}

enum lq_status
store_renew_lease(struct store *st, int64_t id, const char *owner,
    double lease_seconds, struct lq_error *err)
{
	struct store_stmt *s = store_prepare_cached(st, "UPDATE jobs SET lease_expires = ? "
	    "WHERE id = ? AND state = 'running' AND lease_owner = ?", err);
	if (s == NULL)
		return err->status;
	store_bind_double(s, 1, util_now() + lease_seconds);
	store_bind_int64(s, 2, id);
	store_bind_text(s, 3, owner);
	int rc = store_step(s);
	store_done(s);
	if (rc != STORE_DONE)
		return store_sql_error(st, "UPDATE jobs", err);
	if (store_changes(st) != 1)
		return error_set(err, LQ_FAILED, "LQ-JOB-003",
		    "job %lld is no longer leased to %s", (long long)id, owner);
	return LQ_OK;
}

enum lq_status
store_set_progress(struct store *st, int64_t id, const char *phase, int step,
    int total_steps, struct lq_error *err)
{
	enum lq_status r = store_begin_fenced(st, id, err);
	if (r != LQ_OK)
		return r;
	struct store_stmt *s = store_prepare_cached(st, "UPDATE jobs SET phase = "
	    "coalesce(?1, phase), step = CASE WHEN ?2 < 0 THEN step ELSE ?2 END, "
	    "total_steps = ?3, updated_at = ?4 WHERE id = ?5", err);
	if (s == NULL) {
		store_rollback(st);
		return err->status;
	}
	store_bind_text(s, 1, phase);
	store_bind_int(s, 2, step);
	store_bind_int(s, 3, total_steps);
	store_bind_double(s, 4, util_now());
	store_bind_int64(s, 5, id);
	return finish_write(st, store_step_done(st, s, "UPDATE jobs", err), err);
}

enum lq_status
store_set_output(struct store *st, int64_t id, const char *output_path,
    struct lq_error *err)
{
	enum lq_status r = store_begin_fenced(st, id, err);
	if (r != LQ_OK)
		return r;
	struct store_stmt *s = store_prepare_cached(st, "UPDATE jobs SET output_path = "
	    "?, updated_at = ? WHERE id = ?", err);
	if (s == NULL) {
		store_rollback(st);
		return err->status;
	}
	store_bind_text(s, 1, output_path);
	store_bind_double(s, 2, util_now());
	store_bind_int64(s, 3, id);
	return finish_write(st, store_step_done(st, s, "UPDATE jobs", err), err);
}

enum lq_status
store_pin_model_digest(struct store *st, int64_t id, const char *digest,
    struct lq_error *err)
{
	enum lq_status r = store_begin_fenced(st, id, err);
	if (r != LQ_OK)
		return r;
	struct store_stmt *s = store_prepare_cached(st, "UPDATE jobs SET model_digests "
	    "= ? WHERE id = ? AND (model_digests IS NULL OR model_digests = '')",
	    err);
	if (s == NULL) {
		store_rollback(st);
		return err->status;
	}
	store_bind_text(s, 1, digest);
	store_bind_int64(s, 2, id);
	return finish_write(st, store_step_done(st, s, "UPDATE jobs", err), err);
}

enum lq_status
store_repin_legacy_model_digest(struct store *st, int64_t id,
    const char *legacy, const char *digest, struct lq_error *err)
{
	LQ_ASSERT(strncmp(legacy, STORE_LEGACY_DIGEST_PREFIX,
	    strlen(STORE_LEGACY_DIGEST_PREFIX)) == 0);
	static const char *const sql[2] = {
		"UPDATE checkpoints SET model_digest = ?1 WHERE job_id = ?2 "
		"AND model_digest = ?3",
		"UPDATE jobs SET model_digests = ?1 WHERE id = ?2 AND "
		"model_digests = ?3",
	};
	enum lq_status r;
	if ((r = store_begin(st, err)) != LQ_OK)
		return r;
	for (int i = 0; i < 2; i++) {
		struct store_stmt *s = store_prepare_cached(st, sql[i], err);
		if (s == NULL) {
			store_rollback(st);
			return err->status;
		}
		store_bind_text(s, 1, digest);
		store_bind_int64(s, 2, id);
		store_bind_text(s, 3, legacy);
		if ((r = store_step_done(st, s, sql[i], err)) != LQ_OK) {
			store_rollback(st);
			return r;
		}
	}
	return store_commit(st, err);
}

/*
 * Opens a write transaction for job id (fenced: store_begin_fenced) and
 * prepares the transition's UPDATE in it; on failure nothing is left open
 * and err says why.
 */
static struct store_stmt *
begin_update(struct store *st, int64_t id, const char *sql,
    struct lq_error *err)
{
	if (store_begin_fenced(st, id, err) != LQ_OK)
		return NULL;
	struct store_stmt *s = store_prepare_cached(st, sql, err);
	if (s == NULL)
		store_rollback(st);
	return s;
}

/* Wraps "UPDATE + event" in one transaction. */
static enum lq_status
transition_with_event(struct store *st, struct store_stmt *s, int64_t id,
    const char *what, const char *kind, const char *detail,
    struct lq_error *err)
{
	enum lq_status r;
	if ((r = transition(st, s, id, what, err)) != LQ_OK ||
	    (r = store_add_event(st, id, kind, detail, err)) != LQ_OK) {
		store_rollback(st);
		return r;
	}
	return store_commit(st, err);
}

enum lq_status
store_finish_job(struct store *st, int64_t id, const char *owner,
    const char *output_path, struct lq_error *err)
{
	struct store_stmt *s = begin_update(st, id, "UPDATE jobs SET state = 'done', "
	    "lease_owner = NULL, lease_expires = NULL, phase = 'done', "
	    "output_path = coalesce(?1, output_path), error_code = NULL, "
	    "error_message = NULL, error_grade = NULL, updated_at = ?2, "
	    "finished_at = ?2, failures = 0, run_seconds = run_seconds + "
	    "CASE WHEN ?2 > claimed_at THEN ?2 - claimed_at ELSE 0 END "
	    "WHERE id = ?3 AND state = 'running' AND lease_owner = ?4", err);
	if (s == NULL)
		return err->status;
	store_bind_text(s, 1, output_path);
	store_bind_double(s, 2, util_now());
	store_bind_int64(s, 3, id);
	store_bind_text(s, 4, owner);
	return transition_with_event(st, s, id, "finish", "finished", NULL, err);
}

static const char *const requeue_names[] = {
	[JOB_REQUEUE_CRASH] = "crash",
	[JOB_REQUEUE_RETRY] = "retry",
	[JOB_REQUEUE_INTERRUPTED] = "interrupted",
	[JOB_REQUEUE_HOST] = "host",
	[JOB_REQUEUE_LEASE_LOST] = "lease_lost",
};

const char *
job_requeue_reason_name(enum job_requeue_reason r)
{
	if ((size_t)r < LQ_ARRAY_LEN(requeue_names))
		return requeue_names[r];
	return "unknown";
}

/*
 * The requeue transition inside the caller's transaction (owner NULL: any
 * running job, for the reaper).  The counting rule of jobs.h is the CASE
 * on ?6 (counts a failure) and "step > claim_step" (made progress).
 */
static enum lq_status
requeue(struct store *st, int64_t id, const char *owner, double backoff,
    enum job_requeue_reason reason, const char *code, enum lq_status grade,
    const char *message, enum job_state *new_state, struct lq_error *err)
{
	struct store_stmt *s = store_prepare_cached(st, "UPDATE jobs SET "
	    "failures = CASE WHEN step > coalesce(claim_step, 0) THEN ?6 "
	    "ELSE failures + ?6 END, "
	    "attempts = attempts - ?7, "
	    "lease_owner = NULL, lease_expires = NULL, not_before = ?1 + ?2, "
	    "error_code = ?3, error_message = ?4, error_grade = ?5, "
	    "updated_at = ?1, run_seconds = run_seconds + "
	    "CASE WHEN ?1 > claimed_at THEN ?1 - claimed_at ELSE 0 END "
	    "WHERE id = ?8 AND state = 'running' AND (?9 IS NULL OR "
	    "lease_owner = ?9)", err);
	if (s == NULL)
		return err->status;
	double now = util_now();
	store_bind_double(s, 1, now);
	store_bind_double(s, 2, backoff);
	store_bind_text(s, 3, code);
	store_bind_text(s, 4, message);
	store_bind_text(s, 5, grade == LQ_OK ? NULL : error_status_name(grade));
	store_bind_int(s, 6, reason == JOB_REQUEUE_CRASH ? 1 : 0);
	store_bind_int(s, 7, reason == JOB_REQUEUE_HOST ? 1 : 0);
	store_bind_int64(s, 8, id);
	store_bind_text(s, 9, owner);
	enum lq_status r = transition(st, s, id, "requeue", err);
	if (r != LQ_OK)
		return r;
	/* the state follows from the new failure count */
	s = store_prepare_cached(st, "UPDATE jobs SET state = CASE WHEN "
	    "failures >= max_attempts THEN 'poisoned' ELSE 'queued' END, "
	    "finished_at = CASE WHEN failures >= max_attempts THEN ?1 END "
	    "WHERE id = ?2", err);
	if (s == NULL)
		return err->status;
	store_bind_double(s, 1, now);
	store_bind_int64(s, 2, id);
	if ((r = store_step_done(st, s, "UPDATE jobs", err)) != LQ_OK)
		return r;
	struct store_job j;
	if ((r = store_get_job(st, id, &j, err)) != LQ_OK)
		return r;
	if (new_state != NULL)
		*new_state = j.state;
	cJSON *d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "reason", job_requeue_reason_name(reason));
	if (code != NULL)
		cJSON_AddStringToObject(d, "code", code);
	cJSON_AddNumberToObject(d, "failures", j.failures);
	cJSON_AddNumberToObject(d, "max_attempts", j.max_attempts);
	cJSON_AddNumberToObject(d, "step", j.step);
	cJSON_AddBoolToObject(d, "progress", j.step > j.claim_step);
	if (backoff > 0 && j.state == JOB_STATE_QUEUED)
		cJSON_AddNumberToObject(d, "backoff_seconds", backoff);
	char *detail = cJSON_PrintUnformatted(d);
	cJSON_Delete(d);
	r = store_add_event(st, id, j.state == JOB_STATE_POISONED ? "poisoned" :
	    "requeued", detail, err);
	cJSON_free(detail);
	store_job_clear(&j);
	return r;
}

enum lq_status
store_requeue_job(struct store *st, int64_t id, const char *owner,
    double backoff_seconds, enum job_requeue_reason reason, const char *code,
    enum lq_status grade, const char *message, enum job_state *new_state,
    struct lq_error *err)
{
	LQ_ASSERT(owner != NULL);
	enum lq_status r = store_begin_fenced(st, id, err);
	if (r != LQ_OK)
		return r;
	if ((r = requeue(st, id, owner, backoff_seconds, reason, code, grade,
	    message, new_state, err)) != LQ_OK) {
		store_rollback(st);
		return r;
	}
	return store_commit(st, err);
}

enum lq_status
store_fail_job(struct store *st, int64_t id, const char *owner,
    const char *code, const char *message, struct lq_error *err)
{
	struct store_stmt *s = begin_update(st, id, "UPDATE jobs SET state = "
	    "'poisoned', lease_owner = NULL, lease_expires = NULL, "
	    "error_code = ?1, error_message = ?2, error_grade = 'failed', "
	    "updated_at = ?3, finished_at = ?3, run_seconds = run_seconds + "
	    "CASE WHEN ?3 > claimed_at THEN ?3 - claimed_at ELSE 0 END "
	    "WHERE id = ?4 AND state = "
	    "'running' AND lease_owner = ?5", err);
	if (s == NULL)
		return err->status;
	store_bind_text(s, 1, code);
	store_bind_text(s, 2, message);
	store_bind_double(s, 3, util_now());
	store_bind_int64(s, 4, id);
	store_bind_text(s, 5, owner);
	return transition_with_event(st, s, id, "fail", "poisoned", NULL, err);
}

enum lq_status
store_cancel_job(struct store *st, int64_t id, struct lq_error *err)
{
	struct store_stmt *s = begin_update(st, id, "UPDATE jobs SET state = "
	    "'cancelled', lease_owner = NULL, lease_expires = NULL, "
	    "error_code = NULL, error_message = NULL, error_grade = NULL, "
	    "updated_at = ?1, finished_at = ?1 WHERE id = ?2 AND state IN "
	    "('queued', 'running')", err);
	if (s == NULL)
		return err->status;
	store_bind_double(s, 1, util_now());
	store_bind_int64(s, 2, id);
	return transition_with_event(st, s, id, "cancel", "cancelled", NULL, err);
}

enum lq_status
store_retry_job(struct store *st, int64_t id, struct lq_error *err)
{
	struct store_stmt *s = begin_update(st, id, "UPDATE jobs SET state = 'queued', "
	    "attempts = 0, failures = 0, not_before = NULL, finished_at = NULL, "
	    "error_code = NULL, error_message = NULL, error_grade = NULL, "
	    "updated_at = ?1 WHERE id = ?2 AND state IN ('poisoned', "
	    "'cancelled')", err);
	if (s == NULL)
		return err->status;
	store_bind_double(s, 1, util_now());
	store_bind_int64(s, 2, id);
	return transition_with_event(st, s, id, "retry", "retried", NULL, err);
}

enum lq_status
store_redo_job(struct store *st, int64_t id, const char *reason,
    struct lq_error *err)
{
	struct store_stmt *s = begin_update(st, id, "UPDATE jobs SET state = 'queued', "
	    "failures = 0, not_before = NULL, finished_at = NULL, error_code = "
	    "NULL, error_message = NULL, error_grade = NULL, updated_at = ?1 "
	    "WHERE id = ?2 AND state = 'done'", err);
	if (s == NULL)
		return err->status;
	store_bind_double(s, 1, util_now());
	store_bind_int64(s, 2, id);
	enum lq_status r = transition(st, s, id, "redo", err);
	if (r == LQ_OK) {
		struct store_stmt *d = store_prepare_cached(st,
		    "DELETE FROM artifacts WHERE job_id = ?", err);
		if (d == NULL) {
			r = err->status;
		} else {
			store_bind_int64(d, 1, id);
			r = store_step_done(st, d, "DELETE artifacts", err);
		}
	}
	if (r != LQ_OK) {
		store_rollback(st);
		return r;
	}
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "reason", reason);
	char *detail = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	r = store_add_event(st, id, "redo", detail, err);
	cJSON_free(detail);
	if (r != LQ_OK) {
		store_rollback(st);
		return r;
	}
	return store_commit(st, err);
}

enum lq_status
store_list_events(struct store *st, int64_t job_id,
    int (*fn)(double at, const char *kind, const char *detail, void *ud),
    void *ud, struct lq_error *err)
{
	struct store_stmt *s = store_prepare_cached(st, "SELECT at, kind, detail FROM "
	    "events WHERE job_id = ? ORDER BY id", err);
	if (s == NULL)
		return err->status;
	store_bind_int64(s, 1, job_id);
	int rc;
	while ((rc = store_step(s)) == STORE_ROW) {
		if (fn(store_column_double(s, 0),
		    store_column_str(s, 1),
		    store_column_str(s, 2), ud)) {
			rc = STORE_DONE;
			break;
		}
	}
	store_done(s);
	if (rc != STORE_DONE)
		return store_sql_error(st, "SELECT events", err);
	return LQ_OK;
}
