#!/bin/sh
# bench-render.sh — per-step time of a demo render and the checkpoint's
# share of it (issue 8's target: under 2% at a realistic latent size).
# Renders one job of the demo model at 64x64x9 (320 tokens) and one at
# 128x128x17 (9 x 16 x 16 = 2304 tokens x 16 channels; the 3 MiB latent of a
# 16x16x24 x 128-channel model is measured by bench-checkpoint), 6 steps each, checkpoints kept at the
# default 2, and prints the first step's compute time (it includes the
# pipelines' compilation) and the mean compute and checkpoint time of the
# steady steps after it.  Each size at every precision of
# LATENTQ_BENCH_PRECISIONS (default "f32 bf16": the job key `precision`;
# on a CPU device bf16 only adds the rounding).
set -eu
LATENTQ=${LATENTQ:-./latentq}
top_srcdir=${top_srcdir:-.}
T=$(mktemp -d /tmp/latentq-bench.XXXXXX)
trap 'rm -rf "$T"' EXIT
for size in 64x64x9 128x128x17; do
for prec in ${LATENTQ_BENCH_PRECISIONS:-f32 bf16}; do
	h=${size%%x*}; rest=${size#*x}; w=${rest%%x*}; f=${rest#*x}
	cat > "$T/m.yaml" <<YAML
jobs:
  - name: bench-$size
    model: $(cd "$top_srcdir" && pwd)/jobs/models/ltxv-demo
    prompt: a red circle moving left on a black background
    height: $h
    width: $w
    num_frames: $f
    num_inference_steps: 6
    guidance_scale: 4
    precision: $prec
    output: out.mp4
YAML
	"$LATENTQ" -vv -d "$T/q-$size-$prec.db" render "$T/m.yaml" 2> "$T/log" > /dev/null
	# step 1 also compiles the pipelines the steps use: the steady step
	# is the mean of the others (issue 18's "one steady step")
	sed -n 's/.*step [0-9]*: compute \([0-9.]*\) ms, checkpoint \([0-9.]*\) ms/\1 \2/p' "$T/log" |
	    awk -v s="$size $prec" 'NR == 1 {first = $1; next}
		{c += $1; k += $2; n++} END {
		printf "%-17s %d steps: first %.1f ms, steady %.1f ms/step compute, %.2f ms/step checkpoint (%.2f%% of the step)\n",
		    s, n + 1, first, c / n, k / n, 100 * k / (c + k) }'
done
done
