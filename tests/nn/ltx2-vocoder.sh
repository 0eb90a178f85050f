#!/bin/sh
# LTX2Vocoder (diffusers pipelines/ltx2/vocoder.py) through `latentq forward
# --component vocoder`, against the upstream goldens of tests/data/ltx2
# (case vocoder, variant voc): the waveform and every intermediate within
# suggested_atol; the final activations the golden model does not use
# (null, clamp) against its pre-activation conv_out; and the configs
# latentq refuses, by name.
. "${top_srcdir:-.}/tests/cli/common.sh"
. "$top_srcdir/tests/nn/ltx2-common.sh"

V=$D/vocoder/voc

expect_status 0 "$LATENTQ" forward --model "$V/model/vocoder" \
    --component vocoder --inputs "$V/inputs.safetensors" \
    --dump-intermediates --out "$T/voc.st"
compare vocoder/voc/output.safetensors "$T/voc.st"
compare vocoder/voc/intermediates.safetensors "$T/voc.st"
# the pipeline-style parent folder (model/ holding vocoder/), and the
# input under upstream's argument name
"$ST" pick "$T/hs.st" "$V/inputs.safetensors" mel:hidden_states ||
    fail "st-tool pick"
expect_status 0 "$LATENTQ" forward --model "$V/model" --component vocoder \
    --inputs "$T/hs.st" --out "$T/voc2.st"
compare vocoder/voc/output.safetensors "$T/voc2.st"

# final_act_fn null and "clamp": the golden conv_out is inside [-1, 1], so
# both equal it (tanh does not).
cfg=$V/model/vocoder/config.json
for act in null '"clamp"'; do
	m=$T/act-$(echo "$act" | tr -d '"')
	mkdir -p "$m"
	ln -s "$(cd "$V/model/vocoder" && pwd)/diffusion_pytorch_model.safetensors" "$m/"
	sed "s/\"final_act_fn\": \"tanh\"/\"final_act_fn\": $act/" "$cfg" >"$m/config.json"
	grep -q "\"final_act_fn\": $act" "$m/config.json" || fail "sed $act"
	expect_status 0 "$LATENTQ" forward --model "$m" --component vocoder \
	    --inputs "$V/inputs.safetensors" --out "$T/o.st"
	compare vocoder/voc/intermediates.safetensors "$T/o.st" conv_out:waveform
	checks=$((checks + 1))
	"$CMP" "$D/index.json" "$D" vocoder/voc/output.safetensors "$T/o.st" \
	    >/dev/null && fail "final_act_fn $act matched tanh's waveform"
done

# A mel whose channels x bins is not in_channels names the rule.
"$ST" fill "$T/bad.st" mel 1 2 9 8
expect_status 65 "$LATENTQ" forward --model "$V/model/vocoder" \
    --component vocoder --inputs "$T/bad.st" --out "$T/x.st"
expect_grep 'mel is .*expected \[B, C, T, M\] with C \* M = in_channels 32' "$T/err"
expect_grep 'LQ-NN-SHAPE' "$T/err"
checks=$((checks + 1))
[ -e "$T/x.st" ] && fail "a failed forward wrote its output"

# Configs latentq does not run are refused by name, before any weight.
expect_status 65 "$LATENTQ" forward --model "$D/vocoder/voc_bwe/model/vocoder" \
    --component vocoder --inputs "$V/inputs.safetensors" --out "$T/x.st"
expect_grep '_class_name: LTX2VocoderWithBWE .*not implemented.*\[LQ-MODEL-006\]' "$T/err"
bad_config "$cfg" 's/"act_fn": "leaky_relu"/"act_fn": "snakebeta"/' LQ-MODEL-006 \
    'act_fn: act_fn "snakebeta" .*not implemented yet; use "leaky_relu"' \
    vocoder "$V/inputs.safetensors"
bad_config "$cfg" 's/"act_fn": "leaky_relu"/"act_fn": "relu"/' LQ-MODEL-003 \
    'act_fn: act_fn "relu" is not one of snakebeta, snake, leaky_relu' \
    vocoder "$V/inputs.safetensors"
bad_config "$cfg" 's/"antialias": false/"antialias": true/' LQ-MODEL-006 \
    'antialias: antialias true .*not implemented' \
    vocoder "$V/inputs.safetensors"
bad_config "$cfg" 's/"final_act_fn": "tanh"/"final_act_fn": "sigmoid"/' LQ-MODEL-003 \
    'final_act_fn: final_act_fn "sigmoid" is not "tanh", "clamp" or null' \
    vocoder "$V/inputs.safetensors"
bad_config "$cfg" '/"upsample_factors"/,/\]/s/2$/2, 2/' LQ-MODEL-004 \
    'upsample_factors: upsample_kernel_sizes has 2 entries and upsample_factors 3' \
    vocoder "$V/inputs.safetensors"
bad_config "$cfg" 's/"hidden_channels": 32/"hidden_channels": 3/' LQ-MODEL-003 \
    'hidden_channels: hidden_channels 3 halves to 0 over 2 upsamplers; use at least 4' \
    vocoder "$V/inputs.safetensors"
bad_config "$cfg" 's/"_class_name": "LTX2Vocoder"/"_class_name": "HifiGan"/' LQ-MODEL-002 \
    'HifiGan' \
    vocoder "$V/inputs.safetensors"
finish
