"""The publisher's nudges (issue 32): a page run publishes its session at once, so the board (every
second) shows a click within about a second instead of waiting for the next round; the rounds still
publish everyone; a store that failed is left to the next round, not tried at every click."""
import gc
import json
import threading
import time

import pytest

from app.session import class_publisher
from app.session.class_publisher import SILENT_AFTER, Publisher
from app.session.class_status import Presence
from app.session.class_store_sqlite import SQLiteStore
from app.widgets import state

from .test_build_train import app, build_page
from .test_page_reruns import tick

WAIT = 30.0  # s at most for the thread to publish: the test fails past it, it never waits it out


class Watched(SQLiteStore):
    """A real SQLite store that says when a status with a given name is published."""

    def __init__(self, path):
        super().__init__(path)
        self.published: list[tuple[str, str]] = []  # (key, name) in the order published
        self.changed = threading.Condition()

    def put_statuses(self, bodies: list[tuple[str, str]]) -> None:
        super().put_statuses(bodies)
        with self.changed:
            self.published += [(session_id, json.loads(body)["name"]) for session_id, body in bodies]
            self.changed.notify_all()

    def wait_for(self, key: str, name: str) -> bool:
        with self.changed:
            return self.changed.wait_for(lambda: (key, name) in self.published, timeout=WAIT)


@pytest.fixture
def store(tmp_path):
    opened = Watched(tmp_path / "class.db")
    yield opened
    opened.close()


def test_a_nudge_publishes_that_session_alone(store):
    publisher = Publisher(store, threaded=False)
    clicked, idle = Presence(name="Ada"), Presence(name="Alan")
    publisher.register(clicked)
    publisher.register(idle)
    publisher.nudge(clicked)
    publisher.publish_due()
    assert store.published == [(clicked.key, "Ada")]
    assert {entry.session_id: entry.status for entry in store.statuses()} == {clicked.key: clicked.status()}
    publisher.publish_due()  # nothing nudged since
    assert len(store.published) == 1


def test_a_nudged_session_gone_before_the_thread_looks_is_skipped(store):
    publisher = Publisher(store, threaded=False)
    gone = Presence(name="Ada")
    publisher.register(gone)
    publisher.nudge(gone)
    del gone
    gc.collect()
    publisher.publish_due()
    assert store.published == [] and store.statuses() == []


def test_a_round_publishes_the_nudged_too_and_clears_them(store):
    publisher = Publisher(store, threaded=False)
    here = Presence(name="Ada")
    publisher.register(here)
    publisher.nudge(here)
    assert publisher.publish_round()
    publisher.publish_due()  # the round published it: not again
    assert store.published == [(here.key, "Ada")]


def test_the_thread_publishes_a_nudge_long_before_the_next_round(store, monkeypatch):
    monkeypatch.setattr(class_publisher, "PUBLISH_EVERY", 3600.0)  # no second round within the test
    publisher = Publisher(store)
    here = Presence(name="Ada")
    publisher.register(here)  # starts the thread, whose first round is at once
    assert store.wait_for(here.key, "Ada")
    here.name = "Ada L."
    publisher.nudge(here)
    assert store.wait_for(here.key, "Ada L."), "the nudge waited for a round an hour away"
    assert store.statuses()[0].status["name"] == "Ada L."


def test_after_the_store_failed_nudges_wait_for_the_round(tmp_path):
    broken = Watched(tmp_path / "missing" / "class.db")  # its directory does not exist: every call fails
    publisher = Publisher(broken, threaded=False)
    here = Presence(name="Ada")
    publisher.register(here)
    assert not publisher.publish_round() and publisher.store_failed and publisher.problem
    (tmp_path / "missing").mkdir()
    publisher.nudge(here)  # the thread's loop leaves it to the round while store_failed (not run here)
    assert publisher.publish_round() and not publisher.store_failed and publisher.problem is None
    assert broken.published == [(here.key, "Ada")]
    broken.close()


def test_a_tick_of_its_sessions_training_is_a_sign_of_its_tab(store):
    """Under a full class a tick lasts seconds and the banner's poll waits behind it: a tick stamps its
    session's Presence. Its session's, not its Lab's: a reloaded tab's new session takes the same Lab,
    and the session before the reload must go quiet, or the board lists the student twice."""
    at = build_page(app())
    at.button(key="play").click().run()
    shared = at.session_state["lab"]
    here = Presence(name="Ada", lab=shared)
    before_reload = Presence(name="Ada", lab=shared)  # the old session's, left by a reload
    here.seen_at = before_reload.seen_at = time.monotonic() - SILENT_AFTER - 5
    at.session_state[state.PRESENCE] = here
    publisher = Publisher(store, threaded=False)
    publisher.register(here)
    publisher.register(before_reload)
    tick(at)  # the live fragment's own run: it draws, then trains the shared Lab
    assert shared.pace.marks and publisher.publish_round()
    assert store.published == [(here.key, "Ada")]


def test_the_thread_outlives_a_round_that_fails_and_says_why(store, monkeypatch):
    """A bug outside one status (here a Presence whose clock cannot be read) ends that round, not the
    process's publishing: the board says why, and the next round publishes again."""
    class Broken(Presence):
        @property
        def seen_at(self) -> float:
            raise RuntimeError("no clock")

        @seen_at.setter
        def seen_at(self, value: float) -> None:
            pass

    monkeypatch.setattr(class_publisher, "PUBLISH_EVERY", 0.05)
    publisher = Publisher(store)
    broken, fine = Broken(), Presence(name="Ada")
    publisher.register(broken)
    publisher.register(fine)  # every round fails while `broken` is registered
    deadline = time.monotonic() + WAIT
    while publisher.problem is None and time.monotonic() < deadline:
        time.sleep(0.01)  # polling the publisher's state for its first round's failure (nothing signals it)
    assert store.published == [] and "RuntimeError: no clock" in publisher.problem
    with publisher.lock:
        del publisher.sessions[broken.key]
    assert store.wait_for(fine.key, "Ada"), "the thread died with the round"
