"""A student's browser tab without the browser: a client that speaks Streamlit's own websocket
protocol (/_stcore/stream) as the page's JavaScript does, so thirty of them cost a few percent of a
core where thirty chromium tabs would measure chromium.

What it does as the browser does (streamlit/static's App: handleAutoRerun, sendUpdateWidgetsMessage):
opens a page with a query string (BackMsg rerun_script), receives every ForwardMsg and parses every
delta, presses a button by sending its trigger, commits a number, and reruns a fragment every
AutoRerun.interval seconds (setInterval: whether or not the last one has ended) until the server
sends StopAutoRerun or a whole-page run starts (App.handleNewSession's cleanupAutoReruns). What it
does not: render, run the components' JavaScript, upload files. A dataframe's rows are read from its
Arrow data (the teacher's board, benchmarks/load_board.py), each with the time it arrived.
"""
from __future__ import annotations

import asyncio
import json
import re
import time
from dataclasses import dataclass, field

import pyarrow as pa
import websockets
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState

TRACE = None  # a file (load.py --trace): every client writes what it sends and each run's start and end
STEPS_TRAINED = re.compile(r"steps trained:\s*\**([\d,]+)")  # the sidebar summary's line
RUNS_AT = re.compile(r"^step ([\d,]+) of [\d,]+ for each")  # side-by-side runs' progress bar: the runs' step


class SessionFailed(Exception):
    """The page showed an exception, the socket closed, or a run did not end in time."""


@dataclass
class Run:
    """One script run as the server reported it: whole page or a fragment (a tick)."""

    started: float
    fragment: bool
    ended: float | None = None


@dataclass
class Tab:
    """What the tab holds: the widgets by label, the latest figure, the step count, every run."""

    widgets: dict[str, str] = field(default_factory=dict)  # label -> widget id, as last drawn
    figures: dict[str, str] = field(default_factory=dict)  # plotly figures' JSON specs by element id
    steps: int | None = None
    step_times: list[tuple[float, int]] = field(default_factory=list)  # (arrived, steps) at each new count
    tables: list[tuple[float, list[dict]]] = field(default_factory=list)  # (arrived, rows) of every dataframe
    runs: list[Run] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def take(self, message: ForwardMsg) -> None:
        """Note what one message from the server says."""
        kind = message.WhichOneof("type")
        now = time.perf_counter()
        if kind == "new_session":
            # A run the server left without a script_finished (one cut short for the next) ended
            # when the next began, as the page takes it.
            if self.runs and self.runs[-1].ended is None:
                self.runs[-1].ended = now
            self.runs.append(Run(now, fragment=bool(message.metadata.run.fragment_ids)))
        elif kind == "script_finished":
            # The latest run's end, whatever its status (FINISHED_EARLY_FOR_RERUN included), as
            # benchmarks/lesson_speed.Runs reads a tab's frames.
            if self.runs and self.runs[-1].ended is None:
                self.runs[-1].ended = now
        elif kind == "delta" and message.delta.WhichOneof("type") == "new_element":
            self._element(message.delta.new_element)

    def page_run_took(self, began: float) -> float | None:
        """Seconds from `began` to the end of the first whole-page run started after it (None: not yet)."""
        run = next((r for r in self.runs if r.started >= began and not r.fragment), None)
        return None if run is None or run.ended is None else run.ended - began

    def points(self) -> int:
        """Points in the largest figure's traces, read as the page would draw it (a training curve
        grows with the steps trained)."""
        return max((sum(len(trace.get("y") or []) for trace in json.loads(spec).get("data", []))
                    for spec in self.figures.values()), default=0)

    def _element(self, element) -> None:
        kind = element.WhichOneof("type")
        body = getattr(element, kind)
        if kind == "exception":
            self.errors.append(f"the page showed an exception: {body.type}: {body.message}")
        elif kind == "plotly_chart":
            self.figures[body.id] = body.spec
        elif kind in ("markdown", "progress"):
            found = STEPS_TRAINED.search(body.body) if kind == "markdown" else RUNS_AT.search(body.text)
            if found:
                self.steps = int(found.group(1).replace(",", ""))
                if not self.step_times or self.step_times[-1][1] != self.steps:
                    self.step_times.append((time.perf_counter(), self.steps))
        elif kind == "dataframe" and body.arrow_data.data:
            rows = pa.ipc.open_stream(body.arrow_data.data).read_all().to_pylist()
            self.tables.append((time.perf_counter(), rows))
        label = getattr(body, "label", "")
        if label and getattr(body, "id", ""):
            self.widgets[label] = body.id


class Client:
    """One session: connect(), open(page, query), then press / commit / wait_page_run."""

    def __init__(self, url: str, cookie: str | None = None):
        self.url = url.replace("http://", "ws://").rstrip("/") + "/_stcore/stream"
        self.cookie = cookie  # sent with the websocket's handshake (the proxy's, to pick a process)
        self.tab = Tab()
        self.page = ""
        self.query = ""
        self.states: dict[str, WidgetState] = {}  # what this tab has set, sent with every rerun
        self.ticking: dict[str, asyncio.Task] = {}  # fragment id -> its setInterval
        self._socket = None
        self._reader: asyncio.Task | None = None
        self._changed = asyncio.Event()
        self.session = "-"  # the server's id for this session, from its first new_session

    def trace(self, event: str, details: str = "") -> None:
        if TRACE is not None:
            TRACE.write(f"{time.time():.3f}\tclient\t{self.session[:8]}\t{event}\t{details}\n")

    async def connect(self) -> None:
        headers = {"Cookie": self.cookie} if self.cookie else None
        self._socket = await websockets.connect(self.url, subprotocols=["streamlit"], max_size=None,
                                                open_timeout=60, ping_interval=None, additional_headers=headers)
        self._reader = asyncio.create_task(self._read())

    async def close(self) -> None:
        self._stop_ticking(list(self.ticking))
        if self._socket is not None:
            await self._socket.close()
        if self._reader is not None:
            self._reader.cancel()

    async def open(self, page: str, query: str, timeout: float) -> float:
        """Open `page` with `query` as a fresh tab does; seconds until its run ended."""
        self.page, self.query = page, query
        return await self._rerun_and_wait(timeout)

    async def press(self, label: str, timeout: float) -> float:
        """Click the button labelled `label`; seconds until the whole-page run it starts ended."""
        self.states[label] = WidgetState(id=self._id(label), trigger_value=True)
        return await self._rerun_and_wait(timeout)

    async def commit(self, label: str, value: int, timeout: float) -> float:
        """Type `value` into the integer input `label` and press Enter; seconds until its run ended."""
        self.states[label] = WidgetState(id=self._id(label), int_value=value)
        return await self._rerun_and_wait(timeout)

    async def type(self, label: str, text: str, timeout: float) -> float:
        """Type `text` into the text input `label` and press Enter; seconds until its run ended."""
        self.states[label] = WidgetState(id=self._id(label), string_value=text)
        return await self._rerun_and_wait(timeout)

    # --- the protocol -------------------------------------------------------------------------

    def _id(self, label: str) -> str:
        if label not in self.tab.widgets:
            raise SessionFailed(f"no widget labelled {label!r} on the page")
        return self.tab.widgets[label]

    async def _send(self, fragment_id: str = "") -> None:
        message = BackMsg()
        client = message.rerun_script
        client.query_string, client.page_name = self.query, self.page
        client.widget_states.widgets.extend(self.states.values())
        if fragment_id:
            client.fragment_id, client.is_auto_rerun = fragment_id, True
        else:  # a trigger is sent once, as the browser resets it after sending
            self.states = {label: s for label, s in self.states.items() if not s.HasField("trigger_value")}
        self.trace("send rerun", f"fragment {fragment_id[:8]}" if fragment_id else "page triggers="
                   f"{[w.id.split('-')[-1] for w in client.widget_states.widgets if w.HasField('trigger_value')]}")
        await self._socket.send(message.SerializeToString())

    async def _rerun_and_wait(self, timeout: float) -> float:
        began = time.perf_counter()
        await self._send()
        deadline = began + timeout
        while True:
            took = self.tab.page_run_took(began)
            if took is not None:
                self.trace("wait ended", f"a whole-page run ended {took:.2f} s after the request")
                return took
            if self.tab.errors:
                raise SessionFailed(self.tab.errors[0])
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), max(0.0, deadline - time.perf_counter()))
            except TimeoutError:
                self.trace("wait FAILED", f"no whole-page run ended within {timeout:.0f} s")
                tail = [(round(r.started - began, 2), r.fragment, r.ended and round(r.ended - began, 2))
                        for r in self.tab.runs[-4:]]
                raise SessionFailed(f"a whole-page run did not end within {timeout:.0f} s; last runs {tail}") from None

    async def _tick_every(self, fragment_id: str, interval: float) -> None:
        while True:
            await asyncio.sleep(interval)  # the browser's setInterval: a timer, not a wait for the server
            await self._send(fragment_id)

    async def _read(self) -> None:
        try:
            async for raw in self._socket:
                self._take(ForwardMsg.FromString(raw))
                self._changed.set()
        except websockets.ConnectionClosed as closed:
            if closed.rcvd is None or closed.rcvd.code != 1000:
                self.tab.errors.append(f"the socket closed: {closed}")
        self._changed.set()

    def _take(self, message: ForwardMsg) -> None:
        kind = message.WhichOneof("type")
        if TRACE is not None and kind in ("new_session", "script_finished", "auto_rerun", "stop_auto_rerun"):
            if kind == "new_session":
                self.session = message.new_session.initialize.session_id or self.session
            run, words = message.metadata.run, [kind]
            if kind in ("new_session", "script_finished"):
                words += [run.script_run_id[:8], "fragment" if run.fragment_ids else "page"]
            if kind == "script_finished":
                words.append(ForwardMsg.ScriptFinishedStatus.Name(message.script_finished))
            self.trace("received", " ".join(words))
        if kind == "new_session" and not message.metadata.run.fragment_ids:
            self._stop_ticking(list(self.ticking))  # a whole-page run ends every auto-rerun; it sets them again
        elif kind == "auto_rerun":
            rerun = message.auto_rerun
            if rerun.fragment_id not in self.ticking:
                self.ticking[rerun.fragment_id] = asyncio.create_task(self._tick_every(rerun.fragment_id,
                                                                                       rerun.interval))
        elif kind == "stop_auto_rerun":
            self._stop_ticking(message.stop_auto_rerun.fragment_ids)
        self.tab.take(message)

    def _stop_ticking(self, fragment_ids) -> None:
        for fragment_id in fragment_ids:
            task = self.ticking.pop(fragment_id, None)
            if task is not None:
                task.cancel()
