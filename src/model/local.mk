# src/model: safetensors, diffusers folders, expected tensors, LoRA, synth.
liblatentq_a_SOURCES += \
	src/model/safetensors.c src/model/safetensors.h

check_PROGRAMS += tests/model/test-safetensors
TESTS += tests/model/test-safetensors
tests_model_test_safetensors_SOURCES = tests/model/test-safetensors.c
tests_model_test_safetensors_LDADD = $(LQ_TEST_LDADD)

check_PROGRAMS += tests/model/test-st-malformed tests/model/test-st-fuzz-replay
TESTS += tests/model/test-st-malformed tests/model/test-st-fuzz-replay
tests_model_test_st_malformed_SOURCES = tests/model/test-st-malformed.c
tests_model_test_st_malformed_LDADD = $(LQ_TEST_LDADD)
tests_model_test_st_fuzz_replay_SOURCES = tests/model/test-st-fuzz-replay.c \
	tests/fuzz/fuzz-safetensors.c
tests_model_test_st_fuzz_replay_LDADD = $(LQ_TEST_LDADD)
EXTRA_DIST += tests/model/malformed

if FUZZING
noinst_PROGRAMS += tests/fuzz/fuzz-safetensors
tests_fuzz_fuzz_safetensors_SOURCES = tests/fuzz/fuzz-safetensors.c
tests_fuzz_fuzz_safetensors_CFLAGS = $(AM_CFLAGS) -fsanitize=fuzzer
tests_fuzz_fuzz_safetensors_LDFLAGS = -fsanitize=fuzzer
tests_fuzz_fuzz_safetensors_LDADD = $(LQ_TEST_LDADD)
endif
