#!/bin/sh
# The man pages: every command's usage appears in latentq(1) and the pages
# format without warnings.
. "${top_srcdir:-.}/tests/cli/common.sh"

page=$top_srcdir/man/latentq.1
# The usage line of every (non-hidden) command, as `CMD --help` prints it.
"$LATENTQ" --help | sed -n '/^Commands:/,/^$/p' | awk 'NF > 1 {print $1}' > "$T/cmds"
expect_grep submit "$T/cmds"
# Render the page to plain text once, with hyphenation and adjustment off.
# Compared case-insensitively ("JOB" in usage is "job" in the page's
# .Ar) and with "x ..." written as "x...".
norm() { tr 'A-Z' 'a-z' | sed 's/ \.\.\./.../g'; }
MANWIDTH=400 man -l "$page" 2>/dev/null | col -b | tr -s ' \t' '  ' | norm > "$T/page.txt"
while read -r cmd; do
	usage=$("$LATENTQ" "$cmd" --help | sed -n 's/^usage: latentq //p' | norm)
	checks=$((checks + 1))
	if ! grep -Fq -- "$usage" "$T/page.txt"; then
		fail "latentq(1) does not show the usage of '$cmd': $usage"
	fi
done < "$T/cmds"

for p in "$top_srcdir"/man/*.[1-9]; do
	checks=$((checks + 1))
	warn=$(man --warnings -l "$p" 2>&1 >/dev/null)
	[ -z "$warn" ] || fail "$p: $warn"
done
finish
