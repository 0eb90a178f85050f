/*
 * list.c — `latentq list [--state S]`: one tab-separated line per job
 * (id, name, state, output), no header, for scripts.
 */
#include <getopt.h>

#include "cmd/cmd.h"
#include "store/jobs.h"
#include "store/store.h"

static int
print_line(const struct store_job *j, void *ud)
{
	(void)ud;
	/* escaped: a tab or newline in a name must not make a new field */
	printf("%lld\t%s\t%s\t%s\n", (long long)j->id, cmd_esc(j->name),
	    job_state_name(j->state), cmd_esc(j->output_path));
	return 0;
}

static int
cmd_list_exec(const struct cmd_globals *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{"state", required_argument, NULL, 's'},
		{NULL, 0, NULL, 0},
	};
	int filter = -1, ch;
	while ((ch = getopt_long(argc, argv, "s:", opts, NULL)) != -1) {
		enum job_state s;
		if (ch != 's')
			return cmd_misuse(&cmd_list_entry, NULL);
		if (job_state_parse(optarg, &s) != 0)
			return cmd_misuse(&cmd_list_entry, "unknown state %s", optarg);
		filter = (int)s;
	}
	if (optind != argc)
		return cmd_misuse(&cmd_list_entry, "unexpected argument %s",
		    argv[optind]);
	struct store *st = cmd_open_store_readonly(g);
	if (st == NULL)
		return cmd_open_status();
	struct lq_error err;
	error_clear(&err);
	enum lq_status r = store_list_jobs(st, filter, print_line, NULL, &err);
	store_close(st);
	if (r != LQ_OK) {
		error_print(&err, stderr);
		return cmd_exit_for_error(&err);
	}
	return 0;
}

const struct cmd_entry cmd_list_entry = {
	.name = "list",
	.usage = "[--state STATE]",
	.summary = "list jobs, one tab-separated line each",
	.exec = cmd_list_exec,
};
