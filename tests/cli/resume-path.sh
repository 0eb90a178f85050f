#!/bin/sh
# A checkpoint resumes only under the kernel path that made it (issue 18
# item 2): on lavapipe the default is the host-GEMM fast path
# (gpu_ctx_gemm_variant "host-gemm:6x16 ..."), whose bits differ from
# the shaders', so the device fingerprint records the path.  A render
# killed under one path is refused under the other (LQ-CKPT-004, the
# checkpoint kept) and resumes under its own.  (The fast path needs no
# library, so it is there wherever lavapipe is.)
. "${top_srcdir:-.}/tests/cli/render-common.sh"
STEPS=4

# path_case NAME MADE_UNDER OTHER : kill at step 2 with
# LATENTQ_GPU_HOST_GEMM=MADE_UNDER, resume with OTHER (refused), then
# with MADE_UNDER (resumes from step 2).
path_case() {
	name=$1; made=$2; other=$3
	mkdir -p "$T/$name"
	write_manifest "$T/$name/m.yaml" $STEPS ref:42
	db=$(new_db "$name")
	"$LATENTQ" -d "$db" submit "$T/$name/m.yaml" > /dev/null
	LATENTQ_GPU_HOST_GEMM=$made LATENTQ_FAULT="kill@denoise:2#1" \
	    "$LATENTQ" -d "$db" run --max-jobs 1 > /dev/null 2>&1
	expect_eq "$(db_sql "$db" "SELECT max(step) FROM checkpoints")" 2 "$name: checkpoint of step 2"
	eval "fp_$name=\$(db_sql \"\$db\" \"SELECT device_fingerprint FROM checkpoints WHERE step = 2\")"
	db_sql "$db" "UPDATE jobs SET not_before = NULL"
	LATENTQ_GPU_HOST_GEMM=$other expect_status 65 "$LATENTQ" -d "$db" run --once
	expect_grep 'LQ-CKPT-004' "$T/err"
	expect_grep 'was made on device' "$T/err"
	expect_eq "$(db_sql "$db" "SELECT state || ' ' || error_code FROM jobs")" "poisoned LQ-CKPT-004" "$name: refused under the other path (poisoned)"
	expect_eq "$(db_sql "$db" "SELECT max(step) FROM checkpoints")" 2 "$name: checkpoint kept"
	expect_status 0 "$LATENTQ" -d "$db" retry 1
	db_sql "$db" "UPDATE jobs SET not_before = NULL"
	LATENTQ_GPU_HOST_GEMM=$made expect_status 0 "$LATENTQ" -d "$db" run --once
	expect_eq "$(db_sql "$db" "SELECT state FROM jobs")" done "$name: done under its own path"
	expect_eq "$(db_sql "$db" "SELECT detail FROM events WHERE kind = 'resumed'")" '{"step":2}' "$name: resumed from step 2"
}

path_case host 1 0
path_case shader 0 1
checks=$((checks + 1))
[ -n "$fp_host" ] && [ "$fp_host" != "$fp_shader" ] ||
    fail "the fingerprints of the two paths are equal: '$fp_host'"
finish
