# Test-wide pieces; each module's tests are listed in its own local.mk.
EXTRA_DIST += tests/test.h tests/cli/common.sh $(CLI_TESTS)
dist_man_MANS += man/latentq.1
CLI_TESTS = tests/cli/man.sh
TESTS += $(CLI_TESTS)
