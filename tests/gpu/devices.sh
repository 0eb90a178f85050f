#!/bin/sh
# devices.sh — `latentq devices`: text and JSON listing, and a saved JSON
# read back with --device-caps gives the same JSON.
. "${top_srcdir:-.}/tests/cli/common.sh"

expect_status 0 "$LATENTQ" devices
expect_grep '^device 0: ' "$T/out"
expect_grep 'maxStorageBufferRange: +[0-9]+' "$T/out"
expect_status 0 "$LATENTQ" devices --json
expect_grep '"max_storage_buffer_range":' "$T/out"
expect_grep '"uuid":[[:space:]]+"[0-9a-f]{32}"' "$T/out"
cp "$T/out" "$T/caps.json"
expect_status 0 "$LATENTQ" devices --json --device-caps "$T/caps.json"
sed -n '/"index"/,/"max_workgroup_count"/p' "$T/caps.json" > "$T/a"
sed -n '/"index"/,/"max_workgroup_count"/p' "$T/out" > "$T/b"
checks=$((checks + 1))
cmp -s "$T/a" "$T/b" || fail "caps JSON changed through --device-caps"
echo '{"name": 5}' > "$T/bad.json"
expect_status 65 "$LATENTQ" devices --device-caps "$T/bad.json"
expect_grep 'LQ-GPU-CAPS|name' "$T/err"
# A file that describes no device is refused, not read as a zero device.
echo '{}' > "$T/empty.json"
expect_status 65 "$LATENTQ" devices --device-caps "$T/empty.json"
expect_grep 'LQ-GPU-CAPS' "$T/err"
expect_status 64 "$LATENTQ" devices extra
# No Vulkan driver: this host cannot render (69, EX_UNAVAILABLE).
VK_ICD_FILENAMES=/nonexistent expect_status 69 "$LATENTQ" devices
expect_grep "vkCreateInstance" "$T/err"
finish
