#!/bin/sh
# tty.sh — on a terminal (a pseudo-terminal from script(1)): the render's
# progress line and log lines never share a line, also when the worker
# dies with its progress line open and the supervisor reports it; and
# `status --watch` redraws the queue with its ETA (issue 21).
. "${top_srcdir:-.}/tests/cli/render-common.sh"
LATENTQ_DB=$T/q.db; export LATENTQ_DB
write_manifest "$T/m.yaml" 4 a:1

# no_interleave TYPESCRIPT: every "latentq: " line starts a line, or
# follows the erase of a progress line (\r ESC[K).
no_interleave() {
	checks=$((checks + 1))
	python3 - "$1" <<'EOF' || fail "progress and log lines interleave in $1"
import re, sys
body = open(sys.argv[1], 'rb').read().split(b'\n', 1)[1]	# script's header
bad = [body[max(0, m.start() - 50):m.start() + 30]
       for m in re.finditer(rb'latentq: ', body)
       if m.start() > 0 and body[m.start() - 1:m.start()] != b'\n'
       and body[m.start() - 4:m.start()] != b'\r\x1b[K']
for b in bad:
    print('interleaved:', b)
sys.exit(1 if bad else 0)
EOF
}

cd "$T"
LATENTQ_FAULT='segv@denoise:2#1' script -qec "'$LATENTQ' render m.yaml" \
    "$T/render.ts" > /dev/null 2>&1
expect_eq "$(q "SELECT state || ' ' || attempts FROM jobs")" "done 2" \
    "rendered after the crash"
# the progress line was drawn (carriage returns, no newline) ...
checks=$((checks + 1))
[ "$(grep -ao "$(printf '\r')a  step [0-9]/4" "$T/render.ts" | wc -l)" -ge 2 ] ||
    fail "no progress line on the terminal"
# ... and the fault message, the supervisor's warning and the final
# "wrote" line each start their own line
expect_grep 'fault injection: segv at denoise step 2' "$T/render.ts"
expect_grep 'worker killed by SIGSEGV' "$T/render.ts"
no_interleave "$T/render.ts"

# status --watch on a terminal follows a second job of the same shape
# (its ETA from this queue's history) and ends when the queue drains.
write_manifest "$T/m2.yaml" 4 b:2
expect_status 0 "$LATENTQ" submit "$T/m2.yaml"
script -qec "'$LATENTQ' status --watch --interval 0.3" "$T/watch.ts" \
    > /dev/null 2>&1 &
wpid=$!
sleep 0.5
LATENTQ_FAULT='slow=1@denoise:1' expect_status 0 "$LATENTQ" run
i=0
while kill -0 $wpid 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
checks=$((checks + 1))
kill -0 $wpid 2>/dev/null && { kill $wpid; fail "status --watch did not end with the queue"; }
expect_grep 'queue: job 2 of 2, ETA [0-9]+s' "$T/watch.ts"
expect_grep 'b +running +[0-9]/4' "$T/watch.ts"
finish
