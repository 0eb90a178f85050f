/*
 * webhooks.h — delivery of the webhook outbox (store/webhooks.h) by the
 * supervisor; see webhooks.c for the request and the retry schedule.
 * Errors are logged, never fatal: a notification that cannot be sent
 * stays pending in the database.
 */
#ifndef LQ_WORKER_WEBHOOKS_H
#define LQ_WORKER_WEBHOOKS_H

#include "store/store.h"

/* Tries per notification before it is abandoned. */
#define WORKER_WEBHOOK_MAX_ATTEMPTS 10

/* Seconds before try tries+1 (LATENTQ_WEBHOOK_BACKOFF doubling, <= 600). */
double worker_webhook_backoff(int tries);

/*
 * Sends every due notification once.  With wait_seconds > 0, then waits
 * for retries to come due and sends them, until none is pending or
 * wait_seconds have passed.  Returns how many are still pending (-1 when
 * the database failed; the error is printed).
 */
int worker_deliver_webhooks(struct store *st, double wait_seconds);

#endif
