#!/bin/sh
# Storage exhaustion is temporary, not bad input (issue 22 item 3), on real
# full file systems (small tmpfs mounts): a full output disk gives the job
# back with its final checkpoint and exit 74, and the rerun resumes; a full
# database disk makes submit record nothing and print no "queued" line.
. "${top_srcdir:-.}/tests/cli/render-common.sh"
trap 'for d in "$T/outdisk" "$T/dbdisk"; do mountpoint -q "$d" && umount "$d"; done; rm -rf "$T"' EXIT

# b2 FILE : BLAKE2b-256 hex, as latentq records artifacts.
b2() { b2sum -l 256 "$1" | cut -d' ' -f1; }

# fill DIR : write zeros into DIR/filler until the file system is full.
fill() { dd if=/dev/zero of="$1/filler" bs=4096 > /dev/null 2>&1; sync; }

mkdir -p "$T/outdisk" "$T/dbdisk"
if ! mount -t tmpfs -o size=1m tmpfs "$T/outdisk" 2>"$T/mount.err"; then
	echo "SKIP: cannot mount a tmpfs here: $(cat "$T/mount.err")"
	exit 77
fi
mount -t tmpfs -o size=8m tmpfs "$T/dbdisk"

# The reference, rendered on a roomy disk.
write_manifest "$T/ref.yaml" 3 k:5
LATENTQ_DB=$T/ref.db expect_status 0 "$LATENTQ" -q render "$T/ref.yaml"
ref_mp4=$(b2 "$T/videos/k.mp4")

# 1. The output disk fills up: the MP4 cannot be written.  The job is not
# poisoned: it is queued again with its attempt refunded and every step's
# checkpoint kept, run exits 74 naming the errno, and nothing half-written
# is left.
write_manifest "$T/outdisk/m.yaml" 3 k:5
mkdir "$T/outdisk/videos"
"$LATENTQ" -q submit "$T/outdisk/m.yaml" > /dev/null
fill "$T/outdisk"
expect_status 74 "$LATENTQ" run --once
expect_grep 'No space left on device' "$T/err"
expect_grep 'LQ-IO-005' "$T/err"
expect_eq "$(q "SELECT state || ' ' || attempts || ' ' || error_code FROM jobs")" "queued 0 LQ-RUN-STORAGE" "queued again, attempt refunded"
expect_eq "$(q "SELECT max(step) FROM checkpoints")" 3 "the final checkpoint is kept"
expect_eq "$(q "SELECT count(*) FROM artifacts")" 0 "no artifact recorded"
expect_eq "$(ls "$T/outdisk/videos")" "" "no partial output or temporary left"
# Space comes back: the rerun resumes at the last step and writes the same
# MP4 as an uninterrupted render.
rm "$T/outdisk/filler"
expect_status 0 "$LATENTQ" -q run --once
expect_eq "$(q "SELECT state FROM jobs")" done "done after the rerun"
expect_eq "$(q "SELECT detail FROM events WHERE kind = 'resumed'")" '{"step":3}' "resumed from the final checkpoint"
expect_eq "$(q "SELECT count(*) FROM jobs")" 1 "the same job, not a new one"
expect_eq "$(b2 "$T/outdisk/videos/k.mp4")" "$ref_mp4" "MP4 identical to the uninterrupted render"

# 2. The database's disk fills up: submit's COMMIT fails; nothing is
# recorded, no "queued" line is printed, and it exits 75 naming the errno.
db=$T/dbdisk/queue.db
write_manifest "$T/five.yaml" 3 a:1 b:2 c:3 d:4 e:5
LATENTQ_DB=$db expect_status 0 "$LATENTQ" status	# creates and migrates it
# Another process keeps the database open, as a running worker would, so
# its WAL index exists before the disk fills and the write that fails is
# submit's own transaction (the issue's case: the COMMIT).
mkfifo "$T/hold"
sqlite3 "$db" < "$T/hold" > /dev/null 2>&1 &
holder=$!
exec 9> "$T/hold"
echo "SELECT count(*) FROM jobs;" >&9
i=0
while [ ! -e "$db-shm" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
fill "$T/dbdisk"
LATENTQ_DB=$db expect_status 75 "$LATENTQ" submit "$T/five.yaml"
expect_no_grep '^queued' "$T/out"
expect_grep 'LQ-DB-004' "$T/err"
expect_grep 'database or disk is full: No space left on device' "$T/err"
expect_eq "$(sqlite3 "$db" "SELECT count(*) FROM jobs")" 0 "no job recorded"
exec 9>&-
wait $holder
rm "$T/dbdisk/filler"
LATENTQ_DB=$db expect_status 0 "$LATENTQ" submit "$T/five.yaml"
expect_eq "$(grep -c '^queued' "$T/out")" 5 "five queued lines once there is room"
expect_eq "$(sqlite3 "$db" "SELECT count(*) FROM jobs WHERE state = 'queued'")" 5 "five jobs recorded"
finish
