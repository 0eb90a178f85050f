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
"$top_builddir/tests/gpu/test-ops" >"$T/ops.out" 2>"$T/ops.err" || rc=1
"$top_builddir/tests/gpu/test-runtime" >"$T/rt.out" 2>"$T/rt.err" || rc=1
grep -H "validation messages" "$T/ops.out"
if grep -q "vulkan validation" "$T/ops.err" "$T/rt.err"; then
	echo "FAIL: validation layer reported:"
	grep -h "vulkan validation" "$T/ops.err" "$T/rt.err" | head -20
	rc=1
fi
if ! grep -q "^validation messages: 0$" "$T/ops.out"; then
	echo "FAIL: test-ops did not report zero validation messages"
	tail -20 "$T/ops.out" "$T/ops.err"
	rc=1
fi
[ "$rc" -eq 0 ] || { tail -20 "$T/ops.out" "$T/ops.err" "$T/rt.err"; }
exit $rc
