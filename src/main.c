/*
 * main.c — latentq's entry point: global options, then one subcommand from
 * the table in src/cmd/ (see cmd.h for exit statuses).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config.h"
#include "cmd/cmd.h"
#include "core/log.h"
#include "core/util.h"

static void
usage(FILE *fp)
{
	fprintf(fp,
	    "usage: latentq [-qv] [-d DB] [--device D] COMMAND [ARGS...]\n"
	    "\n"
	    "Global options:\n"
	    "  -d, --db PATH     queue database (default: $LATENTQ_DB, else\n"
	    "                    $XDG_DATA_HOME/latentq/queue.db)\n"
	    "      --device D    Vulkan device index or name ($LATENTQ_DEVICE)\n"
	    "  -v, --verbose     more messages (repeat for debug)\n"
	    "  -q, --quiet       errors only\n"
	    "  -h, --help        this help; `latentq COMMAND --help` for one command\n"
	    "  -V, --version     print the version\n"
	    "\nCommands:\n");
	for (size_t i = 0; cmd_table[i] != NULL; i++)
		if (!cmd_table[i]->hidden)
			fprintf(fp, "  %-10s %s\n", cmd_table[i]->name,
			    cmd_table[i]->summary);
	fprintf(fp, "\nSee latentq(1).\n");
}

/* mkdir -p of the directory part of path; errors are left to the opener. */
static void
make_parent(const char *path)
{
	char *p = xstrdup(path);
	for (char *s = p + 1; *s != '\0'; s++) {
		if (*s == '/') {
			*s = '\0';
			mkdir(p, 0755);
			*s = '/';
		}
	}
	free(p);
}

static char *
default_db_path(void)
{
	const char *env = getenv("LATENTQ_DB");
	if (env != NULL && env[0] != '\0')
		return xstrdup(env);
	const char *xdg = getenv("XDG_DATA_HOME");
	if (xdg != NULL && xdg[0] == '/')
		return xasprintf("%s/latentq/queue.db", xdg);
	const char *home = getenv("HOME");
	return xasprintf("%s/.local/share/latentq/queue.db",
	    home != NULL ? home : ".");
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"db", required_argument, NULL, 'd'},
		{"device", required_argument, NULL, 'D'},
		{"verbose", no_argument, NULL, 'v'},
		{"quiet", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	struct cmd_globals g = {0};
	char *db = NULL;
	int c;

	g.device = getenv("LATENTQ_DEVICE");
	while ((c = getopt_long(argc, argv, "+d:vqhV", opts, NULL)) != -1) {
		switch (c) {
		case 'd':
			if (optarg[0] == '\0') {
				fprintf(stderr, "latentq: -d needs a database path\n");
				usage(stderr);
				return EXIT_USAGE;
			}
			free(db);
			db = xstrdup(optarg);
			break;
		case 'D':
			g.device = optarg;
			break;
		case 'v':
			g.verbose = g.verbose < 0 ? 1 : g.verbose + 1;
			break;
		case 'q':
			g.verbose = -1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("latentq %s\n", PACKAGE_VERSION);
			return 0;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	log_set_level(g.verbose < 0 ? LOG_LEVEL_ERROR :
	    g.verbose < 2 ? LOG_LEVEL_INFO : LOG_LEVEL_DEBUG);

	const struct cmd_entry *entry = cmd_find(argv[optind]);
	if (entry == NULL)
		return EXIT_USAGE;
	if (db == NULL)
		db = default_db_path();
	g.creates_db = entry->creates_db;
	if (g.creates_db)	/* read-only commands never create anything */
		make_parent(db);
	g.db_path = db;

	/* `latentq CMD --help` / `-h` anywhere in a command's own arguments. */
	for (int i = optind + 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0)
			break;
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			cmd_usage(entry, stdout);
			printf("%s\nSee latentq(1).\n", entry->summary);
			free(db);
			return 0;
		}
	}
	int first = optind;
	optind = 0;	/* reset getopt for the command (glibc: 0 = full reset) */
	int rc = entry->exec(&g, argc - first, argv + first);
	free(db);
	return rc;
}
