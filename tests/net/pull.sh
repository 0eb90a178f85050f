#!/bin/sh
# model pull against a loopback server with injected faults: a file whose
# transfer drops twice resumes with Range requests and verifies; 503s and
# wrong lengths are retried; a 404, a wrong digest and a retry budget spent
# are clear errors naming the URL and status; a Hugging Face style
# resolve/main layout becomes a model folder that `model add` records.
. "${top_srcdir:-.}/tests/cli/common.sh"
. "$top_srcdir/tests/net/common.sh"

repo=$T/root/org/demo/resolve/main
mkdir -p "$repo"
cp -r "$top_srcdir/jobs/models/ltxv-demo/." "$repo/"
rm -f "$repo/README.md" "$repo/PROVENANCE.md"
big=transformer/diffusion_pytorch_model.safetensors
big_digest=$(blake2b "$repo/$big")

# Every file of the model; the big one dropped twice mid-transfer.
urls=""
for f in $(cd "$repo" && find . -type f | sed 's|^\./||' | sort); do
	if [ "$f" = "$big" ]; then
		urls="$urls $BASE/drop2/org/demo/resolve/main/$f"
	else
		urls="$urls $BASE/ok/org/demo/resolve/main/$f"
	fi
done
expect_status 0 "$LATENTQ" model pull --name demo --digest "$big=$big_digest" $urls "$T/model"
expect_grep "pulled $T/model/$big \\([0-9]+ bytes, BLAKE2b-256 $big_digest, verified\\)" "$T/out"
expect_grep 'retrying' "$T/err"
expect_grep '^model 1 demo: ' "$T/out"
checks=$((checks + 1)); cmp -s "$repo/$big" "$T/model/$big" || fail "pulled file differs"
checks=$((checks + 1)); [ ! -e "$T/model/$big.part" ] || fail ".part left behind"
# Three GETs: the first from 0, the two resumes with a Range past 0.
requests "/drop2/.*safetensors" > "$T/reqs"
expect_eq "$(wc -l < "$T/reqs")" 3 "three tries of the dropped file"
expect_eq "$(sed -n 1p "$T/reqs")" "GET 200 -" "first try from the start"
expect_grep '^GET 206 bytes=[1-9][0-9]*-$' "$T/reqs"
expect_eq "$(grep -c '^GET 206 bytes=[1-9]' "$T/reqs")" 2 "both resumes are Range requests"
expect_status 0 "$LATENTQ" model list
expect_grep 'demo' "$T/out"

# 503s are retried; so is a body shorter than its Content-Length.
expect_status 0 "$LATENTQ" model pull --no-add "$BASE/e503x2/org/demo/resolve/main/vae/config.json" "$T/m2"
expect_eq "$(requests '/e503x2/' | tr '\n' ' ')" "GET 503 - GET 503 - GET 200 - " "503 twice, then the file"
checks=$((checks + 1)); cmp -s "$repo/vae/config.json" "$T/m2/vae/config.json" || fail "503: file differs"
expect_status 0 "$LATENTQ" model pull --no-add "$BASE/short1/org/demo/resolve/main/scheduler/scheduler_config.json" "$T/m3"
expect_grep 'short1.*transfer closed with 1000 bytes remaining' "$T/err"
checks=$((checks + 1)); cmp -s "$repo/scheduler/scheduler_config.json" "$T/m3/scheduler/scheduler_config.json" || fail "short: file differs"

# Not found: at once, no retry, naming URL and status; no input (66), and
# no empty .part left behind.
expect_status 66 "$LATENTQ" model pull --no-add "$BASE/e404/org/demo/resolve/main/nope.json" "$T/m4"
expect_grep "$BASE/e404/org/demo/resolve/main/nope.json: HTTP status 404.*\\[LQ-NET-008\\]" "$T/err"
expect_eq "$(requests '/e404/' | wc -l)" 1 "404 not retried"
checks=$((checks + 1)); [ ! -e "$T/m4/nope.json.part" ] || fail "404: .part left behind"
# Another refusal (403): the service will not give it (69).
expect_status 69 "$LATENTQ" model pull --no-add "$BASE/e403/org/demo/resolve/main/vae/config.json" "$T/m4"
expect_grep 'HTTP status 403.*\[LQ-NET-002\]' "$T/err"
checks=$((checks + 1)); [ ! -e "$T/m4/vae/config.json.part" ] || fail "403: .part left behind"
# A transfer dropped midway with the retries spent keeps its bytes in the
# .part, and the next pull resumes from them.
expect_status 75 "$LATENTQ" model pull --no-add --retries 0 "$BASE/drop1/org/demo/resolve/main/$big" "$T/m9"
checks=$((checks + 1)); [ -s "$T/m9/$big.part" ] || fail "dropped: .part not kept"
expect_status 0 "$LATENTQ" model pull --no-add --digest "$big_digest" "$BASE/drop1/org/demo/resolve/main/$big" "$T/m9"
requests '/drop1/' > "$T/reqs1"
expect_eq "$(wc -l < "$T/reqs1")" 2 "one try, then one resume"
expect_eq "$(sed -n 2p "$T/reqs1" | grep -c '^GET 206 bytes=[1-9][0-9]*-$')" 1 "resumed with a Range from the kept .part"
checks=$((checks + 1)); [ ! -e "$T/m9/$big.part" ] || fail "resumed: .part left behind"
# Retries spent: exit 75 (try again later); nothing arrived, so no .part.
expect_status 75 "$LATENTQ" model pull --no-add --retries 1 "$BASE/e503x9/org/demo/resolve/main/vae/config.json" "$T/m5"
expect_grep 'HTTP status 503' "$T/err"
expect_eq "$(requests '/e503x9/' | wc -l)" 2 "one try and one retry"
checks=$((checks + 1)); [ ! -e "$T/m5/vae/config.json.part" ] || fail "503: empty .part left behind"
# A wrong digest: refused, nothing left behind.
expect_status 65 "$LATENTQ" model pull --no-add --digest "$(printf '%064d' 0)" "$BASE/ok/org/demo/resolve/main/vae/config.json" "$T/m6"
expect_grep 'LQ-NET-004' "$T/err"
checks=$((checks + 1)); [ ! -e "$T/m6/vae/config.json" ] && [ ! -e "$T/m6/vae/config.json.part" ] || fail "wrong digest: file left"
# On a terminal (script(1) gives it one) a progress bar is drawn.
script -qec "'$LATENTQ' model pull --no-add '$BASE/ok/org/demo/resolve/main/$big' '$T/m8'" /dev/null > "$T/tty" 2>&1
expect_grep "transformer/diffusion_pytorch.*\\[#+\\] 100\\.0%" "$T/tty"
# Bad arguments.
expect_status 64 "$LATENTQ" model pull --digest xyz "$BASE/ok/a" "$T/m7"
expect_status 64 "$LATENTQ" model pull "$BASE/ok/org/../x/" "$T/m7"
expect_grep 'LQ-NET-007' "$T/err"
expect_status 64 "$LATENTQ" model pull --digest "other=$big_digest" "$BASE/ok/org/demo/resolve/main/$big" "$T/m7"
expect_grep 'names no file of the URLs' "$T/err"
finish
