"""The Embeddings page in a real chromium at a projector's 1024x768: word2vec's steps/s while it plays
there (read off its own progress bar), against the same run's plain rate in this process
(EmbeddingRun.advance, one thread as the app); and how long the page takes to answer a word typed
into "Nearest words" while paused (a whole-page run: every read-out and the projection again).

    PYTHONPATH=.:benchmarks python benchmarks/embeddings_page.py [--quick]   # 30 s of play (--quick: 10 s)
"""
from __future__ import annotations

import re
import statistics
import sys
import time
from pathlib import Path

from app_server import serve
from playwright.sync_api import sync_playwright
from timing import machine, paragraph, replace_section, run_alone, table

from app.session.embeddings import EmbeddingRun

README = Path(__file__).resolve().parent / "README.md"
HEADING = "## 17. The Embeddings page: word2vec playing on its page"
PROGRESS = re.compile(r"step ([\d,]+) of [\d,]+")
VIEWPORT = {"width": 1024, "height": 768}
WORDS = ("father", "morning", "letter", "mother", "sister")  # typed in turn, each a whole-page run


def plain_rate(seconds: float) -> float:
    """Steps/s of EmbeddingRun.advance alone, as a page's tick calls it, for `seconds`."""
    embedding = EmbeddingRun()
    start, steps = time.perf_counter(), 0
    while time.perf_counter() - start < seconds:
        with embedding.lock:
            embedding.advance(10**9)
        steps += 1
    return steps / (time.perf_counter() - start)


def on_page(seconds: float) -> tuple[float, list[float]]:
    """(steps/s while playing, seconds per typed word's rerun), in chromium against a fresh server."""
    sys.path.insert(0, str(README.parents[1]))
    from tests.browser.conftest import CHROMIUM_ARGS, wait_for_app  # the browser tests' own launch and wait

    with serve() as server, sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        page = browser.new_page(viewport=VIEWPORT)
        page.goto(f"{server.url}/embeddings")
        wait_for_app(page)
        main = page.locator('[data-testid="stMain"]')
        steps = page.get_by_label("Train up to step", exact=True)
        steps.fill("100000")
        steps.press("Enter")
        wait_for_app(page)
        page.get_by_role("button", name="Play", exact=True).click()
        page.wait_for_function("() => /step [1-9][\\d,]* of/.test(document.querySelector('[data-testid=\"stMain\"]')"
                               ".innerText)")
        first, start = read_step(main.inner_text()), time.perf_counter()
        page.wait_for_timeout(seconds * 1000)  # the measurement's window: the page plays on its own meanwhile
        rate = (read_step(main.inner_text()) - first) / (time.perf_counter() - start)
        page.get_by_role("button", name="Pause", exact=True).click()
        wait_for_app(page)
        times = []
        box = page.get_by_label("Word", exact=True)
        for word in WORDS:
            box.fill(word)
            began = time.perf_counter()
            box.press("Enter")
            page.locator('[data-testid="stCaptionContainer"]', has_text=f"nearest to '{word}'").wait_for()
            wait_for_app(page)
            times.append(time.perf_counter() - began)
        browser.close()
    return rate, times


def read_step(text: str) -> int:
    return int(PROGRESS.search(text)[1].replace(",", ""))


def run(quick: bool) -> str:
    seconds = 10 if quick else 30
    plain = plain_rate(seconds)
    rate, times = on_page(seconds)
    rows = [["plain EmbeddingRun.advance, this process", f"{plain:,.0f}", "100%", ""],
            ["playing on the page (chromium, 1024x768)", f"{rate:,.0f}", f"{rate / plain:.0%}",
             f"{statistics.median(times):.2f} s (max {max(times):.2f})"]]
    return "\n".join([
        HEADING, "",
        paragraph(f"Measured {time.strftime('%Y-%m-%d')} on {machine()}. The default settings (50 dimensions, a "
                  f"window of 5, 5 noise words, 256 centre words a step), {seconds} s of play each. The rerun: a "
                  f"word typed into Nearest words while paused, {len(WORDS)} words, until the page has drawn "
                  "its neighbours."), "",
        table("word2vec on the Embeddings page", ["", "steps/s", "share of plain", "rerun after typing a word"], rows),
    ])


if __name__ == "__main__":
    def write(quick: bool) -> str:
        section = run(quick)
        replace_section(README, HEADING, section)
        return section

    run_alone(write, "10 s of play instead of 30")
