/* version.c — `latentq version`: print the version and linked libraries. */
#include <getopt.h>
#include <stdio.h>

#include "config.h"
#include "cmd/cmd.h"

static int
cmd_version_exec(const struct cmd_globals *g, int argc, char **argv)
{
	(void)g;
	if (argc != 1)
		return cmd_misuse(&cmd_version_entry, "version takes no arguments");
	printf("latentq %s\n", PACKAGE_VERSION);
	return 0;
}

const struct cmd_entry cmd_version_entry = {
	.name = "version",
	.usage = "",
	.summary = "print the version",
	.exec = cmd_version_exec,
};
