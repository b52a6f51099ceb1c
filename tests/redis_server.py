"""A real redis-server for the tests of the class store (tests/app/test_class_store.py) and of the
board in a served class (tests/browser/test_class_board.py): Debian's, on a free loopback port,
nothing saved to disk, stopped after. ./run_tests.sh installs it; without it the test fails saying so."""
from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import redis

REDIS_SERVER = "/usr/bin/redis-server"
START_TIMEOUT = 10  # s to answer PING on a loaded machine (milliseconds alone)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def redis_server(password: str | None = None) -> Iterator[str]:
    """A running redis-server's URL, redis://127.0.0.1:<port>/0, until the block ends; with a password,
    a server that takes none other (requirepass), and its URL redis://:<password>@127.0.0.1:<port>/0."""
    if not os.access(REDIS_SERVER, os.X_OK):
        pytest.fail(f"{REDIS_SERVER} is missing: run ./run_tests.sh, which installs it, or "
                    "`apt-get install redis-server`.", pytrace=False)
    port = free_port()
    requirepass = ["--requirepass", password] if password else []
    server = subprocess.Popen([REDIS_SERVER, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                               "--appendonly", "no", *requirepass],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    client = redis.Redis(host="127.0.0.1", port=port, password=password, socket_connect_timeout=1)
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if server.poll() is not None:
                    pytest.fail(f"redis-server exited ({server.returncode}): {server.stdout.read()}", pytrace=False)
                if time.monotonic() > deadline:
                    pytest.fail(f"redis-server did not answer PING on port {port} in {START_TIMEOUT} s", pytrace=False)
                time.sleep(0.02)  # polling PING, not standing in for it
        yield f"redis://{f':{password}@' if password else ''}127.0.0.1:{port}/0"
    finally:
        client.close()
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        server.stdout.close()
