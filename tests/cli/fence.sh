#!/bin/sh
# Exclusive ownership (issue 22 item 1): a worker child dies with its
# supervisor, and a worker whose lease was lost writes nothing — only one
# worker ever writes a job, and the result is the uninterrupted one.
. "${top_srcdir:-.}/tests/cli/render-common.sh"
STEPS=8

# wait_step N : until the job has checkpointed step N (60 s at most).
wait_step() {
	i=0
	while [ $i -lt 600 ]; do
		st=$(q "SELECT step FROM jobs" 2>/dev/null)
		[ -n "$st" ] && [ "$st" -ge "$1" ] && return 0
		sleep 0.1; i=$((i + 1))
	done
	return 1
}

# b2 FILE : BLAKE2b-256 hex, as latentq records artifacts.
b2() { b2sum -l 256 "$1" | cut -d' ' -f1; }

# The reference: the same job rendered without interruption.
write_manifest "$T/m.yaml" $STEPS k:5
LATENTQ_DB=$T/ref.db expect_status 0 "$LATENTQ" -q render "$T/m.yaml"
ref_mp4=$(b2 "$T/videos/k.mp4")
ref_sheet=$(b2 "$T/videos/k.sheet.png")
rm -rf "$T/videos"

# 1. kill -9 of the supervisor alone (not its process group): the child
# must not outlive it, so nothing writes the job until the next run.
# (Step 3 lingers 5 s, a slow fault, so the kill lands mid-render, the
# child still there to find, however fast the steps are.)
"$LATENTQ" -q submit "$T/m.yaml" > /dev/null
LATENTQ_FAULT="slow=5@denoise:3" "$LATENTQ" -q run --once > /dev/null 2>&1 &
sup=$!
wait_step 2 || fail "job never reached step 2"
child=$(pgrep -P $sup)
checks=$((checks + 1))
[ -n "$child" ] || fail "no worker child under supervisor $sup"
kill -KILL $sup
wait $sup 2>/dev/null
i=0
while [ -n "$child" ] && kill -0 "$child" 2>/dev/null && [ $i -lt 50 ]; do
	sleep 0.1; i=$((i + 1))
done
checks=$((checks + 1))
if [ -n "$child" ] && kill -0 "$child" 2>/dev/null; then
	fail "worker child $child outlived its supervisor"
	kill -KILL "$child"
fi
before=$(q "SELECT (SELECT count(*) FROM events) || '/' || (SELECT count(*) FROM checkpoints) || '/' || (SELECT max(step) FROM checkpoints)")
sleep 2
expect_eq "$(q "SELECT (SELECT count(*) FROM events) || '/' || (SELECT count(*) FROM checkpoints) || '/' || (SELECT max(step) FROM checkpoints)")" "$before" "nothing written after the supervisor died"
expect_eq "$(ls "$T/videos" 2>/dev/null)" "" "no output file, no temporary"

# The next supervisor takes the job over and finishes it, alone.
expect_status 0 "$LATENTQ" -q run --once
expect_eq "$(q "SELECT state || ' ' || lease_token FROM jobs")" "done 2" "done under the second claim"
expect_eq "$(q "SELECT count(*) FROM events WHERE kind = 'claimed'")" 2 "two claims"
for phase in decode encode-video; do
	expect_eq "$(q "SELECT count(*) FROM events WHERE kind = 'phase' AND detail = '{\"phase\":\"$phase\"}'")" 1 "$phase entered once"
done
expect_eq "$(q "SELECT count(*) FROM events WHERE kind = 'finished'")" 1 "finished once"
expect_eq "$(q "SELECT group_concat(kind, ' ') FROM (SELECT kind FROM events WHERE id > (SELECT id FROM events WHERE kind = 'lease_lost') ORDER BY id) AS e")" \
    "requeued claimed worker phase phase devices_used plan phase text_encoded weight_streaming phase resumed phase vae_tiling peak_device_bytes phase finished" \
    "after the takeover only the new worker's events (the reaper's requeue, then its claim; its serving child's worker event)"
expect_eq "$(b2 "$T/videos/k.mp4")" "$ref_mp4" "MP4 identical to the uninterrupted render"
expect_eq "$(b2 "$T/videos/k.sheet.png")" "$ref_sheet" "contact sheet identical"
# The artifact rows describe the files as they are on disk.
expect_eq "$(q "SELECT digest || ' ' || size FROM artifacts WHERE kind = 'mp4'")" \
    "$ref_mp4 $(stat -c %s "$T/videos/k.mp4")" "mp4 artifact digest and size are the file's"
expect_eq "$(q "SELECT digest || ' ' || size FROM artifacts WHERE kind = 'contact_sheet'")" \
    "$ref_sheet $(stat -c %s "$T/videos/k.sheet.png")" "sheet artifact digest and size are the file's"
expect_eq "$(ls "$T/videos")" "k.mp4
k.sheet.png" "no temporaries left"

# 2. A worker whose lease is taken over mid-render writes nothing more:
# no checkpoint, no event, no output, no done; it exits 77.
fresh_queue
rm -rf "$T/videos"
"$LATENTQ" -q submit "$T/m.yaml" > /dev/null
q "UPDATE jobs SET state = 'running', attempts = 1, lease_owner = 'test:1:1', lease_token = 7, lease_expires = 1e12"
# (step 3 lingers 5 s, a slow fault, so the takeover below lands mid-render
# however fast the steps are)
LATENTQ_FAULT="slow=5@denoise:3" "$LATENTQ" -q exec-job --owner test:1:1 \
    --lease-token 7 --attempt 1 1 > /dev/null 2> "$T/lost.err" &
worker=$!
wait_step 2 || fail "job never reached step 2"
# Take the lease away and note what was recorded, in one transaction.
# (SQLite: the write lock at once, so the worker's next write waits)
begin=BEGIN; [ "$LATENTQ_TEST_DB" = postgresql ] || begin="BEGIN IMMEDIATE"
stolen=$(q "$begin; UPDATE jobs SET lease_owner = 'thief:2:2', lease_token = 8; SELECT (SELECT count(*) FROM events) || '/' || (SELECT max(step) FROM checkpoints) || '/' || (SELECT count(*) FROM checkpoints); COMMIT;")
wait $worker
expect_eq $? 77 "the worker that lost its lease exits 77"
expect_grep 'LQ-JOB-005' "$T/lost.err"
expect_grep 'no longer leased to test:1:1 \(claim 7\)' "$T/lost.err"
expect_eq "$(q "SELECT (SELECT count(*) FROM events) || '/' || (SELECT max(step) FROM checkpoints) || '/' || (SELECT count(*) FROM checkpoints)")" "$stolen" "no event or checkpoint after the lease was lost"
expect_eq "$(q "SELECT state || ' ' || lease_owner || ' ' || lease_token FROM jobs")" "running thief:2:2 8" "the job is the thief's, untouched"
expect_eq "$(q "SELECT count(*) FROM artifacts")" 0 "no artifact"
expect_eq "$(ls "$T/videos" 2>/dev/null)" "" "no output file, no temporary"

# A worker started for a claim that is not the job's current one does
# nothing at all (the supervisor that spawned it lost the lease already).
before=$(q "SELECT count(*) FROM events")
expect_status 77 "$LATENTQ" -q exec-job --owner thief:2:2 --lease-token 7 1
expect_eq "$(q "SELECT count(*) FROM events")" "$before" "a stale claim writes nothing"
finish
