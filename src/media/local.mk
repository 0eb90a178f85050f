# Output files (MP4, PNG, contact sheets) and the checkpoint/artifact part
# of the store.  The store files are listed here, not in src/store/local.mk,
# so the two fragments never edit the same lines.
libmedia_a_SOURCES += \
	src/media/media.h src/media/media-int.h \
	src/media/common.c src/media/video.c src/media/png.c src/media/image.c
libstore_a_SOURCES += src/store/checkpoints.c src/store/checkpoints.h

check_PROGRAMS += tests/media/test-media tests/store/test-checkpoints
TESTS += tests/media/test-media tests/store/test-checkpoints
tests_media_test_media_SOURCES = tests/media/test-media.c
tests_media_test_media_LDADD = $(LQ_TEST_LDADD)
tests_store_test_checkpoints_SOURCES = tests/store/test-checkpoints.c
tests_store_test_checkpoints_LDADD = $(LQ_TEST_LDADD)

EXTRA_PROGRAMS += tests/bench/bench-checkpoint
bench_PROGRAMS_LIST += tests/bench/bench-checkpoint
tests_bench_bench_checkpoint_SOURCES = tests/bench/bench-checkpoint.c
tests_bench_bench_checkpoint_LDADD = $(LQ_TEST_LDADD)

# Bundles (libarchive) and the store records they move (export/import).
libmedia_a_SOURCES += src/media/bundle.c src/media/bundle.h
libstore_a_SOURCES += src/store/transfer.c src/store/transfer.h
TESTS += tests/bundle/bundle.sh
EXTRA_DIST += tests/bundle/bundle.sh tests/bundle/tarhack.py

# Fuzz target for the bundle reader (tests/fuzz/fuzz-bundle.c): libFuzzer
# with --enable-fuzzing; in every build a replay of a written bundle, its
# mutations and the files given, run by `make check`.
check_PROGRAMS += tests/fuzz/fuzz-bundle-replay
TESTS += tests/fuzz/fuzz-bundle-replay
tests_fuzz_fuzz_bundle_replay_SOURCES = tests/fuzz/fuzz-bundle.c
tests_fuzz_fuzz_bundle_replay_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_REPLAY_MAIN
tests_fuzz_fuzz_bundle_replay_LDADD = $(LQ_TEST_LDADD)
if FUZZING
noinst_PROGRAMS += tests/fuzz/fuzz-bundle
tests_fuzz_fuzz_bundle_SOURCES = tests/fuzz/fuzz-bundle.c src/media/bundle.c
tests_fuzz_fuzz_bundle_CFLAGS = $(AM_CFLAGS) $(ARCHIVE_CFLAGS) -fsanitize=fuzzer,address,undefined
tests_fuzz_fuzz_bundle_LDFLAGS = $(AM_LDFLAGS) -fsanitize=fuzzer,address,undefined
tests_fuzz_fuzz_bundle_LDADD = $(LQ_TEST_LDADD)
endif
