/*
 * preflight.c — `latentq preflight [--json] [--snap] [--device-caps FILE]
 * MANIFEST...`: run every check of src/preflight on the manifests' jobs
 * without queueing anything, against the caps file, or else the device
 * --device names (listed, never opened), or else none.  Exit 0 when every job is valid, 65 when any
 * is rejected (or a manifest is unusable), 2 on misuse, 1 when the caps
 * file cannot be read.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "cmd/preflight.h"
#include "core/json.h"
#include "core/util.h"
#include "gpu/caps.h"
#include "gpu/gpu.h"
#include "manifest/manifest.h"
#include "model/hash.h"
#include "net/layout.h"
#include "preflight/preflight.h"
#include "store/models.h"
#include "store/store.h"

/*
 * Registered model names (`latentq model add --name`) and the file-hash
 * cache come from the queue database, opened only when a job needs one and
 * only if the database already exists (preflight never creates it).
 */
struct db {
	const struct cmd_globals *g;
	struct store *st;
	int tried;
};

static struct store *
db_store(struct db *d)
{
	if (!d->tried) {
		d->tried = 1;
		if (d->g->db_path && (store_is_postgresql(d->g->db_path) ||
		    access(d->g->db_path, F_OK) == 0))
			d->st = cmd_open_store(d->g);
	}
	return d->st;
}

static char *
db_resolve_model(void *ctx, const char *name)
{
	struct store *st = db_store(ctx);
	return st ? store_model_path_resolve(st, name) : NULL;
}

static int
db_hash_lookup(void *ctx, const char *path, int64_t size, int64_t mtime_ns,
    int64_t inode, char hex[DIGEST_HEX_SIZE])
{
	struct store *st = db_store(ctx);
	return st ? store_file_hash_lookup(st, path, size, mtime_ns, inode, hex) : 0;
}

static void
db_hash_record(void *ctx, const char *path, int64_t size, int64_t mtime_ns,
    int64_t inode, const char *hex)
{
	struct store *st = db_store(ctx);
	if (st)
		store_file_hash_record(st, path, size, mtime_ns, inode, hex);
}

/*
 * The device to check against when no caps file is given: the first that
 * --device / LATENTQ_DEVICE names (slot indices or name fragments, a list
 * for a mesh; none: the render's own preference), with device_count the
 * number a mesh could use: those of the first's kind (gpu_devices_select,
 * as the render opens them).  Only the devices are listed (no logical
 * device, no pipeline).  Returns 0 when there is none.
 */
static int
live_caps(const char *want, struct device_caps *out)
{
	struct device_caps *all = NULL;
	int n = 0;
	struct lq_error err;
	error_clear(&err);
	if (gpu_devices_list(&all, &n, &err) != LQ_OK || n == 0) {
		free(all);
		return 0;
	}
	/* the devices the render would open: a mesh of mesh.devices takes
	 * the first that many of them */
	int *slots = xcalloc((size_t)n, sizeof(*slots));
	int m = gpu_devices_select(all, n, want, slots, n, NULL, &err);
	if (m > 0) {
		*out = all[slots[0]];
		out->device_count = m;
	}
	free(slots);
	free(all);
	return m > 0;
}

int
cmd_preflight_caps(const struct cmd_globals *g, const char *file,
    int no_device, struct device_caps *out)
{
	if (file == NULL)
		file = getenv("LATENTQ_DEVICE_CAPS");
	if (file != NULL && file[0] != '\0') {
		struct lq_error err;
		error_clear(&err);
		if (device_caps_load(file, -1, out, &err) != LQ_OK) {
			error_print(&err, stderr);
			/* minus the exit status: no such file, or a bad one */
			return access(file, R_OK) != 0 ? -EXIT_NOINPUT : -EXIT_DATAERR;
		}
		return 1;
	}
	return !no_device && live_caps(g->device, out);
}

static int
cmd_preflight_exec(const struct cmd_globals *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{"json", no_argument, NULL, 'j'},
		{"snap", no_argument, NULL, 's'},
		{"device-caps", required_argument, NULL, 'c'},
		{"allow-absolute", no_argument, NULL, 'a'},
		{"output-dir", required_argument, NULL, 'o'},
		{"no-device", no_argument, NULL, 'n'},
		{"allow-download", no_argument, NULL, 'D'},
		{NULL, 0, NULL, 0},
	};
	struct db db = { .g = g };
	struct model_hash_cache cache = { &db, db_hash_lookup, db_hash_record };
	struct preflight_options opt = {
		.resolve_model = db_resolve_model, .resolve_ctx = &db,
		.hash_cache = &cache,
	};
	const char *caps_path = NULL;
	int json = 0, no_device = 0, c;
	while ((c = getopt_long(argc, argv, "jsc:ao:n", opts, NULL)) != -1) {
		switch (c) {
		case 'j': json = 1; break;
		case 's': opt.snap = 1; break;
		case 'c': caps_path = optarg; break;
		case 'a': opt.allow_absolute = 1; break;
		case 'o': opt.output_dir = optarg; break;
		case 'n': no_device = 1; break;
		case 'D': opt.fetch_model = net_layout_fetch_url; break;
		default: return cmd_misuse(&cmd_preflight_entry, NULL);
		}
	}
	if (optind >= argc)
		return cmd_misuse(&cmd_preflight_entry, "preflight needs a manifest");
	struct device_caps caps;
	struct lq_error err;
	int have = cmd_preflight_caps(g, caps_path, no_device, &caps);
	if (have < 0)
		return -have;
	if (have > 0)
		opt.caps = &caps;
	else if (g->verbose >= 0 && !json)
		fprintf(stderr, "latentq: no device%s: device memory, limits "
		    "and device count are not checked\n", no_device ? ""
		    : " found and no --device-caps");

	int rc = 0;
	size_t n = (size_t)(argc - optind), nm = 0;
	struct manifest **ms = xcalloc(n, sizeof(*ms));
	cJSON *failed = cJSON_CreateArray();
	for (size_t i = 0; i < n; i++) {
		struct manifest *m = NULL;
		error_clear(&err);
		enum lq_status r = manifest_load(argv[optind + (int)i], &m, &err);
		if (r == LQ_FAILED) {
			for (size_t k = 0; k < m->n_errors; k++) {
				if (json)
					cJSON_AddItemToArray(failed,
					    preflight_problem_to_json(&m->errors[k]));
				else
					error_print(&m->errors[k], stdout);
			}
			manifest_free(m);
			rc = EXIT_DATAERR;
			continue;
		}
		ms[nm++] = m;
	}
	struct preflight_report *rep = NULL;
	enum lq_status pr = preflight_check_manifests(ms, nm, &opt, &rep);
	if (pr == LQ_RETRY && rc == 0)
		rc = EXIT_TEMPFAIL;	/* only a download that may pass */
	else if (pr != LQ_OK)
		rc = EXIT_DATAERR;
	if (json) {
		cJSON *o = preflight_report_to_json(rep);
		cJSON_AddItemToObject(o, "manifest_errors", failed);
		failed = NULL;
		char *s = json_pretty(o);
		printf("%s\n", s);
		free(s);
		cJSON_Delete(o);
	} else {
		preflight_report_print(rep, stdout, g->verbose > 0);
	}
	cJSON_Delete(failed);
	preflight_report_free(rep);
	for (size_t i = 0; i < nm; i++)
		manifest_free(ms[i]);
	free(ms);
	if (db.st)
		store_close(db.st);
	return rc;
}

const struct cmd_entry cmd_preflight_entry = {
	.name = "preflight",
	.usage = "[--json] [--snap] [--allow-download] "
	    "[--device-caps FILE.json | --no-device] "
	    "[--allow-absolute] [--output-dir DIR] MANIFEST...",
	.summary = "check a manifest's jobs without queueing them",
	.exec = cmd_preflight_exec,
};
