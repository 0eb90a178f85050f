/*
 * bench-preflight.c — preflight of a 1,000-job manifest (two models, a LoRA,
 * a prompt each, a device caps file, several sizes), load excluded and
 * included.  Target: well under a second; model folders are inspected once
 * per folder, so the time is per job, not per model.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/util.h"
#include "gpu/caps.h"
#include "manifest/manifest.h"
#include "preflight/gen-models.h"
#include "preflight/preflight.h"

#define N_JOBS 1000

int
main(void)
{
	const char *srcdir = getenv("top_srcdir");
	if (srcdir == NULL)
		srcdir = LQ_SRCDIR;
	char dir[] = "/tmp/lq-bench-preflight-XXXXXX";
	if (mkdtemp(dir) == NULL)
		return 1;
	pfgen_generate(dir, srcdir);

	struct strbuf sb = {0};
	strbuf_printf(&sb, "defaults:\n  num_inference_steps: 20\n"
	    "  prompt: a red circle moving left on a black background\n"
	    "  mesh: {devices: 2, context: -1}\njobs:\n");
	static const int sizes[4][3] = { {512, 768, 121}, {64, 64, 9},
	    {256, 256, 33}, {480, 704, 161} };
	for (int i = 0; i < N_JOBS; i++) {
		const int *s = sizes[i % 4];
		strbuf_printf(&sb, "  - name: clip%d\n    model: models/%s\n"
		    "    seed: %d\n    height: %d\n    width: %d\n"
		    "    num_frames: %d\n", i, i % 2 ? "good" : "upsampler-good",
		    i, s[0], s[1], s[2]);
		if (i % 3 == 0)
			strbuf_printf(&sb, "    loras: [{path: lora-good.safetensors, "
			    "scale: 0.5}]\n");
	}
	char *path = xasprintf("%s/bench.yaml", dir);
	FILE *f = fopen(path, "w");
	fputs(sb.buf, f);
	fclose(f);
	free(sb.buf);

	struct device_caps caps;
	struct lq_error err;
	error_clear(&err);
	char *cp = xasprintf("%s/tests/preflight/caps/caps-2dev.json", srcdir);
	if (device_caps_load(cp, -1, &caps, &err) != LQ_OK) {
		error_print(&err, stderr);
		return 1;
	}
	struct preflight_options opt = { .caps = &caps };
	double best = 1e9, best_all = 1e9;
	size_t valid = 0;
	for (int rep = 0; rep < 5; rep++) {
		double t0 = util_monotonic();
		struct manifest *m = NULL;
		manifest_load(path, &m, &err);
		double t1 = util_monotonic();
		struct preflight_report *r = NULL;
		preflight_check_manifest(m, &opt, &r);
		double t2 = util_monotonic();
		valid = r->n_valid;
		preflight_report_free(r);
		manifest_free(m);
		if (t2 - t1 < best)
			best = t2 - t1;
		if (t2 - t0 < best_all)
			best_all = t2 - t0;
	}
	printf("preflight: %d jobs, %zu valid: %.1f ms (best of 5), "
	    "%.1f us/job; with manifest load %.1f ms\n", N_JOBS, valid,
	    best * 1e3, best * 1e6 / N_JOBS, best_all * 1e3);
	char *cmd = xasprintf("rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", dir);
	free(cmd);
	free(cp);
	free(path);
	return valid == N_JOBS ? 0 : 1;
}
