#!/bin/sh
# The filesystem is hostile (issue 22 item 2): symlinks planted where the
# render puts its temporaries or outputs are never followed, and an output
# folder that is a symlink leading outside the manifest's folder is refused
# at preflight.
. "${top_srcdir:-.}/tests/cli/render-common.sh"

# b2 FILE : BLAKE2b-256 hex, as latentq records artifacts.
b2() { b2sum -l 256 "$1" | cut -d' ' -f1; }

# 1. Planted symlinks at every temporary name the old code used, and at the
# outputs themselves, all pointing at files outside the output folder.
write_manifest "$T/m.yaml" 2 k:5
printf '%s\n' "  - name: t" "    prompt: a blue square" "    seed: 6" \
    "    save_tensors: videos/{name}.safetensors" >> "$T/m.yaml"
mkdir -p "$T/videos" "$T/victims"
for v in mp4part sheetpart tensorstmp mp4; do
	echo "precious $v" > "$T/victims/$v"
done
ln -s "$T/victims/mp4part" "$T/videos/k.mp4.part"
ln -s "$T/victims/sheetpart" "$T/videos/k.sheet.png.part"
ln -s "$T/victims/tensorstmp" "$T/videos/t.safetensors.tmp"
ln -s "$T/victims/mp4" "$T/videos/t.mp4"
expect_status 0 "$LATENTQ" -q render "$T/m.yaml"
for v in mp4part sheetpart tensorstmp mp4; do
	expect_eq "$(cat "$T/victims/$v")" "precious $v" "the file behind the planted $v link is untouched"
done
for f in k.mp4 k.sheet.png t.mp4 t.sheet.png t.safetensors; do
	checks=$((checks + 1))
	if [ -L "$T/videos/$f" ] || [ ! -f "$T/videos/$f" ]; then
		fail "videos/$f is not a regular file"
		ls -l "$T/videos" >&2
	fi
done
# The planted temporaries are left alone (they are not latentq's), and no
# temporary of latentq's is left behind.
for f in k.mp4.part k.sheet.png.part t.safetensors.tmp; do
	checks=$((checks + 1))
	[ -L "$T/videos/$f" ] || fail "videos/$f was replaced"
done
expect_eq "$(ls "$T/videos" | grep -c 'XXXXXX\|\.[A-Za-z0-9]\{6\}\.\(part\|tmp\)$')" 0 "no temporaries left"
# The records are the files: digest and size of each artifact.
q "SELECT path || ' ' || digest || ' ' || size FROM artifacts" > "$T/arts"
expect_eq "$(wc -l < "$T/arts")" 5 "five artifacts (two MP4s, two sheets, one tensors file)"
while read -r path dg size; do
	expect_eq "$(b2 "$path") $(stat -c %s "$path")" "$dg $size" "artifact $path"
done < "$T/arts"

# 2. An output folder that is a symlink to a folder outside the manifest's
# folder is refused at preflight (LQ-OUT-005), nothing is queued and
# nothing is written there; a link that stays inside is fine.
rm -f "$LATENTQ_DB"*
mkdir -p "$T/m2" "$T/outside" "$T/m2/real"
write_manifest "$T/m2/m.yaml" 2 a:1
ln -s "$T/outside" "$T/m2/videos"
expect_status 65 "$LATENTQ" submit "$T/m2/m.yaml"
expect_grep 'error LQ-OUT-005: defaults\.output: "videos/a\.mp4" leaves the output folder .*/m2 through a symbolic link: .*/m2/videos resolves to .*/outside' "$T/err"
expect_eq "$(q "SELECT state FROM jobs")" rejected "the job is rejected"
expect_status 0 "$LATENTQ" run --once
expect_eq "$(ls "$T/outside")" "" "nothing written outside"
rm "$T/m2/videos"
ln -s real "$T/m2/videos"
expect_status 0 "$LATENTQ" -q submit "$T/m2/m.yaml"
expect_eq "$(q "SELECT count(*) FROM jobs WHERE state = 'queued'")" 1 "a link inside the folder is accepted"
finish
