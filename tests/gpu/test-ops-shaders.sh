#!/bin/sh
# test-ops-shaders.sh — tests/gpu/test-ops with every op as a shader
# (LATENTQ_GPU_HOST_GEMM=0): on a CPU device test-ops itself takes the
# host path for the GEMMs, norms and elementwise ops, so this is where the
# shaders those replace (linear.comp, norm.comp, ew.comp, rope.comp, ...)
# are checked against the reference on lavapipe; twice, for both variants
# of the reductions (LATENTQ_GPU_SUBGROUP: norm_sg and attn_sg where the
# device has subgroup arithmetic, as lavapipe does; norm and attn /
# attn_tex otherwise).
set -u
top_builddir=${top_builddir:-.}
rc=0
for sg in 0 1; do
	echo "== LATENTQ_GPU_HOST_GEMM=0 LATENTQ_GPU_SUBGROUP=$sg"
	LATENTQ_GPU_HOST_GEMM=0 LATENTQ_GPU_SUBGROUP=$sg \
	    "$top_builddir/tests/gpu/test-ops" || rc=1
done
# test-host's shader side with the subgroup kernels: attn_sg's rounding
# at bf16 / f16 and its query rows alone (test-host itself runs the
# default, the per-invocation kernels, on lavapipe)
echo "== tests/gpu/test-host, LATENTQ_GPU_SUBGROUP=1"
LATENTQ_GPU_SUBGROUP=1 "$top_builddir/tests/gpu/test-host" || rc=1
exit $rc
