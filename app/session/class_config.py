"""Whether this server holds a class, and the teacher's key (issue 32). No Streamlit here.

A class is held when a teacher key is set: deploy/serve_class.py makes a random one at start, hands
it to its app processes in UNROLLED_TEACHER_KEY and prints the teacher's link; a single `streamlit
run` takes it from that variable or from Streamlit's secrets (`teacher_key`). Without a key there is
no board and nothing is published. Where the class's statuses live: UNROLLED_CLASS_STORE (or the
secret `class_store`), a URL class_store.open_store reads; unset, class.db in UNROLLED_RUN_DIR (the
run directory serve_class.py makes), else in a directory of this machine's temporary files.

The key is compared in constant time (hmac.compare_digest), never logged or echoed. Tries are counted in
the store, so every process of the class counts them together, and never for the class as a whole: a
class-wide limit (300 a minute) was reached by one script in under a minute, and then refused the
teacher's own right key. Each browser (its owner cookie) gets MAX_TRIES tries a minute, right or wrong.
Wrong tries are also counted per address (MAX_ADDRESS_TRIES a minute, sized for a class behind one NAT),
and an address over it is refused any browser's second try, while a browser's first try, the teacher's right
key among them, is always compared. So a script making a new browser per guess gets one guess each, as many as
it can make browsers: behind serve_class.py's nginx, 5 new sessions a second from one address; on a bare
`streamlit run`, no bound. That is no defence for a key a person chose: use serve_class.py's random key, or one
as long and random.

The store never gets the key: it gets ClassKeys (store_keys), a namespace for the class's entries and
a key that signs its broadcasts, each derived one way from the key. The key is stretched first
(PBKDF2), because what the store holds (the namespace in every Redis key name, the signed broadcasts)
is in view of anyone who reaches a Redis server, and each would otherwise be a fast test of a guessed
key: a key from secrets may be a teacher's phrase of 12 characters, where serve_class.py's are random.
"""
from __future__ import annotations

import hmac
import os
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from app.session.class_store import CLOCK_SKEW, ClassKeys, ClassStore
from app.session.key_stretch import derived
from app.session.teacher_pass import CODE_HOURS, code_nonce

MIN_KEY = 12  # characters: serve_class.py's are 22 (128 random bits)
TRY_WINDOW = 60  # s
MAX_TRIES = 5  # a browser's tries of the key in TRY_WINDOW
MAX_ADDRESS_TRIES = 30  # wrong tries from one address in TRY_WINDOW: a class of 60 behind one NAT mistyping
KEY_VARIABLE, STORE_VARIABLE, RUN_DIR_VARIABLE = "UNROLLED_TEACHER_KEY", "UNROLLED_CLASS_STORE", "UNROLLED_RUN_DIR"
STARTED_VARIABLE = "UNROLLED_CLASS_STARTED"  # set by serve_class.py: teacher links made before it open nothing
# The two keys derived from the stretched one (key_stretch.py), one label each, so neither tells anything of the other
NAMESPACE_LABEL, SIGNING_LABEL = b"namespace", b"broadcast signing"
NAMESPACE_CHARS = 16  # hex digits: 64 bits, so two classes of a server never draw the same


@dataclass(frozen=True)
class ClassConfig:
    teacher_key: str
    store_url: str | None  # None: class.db in run_dir
    run_dir: Path
    started: float = 0.0  # when serve_class.py started the class (s since the epoch): links made before open nothing

    def __repr__(self) -> str:  # a config printed or logged never shows the key
        return f"ClassConfig(teacher_key=<{len(self.teacher_key)} characters>, store_url={self.store_url!r})"

    @cached_property  # a frozen dataclass still takes one: it writes the instance's __dict__ itself
    def store_keys(self) -> ClassKeys:
        """The class store's keys for this class: its namespace and its broadcasts' signing key."""
        namespace = derived(self.teacher_key, NAMESPACE_LABEL).hex()[:NAMESPACE_CHARS]
        return ClassKeys(namespace, derived(self.teacher_key, SIGNING_LABEL))


def class_config(environ: Mapping[str, str], secrets: Mapping[str, object]) -> ClassConfig | None:
    """The class this server holds, from the environment, else the secrets; None when no teacher
    key is set. ValueError for a key too short to keep a class out."""
    key = environ.get(KEY_VARIABLE) or str(secrets.get("teacher_key") or "")
    if not key:
        return None
    if len(key) < MIN_KEY:
        raise ValueError(f"the teacher key is {len(key)} characters long; use at least {MIN_KEY} "
                         "(deploy/serve_class.py makes a random one of 22)")
    store = environ.get(STORE_VARIABLE) or str(secrets.get("class_store") or "") or None
    run_dir = Path(environ.get(RUN_DIR_VARIABLE) or Path(tempfile.gettempdir()) / f"unrolled-class-{os.getuid()}")
    try:
        started = float(environ.get(STARTED_VARIABLE) or 0.0)
    except ValueError:
        raise ValueError(f"{STARTED_VARIABLE} is a time in seconds since the epoch, not "
                         f"{environ[STARTED_VARIABLE]!r:.40}") from None
    return ClassConfig(key, store, run_dir, started)


def check_key(given: str, config: ClassConfig, store: ClassStore, browser: str, address: str) -> str | None:
    """None when `given` is the teacher key; else why not, in words for the page. Raises StoreUnavailable
    when the tries cannot be counted."""
    refused = too_many_tries(store, browser, address)
    if refused is None and not hmac.compare_digest(given.encode(), config.teacher_key.encode()):
        store.count_try(f"key:address:{address}", TRY_WINDOW)
        refused = "That is not this class's teacher key. It is the one deploy/serve_class.py printed."
    return refused


def check_code(code: str, config: ClassConfig, store: ClassStore, browser: str, address: str) -> str | None:
    """None when `code` is a one-time code of the teacher's link (teacher_pass.py) not used before, which it
    now is; else why not. Tried and counted as the key is. Raises StoreUnavailable as check_key."""
    refused = too_many_tries(store, browser, address)
    if refused is not None:
        return refused
    nonce = code_nonce(code, config.teacher_key, time.time(), config.started)
    if nonce is None:
        store.count_try(f"key:address:{address}", TRY_WINDOW)
        return ("That link is not this class's teacher link, or it is older than this class. Type the teacher "
                "key deploy/serve_class.py printed.")
    if not store.claim_once(f"code:{nonce}", CODE_HOURS * 3600 + CLOCK_SKEW):  # spent for as long as it lives
        return ("That teacher link has been used: it opens the board once, so that a browser's history keeps "
                "nothing that opens it again. Type the teacher key deploy/serve_class.py printed.")
    return None


def too_many_tries(store: ClassStore, browser: str, address: str) -> str | None:
    """Why this try is refused before anything is compared, or None. The browser's try is counted first, so
    a refusal for too many tries tells nothing about the key; a browser's first try is compared whatever
    others did."""
    tries = store.count_try(f"key:browser:{browser}", TRY_WINDOW)
    if tries > MAX_TRIES:
        return f"Too many tries of the teacher key: wait a minute, then try again (at most {MAX_TRIES} a minute)."
    if tries > 1 and store.tries_made(f"key:address:{address}", TRY_WINDOW) >= MAX_ADDRESS_TRIES:
        return ("Too many wrong tries of the teacher key from this network: wait a minute, then type the key "
                "deploy/serve_class.py printed in a new tab.")
    return None
