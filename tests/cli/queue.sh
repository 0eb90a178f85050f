#!/bin/sh
# CLI round trip through submit, status, show, list, cancel and retry;
# idempotent submit; bad input is refused without losing what was recorded.
. "${top_srcdir:-.}/tests/cli/common.sh"

# A real model folder: submit runs preflight, which reads its configs.
cat > "$T/m.yaml" <<YAML
version: 1
defaults:
  model: $top_srcdir/jobs/models/ltxv-demo
  height: 64
  width: 64
  num_frames: 9
  num_inference_steps: 3
jobs:
  - name: a
    prompt: a red circle moving left on a black background
    seed: 1
  - name: b
    prompt: a blue square moving up on a gray background
    seeds: [7, 18446744073709551615]
YAML

expect_status 0 "$LATENTQ" submit "$T/m.yaml"
expect_grep '^queued +1 +a$' "$T/out"
expect_grep '^3 queued, 0 already queued, 0 rejected$' "$T/out"

# -q: errors only.
expect_status 0 "$LATENTQ" -q submit "$T/m.yaml"
checks=$((checks + 1)); [ ! -s "$T/out" ] || fail "-q submit printed: $(cat "$T/out")"

# Submitting again queues nothing new, unless --again.
expect_status 0 "$LATENTQ" submit "$T/m.yaml"
expect_grep '^0 queued, 3 already queued' "$T/out"
expect_status 0 "$LATENTQ" submit --again "$T/m.yaml"
expect_grep '^3 queued, 0 already' "$T/out"

expect_status 0 "$LATENTQ" status
expect_grep '^1 +a +queued +0/3 +0 +0/3' "$T/out"
expect_grep '^6 queued, 0 running, 0 done' "$T/out"
expect_status 0 "$LATENTQ" status --json
checks=$((checks + 1))
n=$(tr -cd '{' < "$T/out" | wc -c)
[ "$n" -eq 6 ] || fail "status --json: expected 6 objects, got $n"
expect_grep '"state":"queued"' "$T/out"

# The u64 seed survives exactly, as a string in the config.
expect_status 0 "$LATENTQ" show --json 3
expect_grep '"seed":[[:space:]]*"18446744073709551615"' "$T/out"
expect_status 0 "$LATENTQ" show a
expect_grep '^request \(as written\):' "$T/out"
expect_grep '"prompt":[[:space:]]*"a red circle' "$T/out"
expect_grep '^events:' "$T/out"
expect_grep 'submitted' "$T/out"
# the validated config one key a line, indented (not json_pretty's
# newlines and tabs escaped onto one line)
expect_grep '^config \(digest [0-9a-f]{64}\):$' "$T/out"
expect_grep '^  "prompt": +"a red circle' "$T/out"
expect_no_grep '\\n\\t' "$T/out"
# the request as written keeps every digit of a u64 seed
expect_status 0 "$LATENTQ" show 3
expect_grep '"seeds":\[7,18446744073709551615\]' "$T/out"
expect_status 0 "$LATENTQ" show --json 3
expect_grep '"seeds":\[7,18446744073709551615\]' "$T/out"
expect_status 64 "$LATENTQ" -d "" status
expect_grep 'needs a database path' "$T/err"

# cancel / retry and their illegal forms.
expect_status 0 "$LATENTQ" cancel 1
expect_status 65 "$LATENTQ" cancel 1
expect_grep 'cannot cancel job 1 \(a\): it is cancelled' "$T/err"
expect_status 0 "$LATENTQ" retry 1
expect_status 65 "$LATENTQ" retry 1
expect_grep 'it is queued' "$T/err"
expect_status 0 "$LATENTQ" show 1
expect_grep 'cancelled' "$T/out"
expect_grep 'retried' "$T/out"
expect_status 66 "$LATENTQ" show nosuchjob
expect_grep 'no job nosuchjob' "$T/err"

expect_status 0 "$LATENTQ" list --state queued
checks=$((checks + 1))
[ "$(wc -l < "$T/out")" -eq 6 ] || fail "list: expected 6 lines"

# Bad input: a syntax error queues nothing and keeps what was recorded.
printf 'jobs:\n  - name: x\n    height: [1\n' > "$T/bad.yaml"
expect_status 65 "$LATENTQ" submit "$T/bad.yaml"
expect_grep 'bad.yaml:[0-9]+:[0-9]+:' "$T/err"
# A job with a type error is recorded as rejected; its neighbour is queued.
cat > "$T/mixed.yaml" <<YAML
defaults:
  model: $top_srcdir/jobs/models/ltxv-demo
  num_frames: 9
jobs:
  - name: good
    prompt: a red circle moving left on a black background
    num_inference_steps: 3
  - name: bad
    prompt: x
    height: tall
YAML
expect_status 65 "$LATENTQ" submit "$T/mixed.yaml"
expect_grep 'queued +[0-9]+ +good' "$T/out"
expect_grep 'rejected +[0-9]+ +bad' "$T/out"
expect_grep 'mixed.yaml:10:[0-9]+: jobs\[1\]\.height' "$T/err"
expect_status 0 "$LATENTQ" status --state rejected
expect_grep 'bad +rejected' "$T/out"
expect_status 0 "$LATENTQ" status
expect_grep '^7 queued, 0 running, 0 done, 1 rejected' "$T/out"

# Preflight inside submit: an off-grid height is rejected with its code and
# every problem; --snap queues it with the snapped value and an event.
cat > "$T/grid.yaml" <<YAML
defaults:
  model: $top_srcdir/jobs/models/ltxv-demo
  prompt: a red circle moving left on a black background
  num_frames: 9
  width: 64
jobs:
  - name: offgrid
    height: 50
    num_inference_steps: 0
YAML
expect_status 65 "$LATENTQ" submit --no-device "$T/grid.yaml"
expect_grep 'rejected +[0-9]+ +offgrid' "$T/out"
expect_grep 'error LQ-GEOM-001: jobs\[0\]\.height: 50 is not a multiple of 32' "$T/err"
expect_grep 'error LQ-SAMP-001' "$T/err"
expect_status 0 "$LATENTQ" show --json offgrid
expect_grep 'LQ-GEOM-001' "$T/out"
expect_grep 'LQ-SAMP-001' "$T/out"
sed 's/num_inference_steps: 0/num_inference_steps: 2/' "$T/grid.yaml" > "$T/snap.yaml"
expect_status 0 "$LATENTQ" submit --no-device --snap "$T/snap.yaml"
expect_grep 'queued +([0-9]+) +offgrid' "$T/out"
expect_grep 'warning LQ-GEOM-001: .*snapped to 64' "$T/err"
id=$(sed -n 's/^queued *\([0-9]*\) *offgrid$/\1/p' "$T/out")
expect_status 0 "$LATENTQ" show --json "$id"
expect_grep '"height":[[:space:]]*64' "$T/out"
expect_grep '"preflight"' "$T/out"

# Usage errors: exit 64 on stderr; --help on stdout with exit 0.
expect_status 64 "$LATENTQ" submit
expect_grep '^usage: latentq submit' "$T/err"
expect_status 64 "$LATENTQ" frobnicate
expect_grep 'unknown command' "$T/err"
expect_status 64 "$LATENTQ" s
expect_grep 'ambiguous command: s, could be: submit status show' "$T/err"
expect_status 0 "$LATENTQ" submit --help
expect_grep '^usage: latentq submit' "$T/out"
expect_status 0 "$LATENTQ" --help
expect_grep '^Commands:' "$T/out"

# check: the database is sound; on PostgreSQL the server keeps its own
# pages, so --repair (an SQLite file copy) is refused as a usage error.
expect_status 0 "$LATENTQ" check
expect_grep ': ok' "$T/out"
if [ "$LATENTQ_TEST_DB" = postgresql ]; then
	expect_grep 'the server checks its own pages' "$T/out"
	expect_status 64 "$LATENTQ" check --repair
	expect_grep 'check --repair copies an SQLite file.*LQ-DB-011' "$T/err"
	# a libpq keyword/value string names the same queue as the URL
	expect_status 0 "$LATENTQ" -d "host=$PG_DIR user=$PG_USER dbname=queue" status
	expect_grep '^1 +a +queued' "$T/out"
fi

# Six hosts submitting one manifest at once queue each of its jobs once,
# as one host submitting it six times does: the others report it "already"
# (SQLite: the write lock; PostgreSQL: submit's advisory lock).
fresh_queue
seeds=$(seq -s, 1 24)
cat > "$T/many.yaml" <<YAML
version: 1
defaults:
  model: $top_srcdir/jobs/models/ltxv-demo
  height: 64
  width: 64
  num_frames: 9
  num_inference_steps: 2
jobs:
  - name: many
    prompt: a red circle moving left on a black background
    seeds: [$seeds]
YAML
pids=
for h in 1 2 3 4 5 6; do
	LATENTQ_HOST=host$h "$LATENTQ" submit --no-device "$T/many.yaml" \
	    > "$T/many$h.out" 2> "$T/many$h.err" &
	pids="$pids $!"
done
h=0
for p in $pids; do
	h=$((h + 1))
	wait "$p"
	expect_eq "$?" 0 "concurrent submit on host$h ($(cat "$T/many$h.err"))"
done
counts=$(cat "$T"/many?.out | awk '/ queued, .* already queued/ { q += $1; a += $3 } END { print q + 0, a + 0 }')
expect_eq "$counts" "24 120" "queued and already-queued jobs of six concurrent submits"
expect_eq "$(db_sql "$LATENTQ_DB" "SELECT count(*) || ' ' || count(DISTINCT config_digest) FROM jobs")" "24 24" \
    "jobs and distinct configs after concurrent submits"

# A database from a newer latentq is refused, untouched.
sqlite3 "$T/new.db" 'PRAGMA user_version = 999;'
expect_status 65 "$LATENTQ" -d "$T/new.db" status
expect_grep 'newer than this latentq' "$T/err"
finish
