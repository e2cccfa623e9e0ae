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

say "tools"
missing=()
for package in podman buildah runc debootstrap curl python3; do
    dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# runc and fixed ulimits: crun cannot set rlimits on these hosts.
cat > "$WORK/containers.conf" <<'CONF'
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=4096:4096"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
CONF
export CONTAINERS_CONF="$WORK/containers.conf"

say "base image"
if ! podman image exists "$BASE"; then
    mirror=$(grep -hoE 'https?://[^ ]+/debian/?$' /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null | head -n1 || true)
    mirror=${mirror:-http://deb.debian.org/debian}
    debootstrap --variant=minbase bookworm "$WORK/rootfs" "$mirror" >/dev/null
    rm -rf "$WORK"/rootfs/var/cache/apt/archives/*.deb "$WORK"/rootfs/var/lib/apt/lists/*
    tar -C "$WORK/rootfs" -c . | podman import --change 'CMD ["/bin/bash"]' - "$BASE" >/dev/null
    rm -rf "$WORK/rootfs"
fi

say "builder image"
if ! podman image exists "$BUILDER"; then
    cat > "$WORK/Builder.Dockerfile" <<DOCKERFILE
FROM $BASE
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
    binutils libc6-dev libgcc-12-dev libstdc++-12-dev libcurl4-openssl-dev libxml2-dev libncurses-dev \
    libz3-dev libedit2 libpython3.11 zlib1g-dev pkg-config tzdata git ca-certificates \
    libsqlite3-dev libmicrohttpd-dev && rm -rf /var/lib/apt/lists/*
DOCKERFILE
    podman build --network host -t "$BUILDER" -f "$WORK/Builder.Dockerfile" "$WORK" >/dev/null
fi

say "project image (docker/Dockerfile)"
toolchain=$(dirname "$(dirname "$(dirname "$(readlink -f "$(command -v swift)")")")")
mirror_dir=$(git config --system --get-regexp 'url\..*\.insteadof' | head -n1 | sed -E 's/^url\.(.*)\.insteadof .*/\1/')
mounts=(-v "$toolchain:/opt/swift:ro")
[ -n "$mirror_dir" ] && mounts+=(-v "$mirror_dir:$mirror_dir:ro" -v /etc/gitconfig:/etc/gitconfig:ro)
podman build --format docker --network host "${mounts[@]}" \
    --build-arg BUILDER_IMAGE="$BUILDER" --build-arg RUNTIME_IMAGE="$BASE" \
    -f docker/Dockerfile -t "$TAG" . > "$WORK/build.log" 2>&1 || { tail -n 50 "$WORK/build.log"; fail "image build"; }
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
