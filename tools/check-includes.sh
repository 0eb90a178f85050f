#!/bin/sh
# check-includes.sh SRCDIR — a third-party library's headers are included
# only by the module that owns it (DESIGN.md "Layout"; each owner's library
# alone gets that library's compiler flags, see Makefile.am).  Prints every
# violation as file:line and exits 1 if there is one.  Run by `make`.
set -u
src=${1:-.}/src
status=0
# header pattern (grep -E, after "#include <")    owning folders under src/
rules='
sqlite3\.h|libpq-fe\.h	store
vulkan/	gpu
libav[a-z]*/|libswscale/|png\.h|archive\.h|archive_entry\.h	media
yaml\.h	manifest
curl/	net
sodium\.h	core
sentencepiece	text
'
tab=$(printf '\t')
echo "$rules" | while IFS="$tab" read -r pattern owners; do
	[ -n "$pattern" ] || continue
	grep -rnE "^[[:space:]]*#[[:space:]]*include[[:space:]]*<($pattern)" \
	    --include='*.c' --include='*.h' --include='*.cc' "$src" |
	while IFS= read -r hit; do
		file=${hit%%:*}
		module=${file#"$src"/}
		module=${module%%/*}
		ok=0
		for o in $owners; do
			[ "$module" = "$o" ] && ok=1
		done
		if [ "$ok" = 0 ]; then
			echo "$hit: only src/$(echo "$owners" | sed 's| |/ or src/|g')/ may include this library's headers" >&2
			echo bad
		fi
	done
done | grep -q bad && status=1
exit $status
