#!/bin/sh
# LTX2Pipeline's loop on the host (tests/sampler/ltx2-loop.c) against the
# pipeline golden of tests/data/ltx2: the schedule, audio length and packed
# noise exactly (checked by the tool), then x0-space guidance (CFG + STG +
# modality isolation, with rescale, for both streams), the Euler steps and
# the audio decoder's input within suggested_atol.  The negative control
# shows the comparison can fail: an audio scale of 0.0 falls back to the
# video's (upstream's `or`), and that render's audio is not the golden's.
. "${top_srcdir:-.}/tests/cli/common.sh"
. "$top_srcdir/tests/nn/ltx2-common.sh"
LOOP=${top_builddir:-.}/tests/sampler/ltx2-loop

"$LOOP" "$D" pipe "$T/loop.st" >"$T/out" 2>"$T/err" ||
	fail "ltx2-loop: $(cat "$T/err")"
expect_grep "3 steps" "$T/out"
compare pipeline/pipe/steps.safetensors "$T/loop.st" \
    video_latents_before_step video_velocity_guided video_latents_after_step \
    audio_latents_before_step audio_velocity_guided audio_latents_after_step
compare pipeline/pipe/output.safetensors "$T/loop.st" audio_decoder_input_z

# Negative control: an index whose audio_guidance_scale is 0 must fall
# back to the video's 3.0 (upstream's `or`), which is not the golden's
# 5.0, so the audio comparison fails while the video one still passes.
mkdir -p "$T/neg"
sed 's/"audio_guidance_scale": 5.0/"audio_guidance_scale": 0.0/' \
    "$D/index.json" >"$T/neg/index.json"
cmp -s "$D/index.json" "$T/neg/index.json" && fail "sed changed nothing"
for f in pipeline audio_vae; do
	ln -s "$D/$f" "$T/neg/$f"
done
"$LOOP" "$T/neg" pipe "$T/neg.st" >/dev/null 2>"$T/err" ||
	fail "ltx2-loop (neg): $(cat "$T/err")"
checks=$((checks + 1))
"$CMP" "$D/index.json" "$D" pipeline/pipe/steps.safetensors "$T/neg.st" \
    audio_velocity_guided >/dev/null 2>&1 &&
	fail "audio guidance 0.0 matched the golden's 5.0"
compare pipeline/pipe/steps.safetensors "$T/neg.st" video_velocity_guided
finish
