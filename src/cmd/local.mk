liblatentq_a_SOURCES += \
	src/cmd/cmd.c src/cmd/cmd.h src/cmd/table.c src/cmd/commands.def \
	src/cmd/version.c
