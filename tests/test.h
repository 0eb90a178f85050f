/*
 * test.h — a minimal assertion kit for latentq's C tests.
 *
 * Each CHECK prints file:line and both values when it fails and counts the
 * failure; a test program ends with `return test_summary();`, which prints
 * "N checks, N failed" and exits 1 on any failure (Automake's harness reads
 * the exit status: 0 pass, 77 skip, 99 hard error).
 */
#ifndef LQ_TEST_H
#define LQ_TEST_H

#include <math.h>
#include <stdio.h>
#include <string.h>

static int test_checks, test_failed;

#define CHECK(cond) do { \
	test_checks++; \
	if (!(cond)) { \
		test_failed++; \
		fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
	} \
} while (0)

#define CHECK_INT(a, b) do { \
	long long a_ = (long long)(a), b_ = (long long)(b); \
	test_checks++; \
	if (a_ != b_) { \
		test_failed++; \
		fprintf(stderr, "%s:%d: %s == %s failed: %lld != %lld\n", \
		    __FILE__, __LINE__, #a, #b, a_, b_); \
	} \
} while (0)

#define CHECK_STR(a, b) do { \
	const char *a_ = (a), *b_ = (b); \
	test_checks++; \
	if (a_ == NULL || b_ == NULL || strcmp(a_, b_) != 0) { \
		test_failed++; \
		fprintf(stderr, "%s:%d: %s == %s failed: \"%s\" != \"%s\"\n", \
		    __FILE__, __LINE__, #a, #b, a_ ? a_ : "(null)", b_ ? b_ : "(null)"); \
	} \
} while (0)

/* a contains b */
#define CHECK_CONTAINS(a, b) do { \
	const char *a_ = (a), *b_ = (b); \
	test_checks++; \
	if (a_ == NULL || b_ == NULL || strstr(a_, b_) == NULL) { \
		test_failed++; \
		fprintf(stderr, "%s:%d: \"%s\" does not contain \"%s\"\n", \
		    __FILE__, __LINE__, a_ ? a_ : "(null)", b_ ? b_ : "(null)"); \
	} \
} while (0)

#define CHECK_NEAR(a, b, tol) do { \
	double a_ = (double)(a), b_ = (double)(b), t_ = (double)(tol); \
	test_checks++; \
	if (!(fabs(a_ - b_) <= t_)) { \
		test_failed++; \
		fprintf(stderr, "%s:%d: |%s - %s| <= %g failed: %.9g vs %.9g\n", \
		    __FILE__, __LINE__, #a, #b, t_, a_, b_); \
	} \
} while (0)

static inline int
test_summary(void)
{
	printf("%d checks, %d failed\n", test_checks, test_failed);
	return test_failed ? 1 : 0;
}

#endif
