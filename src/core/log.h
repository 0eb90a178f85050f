/*
 * log.h — messages to stderr.  Level set once from -v/-q; messages below it
 * are dropped.  Every line starts with "latentq: ".
 */
#ifndef LQ_CORE_LOG_H
#define LQ_CORE_LOG_H

enum log_level { LOG_LEVEL_ERROR, LOG_LEVEL_WARN, LOG_LEVEL_INFO, LOG_LEVEL_DEBUG };

void log_set_level(enum log_level level);
enum log_level log_get_level(void);
void log_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * Progress on a terminal: log_progress draws "\r<text>" with no newline;
 * every later message (log_*, error_print) first clears it, so progress
 * and log lines never interleave.  log_partial_line(1) says stderr holds
 * someone else's progress line (the supervisor relaying its child's).
 */
void log_progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_clear_progress(void);
void log_partial_line(int open);

#endif
