# src/manifest: YAML/JSON manifests -> typed, resolved job configs.
libmanifest_a_SOURCES += \
	src/manifest/tree.c src/manifest/tree.h \
	src/manifest/schema.c src/manifest/schema.h \
	src/manifest/manifest.c src/manifest/manifest.h \
	src/manifest/job.c src/manifest/job.h

check_PROGRAMS += tests/manifest/test-manifest
TESTS += tests/manifest/test-manifest
tests_manifest_test_manifest_SOURCES = tests/manifest/test-manifest.c
tests_manifest_test_manifest_LDADD = $(LQ_TEST_LDADD)
EXTRA_DIST += tests/manifest/good/valid.yaml tests/manifest/good/valid.json

# Data-driven bad manifests: tests/manifest/bad/NAME.yaml beside NAME.expect.
check_PROGRAMS += tests/manifest/test-manifest-bad
TESTS += tests/manifest/test-manifest-bad
tests_manifest_test_manifest_bad_SOURCES = tests/manifest/test-manifest-bad.c
tests_manifest_test_manifest_bad_LDADD = $(LQ_TEST_LDADD)
EXTRA_DIST += tests/manifest/bad

dist_man_MANS += man/latentq-manifest.5
TESTS += tests/manifest/man.sh
EXTRA_DIST += tests/manifest/man.sh

# Fuzz target (tests/fuzz/fuzz-manifest.c): with --enable-fuzzing a libFuzzer
# binary with the manifest sources instrumented; in every build a replay of
# the test manifests through the same entry point, run by `make check`.
check_PROGRAMS += tests/fuzz/fuzz-manifest-replay
TESTS += tests/fuzz/fuzz-manifest-replay
tests_fuzz_fuzz_manifest_replay_SOURCES = tests/fuzz/fuzz-manifest.c
tests_fuzz_fuzz_manifest_replay_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_REPLAY_MAIN
tests_fuzz_fuzz_manifest_replay_LDADD = $(LQ_TEST_LDADD)
if FUZZING
noinst_PROGRAMS += tests/fuzz/fuzz-manifest
tests_fuzz_fuzz_manifest_SOURCES = tests/fuzz/fuzz-manifest.c \
	src/manifest/tree.c src/manifest/schema.c src/manifest/manifest.c
tests_fuzz_fuzz_manifest_CFLAGS = $(AM_CFLAGS) $(YAML_CFLAGS) -fsanitize=fuzzer,address
tests_fuzz_fuzz_manifest_LDFLAGS = $(AM_LDFLAGS) -fsanitize=fuzzer,address
tests_fuzz_fuzz_manifest_LDADD = $(LQ_TEST_LDADD)
endif

EXTRA_PROGRAMS += tests/bench/bench-manifest
bench_PROGRAMS_LIST += tests/bench/bench-manifest
tests_bench_bench_manifest_SOURCES = tests/bench/bench-manifest.c
tests_bench_bench_manifest_LDADD = $(LQ_TEST_LDADD)
CLEANFILES += tests/bench/bench-manifest

check_PROGRAMS += tests/manifest/test-job
TESTS += tests/manifest/test-job
tests_manifest_test_job_SOURCES = tests/manifest/test-job.c
tests_manifest_test_job_LDADD = $(LQ_TEST_LDADD)
