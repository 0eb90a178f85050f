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
#include "core/exit.h"
#include "core/file.h"
#include "core/util.h"
#include "store/jobs.h"
#include "store/store.h"
#include "test.h"
#include "worker/protocol.h"

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

/*
 * FLAGS name at most one exit status (two would be OR-ed into a third
 * silently), HOST is the LQ-GPU-* rows and QUEUE the LQ-DB-* rows but
 * LQ-DB-010 (a model name conflict: bad input, not a database fault).
 */
static void
test_flags(void)
{
	char *p = xasprintf("%s/src/core/codes.def", srcdir);
	char *def = util_read_file(p, NULL);
	free(p);
	CHECK(def != NULL);
	int rows = 0;
	for (const char *q = def ? strstr(def, "\nLQ_CODE(") : NULL; q;
	    q = strstr(q + 1, "\nLQ_CODE(")) {
		char text[40], flags[80];
		if (sscanf(q, "\nLQ_CODE(%*[A-Z0-9_], \"%39[^\"]\", %*[A-Z], "
		    "%79[A-Z0-9|],", text, flags) != 2) {
			fprintf(stderr, "codes.def: cannot read the row at %.40s\n",
			    q + 1);
			CHECK(0);
			continue;
		}
		rows++;
		int exits = 0;
		char *save = NULL;
		for (char *f = strtok_r(flags, "|", &save); f;
		    f = strtok_r(NULL, "|", &save))
			if (strcmp(f, "0") != 0 && strcmp(f, "SNAP") != 0 &&
			    strcmp(f, "HOST") != 0 && strcmp(f, "QUEUE") != 0)
				exits++;
		if (exits > 1) {
			fprintf(stderr, "codes.def: %s names %d exit statuses\n",
			    text, exits);
			CHECK(0);
		}
	}
	free(def);
	CHECK_INT(rows, LQ_CODE_COUNT - 1);
	for (int i = 1; i < LQ_CODE_COUNT; i++) {
		const struct lq_code_info *c = lq_code_info((enum lq_code)i);
		CHECK(lq_exit_meaning(c->exit_status) != NULL);
		CHECK(c->exit_status != EXIT_OK);
		CHECK_INT(!!(c->flags & LQ_CODE_F_HOST),
		    strncmp(c->text, "LQ-GPU-", 7) == 0);
		CHECK_INT(!!(c->flags & LQ_CODE_F_QUEUE),
		    strncmp(c->text, "LQ-DB-", 6) == 0 && i != LQ_CODE_DB_010);
	}
}

static int
exit_for(enum lq_status status, const char *code)
{
	struct lq_error e;
	error_clear(&e);
	error_set(&e, status, code, "x");
	return lq_exit_for_error(&e);
}

static int
worker_exit(enum lq_status status, const char *code, const char *phase)
{
	struct lq_error e;
	error_clear(&e);
	error_set(&e, status, code, "x");
	return worker_exit_for(&e, phase);
}

/* A command's exit status and the worker child's come from the rows. */
static void
test_exit(void)
{
	/* the grade decides first */
	CHECK_INT(exit_for(LQ_RETRY, "LQ-GPU-OOM"), EXIT_TEMPFAIL);
	CHECK_INT(exit_for(LQ_RETRY, "LQ-DB-001"), EXIT_TEMPFAIL);
	CHECK_INT(exit_for(LQ_FATAL, "LQ-GPU-NODEV"), EXIT_UNAVAILABLE);
	/* then the row's exit status */
	CHECK_INT(exit_for(LQ_FAILED, "LQ-DB-004"), EXIT_IOERR);
	CHECK_INT(exit_for(LQ_FAILED, "LQ-DB-002"), EXIT_DATAERR);
	CHECK_INT(exit_for(LQ_FAILED, "LQ-DB-NOENT"), EXIT_NOINPUT);
	CHECK_INT(exit_for(LQ_FAILED, "LQ-DB-010"), EXIT_DATAERR);
	CHECK_INT(exit_for(LQ_FAILED, "LQ-JOB-001"), EXIT_NOINPUT);
	CHECK_INT(exit_for(LQ_FAILED, "LQ-JOB-002"), EXIT_DATAERR);
	CHECK_INT(exit_for(LQ_FAILED, "LQ-MAN-011"), EXIT_NOINPUT);
	CHECK_INT(exit_for(LQ_FAILED, "LQ-IO-001"), EXIT_IOERR);
	CHECK_INT(exit_for(LQ_FAILED, "LQ-MODEL-023"), EXIT_DATAERR);
	CHECK_INT(exit_for(LQ_FAILED, "LQ-SIGN-001"), EXIT_USAGE);
	CHECK_INT(exit_for(LQ_FAILED, "LQ-SIGN-002"), EXIT_CANTCREAT);
	CHECK_INT(exit_for(LQ_FAILED, "LQ-BUNDLE-001"), EXIT_USAGE);
	CHECK_INT(exit_for(LQ_FAILED, "LQ-ST-001"), EXIT_DATAERR);
	/* no status named: 1; an unknown code too */
	CHECK_INT(exit_for(LQ_FAILED, "LQ-GPU-RANGE"), EXIT_RUNTIME);
	CHECK_INT(exit_for(LQ_FAILED, "LQ-RUN-CFG"), EXIT_RUNTIME);
	/* bundles, keys, downloads (issue 19's leftovers) */
	CHECK_INT(exit_for(LQ_FAILED, "LQ-BUNDLE-006"), EXIT_NOINPUT);
	CHECK_INT(exit_for(LQ_FAILED, "LQ-BUNDLE-005"), EXIT_DATAERR);
	CHECK_INT(exit_for(LQ_FAILED, "LQ-BUNDLE-008"), EXIT_CANTCREAT);
	CHECK_INT(exit_for(LQ_FAILED, "LQ-SIGN-003"), EXIT_NOINPUT);
	CHECK_INT(exit_for(LQ_FAILED, "LQ-SIGN-005"), EXIT_DATAERR);
	CHECK_INT(exit_for(LQ_FAILED, "LQ-NET-008"), EXIT_NOINPUT);
	CHECK_INT(exit_for(LQ_FAILED, "LQ-NET-002"), EXIT_UNAVAILABLE);
	CHECK_INT(exit_for(LQ_RETRY, "LQ-NET-002"), EXIT_TEMPFAIL);
	CHECK_INT(exit_for(LQ_FAILED, "LQ-NOPE-001"), EXIT_RUNTIME);

	/* the worker child (worker/protocol.h) */
	CHECK_INT(worker_exit(LQ_FAILED, JOB_CODE_LEASE_LOST, "denoise"),
	    WORKER_EXIT_LEASE_LOST);
	CHECK_INT(worker_exit(LQ_RETRY, FILE_CODE_STORAGE, "decode"), EXIT_IOERR);
	CHECK_INT(worker_exit(LQ_RETRY, STORE_CODE_STORAGE, "denoise"),
	    EXIT_IOERR);
	CHECK_INT(worker_exit(LQ_FATAL, "LQ-RUN-SPAWN", "denoise"),
	    EXIT_UNAVAILABLE);
	/* a device error before the first step is the host's, after it the job's */
	CHECK_INT(worker_exit(LQ_RETRY, "LQ-GPU-OOM", "load"), EXIT_UNAVAILABLE);
	CHECK_INT(worker_exit(LQ_FAILED, "LQ-GPU-VK", "compile"),
	    EXIT_UNAVAILABLE);
	CHECK_INT(worker_exit(LQ_RETRY, "LQ-GPU-OOM", "denoise"), EXIT_TEMPFAIL);
	CHECK_INT(worker_exit(LQ_FAILED, "LQ-GPU-VK", "denoise"), EXIT_DATAERR);
	CHECK_INT(worker_exit(LQ_FAILED, "LQ-GPU-VK", NULL), EXIT_DATAERR);
	/* the queue database's faults give the job back */
	CHECK_INT(worker_exit(LQ_FAILED, "LQ-DB-001", "denoise"), EXIT_IOERR);
	CHECK_INT(worker_exit(LQ_FAILED, "LQ-DB-004", NULL), EXIT_IOERR);
	/* an output file's fault is the job's */
	CHECK_INT(worker_exit(LQ_FAILED, "LQ-IO-004", "decode"), EXIT_DATAERR);
	CHECK_INT(worker_exit(LQ_RETRY, "LQ-RUN-INT", "denoise"), EXIT_TEMPFAIL);
	CHECK_INT(worker_exit(LQ_FAILED, "LQ-RUN-NAN", "denoise"), EXIT_DATAERR);
}

/*
 * latentq(1) DIAGNOSTICS gives a section-1 row as the table does:
 * ".It Sy CODE" then "(grade[, exit N]) Meaning." with roff escapes.
 */
static void
man1_entry(const struct lq_code_info *c, char *buf, size_t n)
{
	static const char *const grades[] = {
		[LQ_WARN] = "warning", [LQ_RETRY] = "retry",
		[LQ_FAILED] = "failed", [LQ_FATAL] = "fatal",
	};
	struct strbuf sb = {0};
	strbuf_printf(&sb, ".It Sy %s\n(%s", c->text, grades[c->grade]);
	if (c->grade == LQ_FAILED && c->exit_status != EXIT_RUNTIME)
		strbuf_printf(&sb, ", exit %d", c->exit_status);
	strbuf_printf(&sb, ") ");
	for (const char *m = c->meaning; *m; m++) {
		char ch = m == c->meaning && *m >= 'a' && *m <= 'z' ?
		    (char)(*m - 'a' + 'A') : *m;
		if (ch == '\'')
			strbuf_printf(&sb, "\\(aq");
		else if (ch == '-')
			strbuf_printf(&sb, "\\-");
		else
			strbuf_printf(&sb, "%c", ch);
	}
	strbuf_printf(&sb, "%s\n", sb.len > 0 && sb.buf[sb.len - 1] == '.' ?
	    "" : ".");
	char *e = strbuf_release(&sb);
	snprintf(buf, n, "%s", e);
	free(e);
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
			} else if (c->section == 1) {
				char entry[512];
				man1_entry(c, entry, sizeof(entry));
				if (strstr(man, entry) == NULL) {
					fprintf(stderr, "%s: %s is not documented "
					    "as its row says:\n%s", pages[k].page,
					    c->text, entry);
					CHECK(0);
				}
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
	test_flags();
	test_exit();
	test_man();
	return test_summary();
}
