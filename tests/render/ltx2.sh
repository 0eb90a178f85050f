#!/bin/sh
# LTX2Pipeline (text-to-audio+video) through render jobs, against the
# upstream pipeline golden of tests/data/ltx2 (3 steps, CFG + STG +
# modality isolation for both streams, guidance_rescale 0.5; the golden's
# own draws supplied with `noise:`): both streams' latents_after_step
# within the per-step suggested_atol, video_np and the waveform within
# theirs, video_uint8 within +-1, and one MP4 per video holding an H.264
# and an AAC stream at the vocoder's rate.  With latentq's own draws, a
# render killed (SIGKILL) after step 2 resumes there to byte-identical MP4s
# and save_tensors.  Preflight refuses what the LTX-2 render does not take
# (and a mesh whose context degree does not divide the audio's tokens).
. "${top_srcdir:-.}/tests/cli/common.sh"

D=$top_srcdir/tests/data/ltx2
CMP=${top_builddir:-.}/tests/nn/st-compare
digest() { sha256sum "$1" | cut -d' ' -f1; }

# manifest DIR [EXTRA LINES] : the golden's call as a job
manifest() {
	mkdir -p "$1"
	cat > "$1/m.yaml" <<YAML
defaults:
  model: $D/pipeline/pipe/model
  prompt_embeds: $D/pipeline/pipe/inputs.safetensors
  height: 32
  width: 64
  num_frames: 9
  frame_rate: 24
  num_inference_steps: 3
  guidance_scale: 3.0
  stg_scale: 1.0
  modality_scale: 2.0
  guidance_rescale: 0.5
  audio_guidance_scale: 5.0
  audio_stg_scale: 1.0
  audio_modality_scale: 2.0
  audio_guidance_rescale: 0.5
  spatio_temporal_guidance_blocks: [1]
  decode_timestep: 0.0
  max_sequence_length: 8
jobs:
  - name: pipe
    output: videos/pipe.mp4
    save_tensors: tensors.safetensors
${2:-}
YAML
}

# upstream's draws: the golden
manifest "$T/g" "    noise: $D/pipeline/pipe/inputs.safetensors"
expect_status 0 "$LATENTQ" -d "$T/g.db" render "$T/g/m.yaml"
checks=$((checks + 1))
"$CMP" "$D/index.json" "$D" pipeline/pipe/steps.safetensors \
    "$T/g/tensors.safetensors" video_latents_after_step \
    audio_latents_after_step || fail "latents_after_step"
checks=$((checks + 1))
"$CMP" "$D/index.json" "$D" pipeline/pipe/output.safetensors \
    "$T/g/tensors.safetensors" video_np video_uint8 audio_waveform ||
	fail "video and waveform"
# two videos (the embeddings' batch of 2), each with its audio: 9 frames at
# 24 fps and the waveform's 264 samples at the vocoder's 24 kHz
for v in 0 1; do
	expect_eq "$(ffprobe -v error -show_entries \
	    stream=codec_type,codec_name,sample_rate,channels,duration \
	    -of csv=p=0 "$T/g/videos/pipe-$v.mp4" | tr '\n' ' ')" \
	    "h264,video,0.375000 aac,audio,24000,2,0.011000 " \
	    "video $v: H.264 and AAC streams of the right lengths"
done
expect_eq "$(ffprobe -v error -show_entries format_tags=latentq_pipeline,latentq_audio_sample_rate,latentq_audio_samples,latentq_model_digest -of default=noprint_wrappers=1 "$T/g/videos/pipe-0.mp4" | sort | sed 's/=.*digest=.*/=digest/' | tr '\n' ' ')" \
    "TAG:latentq_audio_sample_rate=24000 TAG:latentq_audio_samples=264 TAG:latentq_model_digest=$(sqlite3 "$T/g.db" "SELECT model_digests FROM jobs") TAG:latentq_pipeline=LTX2Pipeline " \
    "the audio's provenance in the MP4's tags"
expect_eq "$(sqlite3 "$T/g.db" "SELECT state FROM jobs")" done "golden job done"

# latentq's own draws (seed 11), killed after step 2
for run in ref kill; do
	manifest "$T/$run" "    seed: 11"
done
expect_status 0 "$LATENTQ" -d "$T/ref.db" render "$T/ref/m.yaml"
LATENTQ_FAULT="kill@denoise:2#1" expect_status 0 "$LATENTQ" \
    -d "$T/kill.db" render "$T/kill/m.yaml"
expect_eq "$(sqlite3 "$T/kill.db" "SELECT count(*) FROM events WHERE kind = 'crashed'")" 1 "kill: one crash"
expect_eq "$(sqlite3 "$T/kill.db" "SELECT detail FROM events WHERE kind = 'resumed'")" '{"step":2}' "kill: resumed after step 2"
for v in 0 1; do
	expect_eq "$(digest "$T/kill/videos/pipe-$v.mp4")" \
	    "$(digest "$T/ref/videos/pipe-$v.mp4")" "kill: MP4 $v identical"
done
expect_eq "$(digest "$T/kill/tensors.safetensors")" \
    "$(digest "$T/ref/tensors.safetensors")" "kill: save_tensors identical"
checks=$((checks + 1))
cmp -s "$T/ref/tensors.safetensors" "$T/g/tensors.safetensors" &&
    fail "seed 11 rendered upstream's draws"

# what preflight refuses, each with its code
refuse() {
	manifest "$T/p" "$1"
	expect_status 65 "$LATENTQ" preflight --no-device "$T/p/m.yaml"
	expect_grep "$2" "$T/out"
}
# a mesh shards both streams: the golden's 9 audio latent frames do not
# split over context 2 (its 24 video tokens would; tests/mesh/ltx2.sh
# renders meshes)
refuse "    mesh: {devices: 2, context: 2}" \
    "error LQ-MESH-004: .*mesh.context: .*the audio stream's 9 tokens"
refuse "    spatio_temporal_guidance_blocks: [2]" \
    "error LQ-LTX2-005: .*block 2 is not one of the transformer's 2"
refuse "    latents: $D/pipeline/pipe/inputs.safetensors" "error LQ-LTX2-006: .*latents"
refuse "    num_frames: 1
    frame_rate: 1000" "error LQ-LTX2-003: .*num_frames"
mkdir -p "$T/e"
sed '/prompt_embeds:/d' "$T/g/m.yaml" > "$T/e/m.yaml"
printf '    prompt: a fox in the snow\n' >> "$T/e/m.yaml"
expect_status 65 "$LATENTQ" preflight --no-device "$T/e/m.yaml"
expect_grep "error LQ-LTX2-001: .*prompt_embeds" "$T/out"

# The example of jobs/ renders from the source tree (2 steps, not 8): two
# MP4s (the embeddings' batch), each with its AAC track.
mkdir -p "$T/example"
sed -e 's|\.\./tests/data|'"$top_srcdir"'/tests/data|' \
    -e 's/num_inference_steps: 8/num_inference_steps: 2/' \
    "$top_srcdir/jobs/ltx2.yaml" > "$T/example/ltx2.yaml"
expect_status 0 "$LATENTQ" -d "$T/example.db" render "$T/example/ltx2.yaml"
for v in 0 1; do
	expect_eq "$(ffprobe -v error -show_entries stream=codec_type -of \
	    csv=p=0 "$T/example/out/ltx2-tiny-$v.mp4" | tr '\n' ' ')" \
	    "video audio " "example: video $v has both streams"
done
finish
