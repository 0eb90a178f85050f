# ltx2-common.sh — sourced by the tests/nn/ltx2-*.sh component tests after
# tests/cli/common.sh: the data folder, the tools, and two helpers.
D=$top_srcdir/tests/data/ltx2
CMP=${top_builddir:-.}/tests/nn/st-compare
ST=${top_builddir:-.}/tests/render/st-tool

# compare REL_FILE MINE [KEY...] : st-compare with the set's tolerances.
compare() {
	checks=$((checks + 1))
	"$CMP" "$D/index.json" "$D" "$@" || fail "st-compare $*"
}

# bad_config CONFIG SED_EXPR CODE PATTERN COMPONENT INPUT... : a copy of
# CONFIG edited by SED_EXPR (no weights: the config must be refused first)
# makes `forward --component COMPONENT` exit 65 with CODE and PATTERN.
bad_config() {
	bc_m=$T/bad-$checks
	mkdir -p "$bc_m"
	sed "$2" "$1" >"$bc_m/config.json"
	cmp -s "$1" "$bc_m/config.json" && fail "bad_config: '$2' changed nothing"
	bc_code=$3 bc_pat=$4 bc_comp=$5
	shift 5
	bc_in=
	for f in "$@"; do
		bc_in="$bc_in --inputs $f"
	done
	# shellcheck disable=SC2086 # the paths have no blanks
	expect_status 65 "$LATENTQ" forward --model "$bc_m" \
	    --component "$bc_comp" $bc_in --out "$T/x.st"
	expect_grep "$bc_pat.*\[$bc_code\]" "$T/err"
}
