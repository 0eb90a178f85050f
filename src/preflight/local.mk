# src/preflight: every check a job passes before anything is compiled or loaded.
liblatentq_a_SOURCES += \
	src/preflight/preflight.h src/preflight/preflight-int.h \
	src/preflight/preflight.c src/preflight/checks.c \
	src/preflight/model.c src/preflight/codes.c \
	src/cmd/preflight.c

dist_man_MANS += man/latentq-preflight.7
