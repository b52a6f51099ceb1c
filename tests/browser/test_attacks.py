"""Issue 29's attacks, repeated against a real app server: each ends with a message on the page (the
refusal, or the note its fix added; never a traceback) and the server's resident memory under one
stated bound: its RSS at start plus MARGIN_MB (below, with how it was measured).

The server is the browser tests' own (conftest.app_url: `streamlit run app/main.py` on 127.0.0.1),
found by its port among this process's children. Its memory is read from /proc/<pid>/status, as
benchmarks/app_server.py reads it (psutil is not among the requirements): VmRSS once the page shows
the attack's message, and VmHWM, the peak since the attack began (the kernel's high-water mark,
reset through /proc/<pid>/clear_refs when it begins). Both must stay under the bound.
tests/artifacts/attacks-rss.txt gets a line an attack (RSS before and after, peak), and
tests/artifacts/screenshots a picture an attack, 1400 wide (attack-NN-*.png).

The attacks, numbered as in the issue:

 1. Compare cells on a tanh RNN of 2 x 1024 units (within the budget) that would build an LSTM and a
    GRU over it: refused, naming the LSTM run; nothing to play.
 2. Not repeated here: one browser flooding the lab store. The store evicts only past 2 GiB of labs
    (or 240 labs), so the attack holds over 2 GiB in the server by design and takes minutes (40 tabs
    of a 1,024-unit LSTM: 128 s); a handful of tabs would fill nothing and check nothing, while
    leaving 67 MB a tab in the store for three hours. benchmarks/lab_store_flood.py repeats it
    against a real server (benchmarks/README, section 12: the classmate's lab survives), and
    tests/app/test_store.py checks the eviction rule.
 3. Written-out cells (layer norm, peepholes, zoneout) at 2,000 steps x 8 bidirectional layers
    from a link: refused, the defaults built instead.
 4. An owner cookie holding a script: never run (the document's title is never PWNED, however
    briefly), and replaced by a token this app made. There is nothing to refuse and no message:
    the page opens as usual.
 5. A review CSV of 50 MB (IMDB-like, generated): parsed within the bound, the page saying how much
    of each review the network reads; and a CSV of 10^6 tiny rows: refused by the row cap.
 6. A killed app process: a server of this test's own is killed (SIGKILL) while its tab plays, and
    started again on the same port; the tab reconnects by itself, and its next tick says the model
    was lost with the process (the issue's two processes behind a proxy end the same way for the
    page: a process that has never seen the tab's lab). Its RSS is that process's.
 7. A checkpoint whose file name is a Markdown link and image: shown as its characters, no link to
    evil.example, no image, nothing fetched from there, and the model opens.
 8. A link of 1,001 parameters (Streamlit reads none of them): said, not dropped silently; and
    `__proto__` and `:red[x] ~~y~~` echoed as typed.
 9. Not repeated here: a duplicated tab. tests/browser/test_reload.py
    (test_a_duplicated_tab_takes_the_model_and_the_first_tab_says_so) drives it on this same server.
10. A state_dict of a 2 x 1024 LSTM (50 MB): refused from its header, the lab's model unchanged, and
    never built: the attack's peak stays within three times the file.
"""
from __future__ import annotations

import asyncio
import base64
import os
import re
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlparse

import numpy as np
import pytest
from safetensors.torch import save_file
from torch import nn

import engine
from app.session.budget import MAX_LOOP_STEPS, MAX_PARAMETERS, MAX_STEP_COST
from app.session.store import is_token
from app.widgets.state import OWNER_COOKIE
from deploy.nginx_conf import NEW_SESSIONS_BURST, NEW_SESSIONS_RATE
from engine.tasks.review_csv import MAX_CSV_REVIEWS

from .conftest import (
    ARTIFACTS,
    SCRIPT_TIMEOUT,
    StreamlitPage,
    _free_port,
    streamlit_server,
    wait_for_app,
)
from .test_build_train import steps_trained
from .test_serve_class import TRAINED_PAST

WIDE = {"width": 1400, "height": 900}
RSS_LOG = ARTIFACTS / "attacks-rss.txt"
MB = 2**20
# What the attacks may add to the server's resident memory, over its RSS at start (the module's
# first reading, once a Home and a Build & Train page have run: torch, Streamlit and one lab loaded).
# Measured on the 2-core machine, the whole module on a fresh server, ten runs (two with the CSVs
# last): RSS after an attack up to +369 MB over the start, peaks up to +414 MB (the CSVs, last).
# What stays is legitimate and bounded: Streamlit keeps a closed tab's uploads for
# server.disconnectedSessionTTL (120 s: 50 + 30 + 50 MB here), the parsed CSV stays cached for the
# server (uploads.parsed_reviews, 0.8 bytes a byte of the file), each test's lab stays in the lab
# store (the 2 x 1024 RNN's 50 MB with Adam's moments), and the allocator keeps what it freed. The
# margin is half as much again as the highest peak. Before the fixes the attacks took more than
# that, measured with this module: at 46f8e7d (no streaming parse) the 50 MB CSV left the server at
# +714 MB after a +1,176 MB peak; at 1b42a91 (before every fix) the links of attacks 1 and 3 alone
# took it from 470 to 2,003 MB.
MARGIN_MB = 600

COMPARE_LINK = "compare?task=adding&arch=rnn&activation=tanh&hidden_size=1024&num_layers=2&batch_size=8&seq_len=20"
WRITTEN_OUT_LINK = ("build?task=adding&seq_len=2000&arch=lstm&hidden_size=8&num_layers=8&bidirectional=true"
                    "&layer_norm=true&peephole=true&zoneout=0.5&batch_size=1")
PLANTED = "x'+(document.title='PWNED')+'"
EVIL = "evil.example"
MARKDOWN_NAME = f"[click](http://{EVIL}/login)![x](http://{EVIL}/pixel.png).safetensors"
ALERT = '[data-testid="stAlert"]'
STEPS_BEFORE_THE_KILL = 20
# Every title the document has had, to tell whether a script set one, however briefly.
TITLES = """(() => {
    window.__titles = [];
    new MutationObserver(() => {
        if (window.__titles[window.__titles.length - 1] !== document.title) window.__titles.push(document.title);
    }).observe(document, {subtree: true, childList: true, characterData: true});
})()"""


@dataclass(frozen=True)
class Server:
    pid: int
    start_mb: float  # its RSS once warmed up

    @property
    def bound_mb(self) -> float:
        return self.start_mb + MARGIN_MB


def status_mb(pid: int, field: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024  # kB
    raise KeyError(field)


def server_pid(url: str) -> int:
    """The pid of this process's child serving `url` (conftest.app_url started it)."""
    port = str(urlparse(url).port).encode()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])  # after the command's name
            args = (stat.parent / "cmdline").read_bytes().split(b"\0")
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile
        if parent == os.getpid() and b"--server.port" in args and args[args.index(b"--server.port") + 1] == port:
            return int(stat.parent.name)
    pytest.fail(f"no child process of this one serves {url}", pytrace=False)


@pytest.fixture(scope="module")
def server(browser, app_url) -> Server:
    """The app server, warmed up (a Home and a Build & Train page run), and its RSS then."""
    context = browser.new_context(viewport=WIDE)
    context.set_default_timeout(SCRIPT_TIMEOUT)
    try:
        page = StreamlitPage(context.new_page(), app_url)
        page.goto("")
        page.goto("build")
    finally:
        context.close()
    pid = server_pid(app_url)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    start = status_mb(pid, "VmRSS")
    RSS_LOG.write_text(f"server pid {pid}: RSS at start {start:,.0f} MB, bound {start + MARGIN_MB:,.0f} MB\n")
    return Server(pid, start)


@dataclass
class Memory:
    """The server's resident memory around an attack, MB: when it began, once it is over (the page
    shows its message), and its peak meanwhile."""

    name: str
    before: float
    after: float = 0.0
    peak: float = 0.0

    def within(self, bound_mb: float) -> None:
        assert self.after <= bound_mb and self.peak <= bound_mb, (
            f"{self.name}: the server's RSS {self.after:,.0f} MB ({self.before:,.0f} MB when the attack began), "
            f"its peak {self.peak:,.0f} MB, over the bound {bound_mb:,.0f} MB")


@contextmanager
def measured(pid: int, name: str) -> Iterator[Memory]:
    memory = Memory(name, status_mb(pid, "VmRSS"))
    Path(f"/proc/{pid}/clear_refs").write_text("5")  # VmHWM := VmRSS
    yield memory
    memory.after, memory.peak = status_mb(pid, "VmRSS"), status_mb(pid, "VmHWM")
    with RSS_LOG.open("a") as log:
        log.write(f"{name}: RSS {memory.before:,.0f} MB before, {memory.after:,.0f} MB after, "
                  f"peak {memory.peak:,.0f} MB\n")


@pytest.fixture
def wide(app_page) -> StreamlitPage:
    app_page.page.set_viewport_size(WIDE)
    return app_page


def alert(page, text: str) -> str:
    """The text of the message holding `text`, once it shows; the page's run over and clean."""
    message = page.locator(ALERT, has_text=text)
    message.wait_for()
    wait_for_app(page)
    return message.inner_text()


def sidebar(page) -> str:
    return page.locator('[data-testid="stSidebar"]').inner_text()


def test_01_compare_cells_refuses_the_cells_it_would_build_over_the_budget(server, wide):
    """The student's RNN (3.15M parameters) passes; its LSTM (12.6M) and GRU (9.5M) were built."""
    with measured(server.pid, "1 compare cells") as memory:
        wide.goto(COMPARE_LINK)
        said = alert(wide.page, "cannot be compared")
    assert "the LSTM run: this network has 12,608,513 parameters" in said, said
    assert f"over this app's limit of {MAX_PARAMETERS:,}" in said, said
    assert wide.page.get_by_role("button", name="Play", exact=True).count() == 0  # nothing to train
    wide.screenshot("attack-01-compare-cells")
    memory.within(server.bound_mb)


def test_03_written_out_cells_over_the_loop_budget_are_refused(server, wide):
    """One step of this network ran 32,000 Python iterations: 12-14 s a step on the shared CPU."""
    with measured(server.pid, "3 written-out cells") as memory:
        wide.goto(WRITTEN_OUT_LINK)
        said = alert(wide.page, "could not be used")
    assert "2000 steps x 16 layer-directions = 32,000 a training step" in said, said
    assert f"over this app's limit of {MAX_LOOP_STEPS:,}" in said and "started with the defaults" in said, said
    assert "model: LSTM 1 x 64" in sidebar(wide.page)
    wide.screenshot("attack-03-written-out-cells")
    memory.within(server.bound_mb)


def test_04_an_owner_cookie_holding_a_script_never_runs(server, wide):
    page = wide.page
    page.add_init_script(TITLES)
    page.context.add_cookies([{"name": OWNER_COOKIE, "value": PLANTED, "url": wide.base_url}])
    with measured(server.pid, "4 owner cookie") as memory:
        wide.goto("build")
    titles = page.evaluate("window.__titles")
    assert "PWNED" not in titles and page.title() == "Unrolled", titles
    [kept] = [c["value"] for c in page.context.cookies(wide.base_url) if c["name"] == OWNER_COOKIE]
    assert is_token(kept), kept  # a token this app made, in its place
    assert steps_trained(page) == 0  # the page works as usual
    wide.screenshot("attack-04-owner-cookie")
    memory.within(server.bound_mb)


def review_csv(path: Path, megabytes: float, seed: int = 0) -> Path:
    """A review,sentiment CSV of IMDB-like reviews, about `megabytes` MB: 100,000 made-up words
    (short ones frequent) drawn with Zipf-Mandelbrot frequencies, reviews of 230 words on average
    (lognormal, as IMDB 50K's), a comma or a full stop after some words, a <br /><br /> now and then."""
    rng = np.random.default_rng(seed)
    letters = rng.integers(ord("a"), ord("z") + 1, size=1_000_000, dtype=np.uint8).tobytes().decode()
    lengths = 2 + rng.poisson(0.2 + np.log1p(np.arange(100_000)) / 2.5)  # [V], 4.3 letters on average
    ends = np.cumsum(lengths)  # [V]
    vocabulary = np.array([letters[end - n:end] for n, end in zip(lengths, ends)], dtype=object)  # [V]
    cdf = np.cumsum(1.0 / (np.arange(100_000) + 2.7) ** 1.07)  # [V]
    words = int(megabytes * 1e6 / 7.1)  # a word, its space and now and then its punctuation
    tokens = vocabulary[np.searchsorted(cdf, rng.random(words) * cdf[-1])]  # [W]
    punctuation = np.array(["", "", "", "", "", "", ",", ".", ".<br /><br />"], dtype=object)
    tokens = tokens + punctuation[rng.integers(0, len(punctuation), size=words)]  # [W]
    review_words = np.maximum(1, rng.lognormal(np.log(174), 0.75, size=words // 100)).astype(int)  # [N], too many
    starts = np.concatenate([[0], np.cumsum(review_words)])
    starts = starts[starts < words]
    labels = rng.choice(["positive", "negative"], size=len(starts))
    lines = ["review,sentiment"] + [f'"{" ".join(tokens[a:b])}",{label}'
                                    for a, b, label in zip(starts, [*starts[1:], words], labels)]
    path.write_text("\n".join(lines) + "\n")
    return path


def upload_reviews(wide: StreamlitPage, path: Path) -> None:
    wide.goto("build?task=sentiment")
    wide.page.locator('[data-testid="stSidebar"] [data-testid="stFileUploaderDropzoneInput"]').set_input_files(path)


def test_05_a_large_review_csv_is_parsed_within_the_bound(server, wide, tmp_path):
    """A 66 MB review CSV took the server from 792 MB to a 2,152 MB peak."""
    path = review_csv(tmp_path / "reviews.csv", 50)
    assert path.stat().st_size > 45e6
    with measured(server.pid, f"5 review CSV of {path.stat().st_size / 1e6:.0f} MB") as memory:
        upload_reviews(wide, path)
        note = wide.page.get_by_text("Your reviews run to a median of")
        note.wait_for()
        wait_for_app(wide.page)
    assert re.search(r"the network reads the last 40 of each, so \d+% of them are cut", note.inner_text())
    assert wide.page.get_by_role("button", name=re.compile(r"^Read the last [\d,]+ words")).count() == 1
    wide.screenshot("attack-05-review-csv")
    memory.within(server.bound_mb)


def test_05_a_csv_of_a_million_tiny_rows_is_refused(server, wide, tmp_path):
    """10^6 tiny rows took the server +1.19 GB."""
    path = tmp_path / "tiny.csv"
    path.write_text("review,sentiment\n" + "".join(f"film {i} was good,positive\n" for i in range(1_000_000)))
    with measured(server.pid, f"5 CSV of 10^6 tiny rows, {path.stat().st_size / 1e6:.0f} MB") as memory:
        upload_reviews(wide, path)
        said = alert(wide.page, "more than")
    assert f"the CSV has more than {MAX_CSV_REVIEWS:,} reviews" in said and "The model you had is unchanged" in said
    wide.screenshot("attack-05-tiny-rows")
    memory.within(server.bound_mb)


def test_06_a_killed_process_says_the_model_was_lost(browser, server):
    """The page reconnected to another process at step 0 (480 steps lost) and said nothing. Here the
    tab plays when its process is killed; once the process is back, the tab reconnects by itself, and
    its next tick runs the page in a process that has never seen its lab."""
    port, log = _free_port(), ARTIFACTS / "attacks-killed-server.log"
    log.unlink(missing_ok=True)
    context = browser.new_context(viewport=WIDE)
    context.set_default_timeout(SCRIPT_TIMEOUT)
    try:
        tab = StreamlitPage(context.new_page(), f"http://127.0.0.1:{port}")
        with streamlit_server(port, log, append=True) as first:
            tab.goto("build")
            tab.page.get_by_role("button", name="Play", exact=True).click()
            tab.page.wait_for_function(TRAINED_PAST, arg=STEPS_BEFORE_THE_KILL, timeout=120_000)
            first.kill()
            first.wait()
        with streamlit_server(port, log, append=True) as second:
            with measured(second.pid, "6 killed process (the one started after)") as memory:
                said = alert(tab.page, "is not on this server any more")
            assert "the app process that held it stopped (restarted, or killed)" in said, said
            assert "What it had trained is lost" in said and steps_trained(tab.page) == 0
            tab.screenshot("attack-06-killed-process")
            memory.within(server.bound_mb)
    finally:
        context.close()


def test_07_a_checkpoints_markdown_file_name_is_shown_as_its_characters(server, wide):
    page = wide.page
    fetched = []
    page.on("request", lambda request: fetched.append(request.url) if urlparse(request.url).hostname == EVIL else None)
    model = engine.build_model(engine.ModelConfig(arch="gru", hidden_size=5), engine.make_task("parity"), seed=3)
    with measured(server.pid, "7 checkpoint's file name") as memory:
        wide.goto("build")
        page.get_by_text("Save or load the model").click()
        page.locator('[data-testid="stFileUploaderDropzoneInput"]').last.set_input_files(
            files=[{"name": MARKDOWN_NAME, "mimeType": "application/octet-stream", "buffer": engine.to_bytes(model)}])
        said = page.locator('[data-testid="stMarkdown"]', has_text="is a model saved by Unrolled")
        said.wait_for()
        page.get_by_role("button", name="Open it").click()
        page.locator('[data-testid="stSidebar"]', has_text="model: GRU 1 x 5").wait_for()
        # The toast that says so: made before st.rerun() it never reached the browser (Streamlit #7740).
        toast = page.locator('[data-testid="stToast"]', has_text="opened on parity")
        toast.wait_for()
        wait_for_app(page)
    assert toast.locator("a, img").count() == 0
    shown = said.inner_text().replace("\u200b", "")  # zero-width spaces keep a bare URL from being linked
    assert shown.startswith(f"{MARKDOWN_NAME} is a model saved by Unrolled"), shown
    assert page.locator(f'a[href*="{EVIL}"], img[src*="{EVIL}"]').count() == 0 and said.locator("a, img").count() == 0
    assert fetched == []
    wide.screenshot("attack-07-markdown-file-name")
    memory.within(server.bound_mb)


def test_08_a_link_over_streamlits_parameter_limit_is_said(server, wide):
    page = wide.page
    with measured(server.pid, "8 link of 1,001 parameters") as memory:
        page.goto(f"{wide.base_url}/build?" + "&".join(f"k{i}=1" for i in range(1001)))
        said = alert(page, "The link you opened held 1,001 parameters")
    assert "none of its settings were used" in said, said
    wide.screenshot("attack-08-link-1001-parameters")
    memory.within(server.bound_mb)


def test_08_markup_in_a_links_values_is_echoed_as_typed(server, wide):
    with measured(server.pid, "8 __proto__ and :red in a link") as memory:
        wide.goto(f"build?__proto__=1&hidden_size={quote(':red[x] ~~y~~')}")
        said = alert(wide.page, "could not be used")
    assert "(__proto__ is not a setting" in said and "':red[x] ~~y~~'" in said, said
    assert wide.page.locator(ALERT, has_text="could not be used").locator("strong, em, del").count() == 0
    wide.screenshot("attack-08-markup-in-a-link")
    memory.within(server.bound_mb)


class WideLSTM(nn.Module):
    """A student's network: nn.LSTM(2, 1024, num_layers=2) read at its last step by nn.Linear."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(2, 1024, num_layers=2, batch_first=True)
        self.fc = nn.Linear(1024, 1)


def test_10_a_state_dict_over_the_budget_is_refused_before_it_is_built(server, wide, tmp_path):
    """A 2 x 1024 LSTM's state_dict was read and built (72 MB) before its refusal. Its RSS is measured
    from the page's expander open, so that the peak is the upload's and the refusal's alone."""
    path = tmp_path / "wide_lstm.safetensors"
    save_file(WideLSTM().state_dict(), path)
    page = wide.page
    wide.goto("build")
    page.get_by_text("Save or load the model").click()
    with measured(server.pid, f"10 state_dict of a 2 x 1024 LSTM, {path.stat().st_size / 1e6:.0f} MB") as memory:
        page.locator('[data-testid="stFileUploaderDropzoneInput"]').last.set_input_files(path)
        page.get_by_text("the last step (seq2vec)").click()
        page.get_by_role("button", name=re.compile("^Open it on ")).click()
        said = alert(page, path.name)
    assert f"over this app's limit of {MAX_STEP_COST:,}" in said and "The model you had is unchanged" in said, said
    assert "1024 units x 6 values kept (LSTM) x 2 layer-directions" in said, said
    assert "model: LSTM 1 x 64" in sidebar(page)
    wide.screenshot("attack-10-wide-state-dict")
    memory.within(server.bound_mb)
    # Refused before it is built: the attack's peak is the upload arriving (Streamlit's copy and one
    # more meanwhile), measured +99 to +109 MB for the 48 MiB file, within three times the file.
    # Reading and building the network before refusing it took +231 MB (at bd3c937, this test alone).
    file_mb = path.stat().st_size / MB
    assert memory.peak - memory.before <= 3 * file_mb, (
        f"the server's peak rose by {memory.peak - memory.before:,.0f} MB for a {file_mb:,.0f} MB file")



# ------------------------------------------------------------------ issue 43: one script against a class

FLOOD = 2_000  # idle websockets one script opens, from one address, as fast as it can
FLOOD_ADDRESS = "127.0.0.2"  # the script's; the students' browsers come from 127.0.0.1


class Flood:
    """`count` websocket handshakes to the class's /_stcore/stream from FLOOD_ADDRESS, all at once, each kept
    open and silent once answered (no page run is ever asked for), on an event loop of its own thread
    (Playwright's sync API holds one in the test's): `statuses` counts the answers' status codes (0: reset or
    refused) once start() returns; stop() closes every socket."""

    def __init__(self, host: str, port: int, count: int):
        self.host, self.port, self.count = host, port, count
        self.statuses: Counter = Counter()
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    def start(self) -> None:
        self.thread.start()
        self.writers = asyncio.run_coroutine_threadsafe(self.open_all(), self.loop).result()

    def stop(self) -> None:
        async def close_all():
            for writer in self.writers:
                writer.close()
        asyncio.run_coroutine_threadsafe(close_all(), self.loop).result()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()

    async def open_all(self) -> list:
        answered = await asyncio.gather(*(self.one(i) for i in range(self.count)))
        self.statuses = Counter(status for _, status in answered)
        return [writer for writer, _ in answered if writer is not None]

    async def one(self, index: int):
        try:
            reader, writer = await asyncio.open_connection(self.host, self.port, local_addr=(FLOOD_ADDRESS, 0))
        except OSError:
            return None, 0
        key = base64.b64encode(index.to_bytes(16, "big")).decode()
        where = f"{self.host}:{self.port}"
        writer.write((f"GET /_stcore/stream HTTP/1.1\r\nHost: {where}\r\nOrigin: http://{where}\r\n"
                      "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
                      f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Protocol: streamlit\r\n\r\n").encode())
        try:
            status = int((await reader.readline()).split()[1])
        except (OSError, IndexError, ValueError):
            writer.close()
            return None, 0
        if status != 101:
            writer.close()
            return None, status
        return writer, status


def test_43_a_flood_of_idle_websockets_leaves_the_class_served(browser):
    """Finding 1: one script holding 505 idle websockets (opened in 1.4 s) filled nginx's 1,024 connections,
    and every new student and the teacher got "connection reset" while it held them. nginx now refuses an
    address past its burst of new sessions and its connections at once (429), and has room for a class
    beside: with 2,000 sockets attempted and every one it let through held open, a student opens the app
    through the same proxy, trains, and the teacher's board opens."""
    from .test_serve_class import serving_a_class, train

    with serving_a_class(processes=2, name="flood") as served, browser.new_context(viewport=WIDE) as context:
        flood = Flood(urlparse(served.url).hostname, urlparse(served.url).port, FLOOD)
        flood.start()
        statuses = flood.statuses
        try:
            context.set_default_timeout(SCRIPT_TIMEOUT)
            student = StreamlitPage(context.new_page(), served.url)
            student.goto("build")
            assert train(student, 5) >= 5
            student.screenshot("attack-43-flood-student")
            teacher = StreamlitPage(context.new_page(), served.url)
            teacher.page.goto(served.board)
            teacher.page.get_by_text("Follow me").first.wait_for()  # admitted by the link's key: the board
        finally:
            flood.stop()
        (ARTIFACTS / "attack-43-flood.txt").write_text(
            f"{FLOOD} websockets from {FLOOD_ADDRESS}: answers {dict(sorted(statuses.items()))}\n")
        assert statuses[101] <= NEW_SESSIONS_BURST + NEW_SESSIONS_RATE * 10, statuses  # the burst, and a trickle
        assert statuses[429] >= FLOOD - NEW_SESSIONS_BURST - NEW_SESSIONS_RATE * 10, statuses  # refused, at once


def test_43_a_clients_clear_cache_message_loses_no_classmates_model(browser, app_url):
    """Finding 2: Streamlit's BackMsg.clear_cache, sent by a script over its own websocket, emptied the
    process's lab store: a classmate's reload then started at step 0, told the server had restarted."""
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
    from websockets.sync.client import connect

    from .test_serve_class import train

    with browser.new_context(viewport=WIDE) as context:
        context.set_default_timeout(SCRIPT_TIMEOUT)
        classmate = StreamlitPage(context.new_page(), app_url)
        classmate.goto("build")
        trained = train(classmate, 5)
        where = urlparse(app_url)
        with connect(f"ws://{where.hostname}:{where.port}/_stcore/stream", subprotocols=["streamlit"],
                     origin=f"http://{where.hostname}:{where.port}") as script:
            script.send(BackMsg(clear_cache=True).SerializeToString())
            script.send(BackMsg(app_heartbeat=True).SerializeToString())  # after the clear, in order
            while ForwardMsg.FromString(script.recv(timeout=30)).WhichOneof("type") != "heartbeat_ack":
                pass  # the server answered the heartbeat: the clear, sent before it, was handled
        classmate.page.reload()
        wait_for_app(classmate.page)
        assert steps_trained(classmate.page) == trained
        assert "not on this server any more" not in classmate.page.inner_text("body")
