/*
 * exec-job.c — `latentq exec-job --owner O JOB` (internal): the child the
 * supervisor spawns to render one claimed job.  Exit statuses are the
 * supervisor's protocol: 0 done (marked here), 65 failed for good (marked
 * poisoned here), 75 interrupted by SIGTERM after a checkpoint, 76 a
 * retryable failure (the supervisor requeues with backoff), 70 the worker
 * cannot render at all (no such device: the job is requeued, the attempt
 * refunded, and the supervisor stops), 74 the disk is full (likewise),
 * 77 the lease was lost (nothing written; see worker/supervisor.h).
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
#include "core/file.h"
#include "core/log.h"
#include "render/render.h"
#include "store/jobs.h"
#include "store/store.h"
#include "worker/supervisor.h"

int cmd_parse_keep(const char *arg);

static void
on_term(int sig)
{
	(void)sig;
	render_interrupted = 1;
}

/*
 * The exit status for a store or render error that is not the job's: a
 * lost lease (LQ-JOB-005), a full disk (outputs or database); else `def`.
 */
static int
exit_for(const struct lq_error *e, int def)
{
	if (strcmp(e->code, "LQ-JOB-005") == 0)
		return SUPERVISOR_EXIT_LEASE_LOST;
	if (e->status == LQ_RETRY && (strcmp(e->code, FILE_CODE_STORAGE) == 0 ||
	    strcmp(e->code, STORE_CODE_STORAGE) == 0))
		return SUPERVISOR_EXIT_STORAGE;
	return def;
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
		return 76;
	struct lq_error err;
	error_clear(&err);
	struct store_job job;
	if (store_find_job(st, argv[optind], &job, &err) != LQ_OK) {
		error_print(&err, stderr);
		store_close(st);
		return 76;
	}
	if (job.state != JOB_STATE_RUNNING || job.lease_owner == NULL ||
	    strcmp(job.lease_owner, owner) != 0 || job.lease_token != token) {
		log_error("job %lld is %s and not leased to %s (claim %lld)",
		    (long long)job.id, job_state_name(job.state), owner, token);
		store_job_clear(&job);
		store_close(st);
		return SUPERVISOR_EXIT_LEASE_LOST;
	}
	struct store_lease lease = {job.id, owner, token};
	store_hold_lease(st, &lease);
	enum lq_status r = render_job(st, &job, owner, &opt, &err);
	int rc;
	struct lq_error e2;
	error_clear(&e2);
	if (r == LQ_OK || r == LQ_WARN) {
		rc = store_finish_job(st, job.id, owner, NULL, &e2) == LQ_OK ? 0 :
		    exit_for(&e2, 76);
	} else if (exit_for(&err, 0) != 0) {
		/* not the job's fault: nothing is recorded here */
		error_print(&err, stderr);
		rc = exit_for(&err, 0);
	} else if (r == LQ_RETRY && strcmp(err.code, "LQ-RUN-INT") == 0) {
		error_print(&err, stderr);
		rc = 75;
	} else if (r == LQ_RETRY) {
		error_print(&err, stderr);
		rc = 76;
	} else if (r == LQ_FATAL) {
		/* the worker cannot render anything (no such device): not the
		 * job's fault, so the job is left for the supervisor to requeue */
		error_print(&err, stderr);
		rc = EXIT_SOFTWARE;
	} else {
		error_print(&err, stderr);
		char msg[1536];
		error_format(&err, msg, sizeof(msg));
		rc = store_fail_job(st, job.id, owner, err.code, msg, &e2) == LQ_OK ?
		    65 : exit_for(&e2, 76);
	}
	if (e2.status != LQ_OK)
		error_print(&e2, stderr);
	store_job_clear(&job);
	store_close(st);
	return rc;
}

const struct cmd_entry cmd_exec_job_entry = {
	.name = "exec-job",
	.usage = "--owner OWNER --lease-token N [--attempt N] "
	    "[--keep-checkpoints K|all] "
	    "[--resume-anywhere] JOB",
	.summary = "render one claimed job (internal; used by run)",
	.hidden = 1,
	.exec = cmd_exec_job_exec,
};
