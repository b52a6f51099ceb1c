"""What opens the teacher's board without the teacher key in any address (issue 43, finding 7). No Streamlit here.

The link deploy/serve_class.py prints carries a one-time code, board#code=CODE: a nonce and its HMAC under the
class's key, so any process of the class can check it with the key alone, and the class store records its
first use, after which it opens nothing: the entry chromium's profile keeps in its History, Top Sites and
Sessions (which no page can clean) is a spent code. The session that spends it gets a pass instead, held in a
session cookie (gone when the browser closes, and past PASS_HOURS in any case): an expiry and a nonce signed
with the key, so a reload of the board opens it again, and the store, which anyone who reaches a Redis server
can write, holds nothing that opens the board. The key itself is typed on the board, never put in an address.

Both are signed with a key derived from the teacher key for each use, so neither tells anything of the key
or of the other.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets

CODE_LABEL, PASS_LABEL = b"board link", b"teacher pass"
PASS_HOURS = 12  # a school day: a board left open past it asks for the key again
CODE = re.compile(r"([A-Za-z0-9_-]{16})\.([A-Za-z0-9_-]{22})")
PASS = re.compile(r"(\d{1,12})\.([A-Za-z0-9_-]{16})\.([A-Za-z0-9_-]{22})")


def tag(key: str, label: bytes, message: str) -> str:
    """HMAC-SHA256 of `message` under `key` kept for `label`, as 22 characters of URL-safe base64 (128 bits)."""
    derived = hmac.new(key.encode(), label, hashlib.sha256).digest()
    digest = hmac.new(derived, message.encode(), hashlib.sha256).digest()[:16]
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


def new_code(key: str) -> str:
    """A one-time code for the teacher's link: NONCE.TAG."""
    nonce = secrets.token_urlsafe(12)
    return f"{nonce}.{tag(key, CODE_LABEL, nonce)}"


def code_nonce(code: object, key: str) -> str | None:
    """The code's nonce (what the store records as used) if the code was made with `key`, else None."""
    found = CODE.fullmatch(code) if isinstance(code, str) else None
    if found is None or not hmac.compare_digest(found[2], tag(key, CODE_LABEL, found[1])):
        return None
    return found[1]


def new_pass(key: str, now: float) -> str:
    """A teacher's pass, valid PASS_HOURS from `now` (s since the epoch): EXPIRY.NONCE.TAG."""
    expiry, nonce = int(now + PASS_HOURS * 3600), secrets.token_urlsafe(12)
    return f"{expiry}.{nonce}.{tag(key, PASS_LABEL, f'{expiry}.{nonce}')}"


def pass_holds(given: object, key: str, now: float) -> bool:
    """Whether `given` is a pass made with `key` that has not expired."""
    found = PASS.fullmatch(given) if isinstance(given, str) else None
    if found is None or not hmac.compare_digest(found[3], tag(key, PASS_LABEL, f"{found[1]}.{found[2]}")):
        return False
    return now < int(found[1]) <= now + PASS_HOURS * 3600
