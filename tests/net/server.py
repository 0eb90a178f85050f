#!/usr/bin/env python3
"""server.py — the test suite's HTTP server, on 127.0.0.1 only.

  server.py ROOT PORTFILE LOG

Serves files under ROOT with HTTP Range support and receives webhooks.  It
writes the port it listens on to PORTFILE, and one JSON line per request to
LOG: {"method", "path", "status", "range", "headers", "body"}.

The first component of a request path may ask for faults, counted per
path, so a test can say "fail the first N":
  /drop2/...    the first 2 GETs send their headers and half the bytes
                asked for, then close the connection
  /short1/...   the first GET announces more bytes than it sends, closes
  /e503x3/...   the first 3 requests are answered 503
  /e404/...     always 404 (any status: /e403/..., /e410x1/...)
  /slow/...     sends nothing for 30 s (a stall)
  /ok/...       no fault
The rest of the path names the file (GET) or the webhook endpoint (POST,
answered 200 once its faults are spent, 500 for each of the first N with
/fail2/...).  Nothing is reachable beyond 127.0.0.1.
"""
import http.server
import json
import os
import re
import sys
import threading
import time

ROOT, PORTFILE, LOG = sys.argv[1], sys.argv[2], sys.argv[3]
counts = {}
lock = threading.Lock()


def fault(path):
    m = re.match(r"^/([a-z]+)(\d*)(?:x(\d+))?(/.*)$", path)
    if not m:
        return None, 0, path
    kind, n, x, rest = m.group(1), m.group(2), m.group(3), m.group(4)
    with lock:
        counts[path] = counts.get(path, 0) + 1
        seen = counts[path]
    if kind == "e":     # e503x3: status 503, the first 3; e404: always
        return "e" + n, seen <= (int(x) if x else 1 << 30), rest
    return kind, seen <= (int(n) if n else 1 << 30), rest


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def record(self, status, body=b""):
        with lock, open(LOG, "a") as f:
            f.write(json.dumps({
                "method": self.command, "path": self.path, "status": status,
                "range": self.headers.get("Range"),
                "headers": {k: v for k, v in self.headers.items()},
                "body": body.decode("utf-8", "replace")}) + "\n")

    def simple(self, status):
        self.record(status)
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

    def do_GET(self):
        kind, active, rest = fault(self.path)
        if kind and kind[0] == "e" and kind[1:].isdigit() and active:
            return self.simple(int(kind[1:]))
        if kind == "slow" and active:
            self.record(0)
            time.sleep(30)
            return
        full = os.path.join(ROOT, rest.lstrip("/"))
        if ".." in rest or not os.path.isfile(full):
            return self.simple(404)
        data = open(full, "rb").read()
        start = 0
        m = re.match(r"bytes=(\d+)-$", self.headers.get("Range") or "")
        if m:
            start = int(m.group(1))
            if start >= len(data):
                self.record(416)
                self.send_response(416)
                self.send_header("Content-Range", "bytes */%d" % len(data))
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
        part = data[start:]
        status = 206 if m else 200
        self.record(status)
        self.send_response(status)
        if m:
            self.send_header("Content-Range", "bytes %d-%d/%d" %
                             (start, len(data) - 1, len(data)))
        if kind == "short" and active:
            self.send_header("Content-Length", str(len(part) + 1000))
        else:
            self.send_header("Content-Length", str(len(part)))
        self.send_header("Connection", "close")
        self.end_headers()
        if kind == "drop" and active:
            self.wfile.write(part[:len(part) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(part)
        self.close_connection = True

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n)
        kind, active, rest = fault(self.path)
        status = 500 if (kind == "fail" and active) else \
            503 if (kind == "e503" and active) else 200
        self.record(status, body)
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True


srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(PORTFILE + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
os.rename(PORTFILE + ".tmp", PORTFILE)
srv.serve_forever()
