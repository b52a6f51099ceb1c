"""The server's register of students' labs, so that a reload (F5, a dropped connection) brings
back the student's model, history and lesson instead of step 0.

A reload starts a new Streamlit session, whose session state is empty. The page keeps its lab's id
in the address bar (it survives a reload), and the browser keeps a random owner token in a cookie
(it never travels in a link). A lab is handed back only for its id AND its owner's token: a link a
teacher pastes carries the teacher's lab id, but a student's browser holds another token, so the
student gets a lab of their own from the link's settings, never the teacher's. One tab drives a lab
at a time: the tab that last found it holds it (a reload, a duplicated tab, a page opened from the
menu in a new tab), and a tab that no longer holds its lab lets it go (Kept.holder). Labs not seen for
TIME_TO_LIVE seconds are dropped, and past MAX_LABS or MAX_BYTES (Lab.held_bytes) first the labs never
trained, then the least recently seen of the share holding the most (LabStore.evict).

A share is a browser (its owner token), except for browsers one network address makes faster than
NEW_BROWSERS_PER_ADDRESS in NEW_BROWSERS_WINDOW: those share one share, their address's. A script opening
250 cookie-less sessions in 27 s counted as 250 browsers of one lab each, and the store then evicted a
classmate's one large lab as "the browser holding the most" (issue 43, finding 3). No Streamlit here.
"""
from __future__ import annotations

import re
import secrets
import threading
import time
from collections import OrderedDict, deque
from dataclasses import dataclass, field

from cachetools import TTLCache

from app.session.lab import Lab

TIME_TO_LIVE = 3 * 3600  # s: a lecture, and the break after it
MAX_LABS = 240  # a class of 60, each with a few tabs and reloads
MAX_BYTES = 2 * 2**30  # of weights (x4: Adam's two moments and the best step's copy) and data over every lab kept
REMEMBERED_DROPS = 4 * MAX_LABS  # ids of dropped labs whose reason a reload is told (an id and a word each)
# New browsers (owner tokens this store has not seen) one address makes in the window, each its own share: a
# class of 60 behind one NAT with a few browsers each, arriving together. Past it they share their address's.
NEW_BROWSERS_PER_ADDRESS, NEW_BROWSERS_WINDOW = 120, 600.0  # s
REMEMBERED_BROWSERS = 20_000  # owners whose share is remembered (for TIME_TO_LIVE), and addresses counted


def new_token() -> str:
    """An unguessable id or owner token (128 bits)."""
    return secrets.token_urlsafe(16)


TOKEN = re.compile(r"[A-Za-z0-9_-]{22}")  # what new_token makes: 16 bytes in URL-safe base64, unpadded


def is_token(text: object) -> bool:
    """`text` is a token new_token could have made: a cookie or link holding anything else (a
    script, a quote, markup) was not made by this app and is never used or written back."""
    return isinstance(text, str) and TOKEN.fullmatch(text) is not None


def has_trained(lab: Lab) -> bool:
    """Whether the lab's model has trained a step (read without its lock: a count a tick only raises)."""
    return lab.trainer.steps_done > 0


@dataclass
class Kept:
    lab: Lab
    owner: str
    holder: str  # the tab (a Streamlit session's token) that drives it: the last that found it
    seen: float  # the store's clock at the last run that used it
    size: int  # Lab.held_bytes when last seen: priced outside the lock, once a page run, never in evict()
    share: str  # what eviction counts it against: its owner, or its address's share (the module says why)
    trained: bool  # whether it has trained a step, when last seen: a lab never trained goes first
    extras: dict = field(default_factory=dict)  # what the page needs back with it (the lesson, the target)


@dataclass(frozen=True)
class Dropped:
    why: str  # "expired" or "room"
    holder: str  # the tab that held it: a lab dropped under two tabs is still the newest one's


class LabStore:
    def __init__(self, time_to_live: float = TIME_TO_LIVE, max_labs: int = MAX_LABS, max_bytes: int = MAX_BYTES,
                 clock=time.monotonic):
        self.time_to_live, self.max_labs, self.max_bytes = time_to_live, max_labs, max_bytes
        self.clock = clock  # seconds; a test hands in its own
        self.kept: dict[str, Kept] = {}
        self.dropped: OrderedDict[str, Dropped] = OrderedDict()  # by lab id, the newest last
        self.shares = TTLCache(REMEMBERED_BROWSERS, time_to_live, timer=clock)  # owner -> its share
        self.first_seen = TTLCache(REMEMBERED_BROWSERS, time_to_live, timer=clock)  # share -> when it first had a lab
        self.new_browsers = TTLCache(REMEMBERED_BROWSERS, NEW_BROWSERS_WINDOW, timer=clock)  # address -> times
        self.lock = threading.Lock()  # many sessions' threads use one store

    def share_of(self, owner: str, address: str) -> str:
        """The share `owner` counts against: its own, unless its address made more than NEW_BROWSERS_PER_ADDRESS
        new browsers in NEW_BROWSERS_WINDOW before it. The caller holds the lock."""
        share = self.shares.get(owner)
        if share is None:
            now = self.clock()
            made = self.new_browsers.setdefault(address, deque())
            while made and now - made[0] > NEW_BROWSERS_WINDOW:
                made.popleft()
            made.append(now)
            self.new_browsers[address] = made  # its window starts again from its latest
            share = owner if len(made) <= NEW_BROWSERS_PER_ADDRESS else f"address {address}"
        self.shares[owner] = share
        self.first_seen[share] = self.first_seen.get(share, self.clock())
        return share

    def add(self, lab: Lab, owner: str, holder: str, address: str = "unknown") -> str:
        """Keep `lab` for `owner` (a browser at `address`), driven by the tab `holder`; returns its new id."""
        lab_id, size, trained = new_token(), lab.held_bytes(), has_trained(lab)
        with self.lock:
            self.kept[lab_id] = Kept(lab, owner, holder, self.clock(), size, self.share_of(owner, address), trained)
            self.evict()
        return lab_id

    def find(self, lab_id: str | None, owner: str | None, holder: str) -> Kept | None:
        """The lab kept under `lab_id` if `owner` owns it and it has not expired, else None; the tab
        `holder` drives it from now on (two tabs driving one lab: Reset in one reset the other's
        model while that one still showed its old state)."""
        if not lab_id or not owner:
            return None
        with self.lock:
            self.evict()
            kept = self.kept.get(lab_id)
            if kept is None or not secrets.compare_digest(kept.owner.encode(), owner.encode()):  # any cookie text
                return None
            kept.seen, kept.holder = self.clock(), holder
            return kept

    def holds(self, lab_id: str | None, holder: str) -> bool:
        """Whether the tab `holder` still drives the lab `lab_id`: it is kept with that holder, or
        it was dropped while that tab held it (seen() keeps it again), or this store never had it."""
        with self.lock:
            kept = self.kept.get(lab_id)
            if kept is not None:
                return kept.holder == holder
            dropped = self.dropped.get(lab_id)
            return dropped is None or dropped.holder == holder

    def discard(self, lab_id: str | None) -> None:
        """Forget a lab its tab replaced (the model it took back), so it counts against no one."""
        with self.lock:
            self.kept.pop(lab_id, None)

    def seen(self, lab_id: str, lab: Lab, owner: str, extras: dict, holder: str, address: str = "unknown") -> None:
        """The page used its lab now; remember `extras` with it, and price it again (a new model
        since). A lab dropped while its tab was still open (the budget, or the time to live) is kept
        again, so that tab's next reload finds it."""
        size, trained = lab.held_bytes(), has_trained(lab)
        with self.lock:
            kept = self.kept.get(lab_id)
            if kept is None or kept.lab is not lab:
                kept = self.kept[lab_id] = Kept(lab, owner, holder, self.clock(), size,
                                                self.share_of(owner, address), trained)
            kept.seen, kept.size, kept.trained, kept.extras = self.clock(), size, trained, dict(extras)
            self.evict()

    def evict(self) -> None:
        """Drop the expired labs; then, past the count or the bytes, the least recently seen lab never
        trained (a page opened, nothing more), and once none is left, the least recently seen lab of the
        share holding the most labs (past the count) or over its even part of the bytes (past the bytes),
        the newest such share first, so that one browser, or a flood of new browsers trickled in under the
        address limit, filling the store loses its own labs and never a classmate's who came before (34
        tabs of an LSTM of 1,024 units from one browser evicted another student's lab; in review, 240
        browsers a step trained each, one every 5 s, evicted a classmate's larger lab). The caller holds
        the lock."""
        now = self.clock()
        for lab_id in [i for i, k in self.kept.items() if now - k.seen > self.time_to_live]:
            self.drop(lab_id, "expired")
        sizes = {lab_id: k.size for lab_id, k in self.kept.items()}
        while self.kept and (len(self.kept) > self.max_labs or sum(sizes.values()) > self.max_bytes):
            untrained = [i for i, k in self.kept.items() if not k.trained]
            if untrained:
                oldest = min(untrained, key=lambda i: self.kept[i].seen)
            else:
                held: dict[str, tuple[int, int]] = {}
                for lab_id, k in self.kept.items():
                    size, count = held.get(k.share, (0, 0))
                    held[k.share] = (size + sizes[lab_id], count + 1)
                over_count = len(self.kept) > self.max_labs
                even = self.max_bytes / len(held)  # each share's even part of the bytes
                # the share to lose a lab first: the newest among those holding the most labs, or over their part
                order = {share: (count, self.first_seen.get(share, 0.0)) if over_count else
                         (size > even, self.first_seen.get(share, 0.0), size) for share, (size, count) in held.items()}
                heaviest = max(order, key=order.get)
                oldest = min((i for i, k in self.kept.items() if k.share == heaviest), key=lambda i: self.kept[i].seen)
            self.drop(oldest, "room")
            del sizes[oldest]

    def drop(self, lab_id: str, why: str) -> None:
        """Drop a lab and remember why, so its tab's next reload can say so (the caller holds the lock)."""
        self.dropped[lab_id] = Dropped(why, self.kept.pop(lab_id).holder)
        while len(self.dropped) > REMEMBERED_DROPS:
            self.dropped.popitem(last=False)

    def why_dropped(self, lab_id: str | None) -> str | None:
        """"expired" (unused for TIME_TO_LIVE), "room" (evicted, its browser holding the most), or
        None: never held here (another process, a restart) or dropped too long ago to say."""
        with self.lock:
            dropped = self.dropped.get(lab_id)
            return None if dropped is None else dropped.why
