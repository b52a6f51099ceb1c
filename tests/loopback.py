"""A loopback HTTP server that public files are downloaded from in the tests (engine.datasets' and the app's
Download button's): it serves `files` by name, counts each request, holds a request until `gate` is set (set
from the start), and sends a name in `cut_short` its length and then half its bytes (a dropped connection)."""
from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from contextlib import contextmanager


class Server(http.server.ThreadingHTTPServer):
    def __init__(self):
        super().__init__(("127.0.0.1", 0), Handler)
        self.files: dict[str, bytes] = {}
        self.requests: list[str] = []
        self.cut_short: set[str] = set()
        self.gate = threading.Event()
        self.gate.set()

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/{name}"


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - http.server's name
        name = self.path.lstrip("/")
        self.server.requests.append(name)
        self.server.gate.wait()
        body = self.server.files.get(name)
        if body is None:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body[: len(body) // 2] if name in self.server.cut_short else body)

    def log_message(self, *args):  # quiet
        pass


@contextmanager
def serving() -> Iterator[Server]:
    server = Server()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.gate.set()  # a request held at the gate ends before the server does
        server.shutdown()
        server.server_close()
