#!/bin/sh
# bench-streaming.sh — the cost of weight streaming: the demo model (4
# transformer blocks, streamed through two slots so every block is
# uploaded at every step) rendered at 128x128x17 with weight_streaming off
# and on, 4 steps each; prints the mean compute time per step of each and
# the streamed / resident ratio.  On a CPU device (lavapipe) an upload is a
# memcpy into mapped memory; on a discrete GPU it is a staged copy.
set -eu
LATENTQ=${LATENTQ:-./latentq}
top_srcdir=${top_srcdir:-.}
T=$(mktemp -d /tmp/latentq-bench.XXXXXX)
trap 'rm -rf "$T"' EXIT
for mode in off on; do
	cat > "$T/m.yaml" <<YAML
jobs:
  - name: bench-$mode
    model: $(cd "$top_srcdir" && pwd)/jobs/models/ltxv-demo
    prompt: a red circle moving left on a black background
    height: 128
    width: 128
    num_frames: 17
    num_inference_steps: 4
    guidance_scale: 4
    weight_streaming: $mode
    output: out.mp4
YAML
	"$LATENTQ" -vv -d "$T/q-$mode.db" render "$T/m.yaml" 2> "$T/log" > /dev/null
	sed -n 's/.*step [0-9]*: compute \([0-9.]*\) ms.*/\1/p' "$T/log" |
	    awk -v m="$mode" '{c += $1; n++} END {
		printf "weight_streaming %-3s %d steps: %.1f ms/step compute\n",
		    m, n, c / n; print c / n > "/dev/stderr" }' 2>> "$T/ms"
done
awk 'NR == 1 {off = $1} NR == 2 {printf "streamed / resident: %.3f\n", $1 / off}' "$T/ms"
