#!/bin/sh
# Whole-pipeline parity with diffusers: a manifest that renders each
# pipeline golden reproduces latents_after_step and video_np within the
# goldens' tolerance and video_uint8 within ±1.
. "${top_srcdir:-.}/tests/cli/common.sh"
D=$top_srcdir/tests/data/pipeline
ST=${top_builddir:-.}/tests/render/st-tool

# case NAME : render $T/NAME/m.yaml, compare with D/NAME.
compare() {
	name=$1 latents_atol=$2 video_atol=$3
	expect_status 0 "$LATENTQ" -d "$T/$name.db" render "$T/$name/m.yaml"
	for k in latents_after_step:$D/$name/steps.safetensors:$latents_atol \
	    video_np:$D/$name/output.safetensors:$video_atol \
	    video_uint8:$D/$name/output.safetensors:1; do
		key=${k%%:*}; rest=${k#*:}; gold=${rest%:*}; atol=${rest##*:}
		checks=$((checks + 1))
		"$ST" diff "$T/$name/tensors.safetensors" "$gold" "$key" "$atol" ||
		    fail "$name: $key beyond $atol"
	done
}

# pipeA: batch 2 from the embeddings file, CFG 3, VAE 0.9.0.
mkdir -p "$T/pipeA"
cat > "$T/pipeA/m.yaml" <<YAML
jobs:
  - name: pipeA
    model: $D/pipeA/model
    prompt_embeds: $D/pipeA/inputs.safetensors
    latents: $D/pipeA/inputs.safetensors
    height: 64
    width: 96
    num_frames: 9
    frame_rate: 25
    num_inference_steps: 4
    guidance_scale: 3.0
    max_sequence_length: 12
    save_tensors: tensors.safetensors
YAML
compare pipeA 2e-4 5e-5
checks=$((checks + 1))
[ -s "$T/pipeA/pipeA-0.mp4" ] && [ -s "$T/pipeA/pipeA-1.mp4" ] || fail "pipeA: one MP4 per video of the batch"

# pipeB: guidance_rescale, timestep-conditioned VAE 0.9.1 with decode noise
# and injected noise supplied from the goldens.
mkdir -p "$T/pipeB"
"$ST" merge "$T/pipeB/noise.safetensors" "$D/pipeB/inputs.safetensors" \
    "$D/pipeB/decode.inject_noise.safetensors"
cat > "$T/pipeB/m.yaml" <<YAML
jobs:
  - name: pipeB
    model: $D/pipeB/model
    prompt_embeds: $D/pipeB/inputs.safetensors
    latents: $D/pipeB/inputs.safetensors
    decode_noise: noise.safetensors
    height: 64
    width: 64
    num_frames: 9
    frame_rate: 25
    num_inference_steps: 4
    guidance_scale: 3.0
    guidance_rescale: 0.7
    decode_timestep: 0.05
    decode_noise_scale: 0.025
    max_sequence_length: 12
    save_tensors: tensors.safetensors
YAML
compare pipeB 3e-4 8e-5

# demoA: the trained demo model from a typed prompt (tokenizer + T5 on the
# device), as the README's demo renders.
mkdir -p "$T/demoA"
cat > "$T/demoA/m.yaml" <<YAML
jobs:
  - name: demoA
    model: $top_srcdir/jobs/models/ltxv-demo
    prompt: a green circle moving right on a black background
    latents: $D/demoA/inputs.safetensors
    height: 64
    width: 64
    num_frames: 9
    frame_rate: 25
    num_inference_steps: 8
    guidance_scale: 4.0
    save_tensors: tensors.safetensors
YAML
compare demoA 3e-4 1e-4
finish
