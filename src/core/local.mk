libcore_a_SOURCES += \
	src/core/embed.c src/core/embed.h \
	src/core/error.c src/core/error.h \
	src/core/codes.c src/core/codes.h src/core/codes.def \
	src/core/log.c src/core/log.h \
	src/core/util.c src/core/util.h \
	src/core/digest.c src/core/digest.h \
	src/core/json.c src/core/json.h \
	src/core/fault.c src/core/fault.h \
	src/core/half.c src/core/half.h \
	src/core/file.c src/core/file.h \
	src/core/exit.c src/core/exit.h src/core/exit.def
# Ed25519 signatures of digests and HMAC-SHA256 (libsodium)
libcore_a_SOURCES += src/core/sign.c src/core/sign.h

# The error-code table: every code in src/ has a row, every row its man page.
check_PROGRAMS += tests/core/test-codes
TESTS += tests/core/test-codes
tests_core_test_codes_SOURCES = tests/core/test-codes.c
tests_core_test_codes_LDADD = $(LQ_TEST_LDADD)
# The text helpers messages go through (UTF-8 cuts, quoted values).
check_PROGRAMS += tests/core/test-util
TESTS += tests/core/test-util
tests_core_test_util_SOURCES = tests/core/test-util.c
tests_core_test_util_LDADD = $(LQ_TEST_LDADD)
