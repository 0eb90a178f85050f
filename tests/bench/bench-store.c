/*
 * bench-store.c — the queue's two costs that grow with a fleet, on one
 * backend: claim throughput (claim + finish of 300 empty jobs, by one
 * supervisor and by three at once) and the commit of one per-step
 * checkpoint (a 3 MiB F32 latent [1, 6144, 128], 40 steps, keeping 2), each
 * through the store's own functions, durability settings included.
 *
 *   bench-store [DB]   DB: an SQLite path or a PostgreSQL URL; default an
 *                      SQLite file in $LATENTQ_BENCH_DIR or the current
 *                      directory.
 *
 * tests/bench/bench-store.sh runs it against SQLite and a throwaway
 * PostgreSQL server over a Unix socket, side by side.  Run by `make bench`,
 * never by `make check`.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/digest.h"
#include "core/util.h"
#include "store/checkpoints.h"
#include "store/jobs.h"
#include "store/store.h"

#define NJOBS 300
#define STEPS 40

static void
die(const struct lq_error *err)
{
	error_print(err, stderr);
	exit(1);
}

static struct store *
open_store(const char *db)
{
	struct store *st = NULL;
	struct lq_error err;
	error_clear(&err);
	if (store_open(db, &st, &err) != LQ_OK)
		die(&err);
	return st;
}

static int64_t
add_jobs(struct store *st, int n, const char *tag)
{
	struct lq_error err;
	error_clear(&err);
	int64_t rid = 0, id = 0;
	struct store_request req = { "bench.yaml", "d", 0, 1, "{}" };
	if (store_begin(st, &err) != LQ_OK ||
	    store_add_request(st, &req, &rid, &err) != LQ_OK)
		die(&err);
	for (int i = 0; i < n; i++) {
		char digest[64];
		snprintf(digest, sizeof(digest), "%s-%d-%d", tag, (int)getpid(), i);
		struct store_job_new j = { .request_id = rid, .name = "bench",
		    .state = JOB_STATE_QUEUED, .config_json = "{}",
		    .config_digest = digest, .max_attempts = 1,
		    .total_steps = STEPS };
		if (store_add_job(st, &j, &id, &err) != LQ_OK)
			die(&err);
	}
	if (store_commit(st, &err) != LQ_OK)
		die(&err);
	return id;
}

/* Claims and finishes jobs until none is queued; returns how many. */
static int
drain(const char *db, const char *owner)
{
	struct store *st = open_store(db);
	struct lq_error err;
	error_clear(&err);
	int n = 0;
	for (;;) {
		struct store_job j;
		int claimed = 0;
		enum lq_status r = store_claim_job(st, owner, 60, NULL, 0, &j,
		    &claimed, &err);
		if (r == LQ_RETRY)
			continue;
		if (r != LQ_OK)
			die(&err);
		if (!claimed)
			break;
		if (store_finish_job(st, j.id, owner, NULL, &err) != LQ_OK)
			die(&err);
		store_job_clear(&j);
		n++;
	}
	store_close(st);
	return n;
}

static void
bench_claims(const char *db, struct store *st, int procs)
{
	add_jobs(st, NJOBS, procs == 1 ? "one" : "three");
	double t0 = util_monotonic();
	if (procs == 1) {
		drain(db, "bench:1:1:boot");
	} else {
		pid_t pids[8];
		for (int p = 0; p < procs; p++) {
			if ((pids[p] = fork()) == 0) {
				char owner[64];
				snprintf(owner, sizeof(owner), "bench%d:%d:1:boot", p,
				    (int)getpid());
				drain(db, owner);
				_exit(0);
			}
		}
		for (int p = 0; p < procs; p++)
			waitpid(pids[p], NULL, 0);
	}
	double s = util_monotonic() - t0;
	printf("claim + finish, %d supervisor%s %6.0f jobs/s (%d jobs in "
	    "%.2f s)\n", procs, procs == 1 ? ": " : "s:", NJOBS / s, NJOBS, s);
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static void
bench_checkpoints(struct store *st)
{
	struct lq_error err;
	error_clear(&err);
	int64_t job = add_jobs(st, 1, "cp");
	const int64_t shape[3] = { 1, 16 * 16 * 24, 128 };
	size_t n = (size_t)shape[0] * shape[1] * shape[2];
	size_t size = n * sizeof(float);
	float *latent = xmalloc(size);
	for (size_t i = 0; i < n; i++)
		latent[i] = (float)((i * 2654435761u) % 1000) / 500.0f - 1.0f;
	double ms[STEPS], sum = 0;
	for (int i = 0; i < STEPS; i++) {
		struct store_checkpoint_new cp = {
			.job_id = job, .step = i + 1, .sigma = 1.0 - i / 50.0,
			.dtype = "F32", .ndim = 3, .shape = shape,
			.latent = latent, .size = size,
			.config_digest = "cfg", .model_digest = "model",
			.device_fingerprint = "bench",
		};
		double t0 = util_monotonic();
		if (store_save_checkpoint(st, &cp, 2, NULL, &err) != LQ_OK)
			die(&err);
		ms[i] = (util_monotonic() - t0) * 1e3;
		sum += ms[i];
	}
	qsort(ms, STEPS, sizeof(double), cmp_double);
	printf("checkpoint commit (%.1f MiB, keep 2): median %6.2f ms, mean "
	    "%6.2f ms, max %6.2f ms (%d commits)\n", size / 1048576.0,
	    ms[STEPS / 2], sum / STEPS, ms[STEPS - 1], STEPS);
	free(latent);
}

int
main(int argc, char **argv)
{
	digest_init();
	char *path = NULL;
	const char *db = argc > 1 ? argv[1] : NULL;
	if (db == NULL) {
		const char *dir = getenv("LATENTQ_BENCH_DIR");
		db = path = xasprintf("%s/bench-store-%d.db", dir ? dir : ".",
		    (int)getpid());
	}
	struct store *st = open_store(db);
	printf("store: %s\n", store_is_postgresql(db) ? "PostgreSQL" :
	    "SQLite");
	bench_claims(db, st, 1);
	bench_claims(db, st, 3);
	bench_checkpoints(st);
	store_close(st);
	if (path != NULL) {
		static const char *const suffixes[] = { "", "-wal", "-shm" };
		for (size_t i = 0; i < LQ_ARRAY_LEN(suffixes); i++) {
			char *f = xasprintf("%s%s", path, suffixes[i]);
			unlink(f);
			free(f);
		}
		free(path);
	}
	return 0;
}
