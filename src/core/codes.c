/*
 * codes.c — the error-code table (see codes.h), generated from codes.def.
 */
#include <string.h>

#include "core/codes.h"
#include "core/exit.h"
#include "core/util.h"

/*
 * A row's FLAGS may name one exit status of core/exit.def (IOERR, ...):
 * each name is its status shifted above the LQ_CODE_F_* bits, so that
 * exit.def stays the one list of statuses.
 */
#define EXIT_SHIFT 8
enum {
#define EXIT(name, value, meaning) name = (value) << EXIT_SHIFT,
#include "core/exit.def"
#undef EXIT
};
#define SNAP LQ_CODE_F_SNAP
#define HOST LQ_CODE_F_HOST
#define QUEUE LQ_CODE_F_QUEUE

static const struct lq_code_info table[LQ_CODE_COUNT] = {
	[LQ_CODE_NONE] = { LQ_CODE_NONE, "", LQ_OK, 0, EXIT_RUNTIME, 0,
	    "no code" },
#define LQ_CODE(id_, text_, grade_, flags_, section_, meaning_) \
	[LQ_CODE_##id_] = { LQ_CODE_##id_, text_, LQ_##grade_, \
	    (unsigned)(flags_) & ((1u << EXIT_SHIFT) - 1), \
	    ((unsigned)(flags_) >> EXIT_SHIFT) != 0 ? \
	    (int)((unsigned)(flags_) >> EXIT_SHIFT) : EXIT_RUNTIME, \
	    section_, meaning_ },
#include "core/codes.def"
#undef LQ_CODE
};

const struct lq_code_info *
lq_code_info(enum lq_code id)
{
	LQ_ASSERT((int)id >= 0 && id < LQ_CODE_COUNT);
	return &table[id];
}

enum lq_code
lq_code_find(const char *text)
{
	if (text == NULL || text[0] == '\0')
		return LQ_CODE_NONE;
	/* the rows are sorted by text (tests/core/test-codes checks it) */
	size_t lo = 1, hi = LQ_CODE_COUNT;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(table[mid].text, text);
		if (c == 0)
			return (enum lq_code)mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return LQ_CODE_NONE;
}

enum lq_code
error_code(const struct lq_error *err)
{
	return lq_code_find(err->code);
}
