"""A class with its teacher's board (issue 32): N students on two app processes behind nginx
(deploy/serve_class.py), every one playing the load harness's lesson (load_lesson.py), the board open
in a teacher's tab. Measured, each class of students run twice over, with the board and without a
class at all (serve_class.py --no-board), alternated so that the machine's drift falls on both:

- the board's lag behind a change: each student pauses once and plays again at its own moment in
  the window; from the end of the student's page run that made the change (and from the click) to
  the first board table that shows it (p50, p95). And how far the board's step counts trail the
  student's own page: for every row of every table, the time since the page first showed a higher
  count (how long that number had been out of date);
- publishing's cost: the class's steps/s in total with the board against without a class;
- a killed process: one app process is killed (SIGKILL) after the window; the seconds until the
  board shows every one of its students "disconnected", and the other process's students' steps/s
  in the 10 s after against the 10 s before;
- the store: class.db with its WAL, sampled every second, and its status rows at the end.

Students and the teacher are protocol clients (load_client.py); the proxy's cookie pins student i to
process i mod 2 and the teacher to the second, so the first can be killed under the board.

    PYTHONPATH=.:benchmarks python benchmarks/load_board.py --sessions 60 --rounds 2 --seconds 30
"""
from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import redis
from load import TIMEOUT, WARM, Student, attempt, sample, warm_up
from load_client import Client
from load_lesson import CONTROL, FAR, PAGE, lesson_query
from timing import load_average, table

REPO = Path(__file__).resolve().parents[1]
LINK = re.compile(r"^serve_class: the link opens the board once; .* the teacher key (\S+)$", re.MULTILINE)
SERVING = "serve_class: serving"
STUDENT = re.compile(r"s\d\d")  # the names the students type (name())
BACKEND = "unrolled_backend"  # the proxy's cookie: a process's index (deploy/nginx.conf.template)
PAUSE_FOR = 3.0  # s each student stays paused in the window
AFTER_KILL = 10.0  # s over which the survivors' rate is compared, before and after the kill
DISCONNECTED_WITHIN = 30.0  # s the harness watches the board after the kill


@dataclass
class Served:
    url: str
    pids: list[int]  # one per app process, in the proxy's order
    key: str | None
    run_dir: Path


@dataclass
class Change:
    student: str
    state: str  # what the board should show next
    sent: float
    shown: float  # the student's page run that made it ended


@dataclass
class Measured:
    board: bool
    total: float = float("nan")
    failed: list[str] = field(default_factory=list)
    lag_ack: list[float] = field(default_factory=list)
    lag_click: list[float] = field(default_factory=list)
    unseen: int = 0
    steps_lag: list[float] = field(default_factory=list)
    ages: list[float] = field(default_factory=list)  # "seen" of every row in the window: each status's age
    board_busy: float = float("nan")  # the share of the window the board's fragments were running (training waits)
    table_gaps: list[float] = field(default_factory=list)  # s between two tables reaching the teacher's tab
    round_gaps: list[float] = field(default_factory=list)  # s between the publishers' rounds, as the store saw them
    after_kill: list[str] = field(default_factory=list)  # per table after the kill: when, how many shown gone
    store_peak: int = 0
    store_end: int = 0
    rows_end: int = 0
    disconnected_after: float | None = None
    killed_students: int = 0
    survivors_before: float = float("nan")
    survivors_after: float = float("nan")
    tables: int = 0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def serving(board: bool, store: str | None, processes: int = 2):
    """deploy/serve_class.py on 127.0.0.1 (with a class on `store`, or --no-board), until SIGTERM after."""
    port, *app_ports = [free_port() for _ in range(1 + processes)]
    run_dir = Path(tempfile.mkdtemp(prefix="unrolled-load-board-"))
    out = run_dir / "serve_class.out"
    cmd = [sys.executable, "deploy/serve_class.py", "--processes", str(processes), "--port", str(port),
           "--listen", "127.0.0.1", "--app-ports", *map(str, app_ports), "--run-dir", str(run_dir),
           *([] if board else ["--no-board"]), *(["--store", store] if board and store else [])]
    with open(out, "wb") as f:
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 300
        while SERVING not in (text := out.read_text(errors="replace")) or (board and LINK.search(text) is None):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"serve_class.py did not serve:\n{text}")
            time.sleep(0.2)  # polling the script's output for its line
        key = LINK.search(text)[1] if board else None
        pids = [int((run_dir / f"app-{p}.pid").read_text()) for p in app_ports]
        yield Served(f"http://127.0.0.1:{port}", pids, key, run_dir)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        shutil.rmtree(run_dir, ignore_errors=True)


def store_bytes(run_dir: Path, store: str | None) -> int:
    """class.db with its WAL and shared memory, or the Redis server's used memory."""
    if store is not None and store.startswith("redis"):
        with redis.Redis.from_url(store) as client:
            return int(client.info("memory")["used_memory"])
    return sum(f.stat().st_size for f in run_dir.glob("class.db*"))


def publishes(run_dir: Path) -> dict[float, int]:
    """The store's statuses grouped by when each was last written: a publisher's round writes all of
    its process's at one time, a nudge one (SQLite; empty before the file exists)."""
    path = run_dir / "class.db"
    if not path.exists():
        return {}
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        return dict(db.execute("SELECT seen, count(*) FROM status GROUP BY seen").fetchall())


def round_gaps(writes: set[tuple[float, int]]) -> list[float]:
    """Seconds between one round and the next: the writes of 10 statuses or more, in time order (the
    two processes' rounds interleave, so each gap is to the next round of either)."""
    rounds = sorted(seen for seen, count in writes if count >= 10)
    return [b - a for a, b in zip(rounds, rounds[1:])]


def status_rows(run_dir: Path, store: str | None) -> int:
    """The store's entries: SQLite's status rows, or the Redis database's keys."""
    if store is not None and store.startswith("redis"):
        with redis.Redis.from_url(store) as client:
            return int(client.dbsize())
    path = run_dir / "class.db"
    if not path.exists():
        return 0
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        return db.execute("SELECT count(*) FROM status").fetchone()[0]


async def open_board(url: str, key: str) -> Client:
    teacher = Client(url, f"{BACKEND}=1")
    await teacher.connect()
    await teacher.open("board", "", TIMEOUT)
    await teacher.type("Teacher key", key, TIMEOUT)
    await teacher.press("Open the board", TIMEOUT)
    deadline = time.perf_counter() + TIMEOUT
    while not teacher.tab.tables:  # the board's fragment draws its table within its first run
        if time.perf_counter() > deadline or teacher.tab.errors:
            raise SystemExit(f"the board showed no table: {teacher.tab.errors}")
        await asyncio.sleep(0.1)  # polling what the client received
    return teacher


def name(i: int) -> str:
    return f"s{i:02d}"


async def pause_and_play(student: Student, who: str, at: float, changes: list[Change]) -> None:
    await asyncio.sleep(max(0.0, at - time.perf_counter()))
    for label, state in (("Pause", "paused"), ("Play", "playing")):
        sent = time.perf_counter()
        took = await student.tab.press(label, TIMEOUT)
        changes.append(Change(who, state, sent, sent + took))
        if label == "Pause":
            await asyncio.sleep(PAUSE_FOR)  # the student's pause, part of the lesson's script


def first_shown(tables: list[tuple[float, list[dict]]], change: Change) -> float | None:
    return next((t for t, rows in tables if t >= change.sent
                 and any(r["name"] == change.student and r["state"] == change.state for r in rows)), None)


def steps_lags(tables, students: list[Student], w0: float, w1: float) -> list[float]:
    """For each student's row in each table of the window: how long the board's step count had been
    out of date, i.e. seconds since the student's page first showed a higher count (0 while the page
    showed none higher: the publisher reads the lab between steps, often ahead of the page's draw)."""
    pages = {name(i): s.tab.tab.step_times for i, s in enumerate(students)}
    lags = []
    for t, rows in tables:
        if not w0 <= t <= w1:
            continue
        for row in rows:
            if row["name"] not in pages:
                continue  # a warm-up tab's row
            passed = next((when for when, steps in pages.get(row["name"], []) if steps > row["steps"]), None)
            lags.append(max(0.0, t - passed) if passed is not None else 0.0)
    return lags


def steps_between(student: Student, a: float, b: float) -> float:
    before, after = student.steps_at(a), student.steps_at(b)
    return float("nan") if before is None or after is None else after - before


async def run_class(board: bool, sessions: int, seconds: float, kill: bool, store: str | None) -> Measured:
    measured = Measured(board)
    with serving(board, store) as served:
        await asyncio.gather(*(warm_up(served.url, f"{BACKEND}={b}") for b in range(len(served.pids))))
        teacher = await open_board(served.url, served.key) if board else None
        students = [Student(Client(served.url, f"{BACKEND}={i % 2}")) for i in range(sessions)]

        async def arrive(i: int, student: Student) -> None:
            await attempt(student, "connect", student.tab.connect())
            await attempt(student, "open the lesson", student.tab.open(PAGE, lesson_query(), TIMEOUT))
            if board:
                await attempt(student, "type a name", student.tab.type("Your name on the class board", name(i),
                                                                         TIMEOUT))
            await attempt(student, f"set {CONTROL}", student.tab.commit(CONTROL, FAR, TIMEOUT))
            await attempt(student, "press Play", student.tab.press("Play", TIMEOUT))

        await asyncio.gather(*(arrive(i, s) for i, s in enumerate(students)))
        w0 = time.perf_counter() + WARM
        w1 = w0 + seconds
        sizes = []

        writes: set[tuple[float, int]] = set()

        async def watch_store(until: float) -> None:
            while time.perf_counter() < until:
                sizes.append(store_bytes(served.run_dir, store))
                writes.update(publishes(served.run_dir).items())
                await asyncio.sleep(0.5)  # the store's size and its writes, sampled

        sampler = asyncio.create_task(sample(students, w1 + 2 * AFTER_KILL + 1))
        watcher = asyncio.create_task(watch_store(w1))
        changes: list[Change] = []
        span = seconds - PAUSE_FOR - 4.0  # every student's pause and play fit in the window
        await asyncio.gather(*(attempt(s, "pause and play", pause_and_play(s, name(i), w0 + (i + 0.5) / sessions * span,
                                                                             changes))
                               for i, s in enumerate(students)))
        await asyncio.sleep(max(0.0, w1 - time.perf_counter()))
        await watcher
        measured.failed = [s.failed for s in students if s.failed]
        rates = [steps_between(s, w0, w1) / seconds for s in students if not s.failed]
        measured.total = sum(r for r in rates if r == r)
        if teacher is not None:
            tables = teacher.tab.tables
            measured.tables = sum(w0 <= t <= w1 for t, _ in tables)
            for change in changes:
                seen = first_shown(tables, change)
                if seen is None:
                    measured.unseen += 1
                else:
                    measured.lag_ack.append(max(0.0, seen - change.shown))
                    measured.lag_click.append(seen - change.sent)
            measured.steps_lag = steps_lags(tables, students, w0, w1)
            measured.ages = [row["seen"] for t, rows in tables if w0 <= t <= w1 for row in rows
                             if STUDENT.fullmatch(row["name"])]  # not the warm-up tabs' rows, gone before
            arrived = [t for t, _ in tables if w0 <= t <= w1]
            board_runs = [r for r in teacher.tab.runs if r.fragment and r.ended is not None and w0 <= r.started <= w1]
            measured.board_busy = sum(r.ended - r.started for r in board_runs) / seconds
            measured.table_gaps = [b - a for a, b in zip(arrived, arrived[1:])]
            measured.store_peak = max(sizes, default=0)
            measured.round_gaps = round_gaps(writes)
            if kill:
                await kill_one(served, students, teacher, measured)
            measured.store_end = store_bytes(served.run_dir, store)
            measured.rows_end = status_rows(served.run_dir, store)
        sampler.cancel()
        await asyncio.gather(*(s.tab.close() for s in students), *([teacher.close()] if teacher else []))
    return measured


async def kill_one(served: Served, students: list[Student], teacher: Client, measured: Measured) -> None:
    """SIGKILL the first app process (the teacher's tab is on the second); how long until the board
    shows every student of the first as disconnected, and what the second's students train meanwhile."""
    victims = {name(i) for i in range(0, len(students), 2)}
    survivors = [s for i, s in enumerate(students) if i % 2 == 1]
    killed_at = time.perf_counter()
    os.kill(served.pids[0], signal.SIGKILL)
    measured.killed_students = len(victims)
    while time.perf_counter() - killed_at < max(DISCONNECTED_WITHIN, AFTER_KILL):
        await asyncio.sleep(0.2)  # polling what the teacher's client received
        if measured.disconnected_after is None:
            for t, rows in teacher.tab.tables:
                if t > killed_at and victims <= {r["name"] for r in rows if r["state"] == "disconnected"}:
                    measured.disconnected_after = t - killed_at
                    break
    for t, rows in teacher.tab.tables:
        if t > killed_at:
            gone = [r for r in rows if r["name"] in victims]
            measured.after_kill.append(f"{t - killed_at:.1f} s: {sum(r['state'] == 'disconnected' for r in gone)} of "
                                       f"{len(gone)} disconnected, seen {min((r['seen'] for r in gone), default=0):.1f}"
                                       f"-{max((r['seen'] for r in gone), default=0):.1f} s ago")
        if measured.disconnected_after is not None and time.perf_counter() - killed_at > AFTER_KILL:
            break
    measured.survivors_before = sum(steps_between(s, killed_at - AFTER_KILL, killed_at) for s in survivors) / AFTER_KILL
    measured.survivors_after = sum(steps_between(s, killed_at, killed_at + AFTER_KILL) for s in survivors) / AFTER_KILL


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def cell(value: float | None, digits: int = 2) -> str:
    return "—" if value is None or value != value else f"{value:,.{digits}f}"


def report(rows: list[tuple[int, Measured]], sessions: int) -> str:
    header = ["round", "class", "failed", "steps/s total", "board lag from the page run p50 / p95 / max s",
              "from the click p50 / p95 s", "changes unseen", "steps out of date p50 / p95 s",
              "status age p50 / p95 s", "rounds' gaps p50 / p95 / max s",
              "board tables in the window (gaps p95 / max s)", "board's runs' share of the window",
              "store peak / end KB", "status rows (Redis: keys)"]
    lines = []
    for round_no, m in rows:
        lines.append([str(round_no), "board" if m.board else "no class", str(len(m.failed)), cell(m.total, 1),
                      f"{cell(pct(m.lag_ack, .5))} / {cell(pct(m.lag_ack, .95))} / {cell(max(m.lag_ack, default=None))}"
                      if m.board else "—",
                      f"{cell(pct(m.lag_click, .5))} / {cell(pct(m.lag_click, .95))}" if m.board else "—",
                      str(m.unseen) if m.board else "—",
                      f"{cell(pct(m.steps_lag, .5))} / {cell(pct(m.steps_lag, .95))}" if m.board else "—",
                      f"{cell(pct(m.ages, .5))} / {cell(pct(m.ages, .95))}" if m.board else "—",
                      f"{cell(pct(m.round_gaps, .5))} / {cell(pct(m.round_gaps, .95))} / "
                      f"{cell(max(m.round_gaps, default=None))}" if m.board else "—",
                      f"{m.tables} ({cell(pct(m.table_gaps, .95))} / {cell(max(m.table_gaps, default=None))})"
                      if m.board else "—",
                      cell(m.board_busy, 3) if m.board else "—",
                      f"{m.store_peak / 1024:,.0f} / {m.store_end / 1024:,.0f}" if m.board else "—",
                      str(m.rows_end) if m.board else "—"])
    out = table(f"{sessions} students on two processes, the board open in a teacher's tab or no class", header, lines)
    boards = [m for _, m in rows if m.board]
    if len(boards) > 1:
        lags = [lag for m in boards for lag in m.lag_ack]
        out += (f"\n\nevery class with the board together: lag from the page run p50 / p95 / max "
                f"{cell(pct(lags, .5))} / {cell(pct(lags, .95))} / {cell(max(lags, default=None))} s over {len(lags)} "
                f"changes, {sum(m.unseen for m in boards)} unseen")
    with_board = [m.total for _, m in rows if m.board]
    without = [m.total for _, m in rows if not m.board]
    if with_board and without:
        by_round: dict[int, dict[bool, float]] = {}
        for round_no, m in rows:
            by_round.setdefault(round_no, {})[m.board] = m.total
        ratios = [pair[True] / pair[False] for pair in by_round.values() if len(pair) == 2]
        out += (f"\n\nsteps/s with the board / without a class: {statistics.mean(with_board):.1f} / "
                f"{statistics.mean(without):.1f} = {statistics.mean(with_board) / statistics.mean(without):.3f}"
                f" (each round's: {', '.join(f'{r:.2f}' for r in ratios)})")
    for _, m in rows:
        if m.disconnected_after is not None or m.killed_students:
            out += (f"\n\nkilled one process ({m.killed_students} students): all shown disconnected after "
                    f"{cell(m.disconnected_after)} s; the other process's students {cell(m.survivors_before, 1)} "
                    f"steps/s in the {AFTER_KILL:.0f} s before, {cell(m.survivors_after, 1)} after")
            out += "\n" + "; ".join(m.after_kill[:20])
        for why in sorted(set(m.failed)):
            out += f"\n- {'board' if m.board else 'no class'}, failed: {why}"
    return out


async def measure(args) -> str:
    rows = []
    for round_no in range(1, args.rounds + 1):
        order = (False, True) if round_no % 2 else (True, False)  # alternated: the drift falls on both
        order = (True,) if args.only_board else order
        for board in order:
            kill = board and round_no == args.rounds
            measured = await run_class(board, args.sessions, args.seconds, kill, args.store)
            rows.append((round_no, measured))
            print(report(rows[-1:], args.sessions), flush=True)
    return report(rows, args.sessions)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=2, help="each a class with the board and one without")
    parser.add_argument("--seconds", type=float, default=30.0, help="the window every session trains in")
    parser.add_argument("--store", metavar="URL", help="the class's store (serve_class.py --store), e.g. a Redis "
                        "server's redis://127.0.0.1:6379/0; default: SQLite (its size and rounds are read from the "
                        "file)")
    parser.add_argument("--only-board", action="store_true", help="classes with the board alone (no comparison)")
    args = parser.parse_args()
    print(f"load average {load_average()}", flush=True)
    print(asyncio.run(measure(args)))


if __name__ == "__main__":
    main()
