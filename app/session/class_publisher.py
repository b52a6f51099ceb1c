"""One thread per app process that publishes every student session's status to the class store
every PUBLISH_EVERY seconds, and a session whose page has just run at once (issue 32). No Streamlit here.

The pages never publish themselves: a session's page runs only keep its Presence current (cheap
attribute writes), and this thread reads each Presence and writes the store, off every page's run,
so publishing costs a student's training nothing but the thread's own few milliseconds. A page run
is where what the teacher watches changes (the page or lesson opened, a name, Play or Pause, an
answer), so each one nudges the thread, which publishes that session within a moment instead of at
its next round: the board (refreshed every second) shows such a change within about a second,
where waiting for the round would add up to PUBLISH_EVERY more. Steps and curves move on every
tick, which nudges nothing: they are published by the rounds.

A session is published while its browser is there: its page stamps its Presence on every run and
every FOLLOW_POLL seconds (the follow banner's fragment, which runs only while the tab is connected),
and its training's ticks, which only a connected tab asks for, count too (state.tab_alive).
Silent for SILENT_AFTER seconds (a closed tab, a lost network), it is no longer published, so its
entry ages on the board ("disconnected"); silent for FORGET_AFTER, or its Presence gone with its
session's state, its entry is removed. A killed process publishes nothing more: its students'
entries age the same way and expire. The thread never dies of one session's status: a failure is
kept as `problem` for the board to say, the others are published. When the store fails it tries
again at the next round (a SQLite file busy past its timeout under a loaded machine's class, a Redis
server restarting), and nudges wait for a round that works: a round costs this thread alone, while a
nudge comes with every page run.
"""
from __future__ import annotations

import threading
import time
import weakref

from app.session.class_status import Presence
from app.session.class_store import ClassStore, StoreUnavailable

# s between rounds: a status is 0.1 ms to make and 0.1 ms to write (SQLite), so 30 sessions a
# process cost it under 1% of a core, and the board (refreshed every second) is at most about two
# seconds behind a student's steps
PUBLISH_EVERY = 1.0
SILENT_AFTER = 25.0  # s without a page run, a banner poll (every 10 s) or a tick: the tab is gone, or hidden
FORGET_AFTER = 600.0  # s silent before its entry leaves the board


class Publisher:
    """Publishes the statuses of the sessions registered, while each session holds its Presence; from
    its own thread, started at the first registration (threaded=False: only when publish_round is
    called, as the tests do, so that no round runs behind their backs)."""

    def __init__(self, store: ClassStore, threaded: bool = True):
        self.store, self.threaded = store, threaded
        self.sessions: weakref.WeakValueDictionary[str, Presence] = weakref.WeakValueDictionary()  # its key ->
        self.published_keys: set[str] = set()  # every key published and not yet forgotten
        self.lock = threading.Lock()  # over both: page runs register while the thread reads
        self.problem: str | None = None  # why the last round failed, until one works again
        self.store_failed = False  # the store itself, at the last try: nudges wait for the next round
        self.thread: threading.Thread | None = None
        self.due: set[str] = set()  # keys of the sessions nudged since the thread last published
        self.wake = threading.Event()  # set by a nudge

    def register(self, presence: Presence) -> None:
        """From a page run: this session's Presence is published from now on (again: the same)."""
        with self.lock:
            self.sessions[presence.key] = presence
        if self.thread is None and self.threaded:
            self.start()

    def nudge(self, presence: Presence) -> None:
        """From a page run: publish this session now (from the thread), not at the next round."""
        with self.lock:
            self.due.add(presence.key)
        self.wake.set()

    def unregister(self, presence: Presence) -> None:
        """This session publishes no more (the teacher's, once it holds the board), and its entry goes."""
        with self.lock:
            self.sessions.pop(presence.key, None)
            self.published_keys.discard(presence.key)
        self.store.forget(presence.key)  # StoreUnavailable for the caller: the board says it

    def start(self) -> None:
        with self.lock:
            if self.thread is None:
                self.thread = threading.Thread(target=self.loop, name="class-publisher", daemon=True)
                self.thread.start()

    def loop(self) -> None:
        next_round = time.monotonic()
        while True:
            self.wake.wait(timeout=max(0.0, next_round - time.monotonic()))  # a round is due, or a nudge came
            self.wake.clear()
            try:
                if time.monotonic() >= next_round:
                    next_round = time.monotonic() + PUBLISH_EVERY
                    self.publish_round()
                elif not self.store_failed:  # a store that failed is tried again at the round, not at every click
                    self.publish_due()
            except Exception as err:  # a bug of one round must not end the class's board for this process
                self.problem = f"publishing failed ({type(err).__name__}: {err})"

    def publish_due(self) -> None:
        """Publish the sessions nudged since the last round or call, if they are still there."""
        with self.lock:
            due = [self.sessions.get(key) for key in self.due]
            self.due.clear()
        self.publish([presence for presence in due if presence is not None])

    def publish_round(self) -> bool:
        """Publish every present session's status, leave the silent to age, forget the long silent and
        the gone; False when the store failed."""
        now = time.monotonic()  # Presence.seen_at's clock
        with self.lock:
            sessions = dict(self.sessions)  # strong references for the round
            seen_at = {key: presence.seen_at for key, presence in sessions.items()}  # read once for the round
            for key in sessions:
                if now - seen_at[key] > FORGET_AFTER:
                    del self.sessions[key]
            gone = self.published_keys - {k for k in sessions if now - seen_at[k] <= FORGET_AFTER}
            self.due.clear()  # the round publishes them
        try:
            for key in gone:
                self.store.forget(key)
                with self.lock:
                    self.published_keys.discard(key)
        except StoreUnavailable as err:
            self.problem, self.store_failed = str(err), True
            return False
        return self.publish([p for k, p in sessions.items() if now - seen_at[k] <= SILENT_AFTER])

    def publish(self, present: list[Presence]) -> bool:
        """Publish each one's status, all in one write; False when the store failed (why: `problem`)."""
        statuses, failed = {}, None
        for presence in present:
            try:
                statuses[presence.key] = presence.status()
            except Exception as err:  # one session's bug must not stop the class's board
                failed = f"a session's status could not be made ({type(err).__name__}: {err})"
        if not statuses:  # nothing written: the store is as it was
            self.problem = failed or (self.problem if self.store_failed else None)
            return not self.store_failed
        try:
            refused = self.store.publish_all(statuses)
        except StoreUnavailable as err:
            self.problem, self.store_failed = str(err), True
            return False
        with self.lock:
            self.published_keys |= statuses.keys() - refused.keys()
        self.problem, self.store_failed = next(iter(refused.values()), failed), False  # e.g. a status over the cap
        return True
