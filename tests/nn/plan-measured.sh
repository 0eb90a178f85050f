#!/bin/sh
# The memory plan against the device's measured high-water mark: for
# several shapes (both transformer grids, fused and unfused attention, the
# 0.9.0 / 0.9.1 / causal VAE decoders, LTX-2's connectors, audio VAE
# decoders and vocoders) `latentq -v forward` prints the plan of the
# component (ltxv_transformer_plan / ltxv_vae_plan / ltx2_*_plan, the
# functions preflight and render use) and the measured peak_device_bytes
# (gpu_ctx_memory); the plan must be within 10% of the measurement.
. "${top_srcdir:-.}/tests/cli/common.sh"

D=$top_srcdir/tests/data/ltxv

# check_plan WHAT : compares the two numbers of the last run's report.
check_plan() {
	line=$(grep "memory plan" "$T/err")
	planned=$(echo "$line" | sed -n 's/.*memory plan: device \([0-9]*\) bytes.*/\1/p')
	measured=$(echo "$line" | sed -n 's/.*measured peak_device_bytes \([0-9]*\).*/\1/p')
	checks=$((checks + 1))
	if [ -z "$planned" ] || [ -z "$measured" ] || [ "$measured" -eq 0 ]; then
		fail "$1: no plan / measurement in: $line"
		return
	fi
	diff=$((planned - measured))
	[ $diff -lt 0 ] && diff=$((-diff))
	if [ $((diff * 10)) -gt "$measured" ]; then
		fail "$1: planned $planned bytes, measured $measured (more than 10% apart)"
	fi
	echo "$1: planned $planned, measured $measured"
}

for g in gridA gridB; do
	expect_status 0 "$LATENTQ" -v forward --model "$D/transformer/model" \
	    --component transformer --inputs "$D/transformer/$g.inputs.safetensors" \
	    --out "$T/$g.st"
	check_plan "transformer $g"
done
expect_status 0 env LATENTQ_NN_UNFUSED_ATTENTION=1 LATENTQ_NN_SCORES_BUDGET=1 \
    "$LATENTQ" -v forward --model "$D/transformer/model" --component transformer \
    --inputs "$D/transformer/gridB.inputs.safetensors" --out "$T/gridBu.st"
check_plan "transformer gridB unfused"

for v in vae090 vae091 vae_causal; do
	set -- --inputs "$D/vae/$v/decode.inputs.safetensors"
	[ -f "$D/vae/$v/decode.inject_noise.safetensors" ] &&
	    set -- "$@" --inputs "$D/vae/$v/decode.inject_noise.safetensors"
	expect_status 0 "$LATENTQ" -v forward --model "$D/vae/$v/model/vae" \
	    --component vae-decoder "$@" --out "$T/$v.st"
	check_plan "vae $v"
done

# LTX-2's connectors, audio VAE decoders (ltx2_connectors_plan,
# ltx2_audio_vae_plan: the render's plan pieces) and vocoders
L=$top_srcdir/tests/data/ltx2
for side in left right; do
	expect_status 0 "$LATENTQ" -v forward --model "$L/connectors/model/connectors" \
	    --component connectors --inputs "$L/connectors/$side.inputs.safetensors" \
	    --out "$T/conn-$side.st"
	check_plan "ltx2 connectors $side"
done
for v in avae avae_attn; do
	expect_status 0 "$LATENTQ" -v forward --model "$L/audio_vae/$v/model/audio_vae" \
	    --component audio-vae-decoder --inputs "$L/audio_vae/$v/decode.inputs.safetensors" \
	    --out "$T/$v.st"
	check_plan "ltx2 audio vae $v"
done
for v in voc voc_bwe; do
	expect_status 0 "$LATENTQ" -v forward --model "$L/vocoder/$v/model/vocoder" \
	    --component vocoder --inputs "$L/vocoder/$v/inputs.safetensors" \
	    --out "$T/$v.st"
	check_plan "ltx2 vocoder $v"
done
finish
