#!/bin/sh
# tests/cli/resume.sh against a throwaway PostgreSQL server: the crash and
# resume cases, checkpoints in bytea.
LATENTQ_TEST_DB=postgresql; export LATENTQ_TEST_DB
. "${top_srcdir:-.}/tests/cli/resume.sh"
