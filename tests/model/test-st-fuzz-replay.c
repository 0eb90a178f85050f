/*
 * test-st-fuzz-replay.c — runs the fuzz target's entry point (compiled from
 * tests/fuzz/fuzz-safetensors.c) over the malformed corpus and over
 * deterministic mutations of a valid file: byte flips, truncations, rewritten
 * header lengths and numbers spliced into the header.  It passes when nothing
 * crashes or trips an assertion, and checks that both accepted and refused
 * inputs occurred (so the mutations exercise both paths).
 */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/util.h"
#include "model/safetensors.h"
#include "../test.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t
next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

int
main(void)
{
	const char *top = getenv("top_srcdir");
	char *dir = xasprintf("%s/tests/model/malformed", top ? top : ".");
	DIR *d = opendir(dir);
	CHECK(d != NULL);
	struct dirent *de;
	int nfiles = 0;
	while (d && (de = readdir(d)) != NULL) {
		if (strstr(de->d_name, ".safetensors") == NULL)
			continue;
		char *p = xasprintf("%s/%s", dir, de->d_name);
		size_t n;
		char *b = util_read_file(p, &n);
		LLVMFuzzerTestOneInput((const uint8_t *)b, n);
		free(b);
		free(p);
		nfiles++;
	}
	if (d)
		closedir(d);
	CHECK(nfiles >= 25);

	/* a valid seed */
	char tmp[] = "/tmp/lq-stfz-XXXXXX";
	LQ_ASSERT(mkdtemp(tmp) != NULL);
	char *path = xasprintf("%s/seed.safetensors", tmp);
	struct st_writer *w = st_writer_new();
	float v[24];
	for (int i = 0; i < 24; i++)
		v[i] = (float)i;
	int64_t s1[2] = {2, 3}, s2[1] = {4}, s3[3] = {1, 2, 2};
	st_writer_add(w, "a.weight", ST_F32, 2, s1, v);
	st_writer_add_f32(w, "b.bias", ST_BF16, 1, s2, v);
	st_writer_add_f32(w, "c", ST_F16, 3, s3, v);
	st_writer_set_metadata(w, "format", "pt");
	struct lq_error err;
	LQ_ASSERT(st_writer_write(w, path, &err) == LQ_OK);
	st_writer_free(w);
	size_t n;
	unsigned char *seed = (unsigned char *)util_read_file(path, &n);
	unlink(path);
	rmdir(tmp);
	free(path);

	int accepted = 0, refused = 0;
	unsigned char *m = xmalloc(n + 64);
	static const char *splice[] = {"-1", "1e300", "18446744073709551616", "0.5",
	    "9223372036854775807", "[]", "{}", "\"", "null", "4294967296"};
	for (int iter = 0; iter < 20000; iter++) {
		size_t len = n;
		memcpy(m, seed, n);
		int kind = (int)(next() % 4);
		if (kind == 0) {
			int flips = 1 + (int)(next() % 4);
			for (int k = 0; k < flips; k++)
				m[next() % len] ^= (unsigned char)(1u << (next() % 8));
		} else if (kind == 1) {
			len = next() % n;
		} else if (kind == 2) {
			uint64_t hl = next() % (n + 16);
			for (int i = 0; i < 8; i++)
				m[i] = (unsigned char)(hl >> (8 * i));
		} else {
			/* overwrite a digit run in the header with another number */
			size_t hl = (size_t)seed[0] | (size_t)seed[1] << 8;
			size_t at = 8 + next() % hl;
			const char *sp = splice[next() % LQ_ARRAY_LEN(splice)];
			size_t sl = strlen(sp);
			if (at + sl <= 8 + hl)
				memcpy(m + at, sp, sl);
		}
		struct st_file *f = NULL;
		error_clear(&err);
		unsigned char *exact = xmalloc(len ? len : 1);
		memcpy(exact, m, len);
		if (st_file_open_memory(exact, len, "mut", &f, &err) == LQ_OK) {
			accepted++;
			st_file_close(f);
		} else {
			refused++;
		}
		free(exact);
		LLVMFuzzerTestOneInput(m, len);
	}
	printf("mutations: %d accepted, %d refused\n", accepted, refused);
	CHECK(accepted > 100);
	CHECK(refused > 100);
	free(m);
	free(seed);
	free(dir);
	return test_summary();
}
