#!/bin/sh
# A job whose model is the URL of a diffusers-layout folder (Hugging Face
# style .../resolve/main, served on loopback with faults): refused without
# --allow-download, naming the URL; with it, crawled into
# $XDG_CACHE_HOME/latentq/models/<BLAKE2b-256 of the URL> (model_index.json,
# each component's config, tokenizer files, a sharded text encoder's index
# and shards, dropped connections resumed) and rendered byte-identical to the
# same folder on disk; a complete cache is not fetched again; a worker
# without --allow-download gives the job back (69) and one with it fetches
# at render time; an override URL is one component; a 404 and hostile
# indexes are refused with their codes.
. "${top_srcdir:-.}/tests/cli/render-common.sh"
. "$top_srcdir/tests/net/common.sh"
XDG_CACHE_HOME=$T/cache; export XDG_CACHE_HOME

# The served folder: the demo model, its text encoder in two shards.
repo=$T/root/org/demo/resolve/main
mkdir -p "$repo"
cp -r "$T/model/." "$repo/"
rm -f "$repo/README.md" "$repo/PROVENANCE.md"
python3 - "$repo/text_encoder" <<'EOF'
import json, os, struct, sys
d = sys.argv[1]
raw = open(os.path.join(d, "model.safetensors"), "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
hdr = json.loads(raw[8:8 + n]); data = raw[8 + n:]
meta = hdr.pop("__metadata__", None)
names = sorted(hdr)
wm = {}
for k, part in enumerate((names[:len(names) // 2], names[len(names) // 2:])):
    fn = "model-%05d-of-00002.safetensors" % (k + 1)
    h, blob = {}, b""
    for t in part:
        a, b = hdr[t]["data_offsets"]
        h[t] = dict(hdr[t], data_offsets=[len(blob), len(blob) + b - a])
        blob += data[a:b]
        wm[t] = fn
    if meta: h["__metadata__"] = meta
    hj = json.dumps(h).encode(); hj += b" " * (-len(hj) % 8)
    open(os.path.join(d, fn), "wb").write(struct.pack("<Q", len(hj)) + hj + blob)
json.dump({"metadata": {"total_size": len(data)}, "weight_map": wm},
          open(os.path.join(d, "model.safetensors.index.json"), "w"))
os.remove(os.path.join(d, "model.safetensors"))
EOF
cache_of() { printf '%s' "$1" | b2sum -l 256 | sed "s|  *-\$||; s|^|$XDG_CACHE_HOME/latentq/models/|"; }
# expect_grep2 REGEX: in the last command's stdout and stderr together.
expect_grep2() { cat "$T/out" "$T/err" > "$T/both"; expect_grep "$1" "$T/both"; }
get_count() { python3 -c 'import json,sys; print(sum(1 for l in open(sys.argv[1]) if json.loads(l)["method"] == "GET"))' "$T/http.log"; }

# The reference: the served folder rendered from disk.
mkdir -p "$T/ref"
write_manifest "$T/ref/m.yaml" 2 clip:42
sed -i "s|^  model: .*|  model: $repo|" "$T/ref/m.yaml"
expect_status 0 "$LATENTQ" -q -d "$T/ref.db" render "$T/ref/m.yaml"
# The MP4's tags carry the config (whose model: differs), so the frames
# and the model identity are what must be equal.
frames() { ffmpeg -v error -i "$1" -f framemd5 - | grep -v '^#'; }
ref_frames=$(frames "$T/ref/videos/clip.mp4")
ref_model=$(db_sql "$T/ref.db" "SELECT model_digests FROM jobs")
checks=$((checks + 1)); [ -n "$ref_frames" ] && [ -n "$ref_model" ] || fail "no reference"

# Without --allow-download: refused, naming the URL and the way out; no
# request is made.
url=$BASE/drop2/org/demo/resolve/main
mkdir -p "$T/a"
write_manifest "$T/a/m.yaml" 2 clip:42
sed -i "s|^  model: .*|  model: $url|" "$T/a/m.yaml"
expect_status 65 "$LATENTQ" preflight --no-device "$T/a/m.yaml"
expect_grep2 "LQ-MDL-012: job clip: defaults.model: $url is a URL; latentq downloads a model only when asked; pass --allow-download .*latentq model pull" "$T/both"
expect_status 65 "$LATENTQ" -d "$T/a.db" submit --no-device "$T/a/m.yaml"
expect_eq "$(db_sql "$T/a.db" "SELECT state || ' ' || error_code FROM jobs")" "rejected LQ-MDL-012" "submit without --allow-download: rejected"
expect_eq "$(get_count)" 0 "nothing downloaded without --allow-download"

# With it: crawled (every file dropped twice mid-transfer, resumed),
# rendered as from disk.
expect_status 0 "$LATENTQ" -d "$T/a2.db" render --allow-download "$T/a/m.yaml"
expect_grep2 'retrying' "$T/err"
expect_eq "$(frames "$T/a/videos/clip.mp4")" "$ref_frames" "downloaded model: frames identical to the folder on disk"
expect_eq "$(db_sql "$T/a2.db" "SELECT model_digests FROM jobs")" "$ref_model" "downloaded model: the same model identity"
cache=$(cache_of "$url")
expect_eq "$(cat "$cache/.latentq-complete")" "$url" "the cache folder is marked complete with its URL"
for f in model_index.json transformer/config.json \
    transformer/diffusion_pytorch_model.safetensors vae/config.json \
    vae/diffusion_pytorch_model.safetensors text_encoder/config.json \
    text_encoder/model.safetensors.index.json \
    text_encoder/model-00001-of-00002.safetensors \
    text_encoder/model-00002-of-00002.safetensors tokenizer/spiece.model \
    tokenizer/tokenizer_config.json tokenizer/special_tokens_map.json \
    scheduler/scheduler_config.json; do
	checks=$((checks + 1)); cmp -s "$repo/$f" "$cache/$f" || fail "cache: $f differs or is missing"
done
checks=$((checks + 1)); [ -z "$(find "$cache" -name '*.part')" ] || fail "cache: .part files left"
checks=$((checks + 1)); [ ! -e "$cache/text_encoder/model.safetensors" ] || fail "a sharded encoder's single file was fetched"
requests '/drop2/.*/vae/diffusion_pytorch_model.safetensors' > "$T/reqs"
expect_eq "$(grep -c '^GET 206 bytes=[1-9]' "$T/reqs")" 2 "both resumes of a dropped file are Range requests"
# Optional tokenizer files the server lacks are asked for once, not fatal.
expect_eq "$(requests '/drop2/.*/tokenizer/added_tokens.json' | tr '\n' ' ')" "GET 404 - " "a missing optional file: one 404"

# A complete cache is used as is: no request, with or without the flag.
before=$(get_count)
write_manifest "$T/a/m2.yaml" 2 other:7
sed -i "s|^  model: .*|  model: $url|" "$T/a/m2.yaml"
expect_status 0 "$LATENTQ" preflight --no-device --allow-download "$T/a/m2.yaml"
expect_eq "$(get_count)" "$before" "a complete cache is not fetched again"

# A worker: without --allow-download a job whose model this host lacks is
# given back untouched (69); with it, the render fetches it.
mkdir -p "$T/w"
write_manifest "$T/w/m.yaml" 2 clip:42
sed -i "s|^  model: .*|  model: $BASE/ok/org/demo/resolve/main|" "$T/w/m.yaml"
expect_status 0 "$LATENTQ" -d "$T/w.db" submit --no-device --allow-download "$T/w/m.yaml"
XDG_CACHE_HOME=$T/cache-host2; export XDG_CACHE_HOME
expect_status 69 "$LATENTQ" -d "$T/w.db" run --once
expect_grep2 "model is $BASE/ok/org/demo/resolve/main, which this host has not downloaded.*LQ-RUN-DOWNLOAD" "$T/err"
expect_eq "$(db_sql "$T/w.db" "SELECT state || ' ' || attempts || ' ' || error_code FROM jobs")" "queued 0 LQ-RUN-DOWNLOAD" "no download: the job is given back"
expect_status 0 "$LATENTQ" -d "$T/w.db" run --once --allow-download
expect_eq "$(db_sql "$T/w.db" "SELECT state FROM jobs")" done "--allow-download: fetched at render time and done"
expect_eq "$(frames "$T/w/videos/clip.mp4")" "$ref_frames" "fetched at render time: frames identical"
checks=$((checks + 1)); [ -e "$(cache_of "$BASE/ok/org/demo/resolve/main")/.latentq-complete" ] || fail "render-time download not in host 2's cache"
XDG_CACHE_HOME=$T/cache; export XDG_CACHE_HOME

# A download that keeps failing in a way that may pass (503 past every
# retry): preflight and submit exit 75 (retry me) and record nothing; once
# the server answers, the same submit queues the job.
mkdir -p "$T/r"
write_manifest "$T/r/m.yaml" 2 clip:42
sed -i "s|^  model: .*|  model: $BASE/e503x99/org/demo/resolve/main|" "$T/r/m.yaml"
expect_status 75 "$LATENTQ" preflight --no-device --allow-download "$T/r/m.yaml"
expect_grep2 "LQ-NET-002: .*download failed: .*HTTP status 503" "$T/both"
expect_status 75 "$LATENTQ" -d "$T/r.db" submit --no-device --allow-download "$T/r/m.yaml"
expect_grep "^deferred .*clip" "$T/out"
expect_grep "0 queued, 0 already queued, 0 rejected, 1 deferred" "$T/out"
expect_eq "$(db_sql "$T/r.db" "SELECT count(*) FROM jobs")" 0 "a retryable download failure records no job"
sed -i "s|e503x99|ok|" "$T/r/m.yaml"
expect_status 0 "$LATENTQ" -d "$T/r.db" submit --no-device --allow-download "$T/r/m.yaml"
expect_eq "$(db_sql "$T/r.db" "SELECT state FROM jobs")" queued "submitted again: queued"

# An override URL is one component's folder, its files at the top.
mkdir -p "$T/o"
write_manifest "$T/o/m.yaml" 2 clip:42
sed -i "s|^  model: .*|  model: $repo\\n  vae: $BASE/ok/org/demo/resolve/main/vae/|" "$T/o/m.yaml"
expect_status 0 "$LATENTQ" preflight --no-device --allow-download "$T/o/m.yaml"
vcache=$(cache_of "$BASE/ok/org/demo/resolve/main/vae")
checks=$((checks + 1)); cmp -s "$repo/vae/diffusion_pytorch_model.safetensors" "$vcache/diffusion_pytorch_model.safetensors" || fail "vae override: weights not at the top"
checks=$((checks + 1)); [ -e "$vcache/.latentq-complete" ] && [ ! -e "$vcache/model_index.json" ] || fail "vae override: not a component folder"

# A folder the server does not have; hostile or malformed indexes.
sed -i "s|^  model: .*|  model: $BASE/e404/org/none/resolve/main|; /^  vae:/d" "$T/o/m.yaml"
expect_status 65 "$LATENTQ" preflight --no-device --allow-download "$T/o/m.yaml"
expect_grep2 "LQ-NET-008: .*download failed: $BASE/e404/org/none/resolve/main/model_index.json: HTTP status 404" "$T/both"
bad=$T/root/org/bad/resolve/main
mkdir -p "$bad"
cp -r "$repo/." "$bad/"
printf 'not json' > "$bad/model_index.json"
sed -i "s|^  model: .*|  model: $BASE/ok/org/bad/resolve/main|" "$T/o/m.yaml"
expect_status 65 "$LATENTQ" preflight --no-device --allow-download "$T/o/m.yaml"
expect_grep2 'LQ-NET-009: .*model_index.json is not a JSON object' "$T/both"
checks=$((checks + 1)); [ ! -e "$(cache_of "$BASE/ok/org/bad/resolve/main")/model_index.json" ] || fail "a malformed index was kept"
cp "$repo/model_index.json" "$bad/model_index.json"
printf '{"weight_map": {"a": "../../../escape.safetensors"}}' > "$bad/text_encoder/model.safetensors.index.json"
expect_status 65 "$LATENTQ" preflight --no-device --allow-download "$T/o/m.yaml"
expect_grep2 'LQ-NET-009: .*weight_map names a shard that is not a plain file name' "$T/both"
checks=$((checks + 1)); [ -z "$(find "$T" -name 'escape.safetensors*')" ] || fail "a shard outside the folder was written"
checks=$((checks + 1)); [ ! -e "$(cache_of "$BASE/ok/org/bad/resolve/main")/.latentq-complete" ] || fail "a refused folder was marked complete"
finish
