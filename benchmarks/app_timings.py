"""The app: AppTest timings of each page's first run and of a rerun after moving its main widget
(a rerun should redraw, not retrain or re-record), and a real browser's cold start to the first
idle render, the way tests/browser/conftest.py drives them.

    PYTHONPATH=. python benchmarks/app_timings.py [--quick]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from timing import table

from app import pages
from app.widgets import state

REPO = Path(__file__).resolve().parents[1]
MAIN = str(REPO / "app" / "main.py")

# Each page and what its reruns move, in turn: (widget kind, key, value); None is a rerun with no change.
PAGES = {
    "home": [None],
    "build": [None],
    "unroll": [("slider", state.UNROLL_T, 25)],  # the adding preset has T=50
    "gates": [("number_input", state.PROBE_INDEX, 1), ("number_input", state.PROBE_INDEX, 0)],
    "gradients": [("number_input", state.PROBE_INDEX, 1), ("number_input", state.PROBE_INDEX, 0)],
    "compare": [None],
}
TARGET = 0.25  # a rerun at most this share of the page's first run
# First idle render of the home page: the script has run to its end and drawn the title.
HOME_DRAWN = """() => {
    const app = document.querySelector('[data-testid="stApp"]');
    const title = document.querySelector('[data-testid="stMain"] h1');
    return app !== null && app.getAttribute('data-test-script-state') === 'notRunning'
        && title !== null && title.textContent.includes('Unrolled');
}"""


def timed(fn) -> tuple[float, object]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


class Counted:
    """engine.record wrapped to count its calls (the pages call it as engine.record, through the Lab)."""

    def __init__(self):
        import engine

        self.engine, self.record, self.calls = engine, engine.record, 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        return self.record(*args, **kwargs)

    def __enter__(self):
        self.engine.record = self
        return self

    def __exit__(self, *exc):
        self.engine.record = self.record


def page_times(page: str) -> list[tuple]:
    """A fresh AppTest session opened straight onto the page (its first run makes the Lab and
    records what the page shows), then one rerun per move of PAGES[page]. Returns
    (move, first run s, rerun s, recordings made in the rerun, training steps in the rerun)."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(MAIN, default_timeout=60).switch_page(pages.PATHS[page])
    first, at = timed(at.run)
    assert not at.exception, [e.value for e in at.exception]
    results = []
    for move in PAGES[page]:
        lab = at.session_state[state.LAB]
        steps = lab.trainer.steps_done
        with Counted() as records:
            rerun, at = timed(at.run if move is None else getattr(at, move[0])(key=move[1]).set_value(move[2]).run)
        assert not at.exception, [e.value for e in at.exception]
        results.append((move, first, rerun, records.calls, lab.trainer.steps_done - steps))
    return results


def apptest_table(repeats: int) -> str:
    page_times("home")  # the process's first session imports the pages' modules (plotly...): not counted
    rows = []
    for page in PAGES:
        sessions = [page_times(page) for _ in range(repeats)]
        for k, (move, *_, records, steps) in enumerate(sessions[0]):
            first = statistics.median(s[k][1] for s in sessions)
            rerun = statistics.median(s[k][2] for s in sessions)
            moved = "nothing (plain rerun)" if move is None else f"{move[1]} -> {move[2]}"
            ratio = f"{rerun / first:.2f}" + ("" if rerun / first <= TARGET else " (missed)")
            rows.append([page, first, moved, rerun, ratio, records, steps])
    return table(f"The app under AppTest: a fresh session opened on each page, then reruns (median of {repeats})",
                 ["page", "first run s", "rerun after moving", "rerun s", f"rerun / first (target <= {TARGET})",
                  "recordings in rerun", "training steps in rerun"], rows)


def cold_start(browser) -> tuple[float, float, float]:
    """(server up, first idle render, warm second load) in seconds, for a new `streamlit run`.
    'Server up' counts from the process start to /_stcore/health; the first render from then
    (the first session imports torch and makes its Lab); the second load is another tab."""
    from tests.browser.conftest import SCRIPT_TIMEOUT, VIEWPORT, _free_port, _health

    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    cmd = [sys.executable, "-m", "streamlit", "run", "app/main.py", "--server.headless", "true",
           "--server.port", str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false"]
    with tempfile.TemporaryFile() as log:  # a file, not a pipe: a pipe nobody reads blocks the server
        start = time.perf_counter()
        server = subprocess.Popen(cmd, cwd=REPO, stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        try:
            while _health(url) != "ok":
                if server.poll() is not None or time.perf_counter() - start > 60:
                    log.seek(0)
                    raise RuntimeError(f"streamlit did not start:\n{log.read().decode(errors='replace')}")
                time.sleep(0.05)
            up = time.perf_counter() - start
            loads = []
            for _ in range(2):
                context = browser.new_context(viewport=VIEWPORT)
                page = context.new_page()
                begun = time.perf_counter()
                page.goto(url)
                page.wait_for_function(HOME_DRAWN, timeout=SCRIPT_TIMEOUT, polling=50)
                loads.append(time.perf_counter() - begun)
                context.close()
        finally:
            server.terminate()
            server.wait(timeout=10)
    return up, loads[0], loads[1]


def browser_table(repeats: int) -> str:
    from playwright.sync_api import sync_playwright

    from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS

    if not os.access(CHROMIUM, os.X_OK):
        return f"### Browser cold start\n\nskipped: {CHROMIUM} is missing (apt-get install chromium)\n"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            starts = [cold_start(browser) for _ in range(repeats)]
        finally:
            browser.close()
    up, first, warm = (statistics.median(s[k] for s in starts) for k in range(3))
    return table(f"Real browser (Debian chromium via Playwright), home page, median of {repeats} server starts",
                 ["server process start to /_stcore/health s", "first load to idle render s", "cold start total s",
                  "second tab to idle render s"], [[up, first, up + first, warm]])


def run(quick: bool) -> str:
    repeats = 1 if quick else 3
    return apptest_table(repeats) + "\n" + browser_table(1 if quick else 2)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="one session per page, one server start")
    args = parser.parse_args()
    print(run(args.quick))


if __name__ == "__main__":
    main()
