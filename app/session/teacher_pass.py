"""What opens the teacher's board without the teacher key in any address (issue 43, finding 7). No Streamlit here.

The link deploy/serve_class.py prints carries a one-time code, board#code=CODE: when it was made, a nonce, and
their HMAC, so any process of the class can check it with the key alone. The class store records its first
use, for as long as the code lives (CODE_HOURS), after which it opens nothing: the entry chromium's profile
keeps in its History, Top Sites and Sessions (which no page can clean) is a spent code, and then an expired
one; a code made before the class started (UNROLLED_CLASS_STARTED: a restarted serve_class.py with a fixed key)
opens nothing either. The session that spends it gets a pass instead, held in a session cookie (gone when the
browser closes, and past PASS_HOURS in any case): an expiry and a nonce signed the same way, so a reload of the
board opens it again. Whoever can write to the class store (a Redis server with no password) can un-spend a
code by deleting its record; a pass it cannot make.

Both are signed with keys derived from the stretched teacher key (key_stretch.py), one for each, so neither the
spent code nor the pass is a fast test of a guessed key, and neither tells anything of the other.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets

from app.session.key_stretch import derived

CODE_LABEL, PASS_LABEL = b"board link", b"teacher pass"
CODE_HOURS = 12  # a school day: a link printed in the morning opens the board that afternoon, not the next day
PASS_HOURS = 3  # a class, as long as the class store keeps a student's status
CODE = re.compile(r"([0-9]{1,12})\.([A-Za-z0-9_-]{16})\.([A-Za-z0-9_-]{22})")  # MADE.NONCE.TAG
PASS = re.compile(r"([0-9]{1,12})\.([A-Za-z0-9_-]{16})\.([A-Za-z0-9_-]{22})")  # EXPIRY.NONCE.TAG


def tag(key: str, label: bytes, message: str) -> str:
    """HMAC-SHA256 of `message` under the key derived for `label`, as 22 characters of URL-safe base64 (128 bits)."""
    digest = hmac.new(derived(key, label), message.encode(), hashlib.sha256).digest()[:16]
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


def new_code(key: str, now: float) -> str:
    """A one-time code for the teacher's link, made at `now` (s since the epoch)."""
    made, nonce = int(now), secrets.token_urlsafe(12)
    return f"{made}.{nonce}.{tag(key, CODE_LABEL, f'{made}.{nonce}')}"


def code_nonce(code: object, key: str, now: float, since: float = 0.0) -> str | None:
    """The code's nonce (what the store records as used) if the code was made with `key`, at or after `since`
    and less than CODE_HOURS before `now`; else None."""
    found = CODE.fullmatch(code) if isinstance(code, str) else None
    if found is None or not hmac.compare_digest(found[3], tag(key, CODE_LABEL, f"{found[1]}.{found[2]}")):
        return None
    made = int(found[1])
    return found[2] if int(since) <= made <= now and now - made < CODE_HOURS * 3600 else None


def new_pass(key: str, now: float) -> str:
    """A teacher's pass, valid PASS_HOURS from `now`: EXPIRY.NONCE.TAG."""
    expiry, nonce = int(now + PASS_HOURS * 3600), secrets.token_urlsafe(12)
    return f"{expiry}.{nonce}.{tag(key, PASS_LABEL, f'{expiry}.{nonce}')}"


def pass_holds(given: object, key: str, now: float) -> bool:
    """Whether `given` is a pass made with `key` that has not expired."""
    found = PASS.fullmatch(given) if isinstance(given, str) else None
    if found is None or not hmac.compare_digest(found[3], tag(key, PASS_LABEL, f"{found[1]}.{found[2]}")):
        return False
    return now < int(found[1]) <= now + PASS_HOURS * 3600
