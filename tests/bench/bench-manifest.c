/*
 * bench-manifest.c — time loading a generated 10,000-job manifest (the
 * parse, type checks, defaults and templates), and the canonical config text
 * and digest of every job as submit computes them.  Prints the times; run by
 * `make bench`, never by `make check`.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/digest.h"
#include "core/json.h"
#include "core/util.h"
#include "manifest/manifest.h"

#define JOBS 10000

/* CPU seconds of this process: wall time on a shared machine misleads. */
static double
cpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int
main(void)
{
	struct strbuf sb = { 0 };
	strbuf_printf(&sb, "version: 1\ndefaults:\n  model: ../models/ltxv-demo\n"
	    "  height: 256\n  width: 384\n  num_frames: 25\n"
	    "  output: \"clips/{name}-{seed}.mp4\"\n  mesh: {devices: 1}\njobs:\n");
	/* 9,000 single jobs and 250 entries of four seeds each. */
	for (int i = 0; i < JOBS - 1000; i++)
		strbuf_printf(&sb, "  - name: clip%05d\n    prompt: \"A cat number "
		    "%d walks along a fence at dusk, cinematic\"\n    seed: %d\n"
		    "    guidance_scale: %.1f\n    num_inference_steps: %d\n",
		    i, i, i * 7919, 2.0 + (i % 5) * 0.5, 20 + i % 30);
	for (int i = 0; i < 250; i++)
		strbuf_printf(&sb, "  - name: multi%03d\n    prompt: waves %d\n"
		    "    seeds: [1, 2, 18446744073709551615, %d]\n"
		    "    loras: [{path: loras/film.safetensors, scale: 0.5}]\n",
		    i, i, 1000 + i);

	if (getenv("BENCH_DUMP")) { FILE *f = fopen(getenv("BENCH_DUMP"), "w"); fwrite(sb.buf, 1, sb.len, f); fclose(f); }
	digest_init();
	double t0 = util_monotonic(), c0 = cpu_now();
	struct manifest *m;
	struct lq_error err;
	error_clear(&err);
	enum lq_status st = manifest_load_buffer("bench/jobs.yaml", sb.buf,
	    sb.len, &m, &err);
	double t1 = util_monotonic(), c1 = cpu_now();
	if (st != LQ_OK || m->n_jobs != JOBS) {
		error_print(&err, stderr);
		fprintf(stderr, "bench-manifest: %zu jobs, expected %d\n",
		    m->n_jobs, JOBS);
		return 1;
	}
	size_t bytes = 0;
	for (size_t i = 0; i < m->n_jobs; i++) {
		char *c = json_canonical(m->jobs[i].config);
		char hex[DIGEST_HEX_SIZE];
		digest_hex(c, strlen(c), hex);
		bytes += strlen(c);
		free(c);
		c = json_canonical(m->jobs[i].request);
		free(c);
	}
	double t2 = util_monotonic(), c2 = cpu_now();
	manifest_free(m);
	double t3 = util_monotonic();
	printf("bench-manifest: %d jobs, %zu KiB of YAML\n"
	    "  load                                %7.1f ms (%.1f ms CPU)\n"
	    "  canonical config+request, digests   %7.1f ms (%.1f ms CPU, %zu KiB)\n"
	    "  free                                %7.1f ms\n",
	    JOBS, sb.len / 1024, (t1 - t0) * 1e3, (c1 - c0) * 1e3,
	    (t2 - t1) * 1e3, (c2 - c1) * 1e3, bytes / 1024, (t3 - t2) * 1e3);
	free(sb.buf);
	return 0;
}
