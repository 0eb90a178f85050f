/*
 * test-codes.c — the error-code table (core/codes.def) stays the one list:
 * its rows are sorted and unique, every code written in src/ has a row and
 * every row is written somewhere, and each row is documented in the man
 * page its SECTION names (and those pages list no code the table lacks).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/codes.h"
#include "core/util.h"
#include "test.h"

static const char *srcdir;

/* Codes quoted in the C sources, one per line, sorted (grep -o). */
static char *
codes_in_sources(void)
{
	char *cmd = xasprintf("grep -rhoE '\"LQ-[A-Z0-9]+-[A-Z0-9-]+\"' "
	    "--include='*.c' --include='*.cc' --include='*.h' '%s/src' | tr -d '\"' | "
	    "LC_ALL=C sort -u", srcdir);
	FILE *p = popen(cmd, "r");
	free(cmd);
	CHECK(p != NULL);
	struct strbuf sb = {0};
	char line[128];
	while (p && fgets(line, sizeof(line), p))
		strbuf_printf(&sb, "%s", line);
	if (p)
		CHECK_INT(pclose(p), 0);
	return strbuf_release(&sb);
}

static void
test_rows(void)
{
	CHECK(LQ_CODE_COUNT > 100);
	CHECK_STR(lq_code_info(LQ_CODE_NONE)->text, "");
	CHECK_INT(lq_code_find(""), LQ_CODE_NONE);
	CHECK_INT(lq_code_find(NULL), LQ_CODE_NONE);
	CHECK_INT(lq_code_find("LQ-NOPE-001"), LQ_CODE_NONE);
	for (int i = 1; i < LQ_CODE_COUNT; i++) {
		const struct lq_code_info *c = lq_code_info((enum lq_code)i);
		CHECK_INT(c->id, i);
		CHECK(strncmp(c->text, "LQ-", 3) == 0);
		if (i > 1 && strcmp(lq_code_info((enum lq_code)(i - 1))->text,
		    c->text) >= 0) {
			fprintf(stderr, "codes.def: %s is not after %s\n", c->text,
			    lq_code_info((enum lq_code)(i - 1))->text);
			CHECK(0);
		}
		CHECK_INT(lq_code_find(c->text), i);
		CHECK(c->meaning != NULL && c->meaning[0] != '\0');
		CHECK(c->section == 1 || c->section == 5 || c->section == 7);
		CHECK(c->grade == LQ_WARN || c->grade == LQ_RETRY ||
		    c->grade == LQ_FAILED || c->grade == LQ_FATAL);
		if (c->flags & LQ_CODE_F_SNAP)
			CHECK_INT(c->section, 7);
	}
	struct lq_error e;
	error_clear(&e);
	error_set(&e, LQ_RETRY, "LQ-RUN-INT", "x");
	CHECK_INT(error_code(&e), LQ_CODE_RUN_INT);
	CHECK_INT(lq_code_info(LQ_CODE_GPU_OOM)->grade, LQ_RETRY);
}

/* Every code in src/ has a row; every row is used in src/. */
static void
test_sources(void)
{
	char *found = codes_in_sources();
	char *save = NULL;
	int n = 0;
	for (char *c = strtok_r(found, "\n", &save); c;
	    c = strtok_r(NULL, "\n", &save)) {
		n++;
		if (lq_code_find(c) == LQ_CODE_NONE) {
			fprintf(stderr, "%s is written in src/ but has no row in "
			    "src/core/codes.def\n", c);
			CHECK(0);
		}
	}
	free(found);
	CHECK_INT(n, LQ_CODE_COUNT - 1);
}

/* Each row is documented where its section says, and the reverse. */
static void
test_man(void)
{
	static const struct { int section; const char *page, *item; } pages[] = {
		{ 1, "man/latentq.1", ".It Sy %s\n" },
		{ 5, "man/latentq-manifest.5", ".It %s\n" },
		{ 7, "man/latentq-preflight.7", ".It Sy %s\n" },
	};
	for (size_t k = 0; k < sizeof(pages) / sizeof(pages[0]); k++) {
		char *p = xasprintf("%s/%s", srcdir, pages[k].page);
		char *man = util_read_file(p, NULL);
		CHECK(man != NULL);
		if (man == NULL) {
			free(p);
			continue;
		}
		for (int i = 1; i < LQ_CODE_COUNT; i++) {
			const struct lq_code_info *c = lq_code_info((enum lq_code)i);
			if (c->section != pages[k].section)
				continue;
			char want[64];
			snprintf(want, sizeof(want), pages[k].item, c->text);
			if (strstr(man, want) == NULL) {
				fprintf(stderr, "%s lacks %s (section %d in "
				    "codes.def)\n", pages[k].page, c->text,
				    c->section);
				CHECK(0);
			}
		}
		/* every code the page lists is a row of its section */
		const char *prefix = pages[k].section == 5 ? ".It LQ-" : ".It Sy LQ-";
		for (const char *q = strstr(man, prefix); q;
		    q = strstr(q + 1, prefix)) {
			char code[40];
			if (sscanf(q + strlen(prefix) - 3, "%39[A-Z0-9-]", code) != 1)
				continue;
			enum lq_code id = lq_code_find(code);
			if (id == LQ_CODE_NONE ||
			    lq_code_info(id)->section != pages[k].section) {
				fprintf(stderr, "%s documents %s, which codes.def "
				    "does not give section %d\n", pages[k].page,
				    code, pages[k].section);
				CHECK(0);
			}
		}
		free(man);
		free(p);
	}
}

int
main(void)
{
	srcdir = getenv("top_srcdir");
	if (srcdir == NULL)
		srcdir = LQ_SRCDIR;
	test_rows();
	test_sources();
	test_man();
	return test_summary();
}
