#!/bin/sh
# tests/render/twostage.sh against a throwaway PostgreSQL server: the
# two-stage job's checkpoints (with their stage, schema 0006) in bytea,
# kills in both stages resuming to byte-identical outputs.
LATENTQ_TEST_DB=postgresql; export LATENTQ_TEST_DB
. "${top_srcdir:-.}/tests/render/twostage.sh"
