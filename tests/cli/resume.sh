#!/bin/sh
# Crash and resume: a render killed with SIGKILL at random steps, during
# decode and during video encoding, resumes and ends with a final latent
# and an MP4 byte-identical to an uninterrupted render; a corrupted
# checkpoint is skipped for the previous one; changed model files are
# refused.
. "${top_srcdir:-.}/tests/cli/render-common.sh"
STEPS=5

# The reference: an uninterrupted render.
mkdir -p "$T/ref"
write_manifest "$T/ref/m.yaml" $STEPS ref:42
ref_db=$(new_db ref)
LATENTQ_DB=$ref_db expect_status 0 "$LATENTQ" -d "$ref_db" render --keep-checkpoints all "$T/ref/m.yaml"
ref_mp4=$(digest "$T/ref/videos/ref.mp4")
ref_latent=$(db_sql "$ref_db" "SELECT digest FROM checkpoints WHERE step = $STEPS")
expect_eq "$(db_sql "$ref_db" "SELECT count(*) FROM checkpoints")" $STEPS "checkpoints kept with --keep-checkpoints all"
checks=$((checks + 1)); [ -n "$ref_latent" ] || fail "no final checkpoint"
ffprobe -v error -show_entries stream=codec_name,nb_read_frames,avg_frame_rate \
    -count_frames -of default=nw=1 "$T/ref/videos/ref.mp4" > "$T/probe" 2>&1
expect_grep '^codec_name=h264$' "$T/probe"
expect_grep '^nb_read_frames=9$' "$T/probe"
expect_grep '^avg_frame_rate=25/1$' "$T/probe"
ffprobe -v error -show_entries format_tags -of default=nw=1 "$T/ref/videos/ref.mp4" > "$T/tags" 2>&1
expect_grep 'a red circle moving left' "$T/tags"
checks=$((checks + 1)); [ -s "$T/ref/videos/ref.sheet.png" ] || fail "no contact sheet"

# resume_case NAME FAULT : render with a fault that SIGKILLs the worker,
# then check the retried render matches the reference.
resume_case() {
	name=$1; fault=$2
	mkdir -p "$T/$name"
	write_manifest "$T/$name/m.yaml" $STEPS ref:42
	db=$(new_db "$name")
	eval "db_$name=\$db"
	LATENTQ_FAULT=$fault expect_status 0 "$LATENTQ" -d "$db" render "$T/$name/m.yaml"
	expect_eq "$(db_sql "$db" "SELECT count(*) FROM events WHERE kind = 'crashed'")" 1 "$name: one crash"
	expect_eq "$(db_sql "$db" "SELECT state FROM jobs")" done "$name: job state"
	expect_eq "$(digest "$T/$name/videos/ref.mp4")" "$ref_mp4" "$name: MP4 identical"
	expect_eq "$(db_sql "$db" "SELECT digest FROM checkpoints WHERE step = $STEPS")" "$ref_latent" "$name: final latent identical"
}

# SIGKILL after two random steps (the last one included sometimes).
s1=$(( $(od -An -N2 -tu2 /dev/urandom) % (STEPS - 1) + 1 ))
s2=$(( $(od -An -N2 -tu2 /dev/urandom) % STEPS + 1 ))
echo "killing at steps $s1 and $s2"
resume_case kill1 "kill@denoise:$s1#1"
expect_eq "$(db_sql "$db_kill1" "SELECT detail FROM events WHERE kind = 'resumed'")" "{\"step\":$s1}" "kill1: resumed at the killed step"
resume_case kill2 "kill@denoise:$s2#1"
resume_case decode "kill@decode#1"
# decode restarts from the committed final latent: no denoising again
expect_eq "$(db_sql "$db_decode" "SELECT detail FROM events WHERE kind = 'resumed'")" "{\"step\":$STEPS}" "decode: resumed after the last step"
resume_case encode "kill@encode-video#1"

# A SIGKILL of the whole render (supervisor and worker), then the same
# command again: the dead owner's lease is reclaimed at once.  Step 3
# lingers 5 s before its checkpoint (a slow fault), so the kill lands
# mid-render however fast the steps are (a 64x64 step takes tens of ms on
# the host path; the loop below polls every 0.1 s).
mkdir -p "$T/whole"
write_manifest "$T/whole/m.yaml" $STEPS ref:42
db=$(new_db whole)
LATENTQ_FAULT="slow=5@denoise:3" setsid "$LATENTQ" -q -d "$db" render \
    "$T/whole/m.yaml" > /dev/null 2>&1 &
pid=$!
i=0
while [ $i -lt 3000 ]; do	# 5 min: the loop ends at the step; loaded machines are slow
	st=$(db_sql "$db" "SELECT step FROM jobs" 2>/dev/null)
	[ -n "$st" ] && [ "$st" -ge 2 ] && break
	sleep 0.1; i=$((i + 1))
done
kill_group $pid
wait $pid 2>/dev/null
expect_eq "$(db_sql "$db" "SELECT state FROM jobs")" running "whole: left running by the kill"
expect_status 0 "$LATENTQ" -d "$db" render "$T/whole/m.yaml"
expect_eq "$(db_sql "$db" "SELECT count(*) FROM jobs")" 1 "whole: no new job queued"
expect_eq "$(digest "$T/whole/videos/ref.mp4")" "$ref_mp4" "whole: MP4 identical"

# A corrupted newest checkpoint is skipped for the previous one.
mkdir -p "$T/corrupt"
write_manifest "$T/corrupt/m.yaml" $STEPS ref:42
db=$(new_db corrupt)
LATENTQ_FAULT="kill@denoise:3#1" "$LATENTQ" -d "$db" submit "$T/corrupt/m.yaml" > /dev/null
LATENTQ_FAULT="kill@denoise:3#1" "$LATENTQ" -d "$db" run --max-jobs 1 > /dev/null 2>&1
expect_eq "$(db_sql "$db" "SELECT max(step) FROM checkpoints")" 3 "corrupt: checkpoint of step 3 exists"
if [ "$LATENTQ_TEST_DB" = postgresql ]; then
	zeros="decode(repeat('00', length(latent)), 'hex')"
else
	zeros="zeroblob(length(latent))"
fi
# `latentq check` verifies each checkpoint as a resume does, on both
# backends: sound before, the corrupted record named after.
expect_status 0 "$LATENTQ" -d "$db" check
expect_grep ': ok' "$T/out"
db_sql "$db" "UPDATE checkpoints SET latent = $zeros WHERE step = 3"
expect_status 74 "$LATENTQ" -d "$db" check
expect_grep 'fails its record check: 1 checkpoint is corrupted: checkpoint at step 3 of job [0-9]+: blob digest differs from the recorded one.*\[LQ-DB-004\]' "$T/err"
expect_grep '^checkpoint at step 3 of job [0-9]+: blob digest' "$T/out"
db_sql "$db" "UPDATE jobs SET not_before = NULL"
expect_status 0 "$LATENTQ" -d "$db" run --once
expect_eq "$(db_sql "$db" "SELECT detail FROM events WHERE kind = 'resumed'")" '{"step":2}' "corrupt: resumed from step 2"
# the resumed render wrote step 3 anew
expect_status 0 "$LATENTQ" -d "$db" check
expect_eq "$(digest "$T/corrupt/videos/ref.mp4")" "$ref_mp4" "corrupt: MP4 identical"

# Model files changed between the kill and the resume: the job is this
# host's copy's victim, not at fault, on either backend: given back queued,
# untouched (69, LQ-RUN-MODEL-HOST, shown by status), for another host
# (tests/pg/fleet.sh renders it there) or a later run once the files are
# restored, which then finishes it from its checkpoint.
mkdir -p "$T/changed"
write_manifest "$T/changed/m.yaml" $STEPS ref:42
db=$(new_db changed)
"$LATENTQ" -d "$db" submit "$T/changed/m.yaml" > /dev/null
LATENTQ_FAULT="kill@denoise:2#1" "$LATENTQ" -d "$db" run --max-jobs 1 > /dev/null 2>&1
cp "$T/model/scheduler/scheduler_config.json" "$T/sched.bak"
printf ' ' >> "$T/model/scheduler/scheduler_config.json"
db_sql "$db" "UPDATE jobs SET not_before = NULL"
attempts=$(db_sql "$db" "SELECT attempts FROM jobs")
expect_status 69 "$LATENTQ" -d "$db" run --once
expect_grep "this host's copy of model .* differs" "$T/err"
expect_eq "$(db_sql "$db" "SELECT state || ' ' || error_code FROM jobs")" "queued LQ-RUN-MODEL-HOST" "changed: job left queued"
expect_eq "$(db_sql "$db" "SELECT attempts FROM jobs")" "$attempts" "changed: no attempt spent"
expect_status 0 "$LATENTQ" -d "$db" status
expect_grep 'LQ-RUN-MODEL-HOST' "$T/out"
expect_eq "$(db_sql "$db" "SELECT max(step) FROM checkpoints")" 2 "changed: checkpoint kept"
cp "$T/sched.bak" "$T/model/scheduler/scheduler_config.json"
db_sql "$db" "UPDATE jobs SET not_before = NULL"
expect_status 0 "$LATENTQ" -d "$db" run --once
expect_eq "$(db_sql "$db" "SELECT state FROM jobs")" done "restored: the job finishes"
expect_eq "$(db_sql "$db" "SELECT detail FROM events WHERE kind = 'resumed'")" '{"step":2}' "restored: resumed from step 2"
expect_eq "$(digest "$T/changed/videos/ref.mp4")" "$ref_mp4" "restored: MP4 identical"
finish
