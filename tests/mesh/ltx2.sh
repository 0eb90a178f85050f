#!/bin/sh
# Issue 15 item 6: LTX2Pipeline (the pipeline golden's model of
# tests/data/ltx2, latentq's own draws) on meshes of logical devices is
# byte-identical to one device, both streams sharded: context parallel
# (video and audio tokens split, both self-attentions Ulysses, a2v / v2a
# keys gathered), data parallel (the step's rows: 2 videos × CFG halves,
# STG and modality passes) and both; a kill on a mesh resumes to the same
# bits.  The negative control leaves the cross-modal keys sharded (audio
# attending over its shard of the video and back, the upstream bug) and
# changes the output.  Preflight checks the context degree against both
# streams' tokens and heads.
. "${top_srcdir:-.}/tests/mesh/mesh-common.sh"

D=$top_srcdir/tests/data/ltx2/pipeline/pipe

# l2_job DIR MESH [FRAMES [MODALITY]] : the golden's call (3 steps, CFG + STG +
# modality for both streams) with seed 11.  17 frames at 24 fps: 5 x 2 x 4
# = 40 video tokens and 18 audio latent frames; 9 frames: 24 and 9.
l2_job() {
	mkdir -p "$1"
	cat > "$1/m.yaml" <<YAML
jobs:
  - name: $(basename "$1")
    model: $D/model
    prompt_embeds: $D/inputs.safetensors
    height: 32
    width: 64
    num_frames: ${3:-17}
    frame_rate: 24
    num_inference_steps: 3
    guidance_scale: 3.0
    stg_scale: 1.0
    modality_scale: ${4:-2.0}
    guidance_rescale: 0.5
    audio_guidance_scale: 5.0
    audio_stg_scale: 1.0
    audio_modality_scale: ${4:-2.0}
    audio_guidance_rescale: 0.5
    spatio_temporal_guidance_blocks: [1]
    decode_timestep: 0.0
    max_sequence_length: 8
    seed: 11
    mesh: $2
    output: out.mp4
    save_tensors: tensors.safetensors
YAML
}

l2_job "$T/one" "{devices: 1}"
mesh_render "$T/one"
l2_job "$T/cp2" "{devices: 2, context: 2}"
mesh_render "$T/cp2"
same_bits "LTX-2 on {devices: 2, context: 2}" "$T/one" "$T/cp2"
# data 2: rows 0-3 (the CFG pass) on one device, 4-7 (STG, modality) on
# the other
l2_job "$T/dp2" "{devices: 2, data: 2}"
mesh_render "$T/dp2"
same_bits "LTX-2 on {devices: 2, data: 2}" "$T/one" "$T/dp2"
l2_job "$T/both" "{devices: 4, data: 2, context: 2}"
mesh_render "$T/both"
same_bits "LTX-2 on {devices: 4, data: 2, context: 2}" "$T/one" "$T/both"
mesh_devices_used "LTX-2 on {4, data 2, context 2}" "$T/both" \
    "[[0,0,0],[1,0,1],[2,1,0],[3,1,1]]"

# SIGKILL after step 2 of 3 on the mesh: resumes there, same bits
l2_job "$T/kill" "{devices: 4, data: 2, context: 2}"
mesh_kill_resume "LTX-2 on {devices: 4, data: 2, context: 2}" "$T/one" \
    "$T/kill" 2

# the negative control: the cross-modal keys left sharded
l2_job "$T/neg" "{devices: 2, context: 2}"
LATENTQ_MESH_NO_CROSS_KV_GATHER=1 mesh_render "$T/neg"
checks=$((checks + 1))
cmp -s "$T/one/tensors.safetensors" "$T/neg/tensors.safetensors" &&
    fail "cross-modal keys left sharded rendered what one device renders"

# preflight: the context degree against both streams
refuse() {
	l2_job "$T/p" "$1" "$2"
	expect_status 65 "$LATENTQ" preflight --no-device "$T/p/m.yaml"
	expect_grep "$3" "$T/out"
}
# 9 frames: 24 video tokens divide by 2, 9 audio tokens do not
refuse "{devices: 2, context: 2}" 9 \
    "error LQ-MESH-004: .*does not divide the audio stream's 9 tokens \(9 frames at 24 fps\).*nearest valid context: 1"
expect_no_grep "video stream's" "$T/out"
# context 3: neither stream's 4 heads (nor the video's 40 tokens); the
# audio's 18 tokens would do
refuse "{devices: 3, context: 3}" 17 \
    "error LQ-MESH-005: .*context degree 3 does not divide the video stream's 4 attention heads; nearest valid: 2"
expect_grep "error LQ-MESH-005: .*the audio stream's \(and the a2v / v2a cross-attention's\) 4 attention heads; nearest valid: 2" "$T/out"
expect_grep "error LQ-MESH-004: .*the video stream's 40 tokens \(latent 5 × 2 × 4\)" "$T/out"
expect_no_grep "audio stream's 18" "$T/out"
# the data axis splits rows: one video's 4 passes over data 4 is
# per_device_batch_size 0.25 (one row each)
l2_job "$T/ok" "{devices: 4, data: 4}"
echo "    per_device_batch_size: 0.25" >> "$T/ok/m.yaml"
expect_status 0 "$LATENTQ" preflight --no-device "$T/ok/m.yaml"
# ... but without modality guidance a video is 3 rows: 0.5 of one on each
# of data 2 is 1.5 rows
l2_job "$T/p" "{devices: 2, data: 2}" 17 1.0
echo "    per_device_batch_size: 0.5" >> "$T/p/m.yaml"
expect_status 65 "$LATENTQ" preflight --no-device "$T/p/m.yaml"
expect_grep "error LQ-MESH-006: .*3 transformer rows \(batch 1 × 3 guidance passes\) do not split across data 2" "$T/out"
expect_grep "per_device_batch_size: 1 \(a whole number of rows per device: 6 in all\)" "$T/out"
finish
