#!/usr/bin/env bash
# Throughput of observable-server builds against the plain-C peer of
# ../shared/bench-peer, in one run: each round starts every server afresh on
# a new database and measures it with the peer's own throughput.sh
# (GET /truck/orderCount and POST /truck/orders, wrk with 1 thread and 50
# connections), alternating the order of the servers from round to round so
# that they share the machine's noise.
#
#   bench/peer.sh [--rounds N] BINARY [BINARY …]     e.g. an old and a new build
#
# Env: DURATION (default 8s), PEER (default ../shared/bench-peer), ONLY=get|post.
# Prints one line per server and test with req/s, p99 and server CPU per
# request, then each build's median ratio to the peer.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=3
if [ "${1:-}" = "--rounds" ]; then rounds=$2; shift 2; fi
[ $# -ge 1 ] || { echo "usage: bench/peer.sh [--rounds N] BINARY [BINARY …]" >&2; exit 2; }
peer_dir=${PEER:-../shared/bench-peer}
export DURATION=${DURATION:-8s}
mkdir -p bench/out
cc -O2 -o bench/out/mhd-peer "$peer_dir/server.c" -lmicrohttpd -lsqlite3 -lpthread
command -v wrk > /dev/null || { sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo; $sudo apt-get install -y -qq wrk > /dev/null; }
donut=0d1b6a52-6c4e-4f43-9a0e-6d0c2f9f0001
port=18470
results=$(mktemp)

measure() { # label command…
    local label=$1; shift
    local folder pid
    # A new port each time: the peer does not reuse one that wrk's closed
    # connections still hold in TIME_WAIT.
    port=$((port + 1))
    folder=$(mktemp -d)
    "$@" "$folder" > /dev/null 2>&1 &
    pid=$!
    for _ in $(seq 100); do curl -fs "http://127.0.0.1:$port/truck/orderCount" > /dev/null 2>&1 && break; sleep 0.1; done
    SERVER_PID=$pid DONUT_ID=$donut "$peer_dir/throughput.sh" "http://127.0.0.1:$port" 2>&1 >/dev/null \
        | sed "s|^|$label\t|" >> "$results"
    kill -TERM "$pid"; wait "$pid" 2> /dev/null || true
    rm -rf "$folder"
}
# wrk's writes come from 127.0.0.1 as fast as they go: a trusted client (past the write rate and the rows).
ours() { OBSERVABLE_TRUSTED_ADDRESSES=127.0.0.1 exec "$1" serve --host 127.0.0.1 --port "$port" --database "$2/observable.sqlite" --log-level error; }
peer() { exec bench/out/mhd-peer -p "$port" -d "$1/peer.sqlite"; }

servers=("$@" peer)
for round in $(seq "$rounds"); do
    order=("${servers[@]}")
    if [ $((round % 2)) -eq 0 ]; then order=(); for ((i = ${#servers[@]} - 1; i >= 0; i--)); do order+=("${servers[$i]}"); done; fi
    for server in "${order[@]}"; do
        if [ "$server" = peer ]; then measure peer peer; else measure "$server" ours "$server"; fi
    done
done

python3 - "$results" "$@" << 'EOF'
import json, statistics, sys
rows = [line.rstrip("\n").split("\t", 1) for line in open(sys.argv[1]) if "\t{" in line]
runs = [(label, json.loads(text)) for label, text in rows]
builds = sys.argv[2:]
for label, r in runs:
    print(f"{label:50} {r['test']:24} {r['req_per_s']:>10} req/s  p99 {r['p99_ms']:>8} ms  CPU {r['server_cpu_us_per_req']} us/req")
for test in ["GET /truck/orderCount", "POST /truck/orders"]:
    peer = [r for l, r in runs if l == "peer" and r["test"] == test]
    for build in builds:
        ours = [r for l, r in runs if l == build and r["test"] == test]
        if not ours or not peer:
            continue  # not measured (ONLY=get or ONLY=post)
        ratios = [o["req_per_s"] / p["req_per_s"] for o, p in zip(ours, peer)]
        cpu = [p["server_cpu_us_per_req"] / o["server_cpu_us_per_req"] for o, p in zip(ours, peer)]
        p99 = [o["p99_ms"] / p["p99_ms"] for o, p in zip(ours, peer)]
        print(f"{build}: {test}: req/s ratio {statistics.median(ratios):.2f} ({', '.join(f'{x:.2f}' for x in ratios)}), "
              f"CPU ratio {statistics.median(cpu):.2f}, p99 ratio {statistics.median(p99):.2f}")
EOF
rm -f "$results"
