/* protocol.c — the supervisor/child contract of protocol.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cjson/cJSON.h>

#include "core/codes.h"
#include "core/file.h"
#include "core/json.h"
#include "store/jobs.h"
#include "store/store.h"
#include "worker/protocol.h"

enum worker_outcome
worker_outcome_of(int wait_status)
{
	if (!WIFEXITED(wait_status))
		return WORKER_CRASH;
	switch (WEXITSTATUS(wait_status)) {
	case EXIT_OK: return WORKER_DONE;
	case EXIT_DATAERR: return WORKER_FAILED;
	case EXIT_UNAVAILABLE: return WORKER_HOST;
	case EXIT_TEMPFAIL: return WORKER_TEMPFAIL;
	case EXIT_IOERR: return WORKER_IOERR;
	case WORKER_EXIT_LEASE_LOST: return WORKER_LEASE_LOST;
	}
	return WORKER_CRASH;
}

/* Phases that come before the first denoising step (render.h). */
static int
before_first_step(const char *phase)
{
	static const char *const early[] = {"load", "compile", "encode-text"};
	for (size_t i = 0; phase != NULL && i < sizeof(early) / sizeof(*early);
	    i++)
		if (strcmp(phase, early[i]) == 0)
			return 1;
	return 0;
}

int
worker_exit_for(const struct lq_error *e, const char *phase)
{
	enum lq_code c = error_code(e);
	unsigned flags = lq_code_info(c)->flags;
	if (c == lq_code_find(JOB_CODE_LEASE_LOST))
		return WORKER_EXIT_LEASE_LOST;
	if (c == lq_code_find(FILE_CODE_STORAGE) ||
	    c == lq_code_find(STORE_CODE_STORAGE))
		return EXIT_IOERR;
	if (e->status == LQ_FATAL ||
	    ((flags & LQ_CODE_F_HOST) && before_first_step(phase)))
		return EXIT_UNAVAILABLE;
	if (flags & LQ_CODE_F_QUEUE)
		return EXIT_IOERR;
	if (e->status == LQ_RETRY)
		return EXIT_TEMPFAIL;
	return EXIT_DATAERR;
}

char *
worker_error_text(const struct lq_error *e, char *buf, size_t n)
{
	error_format(e, buf, n);
	/* the code has its own column: drop error_format's " [CODE]" */
	size_t len = strlen(buf), cl = strlen(e->code);
	if (cl > 0 && len >= cl + 3 && buf[len - 1] == ']' &&
	    strncmp(buf + len - cl - 3, " [", 2) == 0 &&
	    strncmp(buf + len - cl - 1, e->code, cl) == 0)
		buf[len - cl - 3] = '\0';
	return buf;
}

enum lq_status
worker_report_error(struct store *st, int64_t job_id, const struct lq_error *e,
    int exit_status, struct lq_error *err)
{
	char msg[1024];
	worker_error_text(e, msg, sizeof(msg));
	cJSON *d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "code", e->code);
	cJSON_AddStringToObject(d, "grade", error_status_name(e->status));
	cJSON_AddStringToObject(d, "message", msg);
	cJSON_AddNumberToObject(d, "exit", exit_status);
	char *detail = json_canonical(d);
	cJSON_Delete(d);
	enum lq_status r = store_add_event(st, job_id, "worker_error", detail, err);
	free(detail);
	return r;
}

static enum lq_status
grade_parse(const char *name)
{
	for (int s = LQ_OK; s <= LQ_FATAL; s++)
		if (strcmp(error_status_name((enum lq_status)s), name) == 0)
			return (enum lq_status)s;
	return LQ_FAILED;
}

static int
scan_report(double at, const char *kind, const char *detail, void *ud)
{
	(void)at;
	struct worker_report *r = ud;
	if (strcmp(kind, "claimed") == 0) {
		memset(r, 0, sizeof(*r));
	} else if (strcmp(kind, "worker_error") == 0 && detail != NULL) {
		cJSON *d = cJSON_Parse(detail);
		memset(r, 0, sizeof(*r));
		r->present = d != NULL;
		snprintf(r->code, sizeof(r->code), "%s",
		    json_get_string(d, "code", ""));
		r->grade = grade_parse(json_get_string(d, "grade", "failed"));
		snprintf(r->message, sizeof(r->message), "%s",
		    json_get_string(d, "message", ""));
		r->exit_status = (int)json_get_int(d, "exit", -1);
		cJSON_Delete(d);
	}
	return 0;
}

enum lq_status
worker_read_report(struct store *st, int64_t job_id, struct worker_report *out,
    struct lq_error *err)
{
	memset(out, 0, sizeof(*out));
	return store_list_events(st, job_id, scan_report, out, err);
}
