"""Unroll's "Play through time" and its time slider in a real chromium (issue 12, item 5: 1 to 1.7 s
a step against a target of 0.6 s, and 25 arrow presses on the slider that landed on 23).

One tab at 1280x900 per case, a fresh session on the page's link. Play: press "Play through time"
and read the framed step ("At step t = N") every 20 ms until it stops at the last step or `play`
seconds pass; a step's time is the interval between two changes of the shown step, and a tick's
length is its fragment run's, from its `new_session` to its `script_finished` as the tab receives
them. Arrows: from t = 0, focus the slider and press ArrowRight 25 times, `gap` ms apart; the
presses landed are the step shown once the page has settled.

    PYTHONPATH=. python benchmarks/unroll_speed.py [--quick]
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import time

import torch
from lesson_speed import Runs, server
from timing import load_average, table

STEP = re.compile(r"At step t = (\d+) the network reads")
PRESSES = 25
GAPS_MS = (250, 100)  # a student stepping through, and one holding the key down (chromium repeats ~30 ms)
CASES = {  # what a student opens: the default network, and a two-way one that draws one figure more
    "adding, LSTM 64 units, T = 50": "unroll",
    "adding, bidirectional LSTM 64 units, T = 50": "unroll?bidirectional=true",
}


def shown_step(page) -> int:
    match = STEP.search(page.locator('[data-testid="stMain"]').inner_text())
    return int(match.group(1)) if match else -1


def play(page, runs: Runs, seconds: float) -> dict:
    """Press Play through time; the seconds between two steps shown, and the ticks' lengths."""
    steps = [(time.perf_counter(), shown_step(page))]
    page.get_by_role("button", name="Play through time").click()
    pressed = time.perf_counter()
    page.get_by_role("button", name="Pause", exact=True).wait_for()  # the page's run after the click
    while time.perf_counter() - pressed < seconds:
        page.wait_for_timeout(20)
        now = shown_step(page)
        if now != steps[-1][1]:
            steps.append((time.perf_counter(), now))
        if page.get_by_role("button", name="Play through time").count():  # stopped at the last step
            break
    if page.get_by_role("button", name="Pause", exact=True).count():
        page.get_by_role("button", name="Pause", exact=True).click()
    moved = steps[1:]  # from the first step shown after the press
    gaps = [b[0] - a[0] for a, b in zip(moved, moved[1:])]
    _, tick = runs.ticks(pressed, time.perf_counter())
    return {"steps": len(moved), "per step": statistics.median(gaps) if gaps else float("nan"),
            "slowest": max(gaps) if gaps else float("nan"), "tick": tick}


def settled(page) -> bool:
    """Whether the page's script finished and stayed so (under load a late run may still be going
    after wait_for_app's settle: it is asked up to three times, as lesson_speed does). False when
    it kept running for SCRIPT_TIMEOUT: runs that start one another, which the table reports."""
    from playwright.sync_api import TimeoutError as Timeout

    from tests.browser.conftest import wait_for_app

    for attempt in range(3):
        try:
            wait_for_app(page)
            return True
        except AssertionError:
            if attempt == 2:
                raise
        except Timeout:
            return False
    return False


def arrows(page, gap_ms: int) -> dict:
    """PRESSES arrow presses `gap_ms` apart from t = 0: where the page lands, and how long after the
    last press it shows that step and has settled."""
    slider = page.get_by_role("slider").first
    slider.focus()
    page.keyboard.press("Home")
    page.wait_for_function("() => /At step t = 0 the network reads/"
                           ".test(document.querySelector('[data-testid=\"stMain\"]').innerText)")
    settled(page)
    slider.focus()
    for _ in range(PRESSES):
        page.keyboard.press("ArrowRight")
        page.wait_for_timeout(gap_ms)
    last = time.perf_counter()
    done = settled(page)
    return {"landed": shown_step(page), "settled": time.perf_counter() - last if done else float("nan")}


def landed(pressed: dict) -> str:
    """Where the presses landed, and when the page settled after the last (nan: it did not)."""
    after = pressed["settled"]
    return f"{pressed['landed']} of {PRESSES} " + ("(still running after 60 s)" if after != after else
                                                   f"({after:.1f} s)")


def measure(browser, url: str, link: str, play_seconds: float) -> dict:
    from tests.browser.conftest import SCRIPT_TIMEOUT, VIEWPORT, wait_for_app

    context = browser.new_context(viewport=VIEWPORT)
    context.set_default_timeout(SCRIPT_TIMEOUT)
    try:
        page = context.new_page()
        runs = Runs(page)
        page.goto(f"{url}/{link}")
        wait_for_app(page)
        out = {"play": play(page, runs, play_seconds)}
        settled(page)
        out["arrows"] = {gap: arrows(page, gap) for gap in GAPS_MS}
        return out
    finally:
        context.close()


def run(quick: bool) -> str:
    from playwright.sync_api import sync_playwright

    from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS

    torch.set_num_threads(1)
    if not os.access(CHROMIUM, os.X_OK):
        return f"### Unroll in the browser\n\nskipped: {CHROMIUM} is missing (apt-get install chromium)\n"
    play_seconds = 15.0 if quick else 40.0
    rows = []
    with server() as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            for name, link in CASES.items():
                got = measure(browser, url, link, play_seconds)
                played, pressed = got["play"], got["arrows"]
                rows.append([
                    name, played["steps"], f"{played['per step']:.2f}", f"{played['slowest']:.2f}",
                    f"{played['tick']:.2f}",
                    *(landed(pressed[gap]) for gap in GAPS_MS),
                ])
                print(f"  {name}: {played['per step']:.2f} s a step (load {load_average()})", file=sys.stderr,
                      flush=True)
        finally:
            browser.close()
    return table(
        f"Unroll in one chromium tab (1280x900): Play through time (target 0.6 s a step; at most {play_seconds:.0f} s),"
        f" and {PRESSES} arrow presses on the time slider",
        ["case", "steps played", "s a step (median)", "slowest step s", "tick s (median)",
         *(f"presses landed, {gap} ms apart (settled after the last)" for gap in GAPS_MS)],
        rows,
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="15 s of play per case instead of 40")
    args = parser.parse_args()
    print(run(args.quick))


if __name__ == "__main__":
    main()
