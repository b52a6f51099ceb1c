"""Play, pause and step for anything that trains one step at a time: the Lab and a Comparison.

Streamlit may start a session's next run (a click on Pause, Step or Reset) while a playing
fragment's training loop is still going in another thread. Every change to a model therefore
happens under the playback's lock, one whole step at a time, and the loop stops at the next step
boundary once `playing` is cleared. Python's locks are not fair: a loop that takes the lock again
right after each step could keep a download waiting for minutes, so anyone else takes it through
`hold()`, and the loop lets a waiting holder in between two steps.
"""
from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from app.session.memory import LEDGER


class Pace:
    """Steps per second of wall time on a playing page, over its last WINDOW ticks: drawing, training
    and the other sessions' share of the CPU all in, which is what a teacher waiting for a lesson's
    budget waits through. A pause starts a new window."""

    WINDOW = 20  # ticks: about 8-15 s of play

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self.clock = clock
        self.marks: deque[tuple[float, int]] = deque(maxlen=self.WINDOW)  # (clock(), steps taken)

    def mark(self, steps: int) -> None:
        self.marks.append((self.clock(), steps))

    def restart(self) -> None:
        self.marks.clear()

    def seconds_for(self, steps: int) -> float | None:
        """How long `steps` more take at this pace; None before two ticks have trained."""
        if len(self.marks) < 2 or self.marks[-1][1] <= self.marks[0][1]:
            return None
        (t0, s0), (t1, s1) = self.marks[0], self.marks[-1]
        return steps * (t1 - t0) / (s1 - s0)


class Playback(ABC):
    def __init__(self) -> None:
        self.playing = False
        self.ticking = False  # a tick of the live fragment is drawing (controls.live_training): Lab.recording
        self.pace = Pace()  # marked at each tick (controls.live_training)
        self.lock = threading.RLock()  # held for every change to a model, task or trainer
        self.seconds = 0.0  # spent in train_for: a Comparison's time to go is estimated from it
        self.turn = threading.Condition()  # guards `waiting`, and wakes the loop when no one waits
        self.waiting = 0  # threads waiting in hold() for the lock
        LEDGER.add(self)  # counted in the process's memory while it lives

    @contextmanager
    def hold(self) -> Iterator[None]:
        """The lock, taken between two training steps even while the loop plays."""
        with self.turn:
            self.waiting += 1
        try:
            self.lock.acquire()
        finally:
            with self.turn:
                self.waiting -= 1
                self.turn.notify_all()
        try:
            yield
        finally:
            self.lock.release()

    def drawn(self, seconds: float) -> None:  # noqa: B027 - most trainees keep nothing of it (Lab does)
        """The page's drawing of this took `seconds` of its thread's CPU time (controls.live_training)."""

    @abstractmethod
    def held_bytes(self) -> int:
        """What it holds that grows with its size (memory.Ledger): its models' weights four times over
        (memory.weights_bytes) and its data. Read from other sessions' threads, also while it is being built."""

    @property
    @abstractmethod
    def steps_taken(self) -> int:
        """Every step trained so far, of every model this trains."""

    @abstractmethod
    def steps_left(self, until: int) -> int:
        """The steps still to take until every model this trains reaches `until` (or stops)."""

    def seconds_to_go(self, until: int) -> float | None:
        """Wall time on the page until `until`, at its pace while playing (None: not known yet)."""
        return self.pace.seconds_for(self.steps_left(until))

    @abstractmethod
    def advance(self, until: int) -> bool:
        """One training step (the caller holds the lock); False when there was none to take:
        step `until` reached, or training stopped."""

    @abstractmethod
    def finished(self, until: int) -> bool:
        """Nothing left to train before step `until`."""

    def train_for(self, seconds: float, until: int, between_steps: Callable[[], None] = lambda: None,
                  clock: Callable[[], float] = time.perf_counter) -> int:
        """Train in single steps until `clock` has advanced by `seconds`, never past step `until`,
        so a page tick stays short and a pause lands between two whole steps; returns the steps
        taken. Stops playing once there is nothing left to train. `between_steps` is called before
        each step, outside the lock: it may raise to end the loop there (the page has a run to
        start). A page's tick passes time.thread_time, so that its training is this thread's CPU
        time, however many sessions share the interpreter (controls.live_training)."""
        done = 0
        wall_start, clock_start = time.perf_counter(), clock()  # wall: self.seconds, the time-to-go estimate
        try:
            while clock() - clock_start < seconds:
                between_steps()
                with self.turn:  # someone waits in hold(): let them in before the next step
                    self.turn.wait_for(lambda: self.waiting == 0, timeout=seconds)
                with self.lock:
                    if not self.playing or not self.advance(until):
                        break
                done += 1
        finally:
            with self.lock:
                self.seconds += time.perf_counter() - wall_start
                if self.finished(until):
                    self.playing = False
        return done
