/*
 * key.c — `latentq key generate [NAME]`: an Ed25519 key pair for signing
 * bundles (core/sign.h says where it lives and in what form).
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "core/sign.h"

static int
cmd_key_exec(const struct cmd_globals *g, int argc, char **argv)
{
	int ch;
	while ((ch = getopt_long(argc, argv, "", NULL, NULL)) != -1)
		return cmd_misuse(&cmd_key_entry, NULL);
	if (optind >= argc)
		return cmd_misuse(&cmd_key_entry, "key needs a command: generate");
	if (strcmp(argv[optind], "generate") != 0)
		return cmd_misuse(&cmd_key_entry, "unknown key command %s; the "
		    "one there is: generate", argv[optind]);
	if (argc - optind > 2)
		return cmd_misuse(&cmd_key_entry, "key generate takes at most one "
		    "NAME");
	const char *name = argc - optind == 2 ? argv[optind + 1] :
	    SIGN_DEFAULT_NAME;
	struct lq_error err;
	error_clear(&err);
	char *pub = NULL;
	if (sign_generate_key(name, &pub, &err) != LQ_OK) {
		error_print(&err, stderr);
		return cmd_exit_for_error(&err);
	}
	if (g->verbose >= 0) {
		struct sign_key k;
		if (sign_load_key(name, 0, &k, &err) == LQ_OK)
			printf("key %s: public key %s (%s)\n", name, k.public_hex, pub);
		sign_key_clear(&k);
	}
	free(pub);
	return 0;
}

const struct cmd_entry cmd_key_entry = {
	.name = "key",
	.usage = "generate [NAME]",
	.summary = "create an Ed25519 key pair for signing bundles",
	.exec = cmd_key_exec,
};
