"""The class store in one SQLite file, the default (class_store.py says what a class store holds and
keeps): no server to run, WAL mode so that reads never wait for a write nor make one wait, and a busy
timeout so that the processes' writes take turns. No Streamlit here.
"""
from __future__ import annotations

import json
import os
import sqlite3
import stat
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from app.session.class_store import (
    CLOCK_SKEW,
    MAX_SEQ,
    MAX_STATUSES,
    STATUS_TTL,
    ClassKeys,
    ClassStore,
    StoreUnavailable,
)

SQLITE_BUSY_TIMEOUT = 2.0  # s a write waits for another process's; each holds the file for well under 1 ms
# The file's tables, each row under its class's namespace. A file of another version (PRAGMA user_version;
# 0 before the namespaces) is made anew: it holds only what expires within a class anyway.
SCHEMA_VERSION = 2  # 2: once, the one-time codes used
SCHEMA = (
    "DROP TABLE IF EXISTS status", "DROP TABLE IF EXISTS broadcast", "DROP TABLE IF EXISTS tries",
    "DROP TABLE IF EXISTS once",
    "CREATE TABLE status (namespace TEXT NOT NULL, session_id TEXT NOT NULL, body TEXT NOT NULL, seen REAL NOT NULL,"
    " PRIMARY KEY (namespace, session_id))",
    "CREATE INDEX status_by_seen ON status (namespace, seen)",
    "CREATE TABLE broadcast (namespace TEXT PRIMARY KEY, seq INTEGER NOT NULL, body TEXT NOT NULL,"
    " signature TEXT NOT NULL, sent REAL NOT NULL)",
    "CREATE TABLE tries (namespace TEXT NOT NULL, client_id TEXT NOT NULL, count INTEGER NOT NULL, ends REAL NOT NULL,"
    " PRIMARY KEY (namespace, client_id))",
    "CREATE TABLE once (namespace TEXT NOT NULL, name TEXT NOT NULL, ends REAL NOT NULL,"
    " PRIMARY KEY (namespace, name))",
    f"PRAGMA user_version = {SCHEMA_VERSION}",
)


class SQLiteStore(ClassStore):
    """The class store in one SQLite file. One connection per store object, used under a lock:
    Streamlit runs every script run on a new thread, so a connection per thread would be opened and
    closed over and over, and SQLite lets one writer in at a time anyway; each operation holds the
    lock for one short transaction. Other processes wait for the file through the busy timeout.
    Several classes may share the file: each store reads and writes its own class's rows, and purges
    what expired of every class's."""

    def __init__(self, path: str | Path, ttl: float = STATUS_TTL, max_statuses: int = MAX_STATUSES,
                 clock: Callable[[], float] = time.time, keys: ClassKeys | None = None):
        self.path, self.ttl, self.max_statuses = Path(path), ttl, max_statuses
        self.keys = keys or ClassKeys.of_its_own()
        self.namespace = self.keys.namespace
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
                db = self.connected()
                db.execute("BEGIN IMMEDIATE")
                try:
                    self.purge(db, self.clock())
                    yield db
                except BaseException:
                    db.execute("ROLLBACK")
                    raise
                db.execute("COMMIT")
            except (sqlite3.Error, OSError) as err:
                self.let_go()  # opened again next time: the file may come back
                raise StoreUnavailable(f"the class store {self.path} cannot be used: {err}") from err

    @contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        """One read transaction: in WAL mode it neither waits for the writers nor makes them wait. A read
        purges nothing (the next write does) and leaves out what expired itself. Reads took the write
        lock to purge once, and with 60 students' banners reading every 5 s a reader starved of the
        interpreter lock in a busy process held the file for seconds: the publishers' writes timed out."""
        with self.lock:
            try:
                db = self.connected()
                db.execute("BEGIN")
                try:
                    yield db
                finally:
                    db.execute("COMMIT")
            except (sqlite3.Error, OSError) as err:
                self.let_go()
                raise StoreUnavailable(f"the class store {self.path} cannot be used: {err}") from err

    def connected(self) -> sqlite3.Connection:
        """The store's connection, opened on first use; the first process to open the file makes its tables."""
        if self.db is None:
            # The file made readable by its owner alone before SQLite opens it: SQLite gives its -wal and -shm
            # files the database's mode, and the statuses (names, scores) are the class's, not the machine's
            try:
                os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            except FileExistsError:  # made by another process of the class, or by an earlier run
                found = os.lstat(self.path)
                if not stat.S_ISREG(found.st_mode) or found.st_uid != os.getuid():  # a symlink, another user's
                    raise sqlite3.OperationalError(f"{self.path} is not a file of this user's; remove it") from None
                if stat.S_IMODE(found.st_mode) & 0o077:  # an earlier version's 0644: the class's names
                    os.chmod(self.path, 0o600)
            self.db = sqlite3.connect(self.path, timeout=SQLITE_BUSY_TIMEOUT, isolation_level=None,
                                      check_same_thread=False)  # one thread at a time: the lock
            try:
                self.db.execute("PRAGMA journal_mode=WAL")  # kept in the file: its first opener's sets it
            except sqlite3.OperationalError as err:
                # Busy at once, never waiting in the busy timeout: another process is making the file, and
                # has set WAL before it took the lock; this connection reads the mode from the file after
                if err.sqlite_errorcode != sqlite3.SQLITE_BUSY:
                    raise
            self.db.execute("PRAGMA synchronous=NORMAL")  # safe in WAL; a power cut may lose the last second
            self.db.execute("BEGIN IMMEDIATE")  # one process makes the tables; the others then see them
            if self.db.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
                for statement in SCHEMA:
                    self.db.execute(statement)
            self.db.execute("COMMIT")
        return self.db

    def purge(self, db: sqlite3.Connection, now: float) -> None:
        """What expired, and what no store wrote: a time ahead of the clock (500 statuses dated next year
        would keep every real student off the board), a value of another type."""
        db.execute("DELETE FROM status WHERE NOT (seen > ? AND seen <= ?)", (now - self.ttl, now + CLOCK_SKEW))
        db.execute("DELETE FROM broadcast WHERE NOT (sent > ? AND sent <= ?)", (now - self.ttl, now + CLOCK_SKEW))
        db.execute("DELETE FROM tries WHERE NOT (ends > ?) OR typeof(count) != 'integer'", (now,))
        db.execute("DELETE FROM once WHERE NOT (ends > ?)", (now,))

    def put_status(self, session_id: str, body: str) -> None:
        with self.transaction() as db:
            db.execute("INSERT INTO status VALUES (?, ?, ?, ?) ON CONFLICT (namespace, session_id) DO UPDATE"
                       " SET body = excluded.body, seen = excluded.seen",
                       (self.namespace, session_id, body, self.clock()))
            db.execute("DELETE FROM status WHERE namespace = ? AND session_id IN (SELECT session_id FROM status"
                       " WHERE namespace = ? AND session_id != ? ORDER BY seen DESC LIMIT -1 OFFSET ?)",
                       (self.namespace, self.namespace, session_id, self.max_statuses - 1))

    def put_statuses(self, bodies: list[tuple[str, str]]) -> None:
        with self.transaction() as db:
            now = self.clock()
            # One statement over a JSON array, not executemany: SQLite releases the interpreter lock at every
            # step, and a thread of a process whose 30 sessions train takes each step's lock back slowly
            db.execute("INSERT INTO status SELECT ?, json_extract(value, '$[0]'), json_extract(value, '$[1]'), ?"
                       " FROM json_each(?) WHERE true"  # json_extract, not ->>: SQLite before 3.38 has no ->>
                       " ON CONFLICT (namespace, session_id) DO UPDATE SET body = excluded.body, seen = excluded.seen",
                       (self.namespace, now, json.dumps(bodies)))
            db.execute("DELETE FROM status WHERE namespace = ? AND session_id IN (SELECT session_id FROM status"
                       " WHERE namespace = ? ORDER BY seen DESC LIMIT -1 OFFSET ?)",  # the newest are these
                       (self.namespace, self.namespace, self.max_statuses))

    def drop_status(self, session_id: str) -> None:
        with self.transaction() as db:
            db.execute("DELETE FROM status WHERE namespace = ? AND session_id = ?", (self.namespace, session_id))

    def read_statuses(self) -> list[tuple[str, str, float]]:
        with self.reading() as db:
            now = self.clock()
            # One row holding them all (one step of SQLite's, as put_statuses says why)
            [found] = db.execute("SELECT json_group_array(json_array(session_id, body, seen)) FROM status"
                                 " WHERE namespace = ? AND seen > ? AND seen <= ? AND typeof(body) = 'text'",
                                 (self.namespace, now - self.ttl, now + CLOCK_SKEW)).fetchone()
        rows = sorted(json.loads(found), key=lambda row: row[2], reverse=True)  # the most recently seen first
        return [(session_id, body, max(0.0, now - seen)) for session_id, body, seen in rows]

    def put_broadcast(self, body: str, signed: Callable[[int], str]) -> int:
        with self.transaction() as db:
            now = self.clock()
            previous = db.execute("SELECT seq FROM broadcast WHERE namespace = ? AND typeof(seq) = 'integer'"
                                  " AND seq BETWEEN 0 AND ?",  # else none the store wrote: 2**63 - 1 overflowed
                                  (self.namespace, MAX_SEQ - 1)).fetchone()
            seq = max(int(now * 1000), 0 if previous is None else previous[0] + 1)
            db.execute("INSERT OR REPLACE INTO broadcast VALUES (?, ?, ?, ?, ?)",
                       (self.namespace, seq, body, signed(seq), now))
        return seq

    def read_broadcast(self) -> tuple[str, str, str] | None:
        with self.reading() as db:
            now = self.clock()
            row = db.execute("SELECT seq, body, signature FROM broadcast WHERE namespace = ? AND sent > ?"
                             " AND sent <= ?", (self.namespace, now - self.ttl, now + CLOCK_SKEW)).fetchone()
        return None if row is None else tuple(map(str, row))

    def read_tries(self, client_id: str, window: float) -> int:
        with self.reading() as db:
            now = self.clock()
            row = db.execute("SELECT count FROM tries WHERE namespace = ? AND client_id = ? AND ends > ? AND ends <= ?"
                             " AND typeof(count) = 'integer' AND count BETWEEN 0 AND 1000000",
                             (self.namespace, client_id, now, now + window)).fetchone()
        return 0 if row is None else row[0]

    def put_once(self, name: str, ttl: float) -> bool:
        with self.transaction() as db:
            made = db.execute("INSERT INTO once VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                              (self.namespace, name, self.clock() + ttl))
            return made.rowcount == 1

    def add_try(self, client_id: str, window: float) -> int:
        with self.transaction() as db:
            ends = self.clock() + window
            # A window ending later than one window from now, or a count out of shape, was not opened here (a
            # forged row that would refuse the teacher for good): it starts again
            counted = db.execute("INSERT INTO tries VALUES (?, ?, 1, ?) ON CONFLICT (namespace, client_id) DO UPDATE"
                                 " SET count = CASE WHEN ends > excluded.ends OR count NOT BETWEEN 0 AND 1000000"
                                 " THEN 1 ELSE count + 1 END, ends = min(ends, excluded.ends) RETURNING count",
                                 (self.namespace, client_id, ends))
            return counted.fetchone()[0]
