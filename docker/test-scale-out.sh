#!/usr/bin/env bash
# Checks the scale-out profile of docker/compose.yaml with podman: PostgreSQL,
# three instances of the project image and HAProxy on one network, driven from
# the host through the balancer: health; a change feed whose requests land on
# different instances; one instance killed (writes and reads go on at once,
# nothing acknowledged is lost, observers miss nothing, a poll parked on it is
# retried elsewhere with its cursor); the instance started again rejoins; and
# a clean stop. Images are made locally as in test-image.sh (no registry):
# PostgreSQL comes from docker/postgres.Dockerfile, a Debian stand-in for the
# official image with the same settings. The services' settings are read from
# compose.yaml, so this runs what the file describes.
set -euo pipefail
cd "$(dirname "$0")/.."

PORT=${PORT:-18081}
STATS_PORT=${STATS_PORT:-18404}
BASE=localhost/debian:bookworm-slim
BUILDER=localhost/observable-builder:bookworm
TAG=localhost/observable-server:scale-out-test
POSTGRES_TAG=localhost/observable-postgres:scale-out-test
BALANCER_TAG=localhost/observable-balancer:scale-out-test
RUN=scale-out-$$
NET=observable-$RUN
VOLUME=observable-$RUN-postgres
INSTANCES=(observable-1 observable-2 observable-3)
WORK=$(mktemp -d)
started=$(date +%s)
LB=http://127.0.0.1:$PORT

say() { printf '\n== %s (%ss)\n' "$1" "$(( $(date +%s) - started ))"; }
note() { printf '%s (%ss)\n' "$1" "$(( $(date +%s) - started ))"; }
fail() { echo "FAILED: $*" >&2; exit 1; }
container() { echo "$RUN-$1"; }   # a service's container

cleanup() {
    local status=$?
    if [ "$status" -ne 0 ]; then
        for service in postgres "${INSTANCES[@]}" balancer; do
            echo "--- logs of $service (last 15 lines)" >&2
            podman logs --tail 15 "$(container "$service")" >&2 2>&1 || true
        done
    fi
    for service in balancer "${INSTANCES[@]}" postgres; do
        podman rm -f -v "$(container "$service")" >/dev/null 2>&1 || true
    done
    podman network rm -f "$NET" >/dev/null 2>&1 || true
    podman volume rm -f "$VOLUME" >/dev/null 2>&1 || true
    rm -rf "$WORK"
}
trap cleanup EXIT
. docker/podman.sh

say "tools"
podman_tools python3-yaml

say "compose.yaml and haproxy.cfg"
# The scale-out services' settings, checked and written out as podman
# arguments (one per line) for each service; ${VAR:-default} is resolved.
python3 - "$WORK" <<'PY' || fail "docker/compose.yaml does not describe the scale-out profile"
import os, re, sys, yaml
work = sys.argv[1]
services = yaml.safe_load(open("docker/compose.yaml"))["services"]
def check(condition, message):
    if not condition:
        sys.exit(f"compose.yaml: {message}")
def resolve(value):
    return re.sub(r"\$\{(\w+)(?::-([^}]*))?\}", lambda m: os.environ.get(m.group(1)) or m.group(2) or "", str(value))
default = services["observable-server"]
check("profiles" not in default, "the default service must have no profile")
check(default.get("ports") == ["8080:8080"], "the default service publishes 8080")
instances = ["observable-1", "observable-2", "observable-3"]
for name in ["postgres", *instances, "balancer"]:
    check(name in services, f"no service {name}")
    check(services[name].get("profiles") == ["scale-out"], f"{name} is not in the scale-out profile")
for name in instances:
    service = services[name]
    check(service["build"]["dockerfile"] == "docker/Dockerfile", f"{name} is not built from docker/Dockerfile")
    check(resolve(service["environment"]["OBSERVABLE_DATABASE"]).startswith("postgres://"), f"{name} is not on PostgreSQL")
    check("@postgres:5432/" in service["environment"]["OBSERVABLE_DATABASE"], f"{name} does not reach the postgres service")
    check(service["depends_on"]["postgres"]["condition"] == "service_healthy", f"{name} does not wait for a healthy postgres")
    check("ports" not in service, f"{name} should be reached through the balancer only")
balancer = services["balancer"]
check(balancer["build"]["dockerfile"] == "docker/haproxy.Dockerfile", "the balancer is not built from docker/haproxy.Dockerfile")
check(balancer.get("ports") == ["8080:8080"], "the balancer publishes 8080")
check(sorted(balancer["depends_on"]) == instances, "the balancer depends on the three instances")
config = open("docker/haproxy.cfg").read()
servers = re.findall(r"^\s*server\s+(\S+)\s+(\S+)", config, re.M)
check(servers == [(name, f"{name}:8080") for name in instances], f"haproxy.cfg servers are {servers}")
check(re.search(r"^\s*balance\s+roundrobin", config, re.M), "haproxy.cfg does not balance round-robin")
check(re.search(r"^\s*option\s+httpchk\s+GET\s+/healthz", config, re.M), "haproxy.cfg does not check /healthz")
timeout = re.search(r"^\s*timeout\s+server\s+(\d+)s", config, re.M)
check(timeout and int(timeout.group(1)) >= 70, "haproxy.cfg: timeout server must be at least 70s (60 s long-polls)")
for name in ["postgres", *instances]:
    with open(f"{work}/{name}.env", "w") as out:
        for key, value in services[name]["environment"].items():
            out.write(f"--env\n{key}={resolve(value)}\n")
test = services["postgres"]["healthcheck"]["test"]
check(test[0] == "CMD", "postgres healthcheck should be a CMD")
with open(f"{work}/postgres.health", "w") as out:
    out.write("\n".join(test[1:]) + "\n")
print("scale-out profile: postgres, observable-1..3 on", resolve(services["observable-1"]["environment"]["OBSERVABLE_DATABASE"]).split("@")[1], "and the balancer")
PY

say "base images"
base_images

say "project image (docker/Dockerfile)"
project_image "$TAG"

say "PostgreSQL and HAProxy images (docker/postgres.Dockerfile, docker/haproxy.Dockerfile)"
for pair in "postgres.Dockerfile $POSTGRES_TAG" "haproxy.Dockerfile $BALANCER_TAG"; do
    read -r file tag <<< "$pair"
    podman build --format docker --network host --build-arg BASE_IMAGE="$BASE" \
        -f "docker/$file" -t "$tag" . > "$WORK/build.log" 2>&1 || { tail -n 30 "$WORK/build.log"; fail "build of docker/$file"; }
done

json() { python3 -c "import sys, json; print(json.load(sys.stdin)$1)"; }
header() { tr -d '\r' < "$1" | awk -F': ' -v name="$2" 'tolower($1)==tolower(name){print $2}'; }
# Per-server state from HAProxy's statistics: "observable-1 UP" lines.
states() { curl -fsS "http://127.0.0.1:$STATS_PORT/stats;csv" | awk -F, '$1=="observable" && $2!="BACKEND"{print $2, $18}'; }
wait_for() {  # wait_for SECONDS DESCRIPTION COMMAND...
    local deadline=$(( $(date +%s) + $1 )) what=$2; shift 2
    until "$@" >/dev/null 2>&1; do
        [ "$(date +%s)" -lt "$deadline" ] || fail "timed out waiting for $what"
        sleep 0.2
    done
}
ups() { [ "$(states | grep -c ' UP$')" = "$1" ]; }
# podman run, quiet: without systemd it complains that it cannot start
# HEALTHCHECK timers (podman healthcheck run works) and cannot reach syslog.
start() {
    podman run -d "$@" > /dev/null 2> "$WORK/run.err" || { cat "$WORK/run.err" >&2; fail "podman run $*"; }
}

say "start: postgres, three instances, the balancer"
podman network create "$NET" >/dev/null
podman volume create "$VOLUME" >/dev/null
mapfile -t env < "$WORK/postgres.env"
start --name "$(container postgres)" --network "$NET" --network-alias postgres \
    "${env[@]}" -v "$VOLUME:/var/lib/postgresql/data" "$POSTGRES_TAG"
mapfile -t health < "$WORK/postgres.health"
wait_for 60 "postgres to be healthy (${health[*]})" podman exec "$(container postgres)" "${health[@]}"
note "postgres healthy"
# The instances reach postgres by a hosts entry rather than podman's DNS
# (aardvark-dns): a lookup there sometimes waits 5 s for an answer while
# containers join the network, and an instance opening its connections then
# stalls for up to a minute, /healthz included. Docker's DNS has no such delay.
postgres_ip=$(podman inspect --format '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' "$(container postgres)")
# Started together, as compose starts them: migrations run and the models'
# tables are made once, under a lock.
for name in "${INSTANCES[@]}"; do
    mapfile -t env < "$WORK/$name.env"
    start --name "$(container "$name")" --network "$NET" --network-alias "$name" \
        --add-host "postgres:$postgres_ip" "${env[@]}" "$TAG"
done
start --name "$(container balancer)" --network "$NET" --network-alias balancer \
    -p "127.0.0.1:$PORT:8080" -p "127.0.0.1:$STATS_PORT:8404" "$BALANCER_TAG"
note "instances and balancer started"
for name in "${INSTANCES[@]}"; do
    wait_for 60 "$name to be healthy" podman healthcheck run "$(container "$name")"
done
note "instances healthy"
wait_for 30 "HAProxy to see three instances up" ups 3
states

say "1. health through the balancer"
code=$(curl -sS -o /dev/null -w '%{http_code}' "$LB/healthz")
[ "$code" = "200" ] || fail "/healthz answered $code"
applied=0
for name in "${INSTANCES[@]}"; do
    log=$(podman logs "$(container "$name")" 2>&1)
    case "$log" in *"listening on"*) ;; *) fail "$name did not log 'listening on'" ;; esac
    case "$log" in *"prepared the database"*) applied=$(( applied + 1 )) ;; esac
done
[ "$applied" = "1" ] || fail "$applied instances prepared the database; exactly one should"
echo "one instance applied the migrations and made the tables"
served=()
for _ in 1 2 3; do
    curl -fsS -D "$WORK/h" -o /dev/null "$LB/healthz"
    served+=("$(header "$WORK/h" X-Served-By)")
done
echo "/healthz 200; three requests served by ${served[*]}"
[ "$(printf '%s\n' "${served[@]}" | sort -u | wc -l)" = "3" ] || fail "round-robin should reach all three instances: ${served[*]}"

say "2. change feed across instances"
observer=$(curl -fsS -D "$WORK/h" -X POST "$LB/observers" | json '["id"]')
on_create=$(header "$WORK/h" X-Served-By)
count=$(curl -fsS -D "$WORK/h" -H "Observer: $observer" "$LB/truck/orderCount" | json '["orderCount"]')
on_read=$(header "$WORK/h" X-Served-By)
cursor=$(header "$WORK/h" Observation-Cursor)
curl -fsS -D "$WORK/poll.h" "$LB/observers/$observer/changes?since=$cursor&timeout=30" > "$WORK/poll.json" &
poll=$!
sleep 0.5
order() { curl -fsS -D "$WORK/order.h" -X POST "$LB/truck/orders" -d '{"donutId": "0d1b6a52-6c4e-4f43-9a0e-6d0c2f9f0001", "quantity": 1}'; }
written_at=$(date +%s%N)
order > /dev/null || fail "order"
on_write=$(header "$WORK/order.h" X-Served-By)
wait "$poll" || fail "the long-poll was not answered"
wake_ms=$(( ($(date +%s%N) - written_at) / 1000000 ))
on_poll=$(header "$WORK/poll.h" X-Served-By)
cat "$WORK/poll.json"; echo
echo "observer created on $on_create, read on $on_read, polled on $on_poll, order written on $on_write; answered ${wake_ms} ms after the write was sent"
[ "$on_poll" != "$on_write" ] || fail "the poll and the write should land on different instances"
[ "$(json '["changes"][-1]["path"]' < "$WORK/poll.json")" = "/truck/orderCount" ] || fail "the long-poll did not deliver /truck/orderCount"
[ "$(json '["changes"][-1]["new"]' < "$WORK/poll.json")" = "$(( count + 1 ))" ] || fail "orderCount should be $(( count + 1 ))"
cursor=$(json '["cursor"]' < "$WORK/poll.json")

say "3. kill one instance"
# Orders acknowledged before the kill: round-robin puts two on each instance.
victim=observable-2
: > "$WORK/acked.txt"
on_victim=0
for _ in 1 2 3 4 5 6; do
    order | json '["id"]' >> "$WORK/acked.txt" || fail "order before the kill"
    if [ "$(header "$WORK/order.h" X-Served-By)" = "$victim" ]; then on_victim=$(( on_victim + 1 )); fi
done
[ "$on_victim" -ge 1 ] || fail "no order landed on $victim"
# Three more observers park a poll each: round-robin puts one on each instance.
watchers=()
for i in 0 1 2; do
    id=$(curl -fsS -X POST "$LB/observers" | json '["id"]')
    curl -fsS -D "$WORK/h" -o /dev/null -H "Observer: $id" "$LB/truck/orderCount"
    watchers+=("$id $(header "$WORK/h" Observation-Cursor)")
done
for i in 0 1 2; do
    read -r id since <<< "${watchers[$i]}"
    curl -sS -D "$WORK/watch$i.h" "$LB/observers/$id/changes?since=$since&timeout=30" > "$WORK/watch$i.json" 2>/dev/null &
    echo $! > "$WORK/watch$i.pid"
done
sleep 0.5
podman kill "$(container "$victim")" >/dev/null
echo "killed $victim ($on_victim of 6 orders before it were written there)"
# At once, before HAProxy's checks notice: every write and read succeeds.
slowest=0
for i in $(seq 1 30); do
    t=$(date +%s%N)
    order | json '["id"]' >> "$WORK/acked.txt" || fail "order $i after the kill failed"
    curl -fsS "$LB/truck/orderCount" >/dev/null || fail "read $i after the kill failed"
    ms=$(( ($(date +%s%N) - t) / 1000000 ))
    if [ "$ms" -gt "$slowest" ]; then slowest=$ms; fi
done
echo "30 orders and 30 reads after the kill succeeded (slowest pair ${slowest} ms)"
wait_for 15 "HAProxy to mark $victim down" ups 2
states
expected=$(( count + 1 + $(wc -l < "$WORK/acked.txt") ))
# Nothing acknowledged is lost, through either surviving instance.
for i in 1 2; do
    curl -fsS -D "$WORK/h" "$LB/truck/orders" > "$WORK/orders.json"
    on=$(header "$WORK/h" X-Served-By)
    python3 - "$WORK/orders.json" "$WORK/acked.txt" "$on" <<'PY' || fail "acknowledged orders lost"
import json, sys
body = json.load(open(sys.argv[1]))
items = body if isinstance(body, list) else next(v for v in body.values() if isinstance(v, list))
present = {item["id"] for item in items}
acked = [line.strip() for line in open(sys.argv[2]) if line.strip()]
lost = [i for i in acked if i not in present]
if lost:
    sys.exit(f"{len(lost)} acknowledged orders missing through {sys.argv[3]}: {lost[:5]}")
print(f"all {len(acked)} acknowledged orders present through {sys.argv[3]} ({len(items)} orders)")
PY
done
count_now=$(curl -fsS "$LB/truck/orderCount" | json '["orderCount"]')
[ "$count_now" -ge "$expected" ] || fail "orderCount $count_now, expected at least $expected"
# The first observer, polling from its cursor through any instance, misses nothing.
curl -fsS "$LB/observers/$observer/changes?since=$cursor&timeout=10&limit=1000" > "$WORK/poll.json"
last=$(json '["changes"][-1]["new"]' < "$WORK/poll.json")
[ "$last" = "$count_now" ] || fail "the observer's feed ends at orderCount $last, not $count_now"
echo "the first observer's feed reaches orderCount $count_now"
# The parked polls: those on the surviving instances were answered; the one
# on the killed instance failed, and its client, retrying with its cursor
# through the balancer, gets the change.
retried=0
for i in 0 1 2; do
    wait "$(cat "$WORK/watch$i.pid")" || true
    read -r id since <<< "${watchers[$i]}"
    if ! python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d['changes'] else 1)" "$WORK/watch$i.json" 2>/dev/null; then
        retried=$(( retried + 1 ))
        curl -fsS "$LB/observers/$id/changes?since=$since&timeout=10" > "$WORK/watch$i.json" || fail "watcher $i could not poll again"
    fi
    [ "$(json '["changes"][-1]["path"]' < "$WORK/watch$i.json")" = "/truck/orderCount" ] || fail "watcher $i missed the orderCount change"
done
echo "three parked polls delivered the change ($retried after a retry with the cursor)"
[ "$retried" = "1" ] || fail "$retried parked polls failed; exactly the one on the killed instance should"

say "4. the killed instance, started again, rejoins"
start_again() { podman start "$(container "$victim")" > /dev/null 2> "$WORK/run.err" || { cat "$WORK/run.err" >&2; fail "podman start $victim"; }; }
start_again
wait_for 60 "$victim to be healthy again" podman healthcheck run "$(container "$victim")"
wait_for 30 "HAProxy to see three instances up again" ups 3
states
on_victim=0
for _ in 1 2 3; do
    seen=$(curl -fsS -D "$WORK/h" "$LB/truck/orderCount" | json '["orderCount"]')
    [ "$seen" = "$count_now" ] || fail "orderCount $seen through $(header "$WORK/h" X-Served-By), expected $count_now"
    if [ "$(header "$WORK/h" X-Served-By)" = "$victim" ]; then on_victim=$(( on_victim + 1 )); fi
done
[ "$on_victim" = "1" ] || fail "round-robin should include $victim again"
order > /dev/null || fail "order after $victim came back"
echo "$victim serves again and reads orderCount $count_now like the others"

say "5. stop everything"
code=$(curl -sS -o /dev/null -w '%{http_code}' "$LB/healthz")
[ "$code" = "200" ] || fail "/healthz answered $code with two instances"
stop_started=$(date +%s%N)
stop() {  # quiet as start: no systemd timers to remove
    podman stop -t "$1" "$2" > /dev/null 2> "$WORK/stop.err" || { cat "$WORK/stop.err" >&2; fail "podman stop $2"; }
}
stop 10 "$(container balancer)"
for name in "${INSTANCES[@]}"; do
    stop 10 "$(container "$name")"
done
stop 30 "$(container postgres)"
stop_ms=$(( ($(date +%s%N) - stop_started) / 1000000 ))
for name in "${INSTANCES[@]}" postgres; do
    code=$(podman inspect --format '{{.State.ExitCode}}' "$(container "$name")")
    [ "$code" = "0" ] || fail "$name exited with $code"
done
case "$(podman logs "$(container postgres)" 2>&1 | tail -n 3)" in
    *"database system is shut down"*) ;;
    *) fail "postgres did not shut down cleanly" ;;
esac
echo "instances and postgres stopped with exit code 0 in ${stop_ms} ms"

say "all scale-out checks passed"
