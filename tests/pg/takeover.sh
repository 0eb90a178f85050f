#!/bin/sh
# Two hosts, one PostgreSQL queue: host A's supervisor and worker are killed
# with SIGKILL mid-render (a preempted VM); host B cannot tell that A is
# gone, so it waits for A's lease to expire, then claims the job and
# resumes it from the newest checkpoint.  The MP4 is byte-identical to an
# uninterrupted render.  The hosts are told apart by LATENTQ_HOST.
LATENTQ_TEST_DB=postgresql; export LATENTQ_TEST_DB
. "${top_srcdir:-.}/tests/cli/render-common.sh"
STEPS=5

mkdir -p "$T/ref" "$T/job"
write_manifest "$T/ref/m.yaml" $STEPS clip:42
write_manifest "$T/job/m.yaml" $STEPS clip:42
expect_status 0 "$LATENTQ" -q -d "$(new_db ref)" render "$T/ref/m.yaml"
ref_mp4=$(digest "$T/ref/videos/clip.mp4")

expect_status 0 "$LATENTQ" -q submit "$T/job/m.yaml"
# step 3 lingers 5 s (a slow fault): the kill lands mid-job however fast
# the steps are.  A's lease is 10 s (renewed every 2 s), so it still holds
# when host B's first run below looks, however slowly the commands before
# it start (with the 4 s lease of the other tests it lapsed 3 s after the
# kill at the earliest).
LATENTQ_HOST=host-a LATENTQ_LEASE_SECONDS=10 LATENTQ_FAULT="slow=5@denoise:3" \
    setsid "$LATENTQ" -q run --once > "$T/a.log" 2>&1 &
pid=$!
i=0
while [ $i -lt 900 ]; do
	st=$(q "SELECT step FROM jobs" 2>/dev/null)
	[ -n "$st" ] && [ "$st" -ge 2 ] && break
	sleep 0.1; i=$((i + 1))
done
kill_group $pid
wait $pid 2>/dev/null
killed_at=$(q "SELECT step FROM jobs")
expect_eq "$(q "SELECT state FROM jobs")" running "left running by host A"
expect_eq "$(q "SELECT substr(lease_owner, 1, 7) FROM jobs")" host-a: "leased to host A"

# Host B: while A's lease holds, the job is not B's to take.
expect_status 0 env LATENTQ_HOST=host-b "$LATENTQ" -q run --once
expect_eq "$(q "SELECT state FROM jobs")" running "not taken over before the lease expires"
i=0
while [ $i -lt 200 ] && [ "$(q "SELECT lease_expires < extract(epoch FROM clock_timestamp()) FROM jobs")" != t ]; do
	sleep 0.1; i=$((i + 1))
done
expect_status 0 env LATENTQ_HOST=host-b "$LATENTQ" -q run --once
expect_eq "$(q "SELECT state FROM jobs")" done "finished by host B"
expect_eq "$(q "SELECT detail FROM events WHERE kind = 'lease_lost'")" '{"reason":"lease expired"}' "A's lease expired"
expect_eq "$(q "SELECT group_concat(substr(detail, 11, 6), ' ') FROM (SELECT detail FROM events WHERE kind = 'claimed' ORDER BY id) c")" "host-a host-b" "claimed by A, then by B"
resumed=$(q "SELECT detail FROM events WHERE kind = 'resumed'")
checks=$((checks + 1))
case $resumed in
'{"step":'*) [ "${resumed#*:}" != "0}" ] || fail "resumed from step 0" ;;
*) fail "not resumed from a checkpoint: '$resumed'" ;;
esac
echo "killed at step $killed_at, resumed $resumed"
expect_eq "$(digest "$T/job/videos/clip.mp4")" "$ref_mp4" "MP4 identical to the uninterrupted render"
finish
