#!/bin/sh
# test-ops-shaders.sh — tests/gpu/test-ops with every op as a shader
# (LATENTQ_GPU_HOST_GEMM=0): on a CPU device test-ops itself takes the
# host path for the GEMMs, norms and elementwise ops, so this is where the
# shaders those replace (linear.comp, norm.comp, ew.comp, rope.comp, ...)
# are checked against the reference on lavapipe.
top_builddir=${top_builddir:-.}
LATENTQ_GPU_HOST_GEMM=0 exec "$top_builddir/tests/gpu/test-ops"
