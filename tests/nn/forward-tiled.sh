#!/bin/sh
# Tiled and frame-wise VAE decoding (AutoencoderKLLTXVideo.tiled_decode /
# _temporal_tiled_decode) through `latentq forward --set`, against the
# upstream goldens of tests/data/ltxv-extra (case vae_tiled: untiled,
# spatial, temporal, both; 0.9.0- and 0.9.1-style decoders, the 0.9.1 one
# with the per-tile injected noise as upstream drew it).
. "${top_srcdir:-.}/tests/cli/common.sh"

D=$top_srcdir/tests/data/ltxv-extra
CMP=${top_builddir:-.}/tests/nn/st-compare
ST=${top_builddir:-.}/tests/render/st-tool
TILE="--set tile_sample_min_height=48 --set tile_sample_min_width=48
    --set tile_sample_min_num_frames=8 --set tile_sample_stride_height=32
    --set tile_sample_stride_width=32 --set tile_sample_stride_num_frames=4"

for v in vae090 vae091; do
	for m in untiled spatial temporal spatial_temporal; do
		case $m in
		untiled) flags="--set use_tiling=false" ;;
		spatial) flags="--set use_tiling=true" ;;
		temporal) flags="--set use_framewise_decoding=true" ;;
		*) flags="--set use_tiling=true --set use_framewise_decoding=true" ;;
		esac
		set -- --inputs "$D/vae_tiled/$v/inputs.safetensors"
		[ -f "$D/vae_tiled/$v/$m.inject_noise.safetensors" ] &&
		    set -- "$@" --inputs "$D/vae_tiled/$v/$m.inject_noise.safetensors"
		# shellcheck disable=SC2086
		expect_status 0 "$LATENTQ" forward --model "$D/models/$v" \
		    --component vae-decoder "$@" $TILE $flags --out "$T/$v-$m.st"
		checks=$((checks + 1))
		"$CMP" "$D/index.json" "$D" "vae_tiled/$v/$m.output.safetensors" \
		    "$T/$v-$m.st" || fail "$v $m beyond suggested_atol"
	done
done

# Tiles at least as large as the latent: upstream's strict ">" tests take
# the plain decoder path, so the bits equal a decode without --set.
V=$D/vae_tiled/vae090
expect_status 0 "$LATENTQ" forward --model "$D/models/vae090" \
    --component vae-decoder --inputs "$V/inputs.safetensors" --out "$T/plain.st"
expect_status 0 "$LATENTQ" forward --model "$D/models/vae090" \
    --component vae-decoder --inputs "$V/inputs.safetensors" \
    --set use_tiling=true --set use_framewise_decoding=true \
    --set tile_sample_min_height=48 --set tile_sample_min_width=64 \
    --set tile_sample_min_num_frames=16 --set tile_sample_stride_height=48 \
    --set tile_sample_stride_width=64 --set tile_sample_stride_num_frames=16 \
    --out "$T/big.st"
checks=$((checks + 1))
"$ST" diff "$T/big.st" "$T/plain.st" sample 0 >/dev/null ||
    fail "tiles covering the latent changed the decode"
# ... and tiles that do split it change the result (blending is not a no-op).
checks=$((checks + 1))
"$ST" diff "$T/vae090-spatial.st" "$T/plain.st" sample 1e-3 >/dev/null &&
    fail "spatial tiles gave the untiled decode"

# A causal decoder, odd latent sizes (tests/data/ltxv's vae_causal: z
# [1, 16, 3, 3, 3]) with tiles that leave a one-cell border tile and no
# overlap in time (stride = tile: blend extent 0).
C=$top_srcdir/tests/data/ltxv/vae/vae_causal
expect_status 0 "$LATENTQ" forward --model "$C/model/vae" --component vae-decoder \
    --inputs "$C/decode.inputs.safetensors" --set use_tiling=true \
    --set use_framewise_decoding=true --set tile_sample_min_height=32 \
    --set tile_sample_min_width=32 --set tile_sample_stride_height=16 \
    --set tile_sample_stride_width=16 --set tile_sample_min_num_frames=4 \
    --set tile_sample_stride_num_frames=4 --out "$T/causal.st"
expect_status 0 "$LATENTQ" forward --model "$C/model/vae" --component vae-decoder \
    --inputs "$C/decode.inputs.safetensors" --out "$T/causal-plain.st"
checks=$((checks + 1))
"$ST" diff "$T/causal.st" "$T/causal-plain.st" sample 100 >/dev/null ||
    fail "causal tiled decode: shape differs from the untiled one"

# Bad attributes name the attribute, the value and the rule.
expect_status 64 "$LATENTQ" forward --model "$D/models/vae090" \
    --component vae-decoder --inputs "$V/inputs.safetensors" \
    --set tile_min_height=48 --out "$T/x.st"
expect_grep 'tile_min_height.*not a VAE tiling attribute' "$T/err"
expect_status 64 "$LATENTQ" forward --model "$D/models/vae090" \
    --component vae-decoder --inputs "$V/inputs.safetensors" \
    --set use_tiling=maybe --out "$T/x.st"
expect_grep 'use_tiling.*"maybe" is not a boolean' "$T/err"
expect_status 65 "$LATENTQ" forward --model "$D/models/vae090" \
    --component vae-decoder --inputs "$V/inputs.safetensors" \
    --set use_tiling=true --set tile_sample_min_height=8 --out "$T/x.st"
expect_grep 'tile_sample_min_height 8 is below the VAE.s compression ratio 16' "$T/err"
expect_status 65 "$LATENTQ" forward --model "$D/models/vae090" \
    --component vae-decoder --inputs "$V/inputs.safetensors" \
    --set use_framewise_decoding=true --set tile_sample_stride_num_frames=32 \
    --out "$T/x.st"
expect_grep 'tile_sample_stride_num_frames 32 is larger than tile_sample_min_num_frames 16' "$T/err"
expect_status 64 "$LATENTQ" forward --model "$D/models/vae090" \
    --component transformer --inputs "$V/inputs.safetensors" \
    --set use_tiling=true --out "$T/x.st"
checks=$((checks + 1))
[ -e "$T/x.st" ] && fail "a failed forward wrote its output"
finish
