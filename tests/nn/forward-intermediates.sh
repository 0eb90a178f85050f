#!/bin/sh
# `latentq forward --dump-intermediates` against the goldens'
# intermediates: when an output regresses, this names the layer that broke
# (RoPE tables, timestep embedding, caption projection, block 0's norm1 /
# attn1 / attn2 / ff, each block, norm_out; the VAE's conv_in, mid block,
# time embedders, up blocks, norm_out).
. "${top_srcdir:-.}/tests/cli/common.sh"

D=$top_srcdir/tests/data/ltxv
CMP=${top_builddir:-.}/tests/nn/st-compare

compare() {	# REL_FILE MINE [KEY...]
	checks=$((checks + 1))
	"$CMP" "$D/index.json" "$D" "$@" || fail "st-compare $*"
}

expect_status 0 "$LATENTQ" -v forward --model "$D/transformer/model" \
    --component transformer --inputs "$D/transformer/gridA.inputs.safetensors" \
    --out "$T/gridA.safetensors" --dump-intermediates
expect_grep 'device memory: weights' "$T/err"
compare transformer/gridA.intermediates.safetensors "$T/gridA.safetensors"
compare transformer/gridA.output.safetensors "$T/gridA.safetensors"

for v in vae090 vae091; do
	set -- --inputs "$D/vae/$v/decode.inputs.safetensors"
	[ -f "$D/vae/$v/decode.inject_noise.safetensors" ] &&
	    set -- "$@" --inputs "$D/vae/$v/decode.inject_noise.safetensors"
	expect_status 0 "$LATENTQ" forward --model "$D/vae/$v/model" \
	    --component vae-decoder "$@" --out "$T/$v.safetensors" \
	    --dump-intermediates
	compare "vae/$v/decode.intermediates.safetensors" "$T/$v.safetensors"
	compare "vae/$v/decode.output.safetensors" "$T/$v.safetensors"
done
finish
