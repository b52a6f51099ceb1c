"""t-SNE maps of a word2vec run's words, made off the training thread: a page asks for the map of
some words at a step, and gets back at once the newest map of those words that is done (perhaps
of an earlier step: it says which), while the map it asked for is made on the process's one
worker thread. No Streamlit here.

Why not app/charts/views.py's cache: view() builds the value on the caller's thread and keeps one
version per key, so a page would either wait seconds for the map inside its draw or get nothing
until the map of this very step was done, and a playing page (a new step every tick) would start
a map every tick. Here a run has at most one map being made; what was asked meanwhile is made
next (only the latest ask: a playing page's older steps are skipped), and the newest map done is
shown, labelled with its step, until a newer one replaces it. A map is of one run (its
EmbeddingRun keeps one TsneMaps a run: Reset and new settings start an empty one), so a map of
vectors before a Reset is never shown beside vectors after it.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import NamedTuple

from torch import Tensor

from engine.tsne import tsne

# One worker for the process: sessions' maps queue (each session has one in the queue at most), so
# t-SNE takes one core of a shared machine at most, the other left to training and drawing.
WORKER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tsne")


class TsneMap(NamedTuple):
    words: Hashable  # which words (the page's choice: how many, picked how)
    step: int  # the training step whose vectors it maps
    ids: Tensor  # [n] the rows of the words mapped
    coords: Tensor  # [n, 2]


class Ask(NamedTuple):
    words: Hashable
    step: int
    ids: Tensor  # [n]
    points: Tensor  # [n, d] the words' vectors at that step (a copy)


class TsneMaps:
    """The maps of one run: the newest done, the one being made, the latest asked for meanwhile."""

    def __init__(self, make: Callable[[Tensor], Tensor] = tsne, worker: ThreadPoolExecutor = WORKER):
        self.make, self.worker = make, worker
        self.changed = threading.Condition()  # held to read or change what follows; told when a map ends
        self.done: TsneMap | None = None
        self.error: str | None = None  # why the latest map failed, if it did
        self.making: tuple[Hashable, int] | None = None  # (words, step) of the map being made
        self.wanted: Ask | None = None  # asked while another map was being made: made next

    def ask(self, words: Hashable, step: int, ids: Tensor, points: Callable[[], Tensor]) -> TsneMap | None:
        """The newest map of `words` done, of any step (None when there is none yet); starts the map
        of `step` (points() [n, d]: their vectors now) unless it is done or being made, or keeps it
        to make next when another is being made (replacing what was kept: only the latest waits)."""
        with self.changed:
            done = self.done if self.done is not None and self.done.words == words else None
            if (done is not None and done.step == step) or self.making == (words, step):
                self.wanted = None if self.making == (words, step) else self.wanted
                return done
            if self.making is not None:
                if self.wanted is None or (self.wanted.words, self.wanted.step) != (words, step):
                    self.wanted = Ask(words, step, ids, points())
                return done
            self.start(Ask(words, step, ids, points()))
            return done

    def start(self, ask: Ask) -> None:
        """Queue the map of `ask` (the caller holds the lock)."""
        self.making, self.wanted, self.error = (ask.words, ask.step), None, None
        self.worker.submit(self.make, ask.points).add_done_callback(lambda future: self.finished(ask, future))

    def finished(self, ask: Ask, future: Future) -> None:
        """Keep the map made (or why it failed), and start the one asked for meanwhile."""
        with self.changed:
            try:
                self.done = TsneMap(ask.words, ask.step, ask.ids, future.result())
            except Exception as err:  # noqa: BLE001 (any failure of the library is said on the page)
                self.error = str(err)
            self.making = None
            if self.wanted is not None:
                self.start(self.wanted)
            self.changed.notify_all()

    @property
    def busy(self) -> bool:
        """Whether a map is being made (or waits for the worker)."""
        with self.changed:
            return self.making is not None

    def wait(self, timeout: float | None = None) -> bool:
        """Until no map is being made or waits to be (tests, benchmarks: a condition, not a sleep);
        False if `timeout` s passed first."""
        with self.changed:
            return self.changed.wait_for(lambda: self.making is None, timeout)
