#!/bin/sh
# tests/cli/fence.sh against a throwaway PostgreSQL server: a worker dies
# with its supervisor, and a worker whose lease was lost (taken over by
# another claim) writes nothing more - the fence's row lock (FOR UPDATE).
LATENTQ_TEST_DB=postgresql; export LATENTQ_TEST_DB
. "${top_srcdir:-.}/tests/cli/fence.sh"
