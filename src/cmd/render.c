/*
 * render.c — `latentq render MANIFEST...`: submit the manifests' jobs and
 * render them until each has ended, through the crash-isolating supervisor.
 * Running it again after a crash picks up the same jobs (submit is
 * idempotent) and resumes them from their checkpoints.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "net/net.h"
#include "cmd/submit.h"
#include "core/util.h"
#include "store/checkpoints.h"
#include "store/jobs.h"
#include "store/store.h"
#include "worker/supervisor.h"

int cmd_parse_keep(const char *arg);

struct outputs_ctx {
	struct store *st;
	const int64_t *ids;
	size_t n;
	int done, other;
	int quiet;
};

static int
print_artifact(const struct store_artifact *a, void *ud)
{
	(void)ud;
	printf("          %-14s %s\n", a->kind, cmd_esc(a->path));
	return 0;
}

static int
report_job(const struct store_job *j, void *ud)
{
	struct outputs_ctx *c = ud;
	for (size_t i = 0; i < c->n; i++) {
		if (c->ids[i] != j->id)
			continue;
		if (j->state == JOB_STATE_DONE && c->quiet) {
			c->done++;
		} else if (j->state != JOB_STATE_DONE && c->quiet) {
			c->other++;
		} else if (j->state == JOB_STATE_DONE) {
			c->done++;
			printf("done      %-6lld %s\n", (long long)j->id,
			    cmd_esc(j->name));
			struct lq_error err;
			error_clear(&err);
			store_list_artifacts(c->st, j->id, print_artifact, NULL, &err);
		} else {
			c->other++;
			char *e = cmd_last_error(j, 100);
			printf("%-9s %-6lld %-24s %s\n", job_state_name(j->state),
			    (long long)j->id, cmd_esc(j->name), e ? e : "");
			free(e);
		}
		break;
	}
	return 0;
}

static int
cmd_render_exec(const struct cmd_globals *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{"again", no_argument, NULL, 'a'},
		{"keep-checkpoints", required_argument, NULL, 'k'},
		{"resume-anywhere", no_argument, NULL, 'r'},
		{"webhook", required_argument, NULL, 'w'},
		{"allow-download", no_argument, NULL, 'D'},
		{NULL, 0, NULL, 0},
	};
	struct submit_options sopt = {.quiet = g->verbose < 0};	/* latentq -q */
	struct supervisor_options opt = {
		.mode = SUPERVISOR_ONCE, .db_path = g->db_path,
		.device = g->device, .keep_checkpoints = -1,
		.verbose = g->verbose,
	};
	int ch;
	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (ch) {
		case 'a': sopt.again = 1; break;
		case 'k':
			if ((opt.keep_checkpoints = cmd_parse_keep(optarg)) < 0)
				return cmd_misuse(&cmd_render_entry, "--keep-checkpoints: "
				    "%s is not a positive count or \"all\"", optarg);
			break;
		case 'r': opt.resume_anywhere = 1; break;
		case 'D': sopt.allow_download = opt.allow_download = 1; break;
		case 'w':
			if (!net_url_is_http(optarg))
				return cmd_misuse(&cmd_render_entry, "--webhook: %s is not an "
				    "http:// or https:// URL", optarg);
			opt.webhook = optarg;
			break;
		default: return cmd_misuse(&cmd_render_entry, NULL);
		}
	}
	if (optind >= argc)
		return cmd_misuse(&cmd_render_entry, "render needs a manifest");
	int open_rc;
	struct store *st = cmd_open_store_checked(g, &open_rc);
	if (st == NULL)
		return open_rc;
	int64_t *ids = NULL;
	size_t n = 0;
	int rejected = 0, bad = 0;
	for (int i = optind; i < argc; i++) {
		struct submit_result res;
		enum lq_status r = submit_manifest(st, argv[i], &sopt, &res);
		if (r == LQ_OK) {
			ids = xrealloc(ids, (n + res.n_jobs + 1) * sizeof(*ids));
			memcpy(ids + n, res.job_ids, res.n_jobs * sizeof(*ids));
			n += res.n_jobs;
			rejected += res.rejected;
		} else if (bad == 0 || bad == EXIT_DATAERR) {
			bad = res.exit_status;	/* 66 no manifest wins over 65 */
		}
		free(res.job_ids);
		if (r != LQ_OK && r != LQ_FAILED) {
			free(ids);
			store_close(st);
			return res.exit_status;
		}
	}
	fflush(stdout);	/* the per-job lines before the render's log */
	cmd_check_outputs(st, ids, n, 1, g->verbose < 0);
	int rc = 0;
	if (n > 0) {
		opt.only_ids = ids;
		opt.n_ids = n;
		if (isatty(STDERR_FILENO))
			setenv("LATENTQ_TTY", "1", 1);
		rc = supervisor_run(st, &opt, NULL);
		struct outputs_ctx c = {st, ids, n, 0, 0, 0};
		struct lq_error err;
		error_clear(&err);
		c.quiet = g->verbose < 0;	/* -q: the exit status says it */
		store_list_jobs(st, -1, report_job, &c, &err);
		if (!c.quiet)
			printf("%d of %zu jobs done\n", c.done, n);
		if (rc == 0 && c.other > 0)
			rc = 1;
	}
	if (rc == 0 && bad)
		rc = bad;
	else if (rc == 0 && rejected > 0)
		rc = EXIT_DATAERR;
	free(ids);
	store_close(st);
	return rc;
}

const struct cmd_entry cmd_render_entry = {
	.name = "render",
	.usage = "[--again] [--allow-download] [--keep-checkpoints K|all] "
	    "[--resume-anywhere] [--webhook URL] MANIFEST...",
	.summary = "submit manifests and render their jobs until they end",
	.creates_db = 1,
	.exec = cmd_render_exec,
};
