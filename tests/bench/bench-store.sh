#!/bin/sh
# bench-store.sh — tests/bench/bench-store against SQLite (a file in a temp
# folder) and against PostgreSQL (a throwaway server, Unix socket, the
# server's default durability: fsync and synchronous_commit on), side by
# side.  Run by `make bench`.
set -u
: "${top_srcdir:=.}"
BENCH=${BENCH_STORE:-./tests/bench/bench-store}
T=$(mktemp -d /tmp/latentq-bench.XXXXXX)
. "$top_srcdir/tests/cli/pg-server.sh"
PG_OPTS="-c fsync=on -c synchronous_commit=on -c full_page_writes=on"
pg_start
trap 'pg_stop; rm -rf "$T"' EXIT
trap 'exit 1' HUP INT TERM
"$BENCH" "$T/bench.db" || exit 1
"$BENCH" "$(pg_createdb bench)" || exit 1
