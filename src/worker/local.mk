liblatentq_a_SOURCES += \
	src/worker/supervisor.c src/worker/supervisor.h \
	src/worker/protocol.c src/worker/protocol.h
