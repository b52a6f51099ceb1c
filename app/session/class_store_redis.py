"""The class store on a Redis server, for a class across machines (class_store.py says what a class
store holds and keeps; this is its second implementation). Every operation is one atomic script run
on the server, on the server's clock, so processes on several machines agree on "last seen" and on
the order of things. No Streamlit here.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from app.session.class_store import (
    CLOCK_SKEW,
    MAX_BROADCAST_ROUNDS,
    MAX_SEQ,
    MAX_STATUSES,
    STATUS_TTL,
    ClassKeys,
    ClassStore,
    StoreUnavailable,
)

REDIS_TIMEOUT = 1.0  # s to connect or to answer: a student's page run waits at most this, twice (one retry)
# The Redis keys of a class, after REDIS_PREFIX and its namespace (apart from whatever else shares the
# server, and from other classes): a session's status (its body, expiring by itself), the index of the
# statuses (a sorted set: session id -> when last seen, for the order, the ages and the count cap),
# the broadcast (a hash: seq, body, signature), a client's try count.
REDIS_PREFIX = "unrolled:"
STATUS_KEY, SEEN_KEY, BROADCAST_KEY, TRIES_KEY, ONCE_KEY = "status:", "seen", "broadcast", "try:", "once:"

# The Redis scripts: each runs atomically on the server, on the server's clock (TIME).
NOW = "local t = redis.call('TIME') local now = string.format('%d.%06d', tonumber(t[1]), tonumber(t[2]))\n"
# Scores ahead of the clock were never stamped by a script (500 statuses dated next year would keep every real
# student off the board): dropped from the index with what expired.
TRIM = (NOW + f"local skew = {CLOCK_SKEW}\n"
        "local function trim(index, ttl_ms)\n"
        "    if redis.call('TYPE', index).ok ~= 'zset' then redis.call('DEL', index) end\n"  # none, or another's
        "    redis.call('ZREMRANGEBYSCORE', index, '-inf', string.format('%.6f', now - ttl_ms / 1000))\n"
        "    redis.call('ZREMRANGEBYSCORE', index, '(' .. string.format('%.6f', now + skew), '+inf')\n"
        "end\n")

PUBLISH = TRIM + """
-- KEYS: the index, this status. ARGV: session id, body, ttl in ms, the count cap, the status prefix
trim(KEYS[1], ARGV[3])
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

STATUSES = TRIM + """
-- KEYS: the index. ARGV: ttl in ms, the status prefix.
-- Returns id, body, age for each: the age as text, as a number it would be cut to an integer
trim(KEYS[1], ARGV[1])
local seen = redis.call('ZRANGE', KEYS[1], 0, -1, 'REV', 'WITHSCORES')
local found = {}
for i = 1, #seen, 2 do
    local found_body, body = pcall(redis.call, 'GET', ARGV[2] .. seen[i])  -- a key of another type: no status
    if found_body and body then
        table.insert(found, seen[i]) table.insert(found, body)
        table.insert(found, string.format('%.6f', math.max(0, now - seen[i + 1])))
    else
        redis.call('ZREM', KEYS[1], seen[i])  -- forgotten, or expired a moment ago
    end
end
return found
"""

# A broadcast takes two: its seq first, then, signed with it (the signing key never reaches the server),
# the broadcast, written only if no other came first meanwhile (else the writer takes the next seq).
# -1: none, or none a script wrote (not a whole number in [0, MAX_SEQ): 1e308 + 1 is 1e308, and a broadcast
# after it would wait for a seq past it for ever)
CURRENT_SEQ = ("if redis.call('TYPE', KEYS[1]).ok ~= 'hash' then redis.call('DEL', KEYS[1]) end\n"
               f"local current = tonumber(redis.call('HGET', KEYS[1], 'seq')) or -1\n"
               f"if current ~= math.floor(current) or current < 0 or current >= {MAX_SEQ} then current = -1 end\n")

NEXT_SEQ = NOW + CURRENT_SEQ + """
-- KEYS: the broadcast. Returns the seq the next one takes: the clock in ms, or one past the current seq
return math.max(math.floor(now * 1000), current + 1)
"""

BROADCAST = CURRENT_SEQ + """
-- KEYS: the broadcast. ARGV: seq, body, signature, ttl in ms. Returns 1 when written, 0 (nothing written)
-- when seq is no longer past the current one
if tonumber(ARGV[1]) <= current then return 0 end
redis.call('HSET', KEYS[1], 'seq', ARGV[1], 'body', ARGV[2], 'signature', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1
"""

TRY = """
-- KEYS: the client's count. ARGV: the window in ms. Returns the count, this try included. The window starts
-- with the key; a key with no expiry or one past a window, or not a count, was not made here (a forged one
-- would refuse the teacher for good): it starts again
local left = redis.call('PTTL', KEYS[1])
local count = tonumber(redis.call('TYPE', KEYS[1]).ok == 'string' and redis.call('GET', KEYS[1]) or nil)
if left < 0 or left > tonumber(ARGV[1]) or not count or count < 0 or count ~= math.floor(count) or count > 1e6 then
    redis.call('SET', KEYS[1], 0, 'PX', ARGV[1])
end
return redis.call('INCR', KEYS[1])
"""


class RedisStore(ClassStore):
    """The class store on a Redis server (redis://host:port/db, redis://:password@host:port/db). redis-py's
    client is thread-safe (a pool of connections), so the store is shared by every session of a process
    as it is. A class's keys all start with `prefix`: REDIS_PREFIX, its namespace, a colon."""

    def __init__(self, url: str, ttl: float = STATUS_TTL, max_statuses: int = MAX_STATUSES,
                 keys: ClassKeys | None = None):
        self.ttl, self.max_statuses = ttl, max_statuses
        self.ttl_ms = max(1, round(ttl * 1000))
        self.keys = keys or ClassKeys.of_its_own()
        self.prefix = f"{REDIS_PREFIX}{self.keys.namespace}:"
        self.status_key, self.seen_key = self.prefix + STATUS_KEY, self.prefix + SEEN_KEY
        self.broadcast_key, self.tries_key = self.prefix + BROADCAST_KEY, self.prefix + TRIES_KEY
        # One retry at once, for a pooled connection the server closed (it restarted); redis-py's default
        # retries ten times with back-off, seconds a student's page would wait for a server that is down.
        # Bytes that are not UTF-8 (written by someone else) read as U+FFFD: no signature or JSON checks out.
        self.client = redis.Redis.from_url(url, decode_responses=True, encoding_errors="replace",
                                           socket_timeout=REDIS_TIMEOUT, socket_connect_timeout=REDIS_TIMEOUT,
                                           retry=Retry(NoBackoff(), 1))
        where = self.client.connection_pool.connection_kwargs
        self.where = f"{where['host']}:{where['port']}/{where['db']}"  # for messages: the URL may hold a password
        scripts = {"publish": PUBLISH, "statuses": STATUSES, "next_seq": NEXT_SEQ, "broadcast": BROADCAST, "try": TRY}
        self.scripts = {name: self.client.register_script(lua) for name, lua in scripts.items()}

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
            self.scripts["publish"](keys=[self.seen_key, self.status_key + session_id],
                                    args=[session_id, body, self.ttl_ms, self.max_statuses, self.status_key])

    def put_statuses(self, bodies: list[tuple[str, str]]) -> None:
        with self.reached() as client:
            # Two round trips (redis-py asks SCRIPT EXISTS first), not one a status; each script atomic on its own
            pipe = client.pipeline(transaction=False)
            for session_id, body in bodies:
                self.scripts["publish"](keys=[self.seen_key, self.status_key + session_id],
                                        args=[session_id, body, self.ttl_ms, self.max_statuses, self.status_key],
                                        client=pipe)
            pipe.execute()

    def drop_status(self, session_id: str) -> None:
        with self.reached() as client:
            client.pipeline().delete(self.status_key + session_id).zrem(self.seen_key, session_id).execute()

    def read_statuses(self) -> list[tuple[str, str, float]]:
        with self.reached():
            found = self.scripts["statuses"](keys=[self.seen_key], args=[self.ttl_ms, self.status_key])
        return [(found[i], found[i + 1], float(found[i + 2])) for i in range(0, len(found), 3)]

    def put_broadcast(self, body: str, signed: Callable[[int], str]) -> int:
        with self.reached():
            for _ in range(MAX_BROADCAST_ROUNDS):  # again when another broadcast was written since this seq was taken
                seq = self.scripts["next_seq"](keys=[self.broadcast_key])
                if self.scripts["broadcast"](keys=[self.broadcast_key], args=[seq, body, signed(seq), self.ttl_ms]):
                    return seq
        raise StoreUnavailable(f"the class store at redis {self.where} took another broadcast first "
                               f"{MAX_BROADCAST_ROUNDS} times running; send it again")

    def read_broadcast(self) -> tuple[str, str, str] | None:
        with self.reached() as client:
            try:
                stored = client.hmget(self.broadcast_key, ["seq", "body", "signature"])
            except redis.ResponseError:  # not a hash: no script wrote it, so it is no broadcast
                return None
        return None if None in stored else tuple(stored)

    def read_tries(self, client_id: str, window: float) -> int:
        key = self.tries_key + client_id
        with self.reached() as client:
            try:
                found, left = client.pipeline().get(key).pttl(key).execute()
            except redis.ResponseError:  # not a string: no count a script kept
                return 0
        kept = found is not None and found.isascii() and found.isdigit() and len(found) <= 7
        return int(found) if kept and 0 < left <= window * 1000 else 0

    def put_once(self, name: str, ttl: float) -> bool:
        with self.reached() as client:
            return bool(client.set(self.prefix + ONCE_KEY + name, 1, px=max(1, round(ttl * 1000)), nx=True))

    def add_try(self, client_id: str, window: float) -> int:
        with self.reached():
            return self.scripts["try"](keys=[self.tries_key + client_id], args=[max(1, round(window * 1000))])
