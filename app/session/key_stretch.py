"""Keys derived from a class's teacher key, one way, each for one use. No Streamlit here.

The key is stretched first (PBKDF2), because what is derived from it is in view of others: the class store's
namespace in every Redis key name and its signed broadcasts (class_config.py), the teacher link's spent code in a
browser's history and the teacher's pass in its cookies (teacher_pass.py). Each would otherwise be a fast offline
test of a guessed key, and a key from secrets may be a teacher's phrase of 12 characters, where serve_class.py's
are random.
"""
from __future__ import annotations

import functools
import hashlib
import hmac

# PBKDF2-HMAC-SHA256 rounds (OWASP's figure for it): 0.18 s on this machine unloaded, once a process; the salt
# is the app's, the key being the class's own
STRETCH_ROUNDS, STRETCH_SALT = 600_000, b"unrolled class store"


@functools.cache  # once a process: every page run of the class asks for it
def stretched(teacher_key: str) -> bytes:
    return hashlib.pbkdf2_hmac("sha256", teacher_key.encode(), STRETCH_SALT, STRETCH_ROUNDS)


def derived(teacher_key: str, label: bytes) -> bytes:
    """A key for the use `label` names, from the stretched teacher key: none tells anything of another."""
    return hmac.new(stretched(teacher_key), label, hashlib.sha256).digest()
