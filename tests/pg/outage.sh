#!/bin/sh
# A network drop, simulated by stopping the PostgreSQL server for a few
# seconds mid-render (pg_ctl stop -m fast cuts every connection): the
# worker's next write fails as retryable, the supervisor backs off and
# reconnects, the job resumes from its last committed checkpoint, and in
# the end no job is lost, every step has one checkpoint row and the MP4 is
# byte-identical to an uninterrupted render.  A server that stays down
# makes run, submit and status exit 75 (retry me).
LATENTQ_TEST_DB=postgresql; export LATENTQ_TEST_DB
. "${top_srcdir:-.}/tests/cli/render-common.sh"
STEPS=6

mkdir -p "$T/ref" "$T/job"
write_manifest "$T/ref/m.yaml" $STEPS clip:7
write_manifest "$T/job/m.yaml" $STEPS clip:7
expect_status 0 "$LATENTQ" -q -d "$(new_db ref)" render "$T/ref/m.yaml"
ref_mp4=$(digest "$T/ref/videos/clip.mp4")

expect_status 0 "$LATENTQ" -q submit "$T/job/m.yaml"
# Step 3 of the first attempt lingers 5 s (a slow fault), so the server
# stops while the job is mid-render however fast the steps are: the
# worker's next write meets the outage or its cut connection.
LATENTQ_FAULT="slow=5@denoise:3#1" "$LATENTQ" run --once --keep-checkpoints all \
    > "$T/run.out" 2> "$T/run.err" &
pid=$!
i=0
while [ $i -lt 900 ]; do
	st=$(q "SELECT step FROM jobs" 2>/dev/null)
	[ -n "$st" ] && [ "$st" -ge 2 ] && break
	sleep 0.1; i=$((i + 1))
done
stopped_at=$(q "SELECT step FROM jobs")
pg_pause
sleep 3
pg_resume
wait $pid
expect_eq $? 0 "run exits 0 after the outage"
echo "server stopped at step $stopped_at for 3 s"
# the supervisor's own call or the worker's write meets the outage first
# (which one depends on the step time: a sanitizer build is 5x slower)
expect_grep 'trying again|LQ-DB-001 \(retry\)' "$T/run.err"
expect_eq "$(q "SELECT count(*) || ' ' || state FROM jobs GROUP BY state")" "1 done" "the one job done"
expect_eq "$(q "SELECT count(*) || ' ' || count(DISTINCT step) || ' ' || max(step) FROM checkpoints")" "$STEPS $STEPS $STEPS" "one checkpoint row per step"
expect_eq "$(q "SELECT count(*) FROM events WHERE kind = 'finished'")" 1 "finished once"
expect_eq "$(digest "$T/job/videos/clip.mp4")" "$ref_mp4" "MP4 identical to the uninterrupted render"

# A server that stays away: a scheduler's task is told "retry me" (75),
# not "bad input" (65), by every command that needs the queue.
pg_pause
expect_status 75 "$LATENTQ" run --once
expect_grep 'cannot connect to queue database .*\[LQ-DB-001\]' "$T/err"
expect_status 75 "$LATENTQ" submit "$T/job/m.yaml"
expect_status 75 "$LATENTQ" status
finish
