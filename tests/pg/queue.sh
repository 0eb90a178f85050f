#!/bin/sh
# tests/cli/queue.sh against a throwaway PostgreSQL server.
LATENTQ_TEST_DB=postgresql; export LATENTQ_TEST_DB
. "${top_srcdir:-.}/tests/cli/queue.sh"
