/*
 * test-manifest.c — manifest loading: a valid YAML manifest and the same in
 * JSON, defaults, seeds expansion and templates, exact u64 seeds, type and
 * key errors with their positions, syntax errors, the alias bomb, error
 * collection across jobs, and where-lookups for preflight.
 */
#include <stdlib.h>
#include <string.h>

#include "core/digest.h"
#include "core/json.h"
#include "core/util.h"
#include "manifest/manifest.h"
#include "../test.h"

static struct manifest *
load(const char *text, enum lq_status *st, struct lq_error *err)
{
	struct manifest *m;
	error_clear(err);
	*st = manifest_load_buffer("mem/jobs.yaml", text, strlen(text), &m, err);
	return m;
}

static char *
srcpath(const char *rel)
{
	const char *top = getenv("top_srcdir");
	return xasprintf("%s/%s", top ? top : ".", rel);
}

static char *
cfg_text(const struct manifest_job *job)
{
	return job->config ? json_canonical(job->config) : xstrdup("(null)");
}

static void
test_valid_file(void)
{
	char *path = srcpath("tests/manifest/good/valid.yaml");
	struct manifest *m;
	struct lq_error err;
	error_clear(&err);
	enum lq_status st = manifest_load(path, &m, &err);
	CHECK_INT(st, LQ_OK);
	CHECK_INT(m->n_errors, 0);
	CHECK_INT(m->n_jobs, 4);	/* cat, dog x2 seeds, job2 */

	char hex[DIGEST_HEX_SIZE];
	CHECK_INT(digest_file(path, hex, &err), LQ_OK);
	CHECK_STR(m->digest, hex);

	char *good = srcpath("tests/manifest/good");
	char *dir = realpath(good, NULL);
	free(good);
	CHECK_STR(m->dir, dir);

	const struct manifest_job *cat = &m->jobs[0];
	CHECK_STR(cat->name, "cat");
	CHECK(cat->error == NULL);
	CHECK_INT(cat->line, 12);
	CHECK_INT(cat->column, 5);
	CHECK_INT(manifest_job_int(cat, "height", 0), 256);	/* defaults */
	CHECK_INT(manifest_job_int(cat, "num_frames", 0), 9);
	CHECK_NEAR(manifest_job_number(cat, "guidance_scale", -1), 3, 0);
	CHECK_NEAR(manifest_job_number(cat, "frame_rate", -1), 25, 0);
	CHECK_INT(manifest_job_u64(cat, "seed", 0), 42);
	CHECK_STR(manifest_job_string(cat, "seed", NULL), "42");
	char *model = xasprintf("%s/../models/ltxv-demo", dir);
	CHECK_STR(manifest_job_string(cat, "model", NULL), model);
	CHECK_STR(manifest_job_string(cat, "output", NULL), "out/cat-0.mp4");
	const cJSON *mesh = cJSON_GetObjectItem(cat->config, "mesh");
	CHECK_INT(json_get_int(mesh, "devices", 0), 2);
	CHECK_INT(json_get_int(mesh, "data", 0), 2);
	CHECK_INT(json_get_int(mesh, "tensor", 0), 1);
	/* The request is the entry as written, nothing merged. */
	char *req = json_canonical(cat->request);
	CHECK_STR(req, "{\"name\":\"cat\",\"prompt\":\"A cat walks on a fence "
	    "at dusk\",\"seed\":42}");
	free(req);

	const struct manifest_job *dog1 = &m->jobs[1], *dog2 = &m->jobs[2];
	CHECK_STR(dog1->name, "dog-1");
	CHECK_STR(dog2->name, "dog-18446744073709551615");
	CHECK_INT(dog1->entry, 1);
	CHECK_INT(dog2->entry, 1);
	CHECK_INT(dog2->index, 2);
	CHECK(manifest_job_u64(dog2, "seed", 0) == UINT64_MAX);
	CHECK_STR(manifest_job_string(dog2, "seed", NULL), "18446744073709551615");
	CHECK_STR(manifest_job_string(dog2, "output", NULL),
	    "out/dog-18446744073709551615-2.mp4");
	CHECK_INT(manifest_job_int(dog1, "height", 0), 512);
	CHECK_INT(manifest_job_bool(dog1, "truncate", 0), 1);
	CHECK_NEAR(manifest_job_number(dog1, "per_device_batch_size", 0), 1, 0);
	mesh = cJSON_GetObjectItem(dog1->config, "mesh");
	CHECK_INT(json_get_int(mesh, "devices", 0), 2);	/* defaults, per axis */
	CHECK_INT(json_get_int(mesh, "tensor", 0), 2);	/* entry */
	const cJSON *loras = cJSON_GetObjectItem(dog1->config, "loras");
	CHECK_INT(cJSON_GetArraySize(loras), 2);
	char *lora0 = xasprintf("%s/loras/style.safetensors", dir);
	CHECK_STR(json_get_string(cJSON_GetArrayItem(loras, 0), "path", NULL), lora0);
	CHECK_NEAR(json_get_number(cJSON_GetArrayItem(loras, 0), "scale", 0), 0.8, 0);
	CHECK_STR(json_get_string(cJSON_GetArrayItem(loras, 1), "path", NULL),
	    "/abs/other.safetensors");
	CHECK_NEAR(json_get_number(cJSON_GetArrayItem(loras, 1), "scale", 0), 1.0, 0);
	/* The as-written request keeps the big seed exactly and the list. */
	req = json_canonical(dog2->request);
	CHECK_CONTAINS(req, "\"seeds\":[1,18446744073709551615]");
	CHECK_CONTAINS(req, "\"path\":\"loras/style.safetensors\"");
	CHECK(cJSON_GetObjectItem(dog2->request, "height") != NULL);
	CHECK(cJSON_GetObjectItem(dog2->request, "width") == NULL);
	free(req);

	const struct manifest_job *j3 = &m->jobs[3];
	CHECK_STR(j3->name, "job2");	/* entry index, as in jobs[2] */
	CHECK_STR(manifest_job_string(j3, "model", NULL), "ltxv-demo");	/* a name */
	CHECK_STR(manifest_job_string(j3, "output", NULL), "{literal}/0.mp4");
	CHECK_NEAR(manifest_job_number(j3, "decode_noise_scale", -1), 0.05, 0);

	/* Where things were written, for preflight. */
	struct manifest_where w;
	CHECK_INT(manifest_job_where(m, dog1, "height", &w), 1);
	CHECK_STR(w.field, "jobs[1].height");
	CHECK_INT(w.line, 18);
	CHECK_INT(w.column, 13);
	CHECK_STR(w.text, "512");
	CHECK_INT(manifest_job_where(m, cat, "height", &w), 1);
	CHECK_STR(w.field, "defaults.height");
	CHECK_INT(w.line, 5);
	CHECK_INT(manifest_job_where(m, dog1, "per_device_batch_size", &w), 1);
	CHECK_STR(w.text, "1.0");	/* as written, for preflight's message */
	CHECK_INT(manifest_job_where(m, dog2, "seed", &w), 1);
	CHECK_STR(w.field, "jobs[1].seeds[1]");
	CHECK_STR(w.text, "18446744073709551615");
	CHECK_INT(manifest_job_where(m, dog1, "loras[1].path", &w), 1);
	CHECK_STR(w.field, "jobs[1].loras[1].path");
	CHECK_INT(manifest_job_where(m, dog1, "mesh.devices", &w), 1);
	CHECK_STR(w.field, "defaults.mesh.devices");
	CHECK_INT(manifest_job_where(m, cat, "guidance_scale", &w), 0);
	CHECK_STR(w.field, "jobs[0]");
	CHECK_INT(w.line, 12);
	CHECK(w.text == NULL);
	struct lq_error perr;
	error_clear(&perr);
	error_set(&perr, LQ_FAILED, "LQ-GEOM-001", "500 is not a multiple of 32");
	manifest_job_error_at(m, dog1, "height", &perr);
	char buf[1024];
	error_format(&perr, buf, sizeof(buf));
	CHECK_CONTAINS(buf, "valid.yaml:18:13: jobs[1].height: 500 is not");

	/* The JSON spelling gives the same configs. */
	char *jpath = srcpath("tests/manifest/good/valid.json");
	struct manifest *mj;
	CHECK_INT(manifest_load(jpath, &mj, &err), LQ_OK);
	CHECK_INT(mj->n_jobs, m->n_jobs);
	for (size_t i = 0; i < m->n_jobs && i < mj->n_jobs; i++) {
		char *a = cfg_text(&m->jobs[i]), *b = cfg_text(&mj->jobs[i]);
		CHECK_STR(a, b);
		free(a);
		free(b);
		a = json_canonical(m->jobs[i].request);
		b = json_canonical(mj->jobs[i].request);
		CHECK_STR(a, b);
		free(a);
		free(b);
	}
	manifest_free(mj);
	free(jpath);
	free(lora0);
	free(model);
	free(dir);
	manifest_free(m);
	free(path);
}

static void
test_builtin_defaults(void)
{
	enum lq_status st;
	struct lq_error err;
	struct manifest *m = load("jobs:\n  - prompt: hi\n", &st, &err);
	CHECK_INT(st, LQ_OK);
	CHECK_INT(m->n_jobs, 1);
	const struct manifest_job *j = &m->jobs[0];
	CHECK_STR(j->name, "job0");
	CHECK_INT(manifest_job_int(j, "height", 0), 512);
	CHECK_INT(manifest_job_int(j, "width", 0), 704);
	CHECK_INT(manifest_job_int(j, "num_frames", 0), 161);
	CHECK_NEAR(manifest_job_number(j, "frame_rate", 0), 25, 0);
	CHECK_INT(manifest_job_int(j, "num_inference_steps", 0), 50);
	CHECK_NEAR(manifest_job_number(j, "guidance_scale", 0), 3, 0);
	CHECK_NEAR(manifest_job_number(j, "guidance_rescale", -1), 0, 0);
	CHECK_NEAR(manifest_job_number(j, "decode_timestep", -1), 0, 0);
	CHECK_NEAR(manifest_job_number(j, "decode_noise_scale", -1), 0, 0);
	CHECK_INT(manifest_job_int(j, "max_sequence_length", 0), 128);
	CHECK_STR(manifest_job_string(j, "negative_prompt", NULL), "");
	CHECK_STR(manifest_job_string(j, "output", NULL), "job0.mp4");
	CHECK_INT(manifest_job_int(j, "max_attempts", 0), 3);
	CHECK_INT(manifest_job_int(j, "priority", -1), 0);
	CHECK_INT(manifest_job_bool(j, "truncate", 1), 0);
	CHECK_NEAR(manifest_job_number(j, "per_device_batch_size", 0), 1, 0);
	CHECK_STR(manifest_job_string(j, "seed", NULL), "0");
	CHECK(cJSON_GetObjectItem(j->config, "model") == NULL);	/* no default */
	CHECK(cJSON_GetObjectItem(j->config, "seeds") == NULL);
	const cJSON *mesh = cJSON_GetObjectItem(j->config, "mesh");
	CHECK_INT(json_get_int(mesh, "devices", 0), 1);
	CHECK_INT(json_get_int(mesh, "data", 0), 1);
	CHECK_INT(json_get_int(mesh, "context", 0), 1);
	CHECK_INT(json_get_int(mesh, "tensor", 0), 1);
	manifest_free(m);

	/* A null in an entry goes back to the built-in default. */
	m = load("defaults: {height: 256, seeds: [5, 6]}\n"
	    "jobs:\n  - {height: null, name: a}\n  - {name: b, seed: 9}\n",
	    &st, &err);
	CHECK_INT(st, LQ_OK);
	CHECK_INT(m->n_jobs, 3);
	CHECK_STR(m->jobs[0].name, "a-5");
	CHECK_STR(m->jobs[1].name, "a-6");
	CHECK_STR(m->jobs[2].name, "b");	/* the entry's seed replaces the list */
	CHECK_INT(manifest_job_int(&m->jobs[0], "height", 0), 512);
	CHECK_INT(manifest_job_int(&m->jobs[2], "height", 0), 256);
	CHECK_INT(manifest_job_u64(&m->jobs[2], "seed", 0), 9);
	struct manifest_where w;
	manifest_job_where(m, &m->jobs[1], "seed", &w);
	CHECK_STR(w.field, "defaults.seeds[1]");
	manifest_free(m);
}

static void
test_seeds_and_templates(void)
{
	enum lq_status st;
	struct lq_error err;
	struct manifest *m = load(
	    "jobs:\n"
	    "  - name: a\n"
	    "    seeds: [3, 4294967296, 0x10]\n"
	    "    output: \"clips/{name}/{seed}_{index}.mp4\"\n"
	    "    frames: \"frames/{name}\"\n"
	    "  - seed: \"18446744073709551615\"\n", &st, &err);
	CHECK_INT(st, LQ_OK);
	CHECK_INT(m->n_jobs, 4);
	CHECK_STR(m->jobs[0].name, "a-3");
	CHECK_STR(m->jobs[1].name, "a-4294967296");
	CHECK_STR(m->jobs[2].name, "a-16");
	CHECK_STR(manifest_job_string(&m->jobs[1], "output", NULL),
	    "clips/a-4294967296/4294967296_1.mp4");
	CHECK_STR(manifest_job_string(&m->jobs[2], "frames", NULL), "frames/a-16");
	CHECK(manifest_job_u64(&m->jobs[1], "seed", 0) == 4294967296ull);
	CHECK(manifest_job_u64(&m->jobs[3], "seed", 0) == UINT64_MAX);
	CHECK_STR(m->jobs[3].name, "job1");
	CHECK_STR(manifest_job_string(&m->jobs[3], "output", NULL), "job1.mp4");
	manifest_free(m);

	/* Unknown placeholder and unbalanced braces. */
	m = load("jobs:\n  - output: \"{name}/{frame}.mp4\"\n"
	    "  - output: \"{name\"\n", &st, &err);
	CHECK_INT(st, LQ_WARN);
	CHECK_INT(m->n_errors, 2);
	CHECK_STR(m->errors[0].code, "LQ-MAN-008");
	CHECK_CONTAINS(m->errors[0].message, "{frame}");
	CHECK_STR(m->errors[0].field, "jobs[0].output");
	CHECK_INT(m->errors[0].line, 2);
	CHECK_INT(m->errors[0].column, 13);
	CHECK_STR(m->errors[1].code, "LQ-MAN-008");
	manifest_free(m);

	/* u64 limits: one past the top, negative. */
	m = load("jobs:\n  - seed: 18446744073709551616\n  - seed: -1\n"
	    "  - seeds: []\n", &st, &err);
	CHECK_INT(st, LQ_WARN);
	CHECK_INT(m->n_errors, 3);
	CHECK_STR(m->errors[0].code, "LQ-MAN-005");
	CHECK_CONTAINS(m->errors[0].message, "18446744073709551616");
	CHECK_CONTAINS(m->errors[1].message, "-1");
	CHECK_STR(m->errors[2].field, "jobs[2].seeds");
	manifest_free(m);

	/* seed and seeds together; a repeated seed makes a repeated name. */
	m = load("jobs:\n  - {seed: 1, seeds: [2]}\n  - {name: x, seeds: [7, 7]}\n",
	    &st, &err);
	CHECK_INT(st, LQ_WARN);
	CHECK_INT(m->n_errors, 2);
	CHECK_STR(m->errors[0].code, "LQ-MAN-010");
	CHECK_STR(m->errors[1].code, "LQ-MAN-009");
	CHECK_STR(m->errors[1].field, "jobs[1].seeds[1]");
	CHECK_INT(m->n_jobs, 3);
	CHECK(m->jobs[1].error == NULL);	/* the first x-7 may be queued */
	CHECK(m->jobs[2].error != NULL);
	CHECK(m->jobs[2].config == NULL);
	manifest_free(m);
}

static void
test_type_errors(void)
{
	enum lq_status st;
	struct lq_error err;
	struct manifest *m = load(
	    "version: 1\n"
	    "jobs:\n"
	    "  - name: ok\n"
	    "  - name: bad\n"
	    "    height: \"512\"\n"
	    "    width: 704.5\n"
	    "    truncate: yes\n"
	    "    mesh: [1, 2]\n"
	    "    frame_rate: .inf\n"
	    "  - name: ok2\n"
	    "    prompt: {a: 1}\n", &st, &err);
	CHECK_INT(st, LQ_WARN);
	CHECK_INT(m->n_errors, 6);
	CHECK_STR(err.code, "LQ-MAN-005");
	CHECK_STR(err.field, "jobs[1].height");
	CHECK_INT(err.line, 5);
	CHECK_INT(err.column, 13);
	CHECK_CONTAINS(err.message, "expected an integer");
	CHECK_CONTAINS(err.message, "\"512\"");
	char buf[1024];
	error_format(&err, buf, sizeof(buf));
	CHECK_CONTAINS(buf, "mem/jobs.yaml:5:13: jobs[1].height: expected an integer");
	CHECK_CONTAINS(m->errors[1].message, "704.5");
	CHECK_STR(m->errors[2].field, "jobs[1].truncate");
	CHECK_CONTAINS(m->errors[2].message, "true or false");
	CHECK_CONTAINS(m->errors[3].message, "got a sequence");
	CHECK_CONTAINS(m->errors[4].message, "finite");
	CHECK_STR(m->errors[5].field, "jobs[2].prompt");
	CHECK_INT(m->n_jobs, 3);
	CHECK(m->jobs[0].error == NULL && m->jobs[0].config != NULL);
	CHECK(m->jobs[1].error == &m->errors[0] && m->jobs[1].config == NULL);
	CHECK_STR(m->jobs[1].name, "bad");
	CHECK(m->jobs[1].request != NULL);	/* rejected, still recorded */
	CHECK(m->jobs[2].error == &m->errors[5]);
	manifest_free(m);
}

static void
test_key_errors(void)
{
	enum lq_status st;
	struct lq_error err;
	struct manifest *m = load(
	    "jobs:\n"
	    "  - prompt: a\n"
	    "    heigth: 512\n"
	    "    mesh: {devcies: 2}\n"
	    "    xyzzy: 1\n", &st, &err);
	CHECK_INT(st, LQ_WARN);
	CHECK_INT(m->n_errors, 3);
	CHECK_STR(m->errors[0].code, "LQ-MAN-004");
	CHECK_STR(m->errors[0].field, "jobs[0].heigth");
	CHECK_INT(m->errors[0].line, 3);
	CHECK_INT(m->errors[0].column, 5);
	CHECK_CONTAINS(m->errors[0].hint, "did you mean \"height\"");
	CHECK_STR(m->errors[1].field, "jobs[0].mesh.devcies");
	CHECK_CONTAINS(m->errors[1].hint, "\"devices\"");
	CHECK(strstr(m->errors[2].hint, "did you mean") == NULL);
	manifest_free(m);

	/* Duplicate keys: in an entry, at the top level. */
	m = load("jobs:\n  - prompt: a\n    seed: 1\n    prompt: b\n", &st, &err);
	CHECK_INT(st, LQ_WARN);
	CHECK_STR(err.code, "LQ-MAN-003");
	CHECK_STR(err.field, "jobs[0].prompt");
	CHECK_INT(err.line, 4);
	CHECK_CONTAINS(err.message, "line 2");
	manifest_free(m);
	m = load("jobs: [{}]\njobs: [{}]\n", &st, &err);
	CHECK_INT(st, LQ_FAILED);
	CHECK_STR(err.code, "LQ-MAN-003");
	manifest_free(m);

	/* Top level: unknown key, version, defaults errors refuse the manifest. */
	m = load("verison: 1\njobs: [{}]\n", &st, &err);
	CHECK_INT(st, LQ_FAILED);
	CHECK_STR(err.code, "LQ-MAN-004");
	CHECK_CONTAINS(err.hint, "\"version\"");
	manifest_free(m);
	m = load("version: 2\njobs: [{}]\n", &st, &err);
	CHECK_INT(st, LQ_FAILED);
	CHECK_STR(err.code, "LQ-MAN-007");
	manifest_free(m);
	m = load("defaults: {name: x, height: big}\njobs: [{}, {width: w}]\n",
	    &st, &err);
	CHECK_INT(st, LQ_FAILED);
	CHECK_INT(m->n_errors, 3);	/* defaults' two and the entry's one */
	CHECK_STR(m->errors[0].code, "LQ-MAN-012");
	CHECK_STR(m->errors[1].field, "defaults.height");
	CHECK_STR(m->errors[2].field, "jobs[1].width");
	manifest_free(m);
	m = load("jobs: []\n", &st, &err);
	CHECK_INT(st, LQ_FAILED);
	CHECK_STR(err.code, "LQ-MAN-006");
	manifest_free(m);
	m = load("", &st, &err);
	CHECK_INT(st, LQ_FAILED);
	CHECK_STR(err.code, "LQ-MAN-006");
	manifest_free(m);
}

static void
test_syntax_errors(void)
{
	enum lq_status st;
	struct lq_error err;
	struct manifest *m = load("jobs:\n  - prompt: \"unterminated\n", &st, &err);
	CHECK_INT(st, LQ_FAILED);
	CHECK_STR(err.code, "LQ-MAN-001");
	CHECK_STR(err.file, "mem/jobs.yaml");
	CHECK_INT(err.line, 3);
	CHECK(err.column >= 1);
	CHECK_INT(m->n_jobs, 0);
	manifest_free(m);

	m = load("jobs:\n  - prompt: a\n   bad: indentation\n", &st, &err);
	CHECK_INT(st, LQ_FAILED);
	CHECK_STR(err.code, "LQ-MAN-001");
	CHECK_INT(err.line, 3);
	CHECK_INT(err.column, 4);
	manifest_free(m);

	m = load("{\"jobs\": [{\"prompt\": \"a\" \"b\"}]}", &st, &err);	/* JSON */
	CHECK_INT(st, LQ_FAILED);
	CHECK_STR(err.code, "LQ-MAN-001");
	CHECK_INT(err.line, 1);
	manifest_free(m);

	m = load("jobs: [{}]\n---\njobs: [{}]\n", &st, &err);
	CHECK_INT(st, LQ_FAILED);
	CHECK_STR(err.code, "LQ-MAN-014");
	CHECK_INT(err.line, 2);
	manifest_free(m);

	m = load("jobs: [*nothing]\n", &st, &err);
	CHECK_INT(st, LQ_FAILED);
	CHECK_STR(err.code, "LQ-MAN-002");
	manifest_free(m);

	struct manifest *mf;
	CHECK_INT(manifest_load("/nonexistent/jobs.yaml", &mf, &err), LQ_FAILED);
	CHECK_STR(err.code, "LQ-MAN-011");
	CHECK_STR(err.file, "/nonexistent/jobs.yaml");
	manifest_free(mf);
}

static void
test_aliases(void)
{
	enum lq_status st;
	struct lq_error err;
	/* Small aliases are fine and expand in requests and configs. */
	struct manifest *m = load(
	    "p: &p A shared prompt\n", &st, &err);
	CHECK_INT(st, LQ_FAILED);	/* unknown top-level key p */
	manifest_free(m);
	m = load("defaults: &d {height: 256}\n"
	    "jobs:\n  - {prompt: &p a shared prompt, loras: &l [{path: x.st}]}\n"
	    "  - {prompt: *p, loras: *l}\n", &st, &err);
	CHECK_INT(st, LQ_OK);
	CHECK_STR(manifest_job_string(&m->jobs[1], "prompt", NULL), "a shared prompt");
	char *req = json_canonical(m->jobs[1].request);
	CHECK_STR(req, "{\"loras\":[{\"path\":\"x.st\"}],\"prompt\":\"a shared prompt\"}");
	free(req);
	manifest_free(m);

	/* Billion laughs: nine levels of nine would be 387 million strings. */
	struct strbuf sb = { 0 };
	strbuf_printf(&sb, "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\","
	    "\"lol\",\"lol\",\"lol\",\"lol\"]\n");
	for (char c = 'b'; c <= 'i'; c++)
		strbuf_printf(&sb, "%c: &%c [*%c,*%c,*%c,*%c,*%c,*%c,*%c,*%c,*%c]\n",
		    c, c, c - 1, c - 1, c - 1, c - 1, c - 1, c - 1, c - 1, c - 1, c - 1);
	strbuf_printf(&sb, "jobs: [{prompt: *i}]\n");
	m = load(sb.buf, &st, &err);
	CHECK_INT(st, LQ_FAILED);
	CHECK_STR(err.code, "LQ-MAN-002");
	CHECK_CONTAINS(err.message, "billion laughs");
	CHECK(err.line >= 6 && err.line <= 9);
	manifest_free(m);
	free(sb.buf);
}

static void
test_schema(void)
{
	/* Every key has a type name; defaults parse as JSON. */
	for (size_t i = 0; i < manifest_key_count(); i++) {
		const struct manifest_key *k = manifest_key_at(i);
		CHECK(manifest_key_find(k->name) == k);
		if (k->def) {
			cJSON *d = cJSON_Parse(k->def);
			CHECK(d != NULL);
			cJSON_Delete(d);
		}
	}
	const char *names[] = { "height", "width", "seed" };
	CHECK_STR(manifest_key_suggest("hieght", names, 3), "height");
	CHECK(manifest_key_suggest("zzzzzzzz", names, 3) == NULL);
}

/* Byte-level spellings: BOM, CRLF, non-ASCII text before an error. */
static void
test_encodings(void)
{
	enum lq_status st;
	struct lq_error err;
	struct manifest *m = load("\xef\xbb\xbfjobs:\r\n  - prompt: caf\xc3\xa9\r\n"
	    "    seed: 7\r\n", &st, &err);
	CHECK_INT(st, LQ_OK);
	CHECK_INT(m->n_jobs, 1);
	CHECK_STR(manifest_job_string(&m->jobs[0], "prompt", NULL), "caf\xc3\xa9");
	CHECK_INT(manifest_job_u64(&m->jobs[0], "seed", 0), 7);
	manifest_free(m);

	/* Columns count characters: "é" is one. */
	m = load("jobs:\n  - {prompt: \xc3\xa9\xc3\xa9, height: x}\n", &st, &err);
	CHECK_INT(st, LQ_WARN);
	CHECK_INT(err.line, 2);
	CHECK_INT(err.column, 26);	/* bytes would say 28 */
	manifest_free(m);

	/* JSON: a seed too big for a double, as a number and as a string. */
	m = load("{\"jobs\": [{\"seed\": 18446744073709551614},"
	    " {\"seed\": \"9007199254740993\"}]}", &st, &err);
	CHECK_INT(st, LQ_OK);
	CHECK(manifest_job_u64(&m->jobs[0], "seed", 0) == UINT64_MAX - 1);
	CHECK(manifest_job_u64(&m->jobs[1], "seed", 0) == 9007199254740993ull);
	char *req = json_canonical(m->jobs[0].request);
	CHECK_STR(req, "{\"seed\":18446744073709551614}");
	free(req);
	manifest_free(m);
}

/* A rejected job can still be located and named for its report. */
static void
test_rejected_where(void)
{
	enum lq_status st;
	struct lq_error err;
	struct manifest *m = load("jobs:\n  - name: r\n    height: tall\n"
	    "    mesh: {devices: -1}\n", &st, &err);
	CHECK_INT(st, LQ_WARN);
	const struct manifest_job *j = &m->jobs[0];
	CHECK(j->config == NULL);
	CHECK_STR(j->name, "r");
	CHECK_INT(manifest_job_int(j, "height", -5), -5);
	struct manifest_where w;
	CHECK_INT(manifest_job_where(m, j, "height", &w), 1);
	CHECK_STR(w.text, "tall");
	CHECK_INT(manifest_job_where(m, j, "mesh.devices", &w), 1);
	CHECK_STR(w.text, "-1");
	CHECK_INT(w.line, 4);
	CHECK_INT(w.column, 21);
	CHECK_INT(manifest_job_where(m, j, "loras[0].path", &w), 0);
	CHECK_INT(manifest_job_where(m, j, "mesh[0]", &w), 0);
	manifest_free(m);
}

/* A manifest of `n` seeds in one entry (and `extra` more one-job entries). */
static char *
seeds_manifest(size_t n, size_t extra)
{
	struct strbuf sb = {0};
	strbuf_printf(&sb, "jobs:\n  - {name: s, prompt: p, seeds: [");
	for (size_t i = 0; i < n; i++)
		strbuf_printf(&sb, "%s%zu", i ? "," : "", i);
	strbuf_printf(&sb, "]}\n");
	for (size_t i = 0; i < extra; i++)
		strbuf_printf(&sb, "  - {name: e%zu, prompt: p}\n", i);
	return strbuf_release(&sb);
}

/* LQ-MAN-015: every limit of manifest.h, at and past it. */
static void
test_limits(void)
{
	enum lq_status st;
	struct lq_error err;
	struct manifest *m;

	/* seeds: at the limit, one request shared by all the jobs */
	char *t = seeds_manifest(MANIFEST_MAX_SEEDS, 0);
	m = load(t, &st, &err);
	CHECK_INT(st, LQ_OK);
	CHECK_INT(m->n_jobs, MANIFEST_MAX_SEEDS);
	CHECK(m->n_jobs > 1 && m->jobs[0].request == m->jobs[1].request &&
	    m->jobs[0].request == m->jobs[m->n_jobs - 1].request);
	manifest_free(m);
	free(t);
	/* one past: the seeds list is refused, not expanded */
	t = seeds_manifest(MANIFEST_MAX_SEEDS + 1, 0);
	m = load(t, &st, &err);
	CHECK_INT(st, LQ_WARN);
	CHECK_INT(m->n_jobs, 1);
	CHECK(m->jobs[0].config == NULL);
	CHECK_STR(err.code, "LQ-MAN-015");
	CHECK_STR(err.field, "jobs[0].seeds");
	CHECK_CONTAINS(err.message, "at most 10000");
	manifest_free(m);
	free(t);
	/* jobs: the seeds and the other entries together */
	t = seeds_manifest(MANIFEST_MAX_JOBS, 1);
	m = load(t, &st, &err);
	CHECK_INT(st, LQ_FAILED);
	CHECK_INT(m->n_jobs, 0);
	CHECK_STR(err.code, "LQ-MAN-015");
	CHECK_STR(err.field, "jobs[1]");
	CHECK_CONTAINS(err.message, "more than 10000 jobs");
	manifest_free(m);
	free(t);
	/* a string: at the limit it loads, one byte more is refused */
	for (size_t extra = 0; extra < 2; extra++) {
		size_t n = MANIFEST_MAX_STRING + extra;
		char *p = xmalloc(n + 1);
		memset(p, 'a', n);
		p[n] = '\0';
		t = xasprintf("jobs:\n  - {name: a, prompt: %s}\n", p);
		m = load(t, &st, &err);
		CHECK_INT(st, extra ? LQ_WARN : LQ_OK);
		if (extra) {
			CHECK_STR(err.code, "LQ-MAN-015");
			CHECK_STR(err.field, "jobs[0].prompt");
		}
		manifest_free(m);
		free(t);
		free(p);
	}
	/* bytes: refused before parsing */
	size_t big = MANIFEST_MAX_BYTES + 1;
	char *b = xmalloc(big);
	memset(b, '#', big);
	error_clear(&err);
	st = manifest_load_buffer("mem/big.yaml", b, big, &m, &err);
	CHECK_INT(st, LQ_FAILED);
	CHECK_STR(err.code, "LQ-MAN-015");
	manifest_free(m);
	free(b);
}

/* latentq-manifest(5) LIMITS states each limit's value. */
static void
test_man_limits(void)
{
	char *path = srcpath("man/latentq-manifest.5");
	char *man = util_read_file(path, NULL);
	CHECK(man != NULL);
	const char *lim = man ? strstr(man, "\n.Sh LIMITS\n") : NULL;
	CHECK(lim != NULL);
	if (lim != NULL) {
		char *sec = xstrndup(lim, (size_t)(strstr(lim + 1, "\n.Sh ") -
		    lim));
		static const struct { const char *item; unsigned v; } rows[] = {
			{".It manifest size\n", MANIFEST_MAX_BYTES},
			{".It jobs\n", MANIFEST_MAX_JOBS},
			{".It seeds per entry\n", MANIFEST_MAX_SEEDS},
			{".It string length\n", MANIFEST_MAX_STRING},
		};
		for (size_t i = 0; i < LQ_ARRAY_LEN(rows); i++) {
			char *want = xasprintf("%s%u ", rows[i].item, rows[i].v);
			CHECK_CONTAINS(sec, want);
			free(want);
		}
		free(sec);
	}
	free(man);
	free(path);
}

/* latentq-manifest(5) documents every key, and its examples load. */
static void
test_man_page(void)
{
	char *path = srcpath("man/latentq-manifest.5");
	char *man = util_read_file(path, NULL);
	CHECK(man != NULL);
	if (man == NULL)
		return;
	for (size_t i = 0; i < manifest_key_count(); i++) {
		const struct manifest_key *k = manifest_key_at(i);
		char *item = xasprintf("\n.It Ic %s Ar ", k->name);
		CHECK_CONTAINS(man, item);
		free(item);
		for (const struct manifest_key *f = k->fields; f && f->name; f++) {
			item = xasprintf("\n.It Ic %s Ar ", f->name);
			CHECK_CONTAINS(man, item);
			free(item);
		}
	}
	/* The EXAMPLES section's YAML and JSON manifests. */
	const char *ex = strstr(man, "\n.Sh EXAMPLES");
	CHECK(ex != NULL);
	int examples = 0;
	for (const char *p = ex; p && (p = strstr(p, ".Bd -literal -offset indent\n"));) {
		p += strlen(".Bd -literal -offset indent\n");
		const char *end = strstr(p, "\n.Ed");
		if (end == NULL)
			break;
		enum lq_status st;
		struct lq_error err;
		char *text = xstrndup(p, (size_t)(end - p + 1));
		struct manifest *m;
		error_clear(&err);
		st = manifest_load_buffer(path, text, strlen(text), &m, &err);
		CHECK_INT(st, LQ_OK);
		if (st != LQ_OK)
			error_print(&err, stderr);
		CHECK(m->n_jobs >= 1);
		examples++;
		manifest_free(m);
		free(text);
		p = end;
	}
	CHECK_INT(examples, 2);
	free(man);
	free(path);
}

int
main(void)
{
	digest_init();
	test_valid_file();
	test_builtin_defaults();
	test_seeds_and_templates();
	test_type_errors();
	test_key_errors();
	test_syntax_errors();
	test_aliases();
	test_schema();
	test_encodings();
	test_rejected_where();
	test_man_page();
	test_limits();
	test_man_limits();
	return test_summary();
}
