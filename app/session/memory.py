"""A process's memory, shared by a class: what its sessions' models hold, and what their training
steps take while they run. No Streamlit here.

Measured on the BERT and GPT page (issue 43, finding 6; benchmarks/README section 24): a model there
holds about 10 MB, but one of its training steps took about 180 MB while it ran (a 64 x 32 x 4,000
output layer, its log-softmax and both their gradients; the masked run's now 67 MB, issue 46). Twenty
sessions stepping at once took one process to a 5.1 GB peak; two cores run two steps at a time however
many wait, so the rest only held memory. Three bounds:

- Steps, a few at a time (`one_step`): at most STEP_SLOTS training steps run in the process at once,
  the others waiting their turn in the order they came (a first-come gate: Python's own locks and
  semaphores let the thread that just stepped take the next turn too). With the trims below, it cost
  60 sessions 12-15% of their steps a second in all (benchmarks/README section 24).
- The allocator told to keep few arenas and to give freed memory back (`tune_allocator`, `one_step`):
  glibc gives every thread that allocates its own arena, up to 8 a core, and a freed step's memory
  stays in its arena; capped at STEP_SLOTS arenas, and trimmed every TRIM_EVERY seconds of stepping.
- What models hold (`check_room`): every experiment alive (a Lab, a page's side-by-side runs, a
  word2vec run) counts its weights four times (the weights, Adam's two moments, the best step's
  copy) and its data; a new one is refused, with a message saying why and what to do, when it would
  take its session past SESSION_BYTES or the process past PROCESS_BYTES.
"""
from __future__ import annotations

import collections
import ctypes
import ctypes.util
import gc
import os
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Protocol

from torch import nn

# Steps trained at once: one a core (each trains on one torch thread, app/main.py).
STEP_SLOTS = len(os.sched_getaffinity(0))
TRIM_EVERY = 1.0  # s of stepping between two trims of the allocator (benchmarks/README section 24)
MB = 2**20
# What this process's models may hold together, set by the deployment (deploy/serve_class.py divides the
# machine between its processes); 60 sessions of the heaviest page's runs count 1.3 GB here (section 24).
PROCESS_BYTES = int(os.environ.get("UNROLLED_MEMORY_MB", 3072)) * MB
# What one session's models may hold: the largest network a page allows (5 M weights: 80 MB) beside every
# page's side-by-side runs, and a teacher's review CSV (a 66 MB file's task held 300 MB).
SESSION_BYTES = 512 * MB
READ_ONLY_COPIES = 2  # of a model's weights it holds when it reads but does not train: it, and the best step's copy
M_ARENA_MAX = -8  # glibc's mallopt parameter (malloc.h)


class MemoryFull(ValueError):
    """A new experiment would take its session or the process past its memory; the message says which,
    with the figures, and what the student can do."""


class Holder(Protocol):
    def held_bytes(self) -> int:
        """What it holds that grows with its size: weights four times over, and its data."""


def read_only_bytes(model: nn.Module) -> int:
    """A model that reads but does not train (a shipped one over the training budget): READ_ONLY_COPIES of its
    weights."""
    return READ_ONLY_COPIES * sum(p.numel() * p.element_size() for p in model.parameters())


def weights_bytes(model: nn.Module) -> int:
    """A model's weights as a trained experiment holds them: four times over (the weights, Adam's two
    moments, the copy of the best step's)."""
    return 4 * sum(p.numel() * p.element_size() for p in model.parameters())


def owner_of_thread() -> str | None:
    """The session the calling thread runs for; app/main.py installs Streamlit's (set_owner)."""
    return None


def set_owner(find: Callable[[], str | None]) -> None:
    """How this module tells which session a thread runs for (app/main.py: Streamlit's session id)."""
    global owner_of_thread
    owner_of_thread = find


class Ledger:
    """Every experiment alive in the process, with the session that made it: nothing to release, a
    dropped experiment leaves the ledger when Python frees it."""

    def __init__(self, process_bytes: int = PROCESS_BYTES, session_bytes: int = SESSION_BYTES):
        self.process_bytes, self.session_bytes = process_bytes, session_bytes
        self.owners: weakref.WeakKeyDictionary[Holder, str | None] = weakref.WeakKeyDictionary()
        self.lock = threading.Lock()

    def add(self, holder: Holder) -> None:
        with self.lock:
            self.owners[holder] = owner_of_thread()

    def held(self) -> dict[str | None, list[int]]:
        """Session -> what each of its experiments holds, in bytes."""
        with self.lock:
            alive = list(self.owners.items())
        by_owner: dict[str | None, list[int]] = collections.defaultdict(list)
        for holder, owner in alive:
            by_owner[owner].append(holder.held_bytes())
        return dict(by_owner)

    def check_room(self, needed: int, what: str) -> None:
        """MemoryFull when an experiment holding `needed` bytes (`what` it is, for the message) would take
        the calling thread's session (if it runs for one) past session_bytes, or the process past
        process_bytes. The new one is taken to replace at most the session's largest (a page replaces its
        own runs, the Lab its model): a session may always build again what it has."""
        owner = owner_of_thread()
        held = self.held()
        if sum(map(sum, held.values())) + needed > self.process_bytes:
            gc.collect()  # experiments dropped in a reference cycle wait for the collector
            held = self.held()
        mine = held.get(owner, [])
        replaced = max(mine, default=0)
        if owner is not None and sum(mine) - replaced + needed > self.session_bytes:  # None: no session's
            raise MemoryFull(
                f"{what} would hold {needed / MB:,.0f} MB beside the {(sum(mine) - replaced) / MB:,.0f} MB this tab's "
                f"other runs hold, over the {self.session_bytes / MB:,.0f} MB a tab may hold here; reset another "
                "page's runs (each page keeps its own) or pick a smaller network")
        total = sum(map(sum, held.values()))
        if total - replaced + needed > self.process_bytes:
            sessions = sum(1 for sizes in held.values() if sizes)
            raise MemoryFull(
                f"{what} would hold {needed / MB:,.0f} MB; this server's models hold {total / MB:,.0f} MB of the "
                f"{self.process_bytes / MB:,.0f} MB it allows (UNROLLED_MEMORY_MB) for {sessions} sessions. Nothing "
                "was started and what you had is kept: try again once classmates close their tabs, or pick a "
                "smaller network")


LEDGER = Ledger()


class FirstComeGate:
    """At most `slots` holders at once, let in in the order they asked."""

    def __init__(self, slots: int):
        self.slots = slots
        self.changed = threading.Condition()
        self.queue: collections.deque[object] = collections.deque()  # one ticket a waiting thread, the first first
        self.inside = 0
        self.most_inside = 0  # the most ever inside at once (the tests read it)

    @contextmanager
    def held(self) -> Iterator[None]:
        ticket = object()
        with self.changed:
            self.queue.append(ticket)
            self.changed.notify_all()  # a watcher of the queue (the tests) sees it grow
            self.changed.wait_for(lambda: self.inside < self.slots and self.queue[0] is ticket)
            self.queue.popleft()
            self.inside += 1
            self.most_inside = max(self.most_inside, self.inside)
            self.changed.notify_all()  # the next in the queue may fit too
        try:
            yield
        finally:
            with self.changed:
                self.inside -= 1
                self.changed.notify_all()


def glibc() -> ctypes.CDLL | None:
    """The C library when it is glibc (mallopt and malloc_trim are glibc's); None elsewhere."""
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name)
        return libc if hasattr(libc, "malloc_trim") and hasattr(libc, "mallopt") else None
    except OSError:
        return None


LIBC = glibc()


def tune_allocator(arenas: int = STEP_SLOTS) -> bool:
    """Cap glibc's arenas at `arenas` (before many threads have made their own: app/main.py's first run;
    deploy/serve_class.py also sets MALLOC_ARENA_MAX for its processes). False where the C library is not glibc."""
    return LIBC is not None and LIBC.mallopt(M_ARENA_MAX, arenas) == 1


class Steps:
    """The process's training steps: STEP_SLOTS at a time, first come first served, the allocator
    trimmed after a step once TRIM_EVERY seconds have passed since the last trim."""

    def __init__(self, slots: int = STEP_SLOTS, clock: Callable[[], float] = time.monotonic, trims: bool = True):
        self.gate = FirstComeGate(slots)
        self.clock, self.trimming = clock, trims  # trims=False: as before issue 43 (benchmarks/memory_class.py)
        self.trimmed_at = clock()
        self.trims = 0

    @contextmanager
    def one(self) -> Iterator[None]:
        with self.gate.held():
            yield
        now = self.clock()
        if self.trimming and LIBC is not None and now - self.trimmed_at >= TRIM_EVERY:
            self.trimmed_at = now  # a race here trims twice, harmlessly
            self.trims += 1
            LIBC.malloc_trim(0)


STEPS = Steps()


def one_step() -> AbstractContextManager[None]:
    """Around every training step of every experiment in the process: see Steps."""
    return STEPS.one()

