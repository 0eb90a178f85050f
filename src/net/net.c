/*
 * net.c — downloads with resume and verification, and JSON POSTs, over
 * libcurl's easy interface (see net.h).  Transfers are HTTP(S) only and
 * follow at most 10 redirects, as Hugging Face's resolve/ URLs need.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "core/log.h"
#include "core/util.h"
#include "net/net.h"

static void
net_init(void)
{
	static int done;
	if (!done) {
		if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
			fprintf(stderr, "latentq: curl_global_init failed\n");
			abort();
		}
		done = 1;
	}
}

static CURL *
easy_new(const char *url)
{
	net_init();
	CURL *c = curl_easy_init();
	if (c == NULL)
		LQ_ASSERT(!"curl_easy_init: out of memory");
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
	curl_easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 30L);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "latentq/" PACKAGE_VERSION);
	return c;
}

/* Grades a finished transfer: curl's result and the HTTP status. */
static enum lq_status
grade(const char *url, CURLcode rc, long status, const char *errbuf,
    struct lq_error *err)
{
	if (rc == CURLE_OK && status >= 200 && status < 300)
		return LQ_OK;
	if (rc != CURLE_OK) {
		enum lq_status s = LQ_RETRY;
		switch (rc) {
		case CURLE_UNSUPPORTED_PROTOCOL:
		case CURLE_URL_MALFORMAT:
		case CURLE_WRITE_ERROR:
		case CURLE_TOO_MANY_REDIRECTS:
			s = LQ_FAILED;
			break;
		default:
			break;
		}
		error_set(err, s, "LQ-NET-001", "%s: %s", url, errbuf[0] ? errbuf :
		    curl_easy_strerror(rc));
		return s;
	}
	enum lq_status s = (status >= 500 || status == 408 || status == 429) ?
	    LQ_RETRY : LQ_FAILED;
	error_set(err, s, status == 404 || status == 410 ? "LQ-NET-008" :
	    "LQ-NET-002", "%s: HTTP status %ld", url, status);
	if (status == 404 || status == 410)
		error_set_hint(err, "check the URL; a Hugging Face file is "
		    "https://HOST/ORG/REPO/resolve/main/PATH");
	else if (status == 401 || status == 403)
		error_set_hint(err, "the server refuses access to this file");
	return s;
}

/* ---- downloads ---- */

/* The first back-off: LATENTQ_NET_BACKOFF (s; tests) or the default. */
static double
net_default_backoff(void)
{
	const char *env = getenv("LATENTQ_NET_BACKOFF");
	double v = env != NULL ? atof(env) : 0;
	return v > 0 ? v : NET_DEFAULT_BACKOFF;
}

struct fetch {
	int fd;
	const char *part;
	int64_t have;		/* bytes in the .part before this try */
	int64_t got;		/* bytes written in this try */
	int write_failed;
	int errno_;
	int restart;		/* server ignored Range: truncate first */
	long status;
	int64_t range_start;	/* from Content-Range, -1 if none */
	int range_mismatch;
	/* progress */
	int progress;
	const char *label;
	double t0, last;
};

static size_t
on_header(char *buf, size_t size, size_t n, void *ud)
{
	struct fetch *f = ud;
	size_t len = size * n;
	/* a new status line (redirects give several) */
	if (len > 5 && strncmp(buf, "HTTP/", 5) == 0) {
		const char *sp = memchr(buf, ' ', len);
		f->status = sp != NULL ? strtol(sp + 1, NULL, 10) : 0;
		f->range_start = -1;
	} else if (len > 14 && strncasecmp(buf, "Content-Range:", 14) == 0) {
		char tmp[128];
		size_t k = len < sizeof(tmp) - 1 ? len : sizeof(tmp) - 1;
		memcpy(tmp, buf, k);
		tmp[k] = '\0';
		long long a;
		if (sscanf(tmp + 14, " bytes %lld-", &a) == 1)
			f->range_start = a;
	}
	return len;
}

static size_t
on_data(char *buf, size_t size, size_t n, void *ud)
{
	struct fetch *f = ud;
	size_t len = size * n;
	if (f->status != 200 && f->status != 206)
		return len;	/* an error body: dropped, graded later */
	if (f->got == 0 && f->have > 0 && f->status == 200 && !f->restart) {
		/* the server sends the whole file: start the .part over */
		if (ftruncate(f->fd, 0) != 0 || lseek(f->fd, 0, SEEK_SET) != 0) {
			f->write_failed = 1;
			f->errno_ = errno;
			return 0;
		}
		f->restart = 1;
		f->have = 0;
	}
	if (f->status == 206 && f->range_start != f->have) {
		f->range_mismatch = 1;
		return 0;
	}
	for (size_t off = 0; off < len;) {
		ssize_t w = write(f->fd, buf + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			f->write_failed = 1;
			f->errno_ = errno;
			return 0;
		}
		off += (size_t)w;
	}
	f->got += (int64_t)len;
	return len;
}

static int
on_progress(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
    curl_off_t ulnow)
{
	struct fetch *f = ud;
	if (!f->progress)
		return 0;
	double now = util_monotonic();
	if (now - f->last < 0.2 && (dltotal == 0 || dlnow < dltotal))
		return 0;
	f->last = now;
	double have = (double)(f->have + dlnow);
	double total = dltotal > 0 ? (double)(f->have + dltotal) : 0;
	double rate = now > f->t0 ? (double)dlnow / (now - f->t0) : 0;
	char bar[31];
	int fill = total > 0 ? (int)(30 * have / total) : 0;
	for (int i = 0; i < 30; i++)
		bar[i] = i < fill ? '#' : '.';
	bar[30] = '\0';
	if (total > 0)
		fprintf(stderr, "\r%-32.32s [%s] %5.1f%% %8.1f/%.1f MiB %6.1f MiB/s",
		    f->label, bar, 100 * have / total, have / 1048576,
		    total / 1048576, rate / 1048576);
	else
		fprintf(stderr, "\r%-32.32s %8.1f MiB %6.1f MiB/s", f->label,
		    have / 1048576, rate / 1048576);
	return 0;
}

/* One try: resumes from the .part's size. */
static enum lq_status
fetch_once(const char *url, struct fetch *f, long stall, int64_t *expected,
    struct lq_error *err)
{
	struct stat sb;
	if (fstat(f->fd, &sb) != 0)
		return error_set(err, LQ_FAILED, "LQ-NET-003", "fstat failed on "
		    "%s: %s", f->part, strerror(errno));
	f->have = sb.st_size;
	f->got = 0;
	f->restart = 0;
	f->status = 0;
	f->write_failed = 0;
	f->range_start = -1;
	f->range_mismatch = 0;
	if (lseek(f->fd, 0, SEEK_END) < 0)
		return error_set(err, LQ_FAILED, "LQ-NET-003", "lseek failed on "
		    "%s: %s", f->part, strerror(errno));
	CURL *c = easy_new(url);
	char errbuf[CURL_ERROR_SIZE] = "";
	char range[32];
	if (f->have > 0) {
		snprintf(range, sizeof(range), "%" PRId64 "-", f->have);
		curl_easy_setopt(c, CURLOPT_RANGE, range);
	}
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, f);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, f);
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, stall);
	curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(c, CURLOPT_XFERINFODATA, f);
	f->t0 = f->last = util_monotonic();
	CURLcode rc = curl_easy_perform(c);
	long status = 0;
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_off_t cl = -1;
	curl_easy_getinfo(c, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl);
	curl_easy_cleanup(c);
	if (f->progress)
		fputc('\n', stderr);
	if (f->write_failed)
		return error_set(err, f->errno_ == ENOSPC ? LQ_RETRY : LQ_FAILED,
		    "LQ-NET-003", "cannot write %s: %s", f->part,
		    strerror(f->errno_));
	if (f->range_mismatch) {
		/* not the bytes we asked for: start the file over next try */
		if (ftruncate(f->fd, 0) != 0)
			return error_set(err, LQ_FAILED, "LQ-NET-003", "cannot "
			    "truncate %s: %s", f->part, strerror(errno));
		return error_set(err, LQ_RETRY, "LQ-NET-005", "%s: the server "
		    "answered a request for bytes %" PRId64 "- with bytes %" PRId64
		    "-", url, f->have, f->range_start);
	}
	if (rc == CURLE_OK && status == 416 && f->have > 0) {
		/* nothing left past our bytes: the .part may be whole, or
		 * longer than the file now is; the digest decides, and a
		 * size mismatch restarts it (below) */
		*expected = -1;
		return LQ_OK;
	}
	enum lq_status s = grade(url, rc, status, errbuf, err);
	if (s != LQ_OK)
		return s;
	if (status == 206 && f->restart)
		LQ_ASSERT(!"restart on a 206");
	*expected = cl >= 0 ? (status == 206 ? f->have : 0) + cl : -1;
	int64_t now = (status == 206 ? f->have : 0) + f->got;
	if (*expected >= 0 && now != *expected)
		return error_set(err, LQ_RETRY, "LQ-NET-005", "%s: the server "
		    "announced %" PRId64 " bytes and sent %" PRId64, url, *expected,
		    now);
	return LQ_OK;
}

enum lq_status
net_fetch(const char *url, const char *path,
    const struct net_fetch_options *opt, int64_t *size,
    char digest_out[DIGEST_HEX_SIZE], struct lq_error *err)
{
	int retries = opt->retries >= 0 ? opt->retries : NET_DEFAULT_RETRIES;
	double backoff = opt->backoff > 0 ? opt->backoff : net_default_backoff();
	long stall = opt->stall_timeout > 0 ? opt->stall_timeout :
	    NET_DEFAULT_STALL_TIMEOUT;
	char *part = xasprintf("%s.part", path);
	struct fetch f = {.part = part, .progress = opt->progress,
	    .label = opt->label ? opt->label : path};
	f.fd = open(part, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (f.fd < 0) {
		enum lq_status s = error_set(err, LQ_FAILED, "LQ-NET-003", "cannot "
		    "open %s: %s", part, strerror(errno));
		free(part);
		return s;
	}
	enum lq_status s;
	int64_t expected = -1;
	for (int attempt = 0;; attempt++) {
		s = fetch_once(url, &f, stall, &expected, err);
		if (s == LQ_OK)
			break;
		if (s != LQ_RETRY || attempt >= retries)
			break;
		double wait = backoff * pow(2, attempt);
		log_warn("%s (try %d of %d; retrying in %.1f s)", err->message,
		    attempt + 1, retries + 1, wait);
		struct timespec ts = {(time_t)wait,
		    (long)((wait - floor(wait)) * 1e9)};
		nanosleep(&ts, NULL);
		error_clear(err);
	}
	if (s != LQ_OK) {
		/* keep a .part only when a later call can resume it: bytes
		 * after a failure that may pass next time */
		struct stat pb;
		if (s != LQ_RETRY || (fstat(f.fd, &pb) == 0 && pb.st_size == 0))
			unlink(part);
	}
	char hex[DIGEST_HEX_SIZE];
	if (s == LQ_OK && fsync(f.fd) != 0)
		s = error_set(err, LQ_FAILED, "LQ-NET-003", "fsync failed on %s: "
		    "%s", part, strerror(errno));
	close(f.fd);
	if (s == LQ_OK)
		s = digest_file(part, hex, err);
	if (s == LQ_OK && opt->digest != NULL && strcmp(hex, opt->digest) != 0) {
		unlink(part);
		s = error_set(err, LQ_FAILED, "LQ-NET-004", "%s: downloaded file "
		    "has BLAKE2b-256 %s, expected %s; the partial file was "
		    "removed", url, hex, opt->digest);
		error_set_hint(err, "check the digest, or the mirror serves "
		    "another revision of the file");
	}
	struct stat sb;
	if (s == LQ_OK && stat(part, &sb) != 0)
		s = error_set(err, LQ_FAILED, "LQ-NET-003", "stat failed on %s: %s",
		    part, strerror(errno));
	if (s == LQ_OK && rename(part, path) != 0)
		s = error_set(err, LQ_FAILED, "LQ-NET-003", "cannot rename %s to "
		    "%s: %s", part, path, strerror(errno));
	if (s == LQ_OK) {
		if (size != NULL)
			*size = sb.st_size;
		if (digest_out != NULL)
			memcpy(digest_out, hex, DIGEST_HEX_SIZE);
	}
	free(part);
	return s;
}

/* ---- POST ---- */

static size_t
discard(char *buf, size_t size, size_t n, void *ud)
{
	return size * n;
}

enum lq_status
net_post_json(const char *url, const char *body, const char *const *headers,
    size_t n_headers, long timeout, long *status, struct lq_error *err)
{
	CURL *c = easy_new(url);
	char errbuf[CURL_ERROR_SIZE] = "";
	struct curl_slist *hl = curl_slist_append(NULL,
	    "Content-Type: application/json");
	for (size_t i = 0; i < n_headers; i++)
		hl = curl_slist_append(hl, headers[i]);
	hl = curl_slist_append(hl, "Expect:");	/* no 100-continue round trip */
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, timeout > 0 ? timeout : 30L);
	/* a redirect of a POST is not followed: the endpoint is as given */
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
	CURLcode rc = curl_easy_perform(c);
	long st = 0;
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &st);
	curl_slist_free_all(hl);
	curl_easy_cleanup(c);
	if (status != NULL)
		*status = st;
	return grade(url, rc, st, errbuf, err);
}

/* ---- names ---- */

int
net_url_is_http(const char *url)
{
	const char *h = strncmp(url, "http://", 7) == 0 ? url + 7 :
	    strncmp(url, "https://", 8) == 0 ? url + 8 : NULL;
	return h != NULL && *h != '\0' && *h != '/';
}

char *
net_url_relpath(const char *url)
{
	const char *p = strstr(url, "://");
	p = p != NULL ? p + 3 : url;
	p = strchr(p, '/');
	if (p == NULL)
		return NULL;
	size_t n = strcspn(p, "?#");
	char *path = xstrndup(p, n);
	char *rel = NULL;
	const char *r = strstr(path, "/resolve/");
	if (r != NULL) {
		const char *rev = r + strlen("/resolve/");
		const char *after = strchr(rev, '/');
		if (after != NULL && after[1] != '\0')
			rel = xstrdup(after + 1);
	}
	if (rel == NULL) {
		const char *last = strrchr(path, '/');
		rel = xstrdup(last != NULL ? last + 1 : path);
	}
	free(path);
	/* plain components only */
	int ok = rel[0] != '\0' && rel[0] != '/';
	for (const char *q = rel; ok && *q;) {
		const char *slash = strchr(q, '/');
		size_t len = slash ? (size_t)(slash - q) : strlen(q);
		if (len == 0 || (len == 1 && q[0] == '.') ||
		    (len == 2 && q[0] == '.' && q[1] == '.') || memchr(q, '%', len) ||
		    memchr(q, '\\', len))
			ok = 0;
		q = slash ? slash + 1 : q + len;
	}
	if (!ok) {
		free(rel);
		return NULL;
	}
	return rel;
}
