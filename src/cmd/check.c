/*
 * check.c — `latentq check [--repair [NEW.db]]`: PRAGMA integrity_check of
 * the queue database and the record check of both backends (store_check);
 * with --repair, what is readable is copied into a new database
 * (store_repair) and the damaged one is left as it was.  On PostgreSQL the
 * server checks and recovers its own pages (store_check is then the
 * connection, the schema version and the records), so --repair is
 * refused.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "core/util.h"
#include "store/store.h"

static int
repair(const struct cmd_globals *g, const char *dst)
{
	char *def = NULL;
	if (dst == NULL)
		dst = def = xasprintf("%s.repaired", g->db_path);
	struct store_repair_table *t = NULL;
	size_t n = 0;
	struct lq_error err;
	error_clear(&err);
	enum lq_status s = store_repair(g->db_path, dst, &t, &n, &err);
	if (s != LQ_OK) {
		error_print(&err, stderr);
		free(def);
		return s == LQ_RETRY ? EXIT_TEMPFAIL : EXIT_IOERR;
	}
	int64_t lost = 0;
	for (size_t i = 0; i < n; i++) {
		printf("%-16s %8lld rows copied", t[i].name,
		    (long long)t[i].copied);
		if (t[i].unreadable)
			printf(", %lld unreadable stretches skipped",
			    (long long)t[i].unreadable);
		if (t[i].dropped)
			printf(", %lld rows dropped (their parent was lost)",
			    (long long)t[i].dropped);
		printf("\n");
		lost += t[i].unreadable + t[i].dropped;
	}
	printf("repaired copy: %s (passes integrity_check)%s\n", cmd_esc(dst),
	    lost ? "; some rows were lost" : "");
	printf("use it with --db %s, or move it over %s\n", cmd_esc(dst),
	    cmd_esc(g->db_path));
	free(t);
	free(def);
	return 0;
}

static int
cmd_check_exec(const struct cmd_globals *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{"repair", no_argument, NULL, 'r'},
		{NULL, 0, NULL, 0},
	};
	int do_repair = 0, ch;
	while ((ch = getopt_long(argc, argv, "r", opts, NULL)) != -1) {
		if (ch != 'r')
			return cmd_misuse(&cmd_check_entry, NULL);
		do_repair = 1;
	}
	if (argc - optind > (do_repair ? 1 : 0))
		return cmd_misuse(&cmd_check_entry, "unexpected argument %s",
		    argv[optind]);
	struct lq_error err;
	if (do_repair && store_is_postgresql(g->db_path)) {
		error_clear(&err);
		error_set(&err, LQ_FAILED, "LQ-DB-011", "%s: check --repair copies "
		    "an SQLite file; a PostgreSQL queue is checked and recovered by "
		    "its server", g->db_path);
		error_set_hint(&err, "run `latentq check` to test the connection "
		    "and schema; restore the server from its backups (pg_dump, "
		    "WAL archive) if it lost data");
		error_print(&err, stderr);
		return cmd_exit_for_error(&err);
	}
	if (do_repair)
		return repair(g, optind < argc ? argv[optind] : NULL);
	struct store *st = NULL;
	error_clear(&err);
	/* read-only: checking never changes the file */
	if (store_open_mode(g->db_path, STORE_READ_ONLY, &st, &err) != LQ_OK) {
		error_print(&err, stderr);
		return EXIT_IOERR;
	}
	char *problems = NULL;
	enum lq_status s = store_check(st, 0, &problems, &err);
	store_close(st);
	if (s == LQ_OK) {
		printf("%s: ok%s\n", cmd_esc(g->db_path),
		    store_is_postgresql(g->db_path) ? " (reachable, schema "
		    "current, checkpoints verified; the server checks its own "
		    "pages)" : "");
		return 0;
	}
	error_print(&err, stderr);
	if (problems != NULL)
		printf("%s\n", cmd_esc(problems));
	free(problems);
	return s == LQ_RETRY ? EXIT_TEMPFAIL : EXIT_IOERR;
}

const struct cmd_entry cmd_check_entry = {
	.name = "check",
	.usage = "[--repair [NEW.db]]",
	.summary = "check the queue database; --repair copies what is readable",
	.exec = cmd_check_exec,
};
