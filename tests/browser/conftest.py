"""A real Streamlit server and a real chromium for the browser tests.

One server (`streamlit run app/main.py` on a free port of 127.0.0.1) and one browser per session;
a fresh browser context per test. Debian's /usr/bin/chromium is driven through Playwright, whose own
browser downloads are never used (`./run_tests.sh` installs chromium with apt when it is missing).
"""
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from weakref import WeakKeyDictionary

import pytest
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import Page, sync_playwright
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "tests" / "artifacts"  # gitignored
SCREENSHOTS = ARTIFACTS / "screenshots"
SERVER_STDOUT = ARTIFACTS / "streamlit-server.stdout.log"  # the test server's output, kept
SERVER_STDERR = ARTIFACTS / "streamlit-server.stderr.log"  # for a look after a failure
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",  # CI runs as root
    "--disable-gpu",
    "--disable-dev-shm-usage",  # containers often have a tiny /dev/shm
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SERVER_START_TIMEOUT = 60  # s, until /_stcore/health answers "ok"
SCRIPT_TIMEOUT = 60_000  # ms, for one run of a page's script (the first one imports torch)
VIEWPORT = {"width": 1280, "height": 900}
# Counts, in the page, what the newest websocket sent and handed to its listeners: Runs counts the same
# frames as the browser reports them, and the two are compared (SETTLED). The listener is added first, so
# Streamlit's own has taken a message in (synchronously, up to React's setState) once the count moves on.
COUNT_FRAMES = """(() => {
    const Native = window.WebSocket;
    window.WebSocket = class extends Native {
        constructor(...args) {
            super(...args);
            const counts = {sent: 0, received: 0};
            window.__unrolledSocket = counts;
            this.addEventListener('message', () => { counts.received += 1; });
            this.send = data => { counts.sent += 1; super.send(data); };
        }
    };
})()"""
# Streamlit sends a widget's change from a timer (setTimeout 0) that the click or key set: a timer set
# after it fires after it, so what the test just did has been sent, and counted, once this returns.
AFTER_WIDGET_TIMERS = "() => new Promise(resolve => setTimeout(resolve, 0))"
# The page shows the end of its last run, drawn (SETTLED then gives the app root's state): the script has
# run (that state; notRunning is what the tests want, compilationError ends the wait early), the page has
# taken in every frame the test saw (`counts`, null for a page nobody counts for), React has no update
# left to render, nothing is greyed out as stale or waiting as a skeleton, and every figure, image and
# font shown is drawn. Plotly draws into its element once its bundle has loaded, after the run, and
# redraws at the element's width when the window changes size (every figure of the app stretches to its
# element, app/widgets/figures.py), so its svg takes that width; figures in a closed expander or a
# hidden tab keep theirs until they show.
SETTLED = """counts => {
    const app = document.querySelector('[data-testid="stApp"]');
    const state = app && app.getAttribute('data-test-script-state');
    if (state === 'compilationError') return state;
    if (state !== 'notRunning' || app.getAttribute('data-test-connection-state') !== 'CONNECTED') return false;
    if (counts !== null) {
        const page = window.__unrolledSocket || {sent: 0, received: 0};
        // The page sent or took in a frame the test has not heard of yet: it looks again once it has.
        if (page.sent > counts.sent || page.received > counts.received) return 'behind';
        if (page.received < counts.received) return false;
    }
    const root = document.getElementById('root');
    const container = root && Object.keys(root).find(key => key.startsWith('__reactContainer'));
    if (container && root[container].stateNode.pendingLanes !== 0) return false;
    if (document.querySelector('[data-stale="true"], [data-testid="stSkeleton"]') !== null) return false;
    // A page's first run has begun but drawn nothing yet (the run's start can show as notRunning).
    if (document.querySelector('[data-testid="stMain"] [data-testid="stElementContainer"]') === null) return false;
    const shown = el => el.getBoundingClientRect().width > 0 && !el.closest('details:not([open])');
    const plotly = [...document.querySelectorAll('[data-testid="stPlotlyChart"]')].filter(shown);
    const vega = [...document.querySelectorAll('[data-testid="stVegaLiteChart"]')].filter(shown);
    return plotly.every(chart => {
            const plot = chart.querySelector('.js-plotly-plot'), svg = chart.querySelector('.main-svg');
            return plot !== null && svg !== null && (plot._promises || []).length === 0
                && Math.abs(parseFloat(svg.getAttribute('width')) - chart.getBoundingClientRect().width) < 1;
        })
        && vega.every(chart => [...chart.querySelectorAll('canvas, svg.marks')].some(view => view.clientWidth > 0))
        && [...document.images].every(img => img.complete)
        && document.fonts.status === 'loaded' && state;
}"""
# Height the window needs to show everything: Streamlit scrolls inside stMain and the sidebar.
CONTENT_HEIGHT = """() => Math.max(
    document.documentElement.scrollHeight,
    ...[...document.querySelectorAll('[data-testid="stMain"], [data-testid="stSidebarContent"]')]
        .map(el => el.scrollHeight + el.getBoundingClientRect().top))"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _health(url: str) -> str:
    try:
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
            return r.read().decode(errors="replace").strip()
    except OSError:
        return ""


@contextmanager
def streamlit_server(port: int, stdout: Path, stderr: Path | None = None, append: bool = False,
                     env: dict[str, str | None] | None = None) -> Iterator[subprocess.Popen]:
    """`streamlit run app/main.py` on 127.0.0.1:port, started from the repository's root, until it
    answers /_stcore/health; stopped (terminated, killed if it lingers) on the way out. Its output
    goes to files, not pipes (a pipe nobody reads fills up and blocks the server): `stdout`, and
    `stderr` (None: into the same file), appended to when `append` (a test starting two servers in
    turn keeps both logs). Its environment is this process's with `env` over it (a None value:
    that variable unset). A server that exits or does not answer in time fails the test with its
    command and the end of its errors."""
    url = f"http://127.0.0.1:{port}"
    # The README's command word for word, `streamlit run app/main.py` (not `python -m streamlit`, which
    # puts the repository's root on the import path by itself), from the environment running the tests.
    streamlit = shutil.which("streamlit", path=str(Path(sys.executable).parent))
    if streamlit is None:
        pytest.fail(f"no `streamlit` command beside {sys.executable}: run the tests in the environment "
                    "requirements.txt was installed into (./run_tests.sh does).", pytrace=False)
    cmd = [
        streamlit, "run", "app/main.py",
        "--server.headless", "true",
        "--server.port", str(port),
        "--server.address", "127.0.0.1",
        "--browser.gatherUsageStats", "false",
    ]
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    mode = "ab" if append else "wb"
    environment = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    with open(stdout, mode) as out, open(stderr or os.devnull, mode) as err:
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=out, stderr=err if stderr else out, stdin=subprocess.DEVNULL,
                                env={name: value for name, value in environment.items() if value is not None})
    try:
        deadline = time.monotonic() + SERVER_START_TIMEOUT
        while _health(url) != "ok":
            exited, late = proc.poll() is not None, time.monotonic() > deadline
            if exited or late:
                why = (f"exited with code {proc.returncode} before answering" if exited else
                       f"did not answer within {SERVER_START_TIMEOUT} s at")
                pytest.fail(f"streamlit {why} {url}/_stcore/health.\n$ {' '.join(cmd)}\n--- its errors ---\n"
                            f"{(stderr or stdout).read_text(errors='replace')[-3000:]}", pytrace=False)
            time.sleep(0.2)  # polling the health endpoint, the server's only sign of being up
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="session")
def app_url():
    """Base URL of `streamlit run app/main.py`, started from the repository's root for this session."""
    port = _free_port()
    with streamlit_server(port, SERVER_STDOUT, SERVER_STDERR):
        yield f"http://127.0.0.1:{port}"


@pytest.fixture(scope="session")
def browser():
    """One headless Debian chromium for the whole session."""
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"{CHROMIUM} is missing: run ./run_tests.sh, which installs it, or "
                    "`apt-get install chromium`.", pytrace=False)
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


class Runs:
    """What the newest websocket of a page says about its runs, to wait on them rather than on time.

    `answered` is whether the server has answered every run the page asked for: each rerun_script
    the browser sent (a click, a key, a page load; not the live fragment's timer, whose tick the
    server drops once the fragment is gone) was followed by a run's start, and the last run that
    started has ended (a run that ends early for a rerun, st.rerun() or another request, is
    followed by that rerun). `seen` moves with every frame, to tell that none came meanwhile.
    """

    def __init__(self, page: Page):
        self._main_frame = page.main_frame
        self.seen = 0
        self._new_document()
        page.on("request", self._on_request)
        page.on("websocket", self._on_websocket)

    def _new_document(self, ws=None) -> None:
        self.socket, self.counts, self.asked, self.running = ws, {"sent": 0, "received": 0}, False, False

    def _on_request(self, request) -> None:
        # A load or a reload: the old document's socket answers nothing more, and the new one has
        # none yet (Streamlit's own page changes keep the document: no request of the kind).
        if request.is_navigation_request() and request.frame == self._main_frame:
            self._new_document()

    def _on_websocket(self, ws) -> None:
        self._new_document(ws)
        ws.on("framesent", lambda payload: ws is self.socket and self._sent(payload))
        ws.on("framereceived", lambda payload: ws is self.socket and self._received(payload))
        ws.on("close", lambda _: ws is self.socket and self._closed())

    def _closed(self) -> None:
        self.asked = self.running = False  # nothing more will be answered on this socket

    def _sent(self, payload) -> None:
        self.counts["sent"] += 1
        self.seen += 1
        message = BackMsg.FromString(bytes(payload)) if isinstance(payload, (bytes, bytearray)) else BackMsg()
        if message.WhichOneof("type") == "rerun_script" and not message.rerun_script.is_auto_rerun:
            self.asked = True

    def _received(self, payload) -> None:
        self.counts["received"] += 1
        self.seen += 1
        if not isinstance(payload, (bytes, bytearray)):
            return
        message = ForwardMsg.FromString(bytes(payload))
        if kind(message) == "new_session":
            self.asked, self.running = False, True
        elif kind(message) == "script_finished" and message.script_finished != ForwardMsg.FINISHED_EARLY_FOR_RERUN:
            self.running = False

    @property
    def answered(self) -> bool:
        return not (self.asked or self.running)


# The pages the tests open through app_page: their Runs, for wait_for_app, which is handed the page.
RUNS: WeakKeyDictionary[Page, Runs] = WeakKeyDictionary()


class StreamlitPage:
    """A browser tab on the app that also decodes what the server sends it over the websocket.

    `messages` holds every ForwardMsg (protobuf) received since the last `goto` on the websockets
    that opened since (late frames of the previous load's socket are kept apart): the navigation
    message there is the app's own list of pages, whether or not a menu is drawn (Streamlit draws
    none for a single page).
    """

    def __init__(self, page: Page, base_url: str):
        self.page, self.base_url = page, base_url
        self._streams: list[list[ForwardMsg]] = []  # one per websocket, in the order they opened
        self._first = 0  # the first stream of the current page load
        page.add_init_script(COUNT_FRAMES)
        RUNS[page] = Runs(page)
        page.on("websocket", self._on_websocket)

    def _on_websocket(self, ws) -> None:
        stream: list[ForwardMsg] = []
        self._streams.append(stream)

        def received(payload) -> None:
            if isinstance(payload, (bytes, bytearray)):
                stream.append(ForwardMsg.FromString(bytes(payload)))

        ws.on("framereceived", received)

    @property
    def messages(self) -> list[ForwardMsg]:
        return [m for stream in self._streams[self._first :] for m in stream]

    def goto(self, url_path: str = "") -> None:
        """Open base_url/url_path in a fresh session and wait until its script has run cleanly."""
        self._first = len(self._streams)
        self.page.goto(f"{self.base_url}/{url_path}")
        wait_for_app(self.page)
        assert len(self._streams) > self._first, f"{self.page.url}: the page opened no websocket"

    def of_type(self, kind: str) -> list[ForwardMsg]:
        return [m for m in self.messages if m.WhichOneof("type") == kind]

    def navigation(self):
        """The last Navigation message: app_pages, position, and the page_script_hash shown."""
        navs = self.of_type("navigation")
        assert navs, "the server sent no navigation message"
        return navs[-1].navigation

    def screenshot(self, name: str) -> Path:
        """Save the whole page, not just the viewport, to tests/artifacts/screenshots/<name>.png.

        Streamlit scrolls inside its main container, so a full-page screenshot alone stops at the
        window's height: the window is grown to the content's height for the shot, then restored.
        """
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        path = SCREENSHOTS / f"{name}.png"
        settle(self.page)
        size = self.page.viewport_size or VIEWPORT
        height = size["height"]
        for _ in range(4):  # content can reflow once the window is taller
            needed = min(int(self.page.evaluate(CONTENT_HEIGHT)) + 1, 16_000)
            if needed <= height:
                break
            height = needed
            self.page.set_viewport_size({"width": size["width"], "height": height})
            settle(self.page)  # the figures redraw at the taller window's width (its scrollbar went)
        self.page.screenshot(path=str(path), full_page=True)
        if height != size["height"]:
            self.page.set_viewport_size(size)
        return path


def settle(page: Page) -> str:
    """Wait until the server has answered every run the page asked for and the page shows the last
    one, drawn (SETTLED), with no frame come or gone meanwhile, else start over; return the app
    root's script state then. A page opened without app_page has no Runs: it is only ever waited
    on after a load (a `goto`, a reload), when that state reads "initial" until the first run and
    SETTLED holds out for that run's first element."""
    runs = RUNS.get(page)
    deadline = time.monotonic() + SCRIPT_TIMEOUT / 1000
    while True:
        while runs is not None and not runs.answered:
            socket = runs.socket
            try:
                socket.wait_for_event("framereceived", timeout=_ms_left(deadline))
            except PlaywrightError:
                if not socket.is_closed():  # a timeout; a closed socket left nothing to wait for
                    raise
        seen = runs.seen if runs is not None else 0
        try:
            page.evaluate(AFTER_WIDGET_TIMERS)
            state = page.wait_for_function(SETTLED, arg=runs and dict(runs.counts),
                                           timeout=_ms_left(deadline)).json_value()
        except PlaywrightError as err:
            # The page navigated while it was read (a menu page opened in a new tab replaces its own
            # address with its opener's: app/widgets/address.py): wait for the new document, read again.
            if "Execution context was destroyed" not in str(err):
                raise
            page.wait_for_load_state(timeout=_ms_left(deadline))
            continue
        if runs is None or (state != "behind" and runs.answered and runs.seen == seen):
            return state


def _ms_left(deadline: float) -> float:
    return max(1.0, (deadline - time.monotonic()) * 1000)


def wait_for_app(page: Page) -> None:
    """Wait until the page has run and drawn what it asked for (settle), then assert no exception.
    The state is the one settle saw: a tick of a live fragment the browser sent before the page
    stopped playing may start a run right after (assert_stays_paused)."""
    state = settle(page)
    exceptions = page.locator('[data-testid="stException"]')
    texts = [t.strip()[:2000] for t in exceptions.all_inner_texts()]
    assert not texts, f"{page.url}: {len(texts)} exception(s) on the page:\n\n" + "\n\n".join(texts)
    assert state == "notRunning", f"{page.url}: the script ended in state {state!r}"


@pytest.fixture
def app_page(browser, app_url):
    """A fresh browser context and tab on the app, closed after the test."""
    context = browser.new_context(viewport=VIEWPORT)
    context.set_default_timeout(SCRIPT_TIMEOUT)
    try:
        yield StreamlitPage(context.new_page(), app_url)
    finally:
        context.close()


def open_from_menu(page: Page, section: str, title: str) -> None:
    """Go to a page through the menu bar at the top, in the same session: its section's menu
    opened, then the page's link in it (app/main.py: st.navigation(position="top"))."""
    page.locator('[data-testid="stTopNavSection"]', has_text=section).click()
    page.locator('[data-testid="stTopNavDropdownLink"]', has_text=title).click()


# What the server tells the page over the websocket, to wait on runs rather than on time.


def kind(message: ForwardMsg) -> str:
    return message.WhichOneof("type")


def page_run_finished(payload) -> bool:
    """A websocket frame that says a run of the whole page (not of a fragment alone) has ended."""
    if not isinstance(payload, (bytes, bytearray)):
        return False
    message = ForwardMsg.FromString(bytes(payload))
    return kind(message) == "script_finished" and message.script_finished == ForwardMsg.FINISHED_SUCCESSFULLY


def rerun(app_page: StreamlitPage, socket) -> None:
    """Run the page again (Streamlit's R shortcut) and wait until the server says that run ended."""
    with socket.expect_event("framereceived", predicate=page_run_finished, timeout=SCRIPT_TIMEOUT):
        app_page.page.locator('[data-testid="stMain"]').press("r")
    wait_for_app(app_page.page)


def assert_stays_paused(app_page: StreamlitPage, socket, play: str, count) -> None:
    """Pause was clicked: once the button reads `play` again and the script is idle, `count(page)`
    no longer moves. A playing page ticks because one of its runs sent an auto_rerun for the live
    fragment; the browser cancels every such timer when a run of the whole page starts, and the
    run that paused sent none, so no tick is due.

    One more run of the page settles what the pause left: a tick under way when Pause was clicked
    is cut short at its next st.* call, and if it had moved the Unroll slider by then, the browser
    sent Pause with the thumb's old step and got the new one after (CI read 9, then 10). So that run
    may show `count` one further on, after at most one tick. Two more runs of the page, each awaited
    on its script_finished, then show what the server holds: nothing moves, and no run of a
    fragment alone (a tick) came in meanwhile."""
    page = app_page.page
    page.get_by_role("button", name=play, exact=True).wait_for()
    wait_for_app(page)
    shown = count(page)
    messages = app_page.messages
    page_runs = [i for i, m in enumerate(messages) if kind(m) == "new_session" and not m.metadata.run.fragment_ids]
    last_page_run = page_runs[-1]
    assert any(kind(m) == "auto_rerun" for m in messages[:last_page_run]), "playing set no fragment ticking"
    assert not any(kind(m) == "auto_rerun" for m in messages[last_page_run:]), "paused, yet a fragment was set ticking"
    rerun(app_page, socket)
    paused = count(page)
    assert paused - shown in (0, 1), f"{shown} when paused, {paused} a run later"
    read_at = len(app_page.messages)
    late = [m for m in app_page.messages[last_page_run:read_at] if kind(m) == "new_session"
            and m.metadata.run.fragment_ids]
    assert len(late) <= 1, f"the live fragment ran {len(late)} times after the run that paused"
    for _ in range(2):
        rerun(app_page, socket)
        assert count(page) == paused  # paused means paused
    ticks = [m for m in app_page.messages[read_at:] if kind(m) == "new_session" and m.metadata.run.fragment_ids]
    assert not ticks, f"the live fragment ran {len(ticks)} times on its own while paused"


def play_runs_to(page, steps: int) -> None:
    """On a page that trains runs side by side (Transfer learning, Pretrained embeddings, BERT and GPT):
    "Train each up to step" set to `steps`, Play, and wait until every run stood there and the page
    stopped (its Play button back)."""
    box = page.get_by_label("Train each up to step", exact=True)
    box.fill(str(steps))
    box.press("Enter")
    wait_for_app(page)
    page.get_by_role("button", name="Play", exact=True).click()
    page.wait_for_function(
        f"() => /step {steps} of {steps} for each run/.test(document.querySelector('[data-testid=\"stMain\"]')"
        ".innerText)", timeout=240_000)
    page.get_by_role("button", name="Play", exact=True).wait_for(timeout=60_000)  # stopped at the target
    wait_for_app(page)


# The texts matching `selector` inside the plotly figure whose title includes `title` whose boxes cross, as
# "a / b" pairs: labels printed over labels (issue 44). The same words crossing in two figures are two failures.
CROSSED = """([title, selector]) => {
    const chart = [...document.querySelectorAll('.js-plotly-plot')]
        .find(c => (c.querySelector('.gtitle') || {}).textContent.includes(title));
    const boxes = [...chart.querySelectorAll(selector)]
        .filter(t => t.textContent.trim()).map(t => [t.textContent.trim(), t.getBoundingClientRect()]);
    const crossed = [];
    boxes.forEach(([a, r], i) => boxes.slice(i + 1).forEach(([b, s]) => {
        if (r.left < s.right - 1 && s.left < r.right - 1 && r.top < s.bottom - 1 && s.top < r.bottom - 1)
            crossed.push(`${a} / ${b}`);
    }));
    return crossed;
}"""
