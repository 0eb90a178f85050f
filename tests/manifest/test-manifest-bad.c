/*
 * test-manifest-bad.c — data-driven bad manifests.  Every
 * tests/manifest/bad/NAME.yaml is loaded and its FIRST error compared with
 * NAME.expect, lines of "key: value":
 *   status:  failed | warn        (the load's result; optional)
 *   code:    LQ-MAN-NNN           (exact)
 *   where:   LINE:COLUMN          (exact, 1-based)
 *   field:   jobs[0].height       (exact; optional)
 *   message: text                 (must occur in the message; optional)
 *   hint:    text                 (must occur in the hint; optional)
 * A .yaml without its .expect is a failure, so no case goes unchecked.
 */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "core/digest.h"
#include "core/util.h"
#include "manifest/manifest.h"
#include "../test.h"

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void
check_case(const char *dir, const char *name)
{
	char *yaml = xasprintf("%s/%s", dir, name);
	char *expect_path = xasprintf("%.*s.expect", (int)(strlen(yaml) - 5), yaml);
	char *expect = util_read_file(expect_path, NULL);
	int before = test_failed;

	test_checks++;
	if (expect == NULL) {
		test_failed++;
		fprintf(stderr, "%s: missing %s\n", name, expect_path);
		goto out;
	}
	struct manifest *m;
	struct lq_error err;
	error_clear(&err);
	enum lq_status st = manifest_load(yaml, &m, &err);
	CHECK(st == LQ_FAILED || st == LQ_WARN);
	CHECK(m->n_errors > 0);
	CHECK_STR(err.file, yaml);
	for (char *line = strtok(expect, "\n"); line; line = strtok(NULL, "\n")) {
		char *colon = strchr(line, ':');
		if (colon == NULL)
			continue;
		*colon = '\0';
		const char *v = colon + 1 + strspn(colon + 1, " ");
		if (strcmp(line, "status") == 0) {
			CHECK_STR(st == LQ_FAILED ? "failed" : st == LQ_WARN ?
			    "warn" : "ok", v);
		} else if (strcmp(line, "code") == 0) {
			CHECK_STR(err.code, v);
		} else if (strcmp(line, "where") == 0) {
			char where[32];
			snprintf(where, sizeof(where), "%d:%d", err.line, err.column);
			CHECK_STR(where, v);
		} else if (strcmp(line, "field") == 0) {
			CHECK_STR(err.field, v);
		} else if (strcmp(line, "message") == 0) {
			CHECK_CONTAINS(err.message, v);
		} else if (strcmp(line, "hint") == 0) {
			CHECK_CONTAINS(err.hint, v);
		} else {
			test_checks++;
			test_failed++;
			fprintf(stderr, "%s: unknown key %s\n", expect_path, line);
		}
	}
	char buf[1200];
	printf("%s %s: %s\n", test_failed == before ? "ok  " : "FAIL", name,
	    error_format(&err, buf, sizeof(buf)));
	manifest_free(m);
out:
	free(expect);
	free(expect_path);
	free(yaml);
}

int
main(void)
{
	const char *top = getenv("top_srcdir");
	char *dir = xasprintf("%s/tests/manifest/bad", top ? top : ".");
	DIR *d = opendir(dir);
	if (d == NULL) {
		perror(dir);
		return 99;
	}
	char **names = NULL;
	size_t n = 0;
	for (struct dirent *e; (e = readdir(d)) != NULL;) {
		size_t len = strlen(e->d_name);
		if (len > 5 && strcmp(e->d_name + len - 5, ".yaml") == 0) {
			names = xrealloc(names, (n + 1) * sizeof(*names));
			names[n++] = xstrdup(e->d_name);
		}
	}
	closedir(d);
	qsort(names, n, sizeof(*names), cmp_str);
	digest_init();
	CHECK(n >= 20);
	for (size_t i = 0; i < n; i++) {
		check_case(dir, names[i]);
		free(names[i]);
	}
	free(names);
	free(dir);
	return test_summary();
}
