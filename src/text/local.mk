# text: prompt tokenisation (SentencePiece shim), the T5 encoder (src/nn/t5,
# listed here so the nn helper's fragment stays its own) and prompt
# embeddings with the cache hook.
liblatentq_a_SOURCES += \
	src/text/spm.cc src/text/spm.h \
	src/text/tokenizer.c src/text/tokenizer.h \
	src/text/prompt.c src/text/prompt.h \
	src/text/prompt_t5.c src/text/prompt_store.c src/text/prompt_file.c \
	src/nn/t5.c src/nn/t5.h

# Programs that link the SentencePiece shim need the C++ driver.
check_PROGRAMS += tests/text/test-tokenizer tests/text/test-prompt tests/text/test-t5
TESTS += tests/text/test-tokenizer tests/text/test-prompt tests/text/test-t5
tests_text_test_tokenizer_SOURCES = tests/text/test-tokenizer.c
nodist_EXTRA_tests_text_test_tokenizer_SOURCES = dummy.cxx
tests_text_test_tokenizer_LDADD = $(LQ_TEST_LDADD)
tests_text_test_prompt_SOURCES = tests/text/test-prompt.c
nodist_EXTRA_tests_text_test_prompt_SOURCES = dummy.cxx
tests_text_test_prompt_LDADD = $(LQ_TEST_LDADD)

tests_text_test_t5_SOURCES = tests/text/test-t5.c
nodist_EXTRA_tests_text_test_t5_SOURCES = dummy.cxx
tests_text_test_t5_LDADD = $(LQ_TEST_LDADD)

EXTRA_DIST += tests/data/text
