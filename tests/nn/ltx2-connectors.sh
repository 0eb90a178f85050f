#!/bin/sh
# LTX2TextConnectors (diffusers pipelines/ltx2/connectors.py) through
# `latentq forward --component connectors`, against the upstream goldens of
# tests/data/ltx2 (case connectors): left and right padding (--set
# padding_side), the three outputs and every intermediate within
# suggested_atol — the video connector with learnable registers, the audio
# one without them (additive mask) and with gated attention; and the bad
# inputs and configs, by name.
. "${top_srcdir:-.}/tests/cli/common.sh"
. "$top_srcdir/tests/nn/ltx2-common.sh"

M=$D/connectors/model/connectors

for side in left right; do
	expect_status 0 "$LATENTQ" forward --model "$M" --component connectors \
	    --inputs "$D/connectors/$side.inputs.safetensors" \
	    --set padding_side=$side --dump-intermediates --out "$T/$side.st"
	compare "connectors/$side.output.safetensors" "$T/$side.st" \
	    video_text_embedding audio_text_embedding
	compare "connectors/$side.intermediates.safetensors" "$T/$side.st"
	# the returned mask: all ones, I64, exactly the golden's
	"$ST" pick "$T/m.st" "$T/$side.st" attention_mask_out
	expect_status 0 "$ST" diff "$T/m.st" \
	    "$D/connectors/$side.output.safetensors" attention_mask_out 0
done
# padding_side defaults to left (upstream's default); the pipeline folder
# (model/ holding connectors/) works too
expect_status 0 "$LATENTQ" forward --model "$D/connectors/model" \
    --component connectors --inputs "$D/connectors/left.inputs.safetensors" \
    --out "$T/default.st"
compare connectors/left.output.safetensors "$T/default.st" \
    video_text_embedding audio_text_embedding
# the wrong padding side changes the result (the test can fail)
expect_status 0 "$LATENTQ" forward --model "$M" --component connectors \
    --inputs "$D/connectors/left.inputs.safetensors" --set padding_side=right \
    --out "$T/wrong.st"
checks=$((checks + 1))
"$CMP" "$D/index.json" "$D" connectors/left.output.safetensors "$T/wrong.st" \
    video_text_embedding >/dev/null && fail "padding_side made no difference"

# rope_type "split" (no golden): it runs, and it is not interleaved's
# result; the ops_rope_split kernel is tests/gpu/test-ops'.
m=$T/split
mkdir -p "$m"
ln -s "$(cd "$M" && pwd)/diffusion_pytorch_model.safetensors" "$m/"
sed 's/"rope_type": "interleaved"/"rope_type": "split"/' "$M/config.json" \
    >"$m/config.json"
expect_status 0 "$LATENTQ" forward --model "$m" --component connectors \
    --inputs "$D/connectors/left.inputs.safetensors" --out "$T/split.st"
checks=$((checks + 1))
"$CMP" "$D/index.json" "$D" connectors/left.output.safetensors "$T/split.st" \
    video_text_embedding >/dev/null && fail "split RoPE gave interleaved's"

# Bad call arguments and inputs name the rule.
expect_status 64 "$LATENTQ" forward --model "$M" --component connectors \
    --inputs "$D/connectors/left.inputs.safetensors" --set padding_side=up \
    --out "$T/x.st"
expect_grep 'padding_side "up" is not left or right' "$T/err"
expect_status 64 "$LATENTQ" forward --model "$M" --component connectors \
    --inputs "$D/connectors/left.inputs.safetensors" --set padding_side \
    --out "$T/x.st"
expect_grep 'forward: --set wants NAME=VALUE .*not "padding_side"' "$T/err"
expect_status 64 "$LATENTQ" forward --model "$M" --component vocoder \
    --inputs "$D/connectors/left.inputs.safetensors" --set padding_side=left \
    --out "$T/x.st"
expect_grep 'connectors. padding_side and scale_factor' "$T/err"
"$ST" fill "$T/h7.st" text_encoder_hidden_states 2 7 96
"$ST" pick "$T/m7.st" "$D/connectors/left.inputs.safetensors" attention_mask
expect_status 65 "$LATENTQ" forward --model "$M" --component connectors \
    --inputs "$T/h7.st" --inputs "$T/m7.st" --out "$T/x.st"
expect_grep 'attention_mask is \[2, 8\], expected \[2, 7\]' "$T/err"
"$ST" fill "$T/h95.st" text_encoder_hidden_states 2 8 95
expect_status 65 "$LATENTQ" forward --model "$M" --component connectors \
    --inputs "$T/h95.st" --inputs "$T/m7.st" --out "$T/x.st"
expect_grep 'text_encoder_hidden_states must be \[B, T, 96\]' "$T/err"
# T = 6 is not a multiple of the video connector's 4 registers
"$ST" fill "$T/h6.st" text_encoder_hidden_states 2 6 96
"$ST" crop "$T/m6.st" "$D/connectors/left.inputs.safetensors" \
    attention_mask 1 0 6
expect_status 65 "$LATENTQ" forward --model "$M" --component connectors \
    --inputs "$T/h6.st" --inputs "$T/m6.st" --out "$T/x.st"
expect_grep 'sequence length 6 is not a multiple of the 4 learnable registers' "$T/err"
# a row without any valid token, and a mask value other than 0 / 1
"$ST" zeros "$T/m0.st" attention_mask 2 8
expect_status 65 "$LATENTQ" forward --model "$M" --component connectors \
    --inputs "$T/m0.st" --inputs "$D/connectors/left.inputs.safetensors" \
    --out "$T/x.st"
expect_grep 'attention_mask: attention_mask row 0 has no valid token \(of 8\)' "$T/err"
"$ST" fill "$T/m2.st" attention_mask 2 8
expect_status 65 "$LATENTQ" forward --model "$M" --component connectors \
    --inputs "$T/m2.st" --inputs "$D/connectors/left.inputs.safetensors" \
    --out "$T/x.st"
expect_grep 'attention_mask\[0\] is .*; it must hold 0 \(padding\) or 1 \(token\)' "$T/err"

cfg=$M/config.json
bad_config "$cfg" 's/"per_modality_projections": false/"per_modality_projections": true/' \
    LQ-MODEL-006 'per_modality_projections: per_modality_projections true .*not implemented yet' \
    connectors "$D/connectors/left.inputs.safetensors"
bad_config "$cfg" 's/"rope_type": "interleaved"/"rope_type": "spiral"/' LQ-MODEL-003 \
    'rope_type: rope_type "spiral" is not "interleaved" or "split"' \
    connectors "$D/connectors/left.inputs.safetensors"
bad_config "$cfg" 's/"audio_connector_attention_head_dim": 16/"audio_connector_attention_head_dim": 8/' \
    LQ-MODEL-003 "audio_connector_num_attention_heads: the audio connector's 2 heads x 8 head_dim is not caption_channels 32" \
    connectors "$D/connectors/left.inputs.safetensors"
finish
