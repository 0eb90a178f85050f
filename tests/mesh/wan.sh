#!/bin/sh
# WanPipeline on meshes of logical devices (the pipeline golden's model
# of tests/data/wan: 2 attention heads, 32x48x9 is 3 x 2 x 3 = 18 patched
# tokens; its prompt embeddings, latentq's own draws) is byte-identical to
# one device on {devices: 4, data: 2, context: 2}: data parallel (a step's
# rows: the unconditional one on one pair of devices, the conditional on
# the other) and context parallel within each pair (the tokens split,
# self-attention Ulysses); a kill on the mesh resumes to the same bits.  The negative control leaves the keys sharded and changes the
# output.  Preflight checks the context degree against the heads and the
# tokens, and the data degree against the rows.
. "${top_srcdir:-.}/tests/mesh/mesh-common.sh"

D=$top_srcdir/tests/data/wan
ST=${top_builddir:-.}/tests/render/st-tool
"$ST" pick "$T/embeds.safetensors" "$D/pipeline/run.safetensors" \
    input.prompt_embeds:prompt_embeds \
    input.negative_prompt_embeds:negative_prompt_embeds || fail "embeds"

# wan_job DIR MESH [HEIGHT [GUIDANCE]] : 3 steps, seed 11
wan_job() {
	mkdir -p "$1"
	cat > "$1/m.yaml" <<YAML
jobs:
  - name: $(basename "$1")
    model: $D/pipeline/model
    prompt_embeds: $T/embeds.safetensors
    height: ${3:-32}
    width: 48
    num_frames: 9
    frame_rate: 16
    num_inference_steps: 3
    guidance_scale: ${4:-5.0}
    seed: 11
    mesh: $2
    output: out.mp4
    save_tensors: tensors.safetensors
YAML
}

wan_job "$T/one" "{devices: 1}"
mesh_render "$T/one"
# both axes at once (each alone is a special case of it: the rank's rows
# and its tokens are cut independently)
wan_job "$T/both" "{devices: 4, data: 2, context: 2}"
mesh_render "$T/both"
same_bits "Wan on {devices: 4, data: 2, context: 2}" "$T/one" "$T/both"
mesh_devices_used "Wan on {4, data 2, context 2}" "$T/both" \
    "[[0,0,0],[1,0,1],[2,1,0],[3,1,1]]"

# SIGKILL after step 2 of 3 on the mesh: resumes there, same bits
wan_job "$T/kill" "{devices: 4, data: 2, context: 2}"
mesh_kill_resume "Wan on {devices: 4, data: 2, context: 2}" "$T/one" \
    "$T/kill" 2

# the negative control: each rank attends over its own tokens only
wan_job "$T/neg" "{devices: 2, context: 2}"
LATENTQ_MESH_NO_KV_GATHER=1 mesh_render "$T/neg"
unset LATENTQ_MESH_NO_KV_GATHER
checks=$((checks + 1))
cmp -s "$T/one/tensors.safetensors" "$T/neg/tensors.safetensors" &&
    fail "keys left sharded rendered what one device renders"

# preflight
refuse() {
	wan_job "$T/p" "$1" "$2" "$3"
	expect_status 65 "$LATENTQ" preflight --no-device "$T/p/m.yaml"
	expect_grep "$4" "$T/out"
}
# context 3: not the 2 heads (the 18 tokens it would divide)
refuse "{devices: 3, context: 3}" 32 5.0 \
    "error LQ-MESH-005: .*context degree 3 does not divide the transformer's 2 attention heads; nearest valid: 2"
expect_no_grep "LQ-MESH-004" "$T/out"
# 16x48x9 is 3 x 1 x 3 = 9 tokens: not for context 2
refuse "{devices: 2, context: 2}" 16 5.0 \
    "error LQ-MESH-004: .*context degree 2 does not divide the video's 9 tokens"
# without guidance a step is the embeddings' one row: not for data 2
refuse "{devices: 2, data: 2}" 32 1.0 \
    "error LQ-MESH-006: .*1 transformer rows \(prompt_embeds' batch 1 × 1 row without guidance\) do not split across data 2.*nearest valid data: 1"
finish
