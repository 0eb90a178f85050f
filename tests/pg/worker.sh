#!/bin/sh
# tests/cli/worker.sh against a throwaway PostgreSQL server.
LATENTQ_TEST_DB=postgresql; export LATENTQ_TEST_DB
. "${top_srcdir:-.}/tests/cli/worker.sh"
