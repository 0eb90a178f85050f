# ltx2-common.sh — sourced by the tests/nn/ltx2-*.sh component tests after
# tests/cli/common.sh: the data folder, the tools, and three helpers.
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

# check_plan WHAT : the last run's "WHAT memory plan" line (`latentq -v`):
# the planned device bytes within 10% of the measured peak_device_bytes,
# as tests/nn/plan-measured.sh checks LTX-Video's components.
check_plan() {
	cp_line=$(grep "$1 memory plan" "$T/err")
	cp_plan=$(echo "$cp_line" | sed -n 's/.*memory plan: device \([0-9]*\) bytes.*/\1/p')
	cp_meas=$(echo "$cp_line" | sed -n 's/.*measured peak_device_bytes \([0-9]*\).*/\1/p')
	checks=$((checks + 1))
	if [ -z "$cp_plan" ] || [ -z "$cp_meas" ] || [ "$cp_meas" -eq 0 ]; then
		fail "$1: no plan / measurement in: $cp_line"
		return
	fi
	cp_diff=$((cp_plan - cp_meas))
	[ $cp_diff -lt 0 ] && cp_diff=$((-cp_diff))
	[ $((cp_diff * 10)) -gt "$cp_meas" ] &&
	    fail "$1: planned $cp_plan bytes, measured $cp_meas (more than 10% apart)"
	return 0
}
