/*
 * test-preflight.c — data-driven preflight tests.
 *
 * Builds small model folders in a temporary directory (configs written from
 * the typed configs, zero weights shaped by model/expected.h, the demo T5
 * tokenizer from tests/data/text), LoRA and prompt_embeds files, then runs
 * every manifest under tests/preflight/cases/ (copied beside the models) and
 * compares the report with the manifest's `.expect` file:
 *
 *   caps FILE            check against tests/preflight/caps/FILE
 *   snap                 --snap
 *   symlink NAME TARGET  a symbolic link NAME beside the manifest -> TARGET
 *   error CODE FIELD     this error is reported at FIELD
 *   warning CODE FIELD   this warning is reported at FIELD
 *   config JOB KEY VALUE the validated config of job JOB has KEY == VALUE
 *   batch JOB N          job JOB renders N videos (job_batch, as render does)
 *   message TEXT         some problem's message or hint contains TEXT
 *
 * The set of error codes reported must equal the set listed (each failing
 * manifest is minimal); a case with no error line must be valid.  Finally
 * every code of the table must be exercised by some case.
 *
 * The generated model ("good") has VAE compression 32 spatial / 8 temporal
 * (patch 4, three spatio-temporal stages), transformer patch 1, 4 heads.
 */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "core/json.h"
#include "core/util.h"
#include "gpu/caps.h"
#include "manifest/manifest.h"
#include "model/diffusers.h"
#include "model/expected.h"
#include "model/safetensors.h"
#include "preflight/gen-models.h"
#include "preflight/preflight.h"
#include "test.h"

static char tmp[256];
static const char *srcdir;

static void
write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	LQ_ASSERT(f != NULL);
	fputs(text, f);
	fclose(f);
}

/* ---- cases ----------------------------------------------------------- */

static int covered[256];

static int
has_problem(const struct preflight_report *r, const char *sev,
    const char *code, const char *field)
{
	for (size_t i = 0; i < r->n_jobs; i++)
		for (size_t k = 0; k < r->jobs[i].n_problems; k++) {
			const struct lq_error *e = &r->jobs[i].problems[k];
			int warn = e->status == LQ_WARN;
			if (strcmp(e->code, code) == 0 &&
			    strcmp(e->field, field) == 0 &&
			    warn == (strcmp(sev, "warning") == 0))
				return 1;
		}
	return 0;
}

static void
dump(const struct preflight_report *r)
{
	preflight_report_print(r, stderr, 1);
}

static void
run_case(const char *name)
{
	char *src = xasprintf("%s/tests/preflight/cases/%s.yaml", srcdir, name);
	char *dst = xasprintf("%s/%s.yaml", tmp, name);
	char *exp = xasprintf("%s/tests/preflight/cases/%s.expect", srcdir, name);
	char *text = util_read_file(src, NULL);
	char *expect = util_read_file(exp, NULL);
	CHECK(text != NULL);
	CHECK(expect != NULL);
	if (text == NULL || expect == NULL)
		goto out;
	write_text(dst, text);

	struct preflight_options opt = {0};
	struct device_caps caps;
	char *save = NULL;
	char errs_listed[64][24];
	int n_listed = 0;
	char target[128];
	for (char *line = strtok_r(expect, "\n", &save); line;
	    line = strtok_r(NULL, "\n", &save)) {
		char a[64];
		if (sscanf(line, "caps %63s", a) == 1) {
			char *cp = xasprintf("%s/tests/preflight/caps/%s", srcdir, a);
			struct lq_error err;
			error_clear(&err);
			CHECK(device_caps_load(cp, -1, &caps, &err) == LQ_OK);
			opt.caps = &caps;
			free(cp);
		} else if (strcmp(line, "snap") == 0) {
			opt.snap = 1;
		} else if (sscanf(line, "symlink %63s %127s", a, target) == 2) {
			/* NAME (beside the manifest) -> TARGET, made afresh */
			char *lp = xasprintf("%s/%s", tmp, a);
			unlink(lp);
			CHECK(symlink(target, lp) == 0);
			free(lp);
		}
	}
	free(expect);
	expect = util_read_file(exp, NULL);

	struct manifest *m = NULL;
	struct lq_error err;
	error_clear(&err);
	enum lq_status lr = manifest_load(dst, &m, &err);
	CHECK(lr != LQ_FAILED);
	if (lr == LQ_FAILED) {
		fprintf(stderr, "%s: %s\n", name, err.message);
		manifest_free(m);
		goto out;
	}
	struct preflight_report *r = NULL;
	enum lq_status st = preflight_check_manifest(m, &opt, &r);
	int failed_before = test_failed;
	for (char *line = strtok_r(expect, "\n", &save); line;
	    line = strtok_r(NULL, "\n", &save)) {
		char sev[16], code[24], field[128], key[64], val[128];
		size_t job;
		if (line[0] == '#' || line[0] == '\0')
			continue;
		if (sscanf(line, "%15s %23s %127s", sev, code, field) == 3 &&
		    (strcmp(sev, "error") == 0 || strcmp(sev, "warning") == 0)) {
			if (!has_problem(r, sev, code, field)) {
				fprintf(stderr, "%s: expected %s %s at %s\n", name,
				    sev, code, field);
				CHECK(0);
			} else {
				CHECK(1);
			}
			if (strcmp(sev, "error") == 0 && n_listed < 64)
				snprintf(errs_listed[n_listed++], 24, "%s", code);
			for (size_t i = 0; i < preflight_code_count(); i++)
				if (strcmp(preflight_code_at(i)->code, code) == 0)
					covered[i] = 1;
		} else if (sscanf(line, "config %zu %63s %127s", &job, key, val) == 3) {
			CHECK(job < r->n_jobs);
			if (job >= r->n_jobs)
				continue;
			const cJSON *v = r->jobs[job].config;
			char *k = key, *dot;
			while (v && (dot = strchr(k, '.')) != NULL) {
				*dot = '\0';
				v = cJSON_GetObjectItemCaseSensitive(v, k);
				k = dot + 1;
			}
			v = v ? cJSON_GetObjectItemCaseSensitive(v, k) : NULL;
			CHECK(v != NULL);
			if (v != NULL) {
				char buf[128];
				if (cJSON_IsString(v))
					snprintf(buf, sizeof(buf), "%s", v->valuestring);
				else
					snprintf(buf, sizeof(buf), "%g", v->valuedouble);
				CHECK_STR(buf, val);
			}
		} else if (sscanf(line, "batch %zu %63s", &job, val) == 2) {
			CHECK(job < r->n_jobs);
			if (job < r->n_jobs)
				CHECK_INT(r->jobs[job].batch, strtoll(val, NULL, 10));
		} else if (strncmp(line, "message ", 8) == 0) {
			int found = 0;
			for (size_t i = 0; i < r->n_jobs; i++)
				for (size_t k = 0; k < r->jobs[i].n_problems; k++) {
					const struct lq_error *e = &r->jobs[i].problems[k];
					if (strstr(e->message, line + 8) ||
					    strstr(e->hint, line + 8))
						found = 1;
				}
			if (!found)
				fprintf(stderr, "%s: no message contains \"%s\"\n",
				    name, line + 8);
			CHECK(found);
		}
	}
	/* Minimal: no error code beyond those listed; valid iff none listed. */
	for (size_t i = 0; i < r->n_jobs; i++)
		for (size_t k = 0; k < r->jobs[i].n_problems; k++) {
			const struct lq_error *e = &r->jobs[i].problems[k];
			if (e->status == LQ_WARN)
				continue;
			int listed = 0;
			for (int l = 0; l < n_listed; l++)
				listed |= strcmp(errs_listed[l], e->code) == 0;
			if (!listed)
				fprintf(stderr, "%s: unexpected %s at %s: %s\n",
				    name, e->code, e->field, e->message);
			CHECK(listed);
		}
	CHECK_INT(st == LQ_OK, n_listed == 0);
	for (size_t i = 0; i < r->n_jobs; i++) {
		const struct lq_error *fe = preflight_job_first_error(&r->jobs[i]);
		char *all = preflight_job_problems_text(&r->jobs[i]);
		CHECK_INT(fe != NULL, r->jobs[i].n_errors > 0);
		CHECK_INT(r->jobs[i].config == NULL, r->jobs[i].n_errors > 0);
		if (fe != NULL)
			CHECK_CONTAINS(all, fe->message);
		free(all);
	}
	CHECK_INT(r->n_rejected > 0, n_listed > 0);
	if (test_failed != failed_before)
		dump(r);
	preflight_report_free(r);
	manifest_free(m);
out:
	free(text);
	free(expect);
	free(src);
	free(dst);
	free(exp);
}

static int
cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int
main(int argc, char **argv)
{
	srcdir = getenv("top_srcdir");
	if (srcdir == NULL)
		srcdir = LQ_SRCDIR;
	/* --generate DIR: only write the models and files (for cli.sh). */
	if (argc == 3 && strcmp(argv[1], "--generate") == 0) {
		snprintf(tmp, sizeof(tmp), "%s", argv[2]);
		pfgen_generate(tmp, srcdir);
		return test_summary();
	}
	const char *t = getenv("TMPDIR");
	snprintf(tmp, sizeof(tmp), "%s/lq-preflight-XXXXXX", t ? t : "/tmp");
	LQ_ASSERT(mkdtemp(tmp) != NULL);
	pfgen_generate(tmp, srcdir);
	/* documented in latentq-preflight(7): tests/core/test-codes */

	char *dir = xasprintf("%s/tests/preflight/cases", srcdir);
	DIR *d = opendir(dir);
	CHECK(d != NULL);
	char *names[512];
	size_t n = 0;
	struct dirent *e;
	while (d && (e = readdir(d)) != NULL && n < LQ_ARRAY_LEN(names)) {
		size_t l = strlen(e->d_name);
		if (l > 5 && strcmp(e->d_name + l - 5, ".yaml") == 0)
			names[n++] = xstrndup(e->d_name, l - 5);
	}
	if (d)
		closedir(d);
	qsort(names, n, sizeof(*names), cmp_name);
	for (size_t i = 0; i < n; i++) {
		run_case(names[i]);
		free(names[i]);
	}
	printf("%zu cases\n", n);
	for (size_t i = 0; i < preflight_code_count(); i++) {
		if (!covered[i])
			fprintf(stderr, "no case exercises %s\n",
			    preflight_code_at(i)->code);
		CHECK(covered[i]);
	}
	free(dir);
	char *cmd = xasprintf("rm -rf '%s'", tmp);
	if (getenv("LQ_KEEP_TMP"))	/* for looking at the generated folders */
		fprintf(stderr, "kept %s\n", tmp);
	else if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", tmp);
	free(cmd);
	return test_summary();
}
