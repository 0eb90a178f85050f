#!/bin/sh
# limits.sh — hostile input is refused before any work, in bounded memory:
# a 200,000-seed entry, a 64 MB prompt (and a 1 MiB one), a FIFO in place of
# model files, a priority past 2^31, a 300-byte name, and names with control
# characters (never printed raw).  Issue 22 item 4.
. "${top_srcdir:-.}/tests/cli/common.sh"

MODEL=$(cd "$top_srcdir/jobs/models/ltxv-demo" && pwd)

# run_bounded MB CMD...: CMD with its memory bounded to MB megabytes.  An
# AddressSanitizer build reserves terabytes of shadow address space, so
# there the bound is ASan's own hard_rss_limit_mb instead of ulimit -v, with
# room for its redzones and shadow (3x) and a small free quarantine.
if grep -qa __asan_init "$LATENTQ" 2>/dev/null; then
	run_bounded() {
		mb=$1; shift
		ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}hard_rss_limit_mb=$((mb * 3)):quarantine_size_mb=16" "$@"
	}
else
	run_bounded() {
		mb=$1; shift
		(ulimit -v $((mb * 1024)) && exec "$@")
	}
fi

# ---- 200,000 seeds: refused by the seeds-per-entry limit, in bounded memory
# (today's code copies the entry per seed: the square of the count).
awk -v m="$MODEL" 'BEGIN {
	printf "jobs:\n  - {name: s, model: %s, prompt: p, seeds: [0", m
	for (i = 1; i < 200000; i++) printf ",%d", i
	print "]}"
}' > "$T/seeds.yaml"
expect_status 65 run_bounded 400 "$LATENTQ" submit --no-device "$T/seeds.yaml"
expect_grep 'jobs\[0\]\.seeds: 200000 seeds; an entry may list at most 10000 .*\[LQ-MAN-015\]' "$T/err"
expect_grep '^0 queued, 0 already queued, 1 rejected$' "$T/out"

# ---- 10,000 seeds (the limit) are queued in bounded memory, with ONE
# request row for the entry.
awk -v m="$MODEL" 'BEGIN {
	printf "jobs:\n  - {name: s, model: %s, prompt: p, height: 64, width: 64, num_frames: 9, num_inference_steps: 2, seeds: [0", m
	for (i = 1; i < 10000; i++) printf ",%d", i
	print "]}"
}' > "$T/seeds10k.yaml"
expect_status 0 run_bounded 400 "$LATENTQ" -d "$T/s10k.db" submit -q --no-device "$T/seeds10k.yaml"
expect_eq "$(sqlite3 "$T/s10k.db" 'SELECT count(*) FROM jobs')" 10000 "jobs from 10,000 seeds"
expect_eq "$(sqlite3 "$T/s10k.db" 'SELECT count(*) FROM requests')" 1 "requests for one entry"

# ---- a 64 MB prompt: the manifest is refused by its size, before parsing
head -c 67108864 /dev/zero | tr '\0' a > "$T/a64m"
{ printf 'jobs:\n  - {name: a, model: %s, prompt: "' "$MODEL"; cat "$T/a64m"; printf '"}\n'; } > "$T/p64m.yaml"
rm -f "$T/a64m"
expect_status 65 run_bounded 400 "$LATENTQ" submit --no-device "$T/p64m.yaml"
expect_grep 'the manifest is larger than 16777216 bytes .*\[LQ-MAN-015\]' "$T/err"
rm -f "$T/p64m.yaml"
# ... and a 1 MiB one, inside the size limit, by the string limit
{ printf 'jobs:\n  - {name: a, model: %s, prompt: "' "$MODEL"; head -c 1048576 /dev/zero | tr '\0' a; printf '"}\n'; } > "$T/p1m.yaml"
expect_status 65 run_bounded 400 "$LATENTQ" submit --no-device "$T/p1m.yaml"
expect_grep 'jobs\[0\]\.prompt: the value is 1048576 bytes; a string may be at most 65536 bytes .*\[LQ-MAN-015\]' "$T/err"

# ---- a FIFO in place of a model file: refused, never waited on
for f in transformer/diffusion_pytorch_model.safetensors transformer/config.json \
    scheduler/scheduler_config.json model_index.json; do
	rm -rf "$T/fifo"
	cp -R "$MODEL" "$T/fifo"
	rm "$T/fifo/$f"
	mkfifo "$T/fifo/$f"
	printf 'jobs:\n  - {name: a, model: %s, prompt: p, height: 64, width: 64, num_frames: 9}\n' "$T/fifo" > "$T/fifo.yaml"
	expect_status 65 timeout 60 "$LATENTQ" submit --no-device "$T/fifo.yaml"
	expect_grep "$f: cannot (open|read): not a regular file \\(a folder, FIFO, socket or device\\)" "$T/err"
done

# ---- priority is 64-bit end to end (3000000000 wrapped negative in an int)
cat > "$T/prio.yaml" <<YAML
defaults: {model: $MODEL, prompt: p, height: 64, width: 64, num_frames: 9, num_inference_steps: 2}
jobs:
  - {name: low, priority: 1}
  - {name: high, priority: 3000000000}
  - {name: top, priority: 9007199254740992}
  - {name: bottom, priority: -9007199254740992}
YAML
expect_status 0 "$LATENTQ" -d "$T/prio.db" submit --no-device "$T/prio.yaml"
expect_eq "$(sqlite3 "$T/prio.db" "SELECT group_concat(name || '=' || priority, ' ') FROM (SELECT name, priority FROM jobs ORDER BY priority DESC, id)")" \
    "top=9007199254740992 high=3000000000 low=1 bottom=-9007199254740992" "queue order by priority"
expect_status 0 "$LATENTQ" -d "$T/prio.db" status --json
expect_grep '"name":"high",[^}]*"priority":3000000000[,}]' "$T/out"
expect_grep '"name":"top",[^}]*"priority":9007199254740992[,}]' "$T/out"
expect_grep '"name":"bottom",[^}]*"priority":-9007199254740992[,}]' "$T/out"

# ---- a 300-byte name: refused at preflight (the default output is {name}.mp4)
long=$(awk 'BEGIN { for (i = 0; i < 300; i++) printf "n" }')
printf 'jobs:\n  - {name: %s, model: %s, prompt: p, height: 64, width: 64, num_frames: 9}\n' "$long" "$MODEL" > "$T/long.yaml"
expect_status 65 "$LATENTQ" -d "$T/long.db" submit --no-device "$T/long.yaml"
expect_grep 'LQ-OUT-006: jobs\[0\]\.output: .* is 304 bytes; a file name may be at most 223 ' "$T/err"
expect_grep '^0 queued, 0 already queued, 1 rejected$' "$T/out"

# ---- control characters in a name: refused, and never printed raw
ESC=$(printf '\033')
cat > "$T/esc.yaml" <<YAML
defaults: {model: $MODEL, prompt: p, height: 64, width: 64, num_frames: 9}
jobs:
  - {name: "evil\n\e]0;owned\a\e[2J", output: e.mp4}
  - {name: "tab\tname", output: t.mp4}
YAML
expect_status 65 "$LATENTQ" -d "$T/esc.db" submit --no-device "$T/esc.yaml"
expect_grep 'LQ-NAME-001' "$T/err"
expect_grep 'evil\\n\\x1b\]0;owned\\x07\\x1b\[2J' "$T/err"
expect_grep '^rejected +1 +evil\\n\\x1b\]0;owned\\x07\\x1b\[2J$' "$T/out"
for cmd in "status" "show 1" "show 2" "list"; do
	# shellcheck disable=SC2086
	expect_status 0 "$LATENTQ" -d "$T/esc.db" $cmd
	checks=$((checks + 1))
	if LC_ALL=C grep -q "$ESC" "$T/out" "$T/err"; then
		fail "$cmd printed a raw ESC"
	fi
	checks=$((checks + 1))
	if LC_ALL=C grep -q "$(printf '\t')name" "$T/out"; then
		fail "$cmd printed a raw tab in a name"
	fi
done
expect_status 0 "$LATENTQ" -d "$T/esc.db" status
expect_grep '^1 +evil\\n\\x1b\]0;owned\\x07\\x1b\[2J +rejected ' "$T/out"
expect_grep '^2 +tab\\tname +rejected ' "$T/out"
expect_status 0 "$LATENTQ" -d "$T/esc.db" list
expect_grep '^2	tab\\tname	rejected	' "$T/out"
# JSON output keeps the name exactly (cJSON escapes it)
expect_status 0 "$LATENTQ" -d "$T/esc.db" status --json
expect_grep '"name":"evil\\n\\u001b\]0;owned\\u0007\\u001b\[2J"' "$T/out"

finish
