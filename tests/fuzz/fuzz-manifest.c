/*
 * fuzz-manifest.c — libFuzzer target for manifest loading: any bytes go
 * through manifest_load_buffer(), and every job's config, request and
 * where-lookups are exercised; errors must all name a position.
 *
 * Build and run (clang):
 *   ./configure CC=clang --enable-fuzzing && make tests/fuzz/fuzz-manifest
 *   tests/fuzz/fuzz-manifest -max_total_time=60 tests/manifest/good tests/manifest/bad
 * The manifest sources are compiled into the target itself with
 * -fsanitize=fuzzer,address, so they are instrumented whatever CFLAGS the
 * rest of the build has.
 *
 * Without libFuzzer (FUZZ_REPLAY_MAIN defined) a main() replays the files
 * and folders named on the command line: `make check` runs it over the test
 * manifests so the target always builds and its checks hold.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/digest.h"
#include "core/json.h"
#include "core/util.h"
#include "manifest/manifest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const keys[] = {
		"name", "height", "seed", "mesh.devices", "loras[0].path",
		"loras[1].scale", "output", "x[", "mesh..", "",
	};
	struct manifest *m;
	struct lq_error err;

	digest_init();
	error_clear(&err);
	enum lq_status st = manifest_load_buffer("fuzz/jobs.yaml",
	    (const char *)data, size, &m, &err);
	LQ_ASSERT(m != NULL);
	LQ_ASSERT((st == LQ_OK) == (m->n_errors == 0));
	for (size_t i = 0; i < m->n_errors; i++) {
		LQ_ASSERT(m->errors[i].code[0] != '\0');
		LQ_ASSERT(m->errors[i].line >= 1 && m->errors[i].column >= 1);
	}
	for (size_t i = 0; i < m->n_jobs; i++) {
		const struct manifest_job *job = &m->jobs[i];
		LQ_ASSERT(job->name != NULL && job->request != NULL);
		LQ_ASSERT((job->config == NULL) == (job->error != NULL));
		if (job->config) {
			char *s = json_canonical(job->config);
			free(s);
			(void)manifest_job_u64(job, "seed", 0);
		}
		char *r = json_canonical(job->request);
		free(r);
		for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
			struct manifest_where w;
			manifest_job_where(m, job, keys[k], &w);
			LQ_ASSERT(w.line >= 1);
		}
	}
	manifest_free(m);
	return 0;
}

#ifdef FUZZ_REPLAY_MAIN
#include <dirent.h>
#include <sys/stat.h>

static int
replay(const char *path)
{
	struct stat sb;
	if (stat(path, &sb) != 0) {
		perror(path);
		return 1;
	}
	if (S_ISDIR(sb.st_mode)) {
		DIR *d = opendir(path);
		int rc = 0;
		if (d == NULL) {
			perror(path);
			return 1;
		}
		for (struct dirent *e; (e = readdir(d)) != NULL;) {
			if (e->d_name[0] == '.')
				continue;
			char *sub = xasprintf("%s/%s", path, e->d_name);
			rc |= replay(sub);
			free(sub);
		}
		closedir(d);
		return rc;
	}
	size_t n;
	char *text = util_read_file(path, &n);
	if (text == NULL) {
		perror(path);
		return 1;
	}
	LLVMFuzzerTestOneInput((const uint8_t *)text, n);
	free(text);
	return 0;
}

int
main(int argc, char **argv)
{
	int rc = 0;
	if (argc < 2) {
		const char *top = getenv("top_srcdir");
		char *good = xasprintf("%s/tests/manifest/good", top ? top : ".");
		char *bad = xasprintf("%s/tests/manifest/bad", top ? top : ".");
		rc = replay(good) | replay(bad);
		free(good);
		free(bad);
	}
	for (int i = 1; i < argc; i++)
		rc |= replay(argv[i]);
	printf("fuzz-manifest replay: %s\n", rc ? "failed" : "ok");
	return rc;
}
#endif
