# src/preflight: every check a job passes before anything is compiled or loaded.
liblatentq_a_SOURCES += \
	src/preflight/preflight.h src/preflight/preflight-int.h \
	src/preflight/preflight.c src/preflight/checks.c \
	src/preflight/model.c src/preflight/codes.c \
	src/cmd/preflight.c src/cmd/preflight.h

dist_man_MANS += man/latentq-preflight.7

check_PROGRAMS += tests/preflight/test-preflight
TESTS += tests/preflight/test-preflight
tests_preflight_test_preflight_SOURCES = tests/preflight/test-preflight.c \
	tests/preflight/gen-models.c tests/preflight/gen-models.h
nodist_EXTRA_tests_preflight_test_preflight_SOURCES = dummy.cxx
tests_preflight_test_preflight_LDADD = $(LQ_TEST_LDADD)
EXTRA_DIST += tests/preflight/cases tests/preflight/caps
TESTS += tests/preflight/cli.sh tests/preflight/plan.sh
EXTRA_DIST += tests/preflight/cli.sh tests/preflight/plan.sh

EXTRA_PROGRAMS += tests/bench/bench-preflight
bench_PROGRAMS_LIST += tests/bench/bench-preflight
tests_bench_bench_preflight_SOURCES = tests/bench/bench-preflight.c \
	tests/preflight/gen-models.c tests/preflight/gen-models.h
nodist_EXTRA_tests_bench_bench_preflight_SOURCES = dummy.cxx
tests_bench_bench_preflight_LDADD = $(LQ_TEST_LDADD)
