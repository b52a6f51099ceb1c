"""One browser opens 40 big labs; a classmate's lab must survive (issue 29, finding 2).

Against `streamlit run app/main.py` on 127.0.0.1 with Debian's chromium: a classmate trains a few
steps on Build & Train; then another browser (one owner cookie) opens an LSTM of 1,024 units
(4.2M parameters, 67 MB held with Adam's moments and the best step's copy) in 40 tabs one after the
other, closing each, which is 2.7 GB against the store's 2 GiB. Printed: the server's resident memory
every 10 tabs, and whether the classmate's reload still has its steps, and the greedy browser's first tab.

    PYTHONPATH=. .venv/bin/python benchmarks/lab_store_flood.py [--tabs 40]
"""
from __future__ import annotations

import argparse
import re

from playwright.sync_api import sync_playwright

from app.session.store import MAX_BYTES
from benchmarks.app_server import rss_mb, serve
from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS, wait_for_app

BIG = "build?task=adding&seq_len=20&arch=lstm&hidden_size=1024&batch_size=8"


def steps_trained(page) -> int:
    text = page.locator('[data-testid="stSidebar"]').inner_text()
    return int(re.search(r"steps trained:\s*([\d,]+)", text).group(1).replace(",", ""))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tabs", type=int, default=40)
    tabs = parser.parse_args().tabs
    with serve() as server, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        classmate = browser.new_context().new_page()
        classmate.goto(f"{server.url}/build")
        wait_for_app(classmate)
        for _ in range(5):
            classmate.get_by_role("button", name="Step", exact=True).click()
            wait_for_app(classmate)
        trained, link = steps_trained(classmate), classmate.url
        print(f"classmate: {trained} steps; server {rss_mb(server.pid):,.0f} MB")

        greedy = browser.new_context()
        first = None
        for tab in range(1, tabs + 1):
            page = greedy.new_page()
            page.goto(f"{server.url}/{BIG}")
            wait_for_app(page)
            first = first or page.url
            page.close()
            if tab % 10 == 0:
                print(f"{tab} big labs opened (store limit {MAX_BYTES / 2**30:.0f} GiB of weights x4 and data): "
                      f"server {rss_mb(server.pid):,.0f} MB")

        classmate.goto(link)  # the classmate presses F5
        wait_for_app(classmate)
        print(f"classmate after the flood: {steps_trained(classmate)} steps (had {trained})")
        again = greedy.new_page()
        again.goto(first)
        wait_for_app(again)
        lost = again.locator('[data-testid="stAlert"]', has_text="is not on this server any more").count()
        print(f"the flooding browser's first lab: {'evicted, and said so' if lost else 'still there'}")
        print(f"server at the end: {rss_mb(server.pid):,.0f} MB")
        browser.close()


if __name__ == "__main__":
    main()
