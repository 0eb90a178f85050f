/*
 * show.c — `latentq show [--json] JOB`: the request as written, the
 * validated config, and every event of one job.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "cmd/cmd.h"
#include "core/json.h"
#include "core/util.h"
#include "store/jobs.h"
#include "store/store.h"

/*
 * json_pretty's text line by line: its raw newlines and tabs are layout
 * (cJSON writes the ones inside strings as \n and \t), so each tab is
 * two spaces and each line is escaped on its own (util_escape_control:
 * C1 controls and invalid UTF-8 in a value stay visible, not acted on).
 */
static void
print_pretty(const char *text)
{
	const char *p = text;
	while (*p) {
		size_t l = strcspn(p, "\n");
		char *line = xmalloc(2 * l + 1), *o = line;
		for (size_t i = 0; i < l; i++) {
			if (p[i] == '\t') {
				*o++ = ' ';
				*o++ = ' ';
			} else {
				*o++ = p[i];
			}
		}
		*o = '\0';
		char *e = util_escape_control(line);
		printf("%s\n", e);
		free(e);
		free(line);
		p += l + (p[l] == '\n');
	}
}

static void
format_time(double t, char *buf, size_t n)
{
	time_t s = (time_t)t;
	struct tm tm;
	gmtime_r(&s, &tm);
	strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static int
print_event(double at, const char *kind, const char *detail, void *ud)
{
	cJSON *arr = ud;
	if (arr != NULL) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "at", at);
		cJSON_AddStringToObject(o, "kind", kind);
		cJSON *d = detail ? cJSON_Parse(detail) : NULL;
		if (d != NULL)
			cJSON_AddItemToObject(o, "detail", d);
		cJSON_AddItemToArray(arr, o);
		return 0;
	}
	char ts[32];
	format_time(at, ts, sizeof(ts));
	printf("  %s  %-10s %s\n", ts, cmd_esc(kind), cmd_esc(detail));
	return 0;
}

static int
cmd_show_exec(const struct cmd_globals *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{"json", no_argument, NULL, 'j'},
		{NULL, 0, NULL, 0},
	};
	int json = 0, ch;
	while ((ch = getopt_long(argc, argv, "j", opts, NULL)) != -1) {
		if (ch != 'j')
			return cmd_misuse(&cmd_show_entry, NULL);
		json = 1;
	}
	if (argc - optind != 1)
		return cmd_misuse(&cmd_show_entry, "show takes one JOB");
	struct store *st = cmd_open_store_readonly(g);
	if (st == NULL)
		return cmd_open_status();
	struct lq_error err;
	error_clear(&err);
	struct store_job j;
	enum lq_status r = store_find_job(st, argv[optind], &j, &err);
	if (r != LQ_OK) {
		error_print(&err, stderr);
		store_close(st);
		return cmd_exit_for_error(&err);
	}
	cJSON *events = json ? cJSON_CreateArray() : NULL;
	if (json) {
		r = store_list_events(st, j.id, print_event, events, &err);
		cJSON *o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "id", (double)j.id);
		cJSON_AddStringToObject(o, "name", j.name);
		cJSON_AddStringToObject(o, "state", job_state_name(j.state));
		cJSON_AddStringToObject(o, "manifest", j.manifest_path);
		cJSON_AddNumberToObject(o, "line", j.request_line);
		/* raw: the request keeps integers past 2^53 digit for digit */
		cJSON_AddItemToObject(o, "request", cJSON_CreateRaw(j.request_json));
		cJSON_AddItemToObject(o, "config", cJSON_Parse(j.config_json));
		cJSON_AddStringToObject(o, "config_digest", j.config_digest);
		cJSON_AddNumberToObject(o, "step", j.step);
		cJSON_AddNumberToObject(o, "total_steps", j.total_steps);
		cJSON_AddNumberToObject(o, "attempts", j.attempts);
		cJSON_AddNumberToObject(o, "failures", j.failures);
		cJSON_AddNumberToObject(o, "max_attempts", j.max_attempts);
		json_add_int64(o, "priority", j.priority);
		if (j.error_code)
			cJSON_AddStringToObject(o, "error_code", j.error_code);
		if (j.error_grade)
			cJSON_AddStringToObject(o, "error_grade", j.error_grade);
		if (j.error_message)
			cJSON_AddStringToObject(o, "error_message", j.error_message);
		if (j.output_path)
			cJSON_AddStringToObject(o, "output", j.output_path);
		cJSON_AddItemToObject(o, "events", events);
		char *s = cJSON_Print(o);
		puts(s);
		cJSON_free(s);
		cJSON_Delete(o);
	} else {
		/* user strings through cmd_esc: no raw control characters */
		printf("job %lld: %s\n", (long long)j.id, cmd_esc(j.name));
		int stale = j.state == JOB_STATE_RUNNING &&
		    store_lease_owner_dead(j.lease_owner);
		printf("state:    %s (step %d/%d, attempt %d, failures %d/%d%s%s)%s\n",
		    job_state_name(j.state), j.step, j.total_steps, j.attempts,
		    j.failures, j.max_attempts, j.phase ? ", phase " : "",
		    j.phase ? cmd_esc(j.phase) : "", stale ? " stale: its worker is gone; "
		    "the next run requeues it" : "");
		printf("priority: %lld\n", (long long)j.priority);
		printf("manifest: %s:%d\n", cmd_esc(j.manifest_path),
		    j.request_line);
		if (j.output_path)
			printf("output:   %s\n", cmd_esc(j.output_path));
		char *e = cmd_last_error(&j, 0);
		if (e != NULL)
			printf("error:    %s\n", e);
		free(e);
		/* printed as stored: re-parsing would round integers past 2^53
		 * (JSON text: cJSON escaped C0 controls; cmd_esc the rest) */
		printf("request (as written):\n%s\n", cmd_esc(j.request_json));
		cJSON *cfg = cJSON_Parse(j.config_json);
		char *cs = cfg ? json_pretty(cfg) : NULL;
		printf("config (digest %s):\n", j.config_digest);
		if (cs != NULL)
			print_pretty(cs);
		else
			printf("%s\n", cmd_esc(j.config_json));
		free(cs);
		cJSON_Delete(cfg);
		printf("events:\n");
		r = store_list_events(st, j.id, print_event, NULL, &err);
	}
	store_job_clear(&j);
	store_close(st);
	if (r != LQ_OK) {
		error_print(&err, stderr);
		return cmd_exit_for_error(&err);
	}
	return 0;
}

const struct cmd_entry cmd_show_entry = {
	.name = "show",
	.usage = "[--json] JOB",
	.summary = "show one job: request, config and events",
	.exec = cmd_show_exec,
};
