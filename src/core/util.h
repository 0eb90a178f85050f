/*
 * util.h — host memory and small string helpers.
 *
 * Host allocation failure is not a runtime condition latentq recovers from:
 * xmalloc and friends print the size and exit(70).  Everything they return is
 * caller-owned and released with free().  LQ_ASSERT is for broken
 * invariants (bugs): it prints file:line and aborts, in every build.
 */
#ifndef LQ_CORE_UTIL_H
#define LQ_CORE_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define LQ_ASSERT(cond) do { \
	if (!(cond)) { \
		fprintf(stderr, "latentq: %s:%d: assertion failed: %s\n", \
		    __FILE__, __LINE__, #cond); \
		abort(); \
	} \
} while (0)

#define LQ_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
/* printf into a freshly allocated string. */
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A growable NUL-terminated string.  Zero-initialise, then append; free buf. */
struct strbuf {
	char *buf;
	size_t len, cap;
};
void strbuf_append(struct strbuf *sb, const char *s, size_t n);
void strbuf_printf(struct strbuf *sb, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Takes ownership of the buffer (never NULL) and resets sb. */
char *strbuf_release(struct strbuf *sb);

/*
 * Reads a whole file into a caller-owned NUL-terminated buffer; *size gets
 * the byte count (may be NULL).  Returns NULL with errno set on failure.
 */
char *util_read_file(const char *path, size_t *size);

/* Levenshtein distance, used for did-you-mean suggestions. */
int util_edit_distance(const char *a, const char *b);

/* Seconds since the Unix epoch, as a double (CLOCK_REALTIME). */
double util_now(void);
/* Monotonic seconds, for measuring durations. */
double util_monotonic(void);

/*
 * mkdir -p: creates `dir` and its missing parents with `mode` (umask
 * applies).  Returns 0, or -1 with errno set (and the failing prefix
 * in *failed when failed != NULL: caller-owned).
 */
int util_mkdir_p(const char *dir, unsigned mode, char **failed);

#endif
