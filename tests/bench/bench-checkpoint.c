/*
 * bench-checkpoint.c — cost of committing one per-step checkpoint with the
 * store's durability settings (WAL, synchronous=FULL, 64 KiB pages): a
 * 3 MiB F32 latent, 16×16×24 tokens × 128 channels ([1, 6144, 128]), saved
 * for 40 steps keeping the newest 2 (the default), keeping all, and
 * keeping 2 with PRAGMA secure_delete = FAST (set through the store's
 * internal header, as only store code may speak SQL).
 * Prints per-commit milliseconds (median, mean, min, max), the bytes
 * written per commit (WAL and checkpointing into the database file), and
 * the time spent hashing the blob.  The database lives in $LATENTQ_BENCH_DIR or
 * the current directory (a real disk, not tmpfs, to count the fsyncs).
 * Run by `make bench`, never by `make check`.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/digest.h"
#include "core/util.h"
#include "store/checkpoints.h"
#include "store/jobs.h"
#include "store/store.h"
#include "store/store-int.h"

#define STEPS 40

/* Bytes this process has passed to write() so far (/proc/self/io wchar). */
static long long
written_bytes(void)
{
	FILE *fp = fopen("/proc/self/io", "r");
	long long v = -1;
	char line[128];
	while (fp != NULL && fgets(line, sizeof(line), fp) != NULL)
		if (sscanf(line, "wchar: %lld", &v) == 1)
			break;
	if (fp != NULL)
		fclose(fp);
	return v;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static void
die(const struct lq_error *err)
{
	error_print(err, stderr);
	exit(1);
}

static void
run(struct store *st, int64_t job, const float *latent, size_t size,
    const int64_t *shape, int keep, const char *label)
{
	double ms[STEPS];
	struct lq_error err;
	error_clear(&err);
	long long w0 = written_bytes();
	for (int i = 0; i < STEPS; i++) {
		struct store_checkpoint_new cp = {
			.job_id = job, .step = i + 1, .sigma = 1.0 - i / 50.0,
			.dtype = "F32", .ndim = 3, .shape = shape,
			.latent = latent, .size = size,
			.config_digest = "cfg", .model_digest = "model",
			.device_fingerprint = "bench",
		};
		double t0 = util_monotonic();
		if (store_save_checkpoint(st, &cp, keep, NULL, &err) != LQ_OK)
			die(&err);
		ms[i] = (util_monotonic() - t0) * 1e3;
	}
	double mib = (written_bytes() - w0) / 1048576.0 / STEPS;
	double sum = 0;
	for (int i = 0; i < STEPS; i++)
		sum += ms[i];
	qsort(ms, STEPS, sizeof(double), cmp_double);
	printf("%-28s per commit: median %6.2f ms, mean %6.2f ms, "
	    "min %6.2f ms, max %6.2f ms, %.1f MiB written (%d commits)\n",
	    label, ms[STEPS / 2], sum / STEPS, ms[0], ms[STEPS - 1], mib,
	    STEPS);
	if (store_delete_checkpoints(st, job, &err) != LQ_OK)
		die(&err);
}

int
main(void)
{
	digest_init();
	const char *dir = getenv("LATENTQ_BENCH_DIR");
	char *path = xasprintf("%s/bench-checkpoint-%d.db", dir ? dir : ".",
	    (int)getpid());
	struct store *st = NULL;
	struct lq_error err;
	error_clear(&err);
	if (store_open(path, &st, &err) != LQ_OK)
		die(&err);

	const int64_t shape[3] = { 1, 16 * 16 * 24, 128 };
	size_t n = (size_t)shape[0] * shape[1] * shape[2];
	size_t size = n * sizeof(float);
	float *latent = xmalloc(size);
	for (size_t i = 0; i < n; i++)
		latent[i] = (float)((i * 2654435761u) % 1000) / 500.0f - 1.0f;

	char hex[DIGEST_HEX_SIZE];
	double t0 = util_monotonic();
	for (int i = 0; i < 10; i++)
		digest_hex(latent, size, hex);
	double hash_ms = (util_monotonic() - t0) * 1e3 / 10;
	printf("checkpoint of a %.1f MiB F32 latent [1, %lld, %lld] in %s\n",
	    size / 1048576.0, (long long)shape[1], (long long)shape[2], path);
	printf("BLAKE2b-256 of the blob: %.2f ms\n", hash_ms);

	struct store_request req = { "bench.yaml", "d", 0, 1, "{}" };
	int64_t rid, job;
	if (store_add_request(st, &req, &rid, &err) != LQ_OK)
		die(&err);
	struct store_job_new j = { .request_id = rid, .name = "bench",
	    .state = JOB_STATE_QUEUED, .config_json = "{}",
	    .config_digest = "cfg", .max_attempts = 1, .total_steps = STEPS };
	if (store_add_job(st, &j, &job, &err) != LQ_OK)
		die(&err);
	run(st, job, latent, size, shape, 2, "keep=2");
	run(st, job, latent, size, shape, 0, "keep=all");
	/*
	 * Debian builds SQLite with SECURE_DELETE on: pruning then rewrites
	 * every freed page of the deleted blob.  FAST skips what costs I/O.
	 */
	if (store_exec(st, "PRAGMA secure_delete = FAST", &err) != LQ_OK)
		die(&err);
	run(st, job, latent, size, shape, 2, "keep=2, secure_delete=FAST");

	store_close(st);
	free(latent);
	static const char *const suffixes[] = { "", "-wal", "-shm" };
	for (size_t i = 0; i < LQ_ARRAY_LEN(suffixes); i++) {
		char *p = xasprintf("%s%s", path, suffixes[i]);
		unlink(p);
		free(p);
	}
	free(path);
	return 0;
}
