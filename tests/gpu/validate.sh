#!/bin/sh
# validate.sh — runs the kernel and runtime tests under the Khronos
# validation layer (LATENTQ_VALIDATE=1); test-ops fails on any validation
# message it counted, and this script also fails if the layer printed any.
# Skips (77) only when the layer is not installed.
set -u
: "${top_builddir:=.}"
LC_ALL=C; export LC_ALL
found=0
for d in /usr/share/vulkan/explicit_layer.d /etc/vulkan/explicit_layer.d \
    /usr/local/share/vulkan/explicit_layer.d; do
	[ -f "$d/VkLayer_khronos_validation.json" ] && found=1
done
if [ "$found" -eq 0 ]; then
	echo "VK_LAYER_KHRONOS_validation not installed; skipping"
	exit 77
fi
T=$(mktemp -d /tmp/latentq-validate.XXXXXX)
trap 'rm -rf "$T"' EXIT
LATENTQ_VALIDATE=1; export LATENTQ_VALIDATE
rc=0
# test-ops twice: on a CPU device its default is the host path, so the
# shaders the host path replaces are validated with LATENTQ_GPU_HOST_GEMM=0
"$top_builddir/tests/gpu/test-ops" >"$T/ops.out" 2>"$T/ops.err" || rc=1
LATENTQ_GPU_HOST_GEMM=0 "$top_builddir/tests/gpu/test-ops" >"$T/ops0.out" \
    2>"$T/ops0.err" || rc=1
# and the subgroup kernels (norm_sg, attn_sg), where the device has the
# arithmetic
LATENTQ_GPU_HOST_GEMM=0 LATENTQ_GPU_SUBGROUP=1 \
    "$top_builddir/tests/gpu/test-ops" >"$T/ops1.out" 2>"$T/ops1.err" || rc=1
"$top_builddir/tests/gpu/test-runtime" >"$T/rt.out" 2>"$T/rt.err" || rc=1
grep -H "validation messages" "$T/ops.out" "$T/ops0.out" "$T/ops1.out"
if grep -q "vulkan validation" "$T/ops.err" "$T/ops0.err" "$T/ops1.err" \
    "$T/rt.err"; then
	echo "FAIL: validation layer reported:"
	grep -h "vulkan validation" "$T/ops.err" "$T/ops0.err" "$T/ops1.err" \
	    "$T/rt.err" | head -20
	rc=1
fi
for o in ops ops0 ops1; do
	if ! grep -q "^validation messages: 0$" "$T/$o.out"; then
		echo "FAIL: test-ops ($o) did not report zero validation messages"
		tail -n 20 "$T/$o.out" "$T/$o.err"
		rc=1
	fi
done
[ "$rc" -eq 0 ] || tail -n 20 "$T/ops.out" "$T/ops.err" "$T/ops0.out" \
    "$T/ops0.err" "$T/rt.out" "$T/rt.err"
exit $rc
