/*
 * cancel.c — `latentq cancel JOB...` and `latentq retry JOB...`: the two
 * user-driven transitions (queued/running → cancelled; poisoned/cancelled
 * → queued).  A running job's worker sees the cancellation at its next
 * lease renewal and stops.
 */
#include <getopt.h>

#include "cmd/cmd.h"
#include "store/jobs.h"
#include "store/store.h"

static int
each_job(const struct cmd_entry *entry, const struct cmd_globals *g,
    int argc, char **argv,
    enum lq_status (*fn)(struct store *, int64_t, struct lq_error *),
    const char *verb)
{
	int ch;
	while ((ch = getopt_long(argc, argv, "", NULL, NULL)) != -1)
		return cmd_misuse(entry, NULL);
	if (optind >= argc)
		return cmd_misuse(entry, "%s needs at least one JOB", entry->name);
	struct store *st = cmd_open_store(g);
	if (st == NULL)
		return cmd_open_status();
	int rc = 0;
	for (int i = optind; i < argc; i++) {
		struct lq_error err;
		error_clear(&err);
		struct store_job j;
		enum lq_status r = store_find_job(st, argv[i], &j, &err);
		if (r == LQ_OK) {
			r = fn(st, j.id, &err);
			if (r == LQ_OK)
				printf("%s %lld %s\n", verb, (long long)j.id,
				    cmd_esc(j.name));
			store_job_clear(&j);
		}
		if (r != LQ_OK) {
			error_print(&err, stderr);
			rc = cmd_exit_for_error(&err);
		}
	}
	store_close(st);
	return rc;
}

static int
cmd_cancel_exec(const struct cmd_globals *g, int argc, char **argv)
{
	return each_job(&cmd_cancel_entry, g, argc, argv, store_cancel_job,
	    "cancelled");
}

static int
cmd_retry_exec(const struct cmd_globals *g, int argc, char **argv)
{
	return each_job(&cmd_retry_entry, g, argc, argv, store_retry_job,
	    "queued");
}

const struct cmd_entry cmd_cancel_entry = {
	.name = "cancel",
	.usage = "JOB...",
	.summary = "cancel queued or running jobs",
	.exec = cmd_cancel_exec,
};

const struct cmd_entry cmd_retry_entry = {
	.name = "retry",
	.usage = "JOB...",
	.summary = "queue poisoned or cancelled jobs again",
	.exec = cmd_retry_exec,
};
