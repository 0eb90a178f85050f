#!/bin/sh
# bench-warm.sh — what the warm worker saves (issue 18 item 4): a queue of
# N small demo jobs (64x64x9, STEPS steps) run warm (one `exec-job --serve`
# child) and with LATENTQ_WARM_WORKER=0 (a child per job): wall time per
# job, the step compute in it, and the per-job overhead, (job wall - step
# compute) / job wall.  Then which cache shortens a fresh child's startup
# (claim to the text encoder: spawn, device, pipelines) on this driver:
# both caches, Mesa's disk cache off (MESA_SHADER_CACHE_DISABLE=true),
# latentq's VkPipelineCache off (LATENTQ_NO_PIPELINE_CACHE=1), both off.
# BENCH_WARM_JOBS (default 20) and BENCH_WARM_STEPS (default 2) size it.
set -eu
LATENTQ=${LATENTQ:-./latentq}
top_srcdir=${top_srcdir:-.}
N=${BENCH_WARM_JOBS:-20}
STEPS=${BENCH_WARM_STEPS:-2}
T=$(mktemp -d /tmp/latentq-bench.XXXXXX)
trap 'rm -rf "$T"' EXIT
model=$(cd "$top_srcdir" && pwd)/jobs/models/ltxv-demo

# manifest FILE COUNT
manifest() {
	{
		echo "defaults:"
		echo "  model: $model"
		echo "  prompt: a red circle moving left on a black background"
		echo "  height: 64"
		echo "  width: 64"
		echo "  num_frames: 9"
		echo "  num_inference_steps: $STEPS"
		echo "  guidance_scale: 4"
		echo "  output: videos/{name}.mp4"
		echo "jobs:"
		i=1
		while [ "$i" -le "$2" ]; do
			echo "  - {name: j$i, seed: $i}"
			i=$((i + 1))
		done
	} > "$1"
}

# startup DB : mean seconds from each job's claim to its encode-text phase
# (spawn, device, pipelines): of all jobs, and of the jobs after the first
startup() {
	sqlite3 "$1" "SELECT printf('%.2f %.2f', avg(s), coalesce(avg(CASE WHEN job_id > 1 THEN s END), avg(s))) FROM (SELECT c.job_id, min(p.at) - max(c.at) AS s FROM events c JOIN events p ON p.job_id = c.job_id AND p.kind = 'phase' AND p.detail = '{\"phase\":\"encode-text\"}' AND p.at > c.at WHERE c.kind = 'claimed' GROUP BY c.job_id)"
}

# queue MODE : runs the N-job queue, MODE warm or cold
queue() {
	manifest "$T/q.yaml" "$N"
	db=$T/$1.db
	"$LATENTQ" -q -d "$db" submit "$T/q.yaml" > /dev/null
	w=1; [ "$1" = cold ] && w=0
	t0=$(date +%s.%N)
	LATENTQ_WARM_WORKER=$w "$LATENTQ" -vv -d "$db" run --once 2> "$T/$1.log" \
	    > /dev/null
	t1=$(date +%s.%N)
	compute=$(sed -n 's/.*step [0-9]*: compute \([0-9.]*\) ms.*/\1/p' "$T/$1.log" |
	    awk '{c += $1} END {printf "%.3f", c / 1000}')
	m=$1
	set -- $(startup "$db")
	awk -v m="$m" -v n="$N" -v t0="$t0" -v t1="$t1" -v c="$compute" \
	    -v s="$2" 'BEGIN {
		w = (t1 - t0) / n
		printf "%-4s %2d jobs: %6.1f s, %5.2f s/job, step compute %5.2f s/job, overhead %4.1f%%; startup after the first job %5.2f s/job\n",
		    m, n, t1 - t0, w, c / n, 100 * (w - c / n) / w, s }'
	rm -rf "$T/videos"
}

echo "(a loaded machine inflates every figure; compare within one run)"
queue warm
queue cold

# cache MESA LATENTQ : a fresh child's startup, 3 one-job children
cache() {
	manifest "$T/c.yaml" 3
	db=$T/cache-$1-$2.db
	"$LATENTQ" -q -d "$db" submit "$T/c.yaml" > /dev/null
	(
		[ "$1" = on ] || { MESA_SHADER_CACHE_DISABLE=true; export MESA_SHADER_CACHE_DISABLE; }
		[ "$2" = on ] || { LATENTQ_NO_PIPELINE_CACHE=1; export LATENTQ_NO_PIPELINE_CACHE; }
		LATENTQ_WARM_WORKER=0 "$LATENTQ" -q -d "$db" run --once > /dev/null
	)
	set -- "$1" "$2" $(startup "$db")
	printf "fresh child, Mesa disk cache %-3s VkPipelineCache %-3s: startup %5.2f s/job\n" \
	    "$1" "$2" "$3"
	rm -rf "$T/videos"
}
cache on on
cache off on
cache on off
cache off off
