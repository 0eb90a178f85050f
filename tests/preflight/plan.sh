#!/bin/sh
# The memory plan in preflight (nn/plan.h): a 512x768x121 job for the
# released 0.9.1 2B model (`model synth --preset 0.9.1-2b --dtype bf16`,
# written sparse: preflight reads headers only) is accepted on this
# machine's lavapipe (2 GiB) with tiled VAE decode and streamed weights,
# and --json prints the plan; jobs that do not fit are rejected with the
# plan's smallest change, and that change is checked to fit.
. "${top_srcdir:-.}/tests/cli/common.sh"

M=$T/ltxv-091-2b
expect_status 0 "$LATENTQ" model synth --preset 0.9.1-2b --dtype bf16 --sparse "$M"
expect_grep 'preset 0.9.1-2b.*bf16, sparse' "$T/out"
# real geometry: 28 blocks of 2048, T5-XXL
expect_grep '"num_layers": 28' "$M/transformer/config.json"
expect_grep '"d_model": 4096' "$M/text_encoder/config.json"
# sparse: gigabytes of weights, (almost) none of them on disk
size=$(stat -c %s "$M/transformer/diffusion_pytorch_model.safetensors")
blocks=$(stat -c %b "$M/transformer/diffusion_pytorch_model.safetensors")
checks=$((checks + 1))
[ "$size" -gt 3000000000 ] || fail "transformer file is $size bytes, expected ~3.8e9 (bf16)"
checks=$((checks + 1))
[ $((blocks * 512)) -lt 100000000 ] || fail "transformer file uses $((blocks * 512)) bytes of disk"

# st_embeds FILE B T C : a safetensors file of zero prompt embeddings and
# masks (cond and uncond), written as a header and a hole.
st_embeds() {
	n=$(($2 * $3 * $4 * 4)); m=$(($2 * $3 * 4))
	h="{\"prompt_embeds\":{\"dtype\":\"F32\",\"shape\":[$2,$3,$4],\"data_offsets\":[0,$n]},"
	h="$h\"negative_prompt_embeds\":{\"dtype\":\"F32\",\"shape\":[$2,$3,$4],\"data_offsets\":[$n,$((2 * n))]},"
	h="$h\"prompt_attention_mask\":{\"dtype\":\"F32\",\"shape\":[$2,$3],\"data_offsets\":[$((2 * n)),$((2 * n + m))]},"
	h="$h\"negative_prompt_attention_mask\":{\"dtype\":\"F32\",\"shape\":[$2,$3],\"data_offsets\":[$((2 * n + m)),$((2 * n + 2 * m))]}}"
	while [ $((${#h} % 8)) -ne 0 ]; do h="$h "; done
	l=${#h}
	printf "$(printf '\\%03o\\%03o\\%03o\\%03o\\000\\000\\000\\000' $((l & 255)) \
	    $(((l >> 8) & 255)) $(((l >> 16) & 255)) $(((l >> 24) & 255)))" >"$1"
	printf '%s' "$h" >>"$1"
	truncate -s $((8 + l + 2 * n + 2 * m)) "$1"
}
st_embeds "$T/embeds.safetensors" 1 128 4096

cat >"$T/big.yaml" <<YAML
defaults:
  model: $M
  height: 512
  width: 768
  num_frames: 121
  num_inference_steps: 25
jobs:
  - name: embeds
    prompt_embeds: embeds.safetensors
YAML
LAVA=$top_srcdir/tests/preflight/caps/caps-lavapipe.json

expect_status 0 "$LATENTQ" -v preflight --device-caps "$LAVA" --json "$T/big.yaml"
cp "$T/out" "$T/big.json"
expect_grep '"valid":[[:space:]]*1' "$T/big.json"
expect_grep '"fits":[[:space:]]*true' "$T/big.json"
expect_grep '"weight_streaming":[[:space:]]*"streamed"' "$T/big.json"
expect_grep '"use_tiling":[[:space:]]*true' "$T/big.json"
peak=$(sed -n 's/.*"peak_device_bytes":[[:space:]]*\([0-9.e+]*\).*/\1/p' "$T/big.json" | head -1)
peak=$(printf '%.0f' "$peak")
checks=$((checks + 1))
[ "$peak" -gt 0 ] && [ "$peak" -le $((2048 * 1048576 * 9 / 10)) ] ||
	fail "planned peak $peak bytes does not fit 2 GiB less 10%"
echo "0.9.1-2b bf16 512x768x121: planned peak $peak device bytes"
expect_status 0 "$LATENTQ" -v preflight --device-caps "$LAVA" "$T/big.yaml"
expect_grep 'job embeds: plan: peak [0-9]+ device bytes .* while denoise.*VAE tiled.*weights streamed' "$T/out"

# With a prompt the T5-XXL encoder (bf16, 9 GiB) must run on the device:
# rejected, and the smallest change is prompt_embeds.
cat >"$T/prompt.yaml" <<YAML
defaults:
  model: $M
  height: 512
  width: 768
  num_frames: 121
jobs:
  - name: prompted
    prompt: a red fox in the snow
YAML
expect_status 65 "$LATENTQ" preflight --device-caps "$LAVA" "$T/prompt.yaml"
expect_grep 'error LQ-DEV-001: job prompted: jobs\[0\]\.prompt_embeds: planned peak device memory .* while encode-text .*; prompt_embeds: a file of precomputed embeddings' "$T/out"

# 704x1216x121 with a prompt: neither the text encoder nor the clip's
# transformer activations fit; the change names both (prompt_embeds, and
# then the largest num_frames that fits).
sed -e 's/height: 512/height: 704/' -e 's/width: 768/width: 1216/' \
    "$T/prompt.yaml" >"$T/prompt-big.yaml"
expect_status 65 "$LATENTQ" preflight --device-caps "$LAVA" "$T/prompt-big.yaml"
expect_grep 'jobs\[0\]\.prompt_embeds: .*; prompt_embeds: a file of precomputed embeddings \(the text encoder alone needs [0-9.]+ GiB\), and then num_frames: [0-9]+' "$T/out"

# A device of 1.85 GiB: the 0.9.1 decoder's 1.4 GiB of bf16 weights still
# fit with small tiles, the clip's transformer activations do not; the
# plan names the largest num_frames that fits, and that clip is accepted
# while one latent frame more is not.
sed -e 's/"size":[[:space:]]*2147483648/"size": 1986422374/' "$LAVA" >"$T/caps-small.json"
expect_status 65 "$LATENTQ" preflight --device-caps "$T/caps-small.json" "$T/big.yaml"
expect_grep 'error LQ-DEV-001: job embeds: (jobs\[0\]|defaults)\.num_frames: planned peak .* while denoise .*; num_frames: [0-9]+' "$T/out"
nf=$(sed -n 's/.*; num_frames: \([0-9]*\).*/\1/p' "$T/out" | head -1)
checks=$((checks + 1))
[ -n "$nf" ] && [ "$nf" -lt 121 ] && [ $(((nf - 1) % 8)) -eq 0 ] ||
	fail "num_frames hint '$nf' is not a shorter clip on the 8k+1 grid"
echo "1.85 GiB device: num_frames: $nf"
sed "s/num_frames: 121/num_frames: $nf/" "$T/big.yaml" >"$T/fixed.yaml"
expect_status 0 "$LATENTQ" preflight --device-caps "$T/caps-small.json" "$T/fixed.yaml"
expect_grep '^1 valid, 0 rejected' "$T/out"
sed "s/num_frames: 121/num_frames: $((nf + 8))/" "$T/big.yaml" >"$T/over.yaml"
expect_status 65 "$LATENTQ" preflight --device-caps "$T/caps-small.json" "$T/over.yaml"
expect_grep 'error LQ-DEV-001' "$T/out"
finish
