"""The class store, shared by every app process of a class: each test runs on the SQLite file and on
a real redis-server started for this module on loopback, and two store objects on one file or URL
stand for two app processes."""
import ctypes
import math
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from pathlib import Path

import pytest
import redis

from app.session.class_store import MAX_JSON_BYTES, Broadcast, ClassKeys, StoreUnavailable, open_store
from app.session.class_store_redis import RedisStore
from app.session.class_store_sqlite import SQLiteStore
from tests.redis_server import free_port, redis_server

ROOT = Path(__file__).resolve().parents[2]
KEYS = ClassKeys("0123456789abcdef", b"the class of these tests' signing key")  # as ClassConfig.store_keys makes


@pytest.fixture(scope="module")
def redis_url():
    """A real redis-server for this module (tests/redis_server.py)."""
    with redis_server() as url:
        yield url


class SQLiteBackend:
    """The default store, on a clock the test moves. Its stores are one class's (KEYS) unless told."""

    def __init__(self, tmp_path: Path):
        self.path = tmp_path / "class.db"
        self.url = f"sqlite://{self.path}"
        self.time = 1_800_000_000.0

    def open(self, keys: ClassKeys = KEYS, **settings) -> SQLiteStore:
        return SQLiteStore(self.path, clock=lambda: self.time, keys=keys, **settings)

    def let_pass(self, seconds: float) -> None:
        self.time += seconds

    def held(self) -> int:
        """Rows in the file, of any kind."""
        with closing(sqlite3.connect(self.path)) as db:
            return sum(db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
                       for table in ("status", "broadcast", "tries"))

    def kept_ids(self, keys: ClassKeys = KEYS) -> set[str]:
        with closing(sqlite3.connect(self.path)) as db:
            return {row[0] for row in db.execute("SELECT session_id FROM status WHERE namespace = ?",
                                                 (keys.namespace,))}

    # Written or read straight in the file, as by someone without the class's key (after `store` made it)
    def raw_broadcast(self, store: SQLiteStore) -> dict:
        with closing(sqlite3.connect(self.path)) as db:
            seq, body, signature = db.execute("SELECT seq, body, signature FROM broadcast WHERE namespace = ?",
                                              (store.namespace,)).fetchone()
        return {"seq": seq, "body": body, "signature": signature}

    def write_broadcast(self, store: SQLiteStore, fields: dict) -> None:
        """`fields`: seq, body and signature (unsigned without one)."""
        with closing(sqlite3.connect(self.path)) as db, db:
            db.execute("INSERT OR REPLACE INTO broadcast VALUES (?, ?, ?, ?, ?)", (store.namespace, fields["seq"],
                       fields["body"], fields.get("signature", ""), self.time))

    def write_status(self, store: SQLiteStore, session_id: str, body: str) -> None:
        with closing(sqlite3.connect(self.path)) as db, db:
            db.execute("INSERT INTO status VALUES (?, ?, ?, ?)", (store.namespace, session_id, body, self.time))


class RedisBackend:
    """The networked store, on the server's own clock: time passes for real. Its stores are one
    class's (KEYS) unless told."""

    def __init__(self, url: str):
        self.url = url
        self.client = redis.Redis.from_url(url, decode_responses=True)
        self.client.flushdb()

    def open(self, keys: ClassKeys = KEYS, **settings) -> RedisStore:
        return RedisStore(self.url, keys=keys, **settings)

    def let_pass(self, seconds: float) -> None:
        time.sleep(seconds)  # the passing time is what these tests are about

    def held(self) -> int:
        return len(self.client.keys())  # KEYS leaves out what expired; DBSIZE may count it a while

    def kept_ids(self, keys: ClassKeys = KEYS) -> set[str]:
        store = self.open(keys)  # for its key names alone
        return ({key.removeprefix(store.status_key) for key in self.client.keys(store.status_key + "*")}
                | set(self.client.zrange(store.seen_key, 0, -1)))

    # Written or read straight in the server with redis-py, as by someone without the class's key
    def raw_broadcast(self, store: RedisStore) -> dict:
        return self.client.hgetall(store.broadcast_key)

    def write_broadcast(self, store: RedisStore, fields: dict) -> None:
        """`fields`: seq, body and signature (unsigned without one)."""
        self.client.pipeline().delete(store.broadcast_key).hset(store.broadcast_key, mapping=fields).execute()

    def write_status(self, store: RedisStore, session_id: str, body: str) -> None:
        now = self.client.time()
        self.client.pipeline().set(store.status_key + session_id, body).zadd(
            store.seen_key, {session_id: now[0] + now[1] / 1e6}).execute()


@pytest.fixture(params=["sqlite", "redis"])
def backend(request, tmp_path):
    if request.param == "sqlite":
        yield SQLiteBackend(tmp_path)
    else:
        backend = RedisBackend(request.getfixturevalue("redis_url"))
        yield backend
        backend.client.close()


def poll(backend, look, done, step: float, limit: float) -> list:
    """What look() returned, each change once, until done(it), letting `step` s pass between looks;
    fails after `limit` s."""
    seen, waited = [], 0.0
    while True:
        now = look()
        if not seen or seen[-1] != now:
            seen.append(now)
        if done(now):
            return seen
        if waited > limit:
            pytest.fail(f"still {now!r} after {limit} s; seen {seen!r}")
        backend.let_pass(step)
        waited += step


def ids(store) -> list[str]:
    return [s.session_id for s in store.statuses()]


STATUS = {"name": "Zoë <b>", "page": "Gates", "lesson": "exploding", "steps": 1200, "loss": 0.031,
          "metric": 0.94, "diverged": False, "losses": [1.0, 0.5, 0.25]}


def test_a_status_published_in_one_process_is_read_in_another(backend):
    student, board = backend.open(), backend.open()
    assert board.statuses() == [] and board.latest_broadcast() is None
    student.publish("ada", STATUS)
    backend.let_pass(0.5)
    student.publish("bob", {"loss": float("inf"), "metric": float("nan")})  # a diverged run says so
    (bob, ada) = board.statuses()  # the most recently seen first
    assert ada.session_id == "ada" and ada.status == STATUS
    assert bob.session_id == "bob" and bob.status["loss"] == math.inf and math.isnan(bob.status["metric"])
    assert 0.5 <= ada.age + 1e-6 < 0.5 + 10 and 0 <= bob.age < ada.age  # 1e-6: the clocks count microseconds
    backend.let_pass(0.5)
    student.publish("ada", {**STATUS, "steps": 1300})  # an upsert: one entry, its newest status, seen now
    (ada, bob) = board.statuses()
    assert (ada.session_id, ada.status["steps"], bob.session_id) == ("ada", 1300, "bob") and ada.age < bob.age
    assert backend.kept_ids() == {"ada", "bob"}


def test_publishes_from_many_threads_are_none_lost(backend):
    """Each store object is used by four threads at once, as a Streamlit process's sessions use its one."""
    stores = [backend.open(), backend.open()]

    def publish_all(thread: int) -> None:
        for i in range(25):
            stores[thread % 2].publish(f"t{thread}-{i}", {"thread": thread, "step": i})
            if i % 5 == 0:
                stores[thread % 2].statuses()  # the board reads meanwhile

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(publish_all, range(8)))
    got = {s.session_id: s.status for s in stores[0].statuses()}
    assert got == {f"t{thread}-{i}": {"thread": thread, "step": i} for thread in range(8) for i in range(25)}


CHILD = """
import sys
from app.session.class_store import ClassKeys, open_store
store = open_store(sys.argv[1], None, keys=ClassKeys(sys.argv[3], bytes.fromhex(sys.argv[4])))
for i in range(50):
    store.publish(f"{sys.argv[2]}-{i}", {"step": i})
"""


def test_publishes_from_two_processes_are_none_lost(backend, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    keys = [KEYS.namespace, KEYS.signing.hex()]
    children = [subprocess.Popen([sys.executable, "-c", CHILD, backend.url, name, *keys], env=env, cwd=tmp_path,
                                 stderr=subprocess.PIPE, text=True) for name in ("p1", "p2")]
    for child in children:
        _, err = child.communicate(timeout=120)
        assert child.returncode == 0, err
    board = open_store(backend.url, tmp_path, keys=KEYS)  # the real clock, as the children's
    assert sorted(ids(board)) == sorted(f"{name}-{i}" for name in ("p1", "p2") for i in range(50))


def test_a_status_expires_unless_published_again_and_nothing_is_kept(backend):
    ttl = 2.0
    store = backend.open(ttl=ttl)
    store.publish("left", {"step": 1})
    store.publish("kept", {"step": 1})
    backend.let_pass(ttl / 2)
    store.publish("kept", {"step": 2})
    seen = poll(backend, lambda: sorted(ids(store)), lambda now: now == [], step=ttl / 20, limit=5 * ttl)
    assert seen == [["kept", "left"], ["kept"], []]
    store.forget("nobody")  # a write: SQLite purges there (its reads take no write lock), Redis had expired them
    assert backend.held() == 0


def test_a_closed_session_is_forgotten_at_once(backend):
    student, board = backend.open(), backend.open()
    student.publish("ada", STATUS)
    student.publish("bob", STATUS)
    board.forget("ada")
    board.forget("never-seen")
    assert ids(student) == ["bob"] and backend.kept_ids() == {"bob"}


def test_a_status_too_large_or_not_json_is_refused_and_the_last_one_kept(backend):
    store = backend.open()
    store.publish("ada", STATUS)
    padding = MAX_JSON_BYTES - len('{"name":""}')
    store.publish("bob", {"name": "x" * padding})  # exactly the cap
    for refused, says in [({"name": "x" * (padding + 1)}, "4,097 bytes"), ({"name": "é" * 1000}, "6,011 bytes"),
                          ({"model": object()}, "must be JSON"), (["a list"], "must be a dict")]:
        with pytest.raises(ValueError, match=says):
            store.publish("ada", refused)
    for bad_id in ["", "x" * 101, None]:
        with pytest.raises(ValueError, match="session id"):
            store.publish(bad_id, STATUS)
    with pytest.raises(ValueError, match="4,097 bytes"):
        store.broadcast({"link": "x" * (MAX_JSON_BYTES - len('{"link":""}') + 1)})
    assert {s.session_id: s.status for s in store.statuses()} == {"ada": STATUS, "bob": {"name": "x" * padding}}


def test_a_round_publishes_all_in_one_go_and_leaves_out_only_the_refused(backend):
    store, board = backend.open(), backend.open()
    store.publish("old", {"id": "old"})
    backend.let_pass(0.5)
    too_large = {"name": "x" * MAX_JSON_BYTES}
    refused = store.publish_all({"ada": STATUS, "bob": {"steps": 2}, "big": too_large, "": STATUS})
    assert set(refused) == {"big", ""} and "bytes" in refused["big"] and "session id" in refused[""]
    found = {s.session_id: s for s in board.statuses()}
    assert {k: s.status for k, s in found.items()} == {"old": {"id": "old"}, "ada": STATUS, "bob": {"steps": 2}}
    assert found["ada"].age == pytest.approx(found["bob"].age, abs=0.05) and found["ada"].age < found["old"].age
    assert store.publish_all({}) == {}


def test_a_round_past_the_count_keeps_the_newest(backend):
    store = backend.open(max_statuses=3)
    store.publish("a", {})
    backend.let_pass(0.01)
    store.publish_all({"b": {}, "c": {}})
    assert backend.kept_ids() == {"a", "b", "c"}
    backend.let_pass(0.01)
    store.publish_all({"d": {}, "c": {}})  # "a" is the least recently seen
    assert backend.kept_ids() == {"b", "c", "d"} and set(ids(store)) == {"b", "c", "d"}


def test_past_the_count_the_least_recently_seen_goes(backend):
    store = backend.open(max_statuses=3)
    for session_id in ["a", "b", "c", "a", "d"]:  # "a" seen again: "b" is now the least recently seen
        store.publish(session_id, {"id": session_id})
        backend.let_pass(0.01)
    assert ids(store) == ["d", "a", "c"] and backend.kept_ids() == {"a", "c", "d"}
    store.publish("e", {})
    assert ids(store) == ["e", "d", "a"] and backend.kept_ids() == {"a", "d", "e"}


def test_each_broadcast_has_a_larger_seq_seen_by_every_process(backend):
    teacher, student = backend.open(), backend.open()
    first = teacher.broadcast({"link": "?lesson=exploding"})
    assert student.latest_broadcast() == Broadcast(first, {"link": "?lesson=exploding"})
    second = student.broadcast({"link": "?lesson=lstm"})  # the teacher's tab on another process
    assert second > first and teacher.latest_broadcast() == Broadcast(second, {"link": "?lesson=lstm"})

    def send(thread: int) -> list[int]:
        return [(teacher, student)[thread % 2].broadcast({"thread": thread, "i": i}) for i in range(10)]

    with ThreadPoolExecutor(4) as pool:
        seqs = [seq for sent in pool.map(send, range(4)) for seq in sent]
    assert len(set(seqs)) == 40 and min(seqs) > second
    assert student.latest_broadcast().seq == max(seqs)


def test_a_broadcast_expires_with_the_class_and_the_next_still_counts_up(backend):
    ttl = 1.0
    store = backend.open(ttl=ttl)
    first = store.broadcast({"link": "?lesson=gru"})
    seen = poll(backend, store.latest_broadcast, lambda now: now is None, step=ttl / 10, limit=5 * ttl)
    assert seen == [Broadcast(first, {"link": "?lesson=gru"}), None]
    store.forget("nobody")  # a write, which purges
    assert backend.held() == 0
    assert store.broadcast({"link": "?lesson=lstm"}) > first  # a tab that saw the old one shows the new


def test_tries_are_counted_per_client_in_a_window_across_processes(backend):
    window = 1.0
    a, b = backend.open(), backend.open()
    assert [a.count_try("203.0.113.9", window), b.count_try("203.0.113.9", window),
            a.count_try("203.0.113.9", window)] == [1, 2, 3]
    assert b.count_try("198.51.100.7", window) == 1
    seen = poll(backend, lambda: a.count_try("203.0.113.9", window), lambda now: now == 1,
                step=window / 10, limit=5 * window)
    assert seen == [*range(4, 4 + len(seen) - 1), 1]  # counted up through the window, then a new one
    with ThreadPoolExecutor(4) as pool:
        counts = list(pool.map(lambda i: (a, b)[i % 2].count_try("192.0.2.1", 60), range(40)))
    assert sorted(counts) == list(range(1, 41))
    with pytest.raises(ValueError, match="positive"):
        a.count_try("192.0.2.1", 0)


EVERY_OPERATION = {
    "publish": lambda store: store.publish("ada", STATUS),
    "forget": lambda store: store.forget("ada"),
    "statuses": lambda store: store.statuses(),
    "broadcast": lambda store: store.broadcast({"link": "?lesson=gru"}),
    "latest_broadcast": lambda store: store.latest_broadcast(),
    "count_try": lambda store: store.count_try("192.0.2.1", 60),
}


def unavailable(store) -> dict[str, str]:
    """What each operation raised: the exception's class and message."""
    raised = {}
    for name, operation in EVERY_OPERATION.items():
        try:
            operation(store)
            raised[name] = "nothing"
        except Exception as err:
            raised[name] = f"{type(err).__name__}: {err}"
    return raised


def test_reads_go_on_while_another_process_holds_the_write_lock(tmp_path):
    """WAL: the board's read and a banner's never wait for a writer (a writer starved of the interpreter
    lock in a busy process can hold the file for seconds), and never make a writer wait."""
    backend = SQLiteBackend(tmp_path)
    store = backend.open()
    store.publish("ada", STATUS)
    store.broadcast({"link": "?lesson=gru"})
    with closing(sqlite3.connect(backend.path, isolation_level=None)) as other:
        other.execute("BEGIN IMMEDIATE")  # another process's write, under way
        assert [s.session_id for s in store.statuses()] == ["ada"]
        assert store.latest_broadcast().message == {"link": "?lesson=gru"}
        with pytest.raises(StoreUnavailable, match="locked"):  # a write waits the busy timeout, then says so
            store.publish("bob", STATUS)
        other.execute("COMMIT")
    reader = backend.open()
    backend.let_pass(1)
    with reader.reading():  # a read under way
        store.publish("bob", STATUS)
    assert ids(reader) == ["bob", "ada"]


def test_a_missing_directory_is_unavailable_until_it_is_made(tmp_path):
    store = SQLiteStore(tmp_path / "gone" / "class.db")
    for name, raised in unavailable(store).items():
        assert raised.startswith(f"StoreUnavailable: the class store {tmp_path}/gone/class.db cannot be used"), name
    (tmp_path / "gone").mkdir()
    store.publish("ada", STATUS)
    assert ids(store) == ["ada"]


READ_ONLY_CHILD = """
import sys
from app.session.class_store_sqlite import SQLiteStore
from tests.app.test_class_store import unavailable
for name, raised in unavailable(SQLiteStore(sys.argv[1])).items():
    print(name, raised)
"""


def without_root_overrides():
    """In the child, before it runs Python: drop CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH from its
    bounding set, so root's child meets file permissions as anyone does (root writes a 0444 file)."""
    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (1, 2):
        if libc.prctl(24, capability, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def test_a_read_only_file_is_unavailable():
    folder = Path(tempfile.mkdtemp(prefix="class-store-"))
    path = folder / "class.db"
    try:
        store = SQLiteStore(path)
        store.publish("ada", STATUS)
        store.close()
        path.chmod(0o444)
        folder.chmod(0o555)  # no journal can be made beside it either
        child = subprocess.run([sys.executable, "-c", READ_ONLY_CHILD, str(path)], cwd=ROOT, capture_output=True,
                               text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)},
                               preexec_fn=without_root_overrides if os.geteuid() == 0 else None)
        assert child.returncode == 0, child.stderr
        said = f"StoreUnavailable: the class store {path} cannot be used: attempt to write a readonly database"
        assert child.stdout.splitlines() == [f"{name} {said}" for name in EVERY_OPERATION]
    finally:
        folder.chmod(0o755)
        shutil.rmtree(folder)


def test_a_redis_with_nothing_listening_is_unavailable_and_its_password_is_never_said():
    port = free_port()
    store = open_store(f"redis://:sekrit@127.0.0.1:{port}/0", None, keys=KEYS)
    said = f"StoreUnavailable: the class store at redis 127.0.0.1:{port}/0 cannot be used: Error 111 connecting"
    for name, raised in unavailable(store).items():
        assert raised.startswith(said) and "sekrit" not in raised, (name, raised)
    with pytest.raises(StoreUnavailable):
        store.now()


def test_the_url_picks_the_store_and_anything_else_is_refused(tmp_path, redis_url):
    default = open_store(None, tmp_path, keys=KEYS)
    assert isinstance(default, SQLiteStore) and default.path == tmp_path / "class.db" and default.keys == KEYS
    default.publish("ada", STATUS)
    assert open_store(f"sqlite://{tmp_path}/class.db", None, keys=KEYS).statuses()[0].status == STATUS
    networked = open_store(redis_url, tmp_path, keys=KEYS)
    assert isinstance(networked, RedisStore) and abs(networked.now() - time.time()) < 60 and networked.keys == KEYS
    for bad in ["postgresql://127.0.0.1/class", "sqlite://class.db", "class.db", "", "http://127.0.0.1:6379"]:
        with pytest.raises(ValueError, match="sqlite:///absolute/path.db or redis://host:port/db"):
            open_store(bad, tmp_path, keys=KEYS)

