#!/bin/sh
# tests/cli/fleet.sh against a throwaway PostgreSQL server: three
# supervisors on two hosts drain 30 jobs through FOR UPDATE SKIP LOCKED.
# (tests/pg/store.sh drains 30 jobs the same way through the store alone.)
LATENTQ_TEST_DB=postgresql; export LATENTQ_TEST_DB
NJOBS=30
. "${top_srcdir:-.}/tests/cli/fleet.sh"
