#!/usr/bin/env bash
# The test command: ./run_tests.sh [pytest arguments]. Alone, it runs the default tier: every test
# but the trainings and the browser walks (at most 10 minutes on two cores). `./run_tests.sh --full`
# runs everything (what .ci/run runs); naming tests or a -m expression runs what is named
# (./run_tests.sh tests/browser, ./run_tests.sh -m training). UNROLLED_KERNELS=avx512 (or default)
# runs them on another CPU kernel path (pretrained/kernels.py). From a fresh clone on a fresh Debian
# machine it
#   1. uses the active virtual environment, or else ./.venv (made with `python3 -m venv` if missing),
#   2. installs requirements.txt into it (exact versions; once installed, pip fetches nothing, so
#      this works with no network),
#   3. installs Debian's chromium, nginx and redis-server with apt if /usr/bin/chromium,
#      /usr/sbin/nginx or /usr/bin/redis-server is missing (the browser tests drive chromium;
#      tests/browser/test_serve_class.py serves the app through nginx, as deploy/serve_class.py does;
#      tests/app/test_class_store.py starts its own redis-server on loopback for the class store), and
#      stops and disables the services Debian's packages start (nginx with its default site on port
#      80, redis-server on port 6379),
#   4. checks style with ruff (rules in pyproject.toml), then runs pytest with this script's arguments.
set -euo pipefail
cd "$(dirname "$0")"

if [ -n "${VIRTUAL_ENV:-}" ] || [ -n "${CONDA_PREFIX:-}" ]; then
    PYTHON=python  # the environment the caller activated
else
    if [ ! -x .venv/bin/python ]; then
        echo "run_tests.sh: making a virtual environment in .venv (python3 -m venv .venv)" >&2
        if ! python3 -m venv .venv; then
            rm -rf .venv  # a half-made one (no pip) would fail the next run in a stranger way
            echo "run_tests.sh: python3 -m venv failed. On Debian or Ubuntu, as root:" >&2
            echo "    apt-get install -y python3-venv" >&2
            echo "then run ./run_tests.sh again." >&2
            exit 1
        fi
    fi
    PYTHON=.venv/bin/python
fi

"$PYTHON" -m pip install --quiet -r requirements.txt

CHROMIUM=/usr/bin/chromium
NGINX=/usr/sbin/nginx
REDIS=/usr/bin/redis-server
missing=()
[ -x "$CHROMIUM" ] || missing+=(chromium)
[ -x "$NGINX" ] || missing+=(nginx)
[ -x "$REDIS" ] || missing+=(redis-server)
if [ "${#missing[@]}" -gt 0 ]; then
    echo "run_tests.sh: installing Debian's ${missing[*]} for the tests ($CHROMIUM, $NGINX or $REDIS is missing)." >&2
    if [ "$(id -u)" -eq 0 ]; then
        SUDO=()
    elif command -v sudo >/dev/null 2>&1; then
        SUDO=(sudo)
    else
        echo "run_tests.sh: cannot install ${missing[*]}: not root and no sudo. As root, run" >&2
        echo "    apt-get update && apt-get install -y ${missing[*]}" >&2
        echo "then run ./run_tests.sh again." >&2
        exit 1
    fi
    if ! { "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update &&
           "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}"; } ||
       [ ! -x "$CHROMIUM" ] || [ ! -x "$NGINX" ] || [ ! -x "$REDIS" ]; then
        echo "run_tests.sh: installing ${missing[*]} with apt-get failed (see above); the tests need" >&2
        echo "$CHROMIUM, $NGINX and $REDIS. Install them (apt-get install chromium nginx redis-server)," >&2
        echo "then run ./run_tests.sh again." >&2
        exit 1
    fi
    # The packages start their services (nginx with Debian's default site on port 80, redis-server on
    # port 6379); the tests run nginx and redis-server themselves, and deploy/ its nginx, each with
    # its own config and port, so the services are stopped and left disabled.
    for service in nginx redis-server; do
        if [[ " ${missing[*]} " == *" $service "* ]]; then
            if [ -d /run/systemd/system ]; then
                "${SUDO[@]}" systemctl disable --now "$service" >/dev/null 2>&1 || true
            else
                "${SUDO[@]}" service "$service" stop >/dev/null 2>&1 || true
                "${SUDO[@]}" update-rc.d "$service" disable >/dev/null 2>&1 || true
            fi
        fi
    done
fi

# Style first; a finding fails the command but does not hide the tests' results.
lint=0
"$PYTHON" -m ruff check . || lint=$?
if [ "$lint" -ne 0 ]; then
    echo "run_tests.sh: ruff check . found the problems above (exit $lint); running the tests anyway," >&2
    echo "but this command will exit non-zero. \`$PYTHON -m ruff check --fix .\` fixes those marked [*]." >&2
fi

status=0
"$PYTHON" -m pytest "$@" || status=$?
if [ "$status" -eq 0 ] && [ "$lint" -ne 0 ]; then
    status=$lint
fi
exit "$status"
