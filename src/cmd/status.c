/*
 * status.c — `latentq status [--json] [--state S]`: a table of jobs with
 * state, step k/N, attempts, next retry and the last error.
 */
#include <getopt.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "cmd/cmd.h"
#include "core/json.h"
#include "core/util.h"
#include "store/jobs.h"
#include "store/store.h"

struct status_ctx {
	int json;
	cJSON *array;
	int counts[6];
	double now;
};

static void
format_retry(double not_before, double now, char *buf, size_t n)
{
	if (not_before <= now) {
		snprintf(buf, n, "-");
		return;
	}
	snprintf(buf, n, "in %.0fs", not_before - now);
}

static int
print_job(const struct store_job *j, void *ud)
{
	struct status_ctx *c = ud;
	c->counts[j->state]++;
	if (c->json) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "id", (double)j->id);
		cJSON_AddStringToObject(o, "name", j->name);
		cJSON_AddStringToObject(o, "state", job_state_name(j->state));
		cJSON_AddNumberToObject(o, "step", j->step);
		cJSON_AddNumberToObject(o, "total_steps", j->total_steps);
		cJSON_AddNumberToObject(o, "attempts", j->attempts);
		cJSON_AddNumberToObject(o, "max_attempts", j->max_attempts);
		json_add_int64(o, "priority", j->priority);
		if (j->phase)
			cJSON_AddStringToObject(o, "phase", j->phase);
		if (j->not_before > c->now && j->state == JOB_STATE_QUEUED)
			cJSON_AddNumberToObject(o, "next_retry_at", j->not_before);
		if (j->error_code)
			cJSON_AddStringToObject(o, "error_code", j->error_code);
		if (j->error_message)
			cJSON_AddStringToObject(o, "error_message", j->error_message);
		if (j->output_path)
			cJSON_AddStringToObject(o, "output", j->output_path);
		cJSON_AddItemToArray(c->array, o);
		return 0;
	}
	char steps[32], attempts[32], retry[32];
	snprintf(steps, sizeof(steps), "%d/%d", j->step, j->total_steps);
	snprintf(attempts, sizeof(attempts), "%d/%d", j->attempts, j->max_attempts);
	format_retry(j->state == JOB_STATE_QUEUED ? j->not_before : 0, c->now,
	    retry, sizeof(retry));
	char error[200] = "";
	if (j->error_message != NULL)
		snprintf(error, sizeof(error), "%s%s%s", j->error_code ?
		    j->error_code : "", j->error_code ? ": " : "",
		    j->error_message);
	printf("%-6lld %-24s %-9s %-9s %-8s %-9s %s\n", (long long)j->id,
	    cmd_esc(j->name), job_state_name(j->state), steps, attempts, retry,
	    cmd_esc(error));
	return 0;
}

static int
cmd_status_exec(const struct cmd_globals *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{"json", no_argument, NULL, 'j'},
		{"state", required_argument, NULL, 's'},
		{NULL, 0, NULL, 0},
	};
	struct status_ctx c = {0};
	int filter = -1, ch;
	while ((ch = getopt_long(argc, argv, "js:", opts, NULL)) != -1) {
		switch (ch) {
		case 'j': c.json = 1; break;
		case 's': {
			enum job_state s;
			if (job_state_parse(optarg, &s) != 0)
				return cmd_misuse(&cmd_status_entry, "unknown state "
				    "%s (queued, running, done, rejected, cancelled, "
				    "poisoned)", optarg);
			filter = (int)s;
			break;
		}
		default: return cmd_misuse(&cmd_status_entry, NULL);
		}
	}
	if (optind != argc)
		return cmd_misuse(&cmd_status_entry, "unexpected argument %s",
		    argv[optind]);
	struct store *st = cmd_open_store_readonly(g);
	if (st == NULL)
		return 1;
	struct lq_error err;
	error_clear(&err);
	c.now = util_now();
	if (c.json)
		c.array = cJSON_CreateArray();
	else
		printf("%-6s %-24s %-9s %-9s %-8s %-9s %s\n", "ID", "NAME", "STATE",
		    "STEP", "ATTEMPTS", "RETRY", "LAST ERROR");
	enum lq_status r = store_list_jobs(st, filter, print_job, &c, &err);
	store_close(st);
	if (r != LQ_OK) {
		error_print(&err, stderr);
		cJSON_Delete(c.array);
		return cmd_exit_for(r);
	}
	if (c.json) {
		char *s = cJSON_PrintUnformatted(c.array);
		puts(s);
		cJSON_free(s);
		cJSON_Delete(c.array);
	} else {
		printf("%d queued, %d running, %d done, %d rejected, %d cancelled, "
		    "%d poisoned\n", c.counts[JOB_STATE_QUEUED],
		    c.counts[JOB_STATE_RUNNING], c.counts[JOB_STATE_DONE],
		    c.counts[JOB_STATE_REJECTED], c.counts[JOB_STATE_CANCELLED],
		    c.counts[JOB_STATE_POISONED]);
	}
	return 0;
}

const struct cmd_entry cmd_status_entry = {
	.name = "status",
	.usage = "[--json] [--state STATE]",
	.summary = "show the queue: state, step, attempts and last error per job",
	.exec = cmd_status_exec,
};
