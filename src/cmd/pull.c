/*
 * pull.c — `latentq model pull [--digest [PATH=]HEX]... [--job JOB]
 * [--name N] [--no-add] [--retries N] URL... DIR`: fetches model files
 * (net/net.h: resumable .part files, retries with back-off, verification,
 * atomic rename), then registers the folder as `model add` does.
 *
 * Each URL's file goes to DIR/PATH, PATH being what net_url_relpath makes
 * of it (a Hugging Face style .../resolve/REV/transformer/config.json keeps
 * transformer/config.json).  A --digest names the BLAKE2b-256 a file must
 * have (PATH=HEX; a bare HEX when there is one URL).  With --job, the
 * folder must in the end have the model digest that job pinned.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cmd/cmd.h"
#include "cmd/pull.h"
#include "core/json.h"
#include "core/util.h"
#include "net/net.h"
#include "model/hash.h"
#include "model/ref.h"
#include "store/models.h"
#include "store/jobs.h"
#include "store/store.h"



static int
pull_usage(const char *fmt, const char *arg)
{
	if (fmt != NULL) {
		fputs("latentq: model pull: ", stderr);
		fprintf(stderr, fmt, arg);
		fputc('\n', stderr);
	}
	fputs("usage: latentq model pull [--digest [PATH=]HEX]... [--job JOB] "
	    "[--name N] [--no-add] [--retries N] URL... DIR\n", stderr);
	return EXIT_USAGE;
}

/* Reports a bad URL or --digest argument; the status its code's row says. */
static int
bad_argument(const char *fmt, const char *arg, const char *hint_arg)
{
	struct lq_error err;
	error_clear(&err);
	error_set(&err, LQ_FAILED, "LQ-NET-007", fmt, arg);
	if (hint_arg != NULL)
		error_set_hint(&err, "give PATH=HEX with PATH as pulled, e.g. "
		    "%s=HEX", hint_arg);
	error_print(&err, stderr);
	return cmd_exit_for_error(&err);
}

static int
is_hex64(const char *s)
{
	if (strlen(s) != DIGEST_HEX_SIZE - 1)
		return 0;
	for (; *s; s++)
		if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
			return 0;
	return 1;
}

/* The folder's model identity (model/ref.h) against the job's pin. */
static enum lq_status
check_job_digest(const struct cmd_globals *g, const char *ref_name,
    const char *dir,
    struct lq_error *err)
{
	struct store *st = cmd_open_store(g);
	if (st == NULL)
		return error_set(err, LQ_FAILED, "LQ-DB-001", "no queue database");
	struct store_job j;
	enum lq_status s = store_find_job(st, ref_name, &j, err);
	if (s != LQ_OK) {
		store_close(st);
		return s;
	}
	if (j.model_digests == NULL || j.model_digests[0] == '\0') {
		s = error_set(err, LQ_FAILED, "LQ-NET-006", "job %s has no pinned "
		    "model digest", ref_name);
		goto out;
	}
	char real[4096];
	if (realpath(dir, real) == NULL) {
		s = error_set(err, LQ_FAILED, "LQ-NET-006", "cannot resolve %s: %s",
		    dir, strerror(errno));
		goto out;
	}
	struct model_ref ref = {.root = real};
	struct model_hash_cache cache = {st, store_file_hash_lookup,
	    store_file_hash_record};
	char d[DIGEST_HEX_SIZE];
	s = model_ref_digest(&ref, &cache, d, err);
	if (s == LQ_OK && strcmp(d, j.model_digests) != 0)
		s = error_set(err, LQ_FAILED, "LQ-NET-004", "%s has model digest "
		    "%.16s…, job %s pinned %.16s…", dir, d, ref_name, j.model_digests);
out:
	store_job_clear(&j);
	store_close(st);
	return s;
}

int
cmd_model_pull(const struct cmd_globals *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{"digest", required_argument, NULL, 'd'},
		{"job", required_argument, NULL, 'j'},
		{"name", required_argument, NULL, 'n'},
		{"no-add", no_argument, NULL, 'A'},
		{"retries", required_argument, NULL, 'r'},
		{NULL, 0, NULL, 0},
	};
	const char **digests = xcalloc((size_t)argc + 1, sizeof(char *));
	size_t n_digests = 0;
	const char *job = NULL, *name = NULL;
	int add = 1, retries = -1, ch;
	optind = 0;
	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (ch) {
		case 'd':
			digests[n_digests++] = optarg;
			break;
		case 'j':
			job = optarg;
			break;
		case 'n':
			name = optarg;
			break;
		case 'A':
			add = 0;
			break;
		case 'r': {
			char *end;
			long v = strtol(optarg, &end, 10);
			if (*end != '\0' || v < 0 || v > 100) {
				free(digests);
				return pull_usage("--retries %s: not a count from 0 to "
				    "100", optarg);
			}
			retries = (int)v;
			break;
		}
		default:
			free(digests);
			return pull_usage(NULL, NULL);
		}
	}
	int n_urls = argc - optind - 1;
	if (n_urls < 1) {
		free(digests);
		return pull_usage("needs at least one URL and a DIR", NULL);
	}
	const char *dir = argv[argc - 1];
	char **rel = xcalloc((size_t)n_urls, sizeof(char *));
	const char **want = xcalloc((size_t)n_urls, sizeof(char *));
	int rc = 0;
	for (int i = 0; i < n_urls && rc == 0; i++) {
		const char *url = argv[optind + i];
		rel[i] = net_url_relpath(url);
		if (rel[i] == NULL) {
			rc = bad_argument("%s: the URL names no file (its path "
			    "must end in a plain file name, or follow "
			    "/resolve/REVISION/)", url, NULL);
		}
	}
	for (size_t k = 0; k < n_digests && rc == 0; k++) {
		const char *eq = strchr(digests[k], '=');
		const char *hex = eq ? eq + 1 : digests[k];
		if (!is_hex64(hex)) {
			rc = bad_argument("--digest %s: not a BLAKE2b-256 "
			    "digest (64 lower-case hex digits)", digests[k], NULL);
			break;
		}
		int hit = 0;
		for (int i = 0; i < n_urls; i++)
			if ((eq == NULL && n_urls == 1) || (eq != NULL &&
			    strlen(rel[i]) == (size_t)(eq - digests[k]) &&
			    strncmp(rel[i], digests[k], (size_t)(eq - digests[k])) ==
			    0)) {
				want[i] = hex;
				hit = 1;
			}
		if (!hit) {
			rc = bad_argument("--digest %s names no file of the URLs",
			    digests[k], rel[0]);
		}
	}
	int tty = isatty(2) && g->verbose >= 0;
	for (int i = 0; i < n_urls && rc == 0; i++) {
		const char *url = argv[optind + i];
		char *path = xasprintf("%s/%s", dir, rel[i]);
		char *failed = NULL;
		char *pdir = xstrdup(path);
		*strrchr(pdir, '/') = '\0';
		struct lq_error err;
		error_clear(&err);
		enum lq_status s = LQ_OK;
		if (util_mkdir_p(pdir, 0755, &failed) != 0) {
			s = error_set(&err, LQ_FAILED, "LQ-NET-003", "cannot create "
			    "folder %s: %s", failed, strerror(errno));
			free(failed);
		}
		free(pdir);
		struct net_fetch_options o = {.retries = retries, .progress = tty,
		    .label = rel[i], .digest = want[i]};
		int64_t size = 0;
		char hex[DIGEST_HEX_SIZE];
		if (s == LQ_OK)
			s = net_fetch(url, path, &o, &size, hex, &err);
		if (s == LQ_OK && g->verbose >= 0)
			printf("pulled %s (%lld bytes, BLAKE2b-256 %s%s)\n", path,
			    (long long)size, hex, want[i] ? ", verified" : "");
		if (s != LQ_OK) {
			error_print(&err, stderr);
			rc = cmd_exit_for_error(&err);
		}
		free(path);
	}
	if (rc == 0 && job != NULL) {
		struct lq_error err;
		error_clear(&err);
		if (check_job_digest(g, job, dir, &err) != LQ_OK) {
			error_print(&err, stderr);
			rc = cmd_exit_for_error(&err);
		} else if (g->verbose >= 0) {
			printf("model digest matches job %s\n", job);
		}
	}
	if (rc == 0 && add) {
		char *av[5];
		int ac = 0;
		av[ac++] = "add";
		if (name != NULL) {
			av[ac++] = "--name";
			av[ac++] = (char *)name;
		}
		av[ac++] = (char *)dir;
		av[ac] = NULL;
		char *mv[6] = {"model"};
		for (int i = 0; i <= ac; i++)
			mv[i + 1] = av[i];
		rc = cmd_model_entry.exec(g, ac + 1, mv);
	}
	for (int i = 0; i < n_urls; i++)
		free(rel[i]);
	free(rel);
	free(want);
	free(digests);
	return rc;
}
