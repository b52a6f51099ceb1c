"""The server's register of students' labs, so that a reload (F5, a dropped connection) brings
back the student's model, history and lesson instead of step 0.

A reload starts a new Streamlit session, whose session state is empty. The page keeps its lab's id
in the address bar (it survives a reload), and the browser keeps a random owner token in a cookie
(it never travels in a link). A lab is handed back only for its id AND its owner's token: a link a
teacher pastes carries the teacher's lab id, but a student's browser holds another token, so the
student gets a lab of their own from the link's settings, never the teacher's. Labs not seen for
TIME_TO_LIVE seconds are dropped, and past MAX_LABS or MAX_BYTES of weights the least recently seen
of the browser holding the most (LabStore.evict). No Streamlit here.
"""
from __future__ import annotations

import re
import secrets
import threading
import time
from dataclasses import dataclass, field

from app.session.lab import Lab

TIME_TO_LIVE = 3 * 3600  # s: a lecture, and the break after it
MAX_LABS = 240  # a class of 60, each with a few tabs and reloads
MAX_BYTES = 2 * 2**30  # of weights (with Adam's two moments and the best step's copy, x4) over every lab kept


def new_token() -> str:
    """An unguessable id or owner token (128 bits)."""
    return secrets.token_urlsafe(16)


TOKEN = re.compile(r"[A-Za-z0-9_-]{22}")  # what new_token makes: 16 bytes in URL-safe base64, unpadded


def is_token(text: object) -> bool:
    """`text` is a token new_token could have made: a cookie or link holding anything else (a
    script, a quote, markup) was not made by this app and is never used or written back."""
    return isinstance(text, str) and TOKEN.fullmatch(text) is not None


def weight_bytes(lab: Lab) -> int:
    """What a lab holds that grows with its size: its weights, the optimizer's two moments and the
    copy of the weights at the best held-out step."""
    return 4 * sum(p.numel() * p.element_size() for p in lab.model.parameters())


@dataclass
class Kept:
    lab: Lab
    owner: str
    seen: float  # the store's clock at the last run that used it
    extras: dict = field(default_factory=dict)  # what the page needs back with it (the lesson, the target)


class LabStore:
    def __init__(self, time_to_live: float = TIME_TO_LIVE, max_labs: int = MAX_LABS, max_bytes: int = MAX_BYTES,
                 clock=time.monotonic):
        self.time_to_live, self.max_labs, self.max_bytes = time_to_live, max_labs, max_bytes
        self.clock = clock  # seconds; a test hands in its own
        self.kept: dict[str, Kept] = {}
        self.lock = threading.Lock()  # many sessions' threads use one store

    def add(self, lab: Lab, owner: str) -> str:
        """Keep `lab` for `owner`; returns its new id."""
        lab_id = new_token()
        with self.lock:
            self.kept[lab_id] = Kept(lab, owner, self.clock())
            self.evict()
        return lab_id

    def find(self, lab_id: str | None, owner: str | None) -> Kept | None:
        """The lab kept under `lab_id` if `owner` owns it and it has not expired, else None."""
        if not lab_id or not owner:
            return None
        with self.lock:
            self.evict()
            kept = self.kept.get(lab_id)
            if kept is None or not secrets.compare_digest(kept.owner.encode(), owner.encode()):  # any cookie text
                return None
            kept.seen = self.clock()
            return kept

    def seen(self, lab_id: str, lab: Lab, owner: str, extras: dict) -> None:
        """The page used its lab now; remember `extras` with it. A lab dropped while its tab was
        still open (the budget, or the time to live) is kept again, so that tab's next reload finds it."""
        with self.lock:
            kept = self.kept.get(lab_id)
            if kept is None or kept.lab is not lab:
                kept = self.kept[lab_id] = Kept(lab, owner, self.clock())
                self.evict()
            kept.seen = self.clock()
            kept.extras = dict(extras)

    def evict(self) -> None:
        """Drop the expired labs; then, past the count, the least recently seen lab of the owner
        holding the most labs, and past the bytes, of the owner holding the most bytes, so that one browser filling the
        store loses its own old labs and never a classmate's (34 tabs of an LSTM of 1,024 units from
        one browser evicted another student's lab). The caller holds the lock."""
        now = self.clock()
        for lab_id in [i for i, k in self.kept.items() if now - k.seen > self.time_to_live]:
            del self.kept[lab_id]
        sizes = {lab_id: weight_bytes(k.lab) for lab_id, k in self.kept.items()}
        while self.kept and (len(self.kept) > self.max_labs or sum(sizes.values()) > self.max_bytes):
            held: dict[str, tuple[int, int]] = {}
            for lab_id, k in self.kept.items():
                size, count = held.get(k.owner, (0, 0))
                held[k.owner] = (size + sizes[lab_id], count + 1)
            over_count = len(self.kept) > self.max_labs  # then the owner with the most labs, else the most bytes
            heaviest = max(held, key=lambda owner: held[owner][::-1] if over_count else held[owner])
            oldest = min((i for i, k in self.kept.items() if k.owner == heaviest), key=lambda i: self.kept[i].seen)
            del self.kept[oldest], sizes[oldest]
