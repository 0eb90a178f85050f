/*
 * codes.c — the error-code table (see codes.h), generated from codes.def.
 */
#include <string.h>

#include "core/codes.h"
#include "core/util.h"

static const struct lq_code_info table[LQ_CODE_COUNT] = {
	[LQ_CODE_NONE] = { LQ_CODE_NONE, "", LQ_OK, 0, 0, "no code" },
#define LQ_CODE(id_, text_, grade_, flags_, section_, meaning_) \
	[LQ_CODE_##id_] = { LQ_CODE_##id_, text_, LQ_##grade_, \
	    (unsigned)(flags_), section_, meaning_ },
#define SNAP LQ_CODE_F_SNAP
#define INPUT LQ_CODE_F_INPUT
#include "core/codes.def"
#undef LQ_CODE
#undef SNAP
#undef INPUT
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
