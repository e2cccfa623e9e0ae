#!/usr/bin/env bash
# Runs scripts/browser-test.py: the live page in two headless Chromium
# windows against a real server. Installs Debian's chromium,
# chromium-driver and fonts-noto-color-emoji (the memory game's cards, in
# the screenshots) and PyPI's selenium when they are missing. Arguments go
# to the Python script (--binary PATH, --artifacts DIR, --images DIR,
# --no-token, --orders N); build the server first (swift build).
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
for package in chromium chromium-driver fonts-noto-color-emoji; do
    dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    echo "installing: ${missing[*]}" >&2
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

python=${PYTHON:-python3}
if ! "$python" -c 'import selenium' 2>/dev/null; then
    echo "installing: selenium (pip)" >&2
    # Debian's own python3 refuses pip installs outside a virtual
    # environment (PEP 668); the test's one package may go beside it.
    "$python" -m pip install --quiet selenium 2>/dev/null \
        || "$python" -m pip install --quiet --break-system-packages selenium
fi

exec "$python" scripts/browser-test.py "$@"
