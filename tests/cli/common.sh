# common.sh — sourced by every CLI test: a private temp dir and database,
# LC_ALL=C, cleanup on exit, and small assertion helpers that print both
# values.  Tests end with `finish`.
set -u
LC_ALL=C; export LC_ALL
: "${LATENTQ:=${top_builddir:-.}/latentq}"
: "${top_srcdir:=.}"
T=$(mktemp -d /tmp/latentq-test.XXXXXX)
trap 'rm -rf "$T"' EXIT
unset XDG_DATA_HOME LATENTQ_DEVICE LATENTQ_HOST
# LATENTQ_TEST_DB=postgresql runs the test against a throwaway PostgreSQL
# server (tests/cli/pg-server.sh) instead of SQLite files: LATENTQ_DB and
# every new_db are databases there, and db_sql queries them with psql.
: "${LATENTQ_TEST_DB:=sqlite}"
if [ "$LATENTQ_TEST_DB" = postgresql ]; then
	. "$top_srcdir/tests/cli/pg-server.sh"
	pg_start
	trap 'pg_stop; rm -rf "$T"' EXIT
	trap 'exit 1' HUP INT TERM	# the server is stopped on a kill too
	LATENTQ_DB=$(pg_createdb queue)
else
	LATENTQ_DB=$T/queue.db
fi
export LATENTQ_DB

# kill_group PID : SIGKILL the process group PID leads (a command started
# with setsid), the supervisor and its workers at once.  Written so that
# every /bin/sh takes it: dash's kill accepts no "--", and reads the -PID
# of "kill -s KILL -PID" as an option.
kill_group() { kill -KILL "-$1"; }

# new_db NAME : prints the -d value of a new, empty queue database.
new_db() {
	if [ "$LATENTQ_TEST_DB" = postgresql ]; then
		pg_createdb "$1"
	else
		echo "$T/$1.db"
	fi
}

# fresh_queue : LATENTQ_DB becomes a new, empty queue database.
fresh_queue() {
	fresh_n=$(( ${fresh_n:-0} + 1 ))
	if [ "$LATENTQ_TEST_DB" = postgresql ]; then
		LATENTQ_DB=$(new_db "queue$fresh_n")
	else
		rm -f "$LATENTQ_DB"*
	fi
}

# db_sql DB SQL : runs SQL on the queue database DB (sqlite3 or psql).
db_sql() {
	if [ "$LATENTQ_TEST_DB" = postgresql ]; then
		pg_sql "$1" "$2"
	else
		# wait for a render's write transaction rather than fail with
		# "database is locked" (SQLITE_BUSY) while a worker commits
		sqlite3 -cmd '.timeout 10000' "$1" "$2"
	fi
}
failures=0
checks=0

fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

# expect_status WANT CMD... : run CMD, compare its exit status.
expect_status() {
	want=$1; shift
	checks=$((checks + 1))
	"$@" >"$T/out" 2>"$T/err"
	got=$?
	if [ "$got" != "$want" ]; then
		fail "'$*' exited $got, expected $want"
		sed 's/^/  stdout: /' "$T/out" >&2
		sed 's/^/  stderr: /' "$T/err" >&2
	fi
}

# expect_grep PATTERN FILE : FILE contains PATTERN (grep -E).
expect_grep() {
	checks=$((checks + 1))
	if ! grep -Eq -- "$1" "$2"; then
		fail "$2 does not match '$1'"
		sed 's/^/  | /' "$2" >&2
	fi
}

expect_no_grep() {
	checks=$((checks + 1))
	if grep -Eq -- "$1" "$2"; then
		fail "$2 unexpectedly matches '$1'"
		sed 's/^/  | /' "$2" >&2
	fi
}

# expect_eq GOT WANT MESSAGE
expect_eq() {
	checks=$((checks + 1))
	[ "$1" = "$2" ] || fail "$3: got '$1', expected '$2'"
}

finish() {
	echo "$checks checks, $failures failed"
	[ "$failures" -eq 0 ]
	exit $?
}
