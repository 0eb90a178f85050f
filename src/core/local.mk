liblatentq_a_SOURCES += \
	src/core/embed.c src/core/embed.h \
	src/core/error.c src/core/error.h \
	src/core/log.c src/core/log.h \
	src/core/util.c src/core/util.h \
	src/core/digest.c src/core/digest.h \
	src/core/json.c src/core/json.h \
	src/core/fault.c src/core/fault.h \
	src/core/half.c src/core/half.h \
	src/core/file.c src/core/file.h
# Ed25519 signatures of digests and HMAC-SHA256 (libsodium)
liblatentq_a_SOURCES += src/core/sign.c src/core/sign.h
