#!/bin/sh
# The job key `precision` (issue 18 item 3) end to end on the demo model:
# a bf16 render killed with SIGKILL mid-denoise resumes and ends with the
# final latent and the MP4 byte-identical to an uninterrupted bf16 render;
# the job's config records the precision, and the bf16 latents differ
# from the f32 ones (the key reaches the transformer); f16 renders too;
# a warm worker rendering bf16, f32 and bf16 jobs in turn gives each its
# own precision's latent.
# A value latentq does not know (fp16) is refused by preflight, naming the
# field, the value, the values it takes and the nearest one (f16), and
# leaves the queue's done job as it was (the refused one is recorded as
# rejected).
. "${top_srcdir:-.}/tests/cli/render-common.sh"
STEPS=4

# job NAME PRECISION : a one-job demo manifest at PRECISION in $T/NAME
job() {
	mkdir -p "$T/$1"
	write_manifest "$T/$1/m.yaml" $STEPS ref:42
	echo "    precision: $2" >> "$T/$1/m.yaml"
}

job bf16 bf16
ref_db=$(new_db bf16)
expect_status 0 "$LATENTQ" -d "$ref_db" render "$T/bf16/m.yaml"
ref_mp4=$(digest "$T/bf16/videos/ref.mp4")
ref_latent=$(db_sql "$ref_db" "SELECT digest FROM checkpoints WHERE step = $STEPS")
checks=$((checks + 1)); [ -n "$ref_latent" ] || fail "no final checkpoint"
db_sql "$ref_db" "SELECT config_json FROM jobs" > "$T/config"
expect_grep '"precision":[[:space:]]*"bf16"' "$T/config"

job kill bf16
db=$(new_db kill)
LATENTQ_FAULT="kill@denoise:2#1" expect_status 0 "$LATENTQ" -d "$db" \
    render "$T/kill/m.yaml"
expect_eq "$(db_sql "$db" "SELECT count(*) FROM events WHERE kind = 'crashed'")" 1 "bf16: one crash"
expect_eq "$(db_sql "$db" "SELECT detail FROM events WHERE kind = 'resumed'")" '{"step":2}' "bf16: resumed at step 2"
expect_eq "$(digest "$T/kill/videos/ref.mp4")" "$ref_mp4" "bf16: MP4 identical after the kill"
expect_eq "$(db_sql "$db" "SELECT digest FROM checkpoints WHERE step = $STEPS")" "$ref_latent" "bf16: final latent identical after the kill"

for p in f32 f16; do
	job "$p" "$p"
	pdb=$(new_db "$p")
	expect_status 0 "$LATENTQ" -d "$pdb" render "$T/$p/m.yaml"
	checks=$((checks + 1))
	latent=$(db_sql "$pdb" "SELECT digest FROM checkpoints WHERE step = $STEPS")
	[ -n "$latent" ] && [ "$latent" != "$ref_latent" ] ||
	    fail "$p: final latent '$latent' is bf16's"
	eval "latent_$p=\$latent"
done

# one queue, one warm worker, the precisions alternating: each job's
# final latent is its own precision's
mkdir -p "$T/mixed"
write_manifest "$T/mixed/m.yaml" $STEPS a:42 b:42 c:42
awk '{ print } /name: a$/ { print "    precision: bf16" }
    /name: b$/ { print "    precision: f32" }
    /name: c$/ { print "    precision: bf16" }' "$T/mixed/m.yaml" > "$T/mixed/m2.yaml"
mdb=$(new_db mixed)
expect_status 0 "$LATENTQ" -d "$mdb" render "$T/mixed/m2.yaml"
expect_eq "$(db_sql "$mdb" "SELECT group_concat(c.digest, ' ') FROM (SELECT c.digest FROM checkpoints c JOIN jobs j ON j.id = c.job_id WHERE c.step = $STEPS ORDER BY j.name) c")" \
    "$ref_latent $latent_f32 $ref_latent" "mixed queue: each job's precision"
expect_eq "$(db_sql "$mdb" "SELECT count(DISTINCT substr(detail, 1, instr(detail, ',') - 1)) || ' ' || count(*) FROM events WHERE kind = 'worker'")" \
    "1 3" "mixed queue: one warm worker for the three jobs"

# refused by preflight (the job recorded as rejected, with the code); the
# queue's done job is left as it was
job bad fp16
expect_status 65 "$LATENTQ" -d "$db" submit "$T/bad/m.yaml"
expect_grep 'jobs\[0\]\.precision: .*fp16.* is out of range: precision is f32, bf16 or f16' "$T/err"
expect_grep 'LQ-CFG-002' "$T/err"
expect_grep 'try f16' "$T/err"
expect_eq "$(db_sql "$db" "SELECT group_concat(state || ' ' || coalesce(error_code, '-'), ', ') FROM (SELECT * FROM jobs ORDER BY id)")" "done -, rejected LQ-CFG-002" "refused: recorded as rejected, the done job kept"
expect_eq "$(db_sql "$db" "SELECT digest FROM checkpoints WHERE step = $STEPS")" "$ref_latent" "refused: the done job's checkpoint kept"
# the same output path under another precision: a new job (another
# config) that replaces the file; rendering the first manifest again
# keeps the file, naming the job it holds, instead of the two jobs
# re-decoding over each other in turn
job swap bf16
sdb=$(new_db swap)
expect_status 0 "$LATENTQ" -d "$sdb" render "$T/swap/m.yaml"
sed 's/precision: bf16/precision: f32/' "$T/swap/m.yaml" > "$T/swap/f32.yaml"
expect_status 0 "$LATENTQ" -d "$sdb" render "$T/swap/f32.yaml"
expect_grep 'warning: job 2: .*ref.mp4 replaces job 1 \(ref\).s output of that path' "$T/err"
f32_mp4=$(digest "$T/swap/videos/ref.mp4")
expect_status 0 "$LATENTQ" -d "$sdb" render "$T/swap/m.yaml"
expect_grep '^kept +1 +ref +.*ref.mp4 holds job 2 \(ref\).s output, the same path: not re-decoding over it' "$T/out"
expect_no_grep '^redo' "$T/out"
expect_eq "$(digest "$T/swap/videos/ref.mp4")" "$f32_mp4" "swap: the later job's MP4 kept"
expect_eq "$(db_sql "$sdb" "SELECT count(*) FROM events WHERE kind = 'redo'")" 0 "swap: no redo recorded"
# a file no job wrote (damaged) is re-decoded as before
printf 'x' >> "$T/swap/videos/ref.mp4"
expect_status 0 "$LATENTQ" -d "$sdb" render "$T/swap/f32.yaml"
expect_grep '^redo +2 +ref +.*ref.mp4 changed: re-decoding from its final checkpoint' "$T/out"
expect_eq "$(digest "$T/swap/videos/ref.mp4")" "$f32_mp4" "swap: the damaged MP4 re-decoded"

# the hint follows the value whatever its case
job bad2 Bf16
expect_status 65 "$LATENTQ" -d "$(new_db bad2)" submit "$T/bad2/m.yaml"
expect_grep 'try bf16' "$T/err"

# a config edited in the database without its digest: the render and
# `check` refuse it (the checkpoints are keyed by the digest)
job edited bf16
edb=$(new_db edited)
expect_status 0 "$LATENTQ" -d "$edb" submit "$T/edited/m.yaml"
db_sql "$edb" "UPDATE jobs SET config_json = json_set(config_json, '\$.precision', 'f16')"
expect_status 74 "$LATENTQ" -d "$edb" check
expect_grep 'job 1: its config is not the one its digest [0-9a-f]{12} names \(changed outside latentq\)' "$T/out"
expect_status 65 "$LATENTQ" -d "$edb" run
expect_grep "job 1's config is not the one its digest names: changed outside latentq, so neither rendered nor resumed \[LQ-RUN-CFG\]" "$T/err"
expect_eq "$(db_sql "$edb" "SELECT state || ' ' || error_code || ' ' || (SELECT count(*) FROM checkpoints) FROM jobs")" \
    "poisoned LQ-RUN-CFG 0" "edited: refused, nothing rendered"

# a bad value that reached the queue with a matching digest (a bundle
# someone rewrote and imported): the render refuses it with a message,
# no crash, and the job is not retried
job forged bf16
fdb=$(new_db forged)
expect_status 0 "$LATENTQ" -d "$fdb" submit "$T/forged/m.yaml"
db_sql "$fdb" "UPDATE jobs SET config_json = json_set(config_json, '\$.precision', 'fp8')"
d=$(db_sql "$fdb" "SELECT config_json FROM jobs" | tr -d '\n' | b2sum -l 256 | cut -d' ' -f1)
db_sql "$fdb" "UPDATE jobs SET config_digest = '$d'"
expect_status 65 "$LATENTQ" -d "$fdb" run
expect_grep 'precision fp8 is not one of f32, bf16 or f16 \[LQ-RUN-CFG\]' "$T/err"
expect_eq "$(db_sql "$fdb" "SELECT state || ' ' || error_code || ' ' || (SELECT count(*) FROM events WHERE kind = 'crashed') FROM jobs")" \
    "poisoned LQ-RUN-CFG 0" "forged: refused at render, no crash"
finish
