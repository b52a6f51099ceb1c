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
#   3. installs with apt what the tests it is asked to run need and this machine lacks, and nothing
#      else: Debian's chromium and nginx when a test under tests/browser is among them (chromium drives
#      every one; test_serve_class.py and test_class_board.py serve the app through nginx, as
#      deploy/serve_class.py does), redis-server when a test file among them uses tests/redis_server.py
#      (or the redis_url fixture that starts one)
#      (the class store's tests in the default tier, and the board's). So the default tier needs
#      redis-server alone. Which tests are asked is pytest's own answer (--collect-only with these
#      arguments), asked only when one of the three is missing. It then stops and disables the services
#      Debian's packages start (nginx with its default site on port 80, redis-server on port 6379),
#   4. checks style with ruff (rules in pyproject.toml), then runs pytest with this script's arguments.
# When ../shared/data exists beside the repository and UNROLLED_DATA_MIRROR is unset, it exports
# UNROLLED_DATA_MIRROR as that folder's absolute path: the corpora's mirror the data layer reads
# (engine/datasets.py).
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

# The corpora's mirror for the data layer (engine/datasets.py): ../shared/data beside the repository,
# when there is one and UNROLLED_DATA_MIRROR names none.
if [ -z "${UNROLLED_DATA_MIRROR:-}" ] && [ -d ../shared/data ]; then
    UNROLLED_DATA_MIRROR="$(cd ../shared/data && pwd)"
    export UNROLLED_DATA_MIRROR
fi

CHROMIUM=/usr/bin/chromium
NGINX=/usr/sbin/nginx
REDIS=/usr/bin/redis-server
absent=()
[ -x "$CHROMIUM" ] || absent+=(chromium)
[ -x "$NGINX" ] || absent+=(nginx)
[ -x "$REDIS" ] || absent+=(redis-server)
missing=()
if [ "${#absent[@]}" -gt 0 ]; then
    # The tests these arguments select, as pytest collects them: one node id a line (whatever -v or -q
    # the arguments hold), in one process, nothing run.
    echo "run_tests.sh: ${absent[*]} missing here; asking pytest which tests these arguments select" >&2
    status=0
    selected=$("$PYTHON" -m pytest "$@" --collect-only --verbosity=-1 -n 0 2>/dev/null) || status=$?
    if [ "$status" -ne 0 ] && [ "$status" -ne 5 ]; then  # 5: no test selected, so none needs anything
        echo "run_tests.sh: could not list the tests these arguments select (pytest --collect-only exit" \
             "$status); installing all of ${absent[*]}" >&2
        missing=("${absent[@]}")
    else
        files=$(printf '%s\n' "$selected" | grep '::' | sed 's/::.*//' | sort -u || true)
        browser=no
        redis=no
        if printf '%s\n' "$files" | grep -q '^tests/browser/'; then
            browser=yes
        fi
        # tests/redis_server.py itself, or test_class_store.py's redis_url fixture imported by name
        if [ -n "$files" ] && printf '%s\n' "$files" | xargs grep -lE 'redis_server|redis_url' -- >/dev/null 2>&1; then
            redis=yes
        fi
        for package in "${absent[@]}"; do
            case "$package" in
                chromium|nginx) [ "$browser" = no ] || missing+=("$package") ;;
                redis-server) [ "$redis" = no ] || missing+=("$package") ;;
            esac
        done
    fi
fi
if [ "${#missing[@]}" -gt 0 ]; then
    need=()
    for package in "${missing[@]}"; do
        case "$package" in
            chromium) need+=("$CHROMIUM") ;;
            nginx) need+=("$NGINX") ;;
            redis-server) need+=("$REDIS") ;;
        esac
    done
    echo "run_tests.sh: installing Debian's ${missing[*]}: the tests asked for need ${need[*]}." >&2
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
    installed=yes
    { "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update &&
      "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}"; } || installed=no
    for path in "${need[@]}"; do
        [ -x "$path" ] || installed=no
    done
    if [ "$installed" = no ]; then
        echo "run_tests.sh: installing ${missing[*]} with apt-get failed (see above); the tests asked for" >&2
        echo "need ${need[*]}. Install them (apt-get install ${missing[*]}), then run ./run_tests.sh again." >&2
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
