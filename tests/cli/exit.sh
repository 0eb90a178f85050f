#!/bin/sh
# Every exit status of the table in src/core/exit.def (and latentq(1) EXIT
# STATUS), each produced where the table says; read-only commands never
# create a database.
. "${top_srcdir:-.}/tests/cli/render-common.sh"
tested=""
# status WANT CMD... : expect_status, remembering WANT as tested.
status() { tested="$tested $1"; expect_status "$@"; }

write_manifest "$T/m.yaml" 2 a:1

# 0 success
status 0 "$LATENTQ" submit "$T/m.yaml"
status 0 "$LATENTQ" status

# 64 usage
status 64 "$LATENTQ" frobnicate
status 64 "$LATENTQ" submit
expect_grep '^usage: latentq submit' "$T/err"
status 64 "$LATENTQ" status --interval 0

# 65 bad input: a manifest that does not parse; a transition a job's
# state does not allow
printf 'jobs:\n  - name: x\n    height: [1\n' > "$T/bad.yaml"
status 65 "$LATENTQ" submit "$T/bad.yaml"
expect_grep 'bad.yaml:[0-9]+:[0-9]+:' "$T/err"
status 0 "$LATENTQ" cancel a
status 65 "$LATENTQ" cancel a
expect_grep 'it is cancelled' "$T/err"
status 0 "$LATENTQ" retry a

# 66 no input: a manifest, a job, a database that does not exist; the
# read-only commands create nothing
status 66 "$LATENTQ" submit "$T/absent.yaml"
expect_grep 'absent.yaml: cannot read the manifest' "$T/err"
status 66 "$LATENTQ" render "$T/absent.yaml"
status 66 "$LATENTQ" show nosuchjob
expect_grep 'no job nosuchjob' "$T/err"
for c in status list "show 1"; do
	status 66 "$LATENTQ" -d "$T/nodir/q.db" $c
	expect_grep "no queue database at $T/nodir/q.db" "$T/err"
done
checks=$((checks + 1)); [ ! -e "$T/nodir" ] || fail "a read-only command created $T/nodir"

# 69 this host cannot render: the job is given back untouched
VK_ICD_FILENAMES=/nonexistent status 69 "$LATENTQ" run
expect_eq "$(q "SELECT state || ' ' || attempts || ' ' || failures FROM jobs WHERE name = 'a'")" "queued 0 0" "given back untouched"

# 70 internal error: host memory exhausted (a 15 MiB manifest, under the
# 16 MiB manifest limit, parsed under a 250 MB address-space limit)
awk 'BEGIN { print "jobs:"; for (i = 0; i < 140000; i++)
	printf "  - {name: j%d, prompt: \"a red circle on a blue background\", model: m, height: 64, width: 64, num_frames: 9}\n", i }' > "$T/huge.yaml"
# AddressSanitizer reserves terabytes of shadow address space, so a
# sanitizer build cannot run under ulimit -v: there the allocation fails by
# ASan's own limit on one allocation (the manifest's 16 MiB buffer), and its
# warning about it goes to this stderr, not to san-reports/.
if grep -qa __asan_init "$LATENTQ" 2>/dev/null; then
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}allocator_may_return_null=1:max_allocation_size_mb=8:log_path=stderr" \
	    "$LATENTQ" preflight --no-device "$T/huge.yaml" > "$T/out" 2> "$T/err"
else
	(ulimit -v 250000; exec "$LATENTQ" preflight --no-device "$T/huge.yaml") > "$T/out" 2> "$T/err"
fi
rc=$?; tested="$tested 70"
expect_eq $rc 70 "out of host memory"
expect_grep 'out of host memory allocating' "$T/err"
rm -f "$T/huge.yaml"

# 73 an output file named on the command line cannot be created: a key
# that exists is never overwritten
XDG_CONFIG_HOME=$T/config; export XDG_CONFIG_HOME
status 0 "$LATENTQ" key generate
status 73 "$LATENTQ" key generate
expect_grep 'default.key: File exists.*\[LQ-SIGN-002\]' "$T/err"

# 74 the queue database cannot be read
printf 'this is not an SQLite database, only sixty-some bytes of text\n' > "$T/junk.db"
status 74 "$LATENTQ" -d "$T/junk.db" status
expect_grep 'junk.db' "$T/err"

# 75 interrupted: SIGTERM to a waiting worker
"$LATENTQ" -d "$T/empty.db" run --follow > /dev/null 2>&1 &
pid=$!
# Signal it once it catches SIGTERM (bit 15 of /proc's SigCgt), not after
# a fixed second: a slow start (a sanitizer build, a loaded host) would
# meet the default action and die by the signal instead of exiting 75.
i=0
while [ $i -lt 600 ]; do
	m=$(sed -n 's/^SigCgt:[[:space:]]*//p' "/proc/$pid/status" 2>/dev/null)
	[ -n "$m" ] && [ $((0x${m#"${m%????}"} & 0x4000)) -ne 0 ] && break
	sleep 0.1; i=$((i + 1))
done
kill -TERM $pid
wait $pid
rc=$?; tested="$tested 75"
expect_eq $rc 75 "run --follow after SIGTERM"

# 1 where no other status fits: a job poisoned by its crashes
rm -f "$LATENTQ_DB"*
write_manifest "$T/c.yaml" 2 crash:1
sed -i 's/^  - name: crash$/  - name: crash\n    max_attempts: 1/' "$T/c.yaml"
LATENTQ_FAULT="abort@load" status 1 "$LATENTQ" render "$T/c.yaml"
expect_eq "$(q "SELECT state FROM jobs")" poisoned "crash poisoned"

# every status of the table was tested above, and latentq(1) lists it
for v in $(sed -n 's/^EXIT([A-Z]*, *\([0-9]*\),.*/\1/p' "$top_srcdir/src/core/exit.def"); do
	checks=$((checks + 1))
	case " $tested " in *" $v "*) ;; *) fail "exit status $v is not tested" ;; esac
	checks=$((checks + 1))
	sed -n '/^\.Sh EXIT STATUS/,/^\.Sh ENVIRONMENT/p' "$top_srcdir/man/latentq.1" |
	    grep -q "^\.It $v\$" || fail "latentq(1) EXIT STATUS lacks $v"
done
finish
