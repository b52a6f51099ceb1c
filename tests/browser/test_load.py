"""The load harness's small default (benchmarks/load.py runs it at 1, 10 and 30 sessions): two
students on one server of their own open the same lesson at once, press Play, both train, read
the training figure, move a control while both train, pause and leave; the server is then back
to the threads it had before they came, so no training loop was left for a closed tab (a tick
runs in a script thread, which ends with its run)."""
import asyncio
import time
from concurrent.futures import ThreadPoolExecutor

from benchmarks.app_server import serve, threads
from benchmarks.load_client import Client
from benchmarks.load_lesson import CONTROL, FAR, PAGE, lesson_query

TIMEOUT = 120.0  # s, for one run of the page under the suite's load
STUDENTS = 2


async def until(condition, what: str) -> None:
    deadline = time.perf_counter() + TIMEOUT
    while not condition():
        assert time.perf_counter() < deadline, f"not within {TIMEOUT:.0f} s: {what}"
        await asyncio.sleep(0.05)  # polls the condition; the clients' frames arrive meanwhile


async def a_class(url: str, pid: int) -> None:
    warm = Client(url)  # the server's imports, done before the class arrives
    await warm.connect()
    await warm.open(PAGE, lesson_query(), TIMEOUT)
    await warm.close()
    baseline = threads(pid)

    students = [Client(url) for _ in range(STUDENTS)]
    for student in students:
        await student.connect()
    await asyncio.gather(*(s.open(PAGE, lesson_query(), TIMEOUT) for s in students))
    await asyncio.gather(*(s.commit(CONTROL, FAR, TIMEOUT) for s in students))
    await asyncio.gather(*(s.press("Play", TIMEOUT) for s in students))
    await until(lambda: all((s.tab.steps or 0) >= 20 for s in students), "both students trained 20 steps")
    assert all(s.tab.points() > 0 for s in students), "a training figure with no points"
    trained = [s.tab.steps for s in students]
    await asyncio.gather(*(s.commit(CONTROL, FAR - 1, TIMEOUT) for s in students))
    await until(lambda: all(s.tab.steps > before for s, before in zip(students, trained)),
                "both went on training after the control moved")
    await asyncio.gather(*(s.press("Pause", TIMEOUT) for s in students))
    stopped = [s.tab.steps for s in students]
    for student in students:
        assert not student.tab.errors, student.tab.errors
    await asyncio.gather(*(s.close() for s in students))
    await until(lambda: threads(pid) <= baseline, f"the server back to its {baseline} threads after both left")
    assert all(steps >= 20 for steps in stopped), stopped


def test_two_students_train_at_once_and_leave_nothing_running():
    with serve("--server.disconnectedSessionTTL", "2") as app, ThreadPoolExecutor(1) as own_loop:
        # A thread of its own for the clients' event loop: the browser tests' sync Playwright keeps
        # one running in this thread, where asyncio.run refuses to start another.
        own_loop.submit(asyncio.run, a_class(app.url, app.pid)).result()
