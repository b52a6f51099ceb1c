"""The class's shared store: what every student session publishes for the teacher's board, the
teacher's "follow me", and the teacher-key tries, held OUTSIDE the app processes so that every
process of a class (deploy/serve_class.py runs several behind nginx, maybe on several machines)
sees the same class.

Two stores, one meaning (ClassStore; open_store picks one from a URL):
- SQLiteStore (class_store_sqlite.py), the default: a file in the run directory, no server to run. WAL
  mode, so the board's reads never wait for a student's write, and a busy timeout, so the processes'
  writes take turns.
- RedisStore (class_store_redis.py), across machines: a real Redis server. The statuses are small key-values that must
  vanish on their own when nobody publishes them any more (a closed laptop, a killed process), and
  per-key expiry (SET ... PX) is what Redis is for (PostgreSQL would need a sweeper and a schema);
  each operation is one atomic script run on the server's clock, so processes on several machines
  agree on "last seen" and on the order of things.

    store = open_store(url, run_dir, keys=config.store_keys)  # url None: class.db in run_dir; sqlite:///a/b.db;
                                                              # redis://host:6379/0 (redis://:password@host...)
    store.publish(session_id, {"name": ..., "loss": ...})   # a student session, at once
    store.publish_all({session_id: status, ...})             # a process's sessions, every second
    store.forget(session_id)                # its session closed
    for s in store.statuses(): ...          # the board: s.session_id, s.status, s.age (s since last publish)
    seq = store.broadcast({"link": ...})    # the teacher's "follow me"
    store.latest_broadcast()                # Broadcast(seq, message) or None: a new seq is a new message
    store.count_try(client_id, 60) > 5      # too many tries of the teacher's key this minute, in any process
    store.tries_made(client_id, 60)         # the same count, read without counting a try
    store.claim_once("code:...", ttl)       # True the first time in any process (a one-time code), then False

What is kept, and for how long: a status per session (a JSON dict of at most MAX_JSON_BYTES),
stamped with the store's clock, for `ttl` seconds after its last publish (STATUS_TTL, a class), at
most `max_statuses` of them (the least recently seen go first); one broadcast, for `ttl` too; a try
count per client, for its window. Nothing is kept past that, so the store's size stays bounded
(Redis drops what expired itself; SQLite purges at every write, and its reads leave out what
expired, so a class.db that no process writes again keeps its last statuses until its run directory
is removed: serve_class.py removes the file when the class ends).

One store, one class: every entry is kept under the class's namespace, so classes sharing a Redis
server or a run directory's class.db (a `streamlit run` restarted with a new key) never see each
other's statuses, broadcasts or tries. The namespace and the key that signs the broadcasts are
derived from the teacher key one way (ClassKeys, from ClassConfig.store_keys): the store never holds
the teacher key, and writes nothing from which it could be read back. Whoever reaches a Redis server
without the class's key (a student on the school's network, when the server takes no password)
can read, delete and add statuses, but cannot make a "follow me": a broadcast whose HMAC-SHA256
does not check out against the class's signing key (unsigned, another class's, changed in any way)
is no broadcast. The seq is signed with the message, so an old broadcast written back under a new
seq does not check out either. A status is not signed: a forged one is only a row on the board.

Failure: an unreachable server, a missing directory, a read-only file or a store too busy to answer
in time raise StoreUnavailable with a plain message, never a sqlite3 or redis exception: the app
carries on without the board and says so. Both stores connect on first use and again after a
failure, so a store that comes back is used again. No Streamlit here.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

STATUS_TTL = 3 * 3600  # s: a class, as the lab store's TIME_TO_LIVE (not imported: that module brings torch)
MAX_JSON_BYTES = 4096  # of one status or broadcast as ASCII JSON (é is \u00e9, 6): a name, a page, numbers, a link
MAX_STATUSES = 500  # a class of 60, with every tab and reload of a few classes sharing the store
MAX_ID_CHARS = 100  # a session or client id (the app's tokens have 22)
# Numbers read back from the store are bounded before use: whoever can write to it (a student who reaches a
# Redis server with no password, or the class.db file) can write any. A broadcast's seq is an integer in
# [0, MAX_SEQ] (exact as a double, in JSON and in Redis's Lua; the clock in ms stays below it for 285,000
# years); a time more than CLOCK_SKEW s ahead of the store's clock was never stamped by the store, and a try
# window that ends later than its length from now was never opened by it: each such entry is dropped.
MAX_SEQ = 2**53 - 1
CLOCK_SKEW = 60.0  # s: the processes of a class on several machines share the server's clock (Redis) or one machine's
MAX_BROADCAST_ROUNDS = 100  # seqs a broadcast tries while others write first (4 threads racing took up to 12): then
# someone is rewriting the seq in a loop, and the teacher is told to send again


class StoreUnavailable(Exception):
    """The class store cannot be used now (unreachable, read-only, missing, too busy)."""


class Status(NamedTuple):
    session_id: str
    status: dict  # as published
    age: float  # s since it was last published, on the store's clock


class Broadcast(NamedTuple):
    seq: int  # larger than any earlier broadcast's, even one that expired
    message: dict  # as broadcast


@dataclass(frozen=True)
class ClassKeys:
    """What a store needs of its class's teacher key, each part derived from it one way
    (ClassConfig.store_keys): the store never holds the key itself."""

    namespace: str  # the class's entries apart from other classes' in one file or server: letters and digits
    signing: bytes = field(repr=False)  # the HMAC-SHA256 key of the teacher's broadcasts: printed, it could forge them

    def __post_init__(self):
        if not (self.namespace.isascii() and self.namespace.isalnum() and len(self.namespace) <= 64):
            raise ValueError(f"a class's namespace is 1 to 64 ASCII letters and digits, not {self.namespace!r:.80}")
        if len(self.signing) < 16:
            raise ValueError(f"a class's signing key has at least 16 bytes, not {len(self.signing)}")

    @classmethod
    def of_its_own(cls) -> ClassKeys:
        """Random keys: a store opened without its class's keys (a test's) is a class no other store
        object reads or writes, so no code path can leave the broadcasts signed by a key anyone knows."""
        return cls(secrets.token_hex(8), secrets.token_bytes(32))


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
    their arguments (ValueError) and speak dicts, sign and check the broadcasts; the subclasses store
    JSON text under the class's namespace."""

    ttl: float
    keys: ClassKeys

    def publish(self, session_id: str, status: dict) -> None:
        """Upsert `session_id`'s status (a JSON dict; keys come back as strings), seen now; it
        expires `ttl` s later unless published again. Past `max_statuses` the least recently seen
        other session's status is dropped."""
        self.put_status(checked_id(session_id, "a session id"), encoded(status, "a status"))

    def publish_all(self, statuses: dict[str, dict]) -> dict[str, str]:
        """publish() each of `statuses` (session id -> status) in one go: one transaction, or one pipeline
        to the server (the publisher's round: one of them a second for a process's class). A
        status the store refuses (not a JSON dict, too large) is left out, the others published;
        returns why each refused one was (session id -> the ValueError's message)."""
        bodies, refused = [], {}
        for session_id, status in statuses.items():
            try:
                bodies.append((checked_id(session_id, "a session id"), encoded(status, "a status")))
            except ValueError as err:
                refused[str(session_id)[:MAX_ID_CHARS]] = str(err)
        if bodies:
            self.put_statuses(bodies)
        return refused

    def forget(self, session_id: str) -> None:
        """Remove `session_id`'s status now (its session closed); nothing if there is none."""
        self.drop_status(checked_id(session_id, "a session id"))

    def statuses(self) -> list[Status]:
        """Every live status, the most recently seen first; expired ones are never returned, and
        so is a body that is not a JSON dict (not the app's: anyone who reaches a Redis server can write one)."""
        found = []
        for session_id, body, age in self.read_statuses():
            try:
                status = json.loads(body)
            except ValueError:
                continue
            if isinstance(status, dict):
                found.append(Status(session_id, status, age))
        return found

    def broadcast(self, message: dict) -> int:
        """Make `message` (a JSON dict: the teacher's "follow me") the current broadcast for `ttl` s;
        returns its seq. A seq is the store's clock in ms, or one past the previous seq if that is not
        larger, so it grows across processes, and across an expiry: a tab left open overnight tells
        the next class's first broadcast from the last one it saw. The seq and the message are signed
        together with the class's signing key."""
        body = encoded(message, "a broadcast")
        return self.put_broadcast(body, lambda seq: self.signature(str(seq), body))

    def latest_broadcast(self) -> Broadcast | None:
        """The current broadcast, or None if there has been none for `ttl` s, or if it is not signed by
        this class's key: written by someone without it, another class's, or changed since (its seq
        included). Nothing says why: a student has nothing to do about it."""
        latest = self.read_broadcast()
        if latest is None:
            return None
        seq, body, signature = latest
        if not (seq.isascii() and seq.isdigit() and len(seq) <= len(str(MAX_SEQ)) and int(seq) <= MAX_SEQ):
            return None  # no seq the store wrote ("1e308", 5,000 digits): refused before int() reads it
        # Compared as bytes: compare_digest refuses a str with a character past ASCII, which a forger may write
        if not hmac.compare_digest(signature.encode(), self.signature(seq, body).encode()):
            return None
        return Broadcast(int(seq), json.loads(body))

    def signature(self, seq: str, body: str) -> str:
        """The broadcast's HMAC-SHA256 under the class's signing key, as hex: `seq` in decimal, `body` its JSON."""
        return hmac.new(self.keys.signing, f"{seq}\n{body}".encode(), hashlib.sha256).hexdigest()

    def count_try(self, client_id: str, window: float) -> int:
        """Count one try of the teacher's key by `client_id` (an address, a session) and return how
        many it made in its current window, this one included: a window starts at a client's first
        try and lasts `window` s, so the app can refuse past N tries a window, in every process."""
        if not 0 < window < float("inf"):
            raise ValueError(f"a try window must be a positive number of seconds, not {window!r}")
        return self.add_try(checked_id(client_id, "a client id"), window)

    def claim_once(self, name: str, ttl: float) -> bool:
        """True for the first claim of `name` in `ttl` s, in any process; False after (a one-time code spent)."""
        return self.put_once(checked_id(name, "a name"), ttl)

    def tries_made(self, client_id: str, window: float) -> int:
        """How many tries `client_id` made in its current window of `window` s (0 if none is open, or if what
        is stored is no count a store kept), counting none."""
        return self.read_tries(checked_id(client_id, "a client id"), window)

    @abstractmethod
    def now(self) -> float:
        """The store's clock (s since the epoch): what "last seen" and the ages are measured on."""

    @abstractmethod
    def close(self) -> None:
        """Let go of the file or the connection; the next operation opens it again."""

    @abstractmethod
    def put_status(self, session_id: str, body: str) -> None: ...

    @abstractmethod
    def put_statuses(self, bodies: list[tuple[str, str]]) -> None:
        """put_status each (session id, body), all seen now; past the count cap the least recently seen
        go (among this call's own, all seen at once, which is arbitrary: a round larger than the cap)."""

    @abstractmethod
    def drop_status(self, session_id: str) -> None: ...

    @abstractmethod
    def read_statuses(self) -> list[tuple[str, str, float]]: ...

    @abstractmethod
    def put_broadcast(self, body: str, signed: Callable[[int], str]) -> int:
        """Store `body` as the broadcast under the seq it takes, with signed(seq), its signature; return the seq."""

    @abstractmethod
    def read_broadcast(self) -> tuple[str, str, str] | None:
        """The broadcast's seq, body and signature as stored (unchecked), or None."""

    @abstractmethod
    def add_try(self, client_id: str, window: float) -> int: ...

    @abstractmethod
    def read_tries(self, client_id: str, window: float) -> int: ...

    @abstractmethod
    def put_once(self, name: str, ttl: float) -> bool: ...


def open_store(url: str | None, run_dir: str | Path, *, keys: ClassKeys) -> ClassStore:
    """The class store a URL names, for the class `keys` derive from: None for class.db in `run_dir`,
    sqlite:///absolute/path.db, or redis://host:port/db (redis://:password@host:port/db for a server
    with requirepass; rediss:// over TLS). Nothing is opened until the first operation."""
    from app.session.class_store_sqlite import SQLiteStore  # here: both stores build on this module's ClassStore

    if url is None:
        return SQLiteStore(Path(run_dir) / "class.db", keys=keys)
    if url.startswith("sqlite:///"):
        return SQLiteStore(url.removeprefix("sqlite://"), keys=keys)
    if url.startswith(("redis://", "rediss://")):
        from app.session.class_store_redis import RedisStore

        return RedisStore(url, keys=keys)
    raise ValueError(f"a class store URL is sqlite:///absolute/path.db or redis://host:port/db (rediss:// over TLS),"
                     f" or none for class.db in the run directory; not {url!r:.80}")
