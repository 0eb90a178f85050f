/*
 * webhooks.h — the webhook outbox in the queue database (schema
 * 0004_webhooks.sql).
 *
 * A job that reaches done, poisoned, failed or cancelled gets one outbox
 * row per URL (its config's "webhook" and those added here) from a
 * trigger, in the transaction that changes its state: a crash at any
 * instant loses no notification.  src/worker/webhooks.c delivers due rows
 * and records each try here.  A row is pending until a 2xx answer
 * (delivered) or its attempts are spent (abandoned).
 *
 * Ownership: struct store_webhook owns its strings (store_webhook_clear).
 * Errors as in store.h.
 */
#ifndef LQ_STORE_WEBHOOKS_H
#define LQ_STORE_WEBHOOKS_H

#include <stdint.h>

#include "core/error.h"
#include "store/store.h"

/* Also notify `url` when job `job_id` ends (idempotent). */
enum lq_status store_add_job_webhook(struct store *st, int64_t job_id,
    const char *url, struct lq_error *err);

struct store_webhook {
	int64_t id, job_id;
	char *url, *state, *body;
	int attempts;			/* tries so far */
	double next_at;
};
void store_webhook_clear(struct store_webhook *w);

/*
 * The pending row due first with next_at <= now (oldest first among
 * equals); *found = 0 when none is due.
 */
enum lq_status store_next_webhook(struct store *st, double now,
    struct store_webhook *out, int *found, struct lq_error *err);

/*
 * Records a try of row `id`: delivered (a 2xx), or failed with the HTTP
 * status (0 for none) and error, to be tried again at next_at, or
 * abandoned when next_at < 0.  attempts + 1 in every case.
 */
enum lq_status store_webhook_result(struct store *st, int64_t id,
    int delivered, long status, const char *error, double next_at,
    struct lq_error *err);

/* Pending rows: how many, and the earliest next_at (0 when none). */
enum lq_status store_webhook_pending(struct store *st, int *n,
    double *next_at, struct lq_error *err);

#endif
