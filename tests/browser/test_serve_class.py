"""Serving a class (deploy/serve_class.py): two app processes behind nginx on 127.0.0.1, and two
browsers through the proxy. Each lands on its own process (the proxy's cookie names it) and trains
there; a reload (a new page request and a new websocket) reaches the same process and finds the
model where it was; while one browser trains, the other browser's process spends no CPU time on it;
and the same link sent to the other process (the cookie changed by hand) finds no model there,
while the first process still holds it. SIGTERM stops nginx and both app processes. Screenshots:
serve-class-wide.png (1400 wide) and serve-class-projector.png (1024x768)."""
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from app.session import memory
from deploy.serve_class import memory_share

from .conftest import ARTIFACTS, REPO, SCRIPT_TIMEOUT, SERVER_START_TIMEOUT, StreamlitPage, wait_for_app
from .test_build_train import steps_trained
from .test_projector import PROJECTOR

WIDE = {"width": 1400, "height": 900}
RUN_NAME = "serve-class"  # the run directory and the script's output under ARTIFACTS, kept for a look
# What the script prints once it serves: the teacher's link comes on the next line.
TEACHER_LINK = re.compile(r"^serve_class: the teacher's board: (http://\S+)$", re.MULTILINE)
TEACHER_KEY = re.compile(r"^serve_class: the link opens the board once; .* the teacher key (\S+)$", re.MULTILINE)
COOKIE = "unrolled_backend"  # the proxy's: which app process holds this browser
STEPS = 40  # Play until at least this many steps
# CPU time one process may spend meanwhile on a session it does not hold (its idle event loop): a
# tenth of what the training process spends. Measured: 0.01 s against 1.7 s.
IDLE_SHARE = 0.1
# The progress line under the controls counts up while the live fragment trains.
TRAINED_PAST = """steps => {
    const m = document.body.innerText.match(/step (\\d[\\d,]*) of/);
    return m !== null && parseInt(m[1].replace(/,/g, '')) >= steps;
}"""


@dataclass
class Class:
    url: str
    pids: list[int]  # the app processes' pids, in the proxy's order (the cookie's value indexes it)
    nginx_pid: int
    board: str  # the teacher's link the script printed (with a one-time code)
    key: str  # the teacher key it printed, to type on another browser
    run_dir: Path  # its logs, pid files, nginx's config


def free_ports(n: int) -> list[int]:
    """n ports of 127.0.0.1 free now: held open together, so they differ."""
    with ExitStack() as stack:
        sockets = [stack.enter_context(socket.socket()) for _ in range(n)]
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of every thread of the process so far (/proc/<pid>/stat)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()  # after the command's name, which may hold spaces
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@contextmanager
def serving_a_class(processes: int, *args: str, name: str = RUN_NAME):
    """deploy/serve_class.py on free ports of 127.0.0.1, with `args` besides (--store URL), until it
    says it is serving and has printed the teacher's link; SIGTERM after. Its run directory and
    output go to ARTIFACTS/<name> and <name>.stdout.log, .stderr.log."""
    if shutil.which("nginx") is None and not os.access("/usr/sbin/nginx", os.X_OK):
        pytest.fail("nginx is missing: run ./run_tests.sh, which installs it, or `apt-get install nginx`.",
                    pytrace=False)
    port, *app_ports = free_ports(1 + processes)
    run_dir, stdout, stderr = ARTIFACTS / name, ARTIFACTS / f"{name}.stdout.log", ARTIFACTS / f"{name}.stderr.log"
    shutil.rmtree(run_dir, ignore_errors=True)
    cmd = [sys.executable, "deploy/serve_class.py", "--processes", str(processes), "--port", str(port),
           "--listen", "127.0.0.1", "--app-ports", *map(str, app_ports), "--run-dir", str(run_dir), *args]
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with open(stdout, "wb") as out, open(stderr, "wb") as err:
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 2 * SERVER_START_TIMEOUT  # the processes start side by side
        while (key := TEACHER_KEY.search(stdout.read_text(errors="replace"))) is None:
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"deploy/serve_class.py {'exited' if proc.poll() is not None else 'did not serve'}."
                            f"\n$ {' '.join(cmd)}\n--- stdout ---\n{stdout.read_text(errors='replace')}"
                            f"\n--- stderr ---\n{stderr.read_text(errors='replace')}", pytrace=False)
            time.sleep(0.2)  # polling the script's output for its line, not standing in for it
        printed = stdout.read_text(errors="replace")
        assert "serve_class: serving" in printed  # the link and the key come after it
        pids = [int((run_dir / f"app-{p}.pid").read_text()) for p in app_ports]
        yield Class(f"http://127.0.0.1:{port}", pids, int((run_dir / "nginx.pid").read_text()),
                    TEACHER_LINK.search(printed)[1], key[1], run_dir)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def backend(page: StreamlitPage) -> int:
    """The app process the proxy's cookie keeps this browser on."""
    values = [c["value"] for c in page.page.context.cookies(page.base_url) if c["name"] == COOKIE]
    assert len(values) == 1 and values[0].isdigit(), f"the proxy's cookie: {values}"
    return int(values[0])


def set_backend(page: StreamlitPage, index: int) -> None:
    page.page.context.add_cookies([{"name": COOKIE, "value": str(index), "url": page.base_url}])


def train(page: StreamlitPage, steps: int) -> int:
    """Play until the step count passes `steps`, pause; the steps trained then."""
    page.page.get_by_role("button", name="Play", exact=True).click()
    page.page.wait_for_function(TRAINED_PAST, arg=steps, timeout=120_000)  # a loaded machine trains slowly
    page.page.get_by_role("button", name="Pause", exact=True).click()
    page.page.get_by_role("button", name="Play", exact=True).wait_for()
    wait_for_app(page.page)
    return steps_trained(page.page)


def test_two_processes_behind_the_proxy_keep_each_browser_and_its_work(browser):
    with serving_a_class(processes=2) as served, ExitStack() as contexts:
        pages = []
        for viewport in (WIDE, PROJECTOR):
            context = contexts.enter_context(browser.new_context(viewport=viewport))
            context.set_default_timeout(SCRIPT_TIMEOUT)
            pages.append(StreamlitPage(context.new_page(), served.url))
            pages[-1].goto("build")
        held = [backend(page) for page in pages]
        assert sorted(held) == [0, 1], f"both browsers on one process: {held}"  # newcomers go in turn
        for pid in served.pids:  # the memory each process's models may hold, and its arenas from its first thread
            environ = dict(entry.split("=", 1) for entry in Path(f"/proc/{pid}/environ").read_text().split("\0")
                           if "=" in entry)
            assert environ["UNROLLED_MEMORY_MB"] == memory_share(2)
            assert environ["MALLOC_ARENA_MAX"] == str(memory.STEP_SLOTS)

        trained = []
        for page, index in zip(pages, held):  # one browser trains at a time; the other process looks on
            busy, idle = served.pids[index], served.pids[1 - index]
            before = cpu_seconds(busy), cpu_seconds(idle)
            trained.append(train(page, STEPS))
            spent = cpu_seconds(busy) - before[0], cpu_seconds(idle) - before[1]
            assert trained[-1] >= STEPS
            assert spent[1] <= IDLE_SHARE * spent[0], f"CPU s of the training process, the other: {spent}"
            assert backend(page) == index  # every request and the websocket kept to it
        pages[0].screenshot("serve-class-wide")
        pages[1].screenshot("serve-class-projector")

        for page, index, steps in zip(pages, held, trained):
            page.page.reload()  # a new page request and a new websocket: Streamlit's session is new
            wait_for_app(page.page)
            assert steps_trained(page.page) == steps  # the process's lab store handed the model back
            assert backend(page) == index

        first, link = pages[0], pages[0].page.url
        set_backend(first, held[1])
        first.goto(link.removeprefix(served.url + "/"))
        assert steps_trained(first.page) == 0  # the other process has never seen this lab: a new one
        assert backend(first) == held[1]
        set_backend(first, held[0])
        first.goto(link.removeprefix(served.url + "/"))
        assert steps_trained(first.page) == trained[0]  # still in its own process, and only there

    left = [pid for pid in [*served.pids, served.nginx_pid] if alive(pid)]
    assert not left, f"still running after SIGTERM to serve_class.py: {left}"
