"""What one student session shows the teacher's board (issue 32), and nothing more: the name the
student chose (or an anonymous handle), the page and lesson open, the model in one line, steps
trained, the latest held-out loss and metric with a short curve of each, whether it is
playing or diverged, and the student's prediction for the open lesson. No Streamlit here.

A Presence lives in the session's state. Each page run sets what it knows (page, lesson, the Lab,
the page's own runs); the publisher's thread reads it between two training steps without the lab's
lock: the logs it reads are only appended, each row whole, and a Lab's fields are replaced whole.
"""
from __future__ import annotations

import re
import secrets
import threading
import time
import unicodedata
from dataclasses import dataclass, field

from cachetools import LRUCache

from app.session.comparison import RoundRobin
from app.session.lab import Lab

MAX_NAME = 40  # characters of a name on the board
CURVE_POINTS = 30  # (step, value) pairs of each of a status's two curves: about 1 KB of its 4 KB together
SERIES = ("loss", "metric")  # the held-out curves a status carries: a lesson's band is of one of them
# The handle a student without a name gets: two words, easy to read out in a classroom.
ADJECTIVES = ("amber", "brisk", "calm", "deft", "eager", "fond", "glad", "keen", "lucid", "merry", "nimble",
              "quiet", "rapid", "steady", "sunny", "swift", "tidy", "vivid", "warm", "witty")
ANIMALS = ("badger", "crane", "finch", "fox", "gecko", "heron", "ibis", "lynx", "marten", "newt", "otter",
           "owl", "panda", "quail", "raven", "seal", "stoat", "tern", "vole", "wren")
UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff]")
# Characters that draw nothing yet are letters or symbols to Unicode (not spaces, not format characters): the
# braille blank, the Hangul fillers, Khmer's inherent vowels, Mongolian's vowel separator. A name of these
# alone showed as a blank row on the board.
BLANK_GLYPHS = "\u2800\u3164\u115f\u1160\uffa0\u17b4\u17b5\u180e"
HIDDEN_CATEGORIES = ("Cc", "Cf", "Co", "Cn", "Zl", "Zp")  # control, format, private use, unassigned, separators
RESERVED = "teacher"  # the board's own word for the teacher: no student may show as it
# Cyrillic and Greek letters drawn as Latin ones (after casefold), read as those for RESERVED: "Теacher" with a
# Cyrillic Т and е showed on the board as the teacher (issue 43, finding 8).
LOOKALIKES = str.maketrans("авсеһнікмортѕуухгαεηικνορτυχ", "abcehhikmoptsyyxraenikvoptux")
HANDLE = re.compile(rf"({'|'.join(ADJECTIVES)}) ({'|'.join(ANIMALS)}) \d+")


def new_handle() -> str:
    """An anonymous handle, e.g. "calm otter 42"."""
    return f"{secrets.choice(ADJECTIVES)} {secrets.choice(ANIMALS)} {secrets.randbelow(90) + 10}"


def visible(typed: str) -> str:
    """`typed` without its control, invisible and blank-drawing characters and runs of spaces."""
    kept = "".join(ch for ch in UNPRINTABLE.sub("", typed or "")
                   if ch not in BLANK_GLYPHS and unicodedata.category(ch) not in HIDDEN_CATEGORIES)
    return " ".join(kept.split())


def clean_name(typed: str) -> tuple[str, str | None]:
    """(the name as the board shows it, what was changed or None; "" for none: the handle is shown). The
    board shows it as plain text (a table cell, never Markdown or HTML); here it loses control and invisible
    characters and runs of spaces, and is cut to MAX_NAME characters. A name with nothing visible, the word
    "Teacher" however written, or an anonymous handle (another student's, maybe) is refused."""
    name = visible(typed)
    folded = " ".join(unicodedata.normalize("NFKC", name).casefold().split())
    if (typed or "").strip() and not any(unicodedata.category(ch)[0] in "LNPS" for ch in name):
        return "", "a name of invisible characters only is no name: the board shows your handle"
    if RESERVED in re.sub(r"[\W_]", "", folded).translate(LOOKALIKES):
        return "", f"'{RESERVED.title()}' is your teacher's name on the board: choose another"
    if HANDLE.fullmatch(folded):
        return "", "that is how the board names students without a name: choose a name of your own"
    if len(name) > MAX_NAME:
        return name[:MAX_NAME], f"names are at most {MAX_NAME} characters: cut to {name[:MAX_NAME]!r}"
    if name != (typed or "").strip():
        return name, "invisible characters and extra spaces were left out"
    return name, None


class NamesByBrowser:
    """The name each browser last gave the board (its owner token -> the name), so that a reloaded
    tab, a new session, fills its name box again: nginx keeps a browser on its process, so this
    process's memory is where its next session starts. At most MAX_BROWSERS, the least recently
    used forgotten first; safe across the sessions' threads."""

    MAX_BROWSERS = 2000  # a class's browsers many times over; 40 characters each

    def __init__(self):
        self.names: LRUCache[str, str] = LRUCache(self.MAX_BROWSERS)
        self.lock = threading.Lock()

    def get(self, browser: str) -> str | None:
        with self.lock:
            return self.names.get(browser)

    def keep(self, browser: str, name: str) -> None:
        with self.lock:
            if name:
                self.names[browser] = name
            else:  # cleared: a reload stays anonymous too
                self.names.pop(browser, None)


def thinned(points: list[tuple[int, float]], count: int = CURVE_POINTS) -> list[list[float]]:
    """At most `count` points of a curve, evenly over it, the last always kept."""
    if len(points) <= count:
        return [[int(s), round(float(v), 5)] for s, v in points]
    stride = (len(points) - 1) / (count - 1)
    picked = [points[round(i * stride)] for i in range(count)]
    return [[int(s), round(float(v), 5)] for s, v in picked]


@dataclass
class Presence:
    """One student session as the board sees it; `key` (its entry in the store, never shown) and
    `handle` are made once and stay with the session."""

    key: str = field(default_factory=lambda: secrets.token_urlsafe(16))
    handle: str = field(default_factory=new_handle)
    name: str = ""
    page: str = "home"
    lesson: str | None = None
    lab: Lab | None = None
    runs: RoundRobin | None = None  # the page's own runs (Compare cells, BERT and GPT...), when it has them
    prediction: dict | None = None  # {"lesson", "choice", "locked"} once the student answered a lesson's question
    # The session's last page run, banner poll or training tick (state.tab_alive): the tab is there. Ticks
    # count: with 30 students playing on a process a tick lasts seconds and the banner's poll waits behind it
    # (measured: page runs and polls alone left playing students silent for 15 s). Its session's own ticks,
    # not its Lab's: a reloaded tab's new session takes the same Lab, and the old session must go quiet.
    seen_at: float = field(default_factory=time.monotonic)

    def seen(self) -> None:
        self.seen_at = time.monotonic()

    def status(self) -> dict:
        """The status the publisher sends: small (a few hundred bytes), plain JSON."""
        out = {"name": self.name or self.handle, "named": bool(self.name), "page": self.page, "lesson": self.lesson,
               "prediction": self.prediction}
        if self.runs is not None:
            return out | runs_status(self.runs)
        if self.lab is not None:
            return out | lab_status(self.lab)
        return out | {"model": "", "steps": 0, "state": "not started", "loss": None, "metric": None,
                      "metric_name": "", "curves": {}}


def lab_status(lab: Lab) -> dict:
    """The Lab's model, steps, held-out figures and curve (its held-out log, read without the lock)."""
    summary = lab.summary()
    # appended whole: a copy of the list, read between two steps; none for a model waiting for its corpus
    rows = lab.held_out.log.rows() if lab.measured_yet else []
    last = rows[-1] if rows else None
    trainer = lab.trainer
    state = ("diverged" if trainer.diverged_at is not None else "playing" if lab.playing
             else "paused" if trainer.steps_done else "not started")
    return {"model": f"{summary['task']} · {summary['model']}", "steps": trainer.steps_done, "state": state,
            "loss": finite(last["loss"]) if last else None, "metric": finite(last["metric"]) if last else None,
            "metric_name": lab.task.metric_name, "curves": curves_of(rows)}


def runs_status(runs: RoundRobin) -> dict:
    """A page's own runs: their first run's held-out figures and curve (the run a lesson's link sets up)."""
    first = runs.runs[0]
    rows = first.log.rows()
    last = rows[-1] if rows else None
    state = ("diverged" if first.stopped else "playing" if runs.playing  # the run shown, not its neighbours
             else "paused" if runs.steps_done else "not started")
    cfg = first.cfg
    return {"model": f"{len(runs.runs)} runs · {first.name}: {cfg.arch} {cfg.num_layers} x {cfg.hidden_size}",
            "run": first.name, "steps": runs.steps_done, "state": state,
            "loss": finite(last["loss"]) if last else None, "metric": finite(last["metric"]) if last else None,
            "metric_name": first.trainer.task.metric_name, "curves": curves_of(rows)}


def curves_of(rows: list[dict]) -> dict[str, list[list[float]]]:
    """The held-out log's loss and metric, each thinned to CURVE_POINTS, non-finite points left out."""
    return {series: thinned([(r["step"], r[series]) for r in rows if finite(r[series]) is not None])
            for series in SERIES}


def finite(value: float) -> float | None:
    """A figure JSON can carry: None for NaN or infinity (a diverged run's)."""
    value = float(value)
    return value if value == value and abs(value) != float("inf") else None
