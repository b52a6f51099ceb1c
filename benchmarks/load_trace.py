"""Off by default: a trace of what a Streamlit server does with each session's runs, for the load
harness (`load.py --trace DIR`). Installed in the server's process by benchmarks/load_trace_site/
sitecustomize.py when UNROLLED_LOAD_TRACE names a file; nothing here runs otherwise.

One line per event, tab-separated: wall-clock time (time.time(), comparable with the clients'
trace), thread name, session id (first 8 characters), event, details. Recorded: every rerun request
(whole page or fragment, its triggers) and whether it went to the running ScriptRunner or made a
new one; every ScriptRunner event that reaches the event loop (SCRIPT_STARTED, the finishes,
SHUTDOWN), and whether it was dropped as a non-current runner's; lifecycle messages (new_session,
script_finished, auto_rerun, stop_auto_rerun) as enqueued, as handed to the session's client
and as written to its socket; the client's send queue when it grows past 100; sessions
disconnected by the server, and rerun requests it discarded for a disconnected session. Once a
second, a "flow" line: messages enqueued and handed to clients, the flushes, the messages waiting in
the sessions' queues, and how late the event loop ran a 10 ms timer (its lag: the loop waits for the
interpreter lock while script threads hold it; every message to every browser goes through it).
Merge with the clients' trace: `sort -n -s -k1,1 server-N.tsv clients-N.tsv`.
"""
from __future__ import annotations

import os
import threading
import time

LIFECYCLE = {"new_session", "script_finished", "auto_rerun", "stop_auto_rerun"}

_lock = threading.Lock()
_out = None


def log(session: str, event: str, details: str = "") -> None:
    line = f"{time.time():.3f}\t{threading.current_thread().name}\t{session[:8]}\t{event}\t{details}\n"
    with _lock:
        _out.write(line)


def describe(msg) -> str:
    """A lifecycle ForwardMsg in a few words: its type, run id, fragment or page, status."""
    kind = msg.WhichOneof("type")
    run = msg.metadata.run
    words = [kind]
    if kind in ("new_session", "script_finished"):
        words += [run.script_run_id[:8], "fragment" if run.fragment_ids else "page"]
    if kind == "script_finished":
        words.append(type(msg).ScriptFinishedStatus.Name(msg.script_finished))
    return " ".join(words)


def install(path: str) -> None:
    global _out
    _out = open(path, "a", buffering=1)  # noqa: SIM115 - one file for the process's life

    from streamlit.runtime import runtime as runtime_module
    from streamlit.runtime.app_session import AppSession
    from streamlit.web.server.starlette import starlette_websocket

    Runtime = runtime_module.Runtime
    Client = starlette_websocket.StarletteSessionClient
    sessions_of: dict[int, str] = {}  # id(client) -> session id

    request_rerun = AppSession.request_rerun

    def traced_request_rerun(self, client_state):
        if client_state is None:
            log(self.id, "rerun requested", "no client state")
        else:
            triggers = [w.id.split("-")[-1] for w in client_state.widget_states.widgets
                        if w.WhichOneof("value") == "trigger_value" and w.trigger_value]
            log(self.id, "rerun requested", f"fragment {client_state.fragment_id[:8]}" if client_state.fragment_id
                else f"page triggers={triggers}")
        before = self._scriptrunner
        request_rerun(self, client_state)
        after = self._scriptrunner
        log(self.id, "rerun handed", "to the running ScriptRunner" if after is before and before is not None
            else f"new ScriptRunner {id(after):x}" if after is not None else "none")

    on_event = AppSession._handle_scriptrunner_event_on_event_loop

    def traced_on_event(self, sender, event, forward_msg=None, *args, **kwargs):
        if forward_msg is None:
            current = sender is self._scriptrunner
            run = kwargs.get("run_descriptor") or (args[5] if len(args) > 5 else None)
            log(self.id, "runner event", f"{event.name} runner={id(sender):x}"
                f"{'' if current else ' DROPPED (not the current runner)'}"
                f"{'' if run is None else ' run=' + run.script_run_id[:8]}"
                f"{'' if run is None else (' fragment' if run.fragment_ids else ' page')}")
        elif forward_msg.WhichOneof("type") in LIFECYCLE and sender is not self._scriptrunner:
            log(self.id, "runner message DROPPED", describe(forward_msg))
        return on_event(self, sender, event, forward_msg, *args, **kwargs)

    emitted = AppSession._on_scriptrunner_event

    def traced_emitted(self, sender, event, forward_msg=None, **kwargs):
        if forward_msg is None:
            run = kwargs.get("run_descriptor")
            log(self.id, "runner emits", f"{event.name} runner={id(sender):x}"
                f"{'' if run is None else ' run=' + run.script_run_id[:8]}")
        return emitted(self, sender, event, forward_msg, **kwargs)

    enqueue = AppSession._enqueue_forward_msg

    def traced_enqueue(self, msg):
        flow["enqueued"] += 1
        live.add(self)
        if msg.WhichOneof("type") in LIFECYCLE:
            log(self.id, "enqueued", describe(msg))
        return enqueue(self, msg)

    send = Runtime._send_message

    def traced_send(self, session_info, msg):
        if msg.WhichOneof("type") in LIFECYCLE:
            log(session_info.session.id, "to client", describe(msg))
        began = time.perf_counter()
        try:
            return send(self, session_info, msg)
        finally:
            flow["sent"] += 1
            flow["send s"] += time.perf_counter() - began

    flush = AppSession.flush_browser_queue

    def traced_flush(self):
        messages = flush(self)
        if messages:
            flow["flushes"] += 1
            flow["flushed"] += len(messages)
            flow["largest flush"] = max(flow["largest flush"], len(messages))
        return messages

    flow = dict.fromkeys(["enqueued", "sent", "send s", "flushes", "flushed", "largest flush", "loop lag max",
                          "loop lag sum", "ticks"], 0)

    async def watch_the_loop():
        """Once a second: messages enqueued and handed to clients, and how late the event loop
        ran a 10 ms timer (it waits for the interpreter lock while script threads hold it)."""
        import asyncio

        last = time.perf_counter()
        while True:
            began = time.perf_counter()
            await asyncio.sleep(0.01)
            lag = time.perf_counter() - began - 0.01
            flow["loop lag max"] = max(flow["loop lag max"], lag)
            flow["loop lag sum"] += lag
            flow["ticks"] += 1
            if began - last >= 1.0:
                queued = sum(len(session._browser_queue) for session in live)
                log("-", "flow", " ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}"
                                          for k, v in flow.items()) + f" queued={queued}")
                flow.update(dict.fromkeys(flow, 0))
                last = began

    live = set()
    flow_task = []

    connect = Runtime.connect_session

    def traced_connect(self, client, *args, **kwargs):
        if not flow_task:
            import asyncio

            flow_task.append(asyncio.get_running_loop().create_task(watch_the_loop()))
        session_id = connect(self, client, *args, **kwargs)
        sessions_of[id(client)] = session_id
        log(session_id, "connected")
        return session_id

    disconnect = Runtime.disconnect_session

    def traced_disconnect(self, session_id, *, client=None):
        closed = client is not None and client._closed.is_set()
        log(session_id, "disconnect_session", f"client closed={closed} "
            f"send queue={client._send_queue.qsize() if client is not None else '-'}")
        return disconnect(self, session_id, client=client)

    handle = Runtime.handle_backmsg

    def traced_handle(self, session_id, msg, *, client=None):
        info = self._session_mgr.get_active_session_info(session_id)
        if info is None or (client is not None and info.client is not client):
            log(session_id, "BackMsg DISCARDED", f"{msg.WhichOneof('type')}: session not active for this client")
        return handle(self, session_id, msg, client=client)

    write = Client.write_forward_msg

    def traced_write(self, msg):
        session = sessions_of.get(id(self), "?")
        size = self._send_queue.qsize()
        if size >= 100 and size % 50 == 0:
            log(session, "send queue", f"{size} waiting (the limit is {self._send_queue.maxsize})")
        try:
            write(self, msg)
        except Exception as failure:
            log(session, "write FAILED", f"{type(failure).__name__}: closed={self._closed.is_set()} queue={size}")
            raise
        if msg.WhichOneof("type") in LIFECYCLE:
            payload = self._send_queue._queue[-1]  # the bytes just queued, to know them when written
            self._traced[id(payload)] = (payload, describe(msg))

    init = Client.__init__

    def traced_init(self, websocket):
        init(self, websocket)
        send_bytes = websocket.send_bytes

        self._traced = {}  # id(payload) -> (payload, what it is), for lifecycle messages queued

        async def traced_send_bytes(payload):
            await send_bytes(payload)
            traced = self._traced.pop(id(payload), None)
            if traced is not None:
                log(sessions_of.get(id(self), "?"), "written", traced[1])

        websocket.send_bytes = traced_send_bytes

    AppSession.flush_browser_queue = traced_flush
    AppSession.request_rerun = traced_request_rerun
    AppSession._handle_scriptrunner_event_on_event_loop = traced_on_event
    AppSession._enqueue_forward_msg = traced_enqueue
    AppSession._on_scriptrunner_event = traced_emitted
    Runtime._send_message = traced_send
    Runtime.connect_session = traced_connect
    Runtime.disconnect_session = traced_disconnect
    Runtime.handle_backmsg = traced_handle
    Client.write_forward_msg = traced_write
    Client.__init__ = traced_init
    log("-", "trace installed", f"pid {os.getpid()}")
