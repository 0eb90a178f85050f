liblatentq_a_SOURCES += \
	src/cmd/cmd.c src/cmd/cmd.h src/cmd/table.c src/cmd/commands.def \
	src/cmd/submit.c src/cmd/submit.h \
	src/cmd/status.c src/cmd/list.c src/cmd/show.c src/cmd/cancel.c \
	src/cmd/version.c src/cmd/run.c src/cmd/render.c src/cmd/exec-job.c
liblatentq_a_SOURCES += src/cmd/export.c src/cmd/import.c src/cmd/key.c \
	src/cmd/verify.c
