#!/usr/bin/env bash
# The test command: installs what the suite needs, then runs pytest with this script's arguments
# (./run_tests.sh -q -m "not training", ./run_tests.sh tests/browser ...). Works on a fresh Debian
# machine: the browser tests drive Debian's chromium, installed here with apt if it is missing.
set -euo pipefail
cd "$(dirname "$0")"

python -m pip install --quiet -r requirements.txt

CHROMIUM=/usr/bin/chromium
if [ ! -x "$CHROMIUM" ]; then
    echo "run_tests.sh: $CHROMIUM is missing; installing Debian's chromium for tests/browser." >&2
    if [ "$(id -u)" -eq 0 ]; then
        SUDO=()
    elif command -v sudo >/dev/null 2>&1; then
        SUDO=(sudo)
    else
        echo "run_tests.sh: cannot install chromium: not root and no sudo. As root, run" >&2
        echo "    apt-get update && apt-get install -y chromium" >&2
        echo "then run ./run_tests.sh again." >&2
        exit 1
    fi
    if ! { "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update &&
           "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y chromium; } ||
       [ ! -x "$CHROMIUM" ]; then
        echo "run_tests.sh: installing chromium with apt-get failed (see above); the browser" >&2
        echo "tests need $CHROMIUM. Install it (apt-get install chromium), then run" >&2
        echo "./run_tests.sh again." >&2
        exit 1
    fi
fi

exec python -m pytest "$@"
