#!/bin/sh
# bench-mesh.sh — step time of one demo job (128x128x17: 2304 tokens, one
# video with guidance: two transformer rows) on 1, 2 and 4 logical devices
# (LATENTQ_LOGICAL_DEVICES, issue 16): context parallel {2, context 2},
# data parallel {2, data 2} at per_device_batch_size 0.5, and both
# {4, data 2, context 2}.  On lavapipe the logical devices share the same
# CPU cores, so this measures the mesh's overhead (the all-to-all through
# host memory, per-device weights) more than a speed-up; on several GPUs
# (LATENTQ_DEVICE=0,1,2,3 with LATENTQ_LOGICAL_DEVICES unset) it measures
# the speed-up.  Prints the mean compute time per step of each.
set -eu
LATENTQ=${LATENTQ:-./latentq}
top_srcdir=${top_srcdir:-.}
: "${LATENTQ_LOGICAL_DEVICES:=4}"; export LATENTQ_LOGICAL_DEVICES
T=$(mktemp -d /tmp/latentq-bench.XXXXXX)
trap 'rm -rf "$T"' EXIT
for m in "1:{devices: 1}:1" "2cp:{devices: 2, context: 2}:1" \
    "2dp:{devices: 2, data: 2}:0.5" "4:{devices: 4, data: 2, context: 2}:0.5"; do
	name=${m%%:*}; rest=${m#*:}; mesh=${rest%:*}; pdb=${rest##*:}
	cat > "$T/m.yaml" <<YAML
jobs:
  - name: bench-$name
    model: $(cd "$top_srcdir" && pwd)/jobs/models/ltxv-demo
    prompt: a red circle moving left on a black background
    height: 128
    width: 128
    num_frames: 17
    num_inference_steps: 4
    guidance_scale: 4
    mesh: $mesh
    per_device_batch_size: $pdb
    output: out.mp4
YAML
	"$LATENTQ" -vv -d "$T/q-$name.db" render "$T/m.yaml" 2> "$T/log" > /dev/null
	sed -n 's/.*step [0-9]*: compute \([0-9.]*\) ms, checkpoint .*/\1/p' "$T/log" |
	    awk -v m="$mesh" '{c += $1; n++} END {
		printf "%-36s %d steps: %.1f ms/step compute\n", m, n, c / n }'
done
