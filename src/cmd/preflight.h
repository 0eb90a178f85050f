/*
 * preflight.h (cmd) — what `preflight` and `submit` share on the command
 * line: the device caps to check against.
 */
#ifndef LQ_CMD_PREFLIGHT_H
#define LQ_CMD_PREFLIGHT_H

#include "cmd/cmd.h"
#include "gpu/caps.h"

/*
 * Fills *out with the device jobs are checked against: the caps file
 * `file` (or $LATENTQ_DEVICE_CAPS) when given, else unless `no_device` the
 * device --device names (an index or a name fragment; the first when none),
 * listed but never opened.  Returns 1 when *out was filled, 0 when there is
 * no device (device checks are then skipped), and minus the exit status
 * (-66 no such file, -65 a bad one) when the file cannot be used (the
 * error is printed).
 */
int cmd_preflight_caps(const struct cmd_globals *g, const char *file,
    int no_device, struct device_caps *out);

#endif
