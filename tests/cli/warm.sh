#!/bin/sh
# The warm worker (issue 18 item 4): one `exec-job --serve` child renders a
# queue job after job, keeping its devices and compiled pipelines, and its
# outputs are byte-identical to a child per job (LATENTQ_WARM_WORKER=0); a
# crash in the middle of the queue costs that job one attempt and the next
# job gets a fresh child; jobs of two models alternating stay correct.
. "${top_srcdir:-.}/tests/cli/render-common.sh"
STEPS=2

# b2 FILE : BLAKE2b-256 hex, as latentq records artifacts.
b2() { b2sum -l 256 "$1" | cut -d' ' -f1; }

# outputs DIR : "name=mp4-digest/sheet-digest ..." of DIR's videos.
outputs() {
	for f in "$1"/*.mp4; do
		n=$(basename "$f" .mp4)
		printf '%s=%s/%s ' "$n" "$(b2 "$f")" "$(b2 "$1/$n.sheet.png")"
	done
}

# pids : the distinct worker pids of the queue's "worker" events, in order.
pids() {
	q "SELECT detail FROM events WHERE kind = 'worker' ORDER BY id" |
	    sed 's/.*"pid":\([0-9]*\).*/\1/' | uniq | tr '\n' ' '
}

# 1. Four jobs of one model through one warm child.
write_manifest "$T/m.yaml" $STEPS a:1 b:2 c:3 d:4
LATENTQ_DB=$T/cold.db LATENTQ_WARM_WORKER=0 expect_status 0 "$LATENTQ" -q \
    render "$T/m.yaml"
cold=$(outputs "$T/videos")
expect_eq "$(LATENTQ_DB=$T/cold.db db_sql "$T/cold.db" "SELECT count(*) FROM events WHERE kind = 'worker'")" 0 "LATENTQ_WARM_WORKER=0: a child per job, no serving one"
rm -rf "$T/videos"
"$LATENTQ" -q submit "$T/m.yaml" > /dev/null
expect_status 0 "$LATENTQ" -q run --once
expect_eq "$(outputs "$T/videos")" "$cold" "warm outputs byte-identical to a child per job"
set -- $(pids)
expect_eq "$#" 1 "one worker process for the four jobs ($(pids))"
expect_eq "$(q "SELECT group_concat(substr(detail, instr(detail, '\"job\"')), ' ') FROM (SELECT detail FROM events WHERE kind = 'worker' ORDER BY id)")" \
    '"job":1,"devices_held":false} "job":2,"devices_held":true} "job":3,"devices_held":true} "job":4,"devices_held":true}' \
    "the jobs after the first find the devices held"
expect_eq "$(q "SELECT count(DISTINCT detail) FROM events WHERE kind = 'devices_used'")" 1 "the same devices_used for every job"
expect_eq "$(q "SELECT group_concat(state || attempts, ' ') FROM jobs")" "done1 done1 done1 done1" "each done in one attempt"

# 2. A crash in the middle of the warm queue: c's first attempt segfaults
# after step 1; it counts one failure, c resumes in a fresh child, and
# every output is still the cold one.
fresh_queue
rm -rf "$T/videos"
"$LATENTQ" -q submit "$T/m.yaml" > /dev/null
LATENTQ_FAULT="c/segv@denoise:1#1" expect_status 0 "$LATENTQ" -q run --once
expect_eq "$(outputs "$T/videos")" "$cold" "outputs after a crash byte-identical"
expect_eq "$(q "SELECT name || ':' || attempts FROM jobs ORDER BY id" | tr '\n' ' ')" "a:1 b:1 c:2 d:1 " "only c took a second attempt"
expect_eq "$(q "SELECT j.name || ' ' || substr(e.detail, instr(e.detail, '\"reason\"'), 16) FROM events e JOIN jobs j ON j.id = e.job_id WHERE kind = 'requeued'")" 'c "reason":"crash"' "c's crash requeued it, as a crash"
crash=$(q "SELECT detail FROM events e JOIN jobs j ON j.id = e.job_id WHERE j.name = 'c' AND kind = 'crashed'")
echo "$crash" > "$T/crash"
expect_grep '"signal_name":"SEGV"' "$T/crash"
expect_grep '"phase":"denoise"' "$T/crash"
expect_eq "$(q "SELECT detail FROM events e JOIN jobs j ON j.id = e.job_id WHERE j.name = 'c' AND kind = 'resumed'")" '{"step":1}' "c resumed from its checkpoint"
set -- $(pids)
expect_eq "$#" 2 "a fresh worker after the crash ($(pids))"
first=$1
expect_eq "$(q "SELECT group_concat(j.name, ' ') FROM (SELECT job_id, detail FROM events WHERE kind = 'worker' ORDER BY id) e JOIN jobs j ON j.id = e.job_id WHERE e.detail LIKE '%\"pid\":$first,%'")" "a b c" "a, b and c's first attempt in the first worker"
expect_eq "$(q "SELECT count(*) FROM events WHERE kind = 'worker' AND detail LIKE '%\"job\":1,%'")" 2 "each worker's first job started cold"

# 3. Jobs of two models alternating (the second's transformer has another
# proj_out.bias), the same seed: each output is its model's, as a child
# per job renders it.
ST=${top_builddir:-.}/tests/render/st-tool
cp -r "$T/model" "$T/model2"
w=$T/model2/transformer/diffusion_pytorch_model.safetensors
"$ST" fill "$T/bias.safetensors" proj_out.bias 16 > /dev/null &&
    "$ST" merge "$w" "$T/bias.safetensors" \
    "$T/model/transformer/diffusion_pytorch_model.safetensors" > /dev/null ||
    fail "cannot make the second model"
{
	echo "version: 1"
	echo "defaults:"
	echo "  height: 64"
	echo "  width: 64"
	echo "  num_frames: 9"
	echo "  num_inference_steps: $STEPS"
	echo "  guidance_scale: 4"
	echo "  seed: 7"
	echo "  prompt: a red circle moving left on a black background"
	echo "  output: videos/{name}.mp4"
	echo "  save_tensors: tensors/{name}.safetensors"
	echo "jobs:"
	for j in p:model q:model2 r:model s:model2; do
		echo "  - name: ${j%%:*}"
		echo "    model: $T/${j#*:}"
	done
} > "$T/two.yaml"
rm -rf "$T/videos"
LATENTQ_DB=$T/cold2.db LATENTQ_WARM_WORKER=0 expect_status 0 "$LATENTQ" -q \
    render "$T/two.yaml"
cold2=$(outputs "$T/videos")
rm -rf "$T/videos"
fresh_queue
expect_status 0 "$LATENTQ" -q render "$T/two.yaml"
expect_eq "$(outputs "$T/videos")" "$cold2" "alternating models: outputs byte-identical to a child per job"
set -- $(pids)
expect_eq "$#" 1 "render: one worker for the four jobs ($(pids))"
# (the files name their job: their frames are compared)
checks=$((checks + 1))
frames() { "$ST" diff "$T/tensors/$1.safetensors" "$T/tensors/$2.safetensors" \
    video_uint8 0 > /dev/null 2>&1; }
frames p r && frames q s && ! frames p q ||
    fail "p, r (model) and q, s (model2) should be two different videos"
finish
