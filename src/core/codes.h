/*
 * codes.h — the table of error codes (core/codes.def) as data: an enum
 * generated from its rows, and lookups by enum and by text.  Control flow
 * compares enums (error_code(&err) == LQ_CODE_RUN_INT) or reads a row's
 * flags and exit status, never the code's text.
 *
 * Everything returned is static and borrowed for the life of the program.
 */
#ifndef LQ_CORE_CODES_H
#define LQ_CORE_CODES_H

#include <stddef.h>

#include "core/error.h"

#define LQ_CODE_F_SNAP 1u	/* --snap / truncate: true downgrade it to a warning */
#define LQ_CODE_F_HOST 2u	/* a fault of this host's device (LQ-GPU-*) */
#define LQ_CODE_F_QUEUE 4u	/* a fault of the queue database (LQ-DB-*) */

enum lq_code {
	LQ_CODE_NONE = 0,	/* "" or a code the table does not know */
#define LQ_CODE(id, text, grade, flags, section, meaning) LQ_CODE_##id,
#include "core/codes.def"
#undef LQ_CODE
	LQ_CODE_COUNT
};

struct lq_code_info {
	enum lq_code id;
	const char *text;		/* "LQ-GEOM-001" */
	enum lq_status grade;
	unsigned flags;			/* LQ_CODE_F_* */
	int exit_status;		/* a command that fails (LQ_FAILED) with
					 * it exits with this (core/exit.def;
					 * EXIT_RUNTIME unless the row names one) */
	int section;			/* man page section: 1, 5 or 7 */
	const char *meaning;		/* one line */
};

/* Row `id` (LQ_CODE_NONE .. LQ_CODE_COUNT - 1; NONE has text ""). */
const struct lq_code_info *lq_code_info(enum lq_code id);

/* The row whose text is `text`, or LQ_CODE_NONE (also for NULL). */
enum lq_code lq_code_find(const char *text);

/* The code of an error record (lq_code_find of err->code). */
enum lq_code error_code(const struct lq_error *err);

#endif
