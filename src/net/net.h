/*
 * net.h — latentq's HTTP client (libcurl): model file downloads that
 * resume and verify, and JSON POSTs for webhooks.  The only module that
 * includes curl.h.
 *
 * Results are graded as error.h says: LQ_RETRY for what may pass later (a
 * dropped connection, a timeout, an HTTP 5xx, 408 or 429, a short body),
 * LQ_FAILED for what will not (another 4xx, a malformed URL, a digest that
 * does not match, an unwritable file).  Messages name the URL and the HTTP
 * status or curl's error (code LQ-NET-*).
 *
 * Ownership: inputs are borrowed for the call; nothing is retained.
 */
#ifndef LQ_NET_NET_H
#define LQ_NET_NET_H

#include <stddef.h>
#include <stdint.h>

#include "core/digest.h"
#include "core/error.h"

/* Defaults, one place: retries after the first try, first back-off (s). */
#define NET_DEFAULT_RETRIES 5
#define NET_DEFAULT_BACKOFF 1.0
/* A transfer slower than 1 byte/s for this long is a timeout (s). */
#define NET_DEFAULT_STALL_TIMEOUT 30

struct net_fetch_options {
	int retries;		/* < 0: NET_DEFAULT_RETRIES */
	double backoff;		/* first wait in s, doubling; <= 0: the
				 * environment's LATENTQ_NET_BACKOFF, else
				 * NET_DEFAULT_BACKOFF */
	long stall_timeout;	/* s; <= 0: NET_DEFAULT_STALL_TIMEOUT */
	int progress;		/* draw a progress bar on stderr */
	const char *label;	/* what the bar calls the file */
	const char *digest;	/* expected BLAKE2b-256 hex, or NULL */
};

/*
 * Downloads `url` into `path`: bytes go to "PATH.part", resumed with an
 * HTTP Range request when a .part file is already there (a server that
 * answers 200 instead of 206 restarts it), with up to `retries` further
 * tries after a retryable failure, waiting backoff, 2·backoff, … seconds
 * (each try resumes).  When complete (the length the server announced, if
 * any) the .part is fsynced, checked against opt->digest (when given; a
 * mismatch removes it: LQ-NET-004) and renamed onto PATH.  *size (may be
 * NULL) gets the file's bytes and digest_out (may be NULL) its BLAKE2b-256.
 * On failure the .part file stays for the next call to resume only when
 * it holds bytes and the failure was retryable (LQ_RETRY: retries spent);
 * after any other failure (an HTTP 4xx, a digest mismatch, an unwritable
 * file) or when nothing arrived, it is removed.
 */
enum lq_status net_fetch(const char *url, const char *path,
    const struct net_fetch_options *opt, int64_t *size,
    char digest_out[DIGEST_HEX_SIZE], struct lq_error *err);

/*
 * One POST of `body` (application/json) to `url` with extra header lines
 * ("Name: value", n_headers of them) and a whole-request timeout in
 * seconds.  LQ_OK for a 2xx answer; *status (may be NULL) gets the HTTP
 * status (0 when none came).  No retries: the caller's outbox does that.
 */
enum lq_status net_post_json(const char *url, const char *body,
    const char *const *headers, size_t n_headers, long timeout,
    long *status, struct lq_error *err);

/* 1 when url starts with http:// or https:// and names a host. */
int net_url_is_http(const char *url);

/*
 * The file name a download of `url` gets inside a folder: the part after
 * "/resolve/REVISION/" for a Hugging Face style URL
 * (https://HOST/ORG/REPO/resolve/main/transformer/config.json →
 * "transformer/config.json"), else the URL path's last component; query
 * and fragment dropped.  NULL when that leaves no acceptable relative
 * path (empty, "..", absolute).  Caller-owned.
 */
char *net_url_relpath(const char *url);

#endif
