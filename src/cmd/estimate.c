/* estimate.c — run-time estimates from the queue's history (estimate.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cmd/estimate.h"
#include "core/json.h"
#include "core/util.h"
#include "store/jobs.h"
#include "store/store.h"

int
estimate_job_shape(const struct store_job *j, struct estimate_sample *out)
{
	memset(out, 0, sizeof(*out));
	cJSON *c = j->config_json ? cJSON_Parse(j->config_json) : NULL;
	if (c == NULL)
		return 0;
	out->height = json_get_int(c, "height", 0);
	out->width = json_get_int(c, "width", 0);
	out->frames = json_get_int(c, "num_frames", 0);
	out->steps = json_get_int(c, "num_inference_steps", 0);
	if (out->steps <= 0)
		out->steps = j->total_steps;
	cJSON_Delete(c);
	return out->height > 0 && out->width > 0 && out->frames > 0 &&
	    out->steps > 0;
}

static int
add_done(const struct store_job *j, void *ud)
{
	struct estimate_history *h = ud;
	struct estimate_sample s;
	if (j->run_seconds <= 0 || !estimate_job_shape(j, &s))
		return 0;
	s.seconds = j->run_seconds;
	h->v = xrealloc(h->v, (h->n + 1) * sizeof(*h->v));
	h->v[h->n++] = s;
	return 0;
}

enum lq_status
estimate_history_load(struct store *st, struct estimate_history *h,
    struct lq_error *err)
{
	memset(h, 0, sizeof(*h));
	return store_list_jobs(st, JOB_STATE_DONE, add_done, h, err);
}

void
estimate_history_free(struct estimate_history *h)
{
	free(h->v);
	memset(h, 0, sizeof(*h));
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double
work(const struct estimate_sample *s)
{
	return (double)s->height * (double)s->width * (double)s->frames *
	    (double)s->steps;
}

double
estimate_total(const struct estimate_history *h,
    const struct estimate_sample *shape)
{
	/* 1. median of the same shape */
	double *same = xcalloc(h->n + 1, sizeof(double));
	size_t n = 0;
	for (size_t i = 0; i < h->n; i++) {
		const struct estimate_sample *s = &h->v[i];
		if (s->height == shape->height && s->width == shape->width &&
		    s->frames == shape->frames && s->steps == shape->steps)
			same[n++] = s->seconds;
	}
	if (n > 0) {
		qsort(same, n, sizeof(double), cmp_double);
		double m = n % 2 ? same[n / 2] : (same[n / 2 - 1] + same[n / 2]) / 2;
		free(same);
		return m;
	}
	free(same);
	/* 2. least squares: seconds = a + b * work */
	double sx = 0, sy = 0, sxx = 0, sxy = 0;
	for (size_t i = 0; i < h->n; i++) {
		double x = work(&h->v[i]), y = h->v[i].seconds;
		sx += x;
		sy += y;
		sxx += x * x;
		sxy += x * y;
	}
	double k = (double)h->n;
	double den = k * sxx - sx * sx;
	if (h->n < 2 || fabs(den) <= 1e-9 * k * sxx)
		return -1;	/* 3. unknown: fewer than two sizes */
	double b = (k * sxy - sx * sy) / den;
	double a = (sy - b * sx) / k;
	double t = a + b * work(shape);
	return t > 0 ? t : -1;
}

double
estimate_step_seconds(const struct store_job *j, double now)
{
	if (j->state != JOB_STATE_RUNNING || j->claimed_at <= 0 ||
	    j->step <= j->claim_step)
		return -1;
	return (now - j->claimed_at) / (double)(j->step - j->claim_step);
}

double
estimate_remaining(const struct estimate_history *h, const struct store_job *j,
    double now)
{
	if (j->state != JOB_STATE_QUEUED && j->state != JOB_STATE_RUNNING)
		return 0;
	int n = j->total_steps, left = j->total_steps - j->step;
	if (left < 0)
		left = 0;
	double per = estimate_step_seconds(j, now);
	if (per >= 0)
		return per * left;
	struct estimate_sample shape;
	if (!estimate_job_shape(j, &shape))
		return -1;
	double total = estimate_total(h, &shape);
	if (total < 0)
		return -1;
	double rem = n > 0 ? total * (double)left / (double)n : total;
	/* a running job still loading counts down from the history */
	if (j->state == JOB_STATE_RUNNING && j->claimed_at > 0)
		rem -= now - j->claimed_at;
	return rem > 0 ? rem : 0;
}
