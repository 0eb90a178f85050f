liblatentq_a_SOURCES += \
	src/render/render.c src/render/render.h
include tests/render/local.mk
