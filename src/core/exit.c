/* exit.c — exit statuses from exit.def, and the error → status rule. */
#include <string.h>

#include "core/exit.h"

const char *
lq_exit_meaning(int status)
{
	switch (status) {
#define EXIT(name, value, meaning) case value: return meaning;
#include "core/exit.def"
#undef EXIT
	}
	return NULL;
}

static int
has_prefix(const char *s, const char *p)
{
	return strncmp(s, p, strlen(p)) == 0;
}

int
lq_exit_for_error(const struct lq_error *err)
{
	const char *code = err->code;
	if (err->status == LQ_RETRY)
		return EXIT_TEMPFAIL;
	if (err->status == LQ_FATAL)
		return EXIT_UNAVAILABLE;
	if (strcmp(code, "LQ-DB-NOENT") == 0 || strcmp(code, "LQ-JOB-001") == 0 ||
	    strcmp(code, "LQ-MAN-011") == 0)
		return EXIT_NOINPUT;
	if (strcmp(code, "LQ-DB-002") == 0 || strcmp(code, "LQ-JOB-002") == 0)
		return EXIT_DATAERR;
	if (has_prefix(code, "LQ-DB-") || has_prefix(code, "LQ-IO-"))
		return EXIT_IOERR;
	return EXIT_RUNTIME;
}
