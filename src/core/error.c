/* error.c — the error record (see error.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/util.h"
#include "core/log.h"

void
error_clear(struct lq_error *err)
{
	memset(err, 0, sizeof(*err));
}

enum lq_status
error_set(struct lq_error *err, enum lq_status status, const char *code,
    const char *fmt, ...)
{
	if (err == NULL)
		return status;
	err->status = status;
	snprintf(err->code, sizeof(err->code), "%s", code ? code : "");
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof(err->message), fmt, ap);
	util_utf8_trim(err->message);
	va_end(ap);
	return status;
}

void
error_set_where(struct lq_error *err, const char *file, int line, int column)
{
	if (err == NULL)
		return;
	snprintf(err->file, sizeof(err->file), "%s", file ? file : "");
	err->line = line;
	err->column = column;
}

void
error_set_field(struct lq_error *err, const char *fmt, ...)
{
	if (err == NULL)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err->field, sizeof(err->field), fmt, ap);
	util_utf8_trim(err->field);
	va_end(ap);
}

void
error_set_hint(struct lq_error *err, const char *fmt, ...)
{
	if (err == NULL)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err->hint, sizeof(err->hint), fmt, ap);
	util_utf8_trim(err->hint);
	va_end(ap);
}

char *
error_format(const struct lq_error *err, char *buf, size_t n)
{
	size_t len = 0;
	buf[0] = '\0';
#define APPEND(...) do { \
	if (len < n) { \
		int r_ = snprintf(buf + len, n - len, __VA_ARGS__); \
		if (r_ > 0) len += (size_t)r_; \
	} \
} while (0)
	if (err->file[0] != '\0') {
		APPEND("%s:", err->file);
		if (err->line > 0) {
			APPEND("%d:", err->line);
			if (err->column > 0)
				APPEND("%d:", err->column);
		}
		APPEND(" ");
	}
	if (err->field[0] != '\0')
		APPEND("%s: ", err->field);
	APPEND("%s", err->message);
	if (err->hint[0] != '\0')
		APPEND("; %s", err->hint);
	if (err->code[0] != '\0')
		APPEND(" [%s]", err->code);
#undef APPEND
	return buf;
}

void
error_print(const struct lq_error *err, FILE *fp)
{
	char buf[1536];
	if (fp == stderr)
		log_clear_progress();
	/* The message quotes user values: escape control characters. */
	char *safe = util_escape_control(error_format(err, buf, sizeof(buf)));
	fprintf(fp, "latentq: %s\n", safe);
	free(safe);
}

const char *
error_status_name(enum lq_status status)
{
	switch (status) {
	case LQ_OK: return "ok";
	case LQ_WARN: return "warning";
	case LQ_RETRY: return "retry";
	case LQ_FAILED: return "failed";
	case LQ_FATAL: return "fatal";
	}
	return "unknown";
}
