# render-common.sh — shared by the render, resume and worker tests: a copy
# of the demo model and a small manifest of it, plus helpers to read the
# queue database.
. "${top_srcdir:-.}/tests/cli/common.sh"

# The demo model, copied so tests may modify it.
cp -r "$top_srcdir/jobs/models/ltxv-demo" "$T/model"
chmod -R u+w "$T/model"
LATENTQ_RETRY_BACKOFF=0.05; export LATENTQ_RETRY_BACKOFF
LATENTQ_LEASE_SECONDS=4; export LATENTQ_LEASE_SECONDS
unset LATENTQ_FAULT

# write_manifest FILE STEPS NAME:SEED... : a manifest of demo jobs.
write_manifest() {
	file=$1; steps=$2; shift 2
	{
		echo "version: 1"
		echo "defaults:"
		echo "  model: $T/model"
		echo "  height: 64"
		echo "  width: 64"
		echo "  num_frames: 9"
		echo "  num_inference_steps: $steps"
		echo "  guidance_scale: 4"
		echo "  output: videos/{name}.mp4"
		echo "jobs:"
		for j in "$@"; do
			echo "  - name: ${j%%:*}"
			echo "    prompt: a red circle moving left on a black background"
			echo "    seed: ${j#*:}"
		done
	} > "$file"
}

# q SQL : run a query on the test database.
q() { db_sql "$LATENTQ_DB" "$1"; }

# digest FILE
digest() { sha256sum "$1" | cut -d' ' -f1; }
