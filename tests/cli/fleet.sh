#!/bin/sh
# Three supervisors on two hosts (LATENTQ_HOST host-a twice, host-b once:
# three lease owners) drain one queue of NJOBS tiny jobs (9 here; 30, the
# figure of issue 17, on PostgreSQL) with `latentq run --once`: every job done exactly once, claimed once and finished once by
# the one supervisor whose lease it held, as the events table shows.  Then
# a host whose copy of the model differs from the job's pinned digest gives
# the job back (69, LQ-RUN-MODEL-HOST) and leaves it queued, untouched, for
# a host (or a later run) whose copy matches: one rule for both backends.
# tests/pg/fleet.sh runs this against PostgreSQL.
. "${top_srcdir:-.}/tests/cli/render-common.sh"
: "${NJOBS:=9}"

{
	echo "version: 1"
	echo "defaults:"
	echo "  model: $T/model"
	echo "  height: 32"
	echo "  width: 32"
	echo "  num_frames: 1"
	echo "  num_inference_steps: 1"
	echo "  output: videos/{name}.mp4"
	echo "jobs:"
	echo "  - name: clip"
	echo "    prompt: a red circle moving left on a black background"
	printf '    seeds: ['
	i=1
	while [ $i -le $NJOBS ]; do
		printf '%s%d' "$( [ $i -gt 1 ] && echo ', ')" $i
		i=$((i + 1))
	done
	echo ']'
} > "$T/m.yaml"
expect_status 0 "$LATENTQ" -q submit "$T/m.yaml"
expect_eq "$(q "SELECT count(*) FROM jobs WHERE state = 'queued'")" $NJOBS "jobs queued"

LATENTQ_HOST=host-a "$LATENTQ" -q run --once > "$T/s1" 2>&1 &
p1=$!
LATENTQ_HOST=host-a "$LATENTQ" -q run --once > "$T/s2" 2>&1 &
p2=$!
LATENTQ_HOST=host-b "$LATENTQ" -q run --once > "$T/s3" 2>&1 &
p3=$!
wait $p1; r1=$?
wait $p2; r2=$?
wait $p3; r3=$?
expect_eq "$r1$r2$r3" 000 "the three supervisors exit 0"
expect_eq "$(q "SELECT count(*) FROM jobs WHERE state = 'done'")" $NJOBS "every job done"
expect_eq "$(q "SELECT count(*) FROM (SELECT job_id FROM events WHERE kind = 'claimed' GROUP BY job_id HAVING count(*) = 1) c")" $NJOBS "each job claimed exactly once"
expect_eq "$(q "SELECT count(*) FROM events WHERE kind = 'claimed'")" $NJOBS "no second claim of any job"
expect_eq "$(q "SELECT count(*) FROM (SELECT job_id FROM events WHERE kind = 'finished' GROUP BY job_id HAVING count(*) = 1) c")" $NJOBS "each job finished exactly once"
expect_eq "$(q "SELECT count(*) FROM events WHERE kind IN ('crashed', 'lease_lost', 'requeued', 'retried')")" 0 "no crash, no lease lost, no requeue"
# Each claim is one of the three supervisors' (host:pid), and the job's
# record ends with that owner's lease token: nobody else wrote it done.
q "SELECT detail FROM events WHERE kind = 'claimed'" |
    sed 's/^{"owner":"\([^:]*:[0-9]*\):.*/\1/' | sort | uniq -c > "$T/owners"
echo "claims per supervisor:"; cat "$T/owners"
checks=$((checks + 1))
[ "$(wc -l < "$T/owners")" -le 3 ] || fail "claims by more than the three supervisors"
for o in $(awk '{print $2}' "$T/owners"); do
	checks=$((checks + 1))
	case $o in
	host-a:$p1|host-a:$p2|host-b:$p3) ;;
	*) fail "a claim by $o, none of the supervisors" ;;
	esac
done
expect_eq "$(q "SELECT count(*) FROM jobs j WHERE (SELECT detail FROM events e WHERE e.job_id = j.id AND e.kind = 'claimed') NOT LIKE '%\"lease_token\":' || j.lease_token || '}'")" 0 "every job done under the lease token of its one claim"
i=1
while [ $i -le $NJOBS ]; do
	checks=$((checks + 1))
	[ -s "$T/videos/clip-$i.mp4" ] || fail "no videos/clip-$i.mp4"
	i=$((i + 1))
done

# host-c's copy of the model differs from the one the job pinned
sed 's/seeds: \[.*\]/seed: 99/' "$T/m.yaml" > "$T/one.yaml"
expect_status 0 "$LATENTQ" -q submit "$T/one.yaml"
cp "$T/model/scheduler/scheduler_config.json" "$T/scheduler_config.json"
printf ' ' >> "$T/model/scheduler/scheduler_config.json"
expect_status 69 env LATENTQ_HOST=host-c "$LATENTQ" -q run --once
expect_grep 'LQ-RUN-MODEL-HOST' "$T/err"
expect_grep 'left queued for a host, or a later run, whose copy matches' "$T/err"
expect_eq "$(q "SELECT state || ' ' || attempts || ' ' || failures FROM jobs WHERE name = 'clip'")" "queued 0 0" "left queued, untouched"
cp "$T/scheduler_config.json" "$T/model/scheduler/scheduler_config.json"
expect_status 0 env LATENTQ_HOST=host-a "$LATENTQ" -q run --once
expect_eq "$(q "SELECT state FROM jobs WHERE name = 'clip'")" done "rendered by a host whose copy matches"
finish
