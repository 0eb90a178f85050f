#!/bin/sh
# The latent upsampler (LTXLatentUpsamplerModel) through `latentq forward
# --component latent-upsampler`, against the upstream goldens of
# tests/data/ltxv-extra (case upsampler): the spatial and the temporal
# dims-3 models with every intermediate, and the model inside
# LTXLatentUpsamplePipeline's runs (its input is the denormalised latent;
# the steps around it are tests/sampler/test-upsample-pipeline's).
. "${top_srcdir:-.}/tests/cli/common.sh"

D=$top_srcdir/tests/data/ltxv-extra
CMP=${top_builddir:-.}/tests/nn/st-compare
ST=${top_builddir:-.}/tests/render/st-tool

for v in spatial3d temporal3d; do
	U=$D/upsampler/forward/$v
	expect_status 0 "$LATENTQ" forward --model "$D/models/upsampler_$v" \
	    --component latent-upsampler --inputs "$U/inputs.safetensors" \
	    --dump-intermediates --out "$T/$v.st"
	checks=$((checks + 2))
	"$CMP" "$D/index.json" "$D" "upsampler/forward/$v/output.safetensors" \
	    "$T/$v.st" || fail "$v output beyond suggested_atol"
	"$CMP" "$D/index.json" "$D" \
	    "upsampler/forward/$v/intermediates.safetensors" "$T/$v.st" ||
	    fail "$v intermediates beyond suggested_atol"
done

for r in plain_latent adain1_tone06_latent adain05_np; do
	P=$D/upsampler/pipeline/$r
	"$ST" pick "$T/$r.in.st" "$P/output.safetensors" \
	    upsampler_input:hidden_states || fail "st-tool pick"
	expect_status 0 "$LATENTQ" forward --model "$D/models/upsampler_spatial3d" \
	    --component latent-upsampler --inputs "$T/$r.in.st" --out "$T/$r.st"
	checks=$((checks + 1))
	"$CMP" "$D/index.json" "$D" "upsampler/pipeline/$r/output.safetensors" \
	    "$T/$r.st" upsampler_output:output || fail "$r upsampler_output"
done

# A latent with the wrong channel count names the rule.
"$ST" fill "$T/bad.st" hidden_states 1 8 3 3 4
expect_status 65 "$LATENTQ" forward --model "$D/models/upsampler_spatial3d" \
    --component latent-upsampler --inputs "$T/bad.st" --out "$T/x.st"
expect_grep 'hidden_states is .*expected \[B, 16, F, H, W\]' "$T/err"
finish
