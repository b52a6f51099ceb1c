"""The class's shared store: what every student session publishes for the teacher's board, the
teacher's "follow me", and the teacher-key tries, held OUTSIDE the app processes so that every
process of a class (deploy/serve_class.py runs several behind nginx, maybe on several machines)
sees the same class.

Two stores, one meaning (ClassStore; open_store picks one from a URL):
- SQLiteStore, the default: a file in the run directory, no server to run. WAL mode, so the board's
  reads never wait for a student's write, and a busy timeout, so the processes' writes take turns.
- RedisStore, across machines: a real Redis server. The statuses are small key-values that must
  vanish on their own when nobody publishes them any more (a closed laptop, a killed process), and
  per-key expiry (SET ... PX) is what Redis is for (PostgreSQL would need a sweeper and a schema);
  each operation is one atomic script run on the server's clock, so processes on several machines
  agree on "last seen" and on the order of things.

    store = open_store(url, run_dir)        # None: class.db in run_dir; sqlite:///a/b.db; redis://host:6379/0
    store.publish(session_id, {"name": ..., "loss": ...})   # each student session, every few seconds
    store.forget(session_id)                # its session closed
    for s in store.statuses(): ...          # the board: s.session_id, s.status, s.age (s since last publish)
    seq = store.broadcast({"link": ...})    # the teacher's "follow me"
    store.latest_broadcast()                # Broadcast(seq, message) or None: a new seq is a new message
    store.count_try(client_id, 60) > 5      # too many tries of the teacher's key this minute, in any process

What is kept, and for how long: a status per session (a JSON dict of at most MAX_JSON_BYTES),
stamped with the store's clock, for `ttl` seconds after its last publish (STATUS_TTL, a class), at
most `max_statuses` of them (the least recently seen go first); one broadcast, for `ttl` too; a try
count per client, for its window. Nothing is kept past that, so the store's size stays bounded
(Redis drops what expired itself; SQLite purges at every operation, so a class.db that no process
opens again keeps its last statuses until its run directory is removed).

Failure: an unreachable server, a missing directory, a read-only file or a store too busy to answer
in time raise StoreUnavailable with a plain message, never a sqlite3 or redis exception: the app
carries on without the board and says so. Both stores connect on first use and again after a
failure, so a store that comes back is used again. No Streamlit here.
"""
from __future__ import annotations

import json
import sqlite3
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

STATUS_TTL = 3 * 3600  # s: a class, as the lab store's TIME_TO_LIVE (not imported: that module brings torch)
MAX_JSON_BYTES = 4096  # of one status or broadcast as ASCII JSON (é is \u00e9, 6): a name, a page, numbers, a link
MAX_STATUSES = 500  # a class of 60, with every tab and reload of a few classes sharing the store
MAX_ID_CHARS = 100  # a session or client id (the app's tokens have 22)
SQLITE_BUSY_TIMEOUT = 2.0  # s a write waits for another process's; each holds the file for well under 1 ms
REDIS_TIMEOUT = 1.0  # s to connect or to answer: a student's page run waits at most this, twice (one retry)
# The Redis keys, apart from whatever else shares the server: a session's status (its body, expiring
# by itself), the index of the statuses (a sorted set: session id -> when last seen, for the order,
# the ages and the count cap), the broadcast (a hash: seq, body), a client's try count.
STATUS_KEY, SEEN_KEY = "unrolled:status:", "unrolled:seen"
BROADCAST_KEY, TRIES_KEY = "unrolled:broadcast", "unrolled:try:"


class StoreUnavailable(Exception):
    """The class store cannot be used now (unreachable, read-only, missing, too busy)."""


class Status(NamedTuple):
    session_id: str
    status: dict  # as published
    age: float  # s since it was last published, on the store's clock


class Broadcast(NamedTuple):
    seq: int  # larger than any earlier broadcast's, even one that expired
    message: dict  # as broadcast


def checked_id(text: object, what: str) -> str:
    if not isinstance(text, str) or not 0 < len(text) <= MAX_ID_CHARS:
        raise ValueError(f"{what} must be a string of 1 to {MAX_ID_CHARS} characters, not {text!r:.40}")
    return text


def encoded(value: object, what: str) -> str:
    """`value` as compact JSON, refused past MAX_JSON_BYTES (a name of 10,000 characters)."""
    if not isinstance(value, dict):
        raise ValueError(f"{what} must be a dict, not {type(value).__name__}")
    try:
        text = json.dumps(value, separators=(",", ":"))  # ASCII: its length is its size
    except (TypeError, ValueError) as err:  # an object JSON cannot hold, or a dict holding itself
        raise ValueError(f"{what} must be JSON: {err}") from err
    size = len(text)
    if size > MAX_JSON_BYTES:
        raise ValueError(f"{what} is {size:,} bytes of JSON; the class store takes at most {MAX_JSON_BYTES:,}")
    return text


class ClassStore(ABC):
    """One class's shared state. Every method may raise StoreUnavailable; the public methods check
    their arguments (ValueError) and speak dicts, the subclasses store JSON text."""

    ttl: float

    def publish(self, session_id: str, status: dict) -> None:
        """Upsert `session_id`'s status (a JSON dict; keys come back as strings), seen now; it
        expires `ttl` s later unless published again. Past `max_statuses` the least recently seen
        other session's status is dropped."""
        self.put_status(checked_id(session_id, "a session id"), encoded(status, "a status"))

    def forget(self, session_id: str) -> None:
        """Remove `session_id`'s status now (its session closed); nothing if there is none."""
        self.drop_status(checked_id(session_id, "a session id"))

    def statuses(self) -> list[Status]:
        """Every live status, the most recently seen first; expired ones are purged, never returned."""
        return [Status(session_id, json.loads(body), age) for session_id, body, age in self.read_statuses()]

    def broadcast(self, message: dict) -> int:
        """Make `message` (a JSON dict: the teacher's "follow me") the current broadcast for `ttl` s;
        returns its seq. A seq is the store's clock in ms, or one past the previous seq if that is not
        larger, so it grows across processes, and across an expiry: a tab left open overnight tells
        the next class's first broadcast from the last one it saw."""
        return self.put_broadcast(encoded(message, "a broadcast"))

    def latest_broadcast(self) -> Broadcast | None:
        """The current broadcast, or None if there has been none for `ttl` s."""
        latest = self.read_broadcast()
        return None if latest is None else Broadcast(latest[0], json.loads(latest[1]))

    def count_try(self, client_id: str, window: float) -> int:
        """Count one try of the teacher's key by `client_id` (an address, a session) and return how
        many it made in its current window, this one included: a window starts at a client's first
        try and lasts `window` s, so the app can refuse past N tries a window, in every process."""
        if not 0 < window < float("inf"):
            raise ValueError(f"a try window must be a positive number of seconds, not {window!r}")
        return self.add_try(checked_id(client_id, "a client id"), window)

    @abstractmethod
    def now(self) -> float:
        """The store's clock (s since the epoch): what "last seen" and the ages are measured on."""

    @abstractmethod
    def close(self) -> None:
        """Let go of the file or the connection; the next operation opens it again."""

    @abstractmethod
    def put_status(self, session_id: str, body: str) -> None: ...

    @abstractmethod
    def drop_status(self, session_id: str) -> None: ...

    @abstractmethod
    def read_statuses(self) -> list[tuple[str, str, float]]: ...

    @abstractmethod
    def put_broadcast(self, body: str) -> int: ...

    @abstractmethod
    def read_broadcast(self) -> tuple[int, str] | None: ...

    @abstractmethod
    def add_try(self, client_id: str, window: float) -> int: ...


SCHEMA = """
CREATE TABLE IF NOT EXISTS status (session_id TEXT PRIMARY KEY, body TEXT NOT NULL, seen REAL NOT NULL);
CREATE INDEX IF NOT EXISTS status_by_seen ON status (seen);
CREATE TABLE IF NOT EXISTS broadcast (seq INTEGER NOT NULL, body TEXT NOT NULL, sent REAL NOT NULL);
CREATE TABLE IF NOT EXISTS tries (client_id TEXT PRIMARY KEY, count INTEGER NOT NULL, ends REAL NOT NULL);
"""


class SQLiteStore(ClassStore):
    """The class store in one SQLite file. One connection per store object, used under a lock:
    Streamlit runs every script run on a new thread, so a connection per thread would be opened and
    closed over and over, and SQLite lets one writer in at a time anyway; each operation holds the
    lock for one short transaction. Other processes wait for the file through the busy timeout."""

    def __init__(self, path: str | Path, ttl: float = STATUS_TTL, max_statuses: int = MAX_STATUSES,
                 clock: Callable[[], float] = time.time):
        self.path, self.ttl, self.max_statuses = Path(path), ttl, max_statuses
        self.clock = clock  # the wall clock: the processes on one machine share it; a test hands in its own
        self.db: sqlite3.Connection | None = None  # opened on first use
        self.lock = threading.Lock()

    def now(self) -> float:
        return self.clock()

    def close(self) -> None:
        with self.lock:
            self.let_go()

    def let_go(self) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (BEGIN IMMEDIATE: it takes the write lock at once, so it waits in the
        busy timeout rather than failing when a read turns into a write), purged of what expired."""
        with self.lock:
            try:
                if self.db is None:
                    self.db = sqlite3.connect(self.path, timeout=SQLITE_BUSY_TIMEOUT, isolation_level=None,
                                              check_same_thread=False)  # one thread at a time: the lock
                    self.db.execute("PRAGMA journal_mode=WAL")
                    self.db.execute("PRAGMA synchronous=NORMAL")  # safe in WAL; a power cut may lose the last second
                    self.db.executescript(SCHEMA)
                self.db.execute("BEGIN IMMEDIATE")
                try:
                    self.purge(self.db, self.clock())
                    yield self.db
                except BaseException:
                    self.db.execute("ROLLBACK")
                    raise
                self.db.execute("COMMIT")
            except sqlite3.Error as err:
                self.let_go()  # opened again next time: the file may come back
                raise StoreUnavailable(f"the class store {self.path} cannot be used: {err}") from err

    def purge(self, db: sqlite3.Connection, now: float) -> None:
        db.execute("DELETE FROM status WHERE seen <= ?", (now - self.ttl,))
        db.execute("DELETE FROM broadcast WHERE sent <= ?", (now - self.ttl,))
        db.execute("DELETE FROM tries WHERE ends <= ?", (now,))

    def put_status(self, session_id: str, body: str) -> None:
        with self.transaction() as db:
            db.execute("INSERT INTO status VALUES (?, ?, ?) ON CONFLICT (session_id) DO UPDATE"
                       " SET body = excluded.body, seen = excluded.seen", (session_id, body, self.clock()))
            db.execute("DELETE FROM status WHERE session_id IN (SELECT session_id FROM status WHERE session_id != ?"
                       " ORDER BY seen DESC LIMIT -1 OFFSET ?)", (session_id, self.max_statuses - 1))

    def drop_status(self, session_id: str) -> None:
        with self.transaction() as db:
            db.execute("DELETE FROM status WHERE session_id = ?", (session_id,))

    def read_statuses(self) -> list[tuple[str, str, float]]:
        with self.transaction() as db:
            now = self.clock()
            rows = db.execute("SELECT session_id, body, seen FROM status ORDER BY seen DESC").fetchall()
        return [(session_id, body, max(0.0, now - seen)) for session_id, body, seen in rows]

    def put_broadcast(self, body: str) -> int:
        with self.transaction() as db:
            now = self.clock()
            previous = db.execute("SELECT max(seq) FROM broadcast").fetchone()[0]
            seq = max(int(now * 1000), 0 if previous is None else previous + 1)
            db.execute("DELETE FROM broadcast")
            db.execute("INSERT INTO broadcast VALUES (?, ?, ?)", (seq, body, now))
        return seq

    def read_broadcast(self) -> tuple[int, str] | None:
        with self.transaction() as db:
            return db.execute("SELECT seq, body FROM broadcast").fetchone()

    def add_try(self, client_id: str, window: float) -> int:
        with self.transaction() as db:
            counted = db.execute("INSERT INTO tries VALUES (?, 1, ?) ON CONFLICT (client_id) DO UPDATE"
                                 " SET count = count + 1 RETURNING count", (client_id, self.clock() + window))
            return counted.fetchone()[0]


# The Redis scripts: each runs atomically on the server, on the server's clock (TIME).
NOW = "local t = redis.call('TIME') local now = string.format('%d.%06d', tonumber(t[1]), tonumber(t[2]))\n"

PUBLISH = NOW + """
-- KEYS: the index, this status. ARGV: session id, body, ttl in ms, the count cap, the status prefix
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', string.format('%.6f', now - ARGV[3] / 1000))
redis.call('ZREM', KEYS[1], ARGV[1])
local over = redis.call('ZCARD', KEYS[1]) - (tonumber(ARGV[4]) - 1)
if over > 0 then
    local oldest = redis.call('ZPOPMIN', KEYS[1], over)
    for i = 1, #oldest, 2 do redis.call('DEL', ARGV[5] .. oldest[i]) end
end
redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3])
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
"""

STATUSES = NOW + """
-- KEYS: the index. ARGV: ttl in ms, the status prefix.
-- Returns id, body, age for each: the age as text, as a number it would be cut to an integer
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', string.format('%.6f', now - ARGV[1] / 1000))
local seen = redis.call('ZRANGE', KEYS[1], 0, -1, 'REV', 'WITHSCORES')
local found = {}
for i = 1, #seen, 2 do
    local body = redis.call('GET', ARGV[2] .. seen[i])
    if body then
        table.insert(found, seen[i]) table.insert(found, body)
        table.insert(found, string.format('%.6f', math.max(0, now - seen[i + 1])))
    else
        redis.call('ZREM', KEYS[1], seen[i])  -- forgotten, or expired a moment ago
    end
end
return found
"""

BROADCAST = NOW + """
-- KEYS: the broadcast. ARGV: body, ttl in ms. Returns its seq.
local previous = tonumber(redis.call('HGET', KEYS[1], 'seq') or '-1')
local seq = math.max(math.floor(now * 1000), previous + 1)
redis.call('HSET', KEYS[1], 'seq', string.format('%d', seq), 'body', ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return seq
"""


class RedisStore(ClassStore):
    """The class store on a Redis server (redis://host:port/db). redis-py's client is thread-safe
    (a pool of connections), so the store is shared by every session of a process as it is."""

    def __init__(self, url: str, ttl: float = STATUS_TTL, max_statuses: int = MAX_STATUSES):
        self.ttl, self.max_statuses = ttl, max_statuses
        self.ttl_ms = max(1, round(ttl * 1000))
        # One retry at once, for a pooled connection the server closed (it restarted); redis-py's default
        # retries ten times with back-off, seconds a student's page would wait for a server that is down.
        self.client = redis.Redis.from_url(url, decode_responses=True, socket_timeout=REDIS_TIMEOUT,
                                           socket_connect_timeout=REDIS_TIMEOUT, retry=Retry(NoBackoff(), 1))
        where = self.client.connection_pool.connection_kwargs
        self.where = f"{where['host']}:{where['port']}/{where['db']}"  # for messages: the URL may hold a password
        self.scripts = {name: self.client.register_script(lua)
                        for name, lua in [("publish", PUBLISH), ("statuses", STATUSES), ("broadcast", BROADCAST)]}

    @contextmanager
    def reached(self) -> Iterator[redis.Redis]:
        try:
            yield self.client
        except redis.RedisError as err:
            raise StoreUnavailable(f"the class store at redis {self.where} cannot be used: {err}") from err

    def now(self) -> float:
        with self.reached() as client:
            seconds, microseconds = client.time()
        return seconds + microseconds / 1e6

    def close(self) -> None:
        self.client.close()

    def put_status(self, session_id: str, body: str) -> None:
        with self.reached():
            self.scripts["publish"](keys=[SEEN_KEY, STATUS_KEY + session_id],
                                    args=[session_id, body, self.ttl_ms, self.max_statuses, STATUS_KEY])

    def drop_status(self, session_id: str) -> None:
        with self.reached() as client:
            client.pipeline().delete(STATUS_KEY + session_id).zrem(SEEN_KEY, session_id).execute()

    def read_statuses(self) -> list[tuple[str, str, float]]:
        with self.reached():
            found = self.scripts["statuses"](keys=[SEEN_KEY], args=[self.ttl_ms, STATUS_KEY])
        return [(found[i], found[i + 1], float(found[i + 2])) for i in range(0, len(found), 3)]

    def put_broadcast(self, body: str) -> int:
        with self.reached():
            return self.scripts["broadcast"](keys=[BROADCAST_KEY], args=[body, self.ttl_ms])

    def read_broadcast(self) -> tuple[int, str] | None:
        with self.reached() as client:
            seq, body = client.hmget(BROADCAST_KEY, ["seq", "body"])
        return None if seq is None or body is None else (int(seq), body)

    def add_try(self, client_id: str, window: float) -> int:
        key = TRIES_KEY + client_id
        with self.reached() as client:  # the window starts with the key; INCR keeps its expiry
            _, count = client.pipeline().set(key, 0, px=max(1, round(window * 1000)), nx=True).incr(key).execute()
        return count


def open_store(url: str | None, run_dir: str | Path) -> ClassStore:
    """The class store a URL names: None for class.db in `run_dir`, sqlite:///absolute/path.db, or
    redis://host:port/db (rediss:// over TLS). Nothing is opened until the first operation."""
    if url is None:
        return SQLiteStore(Path(run_dir) / "class.db")
    if url.startswith("sqlite:///"):
        return SQLiteStore(url.removeprefix("sqlite://"))
    if url.startswith(("redis://", "rediss://")):
        return RedisStore(url)
    raise ValueError(f"a class store URL is sqlite:///absolute/path.db or redis://host:port/db (rediss:// over TLS),"
                     f" or none for class.db in the run directory; not {url!r:.80}")
