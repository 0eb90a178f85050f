#!/bin/sh
# LTXConditionPipeline through render jobs, against the upstream goldens of
# tests/data/ltxv-twostage (every random draw supplied with `noise:`):
#   refine/      latents: + denoise_strength 0.4 (10 steps, 4 run)
#   image_cond/  conditions: [{image, frame_index: 0, strength: 1}] with
#                image_cond_noise_scale 0.15 (4 steps)
#   twostage/    the two-stage recipe's two LTXConditionPipeline calls, each
#                as its own job from the golden's own input: stage 1 (32 x
#                64, the condition image as upstream resized it) and stage 2
#                (64 x 128, latents: the upsampler pipeline's output,
#                denoise_strength 0.4, the same condition at full size)
# latents_after_step within the per-step suggested_atol, video_np within
# its atol, video_uint8 within ±1.  A refine killed (SIGKILL) mid-denoise
# resumes to a byte-identical MP4 and save_tensors file; so does an image
# condition killed while encoding its image and mid-denoise (the image
# noise of every step comes from the prepared latents, computed again).
. "${top_srcdir:-.}/tests/cli/common.sh"

D=$top_srcdir/tests/data/ltxv-twostage
X=$top_srcdir/tests/data/ltxv-extra
CMP=${top_builddir:-.}/tests/nn/st-compare
ST=${top_builddir:-.}/tests/render/st-tool
digest() { sha256sum "$1" | cut -d' ' -f1; }

# noise CASE: the case's recorded draws as one noise: file (the decoder's
# injected noise under the decoder's own module names)
noise() {
	"$ST" unprefix "$T/$1.inject.st" "$D/$1/decode.inject_noise.safetensors" \
	    vae. || fail "st-tool unprefix"
	"$ST" merge "$T/$1.noise.st" "$D/$1/prepare.safetensors" \
	    "$D/$1/output.safetensors" "$T/$1.inject.st" ${2:-} ||
	    fail "st-tool merge"
}
# manifest NAME DIR CASE [EXTRA LINES] : the case's call as a job
manifest() {
	cat > "$2/m.yaml" <<YAML
jobs:
  - name: $1
    model: $top_srcdir/tests/data/pipeline/pipeB/model
    transformer: $X/models/transformer
    vae: $X/models/vae091
    scheduler: $D/scheduler
    prompt_embeds: $D/$3/text.safetensors
    height: ${H:-64}
    width: ${W:-96}
    num_frames: 9
    frame_rate: 25
    guidance_scale: 3.0
    decode_timestep: 0.05
    decode_noise_scale: 0.025
    max_sequence_length: 12
    seed: 7
    save_tensors: tensors.safetensors
    output: videos/$1.mp4
${4:-}
YAML
}

# ---- refine: latents + denoise_strength ----------------------------------
mkdir -p "$T/refine"
noise refine
"$ST" pick "$T/refine/latents.st" "$D/refine/prepare.safetensors" \
    latents_in:latents || fail "st-tool pick"
cp "$T/refine.noise.st" "$T/refine/noise.st"
manifest refine "$T/refine" refine "    num_inference_steps: 10
    guidance_rescale: 0.7
    denoise_strength: 0.4
    latents: latents.st
    noise: noise.st"
expect_status 0 "$LATENTQ" -d "$T/refine.db" render "$T/refine/m.yaml"
checks=$((checks + 2))
"$CMP" "$D/index.json" "$D" refine/steps.safetensors \
    "$T/refine/tensors.safetensors" latents_after_step ||
    fail "refine latents_after_step beyond suggested_atol"
"$CMP" "$D/index.json" "$D" refine/output.safetensors \
    "$T/refine/tensors.safetensors" video_np video_uint8 ||
    fail "refine video beyond suggested_atol"
# four steps ran, recorded as steps 7..10 of the full schedule
expect_eq "$(sqlite3 "$T/refine.db" "SELECT group_concat(step) FROM (SELECT step FROM checkpoints ORDER BY step)")" "7,8,9,10" "refine: checkpoints of steps 7..10"

# latentq's own draws (seed 7): a refine killed after step 8 (the second
# step run) resumes there to the same MP4 and the same save_tensors.
for run in ref kill; do
	mkdir -p "$T/r$run"
	manifest refine "$T/r$run" refine "    num_inference_steps: 10
    guidance_rescale: 0.7
    denoise_strength: 0.4
    latents: $T/refine/latents.st"
done
expect_status 0 "$LATENTQ" -d "$T/rref.db" render "$T/rref/m.yaml"
LATENTQ_FAULT="kill@denoise:8#1" expect_status 0 "$LATENTQ" \
    -d "$T/rkill.db" render "$T/rkill/m.yaml"
expect_eq "$(sqlite3 "$T/rkill.db" "SELECT count(*) FROM events WHERE kind = 'crashed'")" 1 "refine kill: one crash"
expect_eq "$(sqlite3 "$T/rkill.db" "SELECT detail FROM events WHERE kind = 'resumed'")" '{"step":8}' "refine kill: resumed after step 8"
expect_eq "$(digest "$T/rkill/videos/refine.mp4")" "$(digest "$T/rref/videos/refine.mp4")" "refine kill: MP4 identical"
expect_eq "$(digest "$T/rkill/tensors.safetensors")" "$(digest "$T/rref/tensors.safetensors")" "refine kill: save_tensors identical"
checks=$((checks + 1))
cmp -s "$T/rref/videos/refine.mp4" "$T/refine/videos/refine.mp4" &&
    fail "seed 7 rendered upstream's draws"

# ---- image_cond: one image condition at frame 0 --------------------------
mkdir -p "$T/cond"
"$ST" png "$T/cond/image.png" "$D/image_cond/image.safetensors" image_uint8 ||
    fail "st-tool png"
noise image_cond "$D/image_cond/steps.safetensors"
cp "$T/image_cond.noise.st" "$T/cond/noise.st"
cond_lines="    num_inference_steps: 4
    image_cond_noise_scale: 0.15
    conditions:
      - image: $T/cond/image.png
        frame_index: 0
        strength: 1.0"
manifest cond "$T/cond" image_cond "$cond_lines
    noise: noise.st"
expect_status 0 "$LATENTQ" -d "$T/cond.db" render "$T/cond/m.yaml"
checks=$((checks + 2))
"$CMP" "$D/index.json" "$D" image_cond/steps.safetensors \
    "$T/cond/tensors.safetensors" latents_after_step ||
    fail "image_cond latents_after_step beyond suggested_atol"
"$CMP" "$D/index.json" "$D" image_cond/output.safetensors \
    "$T/cond/tensors.safetensors" video_np video_uint8 ||
    fail "image_cond video beyond suggested_atol"

# latentq's own draws: killed while encoding the image, and after step 2
for run in ref kimg kstep; do
	mkdir -p "$T/c$run"
	manifest cond "$T/c$run" image_cond "$cond_lines"
done
expect_status 0 "$LATENTQ" -d "$T/cref.db" render "$T/cref/m.yaml"
LATENTQ_FAULT="kill@encode-image#1" expect_status 0 "$LATENTQ" \
    -d "$T/ckimg.db" render "$T/ckimg/m.yaml"
LATENTQ_FAULT="kill@denoise:2#1" expect_status 0 "$LATENTQ" \
    -d "$T/ckstep.db" render "$T/ckstep/m.yaml"
for run in kimg kstep; do
	expect_eq "$(sqlite3 "$T/c$run.db" "SELECT count(*) FROM events WHERE kind = 'crashed'")" 1 "cond $run: one crash"
	expect_eq "$(digest "$T/c$run/videos/cond.mp4")" "$(digest "$T/cref/videos/cond.mp4")" "cond $run: MP4 identical"
	expect_eq "$(digest "$T/c$run/tensors.safetensors")" "$(digest "$T/cref/tensors.safetensors")" "cond $run: save_tensors identical"
done
expect_eq "$(sqlite3 "$T/ckstep.db" "SELECT detail FROM events WHERE kind = 'resumed'")" '{"step":2}' "cond kstep: resumed after step 2"
# the condition's image digest is part of the config
checks=$((checks + 1))
[ -n "$(sqlite3 "$T/cref.db" "SELECT json_extract(config_json, '$.conditions[0].image_digest') FROM jobs")" ] ||
    fail "cond: no image_digest in the condition's config"

# ---- twostage: each stage of the recipe as a job --------------------------
Y=$D/twostage
mkdir -p "$T/s1" "$T/s2"
# stage 1 conditions on the image as upstream's VideoProcessor resized it
"$ST" png-chw "$T/s1/image.png" "$Y/stage1.prepare.safetensors" \
    condition_preprocessed || fail "st-tool png-chw"
"$ST" pick "$T/s1/noise.st" "$Y/stage1.prepare.safetensors" initial_noise \
    condition_posterior_noise || fail "st-tool pick"
H=32 W=64 manifest s1 "$T/s1" twostage "    num_inference_steps: 4
    guidance_rescale: 0.7
    image_cond_noise_scale: 0
    conditions:
      - image: $T/s1/image.png
    noise: noise.st"
expect_status 0 "$LATENTQ" -d "$T/s1.db" render "$T/s1/m.yaml"
checks=$((checks + 1))
"$CMP" "$D/index.json" "$D" twostage/stage1.steps.safetensors \
    "$T/s1/tensors.safetensors" latents_after_step ||
    fail "stage 1 latents_after_step beyond suggested_atol"
# stage 2 refines the upsampled latents with the full-size image
"$ST" png "$T/s2/image.png" "$Y/image.safetensors" image_uint8 ||
    fail "st-tool png"
"$ST" pick "$T/s2/latents.st" "$Y/upsample.safetensors" latents_out:latents ||
    fail "st-tool pick"
"$ST" unprefix "$T/s2.inject.st" "$Y/stage2.decode.inject_noise.safetensors" \
    vae. || fail "st-tool unprefix"
"$ST" merge "$T/s2/noise.st" "$Y/stage2.prepare.safetensors" \
    "$Y/stage2.output.safetensors" "$T/s2.inject.st" || fail "st-tool merge"
H=64 W=128 manifest s2 "$T/s2" twostage "    num_inference_steps: 10
    guidance_rescale: 0.7
    denoise_strength: 0.4
    image_cond_noise_scale: 0
    latents: latents.st
    conditions:
      - image: $T/s2/image.png
    noise: noise.st"
expect_status 0 "$LATENTQ" -d "$T/s2.db" render "$T/s2/m.yaml"
checks=$((checks + 2))
"$CMP" "$D/index.json" "$D" twostage/stage2.steps.safetensors \
    "$T/s2/tensors.safetensors" latents_after_step ||
    fail "stage 2 latents_after_step beyond suggested_atol"
"$CMP" "$D/index.json" "$D" twostage/stage2.output.safetensors \
    "$T/s2/tensors.safetensors" video_np video_uint8 ||
    fail "stage 2 video beyond suggested_atol"

# The example of jobs/ runs on the demo model (with 2 steps instead of 20).
mkdir -p "$T/example/images"
sed -e 's|model: models/ltxv-demo|model: '"$top_srcdir"'/jobs/models/ltxv-demo|' \
    -e 's|scheduler: schedulers/static|scheduler: '"$top_srcdir"'/jobs/schedulers/static|' \
    -e 's/num_inference_steps: 20/num_inference_steps: 2/' \
    "$top_srcdir/jobs/condition.yaml" > "$T/example/condition.yaml"
cp "$top_srcdir/jobs/images/red-circle.png" "$T/example/images/"
expect_status 0 "$LATENTQ" -d "$T/example.db" render "$T/example/condition.yaml"
for v in red-circle-condition red-circle-condition-refine; do
	checks=$((checks + 1))
	[ -s "$T/example/out/$v.mp4" ] || fail "example: no $v.mp4"
done

finish
