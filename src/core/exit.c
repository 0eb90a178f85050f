/* exit.c — exit statuses from exit.def, and the error → status rule. */
#include "core/codes.h"
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

int
lq_exit_for_error(const struct lq_error *err)
{
	if (err->status == LQ_RETRY)
		return EXIT_TEMPFAIL;
	if (err->status == LQ_FATAL)
		return EXIT_UNAVAILABLE;
	return lq_code_info(error_code(err))->exit_status;
}
