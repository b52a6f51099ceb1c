"""`streamlit run app/main.py` on a free port of 127.0.0.1 for a benchmark, and what the kernel
says about its process: resident memory, threads alive, CPU seconds used."""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Server:
    url: str
    pid: int


@contextmanager
def serve(*options: str) -> Iterator[Server]:
    """The app as tests/browser/conftest.py starts it, with extra `--section.option value` options."""
    from tests.browser.conftest import _free_port, _health

    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    cmd = [sys.executable, "-m", "streamlit", "run", "app/main.py", "--server.headless", "true",
           "--server.port", str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false",
           *options]
    with tempfile.TemporaryFile() as log:  # a file, not a pipe: a pipe nobody reads blocks the server
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        try:
            start = time.perf_counter()
            while _health(url) != "ok":
                if proc.poll() is not None or time.perf_counter() - start > 60:
                    log.seek(0)
                    raise RuntimeError(f"streamlit did not start:\n{log.read().decode(errors='replace')}")
                time.sleep(0.1)  # the server gives no signal of being up but its health endpoint
            yield Server(url, proc.pid)
        finally:
            proc.terminate()
            proc.wait(timeout=10)


def _status(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


def rss_mb(pid: int) -> float:
    return _status(pid, "VmRSS") / 1024


def peak_rss_mb(pid: int) -> float:
    return _status(pid, "VmHWM") / 1024


def threads(pid: int) -> int:
    return _status(pid, "Threads")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time the process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime (fields 14, 15 of proc(5))


def cpu_seconds_of(program: str) -> float:
    """CPU seconds used so far by every live process whose command starts with `program`'s name
    (chromium's browser, renderer and helper processes)."""
    name = Path(program).name
    total = 0.0
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            command = (proc / "cmdline").read_bytes().split(b"\0")[0].decode(errors="replace")
            if Path(command).name == name:
                total += cpu_seconds(int(proc.name))
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue  # a process that ended while we looked
    return total
