/*
 * error.h — latentq's error record.
 *
 * Results are graded as libarchive grades them and map onto job outcomes:
 *   LQ_OK      success
 *   LQ_WARN    succeeded, but something deserves the user's attention
 *   LQ_RETRY   failed, may pass next time (device lost, out of device
 *              memory, network, database busy)
 *   LQ_FAILED  this job / this input is bad; retrying will not help
 *   LQ_FATAL   the worker itself cannot go on
 *
 * A `struct lq_error` is caller-owned (usually on the stack) and holds
 * everything needed to print a message that names the input:
 *   latentq: jobs.yaml:14:9: jobs[2].height: 500 is not a multiple of 32; try 512
 * Functions that fail fill the record and return its status; on success they
 * leave it untouched.  A record is plain data: no free needed.
 */
#ifndef LQ_CORE_ERROR_H
#define LQ_CORE_ERROR_H

#include <stdarg.h>
#include <stdio.h>

enum lq_status {
	LQ_OK = 0,
	LQ_WARN = 1,
	LQ_RETRY = 2,
	LQ_FAILED = 3,
	LQ_FATAL = 4,
};

struct lq_error {
	enum lq_status status;
	char code[24];		/* stable code, e.g. "LQ-GEOM-001"; may be "" */
	char file[256];		/* input file, "" if none */
	int line, column;	/* 1-based; 0 when unknown */
	char field[128];	/* key path, e.g. "jobs[2].height"; may be "" */
	char message[768];	/* what is wrong, naming the value and the rule */
	char hint[256];		/* a valid alternative; may be "" */
};

/* Clears `err` to LQ_OK with every string empty. */
void error_clear(struct lq_error *err);

/*
 * Sets status, code (NULL for none) and a printf-style message; file, line,
 * field and hint are left as they were so callers can fill them before or
 * after.  Returns `status`.  `err` may be NULL (the error is then dropped).
 */
enum lq_status error_set(struct lq_error *err, enum lq_status status,
    const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Sets where the error is: file (may be NULL), line, column. */
void error_set_where(struct lq_error *err, const char *file, int line,
    int column);
/* Sets the field path (printf-style). */
void error_set_field(struct lq_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Sets the hint (printf-style). */
void error_set_hint(struct lq_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/*
 * Formats the record on one line into buf (size n), without the "latentq: "
 * prefix: "file:line:col: field: message; hint".  Returns buf.
 */
char *error_format(const struct lq_error *err, char *buf, size_t n);

/* Prints "latentq: <error_format>" and a newline to `fp`. */
void error_print(const struct lq_error *err, FILE *fp);

/* Human name of a status ("ok", "retry", ...). */
const char *error_status_name(enum lq_status status);

#endif
