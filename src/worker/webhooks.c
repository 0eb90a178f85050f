/*
 * webhooks.c — delivers the webhook outbox (store/webhooks.h) over HTTP
 * (net/net.h), for the supervisor.
 *
 * Each due row is POSTed as it was queued (application/json), with
 *   X-Latentq-Delivery: ROW      the outbox row id: the same on every
 *                                retry, so a receiver can drop a repeat
 *   X-Latentq-Event: job.STATE
 *   X-Latentq-Signature: sha256=HEX   when LATENTQ_WEBHOOK_SECRET is set:
 *                                HMAC-SHA256 of the body under that secret
 * A 2xx marks it delivered; anything else is tried again after
 * LATENTQ_WEBHOOK_BACKOFF seconds (default 5), doubling, at most 10 minutes
 * apart, until WORKER_WEBHOOK_MAX_ATTEMPTS tries are spent (abandoned, with
 * a warning).  Rows stay in the database between runs, so a supervisor
 * killed at any instant resends what is pending when it starts again.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"
#include "core/sign.h"
#include "core/util.h"
#include "net/net.h"
#include "store/webhooks.h"
#include "worker/webhooks.h"

double
worker_webhook_backoff(int tries)
{
	double b = util_env_seconds("LATENTQ_WEBHOOK_BACKOFF", 5);
	for (int i = 1; i < tries && b < 600; i++)
		b *= 2;
	return b < 600 ? b : 600;
}

/* One try of one row; records its result. */
static void
deliver_one(struct store *st, const struct store_webhook *w)
{
	char h_id[64], h_event[64], h_sig[128];
	const char *headers[3];
	size_t nh = 0;
	snprintf(h_id, sizeof(h_id), "X-Latentq-Delivery: %lld",
	    (long long)w->id);
	headers[nh++] = h_id;
	snprintf(h_event, sizeof(h_event), "X-Latentq-Event: job.%s", w->state);
	headers[nh++] = h_event;
	const char *secret = getenv("LATENTQ_WEBHOOK_SECRET");
	if (secret != NULL && secret[0] != '\0') {
		char mac[65];
		sign_hmac_sha256_hex(secret, w->body, strlen(w->body), mac);
		snprintf(h_sig, sizeof(h_sig), "X-Latentq-Signature: sha256=%s",
		    mac);
		headers[nh++] = h_sig;
	}
	struct lq_error err, e2;
	error_clear(&err);
	error_clear(&e2);
	long status = 0;
	enum lq_status s = net_post_json(w->url, w->body, headers, nh, 10,
	    &status, &err);
	int tries = w->attempts + 1;
	double next = -1;
	if (s != LQ_OK && tries < WORKER_WEBHOOK_MAX_ATTEMPTS)
		next = util_now() + worker_webhook_backoff(tries);
	if (s == LQ_OK)
		log_info("job %lld: webhook %s delivered (job.%s, HTTP %ld)",
		    (long long)w->job_id, w->url, w->state, status);
	else if (next < 0)
		log_warn("job %lld: webhook %s abandoned after %d tries: %s",
		    (long long)w->job_id, w->url, tries, err.message);
	else
		log_warn("job %lld: webhook %s: %s (try %d; again in %.1f s)",
		    (long long)w->job_id, w->url, err.message, tries,
		    next - util_now());
	if (store_webhook_result(st, w->id, s == LQ_OK, status,
	    s == LQ_OK ? NULL : err.message, next, &e2) != LQ_OK)
		error_print(&e2, stderr);
}

int
worker_deliver_webhooks(struct store *st, double wait_seconds)
{
	double until = util_monotonic() + wait_seconds;
	int pending = 0;
	for (;;) {
		struct store_webhook w;
		int found = 0;
		struct lq_error err;
		error_clear(&err);
		if (store_next_webhook(st, util_now(), &w, &found, &err) != LQ_OK) {
			error_print(&err, stderr);
			return -1;
		}
		if (found) {
			deliver_one(st, &w);
			store_webhook_clear(&w);
			continue;
		}
		double next;
		if (store_webhook_pending(st, &pending, &next, &err) != LQ_OK) {
			error_print(&err, stderr);
			return -1;
		}
		if (pending == 0 || util_monotonic() >= until)
			break;
		double wait = next - util_now();
		double left = until - util_monotonic();
		if (wait > left)
			wait = left;
		if (wait < 0.01)
			wait = 0.01;
		usleep((useconds_t)(wait * 1e6));
	}
	if (pending > 0 && wait_seconds > 0)
		log_warn("%d webhook notification%s still pending; the next `latentq "
		    "run` sends %s", pending, pending == 1 ? "" : "s",
		    pending == 1 ? "it" : "them");
	return pending;
}
