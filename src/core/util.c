/* util.c — host memory and string helpers (see util.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdarg.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/util.h"
#include "core/log.h"

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

const char *
util_strerror(int e)
{
	if (e == UTIL_ENOTREG)
		return "not a regular file (a folder, FIFO, socket or device)";
	return strerror(e);
}

int
util_open_regular(const char *path)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -1;
	struct stat sb;
	if (fstat(fd, &sb) != 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	if (!S_ISREG(sb.st_mode)) {
		close(fd);
		errno = UTIL_ENOTREG;
		return -1;
	}
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		(void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	return fd;
}

char *
util_read_file_max(const char *path, size_t max, size_t *size)
{
	int fd = util_open_regular(path);
	if (fd < 0)
		return NULL;
	struct stat sb;
	int e = fstat(fd, &sb) != 0 ? errno :
	    (uint64_t)sb.st_size > (uint64_t)max ? EFBIG : 0;
	if (e != 0) {
		close(fd);
		errno = e;
		return NULL;
	}
	FILE *fp = fdopen(fd, "rb");
	if (fp == NULL) {
		int e = errno;
		close(fd);
		errno = e;
		return NULL;
	}
	char *text = util_read_stream_max(fp, max, size);
	e = errno;
	fclose(fp);
	errno = e;
	return text;
}

char *
util_read_stream_max(FILE *fp, size_t max, size_t *size)
{
	struct strbuf sb_ = {0};
	char chunk[65536];
	size_t n;
	/* A file may grow after its size was checked: never keep more
	 * than max bytes. */
	while ((n = fread(chunk, 1, sizeof(chunk), fp)) > 0) {
		if (n > max - sb_.len) {
			free(sb_.buf);
			errno = EFBIG;
			return NULL;
		}
		strbuf_append(&sb_, chunk, n);
	}
	int bad = ferror(fp);
	int saved = errno;
	if (bad) {
		free(sb_.buf);
		errno = saved ? saved : EIO;
		return NULL;
	}
	if (size != NULL)
		*size = sb_.len;
	return strbuf_release(&sb_);
}

char *
util_read_file(const char *path, size_t *size)
{
	return util_read_file_max(path, SIZE_MAX, size);
}

size_t
util_utf8_decode(const char *s, uint32_t *cp)
{
	const unsigned char *u = (const unsigned char *)s;
	uint32_t c = u[0];
	size_t n;
	uint32_t min;
	if (c < 0x80) {
		*cp = c;
		return 1;
	} else if ((c & 0xe0) == 0xc0) {
		n = 2, c &= 0x1f, min = 0x80;
	} else if ((c & 0xf0) == 0xe0) {
		n = 3, c &= 0x0f, min = 0x800;
	} else if ((c & 0xf8) == 0xf0) {
		n = 4, c &= 0x07, min = 0x10000;
	} else {
		return 0;
	}
	for (size_t i = 1; i < n; i++) {
		if ((u[i] & 0xc0) != 0x80)	/* NUL ends it here too */
			return 0;
		c = (c << 6) | (u[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return n;
}

char *
util_escape_control(const char *s)
{
	struct strbuf sb = {0};
	strbuf_append(&sb, "", 0);
	for (const char *p = s ? s : ""; *p;) {
		uint32_t cp;
		size_t n = util_utf8_decode(p, &cp);
		if (n == 0) {
			strbuf_printf(&sb, "\\x%02x", (unsigned char)*p);
			p++;
			continue;
		}
		if (cp == '\n')
			strbuf_append(&sb, "\\n", 2);
		else if (cp == '\r')
			strbuf_append(&sb, "\\r", 2);
		else if (cp == '\t')
			strbuf_append(&sb, "\\t", 2);
		else if (cp < 0x20 || cp == 0x7f)
			strbuf_printf(&sb, "\\x%02x", (unsigned)cp);
		else if (cp >= 0x80 && cp <= 0x9f)
			strbuf_printf(&sb, "\\u%04x", (unsigned)cp);
		else
			strbuf_append(&sb, p, n);
		p += n;
	}
	return strbuf_release(&sb);
}

int
util_env_switch(const char *name, int dflt)
{
	static const char *const on[] = {"1", "yes", "true", "on"};
	static const char *const off[] = {"0", "no", "false", "off"};
	const char *e = getenv(name);
	if (e == NULL || *e == '\0')
		return dflt;
	for (size_t i = 0; i < LQ_ARRAY_LEN(on); i++) {
		if (strcasecmp(e, on[i]) == 0)
			return 1;
		if (strcasecmp(e, off[i]) == 0)
			return 0;
	}
	char *v = util_escape_control(e);
	log_warn("%s=%s is not 0 or 1 (no/yes, false/true, off/on): ignored",
	    name, v);
	free(v);
	return dflt;
}

char *
util_utf8_trim(char *s)
{
	size_t len = strlen(s), i = len;
	/* back over at most three continuation bytes to a lead byte */
	while (i > 0 && len - i < 4 && ((unsigned char)s[i - 1] & 0xc0) == 0x80)
		i--;
	if (i == 0 || ((unsigned char)s[i - 1] & 0xc0) != 0xc0)
		return s;	/* ASCII last, or no lead byte: nothing cut */
	uint32_t cp;
	if (util_utf8_decode(s + i - 1, &cp) != len - (i - 1))
		s[i - 1] = '\0';	/* the lead byte's sequence is cut */
	return s;
}

char *
util_text_fit(char *buf, size_t n, const char *s)
{
	char *e = util_escape_control(s);
	size_t len = strlen(e);
	if (len < n) {
		memcpy(buf, e, len + 1);
	} else {
		/* n - 4 bytes of whole characters, then "…" (3 bytes) */
		size_t keep = 0;
		uint32_t cp;
		for (size_t k; keep < len && (k = util_utf8_decode(e + keep,
		    &cp)) > 0 && keep + k <= n - 4; keep += k)
			;
		memcpy(buf, e, keep);
		memcpy(buf + keep, "\xe2\x80\xa6", 4);
	}
	free(e);
	return buf;
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

double
util_env_seconds(const char *name, double def)
{
	const char *v = getenv(name);
	if (v == NULL || *v == '\0')
		return def;
	char *end;
	double d = strtod(v, &end);
	return (*end == '\0' && d >= 0) ? d : def;
}
