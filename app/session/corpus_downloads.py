"""Downloads of the public corpora a page needs (engine.datasets), asked for by a student's click: each in
a background thread, so the page stays usable while it comes, and at most one at a time per corpus in a
process, shared by every session that asks (a class clicking Download together fetches each file once a
process: two processes of a class each fetch it, into the same cache, each moved into place whole).
No corpus shares a file with another (the registry; tests/app/test_corpus_needed.py checks it), so one
download per corpus is one per file. Pages read a download's progress and outcome here; no Streamlit.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field

from engine import datasets


@dataclass
class Download:
    """One corpus's missing files coming into the cache: bytes so far of each, then done or failed."""

    name: str
    sizes: dict[str, int]  # file path -> its bytes, for every file the corpus lacked when it began
    error: str | None = None  # why it failed, as the data layer said it
    finished: threading.Event = field(default_factory=threading.Event)  # set once it is done or failed

    def __post_init__(self) -> None:
        # file path -> bytes so far. Its keys are fixed here: the thread only changes values, so a page
        # summing them while it writes never meets a dict that changed size.
        self.received = dict.fromkeys(self.sizes, 0)

    @property
    def total(self) -> int:
        return sum(self.sizes.values())

    @property
    def done_bytes(self) -> int:
        return sum(self.received.values())

    @property
    def fraction(self) -> float:
        return min(1.0, self.done_bytes / self.total) if self.total else 1.0

    @property
    def running(self) -> bool:
        return not self.finished.is_set()

    @property
    def failed(self) -> bool:
        return self.finished.is_set() and self.error is not None

    def progressed(self, file: datasets.PublicFile, done: int, total: int) -> None:
        """engine.datasets.fetch's progress hook: `done` of `total` bytes of `file` so far."""
        if file.path in self.received:  # fetch gets only what is still missing: a subset of what was
            self.received[file.path] = done

    def run(self) -> None:
        try:
            datasets.fetch([self.name], progress=self.progressed)
        except Exception as err:  # noqa: BLE001 - any failure must reach the page, or it would wait forever
            # DigestMismatch, NotWritable, an OSError (no network, a refused or cut connection), or a bug: the
            # data layer kept nothing of the file that failed, and its message says what happened.
            self.error = str(err) or type(err).__name__
        finally:
            self.finished.set()


DOWNLOADS: dict[str, Download] = {}  # corpus name -> its latest download in this process
LOCK = threading.Lock()  # held while a download is looked up or begun, so two clicks never start two


def start(name: str) -> Download:
    """The corpus's download under way, else a new one begun in a background thread (also after one that
    failed: a click is the student asking again). Nothing is requested from outside the machine but here."""
    with LOCK:
        current = DOWNLOADS.get(name)
        if current is not None and current.running:
            return current
        sizes = {f.path: f.size for f in datasets.missing_files(name)}
        download = DOWNLOADS[name] = Download(name, sizes)
        threading.Thread(target=download.run, name=f"unrolled-download-{name}", daemon=True).start()
        return download


def latest(name: str) -> Download | None:
    """The corpus's last download in this process (running, done or failed), or None if none was asked for."""
    return DOWNLOADS.get(name)
