"""The class store between classes and against whoever reaches it without the class's key (issue 32,
from review), on the SQLite file and on a real redis-server: two classes (two teacher keys) on one
server or file see nothing of each other; a "follow me" the class's key did not sign (written
straight into the store, another class's, changed in any way) is no broadcast; a body that is not a
JSON dict is no status; the teacher key, and the key that signs, are never written to the store nor
sent to Redis; a Redis server with requirepass is used through the password in the store's URL."""
import hashlib
import hmac
import re
import sqlite3
from contextlib import closing

import pytest
import redis

from app.session.class_config import KEY_VARIABLE, RUN_DIR_VARIABLE, STORE_VARIABLE, ClassConfig
from app.session.class_store import Broadcast, ClassKeys, open_store
from app.session.class_store_sqlite import SCHEMA_VERSION, SQLiteStore
from app.widgets.class_link import class_room
from tests.app.test_class_store import (  # the two backends, and their fixtures used by name
    KEYS,
    STATUS,
    RedisBackend,
    backend,  # noqa: F401
    ids,
    redis_url,  # noqa: F401
    unavailable,
)
from tests.redis_server import redis_server

TEACHER_KEY = "class-A-teacher-key-22"  # serve_class.py's are 22 characters
OTHER = ClassKeys("fedcba9876543210", b"another class's own signing key")  # another teacher's class
LESSON = {"kind": "lesson", "lesson": "gru", "title": "GRU"}
PASSWORD = "class-redis-password"


# ------------------------------------------------------------------ the keys a class's store gets

def test_the_store_keys_come_from_the_teacher_key_alone_one_way_and_apart(tmp_path):
    keys = ClassConfig(TEACHER_KEY, None, tmp_path).store_keys
    # the key alone decides them: every process of a class, wherever its store, derives the same
    assert ClassConfig(TEACHER_KEY, "redis://10.0.0.5:6379/0", tmp_path / "elsewhere").store_keys == keys
    other = ClassConfig("class-B-teacher-key-22", None, tmp_path).store_keys
    assert other.namespace != keys.namespace and other.signing != keys.signing
    # the reference: PBKDF2 stretches the key, then one HMAC-SHA256 per label
    stretched = hashlib.pbkdf2_hmac("sha256", TEACHER_KEY.encode(), b"unrolled class store", 600_000)
    assert keys.namespace == hmac.new(stretched, b"namespace", hashlib.sha256).hexdigest()[:16]
    assert keys.signing == hmac.new(stretched, b"broadcast signing", hashlib.sha256).digest()
    assert re.fullmatch("[0-9a-f]{16}", keys.namespace) and len(keys.signing) == 32
    assert not keys.signing.hex().startswith(keys.namespace)  # two derivations, not one key used twice
    assert TEACHER_KEY.encode() not in keys.signing and TEACHER_KEY not in keys.namespace
    # printed or logged, neither the teacher key nor the signing key shows
    assert repr(keys) == f"ClassKeys(namespace='{keys.namespace}')"


def test_a_class_namespace_or_signing_key_out_of_shape_is_refused_and_a_keyless_store_is_a_class_of_its_own():
    for namespace in ["", "a:b", "unrolled:*", "é", "x" * 65]:
        with pytest.raises(ValueError, match="1 to 64 ASCII letters and digits"):
            ClassKeys(namespace, b"s" * 32)
    with pytest.raises(ValueError, match="at least 16 bytes, not 0"):
        ClassKeys("abc", b"")
    first, second = ClassKeys.of_its_own(), ClassKeys.of_its_own()
    assert first.namespace != second.namespace and first.signing != second.signing


def test_the_class_room_opens_its_store_with_the_class_keys(monkeypatch, tmp_path):
    monkeypatch.setenv(KEY_VARIABLE, TEACHER_KEY)
    monkeypatch.setenv(RUN_DIR_VARIABLE, str(tmp_path))
    monkeypatch.delenv(STORE_VARIABLE, raising=False)
    class_room.cache_clear()
    try:
        store = class_room().store
        assert isinstance(store, SQLiteStore) and store.path == tmp_path / "class.db"
        assert store.keys == ClassConfig(TEACHER_KEY, None, tmp_path).store_keys
    finally:
        class_room.cache_clear()


# ------------------------------------------------------------------ two classes on one store

def test_two_classes_on_one_store_see_nothing_of_each_other(backend):  # noqa: F811
    class_a, also_a, class_b = backend.open(), backend.open(), backend.open(keys=OTHER)  # also_a: A's other process
    class_a.publish("ada", STATUS)
    class_b.publish("ada", {"name": "B's Ada"})  # one session id in both: two statuses
    class_b.publish("bob", {"name": "Bob"})
    assert {s.session_id: s.status for s in also_a.statuses()} == {"ada": STATUS}
    assert {s.session_id: s.status for s in class_b.statuses()} == {"ada": {"name": "B's Ada"}, "bob": {"name": "Bob"}}
    also_a.forget("ada")
    assert ids(class_a) == [] and sorted(ids(class_b)) == ["ada", "bob"]

    assert class_b.latest_broadcast() is None
    seq_a = class_a.broadcast(LESSON)
    assert class_b.latest_broadcast() is None and also_a.latest_broadcast() == Broadcast(seq_a, LESSON)
    seq_b = class_b.broadcast({"kind": "lesson", "lesson": "lstm"})
    assert also_a.latest_broadcast() == Broadcast(seq_a, LESSON)
    assert class_b.latest_broadcast() == Broadcast(seq_b, {"kind": "lesson", "lesson": "lstm"})

    assert [class_a.count_try("key:10.0.0.1", 60), also_a.count_try("key:10.0.0.1", 60)] == [1, 2]
    assert class_b.count_try("key:10.0.0.1", 60) == 1  # B's teacher is not locked out by A's tries
    assert class_a.count_try("key:10.0.0.1", 60) == 3

    capped = backend.open(max_statuses=2)  # A's cap drops one of A's, never B's
    for session_id in ["s1", "s2", "s3"]:
        capped.publish(session_id, {})
    assert len(ids(capped)) == 2 and "s3" in ids(capped) and sorted(ids(class_b)) == ["ada", "bob"]


# ------------------------------------------------------------------ broadcasts the class's key did not sign

def test_a_broadcast_written_without_the_class_key_is_no_broadcast(backend):  # noqa: F811
    teacher, student = backend.open(), backend.open()
    assert student.latest_broadcast() is None
    body = '{"kind":"lesson","lesson":"exploding","title":"Click here"}'
    forged = [{"seq": 1, "body": body},  # unsigned, as the store wrote broadcasts before signatures
              {"seq": 2, "body": body, "signature": "0" * 64},  # a signature made up
              {"seq": 3, "body": body, "signature": "é" * 64},  # past ASCII: compare_digest would raise on str
              {"seq": 4, "body": "not JSON {", "signature": "0" * 64},
              {"seq": "not a number", "body": body, "signature": "0" * 64}]
    for fields in forged:
        backend.write_broadcast(student, fields)
        assert backend.raw_broadcast(student)["body"] == fields["body"]  # it is there to be read ...
        assert student.latest_broadcast() is None, fields  # ... and it is no broadcast
    seq = teacher.broadcast(LESSON)  # the teacher's next is seen as ever
    assert student.latest_broadcast() == Broadcast(seq, LESSON)


def test_a_changed_broadcast_or_another_class_s_is_refused_and_an_old_one_keeps_its_seq(backend):  # noqa: F811
    teacher, student, other_teacher = backend.open(), backend.open(), backend.open(keys=OTHER)
    first = teacher.broadcast({"kind": "lesson", "lesson": "lstm", "title": "LSTM"})
    earlier = backend.raw_broadcast(teacher)
    seq = teacher.broadcast(LESSON)
    stored = backend.raw_broadcast(teacher)
    backend.write_broadcast(student, stored)  # written back as it was: still the teacher's
    assert student.latest_broadcast() == Broadcast(seq, LESSON)

    signature = stored["signature"]
    changed = [{**stored, "body": stored["body"].replace("gru", "exploding")},  # another lesson
               {**stored, "body": stored["body"] + " "},  # the same JSON, another text
               {**stored, "seq": int(stored["seq"]) + 1},  # the same message as new
               {**stored, "signature": signature[:-1] + ("0" if signature[-1] != "0" else "1")},
               {**stored, "signature": signature.upper()}]
    for fields in changed:
        backend.write_broadcast(student, fields)
        assert student.latest_broadcast() is None, fields

    other_seq = other_teacher.broadcast({"kind": "lesson", "lesson": "exploding", "title": "Click here"})
    backend.write_broadcast(student, backend.raw_broadcast(other_teacher))  # another class's, signed by its key
    assert student.latest_broadcast() is None
    assert other_teacher.latest_broadcast().seq == other_seq  # in its own class it stands

    # An earlier broadcast of the class written back is the teacher's, but under its own earlier seq,
    # which a tab that saw a later one passes over: it cannot come back as new
    backend.write_broadcast(student, earlier)
    assert student.latest_broadcast() == Broadcast(first, {"kind": "lesson", "lesson": "lstm", "title": "LSTM"})
    assert first < seq


def test_a_status_that_is_not_a_json_dict_is_no_status(backend):  # noqa: F811
    student, board = backend.open(), backend.open()
    student.publish("ada", STATUS)
    for session_id, body in [("junk", "not JSON {"), ("list", "[1, 2]"), ("number", "42"), ("null", "null")]:
        backend.write_status(board, session_id, body)
    backend.write_status(board, "mallory", '{"name": "Mallory"}')  # a forged status of the right shape: a row
    assert {s.session_id: s.status for s in board.statuses()} == {"ada": STATUS, "mallory": {"name": "Mallory"}}


def test_a_student_who_reaches_redis_cannot_make_a_follow_me(redis_url):  # noqa: F811
    """As a student would: find the class's broadcast among the server's keys, write into it."""
    teacher, student = RedisBackend(redis_url).open(), RedisBackend(redis_url).open()
    seq = teacher.broadcast(LESSON)
    with redis.Redis.from_url(redis_url, decode_responses=True) as mallory, \
            redis.Redis.from_url(redis_url) as raw_mallory:
        [key] = mallory.keys("unrolled:*:broadcast")
        assert mallory.hget(key, "seq") == str(seq)
        mallory.hset(key, mapping={"seq": seq + 1, "body": '{"kind":"lesson","lesson":"exploding"}'})
        assert student.latest_broadcast() is None
        mallory.hdel(key, "signature")
        assert student.latest_broadcast() is None
        raw_mallory.hset(key, mapping={"body": b"\xff\xfe not UTF-8", "signature": b"\x80" * 64})
        assert student.latest_broadcast() is None  # read as U+FFFD, refused, raising nothing
        mallory.delete(key)
        mallory.hset(key, mapping={"seq": "1", "body": '{"kind":"lesson","lesson":"exploding"}'})
        assert student.latest_broadcast() is None
        next_seq = teacher.broadcast(LESSON)  # the teacher's next is seen as ever
        assert student.latest_broadcast() == Broadcast(next_seq, LESSON)


# ------------------------------------------------------------------ the teacher key stays with the app

def every_key_and_value(client: redis.Redis) -> bytes:
    """Every key of the server's database and everything it holds, as one string of bytes."""
    held = []
    for key in client.scan_iter():
        kind = client.type(key)
        if kind == b"string":
            values = [client.get(key)]
        elif kind == b"hash":
            values = [item for pair in client.hgetall(key).items() for item in pair]
        elif kind == b"zset":
            values = [str(item).encode() for pair in client.zrange(key, 0, -1, withscores=True) for item in pair]
        else:
            pytest.fail(f"the store made a key of a kind this test does not read: {key!r} is a {kind!r}")
        held += [key, *values]
    return b"\n".join(held)


def use_every_operation(store) -> int:
    store.publish("ada", STATUS)
    store.count_try("key:10.0.0.1", 60)
    seq = store.broadcast(LESSON)
    assert store.statuses()[0].status == STATUS and store.latest_broadcast() == Broadcast(seq, LESSON)
    return seq


def test_the_teacher_key_is_neither_sent_to_redis_nor_held_there(redis_url, tmp_path):  # noqa: F811
    keys = ClassConfig(TEACHER_KEY, redis_url, tmp_path).store_keys
    RedisBackend(redis_url)  # an empty database
    store = open_store(redis_url, tmp_path, keys=keys)
    with redis.Redis.from_url(redis_url, decode_responses=True) as watcher, watcher.monitor() as monitor:
        seq = use_every_operation(store)
        watcher.echo("the end of the class")  # a mark: MONITOR has every command before it
        sent = []
        while "the end of the class" not in (command := monitor.next_command()["command"]):
            sent.append(command)
    assert any(keys.namespace in command and str(seq) in command for command in sent)  # the broadcast, seen
    assert not [command for command in sent if TEACHER_KEY in command or keys.signing.hex() in command]
    with redis.Redis.from_url(redis_url) as client:
        held = every_key_and_value(client)
    assert b'"name":"Zo\\u00eb <b>"' in held and keys.namespace.encode() in held  # the status, read back
    assert not [s for s in [TEACHER_KEY.encode(), keys.signing, keys.signing.hex().encode()] if s in held]


def test_the_teacher_key_is_not_in_the_sqlite_file(tmp_path):
    keys = ClassConfig(TEACHER_KEY, None, tmp_path).store_keys
    store = open_store(None, tmp_path, keys=keys)
    use_every_operation(store)
    store.close()
    held = b"".join(path.read_bytes() for path in tmp_path.glob("class.db*"))  # the file, its WAL if any
    assert b"Zo\\u00eb <b>" in held
    assert not [s for s in [TEACHER_KEY.encode(), keys.signing, keys.signing.hex().encode()] if s in held]


# ------------------------------------------------------------------ a Redis server with a password

def test_a_redis_with_a_password_is_used_through_its_url_and_refuses_a_store_without_it(tmp_path):
    with redis_server(password=PASSWORD) as url:
        assert url.startswith(f"redis://:{PASSWORD}@127.0.0.1:")
        use_every_operation(open_store(url, tmp_path, keys=KEYS))
        where = url.removeprefix(f"redis://:{PASSWORD}@")
        for wrong, says in [(url.replace(f":{PASSWORD}@", ""), "must be called with the client already authenticated"),
                            (url.replace(PASSWORD, "not-the-password"), "invalid username-password pair")]:
            for name, raised in unavailable(open_store(wrong, tmp_path, keys=KEYS)).items():
                assert raised.startswith(f"StoreUnavailable: the class store at redis {where} cannot be used: "), name
                assert says in raised and PASSWORD not in raised, (name, raised)


# ------------------------------------------------------------------ a class.db from before the namespaces

BEFORE_NAMESPACES = """
CREATE TABLE status (session_id TEXT PRIMARY KEY, body TEXT NOT NULL, seen REAL NOT NULL);
CREATE TABLE broadcast (seq INTEGER NOT NULL, body TEXT NOT NULL, sent REAL NOT NULL);
CREATE TABLE tries (client_id TEXT PRIMARY KEY, count INTEGER NOT NULL, ends REAL NOT NULL);
INSERT INTO status VALUES ('old', '{"name": "last class"}', 1800000000);
INSERT INTO broadcast VALUES (1, '{"lesson": "gru"}', 1800000000);
"""


def test_a_class_db_from_before_the_namespaces_is_made_anew_once(tmp_path):
    """A single `streamlit run` keeps its run directory across restarts, and so its class.db."""
    path = tmp_path / "class.db"
    with closing(sqlite3.connect(path)) as db:
        db.executescript(BEFORE_NAMESPACES)
    first = SQLiteStore(path, clock=lambda: 1_800_000_001.0, keys=KEYS)
    assert first.statuses() == [] and first.latest_broadcast() is None  # whose they were, nobody can say
    first.publish("ada", STATUS)
    second = SQLiteStore(path, clock=lambda: 1_800_000_002.0, keys=KEYS)  # another process: made once only
    assert [(s.session_id, s.status) for s in second.statuses()] == [("ada", STATUS)]
    with closing(sqlite3.connect(path)) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
