#!/bin/sh
# The per-step finiteness guard, and the optional outputs: a NaN in the
# latent stops the job with an error naming the step and keeps the last
# finite checkpoint; `frames:` writes one PNG per frame.
. "${top_srcdir:-.}/tests/cli/render-common.sh"

mkdir -p "$T/nan"
write_manifest "$T/nan/m.yaml" 4 nan:3
LATENTQ_FAULT="nan/nan@denoise:2" expect_status 65 "$LATENTQ" -d "$T/nan.db" render "$T/nan/m.yaml"
expect_grep 'after step 2/4 has a non-finite value' "$T/err"
expect_grep 'LQ-RUN-NAN' "$T/err"
expect_eq "$(sqlite3 "$T/nan.db" "SELECT state || ' ' || error_code FROM jobs")" "poisoned LQ-RUN-NAN" "job poisoned with its code"
expect_eq "$(sqlite3 "$T/nan.db" "SELECT max(step) FROM checkpoints")" 1 "last finite checkpoint kept"
checks=$((checks + 1)); [ ! -e "$T/nan/videos/nan.mp4" ] || fail "a video was written from a NaN latent"

mkdir -p "$T/frames"
write_manifest "$T/frames/m.yaml" 2 fr:3
sed -i 's/^  output: videos\/{name}.mp4$/  output: videos\/{name}.mp4\n  frames: png\/{name}/' "$T/frames/m.yaml"
expect_status 0 "$LATENTQ" -d "$T/frames.db" render "$T/frames/m.yaml"
expect_eq "$(ls "$T/frames/png/fr" | grep -c '^frame_[0-9]*\.png$')" 9 "one PNG per frame"
expect_eq "$(file -b "$T/frames/png/fr/frame_0001.png" | cut -d, -f1-2)" "PNG image data, 64 x 64" "PNG size"
# A config with trailing junk (a half-written or corrupted file) is refused
# at submit, naming the file, before anything is queued.
printf 'x' >> "$T/model/transformer/config.json"
mkdir -p "$T/junk"
write_manifest "$T/junk/m.yaml" 2 junk:3
expect_status 65 "$LATENTQ" -d "$T/junk.db" render "$T/junk/m.yaml"
expect_grep 'transformer/config.json' "$T/err"
expect_eq "$(sqlite3 "$T/junk.db" "SELECT state FROM jobs")" rejected "junk: rejected"
finish
