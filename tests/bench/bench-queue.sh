#!/bin/sh
# bench-queue.sh — submit of a 10,000-job manifest and `status --json` over
# 10,000 jobs (issue 2's targets: both well under 2 s).  Prints the times.
set -eu
LATENTQ=${LATENTQ:-./latentq}
T=$(mktemp -d /tmp/latentq-bench.XXXXXX)
trap 'rm -rf "$T"' EXIT
{
	echo "version: 1"
	echo "defaults: {model: $(cd "${top_srcdir:-.}" && pwd)/jobs/models/ltxv-demo, height: 64, width: 64, num_frames: 9, num_inference_steps: 20}"
	echo "jobs:"
	i=0
	while [ $i -lt 10000 ]; do
		echo "  - {name: job$i, prompt: a red circle moving left on a black background, seed: $i}"
		i=$((i + 1))
	done
} > "$T/big.yaml"
now() { date +%s.%N; }
t0=$(now)
"$LATENTQ" -q -d "$T/q.db" submit --quiet "$T/big.yaml"
t1=$(now)
"$LATENTQ" -d "$T/q.db" status --json > "$T/status.json"
t2=$(now)
"$LATENTQ" -d "$T/q.db" status > /dev/null
t3=$(now)
awk -v a="$t0" -v b="$t1" -v c="$t2" -v d="$t3" 'BEGIN {
	printf "submit 10000 jobs:        %.3f s\n", b - a
	printf "status --json 10000 jobs: %.3f s\n", c - b
	printf "status 10000 jobs:        %.3f s\n", d - c
}'
