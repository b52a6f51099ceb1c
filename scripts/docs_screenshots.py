"""Remake the README's screenshots (docs/*.png) from the app as it is, trained for real.

    PYTHONPATH=. python scripts/docs_screenshots.py

Starts the app on a free port of 127.0.0.1, drives Debian's chromium as the browser tests do
(tests/browser/conftest.py), and for each picture opens the page, trains to the step its README
caption names, and saves the page at 1400 x 900. Takes two to three minutes on two cores.
"""
from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

from playwright.sync_api import Page, sync_playwright

from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS, SCRIPT_TIMEOUT, _free_port, _health, wait_for_app

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
VIEWPORT = {"width": 1400, "height": 900}
STEPS = re.compile(r"steps trained:\s*([\d,]+)")


def steps_trained(page: Page) -> int:
    return int(STEPS.search(page.locator('[data-testid="stSidebar"]').inner_text()).group(1).replace(",", ""))


def play_to(page: Page, steps: int) -> None:
    """Press Play and pause once the model has trained `steps` steps (the live fragment stops
    at 'Train up to step', set here)."""
    target = page.get_by_label("Train up to step")
    target.fill(str(steps))
    target.press("Enter")
    wait_for_app(page)
    page.get_by_role("button", name="Play", exact=True).click()
    page.wait_for_function(
        "steps => parseInt(document.querySelector('[data-testid=\"stSidebar\"]').innerText"
        ".match(/steps trained:\\s*([\\d,]+)/)[1].replace(/,/g, '')) >= steps",
        arg=steps, timeout=600_000,
    )
    page.get_by_role("button", name="Play", exact=True).wait_for()  # it stopped at the target
    wait_for_app(page)


def shoot(page: Page, name: str, height: int = VIEWPORT["height"]) -> None:
    """The page's top `height` pixels at 1400 wide (Streamlit scrolls inside its main element, so
    a taller window is what shows more)."""
    page.set_viewport_size({**VIEWPORT, "height": height})
    wait_for_app(page)
    page.screenshot(path=str(DOCS / f"{name}.png"), full_page=False)
    print(f"docs/{name}.png at step {steps_trained(page):,}")


def main() -> None:
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    server = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app/main.py", "--server.headless", "true",
                               "--server.port", str(port), "--server.address", "127.0.0.1"], cwd=REPO,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while _health(url) != "ok":
            if time.monotonic() > deadline or server.poll() is not None:
                raise SystemExit("the app did not start")
            time.sleep(0.2)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport=VIEWPORT)
            page.set_default_timeout(SCRIPT_TIMEOUT)
            page.goto(f"{url}/build")  # the adding problem with an LSTM: the app's default
            wait_for_app(page)
            play_to(page, 1100)
            shoot(page, "build-train")
            page.goto(f"{url}/gradients?{page.url.split('?', 1)[1]}")  # the same lab (its id in the link)
            wait_for_app(page)
            shoot(page, "gradients", height=1750)  # down to the ratio over training
            page.goto(f"{url}/build?task=charlm")  # a new session: the char-level LSTM preset
            wait_for_app(page)
            play_to(page, 310)
            page.goto(f"{url}/unroll?{page.url.split('?', 1)[1]}")
            wait_for_app(page)
            slider = page.get_by_role("slider")
            slider.focus()
            for _ in range(7):  # to the eighth character
                slider.press("ArrowRight")
                wait_for_app(page)
            shoot(page, "unroll")
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=10)


if __name__ == "__main__":
    main()
