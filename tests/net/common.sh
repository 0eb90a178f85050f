# common.sh — sourced by the network tests after tests/cli/common.sh: starts
# tests/net/server.py on 127.0.0.1 (a free port) serving $T/root, logging
# every request to $T/http.log; stopped on exit.  $BASE is its URL.
mkdir -p "$T/root"
: > "$T/http.log"
python3 "$top_srcdir/tests/net/server.py" "$T/root" "$T/port" "$T/http.log" &
server_pid=$!
trap 'kill $server_pid 2>/dev/null; wait $server_pid 2>/dev/null; rm -rf "$T"' EXIT
i=0
while [ ! -s "$T/port" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
[ -s "$T/port" ] || { echo "test server did not start"; exit 99; }
BASE="http://127.0.0.1:$(cat "$T/port")"
LATENTQ_NET_BACKOFF=0.05; export LATENTQ_NET_BACKOFF
# requests PATH-REGEX [FIELD]: the log lines whose path matches
requests() {
	python3 -c '
import json, re, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if re.search(sys.argv[2], r["path"]):
        print(r["method"], r["status"], r["range"] or "-")' "$T/http.log" "$1"
}
# blake2b FILE: latentq'"'"'s digest (BLAKE2b-256, unkeyed)
blake2b() { b2sum -l 256 "$1" | cut -d' ' -f1; }
