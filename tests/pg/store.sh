#!/bin/sh
# tests/store/test-store (the job state machine, leases, the claim race,
# three supervisors of two hosts draining 30 jobs, and a dropped connection
# whose prepared statements are prepared again) against a throwaway
# PostgreSQL server.
LATENTQ_TEST_DB=postgresql; export LATENTQ_TEST_DB
. "${top_srcdir:-.}/tests/cli/common.sh"
for db in states failures lease race drain reconnect; do
	pg_createdb "$db" > /dev/null
done
LATENTQ_TEST_PG=$(pg_url %s); export LATENTQ_TEST_PG
checks=$((checks + 1))
"${top_builddir:-.}/tests/store/test-store" || fail "test-store against PostgreSQL"
finish
