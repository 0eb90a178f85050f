/*
 * fuzz-bundle.c — libFuzzer target for the bundle reader: the archive
 * (tar/pax in none, gzip or zstd), the member rules and bundle.json.
 *
 * Each input is read from memory (an exact-size copy) the way `latentq
 * import` reads a file: the head (bundle.json parsed and checked, the
 * signature read), then every member checked and streamed through
 * BLAKE2b, and each compared with the index.  Nothing may crash, leak or
 * trip an assertion; a refusal must carry an LQ-BUNDLE code.
 *
 * Built with --enable-fuzzing (clang -fsanitize=fuzzer):
 *   ./tests/fuzz/fuzz-bundle CORPUS_DIR
 * (seed the corpus with bundles from `latentq export`).  In every build,
 * tests/fuzz/fuzz-bundle-replay compiles this file with FUZZ_REPLAY_MAIN:
 * it writes a valid bundle with the writer and runs it, deterministic
 * mutations of it (byte flips, truncations, splices) and any files named
 * on its command line through the same entry point, in `make check`.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/digest.h"
#include "core/util.h"
#include "media/bundle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int accepted, refused;

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned char *copy = xmalloc(size ? size : 1);
	if (size)
		memcpy(copy, data, size);
	struct lq_error err;
	error_clear(&err);
	struct media_bundle_reader *r = NULL;
	struct media_bundle_index idx;
	memset(&idx, 0, sizeof(idx));
	char *sig = NULL;
	size_t sig_len = 0;
	char d[DIGEST_HEX_SIZE];
	enum lq_status s = media_bundle_open_memory(copy, size, 1 << 20, &r,
	    &err);
	if (s == LQ_OK)
		s = media_bundle_read_head(r, &idx, d, &sig, &sig_len, &err);
	char *buf = xmalloc(4096);
	size_t members = 0;
	while (s == LQ_OK) {
		const char *name;
		int64_t msize;
		int done;
		if ((s = media_bundle_next(r, &name, &msize, &done, &err)) != LQ_OK ||
		    done)
			break;
		LQ_ASSERT(media_bundle_check_name(name) == NULL);
		LQ_ASSERT(msize >= 0 && msize <= (1 << 20));
		const struct media_bundle_file *f = media_bundle_find_member(&idx,
		    name);
		struct digest_state ds;
		digest_begin(&ds);
		size_t got, total = 0;
		while ((s = media_bundle_read(r, buf, 4096, &got, &err)) == LQ_OK &&
		    got > 0) {
			digest_update(&ds, buf, got);
			total += got;
		}
		if (s != LQ_OK)
			break;
		LQ_ASSERT((int64_t)total == msize);
		char hex[DIGEST_HEX_SIZE];
		digest_end(&ds, hex);
		(void)f;
		members++;
	}
	free(buf);
	if (s == LQ_OK) {
		accepted++;
		for (size_t i = 0; i < idx.n_jobs; i++) {
			LQ_ASSERT(idx.jobs[i].name != NULL);
			LQ_ASSERT(idx.jobs[i].config_json != NULL);
		}
	} else {
		refused++;
		LQ_ASSERT(err.status == LQ_FAILED || err.status == LQ_RETRY);
		LQ_ASSERT(strncmp(err.code, "LQ-", 3) == 0);
	}
	free(sig);
	media_bundle_index_clear(&idx);
	media_bundle_close(r);
	free(copy);
	return 0;
}

#ifdef FUZZ_REPLAY_MAIN
#include "../test.h"

static uint64_t rng = 0x2545f4914f6cdd1dull;

static uint64_t
next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* A valid one-job bundle with an output and a checkpoint, as bytes. */
static unsigned char *
valid_bundle(const char *path, size_t *size)
{
	static const char config[] = "{\"name\":\"a\",\"seed\":\"1\"}";
	static const char mp4[] = "not really an mp4, but bytes with a digest";
	static const float latent[6] = {1, 2, 3, 4, 5, 6};
	char cd[DIGEST_HEX_SIZE], md[DIGEST_HEX_SIZE], ld[DIGEST_HEX_SIZE];
	digest_hex(config, strlen(config), cd);
	digest_hex(mp4, strlen(mp4), md);
	digest_hex(latent, sizeof(latent), ld);
	char *src = xasprintf("%s.mp4", path);
	FILE *fp = fopen(src, "wb");
	CHECK(fp != NULL && fwrite(mp4, 1, strlen(mp4), fp) == strlen(mp4));
	fclose(fp);
	struct media_bundle_artifact art = {"mp4", "videos/a.mp4",
	    {"jobs/1/videos/a.mp4", (int64_t)strlen(mp4), md}};
	struct media_bundle_job j = {
		.id = 1, .name = "a", .state = "queued",
		.manifest_path = "/x/m.yaml", .manifest_digest = cd,
		.request_json = "{\"name\":\"a\"}", .line = 3,
		.config_json = config, .config_digest = cd, .max_attempts = 3,
		.step = 2, .total_steps = 4, .created_at = 1,
		.n_artifacts = 1, .artifacts = &art, .has_checkpoint = 1,
		.checkpoint = {.step = 2, .sigma = 0.5, .dtype = "F32", .ndim = 2,
		    .shape = {2, 3}, .config_digest = cd, .model_digest = md,
		    .device_fingerprint = "dev", .file = {"jobs/1/checkpoint-2.latent",
		    sizeof(latent), ld}},
	};
	char *index = media_bundle_format_index(&j, 1);
	struct media_bundle_writer *w;
	struct lq_error err;
	error_clear(&err);
	CHECK(media_bundle_create(path, &w, &err) == LQ_OK);
	CHECK(media_bundle_add_data(w, MEDIA_BUNDLE_INDEX, index, strlen(index),
	    &err) == LQ_OK);
	CHECK(media_bundle_add_file(w, art.file.member, src, art.file.size,
	    md, &err) == LQ_OK);
	CHECK(media_bundle_add_data(w, j.checkpoint.file.member, latent,
	    sizeof(latent), &err) == LQ_OK);
	CHECK(media_bundle_commit(w, &err) == LQ_OK);
	unlink(src);
	free(src);
	free(index);
	char *data = util_read_file(path, size);
	CHECK(data != NULL);
	unlink(path);
	return (unsigned char *)data;
}

int
main(int argc, char **argv)
{
	char tmpl[] = "/tmp/latentq-fuzz-bundle.XXXXXX";
	CHECK(mkdtemp(tmpl) != NULL);
	const char *exts[] = {".tar", ".tar.gz", ".tar.zst"};
	for (size_t e = 0; e < LQ_ARRAY_LEN(exts); e++) {
		char *path = xasprintf("%s/b%s", tmpl, exts[e]);
		size_t n;
		unsigned char *good = valid_bundle(path, &n);
		int before = accepted;
		LLVMFuzzerTestOneInput(good, n);
		CHECK_INT(accepted, before + 1);
		unsigned char *m = xmalloc(n);
		for (int i = 0; i < 400; i++) {
			memcpy(m, good, n);
			size_t len = n;
			switch (next() % 3) {
			case 0:	/* flip a few bytes */
				for (int k = 0; k < 1 + (int)(next() % 4); k++)
					m[next() % n] ^= (unsigned char)(1 + next() % 255);
				break;
			case 1:	/* truncate */
				len = next() % n;
				break;
			default:	/* splice a run of bytes from elsewhere */
				{
					size_t a = next() % n, b = next() % n;
					size_t k = 1 + next() % 64;
					if (a + k > n) k = n - a;
					if (b + k > n) k = n - b;
					memmove(m + a, good + b, k);
				}
			}
			LLVMFuzzerTestOneInput(m, len);
		}
		free(m);
		free(good);
		free(path);
	}
	for (int i = 1; i < argc; i++) {
		size_t n;
		char *data = util_read_file(argv[i], &n);
		CHECK(data != NULL);
		LLVMFuzzerTestOneInput((const uint8_t *)data, n);
		free(data);
	}
	rmdir(tmpl);
	printf("%d accepted, %d refused\n", accepted, refused);
	CHECK(accepted >= 3);
	CHECK(refused > 0);
	return test_summary();
}
#endif
