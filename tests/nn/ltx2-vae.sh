#!/bin/sh
# AutoencoderKLLTX2Video's decoder (diffusers autoencoder_kl_ltx2.py,
# LTX2VideoDecoder3d) through `latentq forward --component vae-decoder`,
# against the upstream goldens of tests/data/ltx2 (case vae): vae_a
# (non-causal, reflect padding, a channel-changing conv_in, residual
# upsamplers with factors 1 and 2) and vae_b (causal, zeros padding,
# timestep conditioning, injected noise in the mid block and up block 1), the
# sample and every intermediate within suggested_atol.  Negative controls:
# the other padding mode or a causal decode no longer match; the call-time
# causal flag (upstream: causal or decoder_causal); and the configs and
# inputs latentq refuses, by name.
. "${top_srcdir:-.}/tests/cli/common.sh"
. "$top_srcdir/tests/nn/ltx2-common.sh"

A=$D/vae/vae_a
B=$D/vae/vae_b

# decode(z) and decode(z, temb) with the recorded noise draws
expect_status 0 "$LATENTQ" forward --model "$A/model/vae" \
    --component vae-decoder --inputs "$A/decode.inputs.safetensors" \
    --dump-intermediates --out "$T/a.st"
compare vae/vae_a/decode.output.safetensors "$T/a.st"
compare vae/vae_a/decode.intermediates.safetensors "$T/a.st"
expect_status 0 "$LATENTQ" forward --model "$B/model/vae" \
    --component vae-decoder --inputs "$B/decode.inputs.safetensors" \
    --inputs "$B/decode.inject_noise.safetensors" --dump-intermediates \
    --out "$T/b.st"
compare vae/vae_b/decode.output.safetensors "$T/b.st"
compare vae/vae_b/decode.intermediates.safetensors "$T/b.st"
# the pipeline-style parent folder (model/ holding vae/)
expect_status 0 "$LATENTQ" forward --model "$A/model" \
    --component vae-decoder --inputs "$A/decode.inputs.safetensors" \
    --out "$T/a2.st"
compare vae/vae_a/decode.output.safetensors "$T/a2.st"

# The memory plan (ltxv_vae_plan, what preflight and render use) within 10%
# of the device's measured high-water mark, as tests/nn/plan-measured.sh
# checks LTX-Video's decoders.
for v in vae_a vae_b; do
	set -- --inputs "$D/vae/$v/decode.inputs.safetensors"
	[ -f "$D/vae/$v/decode.inject_noise.safetensors" ] &&
	    set -- "$@" --inputs "$D/vae/$v/decode.inject_noise.safetensors"
	expect_status 0 "$LATENTQ" -v forward --model "$D/vae/$v/model/vae" \
	    --component vae-decoder "$@" --out "$T/plan.st"
	check_plan "vae decoder"
done

# variant CASE NAME SED_EXPR : a copy of CASE's model folder (weights
# linked) with its config edited by SED_EXPR, as $T/NAME.
variant() {
	vm=$T/$2
	mkdir -p "$vm"
	ln -s "$(cd "$1/model/vae" && pwd)/diffusion_pytorch_model.safetensors" "$vm/"
	sed "$3" "$1/model/vae/config.json" >"$vm/config.json"
	cmp -s "$1/model/vae/config.json" "$vm/config.json" &&
	    fail "variant $2: '$3' changed nothing"
}

# must_differ REL_FILE MINE WHAT : MINE must not match the golden file.
must_differ() {
	checks=$((checks + 1))
	"$CMP" "$D/index.json" "$D" "$1" "$2" >/dev/null &&
	    fail "$3 still matched $1"
}

# Padding mode: reflect (vae_a) and zeros (vae_b) are each needed.
variant "$A" a-zeros 's/"decoder_spatial_padding_mode": "reflect"/"decoder_spatial_padding_mode": "zeros"/'
expect_status 0 "$LATENTQ" forward --model "$T/a-zeros" \
    --component vae-decoder --inputs "$A/decode.inputs.safetensors" \
    --out "$T/o.st"
must_differ vae/vae_a/decode.output.safetensors "$T/o.st" "zeros padding"
variant "$B" b-reflect 's/"decoder_spatial_padding_mode": "zeros"/"decoder_spatial_padding_mode": "reflect"/'
expect_status 0 "$LATENTQ" forward --model "$T/b-reflect" \
    --component vae-decoder --inputs "$B/decode.inputs.safetensors" \
    --inputs "$B/decode.inject_noise.safetensors" --out "$T/o.st"
must_differ vae/vae_b/decode.output.safetensors "$T/o.st" "reflect padding"

# Causal: decode(z, causal=True) of the non-causal vae_a is what a
# decoder_causal config gives, and not the golden; causal=False cannot make
# the causal vae_b non-causal.
"$ST" fill "$T/c1.st" causal 1 || fail "st-tool fill"
"$ST" zeros "$T/c0.st" causal 1 || fail "st-tool zeros"
expect_status 0 "$LATENTQ" forward --model "$A/model/vae" \
    --component vae-decoder --inputs "$A/decode.inputs.safetensors" \
    --inputs "$T/c1.st" --out "$T/a-call.st"
variant "$A" a-causal 's/"decoder_causal": false/"decoder_causal": true/'
expect_status 0 "$LATENTQ" forward --model "$T/a-causal" \
    --component vae-decoder --inputs "$A/decode.inputs.safetensors" \
    --out "$T/a-cfg.st"
checks=$((checks + 1))
cmp -s "$T/a-call.st" "$T/a-cfg.st" ||
    fail "decode(causal=True) differs from decoder_causal true"
must_differ vae/vae_a/decode.output.safetensors "$T/a-call.st" "a causal decode"
expect_status 0 "$LATENTQ" forward --model "$A/model/vae" \
    --component vae-decoder --inputs "$A/decode.inputs.safetensors" \
    --inputs "$T/c0.st" --out "$T/o.st"
compare vae/vae_a/decode.output.safetensors "$T/o.st"
expect_status 0 "$LATENTQ" forward --model "$B/model/vae" \
    --component vae-decoder --inputs "$B/decode.inputs.safetensors" \
    --inputs "$B/decode.inject_noise.safetensors" --inputs "$T/c0.st" \
    --out "$T/o.st"
compare vae/vae_b/decode.output.safetensors "$T/o.st"

# Inputs: the noise draws and the timestep are required; causal is a flag;
# reflect padding needs a latent of at least 2 x 2.
expect_status 65 "$LATENTQ" forward --model "$B/model/vae" \
    --component vae-decoder --inputs "$B/decode.inputs.safetensors" \
    --out "$T/x.st"
expect_grep 'injected-noise field decoder.mid_block.resnets.0#0 \(\[3, 2\]\) is missing' "$T/err"
"$ST" pick "$T/zonly.st" "$B/decode.inputs.safetensors" z || fail "st-tool pick"
expect_status 65 "$LATENTQ" forward --model "$B/model/vae" \
    --component vae-decoder --inputs "$T/zonly.st" \
    --inputs "$B/decode.inject_noise.safetensors" --out "$T/x.st"
expect_grep 'input decode_timestep is missing.*\[LQ-NN-INPUT\]' "$T/err"
"$ST" fill "$T/c2.st" causal 2 || fail "st-tool fill"
expect_status 65 "$LATENTQ" forward --model "$A/model/vae" \
    --component vae-decoder --inputs "$A/decode.inputs.safetensors" \
    --inputs "$T/c2.st" --out "$T/x.st"
expect_grep 'causal has 2 values; it is one flag \(0 or 1\).*\[LQ-NN-INPUT\]' "$T/err"
"$ST" fill "$T/thin.st" z 1 8 2 1 4 || fail "st-tool fill"
expect_status 65 "$LATENTQ" forward --model "$A/model/vae" \
    --component vae-decoder --inputs "$T/thin.st" --out "$T/x.st"
expect_grep 'z is 1 x 4 \(H x W\): decoder_spatial_padding_mode "reflect" pads by 1 and needs a latent of at least 2 x 2.*\[LQ-NN-SHAPE\]' "$T/err"
checks=$((checks + 1))
[ -e "$T/x.st" ] && fail "a failed forward wrote its output"

# Configs latentq does not run are refused by name, before any weight.
cfg=$A/model/vae/config.json
bad_config "$cfg" '/"upsample_type"/{n;s/"spatiotemporal"/"spatial"/;}' LQ-MODEL-006 \
    'upsample_type: upsample_type "spatial" \(entry 0\) is not implemented; use "spatiotemporal"' \
    vae-decoder "$A/decode.inputs.safetensors"
bad_config "$cfg" '/"upsample_type"/{n;s/"spatiotemporal"/"sideways"/;}' LQ-MODEL-003 \
    'upsample_type: upsample_type "sideways" \(entry 0\) is not spatial, temporal or spatiotemporal' \
    vae-decoder "$A/decode.inputs.safetensors"
bad_config "$cfg" 's/"decoder_spatial_padding_mode": "reflect"/"decoder_spatial_padding_mode": "replicate"/' \
    LQ-MODEL-006 \
    'decoder_spatial_padding_mode: decoder_spatial_padding_mode "replicate" is not implemented; use "zeros" or "reflect"' \
    vae-decoder "$A/decode.inputs.safetensors"
bad_config "$cfg" 's/"decoder_spatial_padding_mode": "reflect"/"decoder_spatial_padding_mode": "mirror"/' \
    LQ-MODEL-003 \
    'decoder_spatial_padding_mode "mirror" is not a torch padding_mode' \
    vae-decoder "$A/decode.inputs.safetensors"
bad_config "$cfg" '/"upsample_type"/,/\]/{/"spatiotemporal",$/d;}' LQ-MODEL-004 \
    'upsample_type: list is shorter than the 2 decoder blocks' \
    vae-decoder "$A/decode.inputs.safetensors"
# LTX2VideoEncoder3d is not written: the encoder refuses the class
# (a config it would otherwise take: scaling_factor only moves latents)
"$ST" fill "$T/video.st" sample 1 3 1 32 32 || fail "st-tool fill"
bad_config "$cfg" 's/"scaling_factor": 1.0/"scaling_factor": 2.0/' LQ-MODEL-006 \
    '_class_name AutoencoderKLLTX2Video: its encoder \(LTX2VideoEncoder3d\) is not implemented' \
    vae-encoder "$T/video.st"
finish
