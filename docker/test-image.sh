#!/usr/bin/env bash
# Builds the project's Dockerfile with podman and checks the running image
# from the host: health, the change feed, a SIGTERM stop that answers a parked
# long-poll and exits 0, persistence on the volume, and a non-root process.
# Without a registry, the builder and runtime base images are made locally
# (debootstrap); the Swift toolchain and package mirror are mounted read-only.
set -euo pipefail
cd "$(dirname "$0")/.."

PORT=${PORT:-18080}
TAG=localhost/observable-server:test
BASE=localhost/debian:bookworm-slim
BUILDER=localhost/observable-builder:bookworm
NAME=observable-test-$$
VOLUME=observable-test-data-$$
WORK=$(mktemp -d)
started=$(date +%s)

say() { printf '\n== %s (%ss)\n' "$1" "$(( $(date +%s) - started ))"; }
fail() { echo "FAILED: $*" >&2; exit 1; }

cleanup() {
    podman rm -f "$NAME" "$NAME-2" >/dev/null 2>&1 || true
    podman volume rm -f "$VOLUME" >/dev/null 2>&1 || true
    rm -rf "$WORK"
}
trap cleanup EXIT
. docker/podman.sh

say "tools"
podman_tools

say "base and builder images"
base_images

say "project image (docker/Dockerfile)"
project_image "$TAG"
size=$(podman image inspect --format '{{.Size}}' "$TAG")
echo "runtime image size: $(( size / 1024 / 1024 )) MiB ($size bytes)"

wait_healthy() {
    for _ in $(seq 1 100); do
        curl -fsS "http://127.0.0.1:$PORT/healthz" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    podman logs "$1" >&2 || true
    fail "no answer on /healthz"
}
json() { python3 -c "import sys, json; print(json.load(sys.stdin)$1)"; }

say "1. health"
podman volume create "$VOLUME" >/dev/null
podman run -d --name "$NAME" -p "127.0.0.1:$PORT:8080" -v "$VOLUME:/data" "$TAG" >/dev/null
wait_healthy "$NAME"
podman healthcheck run "$NAME" || fail "podman healthcheck run"
echo "healthz and HEALTHCHECK pass"

say "2. change feed"
observer=$(curl -fsS -X POST "http://127.0.0.1:$PORT/observers" | json '["id"]')
cursor=$(curl -fsS -D - -o /dev/null -H "Observer: $observer" "http://127.0.0.1:$PORT/truck/orderCount" | tr -d '\r' | awk -F': ' 'tolower($1)=="observation-cursor"{print $2}')
curl -fsS "http://127.0.0.1:$PORT/observers/$observer/changes?since=$cursor&timeout=20" > "$WORK/poll1.json" &
poll=$!
sleep 0.5
curl -fsS -X POST "http://127.0.0.1:$PORT/truck/orders" -d '{"donutId": "0d1b6a52-6c4e-4f43-9a0e-6d0c2f9f0001", "quantity": 2}' >/dev/null
wait "$poll"
cat "$WORK/poll1.json"; echo
[ "$(json '["changes"][0]["path"]' < "$WORK/poll1.json")" = "/truck/orderCount" ] || fail "long-poll did not deliver /truck/orderCount"
[ "$(json '["changes"][0]["new"]' < "$WORK/poll1.json")" = "1" ] || fail "orderCount should be 1"

say "3. SIGTERM with a parked long-poll"
next=$(json '["cursor"]' < "$WORK/poll1.json")
curl -sS "http://127.0.0.1:$PORT/observers/$observer/changes?since=$next&timeout=60" > "$WORK/poll2.json" &
poll=$!
sleep 0.5
stop_started=$(date +%s%N)
podman stop -t 10 "$NAME" >/dev/null
stop_ms=$(( ($(date +%s%N) - stop_started) / 1000000 ))
wait "$poll" || fail "parked long-poll was not answered"
cat "$WORK/poll2.json"; echo
[ "$(json '["cursor"]' < "$WORK/poll2.json")" = "$next" ] || fail "parked long-poll should answer with its cursor"
code=$(podman inspect --format '{{.State.ExitCode}}' "$NAME")
echo "stopped in ${stop_ms} ms with exit code $code"
[ "$code" = "0" ] || fail "exit code $code"
[ "$stop_ms" -lt 10000 ] || fail "stop took ${stop_ms} ms"

say "4. a new container on the same volume"
podman run -d --name "$NAME-2" -p "127.0.0.1:$PORT:8080" -v "$VOLUME:/data" "$TAG" >/dev/null
wait_healthy "$NAME-2"
count=$(curl -fsS "http://127.0.0.1:$PORT/truck/orderCount" | json '["orderCount"]')
[ "$count" = "1" ] || fail "order lost: orderCount $count"
curl -fsS "http://127.0.0.1:$PORT/observers/$observer" > "$WORK/observer.json" || fail "observer lost"
grep -q '/truck/orderCount' "$WORK/observer.json" || fail "observer's reads lost"
echo "order and observer survived"

say "5. not root"
uid=$(podman exec "$NAME-2" awk '/^Uid:/{print $2}' /proc/1/status)
echo "server runs as uid $uid"
[ "$uid" != "0" ] || fail "the server runs as root"
podman stop -t 10 "$NAME-2" >/dev/null

say "all container checks passed"
