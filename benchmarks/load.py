"""A class on one server (issue 15): N students open the same lesson at once, press Play, move a
control twice while all train, read the training figure, pause and leave. Reported per N: sessions
failed; the whole-page rerun after moving the control (p50, p95) while all train; steps/s per
session and in total over a common window; fairness (the slowest session's share of the fair
share, total / N); the server's RSS at start, peak and after every session has gone; its threads
and CPU after they leave (a training loop left running for a closed tab would show as CPU).

Students are real chromium tabs (load_browser) where the machine can hold them, and beyond that
clients speaking Streamlit's websocket protocol as the page does without rendering (load_client);
the table says which, and what the clients cost (this process's CPU; chromium's own processes').

    PYTHONPATH=.:benchmarks python benchmarks/load.py --sessions 1,10,30 [--browsers 1] [--seconds 40]
        [--url http://127.0.0.1:8500 --pid PID]   # an app already running (several processes behind
                                                 # a proxy: --pid one per process, comma-separated)
"""
from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import resource
import statistics
import time
from contextlib import AsyncExitStack, nullcontext
from pathlib import Path

import app_server as kernel
import load_client
from app_server import serve
from load_browser import CHROMIUM_ARGS, BrowserTab
from load_client import Client, SessionFailed
from load_lesson import FAR, PAGE, playing
from timing import load_average, table

TIMEOUT = 60.0  # s: a run that takes longer than this fails its session
WARM = 5.0  # s of play before the window: every session's first ticks have trained
SAMPLE = 0.5  # s between readings of every session's step count
SCREENSHOTS = Path(__file__).resolve().parents[1] / "tests" / "artifacts" / "screenshots"
CHROMIUM = "/usr/bin/chromium"


@dataclasses.dataclass
class Student:
    tab: Client | BrowserTab
    failed: str | None = None
    opened: float = float("nan")
    reruns: list[float] = dataclasses.field(default_factory=list)
    readings: list[tuple[float, int]] = dataclasses.field(default_factory=list)  # (time, steps trained)
    points: int = 0

    def steps_at(self, when: float) -> int | None:
        before = [steps for t, steps in self.readings if t <= when]
        return before[-1] if before else None


async def attempt(student: Student, what: str, coroutine) -> None:
    """Run one of a student's actions (`what` it is); a failure marks the student failed and ends its part."""
    if student.failed is not None:
        coroutine.close()
        return
    try:
        await coroutine
    except (SessionFailed, OSError, TimeoutError) as failure:
        student.failed = f"{what}: {str(failure)[:300]}"


async def sample(students: list[Student], until: float) -> None:
    while time.perf_counter() < until:
        now = time.perf_counter()
        for student in students:
            if student.tab.tab.steps is not None:
                student.readings.append((now, student.tab.tab.steps))
        await asyncio.sleep(SAMPLE)


async def moves(student: Student, times: list[float], control: str) -> None:
    """Commit `control` at each of `times` (perf_counter), a value the session has not had."""
    for k, when in enumerate(times):
        await asyncio.sleep(max(0.0, when - time.perf_counter()))
        took = await student.tab.commit(control, FAR - 1 - k % 2, TIMEOUT)
        student.reruns.append(took)


async def run_class(url: str, pids: list[int], sessions: int, browsers: int, seconds: float, browser,
                    page: str = PAGE) -> dict:
    """One class of `sessions` students (the first `browsers` of them real tabs) on the app at `url`, playing
    on `page` (load_lesson.playing)."""
    students = [Student(BrowserTab(browser, url) if i < browsers else Client(url)) for i in range(sessions)]
    plays = playing(page)
    start = {pid: (kernel.rss_mb(pid), kernel.threads(pid)) for pid in pids}
    mine = resource.getrusage(resource.RUSAGE_SELF)
    chromium_before = kernel.cpu_seconds_of(CHROMIUM)

    async def arrive(student: Student) -> None:
        await attempt(student, "connect", student.tab.connect())
        began = time.perf_counter()
        await attempt(student, "open the lesson", student.tab.open(plays.page, plays.query, TIMEOUT))
        student.opened = time.perf_counter() - began
        await attempt(student, f"set {plays.control}", student.tab.commit(plays.control, FAR, TIMEOUT))
        await attempt(student, "press Play", student.tab.press("Play", TIMEOUT))

    await asyncio.gather(*(arrive(s) for s in students))  # all at once, as a class does when told
    w0 = time.perf_counter() + WARM
    w1 = w0 + seconds
    cpu0, wall0 = {pid: kernel.cpu_seconds(pid) for pid in pids}, time.perf_counter()
    sampler = asyncio.create_task(sample(students, w1 + SAMPLE))
    half = seconds / 2  # each session moves the control once in each half of the window, spread over it
    await asyncio.gather(*(attempt(s, "move the control while all train",
                                   moves(s, [w0 + (i + 0.5) / sessions * half + k * half for k in (0, 1)],
                                         plays.control))
                           for i, s in enumerate(students)))
    await sampler
    cpu1, wall1 = {pid: kernel.cpu_seconds(pid) for pid in pids}, time.perf_counter()
    chromium = kernel.cpu_seconds_of(CHROMIUM) - chromium_before  # before a closing tab takes its processes
    peak = {pid: kernel.peak_rss_mb(pid) for pid in pids}
    if browsers:
        await students[0].tab.screenshot(SCREENSHOTS / f"load_{sessions}_sessions_{len(pids)}_processes.png")
    for student in students:
        student.points = student.tab.tab.points()
        student.failed = student.failed or (student.tab.tab.errors or [None])[0]
    await asyncio.gather(*(attempt(s, "press Pause", s.tab.press("Pause", TIMEOUT)) for s in students))
    await asyncio.gather(*(s.tab.close() for s in students))
    clients = resource.getrusage(resource.RUSAGE_SELF)
    left = await after_close(pids, {pid: threads for pid, (_, threads) in start.items()})

    rates = []
    for s in students:
        a, b = s.steps_at(w0), s.steps_at(w1)
        rates.append(float("nan") if a is None or b is None or s.failed else (b - a) / seconds)
    done = [r for r in rates if r == r]
    reruns = sorted(t for s in students for t in s.reruns)
    total = sum(done)
    return {
        "sessions": sessions, "browsers": min(browsers, sessions), "processes": len(pids),
        "failed": sum(s.failed is not None for s in students),
        "why": sorted({s.failed for s in students if s.failed}),
        "open p50": statistics.median(s.opened for s in students) if students else float("nan"),
        "rerun p50": statistics.median(reruns) if reruns else float("nan"),
        "rerun p95": reruns[min(len(reruns) - 1, int(0.95 * len(reruns)))] if reruns else float("nan"),
        "rerun max": reruns[-1] if reruns else float("nan"),
        "total": total, "slowest": min(done, default=float("nan")), "fastest": max(done, default=float("nan")),
        "fairness": min(done) / (total / len(done)) if done else float("nan"),
        "server cores": sum(cpu1[p] - cpu0[p] for p in pids) / (wall1 - wall0),
        "client cores": (clients.ru_utime + clients.ru_stime - mine.ru_utime - mine.ru_stime) / (seconds + WARM),
        "chromium cores": chromium / (seconds + WARM),
        "points": min((s.points for s in students), default=0),
        "rss start": sum(rss for rss, _ in start.values()), "rss peak": sum(peak.values()), **left,
    }


async def after_close(pids: list[int], threads_at_start: dict[int, int]) -> dict:
    """After every tab has gone: seconds until each server's threads are back to their number at
    the start, the CPU the servers then use over 3 s (a training loop left for a closed tab would
    use a core), and their RSS once the disconnected sessions are dropped (see expire_sessions)."""
    began = time.perf_counter()
    while any(kernel.threads(p) > threads_at_start[p] for p in pids) and time.perf_counter() - began < 60:
        await asyncio.sleep(0.1)
    threads_back = time.perf_counter() - began
    cpu0 = {p: kernel.cpu_seconds(p) for p in pids}
    await asyncio.sleep(3.0)  # a window to measure idle CPU over, not a wait for an event
    idle = sum(kernel.cpu_seconds(p) - cpu0[p] for p in pids) / 3.0
    return {"threads after": sum(kernel.threads(p) for p in pids), "threads back s": threads_back,
            "idle cores after": idle}


async def expire_sessions(url: str, pids: list[int], ttl: float) -> float:
    """Streamlit keeps a closed tab's session for server.disconnectedSessionTTL seconds, in case it
    reconnects; its cache drops expired sessions only when it next stores one. Wait out the TTL,
    then open and close one tab on Home (stored on closing, which drops the expired ones); the RSS
    of the servers then."""
    await asyncio.sleep(ttl + 1)
    for _ in pids:  # a proxy sends each new tab to some process: enough tabs to reach each, likely
        probe = Client(url)
        await probe.connect()
        await probe.open("", "", TIMEOUT)
        await probe.close()
    await asyncio.sleep(1.0)  # the server notices the closed sockets
    return sum(kernel.rss_mb(p) for p in pids)


def cell(value: float, digits: int = 1) -> str:
    return "nan" if value != value else f"{value:,.{digits}f}"


WHAT_PLAYS = {"build": "the adding problem's LSTM on Build & Train",
              "bert-gpt": "BERT and GPT's two transformers (the contextual-embeddings lesson), steps a run"}


def report(rows: list[dict], baseline: float, page: str = PAGE) -> str:
    header = ["sessions (tabs + clients)", "processes", "failed", "page open p50 s", "rerun p50 / p95 / max s",
              "steps/s total", "vs one session", "slowest / fastest", "fairness", "server cores",
              "clients' cores", "RSS start / peak / after MB", "threads after", "idle cores after"]
    lines = []
    for r in rows:
        lines.append([
            f"{r['sessions']} ({r['browsers']} + {r['sessions'] - r['browsers']})", str(r["processes"]),
            str(r["failed"]), cell(r["open p50"], 2),
            f"{cell(r['rerun p50'], 2)} / {cell(r['rerun p95'], 2)} / {cell(r['rerun max'], 2)}",
            cell(r["total"]), cell(r["total"] / baseline if baseline else float("nan"), 2),
            f"{cell(r['slowest'])} / {cell(r['fastest'])}",
            cell(r["fairness"], 2), cell(r["server cores"], 2),
            f"{cell(r['client cores'], 2)} + chromium {cell(r['chromium cores'], 2)}",
            f"{cell(r['rss start'], 0)} / {cell(r['rss peak'], 0)} / {cell(r['rss after'], 0)}",
            str(r["threads after"]), cell(r["idle cores after"], 3),
        ])
    out = table(f"A class on one server: {WHAT_PLAYS[page]}, every session playing",
                header, lines)
    for r in rows:
        for why in r["why"]:
            out += f"\n- {r['sessions']} sessions, failed: {why}"
    return out


async def measure(args) -> str:
    rows: list[dict] = []
    async with AsyncExitStack() as stack:
        browser = None
        if args.browsers:
            from playwright.async_api import async_playwright

            playwright = await stack.enter_async_context(async_playwright())
            browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for sessions in args.sessions:
            options = [word for option in args.option for word in ("--" + option.split("=")[0], option.split("=")[1])]
            if args.trace:
                trace_to(args.trace, sessions)
            started = serve("--server.disconnectedSessionTTL", str(args.ttl), *options) if args.url is None else None
            with started or nullcontext() as app:
                url, pids = (app.url, [app.pid]) if app is not None else (args.url, args.pid)
                await warm_up(url, page=args.page)
                row = await run_class(url, pids, sessions, args.browsers, args.seconds, browser, args.page)
                row["rss after"] = await expire_sessions(url, pids, args.ttl)
                rows.append(row)
                print(report(rows[-1:], args.baseline or rows[0]["total"], args.page), flush=True)
    return report(rows, args.baseline or rows[0]["total"], args.page)


def trace_to(folder: Path, sessions: int) -> None:
    """The server about to start writes folder/server-N.tsv (load_trace.py) and every protocol client
    writes folder/clients-N.tsv: one line an event, wall-clock time first, so the two can be merged
    with `sort -n`."""
    folder.mkdir(parents=True, exist_ok=True)
    site = Path(__file__).resolve().parent / "load_trace_site"
    if str(site) not in os.environ.get("PYTHONPATH", "").split(os.pathsep):
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))
    os.environ["UNROLLED_LOAD_TRACE"] = str(folder / f"server-{sessions}.tsv")
    load_client.TRACE = open(folder / f"clients-{sessions}.tsv", "a", buffering=1)  # noqa: SIM115


async def warm_up(url: str, cookie: str | None = None, page: str = PAGE) -> None:
    """One tab opens the lesson and trains a moment, then leaves: the server's imports and first
    figures are done before the class arrives, as on a server the teacher opened first (`cookie`:
    the proxy's, to pick the process warmed)."""
    tab = Client(url, cookie)
    await tab.connect()
    plays = playing(page)
    await tab.open(plays.page, plays.query, TIMEOUT)
    await tab.press("Play", TIMEOUT)
    await asyncio.sleep(2.0)  # a moment of training, not a wait for an event
    await tab.press("Pause", TIMEOUT)
    await tab.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=lambda s: [int(n) for n in s.split(",")], default=[1, 10, 30])
    parser.add_argument("--browsers", type=int, default=1, help="how many of each class's sessions are chromium tabs")
    parser.add_argument("--seconds", type=float, default=40.0, help="the window every session trains in")
    parser.add_argument("--baseline", type=float, help="one session's steps/s measured before, for the 'vs one "
                        "session' column (else the first class measured: --sessions 1,...)")
    parser.add_argument("--ttl", type=int, default=10, help="server.disconnectedSessionTTL for the app started")
    parser.add_argument("--option", action="append", default=[], metavar="SECTION.OPTION=VALUE",
                        help="a streamlit option for the app started (repeatable), e.g. runner.postScriptGC=true")
    parser.add_argument("--trace", type=Path, metavar="DIR", help="write DIR/server-N.tsv (the app started: each "
                        "session's rerun requests, runs started and ended, lifecycle messages sent; load_trace.py) "
                        "and DIR/clients-N.tsv (what each protocol client sent and received)")
    parser.add_argument("--page", choices=sorted(WHAT_PLAYS), default=PAGE, help="what every session plays")
    parser.add_argument("--url", help="an app already running (else one is started)")
    parser.add_argument("--pid", type=lambda s: [int(n) for n in s.split(",")], help="its process id(s)")
    args = parser.parse_args()
    print(f"load average {load_average()}", flush=True)
    print(asyncio.run(measure(args)))


if __name__ == "__main__":
    main()
