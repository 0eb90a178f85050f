/*
 * pull.h — `latentq model pull` (src/cmd/pull.c), a verb of `latentq model`.
 * argv[0] is "pull"; returns an exit status as cmd.h lists them.
 */
#ifndef LQ_CMD_PULL_H
#define LQ_CMD_PULL_H

#include "cmd/cmd.h"

int cmd_model_pull(const struct cmd_globals *g, int argc, char **argv);

#endif
