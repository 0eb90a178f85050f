#!/bin/sh
# Image-to-video (LTXImageToVideoPipeline) through a render job, against the
# upstream golden tests/data/ltxv-extra/i2v/i2vA (0.9.1-style VAE, CFG 3,
# every random draw supplied with `noise:`): latents_after_step within the
# per-step suggested_atol, video_np within its atol, video_uint8 within ±1.
# Then the same job with latentq's own draws, killed (SIGKILL) while
# encoding the image and mid-denoise, resumes to a byte-identical MP4; and
# an image of the wrong size is refused naming the rule.
. "${top_srcdir:-.}/tests/cli/common.sh"

D=$top_srcdir/tests/data/ltxv-extra
I=$D/i2v/i2vA
CMP=${top_builddir:-.}/tests/nn/st-compare
ST=${top_builddir:-.}/tests/render/st-tool
digest() { sha256sum "$1" | cut -d' ' -f1; }

mkdir -p "$T/gold"
"$ST" png "$T/gold/image.png" "$I/inputs.safetensors" image_uint8 ||
    fail "st-tool png"
"$ST" merge "$T/gold/noise.safetensors" "$I/conditioning.safetensors" \
    "$I/output.safetensors" "$I/decode.inject_noise.safetensors" ||
    fail "st-tool merge"
# manifest NAME DIR [EXTRA LINE] : the i2vA call as a job
manifest() {
	cat > "$2/m.yaml" <<YAML
jobs:
  - name: $1
    model: $top_srcdir/tests/data/pipeline/pipeB/model
    transformer: $D/models/transformer
    vae: $D/models/vae091
    prompt_embeds: $I/inputs.safetensors
    image: $T/gold/image.png
    height: 64
    width: 96
    num_frames: 9
    frame_rate: 25
    num_inference_steps: 3
    guidance_scale: 3.0
    decode_timestep: 0.05
    decode_noise_scale: 0.025
    max_sequence_length: 12
    seed: 7
    save_tensors: tensors.safetensors
    output: videos/$1.mp4
${3:-}
YAML
}
manifest gold "$T/gold" "    noise: noise.safetensors"
expect_status 0 "$LATENTQ" -d "$T/gold.db" render "$T/gold/m.yaml"
checks=$((checks + 2))
"$CMP" "$D/index.json" "$D" i2v/i2vA/steps.safetensors \
    "$T/gold/tensors.safetensors" latents_after_step ||
    fail "i2vA latents_after_step beyond suggested_atol"
"$CMP" "$D/index.json" "$D" i2v/i2vA/output.safetensors \
    "$T/gold/tensors.safetensors" video_np video_uint8 ||
    fail "i2vA video beyond suggested_atol"
expect_eq "$(sqlite3 "$T/gold.db" "SELECT count(*) FROM events WHERE kind = 'phase' AND detail LIKE '%encode-image%'")" 1 "gold: one encode-image phase"

# latentq's own draws (seed 7): the reference, then SIGKILLs while
# encoding the image and after step 2, each resumed by the retry.
for run in ref kimg kstep; do
	mkdir -p "$T/$run"
	cp "$T/gold/image.png" "$T/$run/"
	manifest ref "$T/$run"
done
expect_status 0 "$LATENTQ" -d "$T/ref.db" render "$T/ref/m.yaml"
ref=$(digest "$T/ref/videos/ref.mp4")
LATENTQ_FAULT="kill@encode-image#1" expect_status 0 "$LATENTQ" \
    -d "$T/kimg.db" render "$T/kimg/m.yaml"
LATENTQ_FAULT="kill@denoise:2#1" expect_status 0 "$LATENTQ" \
    -d "$T/kstep.db" render "$T/kstep/m.yaml"
for run in kimg kstep; do
	expect_eq "$(sqlite3 "$T/$run.db" "SELECT count(*) FROM events WHERE kind = 'crashed'")" 1 "$run: one crash"
	expect_eq "$(digest "$T/$run/videos/ref.mp4")" "$ref" "$run: MP4 identical"
done
expect_eq "$(sqlite3 "$T/kstep.db" "SELECT detail FROM events WHERE kind = 'resumed'")" '{"step":2}' "kstep: resumed after step 2"
# resuming after step 2 did not encode the image again
expect_eq "$(sqlite3 "$T/kstep.db" "SELECT count(*) FROM events WHERE kind = 'phase' AND detail LIKE '%encode-image%'")" 1 "kstep: the image encoded once"
# the seed's own draws differ from upstream's
checks=$((checks + 1))
cmp -s "$T/ref/videos/ref.mp4" "$T/gold/videos/gold.mp4" &&
    fail "seed 7 rendered upstream's draws"

# The image's digest (recorded by preflight in the config, so part of the
# config digest) is in the MP4's provenance.
want=$(sqlite3 "$T/ref.db" "SELECT json_extract(config_json, '$.image_digest') FROM jobs")
checks=$((checks + 1))
[ -n "$want" ] || fail "ref: no image_digest in the job's config"
ffprobe -v error -show_entries format_tags=latentq_image_digest -of default=nw=1:nk=1 \
    "$T/ref/videos/ref.mp4" > "$T/tag" 2>&1
expect_eq "$(cat "$T/tag")" "$want" "ref: the MP4 records the image's digest"

# An image that is not the job's size is refused by preflight, naming both
# sizes and the rule.
mkdir -p "$T/size"
cp "$T/gold/image.png" "$T/size/"
manifest size "$T/size"
sed -i -e 's/    width: 96/    width: 128/' "$T/size/m.yaml"
expect_status 65 "$LATENTQ" preflight --no-device "$T/size/m.yaml"
expect_grep 'LQ-IMG-002.*image .* is 96x64 \(width x height\); the job renders 128x64' "$T/out"

# A JPEG (libavcodec, BT.601 full range as JFIF declares): the golden image
# as a 4:4:4 JPEG decodes to the pixels FFmpeg's own converter gives (a
# BT.709 matrix would shift the saturated colours), and a job renders from
# it.
mkdir -p "$T/jpeg"
ffmpeg -v error -y -i "$T/gold/image.png" -pix_fmt yuvj444p -q:v 1 \
    "$T/jpeg/image.jpg" || fail "ffmpeg could not write a JPEG"
ffmpeg -v error -y -i "$T/jpeg/image.jpg" -pix_fmt rgb24 "$T/jpeg/ffmpeg.png" ||
    fail "ffmpeg could not convert the JPEG"
"$ST" image "$T/jpeg/pixels.st" "$T/jpeg/image.jpg" rgb 2>/dev/null ||
    fail "st-tool image"
"$ST" image "$T/jpeg/ffmpeg.st" "$T/jpeg/ffmpeg.png" rgb || fail "st-tool image"
checks=$((checks + 1))
"$ST" diff "$T/jpeg/pixels.st" "$T/jpeg/ffmpeg.st" rgb 1 ||
    fail "the JPEG's pixels are not FFmpeg's"
manifest jpeg "$T/jpeg"
sed -i -e "s|image: .*|image: $T/jpeg/image.jpg|" "$T/jpeg/m.yaml"
expect_status 0 "$LATENTQ" -d "$T/jpeg.db" render "$T/jpeg/m.yaml"

# The example of jobs/ runs on the demo model (with 2 steps instead of 20).
mkdir -p "$T/example/images"
sed -e 's|model: models/ltxv-demo|model: '"$top_srcdir"'/jobs/models/ltxv-demo|' \
    -e 's/num_inference_steps: 20/num_inference_steps: 2/' \
    "$top_srcdir/jobs/i2v.yaml" > "$T/example/i2v.yaml"
cp "$top_srcdir/jobs/images/red-circle.png" "$T/example/images/"
expect_status 0 "$LATENTQ" -d "$T/example.db" render "$T/example/i2v.yaml"
checks=$((checks + 1))
[ -s "$T/example/out/red-circle-from-image.mp4" ] || fail "example: no MP4"
finish
