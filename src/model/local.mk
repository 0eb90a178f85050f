# src/model: safetensors, diffusers folders, expected tensors, LoRA, synth.
liblatentq_a_SOURCES += \
	src/model/safetensors.c src/model/safetensors.h \
	src/model/diffusers.c src/model/diffusers.h \
	src/model/expected.c src/model/expected.h \
	src/model/lora.c src/model/lora.h \
	src/model/load.c src/model/load.h \
	src/model/ref.c src/model/ref.h

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

# With --enable-fuzzing (clang): the libFuzzer target, the reader compiled
# into it with instrumentation.  Run: tests/fuzz/fuzz-safetensors
# tests/model/malformed (the corpus) -- see the file's comment.
if FUZZING
noinst_PROGRAMS += tests/fuzz/fuzz-safetensors
tests_fuzz_fuzz_safetensors_SOURCES = tests/fuzz/fuzz-safetensors.c src/model/safetensors.c
tests_fuzz_fuzz_safetensors_CFLAGS = $(AM_CFLAGS) -fsanitize=fuzzer,address,undefined
tests_fuzz_fuzz_safetensors_LDFLAGS = $(AM_LDFLAGS) -fsanitize=fuzzer,address,undefined
tests_fuzz_fuzz_safetensors_LDADD = $(LQ_TEST_LDADD)
endif

check_PROGRAMS += tests/model/test-diffusers
TESTS += tests/model/test-diffusers
tests_model_test_diffusers_SOURCES = tests/model/test-diffusers.c
tests_model_test_diffusers_LDADD = $(LQ_TEST_LDADD)
EXTRA_DIST += tests/data/model

check_PROGRAMS += tests/model/test-expected
TESTS += tests/model/test-expected
tests_model_test_expected_SOURCES = tests/model/test-expected.c
tests_model_test_expected_LDADD = $(LQ_TEST_LDADD)

check_PROGRAMS += tests/model/test-lora
TESTS += tests/model/test-lora
tests_model_test_lora_SOURCES = tests/model/test-lora.c
tests_model_test_lora_LDADD = $(LQ_TEST_LDADD)

# Store functions for the models / model_files / file_hashes tables (SQL
# stays in src/store/; listed here so src/store/local.mk stays the lead's).
libstore_a_SOURCES += src/store/models.c src/store/models.h
liblatentq_a_SOURCES += src/model/hash.c src/model/hash.h

check_PROGRAMS += tests/model/test-model-hash
TESTS += tests/model/test-model-hash
tests_model_test_model_hash_SOURCES = tests/model/test-model-hash.c
tests_model_test_model_hash_LDADD = $(LQ_TEST_LDADD)

# `model synth`: the tokenizer's SentencePiece model is compiled in
# (reproduce it with tools/spm/make-spiece.sh).
liblatentq_a_SOURCES += src/model/synth.c src/model/synth.h
nodist_liblatentq_a_SOURCES += src/model/model-embed.gen.c
BUILT_SOURCES += src/model/model-embed.gen.c
CLEANFILES += src/model/model-embed.gen.c
EXTRA_DIST += src/model/spiece.model tools/spm/corpus.txt tools/spm/make-spiece.sh
src/model/model-embed.gen.c: $(srcdir)/src/model/spiece.model embed$(EXEEXT)
	$(AM_V_GEN)./embed$(EXEEXT) $@ model_embedded spiece.model=$(srcdir)/src/model/spiece.model

# `latentq model ...` (the command table entry is in src/cmd/commands.def)
liblatentq_a_SOURCES += src/cmd/model.c

TESTS += tests/model/model-cli.sh
EXTRA_DIST += tests/model/model-cli.sh

check_PROGRAMS += tests/model/test-synth
TESTS += tests/model/test-synth
tests_model_test_synth_SOURCES = tests/model/test-synth.c
tests_model_test_synth_LDADD = $(LQ_TEST_LDADD)

# One model identity across model list, the job's pin, the MP4 and
# model_digest: (src/model/ref.h).
TESTS += tests/model/identity.sh
EXTRA_DIST += tests/model/identity.sh
