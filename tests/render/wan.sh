#!/bin/sh
# WanPipeline (Wan 2.1 text-to-video) through render jobs:
#  - the upstream pipeline golden of tests/data/wan (4 steps, guidance 5,
#    its own latents and prompt embeddings supplied) as a job: the latents
#    after every step, video_np and video_uint8 (+-1) within the index's
#    suggested_atol, an H.264 MP4 of 9 frames tagged WanPipeline;
#  - a demo model from `latentq model synth --family wan --preset demo`
#    renders an MP4 (jobs/wan.yaml, from the source tree);
#  - with latentq's own draws, a render SIGKILLed after step 2 resumes
#    there (latents and the UniPC history from the checkpoint) to
#    byte-identical MP4 and save_tensors;
#  - one resolved option flipped between the kill and the resume
#    (LATENTQ_NO_TEXEL: the kernel variant) refuses the checkpoint
#    (LQ-CKPT-004), and so does the job's flow_shift, which is part of its
#    config (a new job, no resume from the old one's checkpoints);
#  - preflight refuses what the Wan render does not take, each with its code.
# About 2 minutes on lavapipe.
. "${top_srcdir:-.}/tests/cli/common.sh"

D=$top_srcdir/tests/data/wan
CMP=${top_builddir:-.}/tests/nn/st-compare
ST=${top_builddir:-.}/tests/render/st-tool
digest() { sha256sum "$1" | cut -d' ' -f1; }

# the golden's inputs under the names a job reads
"$ST" pick "$T/embeds.safetensors" "$D/pipeline/run.safetensors" \
    input.prompt_embeds:prompt_embeds \
    input.negative_prompt_embeds:negative_prompt_embeds || fail "embeds"
"$ST" pick "$T/latents.safetensors" "$D/pipeline/run.safetensors" \
    input.latents:latents || fail "latents"

# manifest DIR MODEL EMBEDS [EXTRA LINES]: the golden's call as a job
manifest() {
	mkdir -p "$1"
	cat > "$1/m.yaml" <<YAML
defaults:
  model: $2
  prompt_embeds: $3
  height: 32
  width: 48
  num_frames: 9
  frame_rate: 16
  num_inference_steps: 4
  guidance_scale: 5.0
jobs:
  - name: pipe
    output: videos/pipe.mp4
    save_tensors: tensors.safetensors
${4:-}
YAML
}

manifest "$T/g" "$D/pipeline/model" "$T/embeds.safetensors" \
    "    latents: $T/latents.safetensors"
expect_status 0 "$LATENTQ" -d "$T/g.db" render "$T/g/m.yaml"
# the golden's names: one file of the steps and the video
for k in 0 1 2 3; do
	"$ST" index "$T/s$k.safetensors" "$T/g/tensors.safetensors" \
	    latents_after_step $k step$k.latents_after || fail "step $k"
done
"$ST" merge "$T/mine.safetensors" "$T/s0.safetensors" "$T/s1.safetensors" \
    "$T/s2.safetensors" "$T/s3.safetensors" "$T/g/tensors.safetensors"
checks=$((checks + 1))
"$CMP" "$D/index.json" "$D" pipeline/run.safetensors "$T/mine.safetensors" \
    step0.latents_after step1.latents_after step2.latents_after \
    step3.latents_after video_float:video_np video_uint8 ||
	fail "latents_after_step, video_np, video_uint8"
expect_eq "$(ffprobe -v error -show_entries stream=codec_name,width,height,nb_frames \
    -of csv=p=0 "$T/g/videos/pipe.mp4")" "h264,48,32,9" "golden: an H.264 MP4 of 9 48x32 frames"
expect_eq "$(ffprobe -v error -show_entries format_tags=latentq_pipeline,latentq_flow_shift \
    -of default=noprint_wrappers=1 "$T/g/videos/pipe.mp4" | sort | tr '\n' ' ')" \
    "TAG:latentq_flow_shift=3 TAG:latentq_pipeline=WanPipeline " \
    "golden: the pipeline and flow_shift in the MP4's tags"
expect_eq "$(sqlite3 "$T/g.db" "SELECT state FROM jobs")" done "golden job done"

# The demo model, and the example of jobs/ from the source tree (its
# model is synthesised where the example expects it: jobs/models/wan-demo)
mkdir -p "$T/example/models"
expect_status 0 "$LATENTQ" model synth --family wan --preset demo --seed 1 \
    "$T/example/models/wan-demo"
expect_status 0 "$LATENTQ" model synth --family wan --preset demo --seed 1 \
    "$T/demo2"
checks=$((checks + 1))
diff -r "$T/example/models/wan-demo" "$T/demo2" > /dev/null ||
	fail "model synth: the same seed gives other files"
sed -e 's/num_inference_steps: 10/num_inference_steps: 3/' \
    "$top_srcdir/jobs/wan.yaml" > "$T/example/wan.yaml"
expect_status 0 "$LATENTQ" -d "$T/example.db" render "$T/example/wan.yaml"
expect_eq "$(ffprobe -v error -show_entries stream=codec_name,width,height,nb_frames \
    -of csv=p=0 "$T/example/out/wan-demo.mp4")" "h264,160,96,17" \
    "example: the demo model's MP4"

# registered by name: recorded as family wan, and a job can name it
expect_status 0 "$LATENTQ" -d "$T/example.db" model add --name wan-demo \
    "$T/example/models/wan-demo"
expect_status 0 "$LATENTQ" -d "$T/example.db" model list
expect_grep '^1 +wan-demo +wan ' "$T/out"
sed -e 's|model: models/wan-demo|model: wan-demo|' "$T/example/wan.yaml" \
    > "$T/example/named.yaml"
expect_status 0 "$LATENTQ" -d "$T/example.db" preflight --no-device \
    "$T/example/named.yaml"

# latentq's own draws (seed 11), killed after step 2, resumed
M=$T/example/models/wan-demo
for run in ref kill flip; do
	manifest "$T/$run" "$M" "$M/demo_prompt_embeds.safetensors" \
	    "    seed: 11"
done
expect_status 0 "$LATENTQ" -d "$T/ref.db" render "$T/ref/m.yaml"
LATENTQ_FAULT="kill@denoise:2#1" expect_status 0 "$LATENTQ" \
    -d "$T/kill.db" render "$T/kill/m.yaml"
expect_eq "$(sqlite3 "$T/kill.db" "SELECT count(*) FROM events WHERE kind = 'crashed'")" 1 "kill: one crash"
expect_eq "$(sqlite3 "$T/kill.db" "SELECT detail FROM events WHERE kind = 'resumed'")" '{"step":2}' "kill: resumed after step 2"
expect_eq "$(digest "$T/kill/videos/pipe.mp4")" \
    "$(digest "$T/ref/videos/pipe.mp4")" "kill: MP4 identical"
expect_eq "$(digest "$T/kill/tensors.safetensors")" \
    "$(digest "$T/ref/tensors.safetensors")" "kill: save_tensors identical"

# a kernel variant flipped between the kill and the resume: refused
"$LATENTQ" -d "$T/flip.db" submit "$T/flip/m.yaml" > /dev/null
LATENTQ_FAULT="kill@denoise:2#1" "$LATENTQ" -d "$T/flip.db" run \
    --max-jobs 1 > /dev/null 2>&1
expect_eq "$(sqlite3 "$T/flip.db" "SELECT max(step) FROM checkpoints")" 2 \
    "flip: checkpoint of step 2"
sqlite3 "$T/flip.db" "UPDATE jobs SET not_before = NULL"
LATENTQ_NO_TEXEL=1 expect_status 65 "$LATENTQ" -d "$T/flip.db" run --once
expect_eq "$(sqlite3 "$T/flip.db" "SELECT error_code FROM jobs")" LQ-CKPT-004 \
    "flip: the checkpoint of another kernel variant is refused"
expect_eq "$(sqlite3 "$T/flip.db" "SELECT count(*) FROM events WHERE kind = 'resumed'")" 0 \
    "flip: no resume"
# flow_shift is the job's config: another config digest, a job of its own
manifest "$T/shift" "$M" "$M/demo_prompt_embeds.safetensors" \
    "    seed: 11
    flow_shift: 5.0"
expect_status 0 "$LATENTQ" -d "$T/ref.db" render "$T/shift/m.yaml"
expect_eq "$(sqlite3 "$T/ref.db" "SELECT count(DISTINCT config_digest) FROM jobs")" 2 \
    "flow_shift: a config of its own"
expect_eq "$(sqlite3 "$T/ref.db" "SELECT count(*) FROM events WHERE kind = 'resumed'")" 0 \
    "flow_shift: nothing resumed from the other config"
checks=$((checks + 1))
cmp -s "$T/shift/tensors.safetensors" "$T/ref/tensors.safetensors" &&
	fail "flow_shift 5 rendered flow_shift 3's latents"

# what preflight refuses, each with its code
refuse() {
	manifest "$T/p" "$D/pipeline/model" "$T/embeds.safetensors" "$1"
	expect_status 65 "$LATENTQ" preflight --no-device "$T/p/m.yaml"
	expect_grep "$2" "$T/out"
}
"$ST" fill "$T/lat-2f.safetensors" latents 1 4 2 4 6
refuse "    latents: $T/lat-2f.safetensors" "error LQ-LAT-001: .*latents must be \\[1, 4, 3, 4, 6\\]"
refuse "    guidance_rescale: 0.7" "error LQ-WAN-003: .*guidance_rescale"
refuse "    image: x.png" "error LQ-WAN-003: .*image"
refuse "    flow_shift: 0" "error LQ-WAN-005: .*flow_shift"
refuse "    num_frames: 10" "error LQ-GEOM-003: .*is not 4.*nearest valid: 9 or 13"
refuse "    width: 40" "error LQ-GEOM-002: .*multiple of 16"
refuse "    num_frames: 129" "error LQ-WAN-002: .*num_frames"
refuse "    prompt_embeds: $T/latents.safetensors" "error LQ-WAN-001: .*prompt_embeds"
mkdir -p "$T/e"
sed '/prompt_embeds:/d' "$T/g/m.yaml" > "$T/e/m.yaml"
printf '    prompt: a fox in the snow\n' >> "$T/e/m.yaml"
expect_status 65 "$LATENTQ" preflight --no-device "$T/e/m.yaml"
expect_grep "error LQ-WAN-001: .*prompt_embeds" "$T/out"
finish
