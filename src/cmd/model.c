/*
 * model.c — `latentq model VERB ...`: register, list, show and verify model
 * folders (BLAKE2b-256 of every file, cached by path, size, mtime and
 * inode), and synthesise random test models.
 *
 *   model add [--name N] DIR      validate configs and weights, hash, record
 *   model list                    registered models
 *   model show N                  one model: components and files
 *   model verify [--update] N     re-hash every file; exit 65 if any changed
 *   model synth [--family ltxv|ltx2|wan] --preset P [--seed S] [--dtype D]
 *       [--set COMPONENT.KEY=JSON]... [--sparse] DIR
 *   model pull ... URL... DIR     download files (src/cmd/pull.c), then add
 */
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "cmd/cmd.h"
#include "cmd/pull.h"
#include "core/codes.h"
#include "core/json.h"
#include "core/util.h"
#include "model/diffusers.h"
#include "model/expected.h"
#include "model/hash.h"
#include "model/ref.h"
#include "model/safetensors.h"
#include "model/synth.h"
#include "sampler/unipc.h"
#include "store/models.h"
#include "store/store.h"

static const char *const verbs_usage =
    "  model add [--name N] DIR\n"
    "  model list\n"
    "  model show N\n"
    "  model verify [--update] N\n"
    "  model synth [--family ltxv|ltx2|wan] --preset P [--seed S] [--dtype f32|f16|bf16]\n"
    "      [--set COMPONENT.KEY=JSON]... [--sparse] DIR\n"
    "      (P: tiny, small, 0.9.1-2b, 0.9.5-2b, 0.9.7-13b)\n"
    "  model pull [--digest [PATH=]HEX]... [--job JOB] [--name N] [--no-add]\n"
    "             [--retries N] URL... DIR\n";

static int
usage(const char *fmt, const char *arg)
{
	if (fmt)
		fprintf(stderr, "latentq: model: ");
	if (fmt)
		fprintf(stderr, fmt, arg);
	if (fmt)
		fputc('\n', stderr);
	cmd_usage(&cmd_model_entry, stderr);
	fputs(verbs_usage, stderr);
	return EXIT_USAGE;
}

static void
print_report(const struct expected_report *r)
{
	for (size_t i = 0; i < r->n_missing; i++)
		fprintf(stderr, "  missing     %s\n", r->missing[i]);
	for (size_t i = 0; i < r->n_unexpected; i++)
		fprintf(stderr, "  unexpected  %s\n", r->unexpected[i]);
	for (size_t i = 0; i < r->n_misshaped; i++)
		fprintf(stderr, "  mis-shaped  %s\n", r->misshaped[i]);
	for (size_t i = 0; i < r->n_bad_dtype; i++)
		fprintf(stderr, "  dtype       %s\n", r->bad_dtype[i]);
}

/* The component configs of a folder as one canonical JSON object. */
static enum lq_status
configs_json(const char *dir, struct diffusers_component *const *cs,
    const char *const *names, size_t n, char **config_json,
    struct lq_error *err)
{
	cJSON *all = cJSON_CreateObject(), *j;
	char *idx = xasprintf("%s/model_index.json", dir);
	enum lq_status rc = LQ_OK;
	if (diffusers_load_json(idx, &j, err) == LQ_OK)
		cJSON_AddItemToObject(all, "model_index", j);
	else
		rc = LQ_FAILED;
	for (size_t i = 0; rc == LQ_OK && i < n; i++) {
		if (!cs[i]->present || cs[i]->config_path == NULL)
			continue;
		if (diffusers_load_json(cs[i]->config_path, &j, err) != LQ_OK)
			rc = LQ_FAILED;
		else
			cJSON_AddItemToObject(all, names[i], j);
	}
	if (rc == LQ_OK)
		*config_json = json_canonical(all);
	cJSON_Delete(all);
	free(idx);
	return rc;
}

/* The weights of the component folder `cdir` against its tensor table
 * (expected.h: the report on stderr, LQ-MDL-* for what does not fit). */
static enum lq_status
check_weights(const char *cdir, const struct tensor_table *t,
    struct lq_error *err)
{
	struct st_set *set = NULL;
	struct expected_report r;
	enum lq_status rc;

	memset(&r, 0, sizeof(r));
	if ((rc = st_set_open(cdir, &set, err)) == LQ_OK) {
		rc = expected_check(t, set, cdir, &r, err);
		print_report(&r);
		expected_report_free(&r);
	}
	st_set_close(set);
	return rc;
}

/* An LTX2Pipeline folder: its components (diffusers_open_ltx2, which
 * parses the audio VAE's, vocoder's and connectors' configs), the
 * transformer's and VAE's configs, and every component's weights against
 * its tensor table, as preflight's inspect_ltx2 checks them. */
static enum lq_status
validate_ltx2(const char *dir, char **config_json, struct lq_error *err)
{
	struct diffusers_ltx2_model *m;
	if (diffusers_open_ltx2(dir, NULL, &m, err) != LQ_OK)
		return LQ_FAILED;
	struct ltx2_transformer_config tc;
	struct ltxv_vae_config vc;
	cJSON *j = NULL;
	enum lq_status rc = diffusers_load_json(m->transformer.config_path, &j,
	    err);
	if (rc == LQ_OK)
		rc = diffusers_parse_ltx2_transformer(j,
		    m->transformer.config_path, &tc, err);
	cJSON_Delete(j);
	j = NULL;
	if (rc == LQ_OK && (rc = diffusers_load_json(m->vae.config_path, &j,
	    err)) == LQ_OK)
		rc = diffusers_parse_vae(j, m->vae.config_path, &vc, err);
	cJSON_Delete(j);
	struct tensor_table t = {0};
	if (rc == LQ_OK) {
		expected_ltx2_transformer(&tc, &t);
		rc = check_weights(m->transformer.dir, &t, err);
	}
	if (rc == LQ_OK) {
		expected_ltxv_vae(&vc, &t);
		rc = check_weights(m->vae.dir, &t, err);
	}
	if (rc == LQ_OK) {
		expected_ltx2_audio_vae(&m->audio_vae_config, &t);
		rc = check_weights(m->audio_vae.dir, &t, err);
	}
	if (rc == LQ_OK) {
		if (m->vocoder_bwe)
			expected_ltx2_vocoder_bwe(&m->vocoder_bwe_config, &t);
		else
			expected_ltx2_vocoder(&m->vocoder_config, &t);
		rc = check_weights(m->vocoder.dir, &t, err);
	}
	if (rc == LQ_OK) {
		expected_ltx2_connectors(&m->connectors_config, &t);
		rc = check_weights(m->connectors.dir, &t, err);
	}
	tensor_table_free(&t);
	struct diffusers_component *cs[] = {&m->transformer, &m->vae,
	    &m->audio_vae, &m->vocoder, &m->connectors, &m->text_encoder,
	    &m->tokenizer, &m->scheduler};
	const char *names[] = {"transformer", "vae", "audio_vae", "vocoder",
	    "connectors", "text_encoder", "tokenizer", "scheduler"};
	if (rc == LQ_OK)
		rc = configs_json(dir, cs, names, LQ_ARRAY_LEN(cs), config_json,
		    err);
	diffusers_ltx2_free(m);
	return rc;
}

/*
 * A WanPipeline folder: its components (diffusers_open_wan), the
 * transformer's and VAE's configs by their parsers, their weights against
 * the Wan tensor tables (expected_wan_*), the UniPC scheduler config.
 */
static enum lq_status
validate_wan(const char *dir, char **config_json, struct lq_error *err)
{
	struct diffusers_wan_model *m;
	if (diffusers_open_wan(dir, NULL, &m, err) != LQ_OK)
		return LQ_FAILED;
	struct wan_transformer_config tc;
	struct wan_vae_config vc;
	struct unipc_config uc;
	cJSON *j = NULL;
	enum lq_status rc = diffusers_load_json(m->transformer.config_path, &j,
	    err);
	if (rc == LQ_OK)
		rc = diffusers_parse_wan_transformer(j,
		    m->transformer.config_path, &tc, err);
	cJSON_Delete(j);
	j = NULL;
	if (rc == LQ_OK && (rc = diffusers_load_json(m->vae.config_path, &j,
	    err)) == LQ_OK)
		rc = diffusers_parse_wan_vae(j, m->vae.config_path, &vc, err);
	cJSON_Delete(j);
	if (rc == LQ_OK)
		rc = unipc_config_load(m->scheduler.config_path, &uc, err);
	struct tensor_table t = {0};
	if (rc == LQ_OK) {
		expected_wan_transformer(&tc, &t);
		rc = check_weights(m->transformer.dir, &t, err);
	}
	if (rc == LQ_OK) {
		expected_wan_vae(&vc, &t);
		rc = check_weights(m->vae.dir, &t, err);
	}
	tensor_table_free(&t);
	struct diffusers_component *cs[] = {&m->transformer, &m->vae,
	    &m->text_encoder, &m->tokenizer, &m->scheduler};
	const char *names[] = {"transformer", "vae", "text_encoder",
	    "tokenizer", "scheduler"};
	if (rc == LQ_OK)
		rc = configs_json(dir, cs, names, LQ_ARRAY_LEN(cs), config_json,
		    err);
	diffusers_wan_free(m);
	return rc;
}

/* Validates configs and weights of a folder; *config_json gets the
 * component configs as canonical JSON. */
static enum lq_status
validate(const char *dir, char **config_json, struct lq_error *err)
{
	struct model_ref ref = {.root = (char *)dir};
	if (model_ref_is_wan(&ref))
		return validate_wan(dir, config_json, err);
	if (model_ref_is_ltx2(&ref))
		return validate_ltx2(dir, config_json, err);
	struct diffusers_model *m;
	if (diffusers_open(dir, NULL, &m, err) != LQ_OK)
		return LQ_FAILED;
	struct expected_report reps[EXPECTED_NCOMPONENTS];
	enum lq_status rc = expected_check_model(m, reps, err);
	for (int c = 0; c < EXPECTED_NCOMPONENTS; c++) {
		print_report(&reps[c]);
		expected_report_free(&reps[c]);
	}
	if (rc == LQ_OK) {
		struct diffusers_component *cs[] = {&m->transformer, &m->vae,
		    &m->text_encoder, &m->tokenizer, &m->scheduler};
		const char *names[] = {"transformer", "vae", "text_encoder",
		    "tokenizer", "scheduler"};
		rc = configs_json(dir, cs, names, LQ_ARRAY_LEN(cs), config_json,
		    err);
	}
	diffusers_free(m);
	return rc;
}

static void
to_store_files(const struct model_digest *d, struct store_model *sm)
{
	sm->nfiles = d->n;
	sm->files = xcalloc(d->n ? d->n : 1, sizeof(*sm->files));
	for (size_t i = 0; i < d->n; i++) {
		sm->files[i].relpath = d->files[i].relpath;	/* borrowed */
		sm->files[i].size = d->files[i].size;
		sm->files[i].mtime_ns = d->files[i].mtime_ns;
		sm->files[i].inode = d->files[i].inode;
		memcpy(sm->files[i].blake2b, d->files[i].blake2b, DIGEST_HEX_SIZE);
	}
}

static int
verb_add(const struct cmd_globals *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{"name", required_argument, NULL, 'n'},
		{NULL, 0, NULL, 0},
	};
	const char *name = NULL;
	int ch;
	optind = 0;
	while ((ch = getopt_long(argc, argv, "n:", opts, NULL)) != -1) {
		if (ch != 'n')
			return usage(NULL, NULL);
		name = optarg;
	}
	if (argc - optind != 1)
		return usage("add takes one DIR", NULL);
	const char *dir = argv[optind];
	struct lq_error err;
	error_clear(&err);
	char *config_json = NULL;
	if (validate(dir, &config_json, &err) != LQ_OK) {
		error_print(&err, stderr);
		return EXIT_DATAERR;
	}
	struct store *st = cmd_open_store(g);
	if (st == NULL) {
		free(config_json);
		return cmd_open_status();
	}
	struct model_hash_cache cache = {st, store_file_hash_lookup, store_file_hash_record};
	struct model_digest d;
	double t0 = util_monotonic();
	if (model_hash_folder(dir, &cache, 0, &d, &err) != LQ_OK) {
		error_print(&err, stderr);
		free(config_json);
		store_close(st);
		return cmd_exit_for_error(&err);
	}
	/* the identity (model/ref.h): the files just hashed come from the cache */
	char identity[DIGEST_HEX_SIZE];
	struct model_ref ref = {.root = d.root};
	if (model_ref_digest(&ref, &cache, identity, &err) != LQ_OK) {
		error_print(&err, stderr);
		free(config_json);
		model_digest_clear(&d);
		store_close(st);
		return cmd_exit_for_error(&err);
	}
	struct store_model sm = {0};
	sm.name = (char *)name;
	sm.path = d.root;
	sm.family = (char *)model_ref_family(&ref);
	sm.config_json = config_json;
	sm.digest = identity;
	to_store_files(&d, &sm);
	int64_t id;
	enum lq_status r = store_put_model(st, &sm, &id, &err);
	if (r == LQ_OK) {
		printf("model %" PRId64 " %s: %s\n", id, name ? name : "(unnamed)", d.root);
		printf("  digest %s\n", identity);
		printf("  %zu files, %zu hashed, %zu from cache (%.2f s)\n", d.n, d.n_hashed,
		    d.n_cached, util_monotonic() - t0);
	} else {
		error_print(&err, stderr);
	}
	free(sm.files);
	free(config_json);
	model_digest_clear(&d);
	store_close(st);
	return r == LQ_OK ? 0 : cmd_exit_for_error(&err);
}

static int
verb_list(const struct cmd_globals *g, int argc, char **argv)
{
	if (argc != 1)
		return usage("list takes no arguments", NULL);
	struct store *st = cmd_open_store(g);
	if (st == NULL)
		return cmd_open_status();
	struct lq_error err;
	error_clear(&err);
	struct store_model *v;
	size_t n;
	if (store_list_models(st, &v, &n, &err) != LQ_OK) {
		error_print(&err, stderr);
		store_close(st);
		return cmd_exit_for_error(&err);
	}
	printf("%-4s %-16s %-6s %-16s %s\n", "ID", "NAME", "FAMILY", "DIGEST", "PATH");
	for (size_t i = 0; i < n; i++)
		printf("%-4" PRId64 " %-16s %-6s %.16s %s\n", v[i].id, v[i].name ? v[i].name : "-",
		    v[i].family, v[i].digest, v[i].path);
	store_models_free(v, n);
	store_close(st);
	return 0;
}

/*
 * Finds a registered model by name or (resolved) path: 0, else the exit
 * status (66 none such, 74 the database failed), the error printed.
 */
static int
find(struct store *st, const char *key, struct store_model *m)
{
	struct lq_error err;
	error_clear(&err);
	int found = 0;
	char real[PATH_MAX];
	if (store_find_model(st, key, m, &found, &err) == LQ_OK && !found &&
	    realpath(key, real) != NULL)
		store_find_model(st, real, m, &found, &err);
	if (err.status != LQ_OK) {
		error_print(&err, stderr);
		return cmd_exit_for_error(&err);
	}
	if (!found) {
		fprintf(stderr, "latentq: model: no model named %s (see `latentq model list`)\n",
		    key);
		return EXIT_NOINPUT;
	}
	return 0;
}

static int
verb_show(const struct cmd_globals *g, int argc, char **argv)
{
	if (argc != 2)
		return usage("show takes one model name", NULL);
	struct store *st = cmd_open_store(g);
	if (st == NULL)
		return cmd_open_status();
	struct store_model m;
	int rc = find(st, argv[1], &m);
	if (rc != 0) {
		store_close(st);
		return rc;
	}
	char ts[32];
	time_t t = (time_t)m.added_at;
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm);
	printf("model %" PRId64 " %s\n  path   %s\n  family %s\n  digest %s\n  added  %s\n",
	    m.id, m.name ? m.name : "(unnamed)", m.path, m.family, m.digest, ts);
	cJSON *c = cJSON_Parse(m.config_json);
	const cJSON *idx = cJSON_GetObjectItemCaseSensitive(c, "model_index");
	const char *comps[] = {"transformer", "vae", "text_encoder", "tokenizer", "scheduler"};
	printf("  components:\n");
	for (size_t i = 0; i < LQ_ARRAY_LEN(comps); i++) {
		const cJSON *e = cJSON_GetObjectItemCaseSensitive(idx, comps[i]);
		const cJSON *cls = cJSON_GetArrayItem(e, 1);
		printf("    %-13s %s\n", comps[i], cJSON_IsString(cls) ? cls->valuestring : "-");
	}
	cJSON_Delete(c);
	printf("  files:\n");
	for (size_t i = 0; i < m.nfiles; i++)
		printf("    %.16s %12" PRId64 "  %s\n", m.files[i].blake2b, m.files[i].size,
		    m.files[i].relpath);
	store_model_clear(&m);
	store_close(st);
	return 0;
}

static int
verb_verify(const struct cmd_globals *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{"update", no_argument, NULL, 'u'},
		{NULL, 0, NULL, 0},
	};
	int update = 0, ch;
	optind = 0;
	while ((ch = getopt_long(argc, argv, "u", opts, NULL)) != -1) {
		if (ch != 'u')
			return usage(NULL, NULL);
		update = 1;
	}
	if (argc - optind != 1)
		return usage("verify takes one model name", NULL);
	struct store *st = cmd_open_store(g);
	if (st == NULL)
		return cmd_open_status();
	struct store_model m;
	int rc = find(st, argv[optind], &m);
	if (rc != 0) {
		store_close(st);
		return rc;
	}
	struct lq_error err;
	error_clear(&err);
	struct model_hash_cache cache = {st, store_file_hash_lookup, store_file_hash_record};
	struct model_digest d;
	/* verify re-reads every file: a stat-keyed cache cannot see a rewrite
	 * that restores size, mtime and inode */
	if (model_hash_folder(m.path, &cache, 1, &d, &err) != LQ_OK) {
		error_print(&err, stderr);
		store_model_clear(&m);
		store_close(st);
		return cmd_exit_for_error(&err);
	}
	int changes = 0;
	size_t i = 0, j = 0;
	while (i < m.nfiles || j < d.n) {
		int c = i == m.nfiles ? 1 : j == d.n ? -1
		    : strcmp(m.files[i].relpath, d.files[j].relpath);
		if (c < 0) {
			printf("removed  %s\n", m.files[i++].relpath);
			changes++;
		} else if (c > 0) {
			printf("added    %s\n", d.files[j++].relpath);
			changes++;
		} else {
			if (strcmp(m.files[i].blake2b, d.files[j].blake2b) != 0) {
				printf("changed  %s\n", d.files[j].relpath);
				changes++;
			}
			i++;
			j++;
		}
	}
	char identity[DIGEST_HEX_SIZE];
	struct model_ref ref = {.root = d.root};
	if (model_ref_digest(&ref, &cache, identity, &err) != LQ_OK) {
		error_print(&err, stderr);
		model_digest_clear(&d);
		store_model_clear(&m);
		store_close(st);
		return cmd_exit_for_error(&err);
	}
	/* a digest recorded before schema 0002 is not the identity */
	int stale = strcmp(m.digest, identity) != 0;
	rc = 0;
	if (changes == 0) {
		printf("ok: %zu files match, digest %s\n", d.n, identity);
	} else {
		printf("%d file%s changed since the model was added; digest now %s\n", changes,
		    changes == 1 ? "" : "s", identity);
		error_set(&err, LQ_FAILED, "LQ-MODEL-023", "model %s: %d file%s "
		    "changed since it was added", argv[optind], changes,
		    changes == 1 ? "" : "s");
		if (!update) {
			error_set_hint(&err, "`latentq model verify --update %s` "
			    "records the new state", argv[optind]);
			error_print(&err, stderr);
		}
		rc = cmd_exit_for_error(&err);
	}
	if ((changes != 0 || stale) && update) {
		struct store_model sm = {0};
		to_store_files(&d, &sm);
		if (store_update_model_files(st, m.id, identity, sm.files, sm.nfiles, &err) !=
		    LQ_OK) {
			error_print(&err, stderr);
		} else {
			printf("recorded the new state\n");
			rc = 0;
		}
		free(sm.files);
	}
	model_digest_clear(&d);
	store_model_clear(&m);
	store_close(st);
	return rc;
}

static int
verb_synth(int argc, char **argv)
{
	static const struct option opts[] = {
		{"family", required_argument, NULL, 'f'},
		{"preset", required_argument, NULL, 'p'},
		{"seed", required_argument, NULL, 's'},
		{"dtype", required_argument, NULL, 'd'},
		{"set", required_argument, NULL, 'S'},
		{"sparse", no_argument, NULL, 'z'},
		{NULL, 0, NULL, 0},
	};
	const char *family = "ltxv", *preset = NULL;
	uint64_t seed = 0;
	struct model_synth_opts so = {.dtype = ST_F32};
	const char *dtype_name = "f32";
	const char **sets = xcalloc((size_t)argc + 1, sizeof(*sets));
	int ch;
	optind = 0;
	while ((ch = getopt_long(argc, argv, "f:p:s:d:S:z", opts, NULL)) != -1) {
		switch (ch) {
		case 'f':
			family = optarg;
			break;
		case 'p':
			preset = optarg;
			break;
		case 's': {
			char *end;
			seed = strtoull(optarg, &end, 0);
			if (*optarg == '\0' || *end != '\0' || *optarg == '-') {
				free(sets);
				return usage("--seed %s is not a non-negative integer", optarg);
			}
			break;
		}
		case 'd':
			if (strcmp(optarg, "f32") == 0)
				so.dtype = ST_F32;
			else if (strcmp(optarg, "f16") == 0)
				so.dtype = ST_F16;
			else if (strcmp(optarg, "bf16") == 0)
				so.dtype = ST_BF16;
			else {
				free(sets);
				return usage("--dtype %s: f32, f16 or bf16", optarg);
			}
			dtype_name = optarg;
			break;
		case 'S':
			sets[so.nsets++] = optarg;
			break;
		case 'z':
			so.sparse = 1;
			break;
		default:
			free(sets);
			return usage(NULL, NULL);
		}
	}
	so.sets = sets;
	if (preset == NULL) {
		free(sets);
		return usage("synth needs --preset (ltxv: tiny, small, 0.9.1-2b, "
		    "0.9.5-2b, 0.9.7-13b; ltx2: tiny, demo, demo-bwe; wan: tiny, "
		    "demo)", NULL);
	}
	if (argc - optind != 1) {
		free(sets);
		return usage("synth takes one DIR", NULL);
	}
	struct lq_error err;
	error_clear(&err);
	if (model_synth_ex(argv[optind], family, preset, seed, &so, &err) != LQ_OK) {
		error_print(&err, stderr);
		free(sets);
		return cmd_exit_for_error(&err);
	}
	free(sets);
	printf("wrote %s model (preset %s, seed %" PRIu64 ", %s%s) to %s\n",
	    family, preset, seed, dtype_name,
	    so.sparse ? ", sparse" : "", argv[optind]);
	return 0;
}

static int
cmd_model_exec(const struct cmd_globals *g, int argc, char **argv)
{
	if (argc < 2)
		return usage("which verb?", NULL);
	const char *verb = argv[1];
	if (strcmp(verb, "--help") == 0 || strcmp(verb, "-h") == 0) {
		cmd_usage(&cmd_model_entry, stdout);
		fputs(verbs_usage, stdout);
		return 0;
	}
	/* the verb becomes argv[0] for its own option parsing */
	argc--;
	argv++;
	if (strcmp(verb, "add") == 0)
		return verb_add(g, argc, argv);
	if (strcmp(verb, "list") == 0)
		return verb_list(g, argc, argv);
	if (strcmp(verb, "show") == 0)
		return verb_show(g, argc, argv);
	if (strcmp(verb, "verify") == 0)
		return verb_verify(g, argc, argv);
	if (strcmp(verb, "synth") == 0)
		return verb_synth(argc, argv);
	if (strcmp(verb, "pull") == 0)
		return cmd_model_pull(g, argc, argv);
	return usage("unknown verb %s (add, list, show, verify, synth, pull)",
	    verb);
}

const struct cmd_entry cmd_model_entry = {
	.name = "model",
	.usage = "VERB ...",
	.summary = "add, list, show, verify or synthesise models",
	.creates_db = 1,
	.exec = cmd_model_exec,
};
