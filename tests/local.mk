# Test-wide pieces; each module's tests are listed in its own local.mk.
EXTRA_DIST += tests/test.h tests/cli/common.sh
