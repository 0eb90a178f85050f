#!/bin/sh
# Bundles end to end: a job killed at step k on one queue, exported with its
# checkpoint (signed) and imported into a fresh queue elsewhere, finishes
# there byte-identical to an uninterrupted render; a one-byte change in
# every member kind is refused; hostile archives (traversal, absolute
# paths, links, devices, duplicates, oversize, unlisted or missing members)
# are refused with nothing recorded; verify ties an MP4 to a signed record.
. "${top_srcdir:-.}/tests/cli/render-common.sh"
XDG_CONFIG_HOME=$T/config; export XDG_CONFIG_HOME
hack() { python3 "$top_srcdir/tests/bundle/tarhack.py" "$@"; }
STEPS=4

# The reference: an uninterrupted render.
mkdir -p "$T/ref"
write_manifest "$T/ref/m.yaml" $STEPS clip:42
expect_status 0 "$LATENTQ" -q -d "$T/ref.db" render "$T/ref/m.yaml"
ref_mp4=$(digest "$T/ref/videos/clip.mp4")

# Keys: 0600 secret, never overwritten.
expect_status 0 "$LATENTQ" key generate
expect_grep '^key default: public key [0-9a-f]{64} ' "$T/out"
expect_eq "$(stat -c %a "$T/config/latentq/default.key")" 600 "secret key mode"
checks=$((checks + 1)); [ -s "$T/config/latentq/default.pub" ] || fail "no default.pub"
expect_status 73 "$LATENTQ" key generate default
expect_grep 'default.key: File exists.*\[LQ-SIGN-002\]' "$T/err"
expect_status 0 "$LATENTQ" key generate other
expect_status 64 "$LATENTQ" key generate ../x
expect_grep 'LQ-SIGN-001' "$T/err"
# A key that is missing is no input (66); one that is malformed, or a
# secret key others can read, is bad input (65).
expect_status 66 "$LATENTQ" -d "$T/ref.db" export --sign=nokey -o "$T/k.tar" clip
expect_grep 'cannot read key .*nokey.key.*\[LQ-SIGN-003\]' "$T/err"
echo 'not a key' > "$T/config/latentq/junk.key"; chmod 600 "$T/config/latentq/junk.key"
expect_status 65 "$LATENTQ" -d "$T/ref.db" export --sign=junk -o "$T/k.tar" clip
expect_grep 'is not a latentq secret key file.*\[LQ-SIGN-005\]' "$T/err"
cp "$T/config/latentq/other.key" "$T/config/latentq/open.key"; chmod 644 "$T/config/latentq/open.key"
expect_status 65 "$LATENTQ" -d "$T/ref.db" export --sign=open -o "$T/k.tar" clip
expect_grep 'readable by others.*\[LQ-SIGN-005\]' "$T/err"
checks=$((checks + 1)); [ ! -e "$T/k.tar" ] || fail "a refused export left a bundle"
# A job named twice is a usage error.
expect_status 64 "$LATENTQ" -d "$T/ref.db" export -o "$T/k.tar" clip clip
expect_grep 'is named twice.*\[LQ-BUNDLE-010\]' "$T/err"

# Queue A: killed at step k.
k=$(( $(od -An -N2 -tu2 /dev/urandom) % (STEPS - 1) + 1 ))
echo "killing at step $k"
mkdir -p "$T/a"
write_manifest "$T/a/m.yaml" $STEPS clip:42
"$LATENTQ" -q -d "$T/a.db" submit "$T/a/m.yaml"
LATENTQ_FAULT="kill@denoise:$k#1" "$LATENTQ" -q -d "$T/a.db" run --max-jobs 1 > /dev/null 2>&1
expect_eq "$(sqlite3 "$T/a.db" "SELECT state || ' ' || max(c.step) FROM jobs, checkpoints c")" "queued $k" "A: queued with a checkpoint at step $k"

# Export it (zstd, signed) and import it into a fresh queue in another folder.
# A symlink planted at the old temporary name is never written through.
echo precious > "$T/victim"
ln -s "$T/victim" "$T/move.tar.zst.part"
expect_status 0 "$LATENTQ" -d "$T/a.db" export --checkpoints --sign -o "$T/move.tar.zst" clip
expect_eq "$(cat "$T/victim")" precious "export wrote nothing through a planted symlink"
rm "$T/move.tar.zst.part"
expect_grep "exported 1 clip queued checkpoint at step $k" "$T/out"
expect_grep 'signed' "$T/out"
expect_eq "$(ls "$T" | grep -c '^move\.tar\.zst\..*\.part$')" 0 "export left no temporary"
expect_status 0 "$LATENTQ" -d "$T/b.db" import --verify default -C "$T/b" "$T/move.tar.zst"
expect_grep "imported .* clip queued \\(resumes after step $k\\)" "$T/out"
expect_eq "$(sqlite3 "$T/b.db" "SELECT state || ' ' || step FROM jobs")" "queued $k" "B: imported queued at step $k"
expect_eq "$(sqlite3 "$T/b.db" "SELECT count(*) FROM events WHERE kind = 'crashed'")" 1 "B: the history came along"
expect_eq "$(sqlite3 "$T/b.db" "SELECT digest FROM checkpoints")" "$(sqlite3 "$T/a.db" "SELECT digest FROM checkpoints WHERE step = $k")" "B: the checkpoint's bytes"
checks=$((checks + 1)); ls -A "$T/b" | grep -q latentq-import && fail "import left its staging folder"
# Importing it again is idempotent, as submit is.
expect_status 0 "$LATENTQ" -d "$T/b.db" import -C "$T/b" "$T/move.tar.zst"
expect_grep '^already' "$T/out"
expect_eq "$(sqlite3 "$T/b.db" "SELECT count(*) FROM jobs")" 1 "B: not imported twice"
# Four imports of the bundle at once into one fresh queue (each into its own
# folder): the duplicate check runs inside the recording transaction, so
# exactly one of them records the job and the others say "already".
"$LATENTQ" -d "$T/cc.db" status >/dev/null 2>&1
for i in 1 2 3 4; do
	"$LATENTQ" -d "$T/cc.db" import -C "$T/cc$i" "$T/move.tar.zst" >"$T/cc$i.out" 2>"$T/cc$i.err" &
done
wait
expect_eq "$(cat "$T"/cc?.out | grep -c '^imported')" 1 "one of four concurrent imports records the job"
expect_eq "$(cat "$T"/cc?.out | grep -c '^already')" 3 "the other three find it ($(cat "$T"/cc?.err))"
expect_eq "$(sqlite3 "$T/cc.db" "SELECT count(*) FROM jobs")" 1 "one job after concurrent imports"
# Finish on B: resumes at k, ends byte-identical to the reference.
expect_status 0 "$LATENTQ" -q -d "$T/b.db" run
expect_eq "$(sqlite3 "$T/b.db" "SELECT detail FROM events WHERE kind = 'resumed'")" "{\"step\":$k}" "B: resumed at the exported step"
expect_eq "$(sqlite3 "$T/b.db" "SELECT state FROM jobs")" done "B: job done"
expect_eq "$(digest "$T/b/videos/clip.mp4")" "$ref_mp4" "B: MP4 identical to the uninterrupted render"

# A done job with its outputs, as an uncompressed signed bundle; gzip too.
expect_status 0 "$LATENTQ" -d "$T/ref.db" export --sign -o "$T/done.tar" clip
expect_grep 'exported 1 clip done, 2 outputs' "$T/out"
expect_status 0 "$LATENTQ" -d "$T/ref.db" export -o "$T/done.tgz" clip
expect_status 0 "$LATENTQ" -d "$T/c.db" import -C "$T/c" "$T/done.tgz"
expect_eq "$(digest "$T/c/videos/clip.mp4")" "$ref_mp4" "C: output carried"
expect_eq "$(sqlite3 "$T/c.db" "SELECT state || ' ' || count(*) FROM jobs, artifacts")" "done 2" "C: done with its two artifacts"
expect_status 64 "$LATENTQ" -d "$T/ref.db" export -o "$T/x.zip" clip
expect_grep 'LQ-BUNDLE-001' "$T/err"
expect_grep '"\.zip" names no bundle format' "$T/err"
# An output changed after it was recorded is not exported.
cp "$T/ref/videos/clip.sheet.png" "$T/sheet.bak"
printf 'x' >> "$T/ref/videos/clip.sheet.png"
expect_status 65 "$LATENTQ" -d "$T/ref.db" export -o "$T/y.tar" clip
expect_grep 'changed after it was recorded.*\[LQ-BUNDLE-009\]' "$T/err"
checks=$((checks + 1)); [ ! -e "$T/y.tar" ] && [ "$(ls "$T" | grep -c '^y\.tar\.')" -eq 0 ] || fail "a refused export left a file"
cp "$T/sheet.bak" "$T/ref/videos/clip.sheet.png"

# verify: the MP4 against the signed record, and against this queue.
expect_status 0 "$LATENTQ" verify --bundle "$T/done.tar" "$T/ref/videos/clip.mp4"
expect_grep '^verified: .* is videos/clip.mp4 of job clip' "$T/out"
expect_status 0 "$LATENTQ" -d "$T/b.db" verify "$T/b/videos/clip.mp4"
expect_grep 'unsigned record' "$T/out"
expect_status 65 "$LATENTQ" verify --bundle "$T/move.tar.zst" "$T/ref/videos/clip.mp4"
expect_grep 'LQ-VERIFY-003' "$T/err"
expect_status 65 "$LATENTQ" verify --bundle "$T/done.tar" --key other "$T/ref/videos/clip.mp4"
expect_grep 'not by the trusted key' "$T/err"
expect_status 65 "$LATENTQ" verify --bundle "$T/done.tgz" "$T/ref/videos/clip.mp4"
expect_grep 'is not signed' "$T/err"
cp "$T/ref/videos/clip.mp4" "$T/changed.mp4"
size=$(stat -c %s "$T/changed.mp4")
printf '\001' | dd of="$T/changed.mp4" bs=1 seek=$((size - 16)) conv=notrunc 2>/dev/null
expect_status 65 "$LATENTQ" verify --bundle "$T/done.tar" "$T/changed.mp4"
expect_grep 'the video was changed' "$T/err"

# A one-byte change in every member kind of a signed bundle is refused.
"$LATENTQ" -q -d "$T/a.db" export --checkpoints --sign -o "$T/move.tar" clip
tamper() {	# tamper BUNDLE MEMBER CODE
	cp "$1" "$T/t.tar"
	hack flip "$T/t.tar" "$2"
	rm -rf "$T/t" "$T/t.db"
	expect_status 65 "$LATENTQ" -d "$T/t.db" import --verify default -C "$T/t" "$T/t.tar"
	expect_grep "$3" "$T/err"
	expect_eq "$(sqlite3 "$T/t.db" "SELECT count(*) FROM jobs" 2>/dev/null || echo 0)" 0 "tampered $2: nothing recorded"
	checks=$((checks + 1)); [ -z "$(ls -A "$T/t" 2>/dev/null)" ] || fail "tampered $2: files left in $T/t"
}
tamper "$T/done.tar" bundle.json 'LQ-SIGN-004|LQ-BUNDLE-004'
tamper "$T/done.tar" bundle.sig 'LQ-SIGN-004'
tamper "$T/done.tar" jobs/1/videos/clip.mp4 'clip.mp4 has BLAKE2b-256 .*LQ-BUNDLE-005'
tamper "$T/done.tar" jobs/1/videos/clip.sheet.png 'clip.sheet.png has BLAKE2b-256 .*LQ-BUNDLE-005'
tamper "$T/move.tar" "jobs/1/checkpoint-$k.latent" "checkpoint-$k.latent has BLAKE2b-256 .*LQ-BUNDLE-005"
tamper "$T/move.tar" bundle.json 'LQ-SIGN-004|LQ-BUNDLE-004'
# Without --verify a changed output is still refused by its digest.
cp "$T/done.tar" "$T/t.tar"; hack flip "$T/t.tar" jobs/1/videos/clip.mp4
expect_status 65 "$LATENTQ" -d "$T/t2.db" import -C "$T/t2" "$T/t.tar"
expect_grep 'LQ-BUNDLE-005' "$T/err"
# A bundle signed by another key, and an unsigned one, under --verify.
expect_status 65 "$LATENTQ" -d "$T/t3.db" import --verify other -C "$T/t3" "$T/done.tar"
expect_grep 'not by the trusted key' "$T/err"
expect_status 65 "$LATENTQ" -d "$T/t3.db" import --verify default -C "$T/t3" "$T/done.tgz"
expect_grep 'is not signed' "$T/err"

# Hostile archives: refused with the rule they break, nothing recorded.
hostile() {	# hostile KIND PATTERN [import options]
	kind=$1; pat=$2; shift 2
	hack hostile "$kind" "$T/done.tar" "$T/h-$kind.tar"
	rm -rf "$T/h" "$T/h.db"
	expect_status 65 "$LATENTQ" -d "$T/h.db" import "$@" -C "$T/h" "$T/h-$kind.tar"
	expect_grep "$pat" "$T/err"
	expect_eq "$(sqlite3 "$T/h.db" "SELECT count(*) FROM jobs" 2>/dev/null || echo 0)" 0 "$kind: nothing recorded"
	checks=$((checks + 1)); [ -z "$(ls -A "$T/h" 2>/dev/null)" ] || fail "$kind: files left in $T/h"
}
hostile traversal 'path traversal'
hostile absolute 'an absolute path'
hostile symlink 'a symbolic link'
hostile hardlink 'a hard link'
hostile device 'a device'
hostile fifo 'a FIFO'
hostile dir 'a folder'
hostile duplicate 'a duplicate name'
hostile unlisted 'bundle.json does not list it'
hostile missing 'listed in bundle.json, is missing.*LQ-BUNDLE-011'
hostile notfirst 'the first member is .*, not bundle.json'
hack hostile none "$T/done.tar" "$T/h-big.tar"
rm -rf "$T/h" "$T/h.db"
expect_status 65 "$LATENTQ" -d "$T/h.db" import --max-member-size 1000 -C "$T/h" "$T/h-big.tar"
expect_grep 'bytes is over the limit of 1000' "$T/err"
checks=$((checks + 1)); [ ! -e /tmp/latentq-evil ] || fail "an absolute member was written"
# An output already in the destination with other bytes is not overwritten.
mkdir -p "$T/o/videos"; echo keep > "$T/o/videos/clip.mp4"
expect_status 73 "$LATENTQ" -d "$T/o.db" import -C "$T/o" "$T/done.tar"
expect_grep 'LQ-BUNDLE-008' "$T/err"
expect_eq "$(cat "$T/o/videos/clip.mp4")" keep "existing file kept"
# The same files through the fuzz target's entry point.
expect_status 0 "$top_builddir/tests/fuzz/fuzz-bundle-replay" "$T"/h-*.tar "$T/done.tar" "$T/move.tar.zst"
finish
