/*
 * codes.c — the table of preflight codes: the rows of the error-code table
 * (core/codes.def) whose man page is latentq-preflight(7).  Every one is
 * documented there with a failing and a fixed example and has a failing
 * manifest under tests/preflight/cases/ (tests/preflight/test-preflight
 * checks both).
 */
#include <string.h>

#include "core/codes.h"
#include "core/util.h"
#include "preflight/preflight.h"

static struct preflight_code codes[LQ_CODE_COUNT];
static size_t n_codes;

static void
build(void)
{
	if (n_codes > 0)
		return;
	for (int i = 1; i < LQ_CODE_COUNT; i++) {
		const struct lq_code_info *c = lq_code_info((enum lq_code)i);
		if (c->section != 7)
			continue;
		codes[n_codes++] = (struct preflight_code){ c->text,
		    c->flags & LQ_CODE_F_SNAP ? "error|warning"
		    : c->grade == LQ_WARN ? "warning" : "error", c->meaning };
	}
}

size_t
preflight_code_count(void)
{
	build();
	return n_codes;
}

const struct preflight_code *
preflight_code_at(size_t i)
{
	build();
	LQ_ASSERT(i < n_codes);
	return &codes[i];
}

const struct preflight_code *
preflight_code_find(const char *code)
{
	build();
	const struct lq_code_info *c = lq_code_info(lq_code_find(code));
	for (size_t i = 0; c->section == 7 && i < n_codes; i++)
		if (codes[i].code == c->text)
			return &codes[i];
	return NULL;
}
