/*
 * test-expected.c — expected-tensor tables against every model folder the
 * goldens and the demo model ship: every tensor diffusers / transformers
 * wrote is expected, none is missing, shapes agree.
 *
 * The folders' tensor lists are in tests/data/model/<folder>/<component>/
 * tensors.txt (read from the shared files' headers, see PROVENANCE.md); the
 * test writes a zero-filled safetensors file with that header and checks it.
 * When the shared folders themselves are present (../shared, as on the build
 * machines) their real weights files are checked too.  Then a broken set is
 * checked to see that every kind of problem is reported, all of them.
 * The LTX-2 tables are checked against the upstream files of
 * tests/data/ltx2 (the goldens' model folders, kept whole in the tree).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/util.h"
#include "model/diffusers.h"
#include "model/expected.h"
#include "model/safetensors.h"
#include "../test.h"

static const char *top;
static char tmp[] = "/tmp/lq-exp-XXXXXX";

/* Writes tmp/<tag>.safetensors from a tensors.txt; returns its path. */
static char *
synth_from_list(const char *list, const char *tag)
{
	FILE *fp = fopen(list, "r");
	CHECK(fp != NULL);
	if (fp == NULL)
		return NULL;
	struct st_writer *w = st_writer_new();
	char line[512];
	static char zeros[16 << 20];
	while (fgets(line, sizeof(line), fp)) {
		char name[256], dt[16], shp[128];
		if (line[0] == '#' || sscanf(line, "%255s %15s %127s", name, dt, shp) != 3)
			continue;
		enum st_dtype d;
		LQ_ASSERT(st_dtype_parse(dt, &d) == 0);
		int64_t shape[ST_MAX_DIMS];
		int nd = 0;
		if (strcmp(shp, "-") != 0)
			for (char *s = strtok(shp, ","); s; s = strtok(NULL, ","))
				shape[nd++] = atoll(s);
		st_writer_add(w, name, d, nd, shape, zeros);
	}
	fclose(fp);
	char *path = xasprintf("%s/%s.safetensors", tmp, tag);
	struct lq_error err;
	LQ_ASSERT(st_writer_write(w, path, &err) == LQ_OK);
	st_writer_free(w);
	return path;
}

static int
check_set(const struct tensor_table *t, const char *path, const char *label)
{
	struct st_set *s = NULL;
	struct lq_error err;
	error_clear(&err);
	CHECK_INT(st_set_open(path, &s, &err), LQ_OK);
	if (s == NULL)
		return -1;
	struct expected_report r;
	enum lq_status rc = expected_check(t, s, label, &r, &err);
	CHECK_INT(rc, LQ_OK);
	CHECK_INT(r.n_missing, 0);
	CHECK_INT(r.n_unexpected, 0);
	CHECK_INT(r.n_misshaped, 0);
	CHECK_INT(r.n_bad_dtype, 0);
	for (size_t i = 0; i < r.n_missing; i++)
		fprintf(stderr, "  missing %s\n", r.missing[i]);
	for (size_t i = 0; i < r.n_unexpected; i++)
		fprintf(stderr, "  unexpected %s\n", r.unexpected[i]);
	for (size_t i = 0; i < r.n_misshaped; i++)
		fprintf(stderr, "  misshaped %s\n", r.misshaped[i]);
	int n = (int)st_set_count(s);
	expected_report_free(&r);
	st_set_close(s);
	return n;
}

enum kind { K_TRANSFORMER, K_VAE, K_T5 };

static void
build(enum kind k, const char *cfgpath, struct tensor_table *t)
{
	cJSON *j;
	struct lq_error err;
	LQ_ASSERT(diffusers_load_json(cfgpath, &j, &err) == LQ_OK);
	if (k == K_TRANSFORMER) {
		struct ltxv_transformer_config c;
		LQ_ASSERT(diffusers_parse_transformer(j, cfgpath, &c, &err) == LQ_OK);
		expected_ltxv_transformer(&c, t);
	} else if (k == K_VAE) {
		struct ltxv_vae_config c;
		LQ_ASSERT(diffusers_parse_vae(j, cfgpath, &c, &err) == LQ_OK);
		expected_ltxv_vae(&c, t);
	} else {
		struct t5_config c;
		LQ_ASSERT(diffusers_parse_t5(j, cfgpath, &c, &err) == LQ_OK);
		expected_t5_encoder(&c, t);
	}
	cJSON_Delete(j);
}

static const struct {
	const char *folder, *component, *shared, *file;
	enum kind kind;
} cases[] = {
	{"ltxv-demo", "transformer", "models/ltxv-demo", "diffusion_pytorch_model", K_TRANSFORMER},
	{"ltxv-demo", "vae", "models/ltxv-demo", "diffusion_pytorch_model", K_VAE},
	{"ltxv-demo", "text_encoder", "models/ltxv-demo", "model", K_T5},
	{"goldens-pipeA", "transformer", "goldens/ltxv/pipeline/pipeA/model",
	    "diffusion_pytorch_model", K_TRANSFORMER},
	{"goldens-pipeA", "vae", "goldens/ltxv/pipeline/pipeA/model", "diffusion_pytorch_model",
	    K_VAE},
	{"goldens-pipeB", "transformer", "goldens/ltxv/pipeline/pipeB/model",
	    "diffusion_pytorch_model", K_TRANSFORMER},
	{"goldens-pipeB", "vae", "goldens/ltxv/pipeline/pipeB/model", "diffusion_pytorch_model",
	    K_VAE},
	{"goldens-transformer", "transformer", "goldens/ltxv/transformer/model",
	    "diffusion_pytorch_model", K_TRANSFORMER},
	{"goldens-t5", "text_encoder", "goldens/ltxv/t5/model", "model", K_T5},
	{"goldens-vae090", "vae", "goldens/ltxv/vae/vae090/model", "diffusion_pytorch_model",
	    K_VAE},
	/* AutoencoderKLLTX2Video: encoder and decoder (plain conv_shortcut) */
	{"goldens-ltx2-vae_a", "vae", "goldens/ltx2/vae/vae_a/model", "diffusion_pytorch_model",
	    K_VAE},
	{"goldens-ltx2-vae_b", "vae", "goldens/ltx2/vae/vae_b/model", "diffusion_pytorch_model",
	    K_VAE},
	{"goldens-vae091", "vae", "goldens/ltxv/vae/vae091/model", "diffusion_pytorch_model",
	    K_VAE},
	{"goldens-vae_causal", "vae", "goldens/ltxv/vae/vae_causal/model",
	    "diffusion_pytorch_model", K_VAE},
};

static void
test_folders(void)
{
	int shared_checked = 0;
	for (size_t i = 0; i < LQ_ARRAY_LEN(cases); i++) {
		char *cfg = xasprintf("%s/tests/data/model/%s/%s/config.json", top, cases[i].folder,
		    cases[i].component);
		char *list = xasprintf("%s/tests/data/model/%s/%s/tensors.txt", top,
		    cases[i].folder, cases[i].component);
		char *tag = xasprintf("%s-%s", cases[i].folder, cases[i].component);
		struct tensor_table t = {0};
		build(cases[i].kind, cfg, &t);
		char *path = synth_from_list(list, tag);
		int n = check_set(&t, path, tag);
		printf("%-32s %4d tensors in the file, %4zu in the table\n", tag, n, t.n);
		CHECK(n > 0);
		/* the real file, when the shared folder is here */
		char *real = xasprintf("%s/../shared/%s/%s/%s.safetensors", top, cases[i].shared,
		    cases[i].component, cases[i].file);
		if (access(real, R_OK) == 0) {
			CHECK_INT(check_set(&t, real, real), n);
			shared_checked++;
		}
		unlink(path);
		free(real);
		free(path);
		tensor_table_free(&t);
		free(tag);
		free(list);
		free(cfg);
	}
	printf("real shared files checked: %d of %zu\n", shared_checked, LQ_ARRAY_LEN(cases));
}

/* The LTX-2 tables against the goldens' own files (tests/data/ltx2). */
enum l2kind { L2_TRANSFORMER, L2_CONNECTORS, L2_AUDIO_VAE, L2_VOCODER };

static void
test_ltx2(void)
{
	static const struct {
		const char *dir;
		enum l2kind kind;
	} l2[] = {
		{"transformer/model/transformer", L2_TRANSFORMER},
		{"connectors/model/connectors", L2_CONNECTORS},
		{"audio_vae/avae/model/audio_vae", L2_AUDIO_VAE},
		{"audio_vae/avae_attn/model/audio_vae", L2_AUDIO_VAE},
		{"vocoder/voc/model/vocoder", L2_VOCODER},
		{"vocoder/voc_bwe/model/vocoder", L2_VOCODER},
	};
	for (size_t i = 0; i < LQ_ARRAY_LEN(l2); i++) {
		char *dir = xasprintf("%s/tests/data/ltx2/%s", top, l2[i].dir);
		char *cfg = xasprintf("%s/config.json", dir);
		char *file = xasprintf("%s/diffusion_pytorch_model.safetensors", dir);
		struct tensor_table t = {0};
		struct lq_error err;
		cJSON *j = NULL;
		error_clear(&err);
		CHECK_INT(diffusers_load_json(cfg, &j, &err), LQ_OK);
		if (l2[i].kind == L2_TRANSFORMER) {
			struct ltx2_transformer_config c;
			CHECK_INT(diffusers_parse_ltx2_transformer(j, cfg, &c, &err), LQ_OK);
			expected_ltx2_transformer(&c, &t);
		} else if (l2[i].kind == L2_CONNECTORS) {
			struct ltx2_connectors_config c;
			CHECK_INT(diffusers_parse_ltx2_connectors(j, cfg, &c, &err), LQ_OK);
			expected_ltx2_connectors(&c, &t);
		} else if (l2[i].kind == L2_AUDIO_VAE) {
			struct ltx2_audio_vae_config c;
			CHECK_INT(diffusers_parse_ltx2_audio_vae(j, cfg, &c, &err), LQ_OK);
			expected_ltx2_audio_vae(&c, &t);
		} else if (diffusers_ltx2_vocoder_is_bwe(j)) {
			struct ltx2_vocoder_bwe_config c;
			CHECK_INT(diffusers_parse_ltx2_vocoder_bwe(j, cfg, &c, &err), LQ_OK);
			expected_ltx2_vocoder_bwe(&c, &t);
		} else {
			struct ltx2_vocoder_config c;
			CHECK_INT(diffusers_parse_ltx2_vocoder(j, cfg, &c, &err), LQ_OK);
			expected_ltx2_vocoder(&c, &t);
		}
		cJSON_Delete(j);
		int n = check_set(&t, file, l2[i].dir);
		printf("ltx2 %-36s %4d tensors in the file, %4zu in the table\n",
		    l2[i].dir, n, t.n);
		CHECK(n > 0);
		/* the shared file (the tree's audio VAEs are decoder-only
		 * copies; the shared ones hold the encoder too) */
		char *real = xasprintf("%s/../shared/goldens/ltx2/%s/"
		    "diffusion_pytorch_model.safetensors", top, l2[i].dir);
		if (access(real, R_OK) == 0) {
			int m = check_set(&t, real, real);
			printf("ltx2 %-36s %4d tensors in the shared file\n",
			    l2[i].dir, m);
			CHECK(m >= n);
		}
		free(real);
		tensor_table_free(&t);
		free(file);
		free(cfg);
		free(dir);
	}
}

/* Every kind of problem is reported, all of them, not just the first. */
static void
test_report(void)
{
	struct tensor_table t = {0};
	int64_t s23[2] = {2, 3}, s4[1] = {4};
	tensor_table_add(&t, "a.weight", 2, s23, TENSOR_DTYPES_FLOAT, 0);
	tensor_table_add(&t, "a.bias", 1, s4, TENSOR_DTYPES_FLOAT, 0);
	tensor_table_add(&t, "b.weight", 2, s23, TENSOR_DTYPES_FLOAT, 0);
	tensor_table_add(&t, "c.weight", 2, s23, TENSOR_DTYPES_FLOAT, 0);
	tensor_table_add(&t, "d.weight", 2, s23, TENSOR_DTYPES_FLOAT, 0);
	tensor_table_add(&t, "opt.weight", 1, s4, TENSOR_DTYPES_FLOAT, TENSOR_SPEC_OPTIONAL);
	tensor_table_sort(&t);
	struct st_writer *w = st_writer_new();
	static double zeros[64];
	int64_t s32[2] = {3, 2};
	st_writer_add(w, "a.weight", ST_F32, 2, s23, zeros);	/* fine */
	st_writer_add(w, "b.weight", ST_F16, 2, s32, zeros);	/* mis-shaped */
	st_writer_add(w, "c.weight", ST_F64, 2, s23, zeros);	/* wrong dtype */
	st_writer_add(w, "x.lora_A", ST_F32, 1, s4, zeros);	/* unexpected */
	st_writer_add(w, "y", ST_F32, 1, s4, zeros);		/* unexpected */
	/* missing: a.bias, d.weight; opt.weight optional */
	char *path = xasprintf("%s/broken.safetensors", tmp);
	struct lq_error err;
	LQ_ASSERT(st_writer_write(w, path, &err) == LQ_OK);
	st_writer_free(w);
	struct st_set *s;
	LQ_ASSERT(st_set_open(path, &s, &err) == LQ_OK);
	struct expected_report r;
	error_clear(&err);
	CHECK_INT(expected_check(&t, s, "broken/", &r, &err), LQ_FAILED);
	CHECK_INT(r.n_missing, 2);
	CHECK_INT(r.n_unexpected, 2);
	CHECK_INT(r.n_misshaped, 1);
	CHECK_INT(r.n_bad_dtype, 1);
	if (r.n_missing == 2) {
		CHECK_STR(r.missing[0], "a.bias");
		CHECK_STR(r.missing[1], "d.weight");
	}
	if (r.n_unexpected == 2) {
		CHECK_STR(r.unexpected[0], "x.lora_A");
		CHECK_STR(r.unexpected[1], "y");
	}
	if (r.n_misshaped == 1)
		CHECK_STR(r.misshaped[0], "b.weight: [3, 2] in the file, [2, 3] expected");
	if (r.n_bad_dtype == 1)
		CHECK_CONTAINS(r.bad_dtype[0], "c.weight: F64");
	CHECK_STR(err.code, "LQ-MODEL-010");
	CHECK_STR(err.field, "a.bias");
	CHECK_STR(err.file, "broken/");
	CHECK_CONTAINS(err.message, "2 missing, 2 unexpected, 1 mis-shaped, 1 of a wrong dtype");
	expected_report_free(&r);
	/* without a report */
	error_clear(&err);
	CHECK_INT(expected_check(&t, s, "broken/", NULL, &err), LQ_FAILED);
	st_set_close(s);
	unlink(path);
	free(path);
	tensor_table_free(&t);
}

/* A parameter saved two ways (TENSOR_SPEC_EITHER): either layout passes,
 * both missing is one "missing" naming every layout. */
static int
either_missing(const struct tensor_table *t, const char *const *names,
    int n, char *first, size_t firstsz)
{
	struct st_writer *w = st_writer_new();
	static double zeros[64];
	int64_t s23[2] = {2, 3}, s4[1] = {4};
	st_writer_add(w, "keep.weight", ST_F32, 2, s23, zeros);
	for (int i = 0; i < n; i++)
		st_writer_add(w, names[i], ST_F32, strstr(names[i], "bias") ?
		    1 : 2, strstr(names[i], "bias") ? s4 : s23, zeros);
	char *path = xasprintf("%s/either.safetensors", tmp);
	struct lq_error err;
	LQ_ASSERT(st_writer_write(w, path, &err) == LQ_OK);
	st_writer_free(w);
	struct st_set *s;
	LQ_ASSERT(st_set_open(path, &s, &err) == LQ_OK);
	struct expected_report r;
	error_clear(&err);
	(void)expected_check(t, s, "either/", &r, &err);
	int missing = (int)r.n_missing;
	snprintf(first, firstsz, "%s", r.n_missing ? r.missing[0] : "");
	expected_report_free(&r);
	st_set_close(s);
	unlink(path);
	free(path);
	return missing;
}

static void
test_either(void)
{
	struct tensor_table t = {0};
	int64_t s23[2] = {2, 3}, s4[1] = {4};
	char first[256];
	tensor_table_add(&t, "keep.weight", 2, s23, TENSOR_DTYPES_FLOAT, 0);
	tensor_table_add(&t, "table", 2, s23, TENSOR_DTYPES_FLOAT,
	    TENSOR_SPEC_EITHER);
	tensor_table_add(&t, "lin.weight", 2, s23, TENSOR_DTYPES_FLOAT,
	    TENSOR_SPEC_EITHER | TENSOR_SPEC_OPTIONAL);
	tensor_table_add(&t, "lin.bias", 1, s4, TENSOR_DTYPES_FLOAT,
	    TENSOR_SPEC_EITHER | TENSOR_SPEC_OPTIONAL);
	tensor_table_sort(&t);
	CHECK_INT(either_missing(&t, (const char *[]){"table"}, 1, first,
	    sizeof(first)), 0);
	CHECK_INT(either_missing(&t, (const char *[]){"lin.weight", "lin.bias"},
	    2, first, sizeof(first)), 0);
	CHECK_INT(either_missing(&t, NULL, 0, first, sizeof(first)), 1);
	CHECK_STR(first, "lin.bias or lin.weight or table");
	tensor_table_free(&t);
}

/*
 * The Wan tables against the real upstream files of tests/data/wan (the
 * pipeline golden's transformer and VAE, the transformer golden's): every
 * tensor accounted for, none missing, none mis-shaped.
 */
static void
test_wan(void)
{
	static const char *const tdirs[] = { "pipeline/model/transformer",
	    "transformer/model/transformer" };
	struct lq_error err;
	for (size_t i = 0; i < LQ_ARRAY_LEN(tdirs); i++) {
		char *dir = xasprintf("%s/tests/data/wan/%s", top, tdirs[i]);
		char *cfg = xasprintf("%s/config.json", dir);
		cJSON *j;
		struct wan_transformer_config c;
		struct tensor_table t = {0};
		LQ_ASSERT(diffusers_load_json(cfg, &j, &err) == LQ_OK);
		LQ_ASSERT(diffusers_parse_wan_transformer(j, cfg, &c, &err) ==
		    LQ_OK);
		cJSON_Delete(j);
		expected_wan_transformer(&c, &t);
		int n = check_set(&t, dir, dir);
		printf("wan %-28s %4d tensors in the file, %4zu in the table\n",
		    tdirs[i], n, t.n);
		CHECK_INT(n, (int)t.n);
		tensor_table_free(&t);
		free(cfg);
		free(dir);
	}
	char *dir = xasprintf("%s/tests/data/wan/pipeline/model/vae", top);
	char *cfg = xasprintf("%s/config.json", dir);
	cJSON *j;
	struct wan_vae_config c;
	struct tensor_table t = {0};
	LQ_ASSERT(diffusers_load_json(cfg, &j, &err) == LQ_OK);
	LQ_ASSERT(diffusers_parse_wan_vae(j, cfg, &c, &err) == LQ_OK);
	cJSON_Delete(j);
	expected_wan_vae(&c, &t);
	int n = check_set(&t, dir, dir);
	printf("wan vae %32s %4d tensors in the file, %4zu in the table\n", "",
	    n, t.n);
	CHECK_INT(n, (int)t.n);		/* the encoder's are in the file too */
	/* a VAE config that does not fit the file: every decoder conv
	 * mis-shaped */
	c.base_dim = 16;
	c.decoder_base_dim = 16;
	expected_wan_vae(&c, &t);
	struct st_set *set = NULL;
	struct expected_report r;
	LQ_ASSERT(st_set_open(dir, &set, &err) == LQ_OK);
	CHECK_INT(expected_check(&t, set, "vae/", &r, &err), LQ_FAILED);
	CHECK(r.n_misshaped > 0);
	expected_report_free(&r);
	st_set_close(set);
	tensor_table_free(&t);
	free(cfg);
	free(dir);
}

int
main(void)
{
	top = getenv("top_srcdir");
	if (top == NULL)
		top = ".";
	LQ_ASSERT(mkdtemp(tmp) != NULL);
	test_folders();
	test_ltx2();
	test_report();
	test_either();
	test_wan();
	char *cmd = xasprintf("rm -rf '%s'", tmp);
	(void)!system(cmd);
	free(cmd);
	return test_summary();
}
