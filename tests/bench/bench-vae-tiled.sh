#!/bin/sh
# bench-vae-tiled.sh — VAE decode time and device memory, untiled against
# tiled (spatial + temporal tiles), at two latent sizes, through
# `latentq forward -v --component vae-decoder` on the goldens' 0.9.1-style
# VAE (tests/data/ltxv-extra/models/vae091: 16 latent channels, spatial
# ratio 16, temporal 4, noise injection from --seed):
#   [1, 16, 5, 8, 8]    -> 17 x 128 x 128 frames
#   [1, 16, 9, 16, 16]  -> 33 x 256 x 256 frames
# Tiles: 64 x 64 pixels every 48, 8 frames every 4.
set -eu
LATENTQ=${LATENTQ:-./latentq}
top_srcdir=${top_srcdir:-.}
ST=${ST_TOOL:-./tests/render/st-tool}
M=$top_srcdir/tests/data/ltxv-extra/models/vae091
T=$(mktemp -d /tmp/latentq-bench.XXXXXX)
trap 'rm -rf "$T"' EXIT
[ -x "$ST" ] || make tests/render/st-tool >/dev/null
TILES="--set use_tiling=true --set use_framewise_decoding=true
    --set tile_sample_min_height=64 --set tile_sample_min_width=64
    --set tile_sample_stride_height=48 --set tile_sample_stride_width=48
    --set tile_sample_min_num_frames=8 --set tile_sample_stride_num_frames=4"
"$ST" fill "$T/temb.st" temb 1
for z in 5x8x8 9x16x16; do
	f=${z%%x*}; rest=${z#*x}; h=${rest%%x*}; w=${rest#*x}
	"$ST" fill "$T/z-$z.st" z 1 16 "$f" "$h" "$w"
	for mode in untiled tiled; do
		set -- --model "$M" --component vae-decoder --inputs "$T/z-$z.st" \
		    --inputs "$T/temb.st" --seed 1 --out "$T/out.st"
		# shellcheck disable=SC2086
		[ "$mode" = tiled ] && set -- "$@" $TILES
		t0=$(date +%s.%N)
		"$LATENTQ" -v forward "$@" 2> "$T/log"
		t1=$(date +%s.%N)
		peak=$(sed -n 's/.*total peak \([0-9.]*\) MiB.*/\1/p' "$T/log")
		awk -v z="$z" -v m="$mode" -v a="$t0" -v b="$t1" -v p="$peak" 'BEGIN {
			printf "latent 16x%-8s %-8s decode %6.2f s  device peak %7.2f MiB\n",
			    z, m, b - a, p }'
	done
done
