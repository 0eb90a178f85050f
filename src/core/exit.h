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
 *   LQ_RETRY → 75; LQ_FATAL → 69 (the host cannot do it);
 *   LQ-DB-002 (a newer schema) → 65; other LQ-DB-*, LQ-IO-* → 74;
 *   LQ-DB-NOENT, LQ-JOB-001 (no such job), LQ-MAN-011 (unreadable
 *   manifest) → 66; LQ-JOB-002 (not in a state for this) → 65;
 *   anything else LQ_FAILED → 1.
 */
int lq_exit_for_error(const struct lq_error *err);

#endif
