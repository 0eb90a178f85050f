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
 */
#include <getopt.h>
#include <signal.h>
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
		{NULL, 0, NULL, 0},
	};
	const char *owner = NULL;
	long long token = -1;
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
		default: return cmd_misuse(&cmd_exec_job_entry, NULL);
		}
	}
	if (owner == NULL || token < 0 || argc - optind != 1)
		return cmd_misuse(&cmd_exec_job_entry, "exec-job needs --owner, "
		    "--lease-token and one JOB");
	struct sigaction sa = {0};
	sa.sa_handler = on_term;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);

	struct store *st = cmd_open_store(g);
	if (st == NULL)
		return EXIT_IOERR;
	struct lq_error err;
	error_clear(&err);
	struct store_job job;
	if (store_find_job(st, argv[optind], &job, &err) != LQ_OK) {
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
	enum lq_status r = render_job(st, &job, owner, &opt, &err);
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
	fault_slow(job.name, "exit", 0, opt.attempt);
	store_job_clear(&job);
	store_close(st);
	return rc;
}

const struct cmd_entry cmd_exec_job_entry = {
	.name = "exec-job",
	.usage = "--owner OWNER --lease-token N [--attempt N] "
	    "[--keep-checkpoints K|all] "
	    "[--resume-anywhere] [--allow-download] JOB",
	.summary = "render one claimed job (internal; used by run)",
	.hidden = 1,
	.exec = cmd_exec_job_exec,
};
