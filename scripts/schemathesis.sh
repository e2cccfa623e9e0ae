#!/usr/bin/env bash
# Checks the live server against docs/openapi.yaml with Schemathesis
# (`pip install schemathesis`, 4.x): every check, every phase, a bounded
# number of examples per operation, on a fresh temporary database. The
# document is the file itself, as any other tool reads it; the run stops
# first if the server answers a different one at GET /openapi.yaml.
#
#   scripts/schemathesis.sh [extra `st run` options]
#
# Environment:
#   OBSERVABLE_SERVER   the server binary; when unset the script builds
#                       `swift build --product observable-server` and uses
#                       .build/debug/observable-server
#   MAX_EXAMPLES        examples per operation and phase (default 30)
#   SEED                Schemathesis seed, to replay a run
#   REPORT_DIR          where the JUnit and NDJSON reports go (default: a
#                       temporary folder, removed afterwards)
#
# Exits non-zero when Schemathesis reports a failure or the server does not
# stop cleanly (exit 0 on SIGTERM).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

if ! command -v st > /dev/null; then
    echo "schemathesis.sh: the Schemathesis CLI (st) is missing; pip install schemathesis" >&2
    exit 2
fi
if [ -z "${OBSERVABLE_SERVER:-}" ]; then
    swift build --product observable-server
fi
server=${OBSERVABLE_SERVER:-.build/debug/observable-server}
[ -x "$server" ] || { echo "schemathesis.sh: no server binary at $server" >&2; exit 2; }

work=$(mktemp -d)
pid=""
cleanup() {
    if [ -n "$pid" ] && kill -0 "$pid" 2> /dev/null; then kill -KILL "$pid" 2> /dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
url="http://127.0.0.1:$port"
# Schemathesis makes thousands of observers, jobs and writes from
# 127.0.0.1: a trusted address (docs/OPERATIONS.md, "Quotas"), exempt from
# the write rate and the rows per collection. The document allows every
# `intervalMs` a server can be set to take (10 ms and up): so does this one.
"$server" serve --host 127.0.0.1 --port "$port" --database "$work/observable.sqlite" \
    --max-observers-per-client 1000000 --max-running-jobs 100000 --min-job-interval 10 --trusted-addresses 127.0.0.1 \
    --log-level warning > "$work/server.log" 2>&1 &
pid=$!
for _ in $(seq 100); do
    curl -fs "$url/healthz" > /dev/null 2>&1 && break
    kill -0 "$pid" 2> /dev/null || { cat "$work/server.log" >&2; exit 1; }
    sleep 0.1
done

# The server answers the file as it was built in, with the models' parts
# derived from their declarations: a binary older than the file, or a
# declaration changed without the file, would test something else.
if ! curl -fs "$url/openapi.yaml" | cmp -s - docs/openapi.yaml; then
    echo "schemathesis.sh: the server's GET /openapi.yaml is not docs/openapi.yaml (rebuild; see OpenAPITests)" >&2
    exit 1
fi

# Some answers depend on the state, not on the request's shape, so a
# schema-valid request may rightly be refused: a random If-Match tag is not
# the current version (412); an order names a donut that is not on the menu,
# progress goes backwards or goes to a job the server advances, a row or
# the grid is full (422); the jobs the run creates advance fast enough to
# push an observer's cursor out of the change log before its next poll
# (410, the documented answer that asks for repair=true). Those operations
# accept these statuses for valid data too. An If-Match outside the
# document's pattern (empty, a weak tag, not a tag the server makes) is a
# precondition that never holds: 412 (RFC 9110), so invalid data may get it.
#
# Any request whose line or header fields do not fit the connection memory
# is refused before it is routed (414, 431: the document's shared
# responses), valid or not; a query of many long values gets there.
cat > "$work/schemathesis.toml" << 'EOF'
[checks.positive_data_acceptance]
expected-statuses = ["2xx", "3xx", "401", "403", "404", "409", "414", "429", "431", "5xx"]

[checks.negative_data_rejection]
expected-statuses = ["400", "401", "403", "404", "405", "406", "409", "414", "415", "422", "428", "429", "431", "5xx"]

[[operations]]
include-operation-id = ["updateTruck", "updateDonut", "deleteDonut", "deleteOrder", "updateDot", "deletePost", "deleteJob", "deleteGame"]
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", "401", "403", "404", "409", "412", "414", "429", "431", "5xx"]
checks.negative_data_rejection.expected-statuses = ["400", "401", "403", "404", "405", "406", "409", "412", "414", "415", "422", "428", "429", "431", "5xx"]

[[operations]]
include-operation-id = ["createOrder", "reportProgress", "appendDot", "appendRow"]
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", "401", "403", "404", "409", "414", "422", "429", "431", "5xx"]

[[operations]]
include-operation-id = ["pollChanges", "pollChangesByHeader"]
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", "401", "403", "404", "409", "410", "414", "429", "431", "5xx"]
EOF

# The change feed's stream of events (Accept: text/event-stream) is left
# out: it never ends by itself.
# A long-poll with nothing to report waits its whole timeout (default 30 s,
# up to 60 s), so polls wait at most 0.2 s here; values outside 0…60 and
# malformed ones are sent as generated. A `since` ahead of the newest change
# is refused by design (400), so valid values are kept at or below it.
cat > "$work/hooks.py" << 'EOF'
import os
import re

import requests
import schemathesis

FEED = "/observers/{id}/changes"
MAX_WAIT = 0.2
INT64_MAX = 2**63 - 1
# A list read's parameters that are not conditions.
NOT_CONDITIONS = {"fields", "limit", "after", "order", "sort", "observer", "timeout", "since", "coalesce", "repair"}
ID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def digits(value):
    """`value` with every whole float written as an integer (6.0 as 6)."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**63:
        return int(value)
    if isinstance(value, dict):
        return {key: digits(item) for key, item in value.items()}
    if isinstance(value, list):
        return [digits(item) for item in value]
    return value


@schemathesis.hook
def before_call(context, case, kwargs):
    # JSON Schema counts 6.0 as an integer; the server takes an integer as
    # digits only (DECISIONS.md, "Requests and validation": one spelling of a
    # value), which a schema cannot say. A client writes 6: so is the body sent.
    if isinstance(case.body, (dict, list)):
        case.body = digits(case.body)
    # A sorted list read takes no `order` (the sort says the direction) and
    # its `after` is the opaque cursor of a Link, not a position: parameter
    # dependencies OpenAPI cannot state. Each alone is described and tried.
    if case.operation.method.upper() == "GET" and case.query and "sort" in case.query:
        query = dict(case.query)
        query.pop("order", None)
        query.pop("after", None)
        case.query = query
    # The stateful phase infers links from a created element's id to a query
    # parameter of the same name (`donutId` of GET /truck/orders) and sends
    # the bare id, which the condition grammar rightly refuses (400): it is
    # sent as the condition it stands for, `eq.<id>`. (No generated value is
    # a bare id: the document's pattern wants `op.value`.)
    if case.operation.method.upper() == "GET" and case.query:
        query = dict(case.query)
        for name, value in query.items():
            if name not in NOT_CONDITIONS and isinstance(value, str) and ID.match(value):
                query[name] = "eq." + value
        case.query = query
    if case.operation.path != FEED:
        return
    # A stream of events never ends by itself: Schemathesis reads whole
    # answers, so the feed is checked as a poll (the tests check streams).
    headers = dict(case.headers or {})
    for name in list(headers):
        if name.lower() == "accept" and "event-stream" in str(headers[name]).lower():
            del headers[name]
    case.headers = headers
    query = dict(case.query or {})
    timeout = query.get("timeout")
    if timeout is None:
        query["timeout"] = MAX_WAIT
    else:
        try:
            if MAX_WAIT < float(timeout) <= 60:
                query["timeout"] = MAX_WAIT
        except (TypeError, ValueError):
            pass
    since = query.get("since")
    if isinstance(since, str) and since.isascii() and since.isdigit():
        since = int(since)
    if isinstance(since, int) and not isinstance(since, bool) and 0 <= since <= INT64_MAX:
        newest = requests.get(os.environ["OBSERVABLE_URL"] + "/healthz", timeout=5).json()["seq"]
        query["since"] = min(since, newest)
    case.query = query
EOF

# From the temporary folder, so that Schemathesis' own state stays there.
status=0
cd "$work"
OBSERVABLE_URL="$url" SCHEMATHESIS_HOOKS="$work/hooks.py" \
    st --config-file "$work/schemathesis.toml" run "$root/docs/openapi.yaml" \
    --url "$url" \
    --checks all \
    --max-examples "${MAX_EXAMPLES:-30}" \
    --request-timeout 10 \
    --generation-database none \
    --report junit,ndjson --report-dir "${REPORT_DIR:-$work/report}" \
    ${SEED:+--seed "$SEED"} \
    "$@" || status=$?
cd "$root"

kill -TERM "$pid"
server_status=0
wait "$pid" || server_status=$?
pid=""
if grep -qi "fatal\|crash" "$work/server.log"; then
    echo "schemathesis.sh: the server log reports a crash:" >&2
    cat "$work/server.log" >&2
    server_status=1
fi
if [ "$server_status" -ne 0 ]; then
    echo "schemathesis.sh: the server exited with $server_status" >&2
    [ "$status" -ne 0 ] || status=1
fi
exit "$status"
