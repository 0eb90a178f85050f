/* util.c — host memory and string helpers (see util.h). */
#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "core/util.h"

static void
oom(size_t n)
{
	fprintf(stderr, "latentq: out of host memory allocating %zu bytes\n", n);
	exit(70);
}

void *
xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (p == NULL)
		oom(n);
	return p;
}

void *
xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (p == NULL)
		oom(n * size);
	return p;
}

void *
xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (q == NULL)
		oom(n);
	return q;
}

char *
xstrdup(const char *s)
{
	return xstrndup(s, strlen(s));
}

char *
xstrndup(const char *s, size_t n)
{
	char *p = xmalloc(n + 1);
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

char *
xasprintf(const char *fmt, ...)
{
	va_list ap, ap2;
	va_start(ap, fmt);
	va_copy(ap2, ap);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	LQ_ASSERT(n >= 0);
	char *p = xmalloc((size_t)n + 1);
	vsnprintf(p, (size_t)n + 1, fmt, ap2);
	va_end(ap2);
	return p;
}

void
strbuf_append(struct strbuf *sb, const char *s, size_t n)
{
	if (sb->len + n + 1 > sb->cap) {
		size_t cap = sb->cap ? sb->cap : 64;
		while (cap < sb->len + n + 1)
			cap *= 2;
		sb->buf = xrealloc(sb->buf, cap);
		sb->cap = cap;
	}
	memcpy(sb->buf + sb->len, s, n);
	sb->len += n;
	sb->buf[sb->len] = '\0';
}

void
strbuf_printf(struct strbuf *sb, const char *fmt, ...)
{
	va_list ap, ap2;
	va_start(ap, fmt);
	va_copy(ap2, ap);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	LQ_ASSERT(n >= 0);
	char *tmp = xmalloc((size_t)n + 1);
	vsnprintf(tmp, (size_t)n + 1, fmt, ap2);
	va_end(ap2);
	strbuf_append(sb, tmp, (size_t)n);
	free(tmp);
}

char *
strbuf_release(struct strbuf *sb)
{
	char *p = sb->buf ? sb->buf : xstrdup("");
	sb->buf = NULL;
	sb->len = sb->cap = 0;
	return p;
}

char *
util_read_file(const char *path, size_t *size)
{
	FILE *fp = fopen(path, "rb");
	if (fp == NULL)
		return NULL;
	struct strbuf sb = {0};
	char chunk[65536];
	size_t n;
	while ((n = fread(chunk, 1, sizeof(chunk), fp)) > 0)
		strbuf_append(&sb, chunk, n);
	int bad = ferror(fp);
	int saved = errno;
	fclose(fp);
	if (bad) {
		free(sb.buf);
		errno = saved ? saved : EIO;
		return NULL;
	}
	if (size != NULL)
		*size = sb.len;
	return strbuf_release(&sb);
}

int
util_edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	int *row = xmalloc((lb + 1) * sizeof(int));
	for (size_t j = 0; j <= lb; j++)
		row[j] = (int)j;
	for (size_t i = 1; i <= la; i++) {
		int diag = row[0];
		row[0] = (int)i;
		for (size_t j = 1; j <= lb; j++) {
			int up = row[j];
			int best = diag + (a[i - 1] != b[j - 1]);
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			if (up + 1 < best)
				best = up + 1;
			row[j] = best;
			diag = up;
		}
	}
	int d = row[lb];
	free(row);
	return d;
}

double
util_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

double
util_monotonic(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int
util_mkdir_p(const char *dir, unsigned mode, char **failed)
{
	if (failed != NULL)
		*failed = NULL;
	char *p = xstrdup(dir);
	for (char *s = p + 1;; s++) {
		if (*s != '/' && *s != '\0')
			continue;
		char c = *s;
		*s = '\0';
		if (p[0] != '\0' && mkdir(p, (mode_t)mode) != 0 && errno != EEXIST) {
			int e = errno;
			if (failed != NULL)
				*failed = xstrdup(p);
			free(p);
			errno = e;
			return -1;
		}
		*s = c;
		if (c == '\0')
			break;
	}
	free(p);
	return 0;
}
