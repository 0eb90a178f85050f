#!/bin/sh
# The transformers at `precision: bf16` and `f16` (gpu_cmd_set_precision:
# every matrix product's operands rounded, fp32 sums) through `latentq
# forward --precision`, against the upstream float32 goldens with the
# tolerances latentq measured for each precision, relative to the
# golden's largest |value| (st-compare --rel):
#
#   precision  measured max rel (LTX-Video gridA/gridB, LTX-2 gridA,
#              Wan grid_a)                     tolerance
#   bf16       3.8e-3 / 3.2e-3, 4.1e-3, 2.6e-3   8e-3  (2^-7)
#   f16        5.6e-4 / 3.6e-4, 5.0e-4, 3.1e-4   1e-3  (2^-10)
#
# (bf16 keeps 8 significant bits, f16 11: both errors are about two
# units in the last place of the operand type.)  Each run differs from
# the f32 run (the key takes effect); the shaders' path agrees with the
# host path's tolerance; bad --precision values and a component other
# than the transformer are refused.
. "${top_srcdir:-.}/tests/cli/common.sh"
CMP=${top_builddir:-.}/tests/nn/st-compare
ST=${top_builddir:-.}/tests/render/st-tool

tol() {	# tol PRECISION
	case $1 in bf16) echo 8e-3 ;; f16) echo 1e-3 ;; esac
}
# within SET PRECISION REL_FILE MINE [KEY...]: MINE within PRECISION's
# tolerance of the golden
within() {
	w_set=$1 w_p=$2
	shift 2
	checks=$((checks + 1))
	"$CMP" --rel "$(tol "$w_p")" "$w_set/index.json" "$w_set" "$@" ||
	    fail "$w_p: st-compare $*"
}
# run NAME PRECISION MODEL INPUTS [ARGS...]: forward into $T/NAME-PRECISION.st
run() {
	r_name=$1 r_p=$2 r_m=$3 r_in=$4
	shift 4
	expect_status 0 "$LATENTQ" forward --model "$r_m" --component \
	    transformer --inputs "$r_in" "$@" --precision "$r_p" \
	    --out "$T/$r_name-$r_p.st"
}
differs() {	# differs A B: the two outputs are not the same bytes
	checks=$((checks + 1))
	cmp -s "$1" "$2" && fail "$1 and $2 are the same: precision had no effect"
}

L=$top_srcdir/tests/data/ltxv
W=$top_srcdir/tests/data/wan
A=$top_srcdir/tests/data/ltx2
"$ST" unprefix "$T/wan.in" "$W/transformer/grid_a.safetensors" input. \
    >/dev/null || fail "unprefix grid_a"
for p in f32 bf16 f16; do
	for g in gridA gridB; do
		run "ltxv$g" $p "$L/transformer/model" \
		    "$L/transformer/$g.inputs.safetensors"
	done
	run wan $p "$W/transformer/model/transformer" "$T/wan.in"
	run ltx2 $p "$A/transformer/model/transformer" \
	    "$A/transformer/gridA.inputs.safetensors" --set use_cross_timestep=true
done
for p in bf16 f16; do
	for g in gridA gridB; do
		within "$L" $p "transformer/$g.output.safetensors" \
		    "$T/ltxv$g-$p.st"
		differs "$T/ltxv$g-f32.st" "$T/ltxv$g-$p.st"
	done
	within "$W" $p transformer/grid_a.safetensors "$T/wan-$p.st" output
	differs "$T/wan-f32.st" "$T/wan-$p.st"
	within "$A" $p transformer/gridA.output.safetensors "$T/ltx2-$p.st"
	differs "$T/ltx2-f32.st" "$T/ltx2-$p.st"
done
# the tolerance is tight enough to fail: bf16 is not within f16's
checks=$((checks + 1))
"$CMP" --rel "$(tol f16)" "$L/index.json" "$L" \
    transformer/gridA.output.safetensors "$T/ltxvgridA-bf16.st" >/dev/null &&
    fail "bf16 passed f16's tolerance"

# the shaders (LATENTQ_GPU_HOST_GEMM=0) round the same operands
expect_status 0 env LATENTQ_GPU_HOST_GEMM=0 "$LATENTQ" forward --model \
    "$L/transformer/model" --component transformer --inputs \
    "$L/transformer/gridA.inputs.safetensors" --precision bf16 \
    --out "$T/shader-bf16.st"
within "$L" bf16 transformer/gridA.output.safetensors "$T/shader-bf16.st"
differs "$T/ltxvgridA-f32.st" "$T/shader-bf16.st"

# refusals
expect_status 64 "$LATENTQ" forward --model "$L/transformer/model" \
    --component transformer --inputs "$L/transformer/gridA.inputs.safetensors" \
    --precision fp8 --out "$T/x.st"
expect_grep 'precision is f32, bf16 or f16, not "fp8"' "$T/err"
expect_status 64 "$LATENTQ" forward --model "$L/vae/vae091/model/vae" \
    --component vae-decoder --inputs "$L/vae/vae091/decode.inputs.safetensors" \
    --precision bf16 --out "$T/x.st"
expect_grep "precision bf16 is the transformer's" "$T/err"
finish
