#!/bin/sh
# vae_tiling in renders, on small shapes of the demo model (VAE ratios 8
# spatial, 2 temporal): off / auto / a mapping, the auto choice when the
# device is small (LATENTQ_GPU_HEAP_LIMIT), frames streamed range by range
# to the MP4 and the PNG folder, and a decode that runs out of device
# memory retried from the final latents with smaller tiles, never
# denoising again.
. "${top_srcdir:-.}/tests/cli/render-common.sh"

# job NAME [vae_tiling: VALUE]
job() {
	echo "  - name: $1"
	echo "    prompt: a red circle moving left on a black background"
	echo "    seed: 7"
	[ $# -gt 1 ] && echo "    vae_tiling: $2"
	return 0
}
# same DIR/A DIR/B: the two jobs decoded the same pixels (the MP4s differ
# anyway: their tags name the job and its config digest)
same() {
	"${top_builddir:-.}/tests/render/st-tool" diff "$1.safetensors" \
	    "$2.safetensors" video_uint8 0 >/dev/null
}
tiling_of() {	# DB JOB -> the vae_tiling event's choice
	sqlite3 "$1" "SELECT json_extract(detail, '\$.mode') || ' ' ||
	    json_extract(detail, '\$.choice') FROM events e JOIN jobs j ON
	    j.id = e.job_id WHERE j.name = '$2' AND kind = 'vae_tiling'"
}
SMALL='{tile_sample_min_height: 32, tile_sample_min_width: 32, tile_sample_stride_height: 24, tile_sample_stride_width: 24, tile_sample_min_num_frames: 4, tile_sample_stride_num_frames: 2}'
SHRUNK='{tile_sample_min_height: 256, tile_sample_min_width: 256, tile_sample_stride_height: 224, tile_sample_stride_width: 224, tile_sample_min_num_frames: 8, tile_sample_stride_num_frames: 4}'

mkdir -p "$T/a"
write_manifest "$T/a/m.yaml" 2
{
	job off off
	job auto
	job set "$SMALL"
	echo "    frames: png/{name}"
	job shrunk "$SHRUNK"
} >> "$T/a/m.yaml"
sed -i 's|^  output: videos/{name}.mp4$|&\n  save_tensors: t/{name}.safetensors|' "$T/a/m.yaml"
expect_status 0 "$LATENTQ" -d "$T/a.db" render "$T/a/m.yaml"
V=$T/a/videos
expect_eq "$(tiling_of "$T/a.db" off)" "off untiled" "off: untiled"
expect_eq "$(tiling_of "$T/a.db" auto)" "auto untiled" "auto on a large device: untiled"
expect_eq "$(tiling_of "$T/a.db" set)" "set spatial 32x32/24x24 temporal 4/2" "a mapping as written"
checks=$((checks + 3))
same "$T/a/t/off" "$T/a/t/auto" || fail "auto (untiled) and off differ"
same "$T/a/t/off" "$T/a/t/set" && fail "tiles did not change the decode"
same "$T/a/t/set" "$T/a/t/shrunk" && fail "two tilings gave one video"
# Tiles of 2 latent frames: the video reached the MP4 and the frames folder
# in four ranges (5 + 2 + 2 + 0 frames), all 9 frames there.
expect_eq "$(ls "$T/a/png/set" | grep -c '^frame_000[1-9]\.png$')" 9 "one PNG per frame"
checks=$((checks + 1))
[ -s "$V/set.mp4" ] && [ -s "$V/set.sheet.png" ] || fail "set: no MP4 or contact sheet"

# auto on a device of 7 MB: the untiled decode (about 2.7 MB of
# activations next to 5 MB of VAE weights) does not fit; tiles do.
mkdir -p "$T/b"
write_manifest "$T/b/m.yaml" 2
job auto >> "$T/b/m.yaml"
echo "    save_tensors: auto.safetensors" >> "$T/b/m.yaml"
LATENTQ_GPU_HEAP_LIMIT=7000000 expect_status 0 "$LATENTQ" -d "$T/b.db" render "$T/b/m.yaml"
expect_grep '^auto spatial [0-9]+x[0-9]+/[0-9]+x[0-9]+ temporal [0-9]+/[0-9]+$' \
    /dev/stdin <<EOT
$(tiling_of "$T/b.db" auto)
EOT
expect_eq "$(sqlite3 "$T/b.db" "SELECT json_extract(detail, '\$.fits') FROM events WHERE kind = 'vae_tiling'")" 1 "the choice fits"
checks=$((checks + 1))
same "$T/b/auto" "$T/a/t/auto" && fail "a small device's auto gave the untiled video"

# Out of device memory in the first two decode tries: retried in the same
# attempt with upstream's default tiles, then half of them; the denoising
# loop ran once; the video is the one those tiles give.
mkdir -p "$T/c"
write_manifest "$T/c/m.yaml" 2
job auto >> "$T/c/m.yaml"
echo "    save_tensors: auto.safetensors" >> "$T/c/m.yaml"
LATENTQ_FAULT="oom@decode:1,oom@decode:2" expect_status 0 "$LATENTQ" \
    -d "$T/c.db" render "$T/c/m.yaml"
expect_grep 'decode ran out of device memory' "$T/err"
expect_eq "$(sqlite3 "$T/c.db" "SELECT group_concat(json_extract(detail, '\$.try') || ':' || json_extract(detail, '\$.choice'), ',') FROM events WHERE kind = 'decode_retry'")" \
    "2:spatial 512x512/448x448 temporal 16/8,3:spatial 256x256/224x224 temporal 8/4" \
    "two retries, smaller tiles the second time"
expect_eq "$(sqlite3 "$T/c.db" "SELECT count(*) FROM events WHERE kind = 'phase' AND detail LIKE '%denoise%'")" 1 "denoised once"
expect_eq "$(sqlite3 "$T/c.db" "SELECT state || ' ' || attempts FROM jobs")" "done 1" "done in one attempt"
checks=$((checks + 2))
same "$T/c/auto" "$T/a/t/shrunk" || fail "the retried decode is not the shrunk tiles' video"
[ -e "$T/c/videos/auto.mp4.part" ] && fail "a failed try left its .part file"
finish
