/*
 * run.c — `latentq run`: the supervisor (src/worker/supervisor.h).
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "net/net.h"
#include "store/store.h"
#include "worker/supervisor.h"

/* Parses --keep-checkpoints: a count, or "all" (0). -1 on error. */
int
cmd_parse_keep(const char *arg)
{
	if (strcmp(arg, "all") == 0)
		return 0;
	char *end;
	long k = strtol(arg, &end, 10);
	if (*end != '\0' || k < 1 || k > 1000000)
		return -1;
	return (int)k;
}

static int
cmd_run_exec(const struct cmd_globals *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{"once", no_argument, NULL, 'o'},
		{"follow", no_argument, NULL, 'f'},
		{"max-jobs", required_argument, NULL, 'm'},
		{"keep-checkpoints", required_argument, NULL, 'k'},
		{"resume-anywhere", no_argument, NULL, 'r'},
		{"webhook", required_argument, NULL, 'w'},
		{"allow-download", no_argument, NULL, 'D'},
		{NULL, 0, NULL, 0},
	};
	struct supervisor_options opt = {
		.mode = SUPERVISOR_ONCE, .db_path = g->db_path,
		.device = g->device, .keep_checkpoints = -1,
		.verbose = g->verbose,
	};
	int ch, modes = 0;
	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (ch) {
		case 'o': opt.mode = SUPERVISOR_ONCE; modes++; break;
		case 'f': opt.mode = SUPERVISOR_FOLLOW; modes++; break;
		case 'm': {
			char *end;
			long n = strtol(optarg, &end, 10);
			if (*end != '\0' || n < 1)
				return cmd_misuse(&cmd_run_entry,
				    "--max-jobs: %s is not a positive integer", optarg);
			opt.max_jobs = (int)n;
			break;
		}
		case 'k':
			if ((opt.keep_checkpoints = cmd_parse_keep(optarg)) < 0)
				return cmd_misuse(&cmd_run_entry, "--keep-checkpoints: "
				    "%s is not a positive count or \"all\"", optarg);
			break;
		case 'r': opt.resume_anywhere = 1; break;
		case 'D': opt.allow_download = 1; break;
		case 'w':
			if (!net_url_is_http(optarg))
				return cmd_misuse(&cmd_run_entry, "--webhook: %s is not an "
				    "http:// or https:// URL", optarg);
			opt.webhook = optarg;
			break;
		default: return cmd_misuse(&cmd_run_entry, NULL);
		}
	}
	if (modes > 1)
		return cmd_misuse(&cmd_run_entry, "--once and --follow exclude "
		    "each other");
	if (optind != argc)
		return cmd_misuse(&cmd_run_entry, "unexpected argument %s",
		    argv[optind]);
	int open_rc;
	struct store *st = cmd_open_store_checked(g, &open_rc);
	if (st == NULL)
		return open_rc;
	/* a done job whose output file is gone or resized is rendered again
	 * (sizes only: hashing every output of a large queue would be slow) */
	cmd_check_outputs(st, NULL, 0, 0, g->verbose < 0);
	int rc = supervisor_run(st, &opt, NULL);
	store_close(st);
	return rc;
}

const struct cmd_entry cmd_run_entry = {
	.name = "run",
	.usage = "[--once | --follow] [--max-jobs N] [--keep-checkpoints K|all] "
	    "[--resume-anywhere] [--allow-download] [--webhook URL]",
	.summary = "render queued jobs, each in a crash-isolated worker process",
	.creates_db = 1,
	.exec = cmd_run_exec,
};
