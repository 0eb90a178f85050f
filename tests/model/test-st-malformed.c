/*
 * test-st-malformed.c — every file in tests/model/malformed/ (listed with
 * its expected rule in EXPECTED, written by gen.py) must be refused with that
 * error code, naming the file and the tensor; the header-size bound is
 * checked from memory; and a few legal oddities must be accepted.
 */
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "model/safetensors.h"
#include "../test.h"

static void
check_case(const char *dir, const char *name, const char *code, const char *field)
{
	char *path = xasprintf("%s/%s", dir, name);
	struct st_file *f = (struct st_file *)1;
	struct lq_error err;
	error_clear(&err);
	enum lq_status rc = st_file_open(path, &f, &err);
	CHECK_INT(rc, LQ_FAILED);
	CHECK(f == NULL);
	CHECK_STR(err.code, code);
	CHECK_CONTAINS(err.file, name);
	if (strcmp(field, "-") != 0) {
		CHECK_STR(err.field, field);
		CHECK_CONTAINS(err.message, field);
	}
	CHECK(strlen(err.message) > 10);
	char line[1200];
	printf("%-34s %s\n", name, error_format(&err, line, sizeof(line)));
	/* the same bytes from an exact-size heap copy give the same rule */
	size_t n;
	char *buf = util_read_file(path, &n);
	CHECK(buf != NULL);
	unsigned char *exact = xmalloc(n ? n : 1);
	memcpy(exact, buf, n);
	error_clear(&err);
	CHECK_INT(st_file_open_memory(exact, n, name, &f, &err), LQ_FAILED);
	CHECK_STR(err.code, code);
	free(exact);
	free(buf);
	free(path);
}

static struct st_file *
open_mem(const void *buf, size_t n, struct lq_error *err)
{
	struct st_file *f = NULL;
	error_clear(err);
	st_file_open_memory(buf, n, "mem", &f, err);
	return f;
}

static unsigned char *
make(const char *header, const void *data, size_t ndata, size_t *n)
{
	size_t hl = strlen(header);
	*n = 8 + hl + ndata;
	unsigned char *b = xmalloc(*n);
	for (int i = 0; i < 8; i++)
		b[i] = (unsigned char)((uint64_t)hl >> (8 * i));
	memcpy(b + 8, header, hl);
	if (ndata)
		memcpy(b + 8 + hl, data, ndata);
	return b;
}

static void
test_legal(void)
{
	struct lq_error err;
	size_t n;
	float d[4] = {1, 2, 3, 4};
	/* unpadded header (data unaligned), a hole between spans, trailing
	 * spaces, a zero-size tensor sitting inside another's span */
	unsigned char *b = make("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
	    "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]},"
	    "\"z\":{\"dtype\":\"F32\",\"shape\":[0,3],\"data_offsets\":[2,2]}}  ", d, 16, &n);
	struct st_file *f = open_mem(b, n, &err);
	CHECK(f != NULL);
	if (f) {
		float *v = st_tensor_to_f32(st_file_find(f, "b"));
		CHECK_NEAR(v[0], 3, 0);
		CHECK_NEAR(v[1], 4, 0);
		free(v);
		CHECK_INT(st_file_find(f, "z")->nbytes, 0);
		st_file_close(f);
	}
	free(b);
	/* no tensors at all */
	b = make("{}", NULL, 0, &n);
	f = open_mem(b, n, &err);
	CHECK(f != NULL);
	if (f)
		CHECK_INT(st_file_count(f), 0);
	st_file_close(f);
	free(b);
	/* the header bound: a length over ST_HEADER_MAX, all within the file */
	n = 8 + ST_HEADER_MAX + 16;
	b = xcalloc(1, n);
	uint64_t hl = ST_HEADER_MAX + 8;
	for (int i = 0; i < 8; i++)
		b[i] = (unsigned char)(hl >> (8 * i));
	f = open_mem(b, n, &err);
	CHECK(f == NULL);
	CHECK_STR(err.code, "LQ-ST-003");
	CHECK_CONTAINS(err.message, "limit");
	free(b);
	/* a folder and a missing file */
	const char *top = getenv("top_srcdir");
	char *dir = xasprintf("%s/tests/model/malformed", top ? top : ".");
	struct st_file *g = (struct st_file *)1;
	error_clear(&err);
	CHECK_INT(st_file_open(dir, &g, &err), LQ_FAILED);
	CHECK(g == NULL);
	CHECK_STR(err.code, "LQ-ST-001");
	CHECK_CONTAINS(err.message, "not a regular file");
	free(dir);
	error_clear(&err);
	CHECK_INT(st_file_open("/nonexistent/x.safetensors", &g, &err), LQ_FAILED);
	CHECK_CONTAINS(err.message, "No such file");
	CHECK_STR(err.file, "/nonexistent/x.safetensors");
}

int
main(void)
{
	const char *top = getenv("top_srcdir");
	char *dir = xasprintf("%s/tests/model/malformed", top ? top : ".");
	char *list = xasprintf("%s/EXPECTED", dir);
	FILE *fp = fopen(list, "r");
	CHECK(fp != NULL);
	int cases = 0;
	char line[512];
	while (fp && fgets(line, sizeof(line), fp)) {
		char name[200], code[32], field[128];
		if (line[0] == '#' || sscanf(line, "%199s %31s %127s", name, code, field) != 3)
			continue;
		check_case(dir, name, code, field);
		cases++;
	}
	if (fp)
		fclose(fp);
	CHECK(cases >= 25);
	test_legal();
	free(list);
	free(dir);
	return test_summary();
}
