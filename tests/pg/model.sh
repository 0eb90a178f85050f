#!/bin/sh
# tests/model/model-cli.sh against a throwaway PostgreSQL server: model add,
# list, show and verify keep their records (models, model_files, the hash
# cache) in the shared queue database.
LATENTQ_TEST_DB=postgresql; export LATENTQ_TEST_DB
. "${top_srcdir:-.}/tests/model/model-cli.sh"
