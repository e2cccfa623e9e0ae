#!/usr/bin/env bash
# The hostile-client probes (scripts/probe.py), short: a server on a fresh
# database with small limits, so that every probe reaches its limit in
# seconds — the write rate, the connections per address and those kept
# for newcomers, the rows of a collection and a full disk (SQLite's
# --max-database-size; the filler, 127.0.0.7, is trusted) — and a control
# client's /healthz timed throughout.
#
#   scripts/probe-ci.sh [--binary .build/debug/observable-server]
set -euo pipefail
cd "$(dirname "$0")/.."
server=.build/debug/observable-server
[ "${1:-}" = "--binary" ] && server=$2
work=$(mktemp -d)
trap 'kill $pid 2>/dev/null || true; wait $pid 2>/dev/null || true; rm -rf "$work"' EXIT
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# Waits until the server started as $pid on $port answers, or fails with its log ($1).
wait_ready() {
    for _ in $(seq 100); do
        curl -fs --noproxy '*' "http://127.0.0.1:$port/healthz" > /dev/null 2>&1 && return 0
        kill -0 "$pid" 2> /dev/null || { cat "$1" >&2; exit 1; }
        sleep 0.1
    done
}

# Large reads first, on a server of its own with the default limits: 400
# games (2 MB a read, sent a piece at a time) read by four clients at once
# while the control client's /healthz is timed.
port=$(free_port)
"$server" serve --host 127.0.0.1 --port "$port" --database "$work/large.sqlite" --log-level error \
    --trusted-addresses 127.0.0.7 > "$work/large.log" 2>&1 &
pid=$!
wait_ready "$work/large.log"
python3 scripts/probe.py --url "http://127.0.0.1:$port" --fill-from 127.0.0.7 --huge-reads 400 --only-huge-reads
kill -0 "$pid" || { echo "the server died" >&2; cat "$work/large.log" >&2; exit 1; }
kill "$pid"
wait "$pid" || { echo "the server did not stop cleanly" >&2; cat "$work/large.log" >&2; exit 1; }

port=$(free_port)
"$server" serve --host 127.0.0.1 --port "$port" --database "$work/observable.sqlite" --log-level error \
    --max-writes-per-second 20 --write-burst 50 --connection-limit 64 --max-connections-per-address 14 \
    --max-rows 30 --max-database-size 3M --trusted-addresses 127.0.0.7 --request-timeout 3 > "$work/server.log" 2>&1 &
pid=$!
wait_ready "$work/server.log"
python3 scripts/probe.py --url "http://127.0.0.1:$port" --request-timeout 3 --write-burst 50 \
    --max-connections-per-address 14 --fill-from 127.0.0.7 --max-rows 30
kill -0 "$pid" || { echo "the server died" >&2; cat "$work/server.log" >&2; exit 1; }
