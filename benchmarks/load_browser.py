"""A student's real tab: Debian's chromium driven by Playwright, with the same methods as
load_client.Client, so the load harness can mix real tabs with protocol clients. Its runs and
step count are read from the websocket frames the tab receives (load_client.Tab), the same
frames the page draws from."""
from __future__ import annotations

import time
from pathlib import Path

from load_client import SessionFailed, Tab
from playwright.async_api import Browser, Page
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
VIEWPORT = {"width": 1400, "height": 900}


class BrowserTab:
    """One chromium context and tab: connect(), open(page, query), press, commit, close."""

    def __init__(self, browser: Browser, url: str):
        self.browser, self.url = browser, url.rstrip("/")
        self.tab = Tab()
        self.page: Page | None = None
        self._context = None

    async def connect(self) -> None:
        self._context = await self.browser.new_context(viewport=VIEWPORT)
        self._context.set_default_timeout(120_000)
        self.page = await self._context.new_page()
        self.page.on("websocket", self._opened)

    async def close(self) -> None:
        if self._context is not None:
            await self._context.close()

    async def open(self, page: str, query: str, timeout: float) -> float:
        return await self._wait_page_run(lambda: self.page.goto(f"{self.url}/{page}?{query}"), timeout)

    async def press(self, label: str, timeout: float) -> float:
        button = self.page.get_by_role("button", name=label, exact=True)
        return await self._wait_page_run(button.click, timeout)

    async def commit(self, label: str, value: int, timeout: float) -> float:
        box = self.page.get_by_label(label, exact=True)
        await box.fill(str(value))
        return await self._wait_page_run(lambda: box.press("Enter"), timeout)

    async def screenshot(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        await self.page.screenshot(path=str(path))

    def _opened(self, socket) -> None:
        def received(payload) -> None:
            if isinstance(payload, (bytes, bytearray)):
                self.tab.take(ForwardMsg.FromString(bytes(payload)))

        socket.on("framereceived", received)

    async def _wait_page_run(self, act, timeout: float) -> float:
        """Seconds from the action to the end of the whole-page run it started."""
        began = time.perf_counter()
        await act()
        while (took := self.tab.page_run_took(began)) is None:
            if self.tab.errors:
                raise SessionFailed(self.tab.errors[0])
            if time.perf_counter() - began > timeout:
                raise SessionFailed(f"a whole-page run did not end within {timeout:.0f} s")
            await self.page.wait_for_timeout(20)  # lets the tab's frame events be handled meanwhile
        return took
