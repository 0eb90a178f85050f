#!/bin/sh
# One model identity (src/model/ref.h): `model add`/`model list`, the job's
# pinned digest and the MP4's latentq_model_digest are the same value, and
# `model_digest:` accepts it; a README does not change it, a config does.
# A digest pinned by an older latentq (schema 0002's "legacy:") is re-pinned
# once by the render instead of failing the job.
. "${top_srcdir:-.}/tests/cli/render-common.sh"

expect_status 0 "$LATENTQ" model add --name demo "$T/model"
D=$(sed -n 's/^  digest \([0-9a-f]*\)$/\1/p' "$T/out")
expect_eq "${#D}" 64 "model add prints the identity"
expect_status 0 "$LATENTQ" model list
expect_grep "^1 +demo +ltxv +$(printf %.16s "$D") " "$T/out"

# render one step of a job naming the model by its registered name
write_manifest "$T/m.yaml" 1 a:1
sed -i "s|  model: $T/model|  model: demo|" "$T/m.yaml"
expect_status 0 "$LATENTQ" -q render "$T/m.yaml"
expect_eq "$(q 'SELECT model_digests FROM jobs')" "$D" "the job's pinned digest"
MP4=$T/videos/a.mp4
checks=$((checks + 1))
[ -s "$MP4" ] || fail "no $MP4"
M=$(ffprobe -v error -show_entries format_tags=latentq_model_digest \
    -of default=noprint_wrappers=1:nokey=1 "$MP4")
expect_eq "$M" "$D" "the MP4's latentq_model_digest"

# the MP4's digest pasted into model_digest: is accepted, for the folder
# and for the name
for model in "$T/model" demo; do
	cat > "$T/pin.yaml" <<EOP
defaults: {model: $model, height: 64, width: 64, num_frames: 9,
  num_inference_steps: 1, prompt: a red circle}
jobs:
  - name: pinned
    model_digest: $M
  - name: short
    model_digest: $(printf %.16s "$M")
EOP
	expect_status 0 "$LATENTQ" preflight "$T/pin.yaml"
done

# a README is not read by the render: the identity stays
echo "notes" > "$T/model/README.md"
echo "notes" > "$T/model/transformer/README.md"
expect_status 0 "$LATENTQ" preflight "$T/pin.yaml"
expect_status 0 "$LATENTQ" model verify --update demo
expect_grep "digest now $D" "$T/out"

# a config the render reads does change it
sed -i 's/"shift_terminal": *0.1/"shift_terminal": 0.2/' \
    "$T/model/scheduler/scheduler_config.json"
checks=$((checks + 1))
grep -q '"shift_terminal": *0.2' "$T/model/scheduler/scheduler_config.json" ||
	fail "could not edit the scheduler config"
expect_status 65 "$LATENTQ" preflight "$T/pin.yaml"
expect_grep 'LQ-MDL-011' "$T/out"

# a job pinned before the identity (legacy:) renders and is re-pinned
write_manifest "$T/l.yaml" 1 b:2
expect_status 0 "$LATENTQ" -q submit "$T/l.yaml"
q "UPDATE jobs SET model_digests = 'legacy:0123' WHERE name = 'b'"
expect_status 0 "$LATENTQ" -q run --once
expect_eq "$(q "SELECT state FROM jobs WHERE name = 'b'")" done "legacy job"
N=$(q "SELECT model_digests FROM jobs WHERE name = 'b'")
expect_eq "${#N}" 64 "legacy pin replaced by the identity"
finish
