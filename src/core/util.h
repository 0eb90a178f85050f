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
 * errno value (outside the system's range) for "not a regular file": a
 * folder, FIFO, socket or device where a file was expected.  util_strerror
 * names it.
 */
#define UTIL_ENOTREG 4095

/* strerror(e), and a message for UTIL_ENOTREG. */
const char *util_strerror(int e);

/*
 * Opens `path` read-only for an input file: with O_NONBLOCK (opening a FIFO
 * for reading would otherwise wait for a writer forever), then refuses
 * anything but a regular file (errno UTIL_ENOTREG).  Returns the
 * descriptor (O_CLOEXEC, back in
 * blocking mode), or -1 with errno set.  The caller closes it.
 */
int util_open_regular(const char *path);

/*
 * Reads a whole regular file (util_open_regular) into a caller-owned
 * NUL-terminated buffer; *size gets the byte count (may be NULL).  A file
 * larger than `max` bytes is refused with errno EFBIG before any of it is
 * read.  Returns NULL with errno set on failure (util_strerror explains).
 */
char *util_read_file_max(const char *path, size_t max, size_t *size);

/*
 * Reads what is left of an open stream (a pipe too), at most `max` bytes
 * (EFBIG past that, nothing kept), into a caller-owned NUL-terminated
 * buffer.  The caller closes fp.  NULL with errno set on failure.
 */
char *util_read_stream_max(FILE *fp, size_t max, size_t *size);

/* util_read_file_max without a size limit. */
char *util_read_file(const char *path, size_t *size);

/*
 * A copy of `s` safe to print on a terminal (caller frees; NULL gives "").
 * Control characters are escaped -- \n \r \t, other C0 bytes and DEL as
 * \xNN, C1 controls (U+0080..U+009F, which terminals may act on) as
 * \u00NN -- and so is each byte that is not part of valid UTF-8 (\xNN).
 * Everything else, backslashes included, is copied as is.  Used for every
 * user string in human-readable output (status, show, list, logs, errors).
 */
char *util_escape_control(const char *s);

/*
 * Length of the valid UTF-8 sequence at s (1..4), or 0 when s does not
 * start one (a stray continuation byte, an overlong form, a surrogate, past
 * U+10FFFF, or cut short by NUL).  *cp gets the code point.
 */
size_t util_utf8_decode(const char *s, uint32_t *cp);

/*
 * Cuts s (in place) before a UTF-8 sequence a bounded copy left
 * incomplete at its end (snprintf into a fixed buffer cuts at a byte, not
 * a character), so that what was valid UTF-8 stays valid.  Returns s.
 */
char *util_utf8_trim(char *s);

/*
 * s as util_escape_control writes it, into buf of n bytes (n >= 4): when
 * it does not fit, cut at a character and ended with "…" (U+2026).
 * Returns buf.  For a user's value quoted in a fixed-size message.
 */
char *util_text_fit(char *buf, size_t n, const char *s);

/*
 * The environment switch `name`: 1 for 1, yes, true or on, 0 for 0, no,
 * false or off (any case), `dflt` when unset or empty; any other value is
 * ignored with a warning naming it (so LATENTQ_GPU_HOST_GEMM=off cannot
 * switch the host path on).  latentq(1) ENVIRONMENT.
 */
int util_env_switch(const char *name, int dflt);

/* Levenshtein distance, used for did-you-mean suggestions. */
int util_edit_distance(const char *a, const char *b);

/* Seconds since the Unix epoch, as a double (CLOCK_REALTIME). */
double util_now(void);
/* Monotonic seconds, for measuring durations. */
double util_monotonic(void);

/*
 * The non-negative number of seconds in environment variable `name`, or
 * `def` when it is unset, empty, not a number or negative.
 */
double util_env_seconds(const char *name, double def);

/*
 * mkdir -p: creates `dir` and its missing parents with `mode` (umask
 * applies).  Returns 0, or -1 with errno set (and the failing prefix
 * in *failed when failed != NULL: caller-owned).
 */
int util_mkdir_p(const char *dir, unsigned mode, char **failed);

#endif
