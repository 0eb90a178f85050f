#!/bin/sh
# AutoencoderKLLTX2Audio's decoder (diffusers autoencoder_kl_ltx2_audio.py)
# through `latentq forward --component audio-vae-decoder`, against the
# upstream goldens of tests/data/ltx2 (case audio_vae): avae (no attention)
# and avae_attn (mid attention and attention at resolution 16), the sample
# and every intermediate within suggested_atol; the crop / zero-pad to
# mel_bins; and the configs upstream refuses, by name.
. "${top_srcdir:-.}/tests/cli/common.sh"
. "$top_srcdir/tests/nn/ltx2-common.sh"


for v in avae avae_attn; do
	A=$D/audio_vae/$v
	expect_status 0 "$LATENTQ" forward --model "$A/model/audio_vae" \
	    --component audio-vae-decoder --inputs "$A/decode.inputs.safetensors" \
	    --dump-intermediates --out "$T/$v.st"
	compare "audio_vae/$v/decode.output.safetensors" "$T/$v.st"
	compare "audio_vae/$v/decode.intermediates.safetensors" "$T/$v.st"
done
# the pipeline-style parent folder (model/ holding audio_vae/)
A=$D/audio_vae/avae
expect_status 0 "$LATENTQ" forward --model "$A/model" \
    --component audio-vae-decoder --inputs "$A/decode.inputs.safetensors" \
    --out "$T/parent.st"
compare audio_vae/avae/decode.output.safetensors "$T/parent.st"

# mel_bins 20 (wider than the decoder's 16): the columns past 16 are zero
# padding and the rest is the golden sample; mel_bins 12 crops it.
cfg=$A/model/audio_vae/config.json
for mb in 20 12; do
	m=$T/mel$mb
	mkdir -p "$m"
	ln -s "$(cd "$A/model/audio_vae" && pwd)/diffusion_pytorch_model.safetensors" "$m/"
	sed "s/\"mel_bins\": 16/\"mel_bins\": $mb/" "$cfg" >"$m/config.json"
	expect_status 0 "$LATENTQ" forward --model "$m" \
	    --component audio-vae-decoder --inputs "$A/decode.inputs.safetensors" \
	    --out "$T/mel$mb.st"
done
"$ST" crop "$T/crop20.st" "$T/mel20.st" sample 3 0 16 || fail "st-tool crop"
compare audio_vae/avae/decode.output.safetensors "$T/crop20.st"
"$ST" crop "$T/pad20.st" "$T/mel20.st" sample 3 16 4 || fail "st-tool crop"
"$ST" zeros "$T/zero.st" sample 2 2 25 4
expect_status 0 "$ST" diff "$T/pad20.st" "$T/zero.st" sample 0
"$ST" crop "$T/gold12.st" "$D/audio_vae/avae/decode.output.safetensors" \
    sample 3 0 12 || fail "st-tool crop"
expect_status 0 "$ST" diff "$T/mel12.st" "$T/gold12.st" sample 1e-5

# A latent with the wrong channel count names the rule.
"$ST" fill "$T/bad.st" z 1 3 7 4
expect_status 65 "$LATENTQ" forward --model "$A/model/audio_vae" \
    --component audio-vae-decoder --inputs "$T/bad.st" --out "$T/x.st"
expect_grep 'z is .*expected \[B, 2, L, M\]' "$T/err"

bad_config "$cfg" 's/"causality_axis": "height"/"causality_axis": "time"/' LQ-MODEL-003 \
    'causality_axis: causality_axis "time" is not one of none, width, height' \
    audio-vae-decoder "$A/decode.inputs.safetensors"
bad_config "$cfg" 's/"causality_axis": "height"/"causality_axis": null/' LQ-MODEL-003 \
    'causality_axis: causality_axis null is refused upstream' \
    audio-vae-decoder "$A/decode.inputs.safetensors"
bad_config "$cfg" 's/"norm_type": "pixel"/"norm_type": "group"/' LQ-MODEL-003 \
    'norm_type: norm_type "group" with causality_axis "height" is refused upstream' \
    audio-vae-decoder "$A/decode.inputs.safetensors"
bad_config "$cfg" 's/"norm_type": "pixel"/"norm_type": "layer"/' LQ-MODEL-003 \
    'norm_type: norm_type "layer" is not "pixel"' \
    audio-vae-decoder "$A/decode.inputs.safetensors"
bad_config "$cfg" 's/"_class_name": "AutoencoderKLLTX2Audio"/"_class_name": "AutoencoderKLLTXVideo"/' \
    LQ-MODEL-002 'AutoencoderKLLTXVideo' \
    audio-vae-decoder "$A/decode.inputs.safetensors"
finish
