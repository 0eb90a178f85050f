/* log.c — leveled messages to stderr (see log.h). */
#include <stdarg.h>
#include <stdio.h>

#include "core/log.h"
#include "core/util.h"

static enum log_level current = LOG_LEVEL_INFO;
static int line_open;	/* stderr holds a progress line with no newline */

void log_set_level(enum log_level level) { current = level; }
enum log_level log_get_level(void) { return current; }

static void
emit(enum log_level level, const char *tag, const char *fmt, va_list ap)
{
	if (level > current)
		return;
	log_clear_progress();
	/* Messages carry user strings (job names, paths): one line each,
	 * control characters escaped (util_escape_control). */
	char small[512];
	va_list aq;
	va_copy(aq, ap);
	int n = vsnprintf(small, sizeof(small), fmt, aq);
	va_end(aq);
	char *raw = small;
	if (n >= (int)sizeof(small)) {
		raw = xmalloc((size_t)n + 1);
		vsnprintf(raw, (size_t)n + 1, fmt, ap);
	} else if (n < 0) {
		small[0] = '\0';
	}
	char *safe = util_escape_control(raw);
	fprintf(stderr, "latentq: %s%s\n", tag, safe);
	free(safe);
	if (raw != small)
		free(raw);
}

#define LOG_FN(name, level, tag) \
void name(const char *fmt, ...) \
{ \
	va_list ap; \
	va_start(ap, fmt); \
	emit(level, tag, fmt, ap); \
	va_end(ap); \
}
LOG_FN(log_error, LOG_LEVEL_ERROR, "")
LOG_FN(log_warn, LOG_LEVEL_WARN, "warning: ")
LOG_FN(log_info, LOG_LEVEL_INFO, "")
LOG_FN(log_debug, LOG_LEVEL_DEBUG, "debug: ")

void
log_clear_progress(void)
{
	if (line_open)
		fputs("\r\033[K", stderr);
	line_open = 0;
}

void
log_partial_line(int open)
{
	line_open = open;
}

void
log_progress(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputc('\r', stderr);
	vfprintf(stderr, fmt, ap);
	fputs("\033[K", stderr);
	va_end(ap);
	fflush(stderr);
	line_open = 1;
}
