# src/model: safetensors, diffusers folders, expected tensors, LoRA, synth.
liblatentq_a_SOURCES += \
	src/model/safetensors.c src/model/safetensors.h

check_PROGRAMS += tests/model/test-safetensors
TESTS += tests/model/test-safetensors
tests_model_test_safetensors_SOURCES = tests/model/test-safetensors.c
tests_model_test_safetensors_LDADD = $(LQ_TEST_LDADD)
