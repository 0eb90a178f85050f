#!/bin/sh
# Webhooks against a loopback endpoint that fails the first two POSTs of
# each job: the sender is killed with SIGKILL while deliveries are pending,
# and after a restart each job end has been received exactly once with a
# 2xx (same delivery id on every try), HMAC-signed, with its artifacts'
# digests; cancelled and poisoned jobs notify too; --webhook adds a URL;
# an endpoint that never answers 2xx is given up after its tries.
. "${top_srcdir:-.}/tests/cli/render-common.sh"
. "$top_srcdir/tests/net/common.sh"
LATENTQ_WEBHOOK_BACKOFF=0.5; export LATENTQ_WEBHOOK_BACKOFF
LATENTQ_WEBHOOK_SECRET=s3cret; export LATENTQ_WEBHOOK_SECRET

# job_manifest FILE NAME:SEED:URL... : jobs with their own webhook
job_manifest() {
	file=$1; shift
	write_manifest "$file" 2
	for j in "$@"; do
		n=${j%%:*}; rest=${j#*:}; seed=${rest%%:*}; url=${rest#*:}
		printf '  - name: %s\n    prompt: a red circle\n    seed: %s\n    webhook: %s\n' \
		    "$n" "$seed" "$url" >> "$file"
	done
}
# posts PATH : "STATUS DELIVERY-ID" per POST to PATH
posts() {
	python3 -c '
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r["method"] == "POST" and r["path"] == sys.argv[2]:
        print(r["status"], r["headers"].get("X-Latentq-Delivery"))' "$T/http.log" "$1"
}

mkdir -p "$T/a"
job_manifest "$T/a/m.yaml" "a:1:$BASE/fail2/a" "b:2:$BASE/fail2/b"
db=$T/a.db
setsid "$LATENTQ" -q -d "$db" render "$T/a/m.yaml" > "$T/render.out" 2>&1 &
pid=$!
# Both jobs ended and each notification failed once: kill the sender.
i=0
while [ $i -lt 1200 ]; do
	n=$(sqlite3 "$db" "SELECT count(*) FROM webhook_outbox WHERE attempts >= 1 AND delivered_at IS NULL" 2>/dev/null)
	[ "${n:-0}" -ge 2 ] && break
	sleep 0.1; i=$((i + 1))
done
kill_group $pid
wait $pid 2>/dev/null
expect_eq "$(sqlite3 "$db" "SELECT group_concat(state) FROM jobs")" "done,done" "both jobs done before the kill"
expect_eq "$(sqlite3 "$db" "SELECT count(*) FROM webhook_outbox WHERE delivered_at IS NULL")" 2 "two notifications pending at the kill"
expect_eq "$(posts /fail2/a | grep -c '^200')" 0 "no delivery before the kill"
# The restart resends what is pending.
expect_status 0 "$LATENTQ" -d "$db" run
for j in a b; do
	posts "/fail2/$j" > "$T/posts-$j"
	expect_eq "$(grep -c '^200 ' "$T/posts-$j")" 1 "$j: exactly one successful delivery"
	expect_eq "$(grep -c '^500 ' "$T/posts-$j")" 2 "$j: the two failures"
	expect_eq "$(cut -d' ' -f2 "$T/posts-$j" | sort -u | wc -l)" 1 "$j: one delivery id on every try"
done
expect_eq "$(sqlite3 "$db" "SELECT count(*) FROM webhook_outbox WHERE delivered_at IS NOT NULL AND attempts = 3")" 2 "outbox: both delivered on the third try"
# The delivered body: job, state, artifacts with digests; HMAC header.
mp4_digest=$(b2sum -l 256 "$T/a/videos/a.mp4" | cut -d' ' -f1)
python3 - "$T/http.log" "$mp4_digest" > "$T/check" <<'PY'
import hashlib, hmac, json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r["method"] != "POST" or r["path"] != "/fail2/a" or r["status"] != 200:
        continue
    b = json.loads(r["body"])
    mac = hmac.new(b"s3cret", r["body"].encode(), hashlib.sha256).hexdigest()
    print("event", r["headers"].get("X-Latentq-Event"))
    print("signature", r["headers"].get("X-Latentq-Signature") == "sha256=" + mac)
    print("job", b["job"]["name"], b["state"], b["error_code"])
    print("mp4", [a["digest"] for a in b["artifacts"] if a["kind"] == "mp4"] == [sys.argv[2]])
    print("durations", b["durations"]["total_seconds"] > 0)
PY
expect_grep '^event job.done$' "$T/check"
expect_grep '^signature True$' "$T/check"
expect_grep '^job a done None$' "$T/check"
expect_grep '^mp4 True$' "$T/check"
expect_grep '^durations True$' "$T/check"

# Cancelled and poisoned jobs notify; --webhook adds a URL for every job.
mkdir -p "$T/c"
job_manifest "$T/c/m.yaml" "c:3:$BASE/ok/c" "p:4:$BASE/ok/p"
echo "    max_attempts: 1" >> "$T/c/m.yaml"
"$LATENTQ" -q -d "$T/c.db" submit "$T/c/m.yaml"
"$LATENTQ" -q -d "$T/c.db" cancel c
expect_eq "$(sqlite3 "$T/c.db" "SELECT state FROM webhook_outbox")" cancelled "cancel queues its notification"
LATENTQ_FAULT="exit@load" expect_status 1 "$LATENTQ" -d "$T/c.db" run --webhook "$BASE/ok/all"
expect_eq "$(posts /ok/c | cut -d' ' -f1)" 200 "cancelled: delivered"
expect_eq "$(posts /ok/p | cut -d' ' -f1)" 200 "poisoned: delivered"
expect_eq "$(posts /ok/all | cut -d' ' -f1)" 200 "--webhook: the poisoned job"
expect_grep '"X-Latentq-Event": "job.poisoned"' "$T/http.log"
expect_grep '"X-Latentq-Event": "job.cancelled"' "$T/http.log"
expect_status 64 "$LATENTQ" -d "$T/c.db" run --webhook ftp://x
# An endpoint that always fails is given up after its tries.
LATENTQ_WEBHOOK_BACKOFF=0.01; export LATENTQ_WEBHOOK_BACKOFF
mkdir -p "$T/d"
job_manifest "$T/d/m.yaml" "d:5:$BASE/e503x99/d"
"$LATENTQ" -q -d "$T/d.db" submit "$T/d/m.yaml"
"$LATENTQ" -q -d "$T/d.db" cancel d
expect_status 0 "$LATENTQ" -d "$T/d.db" run
expect_eq "$(posts /e503x99/d | wc -l)" 10 "ten tries"
expect_eq "$(sqlite3 "$T/d.db" "SELECT attempts || ' ' || last_status || ' ' || (abandoned_at IS NOT NULL) FROM webhook_outbox")" "10 503 1" "abandoned with its last status"
expect_grep 'abandoned after 10 tries' "$T/err"
finish
