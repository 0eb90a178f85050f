#!/bin/sh
# LTX2Vocoder and LTX2VocoderWithBWE (diffusers pipelines/ltx2/vocoder.py)
# through `latentq forward --component vocoder`, against the upstream
# goldens of tests/data/ltx2 (case vocoder): voc (LTX-2.0: leaky_relu) and
# voc_bwe (LTX-2.3: SnakeBeta in anti-aliasing, MelSTFT, the BWE generator,
# the Hann-sinc resampler), the waveform and every intermediate within
# suggested_atol; voc_bwe's stage-1 vocoder alone as an LTX2Vocoder with
# snakebeta and antialias; the final activations the golden model does not
# use (null, clamp) against its pre-activation conv_out; and the configs
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

# LTX2VocoderWithBWE, every intermediate
W=$D/vocoder/voc_bwe
expect_status 0 "$LATENTQ" forward --model "$W/model/vocoder" \
    --component vocoder --inputs "$W/inputs.safetensors" \
    --dump-intermediates --out "$T/bwe.st"
compare vocoder/voc_bwe/output.safetensors "$T/bwe.st"
compare vocoder/voc_bwe/intermediates.safetensors "$T/bwe.st"
# its stage 1 alone: an LTX2Vocoder with snakebeta and antialias (the
# wrapper's keys unused), the weights without the "vocoder." prefix
m=$T/stage1
mkdir -p "$m"
sed 's/"_class_name": "LTX2VocoderWithBWE"/"_class_name": "LTX2Vocoder"/' \
    "$W/model/vocoder/config.json" >"$m/config.json"
grep -q '"LTX2Vocoder"' "$m/config.json" || fail "sed stage1"
"$ST" unprefix "$m/diffusion_pytorch_model.safetensors" \
    "$W/model/vocoder/diffusion_pytorch_model.safetensors" vocoder. ||
    fail "st-tool unprefix"
expect_status 0 "$LATENTQ" forward --model "$m" --component vocoder \
    --inputs "$W/inputs.safetensors" --dump-intermediates --out "$T/s1.st"
compare vocoder/voc_bwe/intermediates.safetensors "$T/s1.st" \
    vocoder.conv_in:conv_in vocoder.upsamplers.0:upsamplers.0 \
    vocoder.resnets.0:resnets.0 vocoder:waveform
# a stage-1 length that is not a multiple of hop_length fails upstream
# (its padding reads a missing attribute): refused by that rule
m=$T/hop16
mkdir -p "$m"
ln -s "$(cd "$W/model/vocoder" && pwd)/diffusion_pytorch_model.safetensors" "$m/"
sed -e 's/"hop_length": 8/"hop_length": 16/' \
    -e '/"bwe_upsample_factors"/,/\]/s/^    4$/    8/' \
    "$W/model/vocoder/config.json" >"$m/config.json"
"$ST" fill "$T/mel5.st" mel 1 2 5 16 || fail "st-tool fill"
expect_status 65 "$LATENTQ" forward --model "$m" --component vocoder \
    --inputs "$T/mel5.st" --out "$T/x.st"
expect_grep 'vocoder: 5 mel frames give 40 stage-1 samples, not a multiple of hop_length 16.*\[LQ-NN-SHAPE\]' "$T/err"
"$ST" fill "$T/mel6.st" mel 1 2 6 16 || fail "st-tool fill"
expect_status 0 "$LATENTQ" forward --model "$m" --component vocoder \
    --inputs "$T/mel6.st" --out "$T/o.st"
checks=$((checks + 1))
"$ST" diff "$T/o.st" "$T/o.st" waveform 0 >/dev/null || fail "hop16 wrote no waveform"

# The memory plan (ltx2_vocoder_plan) within 10% of the device's measured
# high-water mark, for both classes.
for v in voc voc_bwe; do
	expect_status 0 "$LATENTQ" -v forward --model "$D/vocoder/$v/model/vocoder" \
	    --component vocoder --inputs "$D/vocoder/$v/inputs.safetensors" \
	    --out "$T/plan.st"
	check_plan "vocoder"
done

# Configs latentq does not run are refused by name, before any weight.
bad_config "$cfg" 's/"act_fn": "leaky_relu"/"act_fn": "relu"/' LQ-MODEL-003 \
    'act_fn: act_fn "relu" is not one of snakebeta, snake, leaky_relu' \
    vocoder "$V/inputs.safetensors"
bad_config "$cfg" 's/"antialias": false/"antialias": true/' LQ-MODEL-006 \
    'antialias: antialias true with act_fn "leaky_relu" .*is not implemented; use "snakebeta" or antialias false' \
    vocoder "$V/inputs.safetensors"
wcfg=$W/model/vocoder/config.json
bad_config "$wcfg" 's/"bwe_in_channels": 16/"bwe_in_channels": 24/' LQ-MODEL-003 \
    'bwe_in_channels: bwe_in_channels 24 is not out_channels 2 x num_mel_channels 8' \
    vocoder "$W/inputs.safetensors"
bad_config "$wcfg" 's/"output_sampling_rate": 16000/"output_sampling_rate": 12000/' LQ-MODEL-003 \
    'output_sampling_rate: output_sampling_rate 12000 is not a multiple of input_sampling_rate 8000' \
    vocoder "$W/inputs.safetensors"
bad_config "$wcfg" 's/"bwe_act_fn": "snakebeta"/"bwe_act_fn": "gelu"/' LQ-MODEL-003 \
    'bwe_act_fn: bwe_act_fn "gelu" is not one of snakebeta, snake, leaky_relu' \
    vocoder "$W/inputs.safetensors"
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
