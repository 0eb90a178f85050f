#!/bin/sh
# lsan-mesa.sh — (sanitizer builds only) the LeakSanitizer suppression is
# for Mesa's leak, not ours, and matches nothing else it should not:
# vk-leak (Vulkan only, no latentq code) is reported leaking without the
# suppression file and is clean with it.
. "${top_srcdir:-.}/tests/cli/common.sh"
prog=${top_builddir:-.}/tests/sanitizers/vk-leak
supp=$top_srcdir/tests/sanitizers/lsan.supp
unset ASAN_OPTIONS
# without the suppression: LeakSanitizer reports the 128-byte leak
checks=$((checks + 1))
LSAN_OPTIONS=fast_unwind_on_malloc=0:exitcode=23 "$prog" >"$T/out" 2>"$T/err"
rc=$?
[ "$rc" = 77 ] && { echo "no Vulkan device"; exit 77; }
[ "$rc" = 23 ] || fail "vk-leak without suppressions exited $rc, expected 23 (a leak report)"
expect_grep 'ERROR: LeakSanitizer: detected memory leaks' "$T/err"
expect_grep '__pthread_once_slow' "$T/err"
# with it: clean, and the rule is the one that matched
expect_status 0 env LSAN_OPTIONS="suppressions=$supp:fast_unwind_on_malloc=0:print_suppressions=1:exitcode=23" "$prog"
expect_grep 'Suppressions used:' "$T/err"
expect_grep 'leak +__pthread_once_slow' "$T/err"
finish
