#!/bin/sh
# LTX2VideoTransformer3DModel (diffusers models/transformers/
# transformer_ltx2.py) through `latentq forward --component transformer`,
# against the upstream goldens of tests/data/ltx2 (case transformer):
# gridA (per-token timesteps, use_cross_timestep), gridB (per-sample
# timesteps, odd token counts, legacy own-timestep a2v modulation) and
# gridA_stg (spatio-temporal guidance at block 1), both outputs and every
# intermediate within suggested_atol; negative controls that show each
# call argument matters; split RoPE (no golden: it runs and is not
# interleaved's result; the table is tests/nn/test-ltx2-rope's); and the
# bad inputs, call arguments and configs, by name and code.
. "${top_srcdir:-.}/tests/cli/common.sh"
. "$top_srcdir/tests/nn/ltx2-common.sh"

X=$D/transformer
M=$X/model/transformer

run() {	# run OUT INPUTS [--set ...]: the transformer with intermediates
	r_out=$1 r_in=$2
	shift 2
	expect_status 0 "$LATENTQ" forward --model "$M" --component transformer \
	    --inputs "$r_in" "$@" --dump-intermediates --out "$r_out"
}
differs() {	# differs REL MINE KEY: MINE is NOT within the golden's atol
	checks=$((checks + 1))
	"$CMP" "$D/index.json" "$D" "$@" >/dev/null && fail "$2: $3 matched $1"
}

run "$T/a.st" "$X/gridA.inputs.safetensors" --set use_cross_timestep=true
compare transformer/gridA.output.safetensors "$T/a.st"
compare transformer/gridA.intermediates.safetensors "$T/a.st"
# gridB: the call's use_cross_timestep false is upstream's default
run "$T/b.st" "$X/gridB.inputs.safetensors"
compare transformer/gridB.output.safetensors "$T/b.st"
compare transformer/gridB.intermediates.safetensors "$T/b.st"
run "$T/s.st" "$X/gridA_stg.inputs.safetensors" --set use_cross_timestep=true \
    --set spatio_temporal_guidance_blocks=1
compare transformer/gridA_stg.output.safetensors "$T/s.st"
compare transformer/gridA_stg.intermediates.safetensors "$T/s.st"

# each argument changes the result (so the comparisons above can fail)
differs transformer/gridA_stg.output.safetensors "$T/a.st" output
differs transformer/gridA_stg.output.safetensors "$T/a.st" audio_output
run "$T/nc.st" "$X/gridA.inputs.safetensors"
differs transformer/gridA.output.safetensors "$T/nc.st" output
run "$T/iso.st" "$X/gridA.inputs.safetensors" --set use_cross_timestep=true \
    --set isolate_modalities=true
differs transformer/gridA.output.safetensors "$T/iso.st" audio_output

# perturbed_attn false: upstream ignores the STG blocks (gridA's result)
m=$T/nopert
mkdir -p "$m"
ln -s "$(cd "$M" && pwd)/diffusion_pytorch_model.safetensors" "$m/"
sed 's/"perturbed_attn": true/"perturbed_attn": false/' "$M/config.json" \
    >"$m/config.json"
expect_status 0 "$LATENTQ" forward --model "$m" --component transformer \
    --inputs "$X/gridA_stg.inputs.safetensors" --set use_cross_timestep=true \
    --set spatio_temporal_guidance_blocks=1 --out "$T/np.st"
compare transformer/gridA.output.safetensors "$T/np.st" output audio_output

# no gated attention (a case the goldens do not have): runs, differs
m=$T/nogate
mkdir -p "$m"
ln -s "$(cd "$M" && pwd)/diffusion_pytorch_model.safetensors" "$m/"
sed 's/"gated_attn": true/"gated_attn": false/; s/"audio_gated_attn": true/"audio_gated_attn": false/' \
    "$M/config.json" >"$m/config.json"
expect_status 0 "$LATENTQ" forward --model "$m" --component transformer \
    --inputs "$X/gridA.inputs.safetensors" --set use_cross_timestep=true \
    --out "$T/nogate.st"
differs transformer/gridA.output.safetensors "$T/nogate.st" output
differs transformer/gridA.output.safetensors "$T/nogate.st" audio_output

# rope_type "split" (no golden): it runs, and differs from interleaved
m=$T/split
mkdir -p "$m"
ln -s "$(cd "$M" && pwd)/diffusion_pytorch_model.safetensors" "$m/"
sed 's/"rope_type": "interleaved"/"rope_type": "split"/' "$M/config.json" \
    >"$m/config.json"
expect_status 0 "$LATENTQ" forward --model "$m" --component transformer \
    --inputs "$X/gridA.inputs.safetensors" --set use_cross_timestep=true \
    --out "$T/split.st"
differs transformer/gridA.output.safetensors "$T/split.st" output
differs transformer/gridA.output.safetensors "$T/split.st" audio_output
# split with odd tokens and per-sample timesteps: the same finite kind
expect_status 0 "$LATENTQ" forward --model "$m" --component transformer \
    --inputs "$X/gridB.inputs.safetensors" --out "$T/splitb.st"
"$ST" diff "$T/splitb.st" "$X/gridB.output.safetensors" output 100 \
    >"$T/d.txt" || fail "split RoPE on gridB: output not finite"

# split with 2 audio heads of 16 (no gates, whose weights are per head):
# the a2v / v2a video-side table is reshaped with the 4 video heads,
# the audio side with the 2 audio heads (rope_q_heads / rope_k_heads)
m=$T/split2
mkdir -p "$m"
ln -s "$(cd "$M" && pwd)/diffusion_pytorch_model.safetensors" "$m/"
sed 's/"rope_type": "interleaved"/"rope_type": "split"/; s/"gated_attn": true/"gated_attn": false/; s/"audio_gated_attn": true/"audio_gated_attn": false/; s/"audio_num_attention_heads": 4/"audio_num_attention_heads": 2/; s/"audio_attention_head_dim": 8/"audio_attention_head_dim": 16/' \
    "$M/config.json" >"$m/config.json"
expect_status 0 "$LATENTQ" forward --model "$m" --component transformer \
    --inputs "$X/gridA.inputs.safetensors" --set use_cross_timestep=true \
    --out "$T/split2.st"
"$ST" diff "$T/split2.st" "$X/gridA.output.safetensors" audio_output 100 \
    >"$T/d.txt" || fail "split RoPE, 2 audio heads: audio_output not finite"
differs transformer/gridA.output.safetensors "$T/split2.st" audio_output

# -v reports the device memory and the memory plan
# (ltx2_transformer_plan, the function the forward sizes its pool with):
# the plan is the measured device peak but for the context's few KiB
for g in gridA gridB; do
	expect_status 0 "$LATENTQ" -v forward --model "$X/model" --component \
	    transformer --inputs "$X/$g.inputs.safetensors" --out "$T/v.st"
	expect_grep 'ltx2 transformer device memory: weights 1\.5[0-9] MiB, activations peak [0-9.]+ MiB' "$T/err"
	line=$(grep "memory plan" "$T/err")
	planned=$(echo "$line" | sed -n 's/.*memory plan: device \([0-9]*\) bytes.*/\1/p')
	measured=$(echo "$line" | sed -n 's/.*measured peak_device_bytes \([0-9]*\).*/\1/p')
	checks=$((checks + 1))
	if [ -z "$planned" ] || [ -z "$measured" ] ||
	    [ "$planned" -gt "$measured" ] ||
	    [ $((measured - planned)) -gt 65536 ]; then
		fail "$g: plan and measurement apart: $line"
	fi
done

# Bad call arguments and inputs name the rule.
expect_status 64 "$LATENTQ" forward --model "$M" --component transformer \
    --inputs "$X/gridA.inputs.safetensors" --set use_cross_timestep=maybe \
    --out "$T/x.st"
expect_grep 'use_cross_timestep "maybe" is not true or false' "$T/err"
expect_status 64 "$LATENTQ" forward --model "$M" --component transformer \
    --inputs "$X/gridA.inputs.safetensors" \
    --set spatio_temporal_guidance_blocks=1,x --out "$T/x.st"
expect_grep 'spatio_temporal_guidance_blocks "1,x" is not a comma list' "$T/err"
expect_status 64 "$LATENTQ" forward --model "$M" --component transformer \
    --inputs "$X/gridA.inputs.safetensors" --set padding_side=left \
    --out "$T/x.st"
expect_grep 'the LTX-2 transformer takes no argument "padding_side"' "$T/err"
expect_status 65 "$LATENTQ" forward --model "$M" --component transformer \
    --inputs "$X/gridA.inputs.safetensors" \
    --set spatio_temporal_guidance_blocks=2 --out "$T/x.st"
expect_grep 'lists block 2; this model has blocks 0 to 1' "$T/err"
expect_status 65 "$LATENTQ" forward --model "$top_srcdir/tests/data/ltxv/transformer/model" \
    --component transformer --inputs "$X/gridA.inputs.safetensors" \
    --set use_cross_timestep=true --out "$T/x.st"
expect_grep "LTX-Video's transformer takes no call arguments" "$T/err"
# sigma is needed (cross_attn_mod's prompt_adaln)
"$ST" pick "$T/nosig.st" "$X/gridB.inputs.safetensors" hidden_states \
    audio_hidden_states encoder_hidden_states audio_encoder_hidden_states \
    timestep audio_timestep num_frames height width audio_num_frames fps
expect_status 65 "$LATENTQ" forward --model "$M" --component transformer \
    --inputs "$T/nosig.st" --out "$T/x.st"
expect_grep 'sigma: sigma is missing; this model needs it for prompt_adaln' "$T/err"
# a per-token timestep cannot stand in for the audio one
"$ST" pick "$T/noats.st" "$X/gridA.inputs.safetensors" hidden_states \
    audio_hidden_states encoder_hidden_states audio_encoder_hidden_states \
    timestep sigma num_frames height width audio_num_frames fps
expect_status 65 "$LATENTQ" forward --model "$M" --component transformer \
    --inputs "$T/noats.st" --out "$T/x.st"
expect_grep 'audio_timestep is missing and timestep is per token \[B, 16\]' "$T/err"
"$ST" zeros "$T/af.st" audio_num_frames 1
expect_status 65 "$LATENTQ" forward --model "$M" --component transformer \
    --inputs "$T/af.st" --inputs "$X/gridA.inputs.safetensors" --out "$T/x.st"
expect_grep 'input audio_num_frames is 0, expected a positive integer' "$T/err"
"$ST" fill "$T/ts3.st" timestep 3
expect_status 65 "$LATENTQ" forward --model "$M" --component transformer \
    --inputs "$T/ts3.st" --inputs "$X/gridA.inputs.safetensors" --out "$T/x.st"
expect_grep 'input timestep has 3 values; expected \[B\] = 2 or \[B, tokens\] = \[2, 16\]' "$T/err"

cfg=$M/config.json
in=$X/gridA.inputs.safetensors
bad_config "$cfg" 's/"ff_bias": true/"ff_bias": false/' LQ-MODEL-006 \
    'ff_bias: ff_bias false \(LTX-2.5: feed-forward layers without bias\) is not implemented yet' \
    transformer "$in"
bad_config "$cfg" 's/"use_prompt_adaln_single": true/"use_prompt_adaln_single": false/' \
    LQ-MODEL-006 'use_prompt_adaln_single: use_prompt_adaln_single false \(LTX-2.5' \
    transformer "$in"
bad_config "$cfg" 's/"use_prompt_embeddings": true/"use_prompt_embeddings": false/' \
    LQ-MODEL-006 'use_prompt_embeddings: use_prompt_embeddings false \(LTX-2.3' \
    transformer "$in"
bad_config "$cfg" 's/"rope_type": "interleaved"/"rope_type": "spiral"/' LQ-MODEL-003 \
    'rope_type: rope_type "spiral" is not "interleaved" or "split"' \
    transformer "$in"
bad_config "$cfg" 's/"audio_cross_attention_dim": 32/"audio_cross_attention_dim": 16/' \
    LQ-MODEL-003 "audio_cross_attention_dim: audio_cross_attention_dim 16 is not the audio stream's 4 heads x 8 head_dim = 32" \
    transformer "$in"
# split: the a2v video-side table (12 wide) reshaped over the 4 video heads
bad_config "$cfg" 's/"audio_num_attention_heads": 4/"audio_num_attention_heads": 2/; s/"audio_attention_head_dim": 8/"audio_attention_head_dim": 6/; s/"audio_cross_attention_dim": 32/"audio_cross_attention_dim": 12/; s/"rope_type": "interleaved"/"rope_type": "split"/' \
    LQ-MODEL-003 'rope_type: rope_type "split" needs half of each RoPE width \(64, 12, 12\) to divide by its heads \(4 video, 2 audio' \
    transformer "$in"
bad_config "$cfg" 's/"qk_norm": "rms_norm_across_heads"/"qk_norm": "rms_norm"/' \
    LQ-MODEL-003 'qk_norm: qk_norm "rms_norm" is refused upstream' transformer "$in"
finish
