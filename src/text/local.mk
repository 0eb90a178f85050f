# text: prompt tokenisation (SentencePiece shim) and prompt embeddings.
liblatentq_a_SOURCES += \
	src/text/spm.cc src/text/spm.h \
	src/text/tokenizer.c src/text/tokenizer.h \
	src/nn/t5.c src/nn/t5.h

check_PROGRAMS += tests/text/test-tokenizer
TESTS += tests/text/test-tokenizer
tests_text_test_tokenizer_SOURCES = tests/text/test-tokenizer.c
nodist_EXTRA_tests_text_test_tokenizer_SOURCES = dummy.cxx
tests_text_test_tokenizer_LDADD = $(LQ_TEST_LDADD)

EXTRA_DIST += tests/data/text
