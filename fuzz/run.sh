#!/usr/bin/env bash
# Builds the libFuzzer target and runs it for a bounded time.
#
#   fuzz/run.sh [seconds] [extra libFuzzer flags…]
#
# seconds defaults to 30. The seed corpus in fuzz/corpus/ is read, never
# written: new inputs go to fuzz/work-corpus/, crashes to fuzz/artifacts/.
# Exits non-zero when the fuzzer finds a crash (or fails to build).
# Environment: FUZZ_JOBS (parallel fuzzing processes, default 1),
# FUZZ_RESET_EVERY (inputs per fresh database, default 2000),
# FUZZ_ALLOW_500=1 (do not treat a 500 answer as a crash).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
seconds="${1:-30}"
shift || true
jobs="${FUZZ_JOBS:-1}"

if ! grep -q '"ObservableServerCore"' "$here/../Package.swift"; then
    echo "fuzz: the main Package.swift has no ObservableServerCore library product; add to its products:" >&2
    echo '        .library(name: "ObservableServerCore", targets: ["API", "HTTPServer", "Models", "ModelStore", "ModelStoreDatabases", "JSON"]),' >&2
    exit 2
fi

cd "$here"
# Debug: every module is compiled with testing enabled, which the harness
# needs to build a `Connection` (see Sources/RequestFuzzer/RequestFuzzer.swift).
# -sanitize=fuzzer comes from toolset.json, which applies it to what is built
# for the fuzzer only: given with -Xswiftc it would also reach the build-time
# tool of the main package's EmbedFiles plugin, and an executable linked with
# libFuzzer needs a fuzz target of its own.
swift build -c debug --toolset toolset.json --product RequestFuzzer
binary="$(swift build -c debug --toolset toolset.json --show-bin-path)/RequestFuzzer"

mkdir -p work-corpus artifacts
# Swift's own crash backtracer would take the fatal signal before libFuzzer
# could save the crashing input.
export SWIFT_BACKTRACE="${SWIFT_BACKTRACE:-enable=no}"

flags=(-max_total_time="$seconds" -max_len=4096 -timeout=10 -rss_limit_mb=4096 -dict="$here/request.dict"
       -artifact_prefix="$here/artifacts/" -print_final_stats=1)
if [ "$jobs" -gt 1 ]; then
    flags+=(-fork="$jobs" -ignore_crashes=0)
fi

echo "fuzz: $binary for ${seconds}s, $jobs process(es)" >&2
status=0
"$binary" "${flags[@]}" "$@" work-corpus corpus || status=$?
if [ "$status" -ne 0 ]; then
    echo "fuzz: crash (exit $status); inputs in $here/artifacts/:" >&2
    ls -1 "$here/artifacts/" >&2 || true
    exit "$status"
fi
echo "fuzz: no crash in ${seconds}s" >&2
