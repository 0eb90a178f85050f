/*
 * prune.c — `latentq prune [--dry-run] [--all] [JOB...]`: delete the
 * checkpoints of done jobs, keeping each one's final checkpoint (what a
 * missing output is re-decoded from) unless --all.
 */
#include <getopt.h>
#include <inttypes.h>

#include "cmd/cmd.h"
#include "store/checkpoints.h"
#include "store/jobs.h"
#include "store/store.h"

static void
print_pruned(int64_t id, const char *name, int count, int64_t bytes, void *ud)
{
	const char *verb = ud;
	printf("%-9s %-6" PRId64 " %-24s %d checkpoint%s, %" PRId64 " bytes\n",
	    verb, id, name, count, count == 1 ? "" : "s", bytes);
}

static int
cmd_prune_exec(const struct cmd_globals *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{"dry-run", no_argument, NULL, 'n'},
		{"all", no_argument, NULL, 'a'},
		{NULL, 0, NULL, 0},
	};
	int dry_run = 0, all = 0, ch;
	while ((ch = getopt_long(argc, argv, "na", opts, NULL)) != -1) {
		switch (ch) {
		case 'n': dry_run = 1; break;
		case 'a': all = 1; break;
		default: return cmd_misuse(&cmd_prune_entry, NULL);
		}
	}
	struct store *st = cmd_open_store(g);
	if (st == NULL)
		return cmd_open_status();
	const char *verb = dry_run ? "would" : "pruned";
	struct lq_error err;
	error_clear(&err);
	int rc = EXIT_OK, total = 0;
	int64_t bytes = 0;
	for (int i = optind; i < argc || (i == optind && optind == argc); i++) {
		int64_t id = 0;
		if (i < argc) {
			struct store_job j;
			if (store_find_job(st, argv[i], &j, &err) != LQ_OK) {
				error_print(&err, stderr);
				rc = cmd_exit_for_error(&err);
				error_clear(&err);
				continue;
			}
			id = j.id;
			if (j.state != JOB_STATE_DONE)
				fprintf(stderr, "latentq: job %" PRId64 " (%s) is %s: only "
				    "done jobs are pruned\n", j.id, j.name,
				    job_state_name(j.state));
			store_job_clear(&j);
		}
		int n = 0;
		int64_t b = 0;
		if (store_prune_checkpoints(st, id, !all, dry_run, print_pruned,
		    (void *)verb, &n, &b, &err) != LQ_OK) {
			error_print(&err, stderr);
			rc = cmd_exit_for_error(&err);
			break;
		}
		total += n;
		bytes += b;
	}
	printf("%s %d checkpoint%s, %" PRId64 " bytes%s\n", dry_run ?
	    "would prune" : "pruned", total, total == 1 ? "" : "s", bytes,
	    all ? "" : " (final checkpoints kept)");
	store_close(st);
	return rc;
}

const struct cmd_entry cmd_prune_entry = {
	.name = "prune",
	.usage = "[--dry-run] [--all] [JOB...]",
	.summary = "delete the checkpoints of done jobs, keeping the final one",
	.exec = cmd_prune_exec,
};
