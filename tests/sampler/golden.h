/*
 * golden.h — loading the sampler's golden tensors (tests/data/sampler) for
 * the tests in this directory.  Each loader aborts the test with a message
 * (exit 99, a hard error) when a file or tensor the test needs is missing:
 * a missing golden must never pass as a skipped check.
 */
#ifndef LQ_TEST_SAMPLER_GOLDEN_H
#define LQ_TEST_SAMPLER_GOLDEN_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "model/safetensors.h"

/* Path of a data file: $top_srcdir/tests/data/sampler/<rel> (caller frees). */
static inline char *
golden_path(const char *rel)
{
	const char *top = getenv("top_srcdir");

	return xasprintf("%s/tests/data/sampler/%s", top ? top : ".", rel);
}

static inline struct st_file *
golden_open(const char *rel)
{
	struct lq_error err;
	struct st_file *f;
	char *path = golden_path(rel);

	error_clear(&err);
	if (st_file_open(path, &f, &err) != LQ_OK) {
		error_print(&err, stderr);
		exit(99);
	}
	free(path);
	return f;
}

static inline const struct st_tensor *
golden_tensor(const struct st_file *f, const char *name, enum st_dtype dtype)
{
	const struct st_tensor *t = st_file_find(f, name);

	if (t == NULL || t->dtype != dtype) {
		fprintf(stderr, "golden tensor %s missing or not %s\n", name,
		    st_dtype_name(dtype));
		exit(99);
	}
	return t;
}

/* float32 copy of an F32 tensor (caller frees); *n gets the count. */
static inline float *
golden_f32(const struct st_file *f, const char *name, size_t *n)
{
	const struct st_tensor *t = golden_tensor(f, name, ST_F32);
	float *v = xmalloc(t->nbytes ? t->nbytes : 1);

	memcpy(v, t->data, t->nbytes);
	if (n != NULL)
		*n = t->nbytes / sizeof(float);
	return v;
}

static inline double *
golden_f64(const struct st_file *f, const char *name, size_t *n)
{
	const struct st_tensor *t = golden_tensor(f, name, ST_F64);
	double *v = xmalloc(t->nbytes ? t->nbytes : 1);

	memcpy(v, t->data, t->nbytes);
	if (n != NULL)
		*n = t->nbytes / sizeof(double);
	return v;
}

/* Bitwise equality of two floats (+0 and -0 differ, NaN never equal). */
static inline int
golden_same_f32(float a, float b)
{
	uint32_t x, y;

	memcpy(&x, &a, 4);
	memcpy(&y, &b, 4);
	return x == y;
}

/* max |a - b| over n values. */
static inline double
golden_max_abs(const float *a, const float *b, size_t n)
{
	double m = 0.0, d;
	size_t i;

	for (i = 0; i < n; i++) {
		d = fabs((double)a[i] - (double)b[i]);
		if (!(d <= m))
			m = d;
	}
	return m;
}

#endif
