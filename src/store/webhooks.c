/*
 * webhooks.c — the webhook outbox (see webhooks.h).
 */
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "store/store-int.h"
#include "store/webhooks.h"

enum lq_status
store_add_job_webhook(struct store *st, int64_t job_id, const char *url,
    struct lq_error *err)
{
	struct store_stmt *s = store_prepare_cached(st, "INSERT OR IGNORE INTO "
	    "job_webhooks(job_id, url) VALUES (?, ?)", err);
	if (s == NULL)
		return err->status;
	store_bind_int64(s, 1, job_id);
	store_bind_text(s, 2, url);
	return store_step_done(st, s, "INSERT job_webhooks", err);
}

void
store_webhook_clear(struct store_webhook *w)
{
	free(w->url);
	free(w->state);
	free(w->body);
	memset(w, 0, sizeof(*w));
}

enum lq_status
store_next_webhook(struct store *st, double now, struct store_webhook *out,
    int *found, struct lq_error *err)
{
	memset(out, 0, sizeof(*out));
	*found = 0;
	struct store_stmt *s = store_prepare_cached(st, "SELECT id, job_id, url, "
	    "state, body, attempts, next_at FROM webhook_outbox WHERE "
	    "delivered_at IS NULL AND abandoned_at IS NULL AND next_at <= ? "
	    "ORDER BY next_at, id LIMIT 1", err);
	if (s == NULL)
		return err->status;
	store_bind_double(s, 1, now);
	int rc = store_step(s);
	enum lq_status r = LQ_OK;
	if (rc == STORE_ROW) {
		out->id = store_column_int64(s, 0);
		out->job_id = store_column_int64(s, 1);
		out->url = store_column_text(s, 2);
		out->state = store_column_text(s, 3);
		out->body = store_column_text(s, 4);
		out->attempts = store_column_int(s, 5);
		out->next_at = store_column_double(s, 6);
		*found = 1;
	} else if (rc != STORE_DONE) {
		r = store_sql_error(st, "SELECT webhook_outbox", err);
	}
	store_done(s);
	return r;
}

enum lq_status
store_webhook_result(struct store *st, int64_t id, int delivered, long status,
    const char *error, double next_at, struct lq_error *err)
{
	struct store_stmt *s = store_prepare_cached(st, "UPDATE webhook_outbox SET "
	    "attempts = attempts + 1, last_status = ?, last_error = ?, "
	    "delivered_at = ?, abandoned_at = ?, next_at = ? WHERE id = ?", err);
	if (s == NULL)
		return err->status;
	double now = util_now();
	store_bind_int64(s, 1, status);
	store_bind_text(s, 2, error);
	if (delivered)
		store_bind_double(s, 3, now);
	else
		store_bind_null(s, 3);
	if (!delivered && next_at < 0)
		store_bind_double(s, 4, now);
	else
		store_bind_null(s, 4);
	store_bind_double(s, 5, next_at < 0 ? now : next_at);
	store_bind_int64(s, 6, id);
	return store_step_done(st, s, "UPDATE webhook_outbox", err);
}

enum lq_status
store_webhook_pending(struct store *st, int *n, double *next_at,
    struct lq_error *err)
{
	*n = 0;
	*next_at = 0;
	struct store_stmt *s = store_prepare_cached(st, "SELECT count(*), "
	    "coalesce(min(next_at), 0) FROM webhook_outbox WHERE delivered_at "
	    "IS NULL AND abandoned_at IS NULL", err);
	if (s == NULL)
		return err->status;
	int rc = store_step(s);
	enum lq_status r = LQ_OK;
	if (rc == STORE_ROW) {
		*n = store_column_int(s, 0);
		*next_at = store_column_double(s, 1);
	} else {
		r = store_sql_error(st, "SELECT webhook_outbox", err);
	}
	store_done(s);
	return r;
}
