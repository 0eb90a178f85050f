/*
 * test-safetensors.c — writer/reader round trip, dtype conversions, sharded
 * sets through *.safetensors.index.json.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/half.h"
#include "core/util.h"
#include "model/safetensors.h"
#include "../test.h"

static char tmpdir[] = "/tmp/lq-st-XXXXXX";

static void
write_text(const char *path, const char *text)
{
	FILE *fp = fopen(path, "w");
	fputs(text, fp);
	fclose(fp);
}

static void
test_roundtrip(void)
{
	struct st_writer *w = st_writer_new();
	float a[6] = {1, -2, 3.5f, 0.25f, -1e-3f, 65504};
	int64_t sa[2] = {2, 3};
	uint8_t odd[3] = {1, 2, 3};
	int64_t s3u[1] = {3};
	st_writer_add(w, "odd", ST_U8, 1, s3u, odd);	/* 3 bytes first */
	st_writer_add(w, "a.weight", ST_F32, 2, sa, a);
	st_writer_add_f32(w, "a.half", ST_F16, 2, sa, a);
	st_writer_add_f32(w, "a.bf16", ST_BF16, 2, sa, a);
	int64_t ids[3] = {7, -8, 1LL << 40};
	int64_t s3[1] = {3};
	st_writer_add(w, "ids", ST_I64, 1, s3, ids);
	double sc = 0.5;
	st_writer_add(w, "scalar", ST_F64, 0, NULL, &sc);
	int64_t s0[2] = {0, 5};
	st_writer_add(w, "empty", ST_F32, 2, s0, NULL);
	st_writer_set_metadata(w, "format", "pt");
	st_writer_set_metadata(w, "note", "quote\" back\\slash");
	char *path = xasprintf("%s/a.safetensors", tmpdir);
	struct lq_error err;
	error_clear(&err);
	CHECK_INT(st_writer_write(w, path, &err), LQ_OK);
	st_writer_free(w);

	/* header padded to 8 */
	size_t n;
	char *raw = util_read_file(path, &n);
	uint64_t hl;
	memcpy(&hl, raw, 8);
	CHECK_INT(hl % 8, 0);
	free(raw);

	struct st_file *f;
	CHECK_INT(st_file_open(path, &f, &err), LQ_OK);
	if (f == NULL)
		return;
	CHECK_INT(st_file_count(f), 7);
	/* every tensor aligned to its element size (mapping is page-aligned) */
	for (size_t i = 0; i < st_file_count(f); i++) {
		const struct st_tensor *x = st_file_tensor(f, i);
		CHECK_INT((uintptr_t)x->data % st_dtype_size(x->dtype), 0);
	}
	CHECK_STR(st_file_tensor(f, 1)->name, "a.weight");
	CHECK_STR(st_file_metadata(f, "format"), "pt");
	CHECK_STR(st_file_metadata(f, "note"), "quote\" back\\slash");
	CHECK(st_file_metadata(f, "absent") == NULL);
	CHECK_INT(st_file_metadata_count(f), 2);
	const struct st_tensor *t = st_file_find(f, "a.weight");
	CHECK(t != NULL);
	CHECK_INT(t->ndim, 2);
	CHECK_INT(t->shape[0], 2);
	CHECK_INT(t->shape[1], 3);
	CHECK_INT(t->nbytes, 24);
	CHECK(memcmp(t->data, a, 24) == 0);
	const struct st_tensor *h = st_file_find(f, "a.half");
	CHECK_INT(h->dtype, ST_F16);
	float *hf = st_tensor_to_f32(h);
	const struct st_tensor *b = st_file_find(f, "a.bf16");
	float *bf = st_tensor_to_f32(b);
	double maxh = 0, maxb = 0;
	for (int i = 0; i < 6; i++) {
		double eh = fabs(hf[i] - a[i]) / fmax(fabs(a[i]), 1e-30);
		double eb = fabs(bf[i] - a[i]) / fmax(fabs(a[i]), 1e-30);
		maxh = fmax(maxh, eh);
		maxb = fmax(maxb, eb);
	}
	printf("f16 max rel err %.3g, bf16 max rel err %.3g\n", maxh, maxb);
	CHECK(maxh <= 1.0 / 2048);
	CHECK(maxb <= 1.0 / 256);
	CHECK_NEAR(hf[5], 65504, 0);
	free(hf);
	free(bf);
	const struct st_tensor *it = st_file_find(f, "ids");
	int64_t got[3];
	memcpy(got, it->data, 24);
	CHECK_INT(got[2], 1LL << 40);
	float *itf = st_tensor_to_f32(it);
	CHECK_NEAR(itf[1], -8, 0);
	free(itf);
	const struct st_tensor *s = st_file_find(f, "scalar");
	CHECK_INT(s->ndim, 0);
	CHECK_INT(st_tensor_numel(s), 1);
	float *sf = st_tensor_to_f32(s);
	CHECK_NEAR(sf[0], 0.5, 0);
	free(sf);
	const struct st_tensor *e = st_file_find(f, "empty");
	CHECK_INT(e->nbytes, 0);
	CHECK_INT(st_tensor_numel(e), 0);
	CHECK(st_file_find(f, "nope") == NULL);
	st_file_close(f);

	struct st_set *set;
	CHECK_INT(st_set_open(path, &set, &err), LQ_OK);
	CHECK_INT(st_set_count(set), 7);
	CHECK_STR(st_set_tensor(set, 0)->name, "a.bf16");	/* sorted */
	CHECK(st_set_find(set, "ids") != NULL);
	CHECK_STR(st_set_metadata(set, "format"), "pt");
	st_set_close(set);
	free(path);
}

static void
test_half(void)
{
	/* exhaustive f16 -> f32 -> f16 round trip of every finite value */
	int bad = 0;
	for (uint32_t h = 0; h < 0x10000; h++) {
		if ((h & 0x7c00) == 0x7c00)
			continue;
		if (half_f32_to_f16(half_f16_to_f32((uint16_t)h)) != h)
			bad++;
	}
	CHECK_INT(bad, 0);
	CHECK_INT(half_f32_to_f16(1.0f), 0x3c00);
	CHECK_INT(half_f32_to_f16(65520.0f), 0x7c00);	/* rounds to inf */
	CHECK_INT(half_f32_to_f16(5.9604645e-8f), 0x0001);	/* 2^-24 */
	CHECK_INT(half_f32_to_f16(2.98e-8f), 0x0000);	/* below half of 2^-24 */
	CHECK_INT(half_f32_to_f16(1.0f + 1.0f / 4096), 0x3c00);	/* tie to even */
	CHECK_INT(half_f32_to_bf16(1.0f), 0x3f80);
	CHECK_INT(half_f32_to_bf16(1.0f + 1.0f / 256), 0x3f80);	/* tie to even */
	CHECK_NEAR(half_bf16_to_f32(0x4049), 3.140625, 0);
	CHECK_NEAR(half_f16_to_f32(0x0001), 5.9604644775390625e-8, 0);
}

static void
write_shard(const char *path, const char *n1, const char *n2, float v)
{
	struct st_writer *w = st_writer_new();
	float d[4] = {v, v + 1, v + 2, v + 3};
	int64_t s[1] = {4};
	st_writer_add(w, n1, ST_F32, 1, s, d);
	if (n2)
		st_writer_add(w, n2, ST_F32, 1, s, d);
	struct lq_error err;
	LQ_ASSERT(st_writer_write(w, path, &err) == LQ_OK);
	st_writer_free(w);
}

static void
test_sharded(void)
{
	char *dir = xasprintf("%s/sharded", tmpdir);
	char *cmd = xasprintf("mkdir -p %s", dir);
	CHECK_INT(system(cmd), 0);
	free(cmd);
	char *s1 = xasprintf("%s/model-00001-of-00002.safetensors", dir);
	char *s2 = xasprintf("%s/model-00002-of-00002.safetensors", dir);
	char *ix = xasprintf("%s/model.safetensors.index.json", dir);
	write_shard(s1, "x.a", "x.b", 1);
	write_shard(s2, "y.a", NULL, 10);
	write_text(ix, "{\"metadata\": {\"total_size\": 48}, \"weight_map\": {"
	    "\"x.a\": \"model-00001-of-00002.safetensors\","
	    "\"x.b\": \"model-00001-of-00002.safetensors\","
	    "\"y.a\": \"model-00002-of-00002.safetensors\"}}");
	struct lq_error err;
	error_clear(&err);
	struct st_set *set = NULL;
	/* through the directory and through the index file */
	CHECK_INT(st_set_open(dir, &set, &err), LQ_OK);
	if (set) {
		CHECK_INT(st_set_count(set), 3);
		CHECK_INT(st_set_file_count(set), 2);
		CHECK_STR(st_set_metadata(set, "total_size"), "48");
		const struct st_tensor *t = st_set_find(set, "y.a");
		CHECK(t != NULL);
		float *v = st_tensor_to_f32(t);
		CHECK_NEAR(v[3], 13, 0);
		free(v);
		st_set_close(set);
	}
	CHECK_INT(st_set_open(ix, &set, &err), LQ_OK);
	st_set_close(set);

	/* a tensor listed for the wrong shard */
	write_text(ix, "{\"weight_map\": {"
	    "\"x.a\": \"model-00001-of-00002.safetensors\","
	    "\"x.b\": \"model-00002-of-00002.safetensors\","
	    "\"y.a\": \"model-00002-of-00002.safetensors\"}}");
	error_clear(&err);
	CHECK_INT(st_set_open(ix, &set, &err), LQ_FAILED);
	CHECK(set == NULL);
	CHECK_STR(err.code, "LQ-ST-022");
	CHECK_STR(err.field, "x.b");
	/* a shard tensor missing from weight_map */
	write_text(ix, "{\"weight_map\": {"
	    "\"x.a\": \"model-00001-of-00002.safetensors\","
	    "\"y.a\": \"model-00002-of-00002.safetensors\"}}");
	error_clear(&err);
	CHECK_INT(st_set_open(ix, &set, &err), LQ_FAILED);
	CHECK_STR(err.code, "LQ-ST-023");
	CHECK_STR(err.field, "x.b");
	/* a shard path escaping the directory */
	write_text(ix, "{\"weight_map\": {\"x.a\": \"../a.safetensors\"}}");
	error_clear(&err);
	CHECK_INT(st_set_open(ix, &set, &err), LQ_FAILED);
	CHECK_STR(err.code, "LQ-ST-021");
	/* no weight_map */
	write_text(ix, "{\"metadata\": {}}");
	error_clear(&err);
	CHECK_INT(st_set_open(ix, &set, &err), LQ_FAILED);
	CHECK_STR(err.code, "LQ-ST-020");
	CHECK_CONTAINS(err.file, "model.safetensors.index.json");
	/* a shard missing on disk */
	write_text(ix, "{\"weight_map\": {\"x.a\": \"gone.safetensors\"}}");
	error_clear(&err);
	CHECK_INT(st_set_open(ix, &set, &err), LQ_FAILED);
	CHECK_STR(err.code, "LQ-ST-001");
	CHECK_CONTAINS(err.file, "gone.safetensors");
	unlink(ix);
	/* directory with two files and no index */
	error_clear(&err);
	CHECK_INT(st_set_open(dir, &set, &err), LQ_FAILED);
	CHECK_STR(err.code, "LQ-ST-025");
	/* a name held by two shards */
	write_shard(s2, "y.a", "x.a", 10);
	write_text(ix, "{\"weight_map\": {"
	    "\"x.a\": \"model-00001-of-00002.safetensors\","
	    "\"x.b\": \"model-00001-of-00002.safetensors\","
	    "\"y.a\": \"model-00002-of-00002.safetensors\"}}");
	error_clear(&err);
	CHECK_INT(st_set_open(ix, &set, &err), LQ_FAILED);
	CHECK_STR(err.code, "LQ-ST-024");
	CHECK_STR(err.field, "x.a");
	/* variant files are ignored beside a plain one */
	unlink(ix);
	unlink(s2);
	char *var = xasprintf("%s/model-00001-of-00002.fp16.safetensors", dir);
	write_shard(var, "z", NULL, 0);
	CHECK_INT(st_set_open(dir, &set, &err), LQ_OK);
	if (set) {
		CHECK_INT(st_set_count(set), 2);
		st_set_close(set);
	}
	unlink(var);
	unlink(s1);
	rmdir(dir);
	free(var);
	free(s1);
	free(s2);
	free(ix);
	free(dir);
}

int
main(void)
{
	LQ_ASSERT(mkdtemp(tmpdir) != NULL);
	test_roundtrip();
	test_half();
	test_sharded();
	char *cmd = xasprintf("rm -rf %s", tmpdir);
	(void)!system(cmd);
	free(cmd);
	return test_summary();
}
