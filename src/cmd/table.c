/* table.c — the command table, generated from commands.def. */
#include <stddef.h>

#include "cmd/cmd.h"

const struct cmd_entry *const cmd_table[] = {
#define CMD(x) &cmd_##x##_entry,
#include "cmd/commands.def"
#undef CMD
	NULL
};
