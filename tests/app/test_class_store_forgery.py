"""Numbers forged into the class store (issue 43, finding 4), on the SQLite file and on a real redis-server:
whoever can write to the store (a student who reaches a Redis server with no password, or the class.db file)
writes a broadcast seq of 1e308 or 2**63 - 1, 500 statuses dated next year, a try count that never ends, or
keys of the wrong type. Each is bounded and typed before use: the teacher's "follow me" still goes out, the
real students stay on the board, the teacher's tries start again. And class.db, its -wal and -shm are the
owner's alone (0600)."""
import json
import os
import sqlite3
import stat
from contextlib import closing

import pytest

from app.session.class_config import TRY_WINDOW
from app.session.class_store import MAX_SEQ, MAX_STATUSES, ClassKeys, StoreUnavailable
from tests.app.test_class_store import (  # the two backends, and their fixtures used by name
    KEYS,
    STATUS,
    RedisBackend,
    SQLiteBackend,
    backend,  # noqa: F401
    ids,
    redis_url,  # noqa: F401
)

FOLLOW_ME = {"kind": "lesson", "lesson": "gru", "title": "GRU"}
YEAR = 365 * 24 * 3600.0


def write_seq(where, store, seq) -> None:
    """The broadcast's seq overwritten in place, as by someone without the class's key."""
    if isinstance(where, SQLiteBackend):
        with closing(sqlite3.connect(where.path)) as db, db:
            db.execute("UPDATE broadcast SET seq = ? WHERE namespace = ?", (seq, store.namespace))
    else:
        where.client.hset(store.broadcast_key, "seq", seq)


@pytest.mark.parametrize("seq", [1e308, 2**63 - 1, MAX_SEQ, -5, "twelve"], ids=str)
def test_a_forged_seq_neither_stops_nor_breaks_the_teachers_follow_me(backend, seq):  # noqa: F811
    """1e308 + 1 is 1e308: the Redis store waited for a seq past it for ever (25,089 operations/s, the page
    run never ended); SQLite's 2**63 - 1 + 1 raised OverflowError. A seq out of [0, MAX_SEQ) is none."""
    teacher, student = backend.open(), backend.open()
    first = teacher.broadcast({"kind": "setup", "link": "task=adding"})
    write_seq(backend, teacher, seq)
    assert student.latest_broadcast() is None  # unsigned under its new seq: no broadcast
    backend.let_pass(0.01)  # the store's clock in ms moves on: a seq that is none starts again from it
    sent = teacher.broadcast(FOLLOW_ME)
    assert first < sent < MAX_SEQ
    assert student.latest_broadcast() == (sent, FOLLOW_ME)


def test_a_huge_seq_written_with_a_valid_looking_signature_is_no_broadcast(backend):  # noqa: F811
    """A seq read back as "1e308" or as 5,000 digits is refused before int() reads it."""
    teacher, student = backend.open(), backend.open()
    teacher.broadcast(FOLLOW_ME)
    for seq in ("1e308", "9" * 5000):
        write_seq(backend, teacher, seq)
        assert student.latest_broadcast() is None


def future_statuses(where, store, count: int) -> None:
    """`count` statuses dated a year ahead of the store's clock, written straight into the store."""
    body = json.dumps({"name": "ghost", "page": "Home"})
    if isinstance(where, SQLiteBackend):
        with closing(sqlite3.connect(where.path)) as db, db:
            db.executemany("INSERT INTO status VALUES (?, ?, ?, ?)",
                           [(store.namespace, f"ghost-{i}", body, where.time + YEAR) for i in range(count)])
    else:
        seconds, microseconds = where.client.time()
        pipe = where.client.pipeline()
        for i in range(count):
            pipe.set(store.status_key + f"ghost-{i}", body)
            pipe.zadd(store.seen_key, {f"ghost-{i}": seconds + microseconds / 1e6 + YEAR})
        pipe.execute()


def test_statuses_dated_in_the_future_push_no_real_student_off_the_board(backend):  # noqa: F811
    student, board = backend.open(), backend.open()
    student.publish("zoe-session", STATUS)
    future_statuses(backend, board, MAX_STATUSES)
    assert ids(board) == ["zoe-session"]  # the ghosts are not shown ...
    student.publish_all({"zoe-session": STATUS, "ada-session": STATUS})
    assert set(ids(board)) == {"zoe-session", "ada-session"}  # ... and the count cap kept the real ones


def forge_tries(where, store, client_id: str) -> None:
    """A try count for `client_id` far past the limit, whose window never ends."""
    if isinstance(where, SQLiteBackend):
        with closing(sqlite3.connect(where.path)) as db, db:
            db.execute("INSERT OR REPLACE INTO tries VALUES (?, ?, ?, ?)",
                       (store.namespace, client_id, 10**9, where.time + 100 * YEAR))
    else:
        where.client.set(store.tries_key + client_id, 10**9)  # no expiry


def test_a_forged_try_count_starts_again_rather_than_locking_out_for_good(backend):  # noqa: F811
    store = backend.open()
    store.count_try("key:teacher", TRY_WINDOW)  # the store made (SQLite's tables)
    forge_tries(backend, store, "key:teacher")
    assert store.count_try("key:teacher", TRY_WINDOW) == 1
    assert store.count_try("key:teacher", TRY_WINDOW) == 2


def test_a_try_count_of_another_type_starts_again(redis_url):  # noqa: F811
    server = RedisBackend(redis_url)
    store = server.open()
    server.client.set(store.tries_key + "key:teacher", "many", px=10_000)
    assert store.count_try("key:teacher", TRY_WINDOW) == 1
    server.client.delete(store.tries_key + "key:teacher")
    server.client.lpush(store.tries_key + "key:teacher", "x")  # not even a string
    assert store.count_try("key:teacher", TRY_WINDOW) == 1


def test_redis_keys_of_the_wrong_type_are_replaced_not_fatal(redis_url):  # noqa: F811
    """The index a list, the broadcast a string: publish, read and broadcast still work."""
    server = RedisBackend(redis_url)
    store = server.open()
    server.client.lpush(store.seen_key, "x")
    server.client.set(store.broadcast_key, "not a hash")
    assert store.latest_broadcast() is None
    store.publish("zoe-session", STATUS)
    assert ids(store) == ["zoe-session"]
    sent = store.broadcast(FOLLOW_ME)
    assert store.latest_broadcast() == (sent, FOLLOW_ME)


def test_the_class_db_and_its_wal_are_the_owners_alone(tmp_path):
    server = SQLiteBackend(tmp_path)
    previous = os.umask(0o022)  # a usual umask: files 0644 unless made otherwise
    try:
        store = server.open(KEYS)
        store.publish("zoe-session", STATUS)
        files = [server.path, server.path.with_name("class.db-wal"), server.path.with_name("class.db-shm")]
        modes = {path.name: stat.S_IMODE(path.stat().st_mode) for path in files}
    finally:
        os.umask(previous)
    assert modes == {"class.db": 0o600, "class.db-wal": 0o600, "class.db-shm": 0o600}


def test_tries_made_reads_the_count_without_counting_and_a_forged_one_as_none(backend):  # noqa: F811
    store = backend.open()
    assert store.tries_made("key:address:10.0.0.9", TRY_WINDOW) == 0
    store.count_try("key:address:10.0.0.9", TRY_WINDOW)
    store.count_try("key:address:10.0.0.9", TRY_WINDOW)
    made = [store.tries_made("key:address:10.0.0.9", TRY_WINDOW) for _ in range(2)]
    assert made == [2, 2]
    forge_tries(backend, store, "key:address:10.0.0.9")
    assert store.tries_made("key:address:10.0.0.9", TRY_WINDOW) == 0  # a window no store opened
    assert store.count_try("key:address:10.0.0.9", TRY_WINDOW) == 1


def test_a_claim_is_once_in_any_process_until_it_expires(backend):  # noqa: F811
    """What spends the teacher link's one-time code (class_config.check_code)."""
    first, second = backend.open(), backend.open()
    assert first.claim_once("code:abc", 60) and not second.claim_once("code:abc", 60)
    assert not first.claim_once("code:abc", 60) and second.claim_once("code:def", 60)
    other = backend.open(ClassKeys("fedcba9876543210", b"another class's own signing key"))
    assert other.claim_once("code:abc", 60)  # another class's codes are its own


def test_an_existing_class_db_is_made_the_owners_alone_and_a_planted_link_is_refused(tmp_path):
    """From review: a class.db of an earlier version (0644) kept its mode; the default run directory in /tmp
    is predictable, so another user could plant class.db as a link to a file of theirs."""
    file = SQLiteBackend(tmp_path)
    file.path.write_bytes(b"")
    file.path.chmod(0o644)
    file.open(KEYS).publish("zoe-session", STATUS)
    assert stat.S_IMODE(file.path.stat().st_mode) == 0o600
    planted = SQLiteBackend(tmp_path / "elsewhere")
    planted.path.parent.mkdir()
    planted.path.symlink_to(tmp_path / "theirs.db")
    with pytest.raises(StoreUnavailable, match="not a file of this user's"):
        planted.open(KEYS).publish("zoe-session", STATUS)
    assert not (tmp_path / "theirs.db").exists()
