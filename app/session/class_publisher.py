"""One thread per app process that publishes every student session's status to the class store
every PUBLISH_EVERY seconds (issue 32). No Streamlit here.

The pages never publish themselves: a session's page runs only keep its Presence current (cheap
attribute writes), and this thread reads each Presence and writes the store, off every page's run,
so publishing costs a student's training nothing but the thread's own few milliseconds. The thread
holds each Presence weakly: the session's state holds it, so when Streamlit drops a closed session
(server.disconnectedSessionTTL after its tab went) the Presence goes with it, and the thread removes
its entry from the store at once. A killed process publishes nothing more: its students' entries
age on the board ("disconnected") and expire. When the store fails, the thread keeps its message
for the board to say and tries again RETRY_AFTER seconds later.
"""
from __future__ import annotations

import threading
import time
import weakref

from app.session.class_status import Presence
from app.session.class_store import ClassStore, StoreUnavailable

PUBLISH_EVERY = 2.0  # s: the board refreshes as often
RETRY_AFTER = 10.0  # s after the store failed


class Publisher:
    """Publishes the statuses of the sessions registered, while each session holds its Presence."""

    def __init__(self, store: ClassStore):
        self.store = store
        self.sessions: weakref.WeakValueDictionary[str, Presence] = weakref.WeakValueDictionary()  # its key ->
        self.published_keys: set[str] = set()  # every key published and not yet forgotten
        self.lock = threading.Lock()  # over both: page runs register while the thread reads
        self.problem: str | None = None  # why the store failed last, until it works again
        self.published = 0  # rounds done, for tests and the board's health line
        self.thread: threading.Thread | None = None

    def register(self, presence: Presence) -> None:
        """From a page run: this session's Presence is published from now on (again: the same)."""
        with self.lock:
            self.sessions[presence.key] = presence
        if self.thread is None:
            self.start()

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
        while True:
            wait = PUBLISH_EVERY if self.publish_round() else RETRY_AFTER
            time.sleep(wait)  # the thread's own pace; nothing waits on it

    def publish_round(self) -> bool:
        """Publish every held session's status and forget the gone; False when the store failed."""
        with self.lock:
            sessions = dict(self.sessions)  # strong references for the round
            gone = self.published_keys - set(sessions)
        try:
            for key in gone:
                self.store.forget(key)
                with self.lock:
                    self.published_keys.discard(key)
            for key, presence in sessions.items():
                self.store.publish(key, presence.status())
                with self.lock:
                    self.published_keys.add(key)
        except StoreUnavailable as err:
            self.problem = str(err)
            return False
        self.problem = None
        self.published += 1
        return True
