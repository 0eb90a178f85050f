#!/bin/sh
# integrity.sh — a damaged queue database is noticed (issue 22 item 5):
# mid-file garbage written into a real queue database makes submit, run and
# render refuse it (exit 74) without writing; `latentq check` reports it;
# `check --repair` copies what is readable into a new database that passes
# integrity_check.  Read-only commands work on a read-only database.
. "${top_srcdir:-.}/tests/cli/common.sh"

MODEL=$(cd "$top_srcdir/jobs/models/ltxv-demo" && pwd)
DB=$T/q.db

# A real queue: 400 jobs with long prompts, so the jobs table spans pages.
awk -v m="$MODEL" 'BEGIN {
	printf "defaults: {model: %s, height: 64, width: 64, num_frames: 9, num_inference_steps: 2, truncate: true}\njobs:\n", m
	for (i = 0; i < 400; i++) {
		printf "  - {name: job%d, seed: %d, prompt: \"", i, i
		for (k = 0; k < 40; k++) printf "a red circle %d moving left ", i
		print "\"}"
	}
}' > "$T/m.yaml"
expect_status 0 "$LATENTQ" -d "$DB" submit -q --no-device "$T/m.yaml"
expect_status 0 "$LATENTQ" -d "$DB" check
expect_grep ': ok$' "$T/out"
jobs_before=$(sqlite3 "$DB" 'SELECT count(*) FROM jobs')
expect_eq "$jobs_before" 400 "jobs queued"

# Garbage over the middle of one leaf page of the jobs table.
page=$(sqlite3 "$DB" "SELECT pageno FROM dbstat WHERE name = 'jobs' AND pagetype = 'leaf' ORDER BY pageno LIMIT 1 OFFSET 1")
psize=$(sqlite3 "$DB" 'PRAGMA page_size')
checks=$((checks + 1))
[ -n "$page" ] && [ ! -e "$DB-wal" ] || fail "no second jobs leaf page ($page) or a WAL left behind"
head -c 8192 /dev/urandom > "$T/garbage"
dd if="$T/garbage" of="$DB" bs=1 seek=$(( (page - 1) * psize + psize / 4 )) conv=notrunc 2>/dev/null
sum_before=$(cksum < "$DB")

# check: the damage is reported, exit 74
expect_status 74 "$LATENTQ" -d "$DB" check
expect_grep 'fails its integrity check \(integrity_check\).*\[LQ-DB-004\]' "$T/err"

# writers refuse it before writing anything
printf 'jobs:\n  - {name: new, model: %s, prompt: p, height: 64, width: 64, num_frames: 9}\n' "$MODEL" > "$T/new.yaml"
expect_status 74 "$LATENTQ" -d "$DB" submit --no-device "$T/new.yaml"
expect_grep 'fails its integrity check \(quick_check\).*latentq check --repair.*\[LQ-DB-004\]' "$T/err"
expect_no_grep 'queued' "$T/out"
expect_status 74 "$LATENTQ" -d "$DB" run --max-jobs 1
expect_grep 'LQ-DB-004' "$T/err"
expect_status 74 "$LATENTQ" -d "$DB" render "$T/new.yaml"
expect_grep 'LQ-DB-004' "$T/err"
expect_eq "$(cksum < "$DB")" "$sum_before" "the damaged database is left as it was"

# --repair: a new database with what could be read
expect_status 0 "$LATENTQ" -d "$DB" check --repair "$T/fixed.db"
expect_grep '^jobs +[0-9]+ rows copied, [0-9]+ unreadable stretches skipped' "$T/out"
expect_grep '^repaired copy: .*fixed.db \(passes integrity_check\)' "$T/out"
expect_eq "$(cksum < "$DB")" "$sum_before" "--repair leaves the source as it was"
expect_status 0 "$LATENTQ" -d "$T/fixed.db" check
expect_eq "$(sqlite3 "$T/fixed.db" 'PRAGMA integrity_check')" ok "repaired copy is sound"
expect_eq "$(sqlite3 "$T/fixed.db" 'PRAGMA foreign_key_check' | wc -l)" 0 "no dangling references"
jobs_after=$(sqlite3 "$T/fixed.db" 'SELECT count(*) FROM jobs')
checks=$((checks + 1))
[ "$jobs_after" -gt 300 ] && [ "$jobs_after" -lt 400 ] ||
	fail "repaired copy has $jobs_after jobs (expected most of 400, not all)"
expect_eq "$(sqlite3 "$T/fixed.db" 'SELECT count(*) FROM requests')" 400 "requests copied (other pages)"
# the repaired queue is usable: a new job goes in
expect_status 0 "$LATENTQ" -d "$T/fixed.db" submit --no-device "$T/new.yaml"
expect_grep '^queued ' "$T/out"
# a second --repair onto an existing file is refused
expect_status 74 "$LATENTQ" -d "$DB" check --repair "$T/fixed.db"
expect_grep 'already exists' "$T/err"

# ---- read-only database: status, show and list work (SQLITE_OPEN_READONLY)
mkdir "$T/ro"
expect_status 0 "$LATENTQ" -d "$T/ro/q.db" submit -q --no-device "$T/new.yaml"
chmod 0444 "$T/ro/q.db"
chmod 0555 "$T/ro"
as_user() { "$@"; }
if [ "$(id -u)" = 0 ]; then
	# root ignores file modes: read as nobody
	chmod o+rx "$T"
	as_user() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
fi
sum_ro=$(cksum < "$T/ro/q.db")
for cmd in "status" "status --json" "list" "show 1"; do
	# shellcheck disable=SC2086
	expect_status 0 as_user "$LATENTQ" -d "$T/ro/q.db" $cmd
	expect_grep 'new' "$T/out"
done
expect_status 0 as_user "$LATENTQ" -d "$T/ro/q.db" check
# and writers say why they cannot write
checks=$((checks + 1))
as_user "$LATENTQ" -d "$T/ro/q.db" submit --no-device "$T/new.yaml" >"$T/out" 2>"$T/err" &&
	fail "submit to a read-only database succeeded"
expect_eq "$(cksum < "$T/ro/q.db")" "$sum_ro" "read-only database unchanged"
ls "$T/ro" > "$T/ls"
expect_eq "$(cat "$T/ls")" "q.db" "nothing created beside a read-only database"
chmod 0755 "$T/ro"

finish
