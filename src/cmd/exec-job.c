/*
 * exec-job.c — `latentq exec-job --owner O JOB` (internal): the child the
 * supervisor spawns to render one claimed job.  Its exit statuses, and
 * what it records before each, are the worker protocol of
 * src/worker/protocol.h: 0 done (marked here), 65 failed for good (marked
 * poisoned here), 69 this host cannot render, 75 interrupted or a
 * retryable error, 74 the database failed or a disk is full, 77 the job is
 * no longer leased to it; before a non-zero exit (but 77) the real error
 * is recorded as a worker_error event.
 *
 * The store handle is bound to the claim (--owner, --lease-token) before
 * anything is rendered, so every write is fenced by it (store/jobs.h).
 *
 * `exec-job --serve --owner O` is the warm worker: the same per job, for
 * each order the supervisor writes on its stdin, with its devices kept
 * between jobs (worker/protocol.h, render_warm in render/render.h).
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "core/fault.h"
#include "core/file.h"
#include "core/log.h"
#include "render/render.h"
#include "store/jobs.h"
#include "store/store.h"
#include "worker/protocol.h"

int cmd_parse_keep(const char *arg);

static void
on_term(int sig)
{
	(void)sig;
	render_interrupted = 1;
}

/*
 * Renders job `ref` under the claim (owner, token) with its own store
 * handle, records its outcome as protocol.h says, and returns the exit
 * status a one-job child ends with.  `serial` > 0 (a serving child):
 * the job's "worker" event says which process renders it, which of its
 * jobs it is, and whether it holds devices kept from the one before
 * (which this job uses if its mesh asks for the same devices).
 */
static int
exec_one(const struct cmd_globals *g, const char *owner, long long token,
    const char *ref, const struct render_options *opt, int serial)
{
	struct store *st = cmd_open_store(g);
	if (st == NULL)
		return EXIT_IOERR;
	struct lq_error err;
	error_clear(&err);
	struct store_job job;
	if (store_find_job(st, ref, &job, &err) != LQ_OK) {
		error_print(&err, stderr);
		store_close(st);
		return EXIT_IOERR;
	}
	if (job.state != JOB_STATE_RUNNING || job.lease_owner == NULL ||
	    strcmp(job.lease_owner, owner) != 0 || job.lease_token != token) {
		log_error("job %lld is %s and not leased to %s (claim %lld)",
		    (long long)job.id, job_state_name(job.state), owner, token);
		store_job_clear(&job);
		store_close(st);
		return WORKER_EXIT_LEASE_LOST;
	}
	struct store_lease lease = {job.id, owner, token};
	store_hold_lease(st, &lease);
	enum lq_status r = LQ_OK;
	if (serial > 0) {
		char detail[96];
		snprintf(detail, sizeof(detail), "{\"pid\":%ld,\"job\":%d,"
		    "\"devices_held\":%s}", (long)getpid(), serial,
		    render_warm_holds(opt->warm) ? "true" : "false");
		r = store_add_event(st, job.id, "worker", detail, &err);
	}
	if (r == LQ_OK)
		r = render_job(st, &job, owner, opt, &err);
	int rc = EXIT_OK;
	struct lq_error e2;
	error_clear(&e2);
	if (r == LQ_OK || r == LQ_WARN) {
		if (store_finish_job(st, job.id, owner, NULL, &e2) != LQ_OK) {
			err = e2;
			error_clear(&e2);
			rc = worker_exit_for(&err, NULL) == WORKER_EXIT_LEASE_LOST ?
			    WORKER_EXIT_LEASE_LOST : EXIT_IOERR;
		}
	} else {
		/* the phase it failed in decides "this host" or "this job" */
		struct store_job now;
		int have = store_get_job(st, job.id, &now, &e2) == LQ_OK;
		error_clear(&e2);
		rc = worker_exit_for(&err, have ? now.phase : NULL);
		if (have)
			store_job_clear(&now);
		if (rc == EXIT_DATAERR) {
			char msg[1536];
			worker_error_text(&err, msg, sizeof(msg));
			if (store_fail_job(st, job.id, owner, err.code, msg, &e2) !=
			    LQ_OK)
				rc = worker_exit_for(&e2, NULL) ==
				    WORKER_EXIT_LEASE_LOST ? WORKER_EXIT_LEASE_LOST :
				    EXIT_IOERR;
		}
	}
	if (rc != EXIT_OK)
		error_print(&err, stderr);
	/* a child that lost its lease writes nothing, not even its report */
	if (rc != EXIT_OK && rc != EXIT_DATAERR && rc != WORKER_EXIT_LEASE_LOST)
		worker_report_error(st, job.id, &err, rc, &e2);
	if (e2.status != LQ_OK)
		error_print(&e2, stderr);
	fault_slow(job.name, "exit", 0, opt->attempt);
	store_job_clear(&job);
	store_close(st);
	return rc;
}

/*
 * --serve: orders on stdin, answers on WORKER_SERVE_REPLY_FD, the devices
 * kept between jobs (worker/protocol.h).  Returns the last job's status
 * when it ends the serving, else 0 at the end of the orders.
 */
static int
serve(const struct cmd_globals *g, const char *owner, struct render_options *opt)
{
	/* the kept ctxs' pipeline cache goes through this handle; each job
	 * opens its own, bound to its claim */
	struct store *cache = cmd_open_store(g);
	if (cache == NULL)
		return EXIT_IOERR;
	opt->warm = render_warm_create(cache);
	int rc = EXIT_OK, serial = 0;
	char line[128];
	/* a SIGTERM while waiting for an order ends the wait (no SA_RESTART) */
	while (!render_interrupted && fgets(line, sizeof(line), stdin) != NULL) {
		long long id, token;
		int attempt;
		char ref[32];
		if (sscanf(line, "%lld %d %lld", &id, &attempt, &token) != 3) {
			log_error("exec-job --serve: an order \"%.40s\" is not "
			    "\"JOB ATTEMPT LEASE_TOKEN\"", line);
			rc = EXIT_SOFTWARE;
			break;
		}
		snprintf(ref, sizeof(ref), "%lld", id);
		opt->attempt = attempt;
		rc = exec_one(g, owner, token, ref, opt, ++serial);
		char reply[64];
		int n = snprintf(reply, sizeof(reply), "%lld %d\n", id, rc);
		if (write(WORKER_SERVE_REPLY_FD, reply, (size_t)n) != n) {
			log_error("exec-job --serve: cannot answer the supervisor: "
			    "%s", strerror(errno));
			break;
		}
		if (!WORKER_SERVES_ON(rc))
			break;	/* a fresh process for whatever comes next */
		rc = EXIT_OK;
	}
	render_warm_free(opt->warm);
	opt->warm = NULL;
	store_close(cache);
	return rc;
}

static int
cmd_exec_job_exec(const struct cmd_globals *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{"owner", required_argument, NULL, 'o'},
		{"attempt", required_argument, NULL, 'a'},
		{"lease-token", required_argument, NULL, 't'},
		{"keep-checkpoints", required_argument, NULL, 'k'},
		{"resume-anywhere", no_argument, NULL, 'r'},
		{"allow-download", no_argument, NULL, 'D'},
		{"serve", no_argument, NULL, 's'},
		{NULL, 0, NULL, 0},
	};
	const char *owner = NULL;
	long long token = -1;
	int serving = 0;
	struct render_options opt = {.keep_checkpoints = 2, .device = g->device,
	    .attempt = 1, .progress_tty = getenv("LATENTQ_TTY") != NULL};
	int ch;
	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (ch) {
		case 'o': owner = optarg; break;
		case 'a': opt.attempt = atoi(optarg); break;
		case 't': token = atoll(optarg); break;
		case 'k':
			if ((opt.keep_checkpoints = cmd_parse_keep(optarg)) < 0)
				return cmd_misuse(&cmd_exec_job_entry, NULL);
			break;
		case 'r': opt.resume_anywhere = 1; break;
		case 'D': opt.allow_download = 1; break;
		case 's': serving = 1; break;
		default: return cmd_misuse(&cmd_exec_job_entry, NULL);
		}
	}
	if (serving ? owner == NULL || token >= 0 || argc != optind :
	    owner == NULL || token < 0 || argc - optind != 1)
		return cmd_misuse(&cmd_exec_job_entry, "exec-job needs --owner, "
		    "and --lease-token and one JOB, or --serve");
	struct sigaction sa = {0};
	sa.sa_handler = on_term;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	if (serving)
		return serve(g, owner, &opt);
	return exec_one(g, owner, token, argv[optind], &opt, 0);
}

const struct cmd_entry cmd_exec_job_entry = {
	.name = "exec-job",
	.usage = "--owner OWNER {--lease-token N [--attempt N] JOB | --serve} "
	    "[--keep-checkpoints K|all] [--resume-anywhere] [--allow-download]",
	.summary = "render one claimed job (internal; used by run)",
	.hidden = 1,
	.exec = cmd_exec_job_exec,
};
