#!/bin/sh
# A demo-sized LTX-2 job with sound (issue 15): `model synth --family ltx2
# --preset demo` writes an LTX2Pipeline folder whose vocoder matches the
# audio VAE's mel hop, jobs/ltx2-demo.yaml renders from the source tree (2
# steps, not 8), and each MP4 holds an H.264 and an AAC stream whose
# durations agree with num_frames / frame_rate: the video exactly (25 / 24
# s, within one video frame), the audio within one AAC frame (1024
# samples) of it, and exactly the (4L - 3) mel frames x 240 samples that
# upstream's audio latents make (L = round(25 / 24 x 16000 / 160 / 4) = 26:
# 24240 samples, 1.010 s).  Preflight does not warn about the audio's
# length (LQ-LTX2-007) for the synthesised model and does for the goldens'
# 8x vocoder.  The memory plan (connectors, transformer, audio VAE,
# vocoder, video VAE) is what the render measures, and a 64 MiB device
# refuses the job (LQ-DEV-001) with a num_frames that fits.  The BWE
# vocoder (--preset demo-bwe, LTX-2.3's LTX2VocoderWithBWE) renders too:
# 48 kHz, the same duration.  About 60 s on lavapipe under load.
. "${top_srcdir:-.}/tests/cli/common.sh"

ST=${top_builddir:-.}/tests/render/st-tool
D=$top_srcdir/tests/data/ltx2

# probe MP4 : "codec_type,codec_name,sample_rate,channels,duration ..."
probe() {
	ffprobe -v error -show_entries \
	    stream=codec_type,codec_name,sample_rate,channels,duration \
	    -of csv=p=0 "$1" | tr '\n' ' '
}
# duration MP4 TYPE : the stream's duration in seconds
duration() {
	ffprobe -v error -select_streams "$2" -show_entries stream=duration \
	    -of csv=p=0 "$1"
}
# within A B TOL : |A - B| <= TOL
within() {
	awk -v a="$1" -v b="$2" -v t="$3" \
	    'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= t) }'
}

# the model, and the example job of jobs/ pointed at it
mkdir -p "$T/ex/models"
expect_status 0 "$LATENTQ" model synth --family ltx2 --preset demo --seed 1 \
    "$T/ex/models/ltx2-demo"
expect_grep "wrote ltx2 model \(preset demo, seed 1, f32\)" "$T/out"
expect_grep '"upsample_factors": \[' "$T/ex/models/ltx2-demo/vocoder/config.json"
sed -e 's|\.\./tests/data|'"$top_srcdir"'/tests/data|' \
    -e 's/num_inference_steps: 8/num_inference_steps: 2/' \
    "$top_srcdir/jobs/ltx2-demo.yaml" > "$T/ex/ltx2-demo.yaml"
printf '    save_tensors: tensors.safetensors\n' >> "$T/ex/ltx2-demo.yaml"
expect_status 0 "$LATENTQ" preflight --no-device "$T/ex/ltx2-demo.yaml"
expect_no_grep "LQ-LTX2-007" "$T/out"
expect_grep "^1 valid, 0 rejected" "$T/out"
expect_status 0 "$LATENTQ" -d "$T/ex.db" render "$T/ex/ltx2-demo.yaml"
expect_eq "$(sqlite3 "$T/ex.db" "SELECT state FROM jobs")" done "demo job done"
video=$(awk 'BEGIN { printf "%.6f", 25 / 24 }')
for v in 0 1; do
	mp4=$T/ex/out/ltx2-demo-$v.mp4
	expect_eq "$(probe "$mp4")" \
	    "h264,video,$video aac,audio,24000,2,1.010000 " \
	    "video $v: H.264 and 24 kHz stereo AAC of the right lengths"
	vd=$(duration "$mp4" v:0)
	ad=$(duration "$mp4" a:0)
	checks=$((checks + 1))
	within "$vd" "$video" "$(awk 'BEGIN { print 1 / 24 }')" ||
	    fail "video $v lasts $vd s, not 25 / 24 s within one frame"
	checks=$((checks + 1))
	within "$ad" "$vd" "$(awk 'BEGIN { print 1024 / 24000 }')" ||
	    fail "audio $v lasts $ad s, more than one AAC frame from the video's $vd s"
	expect_eq "$(ffprobe -v error -show_entries \
	    format_tags=latentq_audio_samples,latentq_audio_sample_rate \
	    -of default=noprint_wrappers=1 "$mp4" | sort | tr '\n' ' ')" \
	    "TAG:latentq_audio_sample_rate=24000 TAG:latentq_audio_samples=24240 " \
	    "video $v: (4 x 26 - 3) mel frames x 240 samples"
done
# the waveform is sound: finite, within the tanh's [-1, 1], not silent
"$ST" zeros "$T/zeros.st" audio_waveform 2 2 24240
checks=$((checks + 1))
"$ST" diff "$T/ex/tensors.safetensors" "$T/zeros.st" audio_waveform 1.0 \
    > "$T/wave.txt" || fail "waveform not finite or outside [-1, 1]"
peak=$(sed -n 's/.*max abs \([^ ]*\) .*/\1/p' "$T/wave.txt")
checks=$((checks + 1))
awk -v p="$peak" 'BEGIN { exit !(p > 1e-3) }' || fail "waveform silent (peak $peak)"

# the memory plan (nn_plan_ltx2) the render recorded is what it used: the
# measured peak within the context's few KiB of it
planned=$(sqlite3 "$T/ex.db" "SELECT json_extract(detail, '$.planned_peak_device_bytes') FROM events WHERE kind = 'peak_device_bytes'")
measured=$(sqlite3 "$T/ex.db" "SELECT json_extract(detail, '$.peak_device_bytes') FROM events WHERE kind = 'peak_device_bytes'")
echo "demo job: planned peak $planned device bytes, measured $measured"
checks=$((checks + 1))
[ -n "$planned" ] && [ "$planned" -gt 0 ] && [ "$measured" -ge "$planned" ] &&
    [ "$measured" -le $((planned + 65536)) ] ||
	fail "planned peak $planned, measured $measured"
expect_eq "$(sqlite3 "$T/ex.db" "SELECT json_extract(detail, '$.peak_device_bytes') FROM events WHERE kind = 'plan'")" \
    "$planned" "the plan event's peak is the one compared"
# preflight plans the same bytes; on a 64 MiB device the job does not fit
# (LQ-DEV-001, the video VAE's decode) and the plan's num_frames does
expect_status 0 "$LATENTQ" preflight --json \
    --device-caps "$top_srcdir/tests/preflight/caps/caps-lavapipe.json" \
    "$T/ex/ltx2-demo.yaml"
expect_grep "\"peak_device_bytes\":[[:space:]]*$planned" "$T/out"
expect_grep '"audio_vae":' "$T/out"
expect_grep '"vocoder":' "$T/out"
sed -e 's/"size":[[:space:]]*2147483648/"size": 67108864/' \
    "$top_srcdir/tests/preflight/caps/caps-lavapipe.json" > "$T/caps64.json"
expect_status 65 "$LATENTQ" preflight --device-caps "$T/caps64.json" \
    "$T/ex/ltx2-demo.yaml"
expect_grep "error LQ-DEV-001: job ltx2-demo: defaults.num_frames: planned peak device memory .* while decode \(VAE decoder\) exceeds 57.60 MiB.*; num_frames: [0-9]+" "$T/out"
nf=$(sed -n 's/.*; num_frames: \([0-9]*\).*/\1/p' "$T/out" | head -1)
checks=$((checks + 1))
[ -n "$nf" ] && [ "$nf" -lt 25 ] && [ $(((nf - 1) % 8)) -eq 0 ] ||
	fail "num_frames hint '$nf' is not a shorter clip on the 8k+1 grid"
sed "s/num_frames: 25/num_frames: $nf/" "$T/ex/ltx2-demo.yaml" > "$T/ex/fits.yaml"
expect_status 0 "$LATENTQ" preflight --device-caps "$T/caps64.json" "$T/ex/fits.yaml"
expect_grep '^1 valid, 0 rejected' "$T/out"
sed "s/num_frames: 25/num_frames: $((nf + 8))/" "$T/ex/ltx2-demo.yaml" > "$T/ex/over.yaml"
expect_status 65 "$LATENTQ" preflight --device-caps "$T/caps64.json" "$T/ex/over.yaml"
expect_grep 'error LQ-DEV-001' "$T/out"

# the goldens' vocoder (8 samples per 10 ms mel frame): warned about
sed -e 's|model: models/ltx2-demo|model: '"$D"'/pipeline/pipe/model|' \
    "$T/ex/ltx2-demo.yaml" > "$T/ex/golden.yaml"
expect_status 0 "$LATENTQ" preflight --no-device "$T/ex/golden.yaml"
expect_grep "warning LQ-LTX2-007: .*the audio lasts 0.034 s for 1.042 s of video .* 8 samples at 24000 Hz per mel frame.* = 240 samples" "$T/out"

# LTX-2.3's BWE vocoder: a 16 kHz stage 1 extended to 48 kHz
expect_status 0 "$LATENTQ" model synth --family ltx2 --preset demo-bwe \
    --seed 1 "$T/ex/models/ltx2-bwe"
expect_grep '"_class_name": "LTX2VocoderWithBWE"' \
    "$T/ex/models/ltx2-bwe/vocoder/config.json"
sed -e 's|models/ltx2-demo|models/ltx2-bwe|' \
    -e 's/num_inference_steps: 2/num_inference_steps: 1/' \
    -e '/save_tensors/d' -e 's/name: ltx2-demo/name: bwe/' \
    "$T/ex/ltx2-demo.yaml" > "$T/ex/bwe.yaml"
expect_status 0 "$LATENTQ" -d "$T/bwe.db" render "$T/ex/bwe.yaml"
expect_eq "$(probe "$T/ex/out/bwe-0.mp4")" \
    "h264,video,$video aac,audio,48000,2,1.010000 " \
    "BWE: H.264 and 48 kHz stereo AAC of the right lengths"
# `model add` registers LTX-2 folders as family ltx2 (both vocoders) after
# checking every component's weights against its config
expect_status 0 "$LATENTQ" -d "$T/models.db" model add --name l2 "$T/ex/models/ltx2-demo"
expect_status 0 "$LATENTQ" -d "$T/models.db" model add "$T/ex/models/ltx2-bwe"
expect_status 0 "$LATENTQ" -d "$T/models.db" model list
expect_grep '^1 +l2 +ltx2 ' "$T/out"
expect_grep '^2 +- +ltx2 ' "$T/out"
cp -r "$T/ex/models/ltx2-demo" "$T/ex/models/ltx2-bad"
sed -i 's/"num_layers": 4/"num_layers": 7/' "$T/ex/models/ltx2-bad/transformer/config.json"
expect_status 65 "$LATENTQ" -d "$T/models.db" model add "$T/ex/models/ltx2-bad"
expect_grep 'transformer_blocks\.4\..*weights do not match the config: 216 missing.*\[LQ-MODEL-010\]' "$T/err"
expect_eq "$(sqlite3 "$T/models.db" "SELECT count(*) FROM models")" 2 "a refused model add records nothing"
finish
