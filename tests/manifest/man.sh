#!/bin/sh
# man.sh — latentq-manifest(5) renders without a single warning.
set -e
LC_ALL=C; export LC_ALL
command -v man >/dev/null 2>&1 || { echo "man is not installed"; exit 77; }
out=$(man --warnings -l "$top_srcdir/man/latentq-manifest.5" 2>&1 >/dev/null)
if [ -n "$out" ]; then
	printf '%s\n' "$out"
	exit 1
fi
echo "latentq-manifest.5: no warnings"
