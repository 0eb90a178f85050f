# Test-wide pieces; each module's tests are listed in its own local.mk.
EXTRA_DIST += tests/test.h tests/cli/common.sh $(CLI_TESTS)
dist_man_MANS += man/latentq.1
CLI_TESTS = tests/cli/man.sh tests/cli/queue.sh
TESTS += $(CLI_TESTS)
EXTRA_DIST += tests/bench/bench-queue.sh
bench_SCRIPTS_LIST += tests/bench/bench-queue.sh
EXTRA_DIST += tests/bench/bench-render.sh
bench_SCRIPTS_LIST += tests/bench/bench-render.sh
