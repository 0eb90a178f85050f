/*
 * exit.h — the exit statuses of every latentq command and of the worker
 * child (src/worker/protocol.h), from the one table in exit.def.
 *
 * They are sysexits(3) values so that schedulers decide retries by them:
 * 75 (EX_TEMPFAIL) means "run me again", 69 (EX_UNAVAILABLE) "run me on
 * another host", 65/66 "fix the input first".
 */
#ifndef LQ_CORE_EXIT_H
#define LQ_CORE_EXIT_H

#include "core/error.h"

enum lq_exit {
#define EXIT(name, value, meaning) EXIT_##name = value,
#include "core/exit.def"
#undef EXIT
};

/* The table's one-line meaning of an exit status; NULL if not in it. */
const char *lq_exit_meaning(int status);

/*
 * The exit status for a command that failed with `err` (not LQ_OK):
 *   LQ_RETRY → 75 (EX_TEMPFAIL); LQ_FATAL → 69 (the host cannot do it);
 *   LQ_FAILED → the status its code's row in core/codes.def names
 *   (for example LQ-DB-* 74, LQ-JOB-001 66, LQ-SIGN-002 73), else 1.
 */
int lq_exit_for_error(const struct lq_error *err);

#endif
