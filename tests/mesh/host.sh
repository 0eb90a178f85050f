#!/bin/sh
# Issue 16 (a): a job whose mesh needs more devices than the host has is
# never rendered on fewer.  The worker gives it back untouched, as for a
# host fault (LQ-RUN-MESH-HOST, exit 69): still queued, no attempt spent,
# no checkpoint, no video.
. "${top_srcdir:-.}/tests/cli/render-common.sh"

mkdir -p "$T/m"
write_manifest "$T/m/m.yaml" 2 cp:3
sed -i 's/^  output: videos\/{name}.mp4$/  output: videos\/{name}.mp4\n  mesh: {devices: 2, context: 2}/' "$T/m/m.yaml"
LATENTQ_LOGICAL_DEVICES=1; export LATENTQ_LOGICAL_DEVICES
expect_status 69 "$LATENTQ" -d "$T/q.db" render "$T/m/m.yaml"
expect_grep 'LQ-RUN-MESH-HOST' "$T/err"
expect_grep 'needs 2 devices but this host has 1' "$T/err"
expect_eq "$(sqlite3 "$T/q.db" "SELECT state || ' ' || failures FROM jobs")" "queued 0" "given back untouched"
expect_eq "$(sqlite3 "$T/q.db" "SELECT count(*) FROM checkpoints")" 0 "no step rendered"
checks=$((checks + 1)); [ ! -e "$T/m/videos/cp.mp4" ] || fail "a 2-device job was rendered on one device"

# preflight refuses the same job on this host with its own code
expect_status 65 "$LATENTQ" -d "$T/q2.db" preflight "$T/m/m.yaml"
expect_grep 'LQ-MESH-007' "$T/out"
finish
