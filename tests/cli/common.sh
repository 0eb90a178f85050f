# common.sh — sourced by every CLI test: a private temp dir and database,
# LC_ALL=C, cleanup on exit, and small assertion helpers that print both
# values.  Tests end with `finish`.
set -u
LC_ALL=C; export LC_ALL
: "${LATENTQ:=${top_builddir:-.}/latentq}"
: "${top_srcdir:=.}"
T=$(mktemp -d /tmp/latentq-test.XXXXXX)
trap 'rm -rf "$T"' EXIT
LATENTQ_DB=$T/queue.db; export LATENTQ_DB
unset XDG_DATA_HOME LATENTQ_DEVICE
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
