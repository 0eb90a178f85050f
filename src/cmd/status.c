/*
 * status.c — `latentq status [--json] [--state S] [--watch [--interval S]]`:
 * one line per job with state, step k/N, attempts, failures, next retry
 * and the last error; --json adds times and the expected remaining time;
 * --watch follows the queue from another terminal until it drains.
 *
 * A running job whose lease owner is provably dead (on this host) is shown
 * as "stale": its worker is gone and the next `run` requeues it.
 */
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cmd/cmd.h"
#include "core/json.h"
#include "cmd/estimate.h"
#include "core/util.h"
#include "store/jobs.h"
#include "store/store.h"

#define ERROR_WIDTH 72	/* the LAST ERROR cell, so a row fits 160 columns */

struct status_ctx {
	int json, watch;
	cJSON *array;
	int counts[6], stale;
	double now;
	const struct estimate_history *hist;
	/* the queue's totals, for the summary line and --watch */
	int live, ended;		/* queued+running jobs; done+poisoned */
	double queue_left;		/* seconds of known remaining work */
	int queue_unknown;		/* jobs whose remaining time is unknown */
};

static int
is_stale(const struct store_job *j)
{
	return j->state == JOB_STATE_RUNNING &&
	    store_lease_owner_dead(j->lease_owner);
}

/* "12s", "3m04s", "1h02m", or "?" for unknown (< 0). */
static void
format_duration(double s, char *buf, size_t n)
{
	if (s < 0) {
		snprintf(buf, n, "?");
		return;
	}
	long t = (long)(s + 0.5);
	if (t < 60)
		snprintf(buf, n, "%lds", t);
	else if (t < 3600)
		snprintf(buf, n, "%ldm%02lds", t / 60, t % 60);
	else
		snprintf(buf, n, "%ldh%02ldm", t / 3600, t / 60 % 60);
}

static void
format_retry(double not_before, double now, char *buf, size_t n)
{
	if (not_before <= now) {
		snprintf(buf, n, "-");
		return;
	}
	snprintf(buf, n, "in %.0fs", not_before - now);
}

static void
add_time(cJSON *o, const char *key, double t)
{
	if (t > 0)
		cJSON_AddNumberToObject(o, key, t);
	else
		cJSON_AddNullToObject(o, key);
}

static int
print_job(const struct store_job *j, void *ud)
{
	struct status_ctx *c = ud;
	int stale = is_stale(j);
	c->counts[j->state]++;
	c->stale += stale;
	double left = estimate_remaining(c->hist, j, c->now);
	double per = estimate_step_seconds(j, c->now);
	if (j->state == JOB_STATE_QUEUED || j->state == JOB_STATE_RUNNING) {
		c->live++;
		if (left >= 0)
			c->queue_left += left;
		else
			c->queue_unknown++;
	} else if (j->state == JOB_STATE_DONE || j->state == JOB_STATE_POISONED) {
		c->ended++;
	}
	const char *state = stale ? "stale" : job_state_name(j->state);
	char *error = cmd_last_error(j, c->json ? 0 : ERROR_WIDTH);
	if (c->json) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "id", (double)j->id);
		cJSON_AddStringToObject(o, "name", j->name);
		cJSON_AddStringToObject(o, "state", state);
		cJSON_AddNumberToObject(o, "step", j->step);
		cJSON_AddNumberToObject(o, "total_steps", j->total_steps);
		cJSON_AddNumberToObject(o, "attempts", j->attempts);
		cJSON_AddNumberToObject(o, "failures", j->failures);
		cJSON_AddNumberToObject(o, "max_attempts", j->max_attempts);
		json_add_int64(o, "priority", j->priority);
		if (j->phase)
			cJSON_AddStringToObject(o, "phase", j->phase);
		if (j->not_before > c->now && j->state == JOB_STATE_QUEUED)
			cJSON_AddNumberToObject(o, "next_retry_at", j->not_before);
		/* times: seconds since the epoch; durations in seconds */
		add_time(o, "started", j->started_at);
		add_time(o, "ended", j->finished_at);
		double elapsed = j->run_seconds;
		if (j->state == JOB_STATE_RUNNING && j->claimed_at > 0)
			elapsed += c->now - j->claimed_at;
		if (j->started_at > 0)
			cJSON_AddNumberToObject(o, "elapsed", elapsed);
		else
			cJSON_AddNullToObject(o, "elapsed");
		if (per >= 0)
			cJSON_AddNumberToObject(o, "seconds_per_step", per);
		if (left >= 0)
			cJSON_AddNumberToObject(o, "remaining", left);
		else
			cJSON_AddNullToObject(o, "remaining");
		if (j->error_code)
			cJSON_AddStringToObject(o, "error_code", j->error_code);
		if (j->error_grade)
			cJSON_AddStringToObject(o, "error_grade", j->error_grade);
		if (j->error_message)
			cJSON_AddStringToObject(o, "error_message", j->error_message);
		if (j->output_path)
			cJSON_AddStringToObject(o, "output", j->output_path);
		cJSON_AddItemToArray(c->array, o);
		free(error);
		return 0;
	}
	char steps[32], attempts[16], failures[32], retry[32];
	snprintf(steps, sizeof(steps), "%d/%d", j->step, j->total_steps);
	snprintf(attempts, sizeof(attempts), "%d", j->attempts);
	snprintf(failures, sizeof(failures), "%d/%d", j->failures,
	    j->max_attempts);
	format_retry(j->state == JOB_STATE_QUEUED ? j->not_before : 0, c->now,
	    retry, sizeof(retry));
	if (c->watch) {
		char ps[32] = "-", eta[32] = "-";
		if (per >= 0)
			snprintf(ps, sizeof(ps), "%.2f", per);
		if (j->state == JOB_STATE_QUEUED || j->state == JOB_STATE_RUNNING)
			format_duration(left, eta, sizeof(eta));
		printf("%-6lld %-24s %-9s %-9s %-8s %-7s %s\n", (long long)j->id,
		    cmd_esc(j->name), state, steps, ps, eta, error ? error : "");
	} else {
		printf("%-6lld %-24s %-9s %-9s %-8s %-8s %-9s %s\n",
		    (long long)j->id, cmd_esc(j->name), state, steps, attempts, failures,
		    retry, error ? error : "");
	}
	free(error);
	return 0;
}

/* One snapshot of the queue; returns the number of live jobs, or -1. */
static int
snapshot(struct store *st, int filter, struct status_ctx *c)
{
	struct lq_error err;
	error_clear(&err);
	struct estimate_history hist;
	if (estimate_history_load(st, &hist, &err) != LQ_OK) {
		error_print(&err, stderr);
		return -1;
	}
	memset(c->counts, 0, sizeof(c->counts));
	c->stale = c->live = c->ended = c->queue_unknown = 0;
	c->queue_left = 0;
	c->hist = &hist;
	c->now = util_now();
	if (c->json)
		c->array = cJSON_CreateArray();
	else if (c->watch)
		printf("%-6s %-24s %-9s %-9s %-8s %-7s %s\n", "ID", "NAME", "STATE",
		    "STEP", "S/STEP", "ETA", "LAST ERROR");
	else
		printf("%-6s %-24s %-9s %-9s %-8s %-8s %-9s %s\n", "ID", "NAME",
		    "STATE", "STEP", "ATTEMPTS", "FAILURES", "RETRY", "LAST ERROR");
	enum lq_status r = store_list_jobs(st, filter, print_job, c, &err);
	estimate_history_free(&hist);
	if (r != LQ_OK) {
		error_print(&err, stderr);
		cJSON_Delete(c->array);
		c->array = NULL;
		return -1;
	}
	char eta[32];
	format_duration(c->queue_unknown > 0 ? -1 : c->queue_left, eta,
	    sizeof(eta));
	if (c->json) {
		char *s = cJSON_PrintUnformatted(c->array);
		puts(s);
		cJSON_free(s);
		cJSON_Delete(c->array);
		c->array = NULL;
		return c->live;
	}
	printf("%d queued, %d running, %d done, %d rejected, %d cancelled, "
	    "%d poisoned", c->counts[JOB_STATE_QUEUED],
	    c->counts[JOB_STATE_RUNNING], c->counts[JOB_STATE_DONE],
	    c->counts[JOB_STATE_REJECTED], c->counts[JOB_STATE_CANCELLED],
	    c->counts[JOB_STATE_POISONED]);
	if (c->stale > 0)
		printf(" (%d stale: worker gone, requeued by the next run)",
		    c->stale);
	printf("\n");
	if (c->watch) {
		int total = c->live + c->ended;
		int current = c->ended + (c->counts[JOB_STATE_RUNNING] > 0);
		printf("queue: job %d of %d, ETA %s%s\n", current, total, eta,
		    c->queue_unknown > 0 ? " (no history for some jobs yet)" : "");
	}
	fflush(stdout);
	return c->live;
}

static volatile sig_atomic_t watch_stop;

static void
on_watch_signal(int sig)
{
	(void)sig;
	watch_stop = 1;
}

static int
cmd_status_exec(const struct cmd_globals *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{"json", no_argument, NULL, 'j'},
		{"state", required_argument, NULL, 's'},
		{"watch", no_argument, NULL, 'w'},
		{"interval", required_argument, NULL, 'i'},
		{NULL, 0, NULL, 0},
	};
	struct status_ctx c = {0};
	int filter = -1, ch;
	double interval = 1.0;
	while ((ch = getopt_long(argc, argv, "js:wi:", opts, NULL)) != -1) {
		switch (ch) {
		case 'j': c.json = 1; break;
		case 'w': c.watch = 1; break;
		case 'i': {
			char *end;
			interval = strtod(optarg, &end);
			if (*end != '\0' || !(interval >= 0.1 && interval <= 3600))
				return cmd_misuse(&cmd_status_entry, "--interval: %s is "
				    "not a number of seconds from 0.1 to 3600", optarg);
			break;
		}
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
	if (c.watch && c.json)
		return cmd_misuse(&cmd_status_entry, "--watch and --json exclude "
		    "each other");
	struct store *st = cmd_open_store_readonly(g);
	if (st == NULL)
		return cmd_open_status();
	if (!c.watch) {
		int live = snapshot(st, filter, &c);
		store_close(st);
		return live < 0 ? EXIT_IOERR : EXIT_OK;
	}
	/* --watch: redraw in place on a terminal, else one snapshot per
	 * interval separated by a blank line; ends when nothing is queued or
	 * running (or at SIGINT/SIGTERM) */
	int tty = isatty(STDOUT_FILENO);
	struct sigaction sa = {0};
	sa.sa_handler = on_watch_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	int rc = EXIT_OK;
	for (int n = 0; !watch_stop; n++) {
		if (tty)
			fputs("\033[H\033[2J", stdout);
		else if (n > 0)
			putchar('\n');
		int live = snapshot(st, filter, &c);
		if (live < 0) {
			rc = EXIT_IOERR;
			break;
		}
		if (live == 0)
			break;
		struct timespec ts = {(time_t)interval,
		    (long)((interval - (double)(time_t)interval) * 1e9)};
		nanosleep(&ts, NULL);
	}
	store_close(st);
	return rc;
}

const struct cmd_entry cmd_status_entry = {
	.name = "status",
	.usage = "[--json] [--state STATE] [--watch [--interval SECONDS]]",
	.summary = "show the queue: state, step, attempts, failures and last "
	    "error per job",
	.exec = cmd_status_exec,
};
