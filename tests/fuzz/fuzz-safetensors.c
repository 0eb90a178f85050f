/*
 * fuzz-safetensors.c — libFuzzer target for the safetensors reader.
 *
 * Every input is parsed from memory (an exact-size copy, so a sanitizer sees
 * any read past the end); when it parses, every tensor's data is read and
 * converted, which would touch any span the validation let through wrongly.
 *
 * Built with --enable-fuzzing (clang -fsanitize=fuzzer):
 *   ./tests/fuzz/fuzz-safetensors tests/model/malformed
 * Without LLVM, tests/model/test-st-fuzz-replay compiles this file with
 * LQ_FUZZ_REPLAY and runs the corpus plus deterministic mutations of a valid
 * file through the same entry point in `make check`.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "model/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned char *copy = xmalloc(size ? size : 1);
	if (size)
		memcpy(copy, data, size);
	struct st_file *f = NULL;
	struct lq_error err;
	error_clear(&err);
	if (st_file_open_memory(copy, size, "fuzz", &f, &err) == LQ_OK) {
		double sum = 0;
		for (size_t i = 0; i < st_file_count(f); i++) {
			const struct st_tensor *t = st_file_tensor(f, i);
			LQ_ASSERT(st_file_find(f, t->name) == t);
			LQ_ASSERT((const unsigned char *)t->data >= copy &&
			    (const unsigned char *)t->data + t->nbytes <= copy + size);
			if (t->nbytes > (64u << 20))
				continue;	/* within bounds, but too slow to convert */
			float *v = st_tensor_to_f32(t);
			for (int64_t k = 0; k < st_tensor_numel(t); k++)
				sum += v[k];
			free(v);
		}
		for (size_t i = 0; i < st_file_metadata_count(f); i++)
			LQ_ASSERT(st_file_metadata(f, st_file_metadata_key(f, i)) != NULL);
		(void)sum;
		st_file_close(f);
	} else {
		LQ_ASSERT(f == NULL);
		LQ_ASSERT(err.status == LQ_FAILED && err.code[0] != '\0');
	}
	free(copy);
	return 0;
}
