#!/bin/sh
# The supervisor: crash isolation, retries that resume, poisoning, a killed
# supervisor, two supervisors on one queue, SIGTERM.
. "${top_srcdir:-.}/tests/cli/render-common.sh"
STEPS=3

# Three jobs; the second segfaults after step 2 on its first attempt.
write_manifest "$T/m.yaml" $STEPS a:1 b:2 c:3
expect_status 0 "$LATENTQ" submit "$T/m.yaml"
LATENTQ_FAULT="b/segv@denoise:2#1" expect_status 0 "$LATENTQ" run --once
expect_eq "$(q "SELECT group_concat(name || '=' || state, ' ') FROM (SELECT name, state FROM jobs ORDER BY id) j")" "a=done b=done c=done" "all three done"
expect_eq "$(q "SELECT attempts FROM jobs WHERE name = 'b'")" 2 "b took two attempts"
expect_eq "$(q "SELECT detail FROM events e JOIN jobs j ON j.id = e.job_id WHERE j.name = 'b' AND kind = 'resumed'")" '{"step":2}' "b resumed from its checkpoint"
crash=$(q "SELECT detail FROM events e JOIN jobs j ON j.id = e.job_id WHERE j.name = 'b' AND kind = 'crashed'")
echo "$crash" > "$T/crash"
expect_grep '"signal_name":"SEGV"' "$T/crash"
expect_grep '"phase":"denoise"' "$T/crash"
expect_grep '"step":2' "$T/crash"
expect_grep 'fault injection: segv' "$T/crash"
expect_status 0 "$LATENTQ" show b
expect_grep 'crashed' "$T/out"
expect_grep 'resumed' "$T/out"

# A job that always crashes ends poisoned after max_attempts; the others
# still finish, and run exits 1.
fresh_queue
write_manifest "$T/m2.yaml" $STEPS x:1 bad:2 y:3
sed -i 's/^  - name: bad$/  - name: bad\n    max_attempts: 2/' "$T/m2.yaml"
"$LATENTQ" submit "$T/m2.yaml" > /dev/null
LATENTQ_FAULT="bad/abort@load" expect_status 1 "$LATENTQ" run --once
expect_eq "$(q "SELECT state FROM jobs WHERE name = 'bad'")" poisoned "bad poisoned"
expect_eq "$(q "SELECT attempts FROM jobs WHERE name = 'bad'")" 2 "bad used its 2 attempts"
expect_eq "$(q "SELECT group_concat(state, ' ') FROM jobs WHERE name != 'bad'")" "done done" "others done"
expect_status 0 "$LATENTQ" status
expect_grep 'bad +poisoned .*SIGABRT in phase load' "$T/out"

# A --device that matches nothing is a host fault: the supervisor stops
# with 69 (EX_UNAVAILABLE) without spending the job's attempt or poisoning it.
fresh_queue
write_manifest "$T/m6.yaml" 2 dev:1
"$LATENTQ" submit "$T/m6.yaml" > /dev/null
expect_status 69 "$LATENTQ" --device no-such-gpu run --once
expect_grep 'no Vulkan device matches "no-such-gpu"' "$T/err"
expect_eq "$(q "SELECT state || ' ' || attempts FROM jobs")" "queued 0" "job untouched"

# SIGKILL of the supervisor mid-job: a new supervisor finishes the job,
# resuming from its checkpoint.  (Step 3 lingers 5 s, a slow fault, so
# the kill lands mid-job however fast the steps are.)
fresh_queue
write_manifest "$T/m3.yaml" 6 k:5
"$LATENTQ" submit "$T/m3.yaml" > /dev/null
LATENTQ_FAULT="slow=5@denoise:3" setsid "$LATENTQ" -q run --once \
    > /dev/null 2>&1 &
pid=$!
i=0
while [ $i -lt 3000 ]; do	# 5 min: the loop ends at the step; loaded machines are slow
	st=$(q "SELECT step FROM jobs" 2>/dev/null)
	[ -n "$st" ] && [ "$st" -ge 2 ] && break
	sleep 0.1; i=$((i + 1))
done
kill_group $pid
wait $pid 2>/dev/null
expect_eq "$(q "SELECT state FROM jobs")" running "left running"
expect_status 0 "$LATENTQ" run --once
expect_eq "$(q "SELECT state FROM jobs")" done "finished by a new supervisor"
checks=$((checks + 1))
[ "$(q "SELECT count(*) FROM events WHERE kind = 'resumed'")" -eq 1 ] || fail "not resumed"

# Two supervisors on one queue never render the same job twice.
fresh_queue
write_manifest "$T/m4.yaml" 2 p:1 q:2 r:3 s:4
"$LATENTQ" submit "$T/m4.yaml" > /dev/null
"$LATENTQ" -q run --once > "$T/s1" 2>&1 &
p1=$!
"$LATENTQ" -q run --once > "$T/s2" 2>&1 &
p2=$!
wait $p1; r1=$?
wait $p2; r2=$?
expect_eq "$r1$r2" 00 "both supervisors exit 0"
expect_eq "$(q "SELECT count(*) FROM jobs WHERE state = 'done'")" 4 "all done"
expect_eq "$(q "SELECT count(*) FROM events WHERE kind = 'claimed'")" 4 "each job claimed once"
expect_eq "$(q "SELECT count(*) FROM events WHERE kind = 'phase' AND detail LIKE '%load%'")" 4 "each job loaded once"

# SIGTERM: the job checkpoints and stops, resumable; run exits 75; the
# attempt is counted, not as a failure.  (Step 2 lingers 5 s, a slow
# fault that sleeps through the signal as a long kernel would, so the
# SIGTERM lands mid-job however fast the steps are.)
fresh_queue
write_manifest "$T/m5.yaml" 8 t:9
"$LATENTQ" submit "$T/m5.yaml" > /dev/null
LATENTQ_FAULT="slow=5@denoise:2" "$LATENTQ" -q run --once > /dev/null \
    2>"$T/term.err" &
pid=$!
i=0
while [ $i -lt 3000 ]; do	# 5 min: the loop ends at the step; loaded machines are slow
	st=$(q "SELECT step FROM jobs" 2>/dev/null)
	[ -n "$st" ] && [ "$st" -ge 1 ] && break
	sleep 0.1; i=$((i + 1))
done
kill -TERM $pid
wait $pid
expect_eq $? 75 "run exits 75 after SIGTERM"
expect_eq "$(q "SELECT state || ' ' || attempts || ' ' || failures FROM jobs")" "queued 1 0" "queued again, no failure counted"
step=$(q "SELECT max(step) FROM checkpoints")
checks=$((checks + 1)); [ -n "$step" ] && [ "$step" -ge 1 ] || fail "no checkpoint after SIGTERM"
expect_status 0 "$LATENTQ" run --once
expect_eq "$(q "SELECT detail FROM events WHERE kind = 'resumed'")" "{\"step\":$step}" "resumed where SIGTERM stopped it"
finish
