#!/bin/sh
# `latentq forward` against the diffusers goldens (tests/data/ltxv): every
# transformer grid and every VAE decoder variant, outputs only — the path
# the render code and users take.  st-compare prints max abs / max rel per
# tensor and applies index.json's suggested_atol.
. "${top_srcdir:-.}/tests/cli/common.sh"

D=$top_srcdir/tests/data/ltxv
CMP=${top_builddir:-.}/tests/nn/st-compare

compare() {	# REL_FILE MINE [KEY...]
	checks=$((checks + 1))
	"$CMP" "$D/index.json" "$D" "$@" || fail "st-compare $*"
}

for g in gridA gridB; do
	expect_status 0 "$LATENTQ" forward --model "$D/transformer/model" \
	    --component transformer --inputs "$D/transformer/$g.inputs.safetensors" \
	    --out "$T/$g.safetensors"
	compare "transformer/$g.output.safetensors" "$T/$g.safetensors"
done

# The shaders a GPU runs (on lavapipe the GEMMs, norms and elementwise ops
# take the host path): both variants of the reductions, the subgroup norm
# and attention and the per-invocation ones.
for sg in 0 1; do
	expect_status 0 env LATENTQ_GPU_HOST_GEMM=0 LATENTQ_GPU_SUBGROUP=$sg \
	    "$LATENTQ" forward --model "$D/transformer/model" \
	    --component transformer \
	    --inputs "$D/transformer/gridA.inputs.safetensors" \
	    --out "$T/gridA-sg$sg.safetensors"
	compare "transformer/gridA.output.safetensors" "$T/gridA-sg$sg.safetensors"
done

# The unfused attention (matmuls + softmax): all heads at once, and in
# chunks of one head.
expect_status 0 env LATENTQ_NN_UNFUSED_ATTENTION=1 "$LATENTQ" forward \
    --model "$D/transformer/model" --component transformer \
    --inputs "$D/transformer/gridA.inputs.safetensors" --out "$T/gridAu.safetensors"
compare "transformer/gridA.output.safetensors" "$T/gridAu.safetensors"
expect_status 0 env LATENTQ_NN_UNFUSED_ATTENTION=1 LATENTQ_NN_SCORES_BUDGET=1 \
    "$LATENTQ" forward --model "$D/transformer/model" --component transformer \
    --inputs "$D/transformer/gridB.inputs.safetensors" --out "$T/gridB1.safetensors"
compare "transformer/gridB.output.safetensors" "$T/gridB1.safetensors"

for v in vae090 vae091 vae_causal; do
	set -- --inputs "$D/vae/$v/decode.inputs.safetensors"
	[ -f "$D/vae/$v/decode.inject_noise.safetensors" ] &&
	    set -- "$@" --inputs "$D/vae/$v/decode.inject_noise.safetensors"
	# the component folder itself (model/vae) and, for the transformer
	# above, the pipeline-style parent (model/ holding transformer/)
	expect_status 0 "$LATENTQ" forward --model "$D/vae/$v/model/vae" \
	    --component vae-decoder "$@" --out "$T/$v.safetensors"
	compare "vae/$v/decode.output.safetensors" "$T/$v.safetensors"
done

# --seed: noise fields the inputs lack come from latentq's RNG, the same
# for the same seed; fields the inputs hold still win.
V=$D/vae/vae091
for run in a:7 b:7 c:8; do
	expect_status 0 "$LATENTQ" forward --model "$V/model" --component vae-decoder \
	    --inputs "$V/decode.inputs.safetensors" --seed "${run#*:}" \
	    --out "$T/seed-${run%:*}.st"
done
checks=$((checks + 2))
cmp -s "$T/seed-a.st" "$T/seed-b.st" || fail "--seed 7 twice gave different samples"
cmp -s "$T/seed-a.st" "$T/seed-c.st" && fail "--seed 7 and --seed 8 gave the same sample"
expect_status 0 "$LATENTQ" forward --model "$V/model" --component vae-decoder \
    --inputs "$V/decode.inputs.safetensors" \
    --inputs "$V/decode.inject_noise.safetensors" --seed 7 --out "$T/seedfile.st"
compare "vae/vae091/decode.output.safetensors" "$T/seedfile.st"

# The text encoder (T5, the text module's) through the same command, with
# the attention mask as given (the pipeline itself runs it without).
expect_status 0 "$LATENTQ" forward --model "$D/t5/model" --component text-encoder \
    --inputs "$D/t5/inputs.safetensors" --out "$T/t5.safetensors"
compare t5/outputs.safetensors "$T/t5.safetensors" \
    last_hidden_state_masked:last_hidden_state

# Errors name the input: a missing injected-noise field, a missing input.
expect_status 65 "$LATENTQ" forward --model "$D/vae/vae091/model/vae" \
    --component vae-decoder --inputs "$D/vae/vae091/decode.inputs.safetensors" \
    --out "$T/x.safetensors"
expect_grep 'decoder\.mid_block\.resnets\.0#0' "$T/err"
expect_status 65 "$LATENTQ" forward --model "$D/transformer/model" \
    --component transformer --inputs "$D/vae/vae090/decode.inputs.safetensors" \
    --out "$T/x.safetensors"
expect_grep 'hidden_states' "$T/err"
expect_status 64 "$LATENTQ" forward --model "$D/transformer/model" \
    --component nope --inputs x --out y
# A zero-size input is refused, not asserted on.
"${top_builddir:-.}/tests/render/st-tool" lora "$T/empty.safetensors" m 0 4 2
expect_status 65 "$LATENTQ" forward --model "$D/t5/model" --component text-encoder \
    --inputs "$T/empty.safetensors" --out "$T/x.safetensors"
expect_grep 'has an empty dimension' "$T/err"
finish
