"""The teacher's board as data (issue 32): the store's statuses as one table, a row per student, with
what the statuses alone cannot say worked out here: disconnected (no publish for DISCONNECTED_AFTER
seconds: a closed tab, a lost network, a killed app process) and stalled (playing, yet no step for
STALLED_AFTER seconds, as this board has seen it). No Streamlit here."""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

import pandas as pd

from app.session.class_status import MAX_NAME, clean_name, visible
from app.session.class_store import Status
from app.session.lesson_runs.replay import close
from app.session.lessons import BY_KEY, LESSONS

# s without a publish: six of the publisher's rounds (1 s) missed, so a round slowed by a busy process
# is no disconnection, and a killed process's students read disconnected within 6 s of its last
# publish, shown at the board's next refresh (1 s): under 10 s
DISCONNECTED_AFTER = 6.0
STALLED_AFTER = 10.0  # s playing without a step
MAX_STEP = 2**53  # a step count a page could publish (a float's integers)
UNNAMED = "(no name)"  # a row whose name shows nothing: forged, since the name box refuses such names
# A loss or metric beyond this is no page's (a diverging run reads NaN first). Within these bounds a forged
# row can still stretch the class's figure: it is one row the teacher sees, not a board that fails.
MAX_SHOWN = 1e30
COLUMNS = ["name", "state", "page", "lesson", "model", "steps", "loss", "metric", "curve", "seen", "answer"]
NUMBERS = {lesson.key: number for number, lesson in enumerate(LESSONS, 1)}  # a lesson's number, as Home lists them


def lesson_label(key: str) -> str:
    """A lesson as the board's narrow column shows it: its number and the title up to its colon ("19. Pretrained
    word vectors"); a key no lesson has (forged) as given, without invisible characters."""
    lesson = BY_KEY.get(key)
    return f"{NUMBERS[key]}. {lesson.title.split(':')[0]}" if lesson is not None else visible(key)[:MAX_NAME]


@dataclass
class Moves:
    """What the board remembers of each student between refreshes: the steps last seen and when
    they last changed (the store's clock), to tell a stalled run from a playing one."""

    steps: dict[str, tuple[int, float]] = field(default_factory=dict)
    numbers: dict[str, int] = field(default_factory=dict)  # each student's number, in the order the board met them
    numbered: int = 0  # numbers given so far: one never goes to another student, gone or not

    def keep_only(self, keys: set[str]) -> None:
        """Forget the students the store no longer has: the board's memory stays the class's size (a student's
        number stays theirs while they are on the board)."""
        for gone in set(self.steps) - keys:
            del self.steps[gone]
        for gone in set(self.numbers) - keys:
            del self.numbers[gone]

    def anonymous(self, key: str) -> str:
        """"student 7": the name the board shows for a student while names are hidden (the projector)."""
        if key not in self.numbers:
            self.numbered += 1
            self.numbers[key] = self.numbered
        return f"student {self.numbers[key]}"

    def stalled(self, key: str, steps: int, playing: bool, now: float) -> bool:
        seen = self.steps.get(key)
        if seen is None or seen[0] != steps:
            self.steps[key] = (steps, now)
            return False
        return playing and now - seen[1] >= STALLED_AFTER


def shown_name(name: str, named: bool) -> str:
    """A status's name as the board shows it: a student's name as the name box leaves it (a forged
    "Teacher" or blank one is UNNAMED), a handle as given, each without invisible characters."""
    shown = clean_name(name)[0] if named else visible(name)[:MAX_NAME]
    return shown or UNNAMED


def as_shown(status: dict) -> dict:
    """A status as the board reads it: each field of the type a student's page publishes, else its
    default, and the name cleaned as a student's page cleans it. Statuses are not signed, and anyone
    who reaches a Redis server without a password can write one ({"steps": "x"}, {"curves": 5}): a
    forged status is one odd row, never a board that fails."""
    def text(value: object) -> str:
        return value if isinstance(value, str) else ""

    def number(value: object) -> float | None:  # JSON reads NaN, Infinity and 1e308 too
        ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
        return float(value) if ok and abs(value) < MAX_SHOWN else None

    def step(value: object) -> int | None:
        return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < MAX_STEP else None

    def curve(points: object) -> list[list[float]]:
        pairs = points if isinstance(points, list) else []
        return [[step(p[0]), number(p[1])] for p in pairs
                if isinstance(p, list) and len(p) == 2 and None not in (step(p[0]), number(p[1]))]

    steps, curves, prediction = status.get("steps"), status.get("curves"), status.get("prediction")
    return {
        "name": shown_name(text(status.get("name")), status.get("named") is True),
        "state": text(status.get("state")) or "not started",
        "page": text(status.get("page")), "lesson": text(status.get("lesson")), "model": text(status.get("model")),
        "run": text(status.get("run")),
        "steps": step(steps) or 0,
        "loss": number(status.get("loss")), "metric": number(status.get("metric")),
        "curves": {series: curve(points) for series, points in curves.items()} if isinstance(curves, dict) else {},
        "prediction": ({"lesson": text(prediction.get("lesson")), "choice": text(prediction.get("choice"))}
                       if isinstance(prediction, dict) else {}),
    }


def state_of(status: dict, age: float, stalled: bool) -> str:
    if age >= DISCONNECTED_AFTER:
        return "disconnected"
    if status.get("state") == "playing" and stalled:
        return "stalled"
    return str(status.get("state", "not started"))


def board_frame(statuses: list[Status], moves: Moves, now: float) -> pd.DataFrame:
    """A row per student (COLUMNS, after their store key and lesson's key), most recently seen first; `now` on
    the store's clock."""
    moves.keep_only({entry.session_id for entry in statuses})
    rows = []
    for entry in statuses:
        status = as_shown(entry.status)
        steps = status["steps"]
        stalled = moves.stalled(entry.session_id, steps, status["state"] == "playing", now)
        prediction = status["prediction"]
        rows.append({
            "key": entry.session_id, "lesson_key": status["lesson"], "name": status["name"],
            "state": state_of(status, entry.age, stalled),
            "page": status["page"], "lesson": lesson_label(status["lesson"]) if status["lesson"] else "",
            "model": status["model"],
            "steps": steps, "loss": status["loss"], "metric": status["metric"],
            "curve": [point[1] for point in status["curves"].get("metric", [])],
            "seen": round(entry.age, 1),
            "answer": prediction.get("choice", "") if prediction.get("lesson") == status["lesson"] else "",
        })
    return pd.DataFrame(rows, columns=["key", "lesson_key", *COLUMNS])


def names_hidden(frame: pd.DataFrame, moves: Moves) -> pd.DataFrame:
    """The board's table with each name "student N" (Moves.anonymous): for the projector."""
    return frame.assign(name=[moves.anonymous(key) for key in frame["key"]])


def counts_line(frame: pd.DataFrame) -> str:
    """'12 students: 8 playing, 3 paused, 1 diverged' (states in a fixed order)."""
    if not len(frame):
        return "No student has joined yet: their pages appear here within seconds of opening."
    counts = Counter(frame["state"])
    order = ("playing", "paused", "not started", "stalled", "diverged", "disconnected")
    parts = [f"{counts[name]} {name}" for name in order if counts[name]]
    return f"{len(frame)} student{'s' * (len(frame) != 1)}: " + ", ".join(parts) + "."


def answers_of(statuses: list[Status], lesson: str, choices: tuple[str, ...]) -> dict[str, int]:
    """How many students answered each choice of `lesson`'s question (every choice, 0 included)."""
    counts = Counter(shown["prediction"]["choice"] for shown in map(as_shown, (e.status for e in statuses))
                     if shown["prediction"].get("lesson") == lesson)
    return {choice: counts.get(choice, 0) for choice in choices}


def curves_of(statuses: list[Status], lesson: str, series: str,
              hidden: Moves | None = None) -> dict[str, tuple[str, list[list[float]]]]:
    """Each student's held-out `series` ("loss" or "metric") on `lesson`: their store key -> (the
    name shown on the board, [[step, value], ...]); keyed apart, as two students may share a name. With
    `hidden`, each name is the board's "student N" (Moves.anonymous)."""
    found = {}
    for entry in statuses:
        shown = as_shown(entry.status)
        curve = shown["curves"].get(series)
        if shown["lesson"] == lesson and curve:
            name = hidden.anonymous(entry.session_id) if hidden is not None else shown["name"]
            found[entry.session_id] = (name, curve)
    return found


INSIDE, WIDEN = 0.9, 0.25  # a run inside its lesson's band, as the full tier holds a lesson trained again


def inside_band(curves: dict[str, tuple[str, list[list[float]]]], band: pd.DataFrame) -> tuple[int, int]:
    """(inside, counted): of the curves with a point at one of the band's steps, how many have at least INSIDE
    of those points within the band widened by WIDEN of its width (replay.close), as tests/app/test_lessons.py
    holds a lesson's run: what the class's runs say of the measured claim."""
    by_step = {int(row.step): (row.low, row.high) for row in band.itertuples()}
    inside = counted = 0
    for _, points in curves.values():
        shared = [(value, *by_step[int(step)]) for step, value in points if int(step) in by_step]
        if not shared:
            continue
        counted += 1
        inside += sum(close(value, low, high, WIDEN) for value, low, high in shared) >= INSIDE * len(shared)
    return inside, counted


def class_csv(frame: pd.DataFrame) -> bytes:
    """The board's table as a teacher keeps it (names as given, the lesson's question marked): a row a student,
    its answer and whether the lesson's runs measured it right, its steps and latest held-out scores."""
    rows = []
    for row in frame.itertuples():
        lesson = BY_KEY.get(row.lesson_key)
        question = lesson.question if lesson is not None else None
        right = "" if not row.answer or question is None else ("yes" if row.answer == question.right.text else "no")
        rows.append({"student": row.name, "state": row.state, "page": row.page, "lesson": row.lesson,
                     "answer": row.answer, "answer measured right": right, "steps": row.steps,
                     "held-out metric": row.metric, "held-out loss": row.loss, "model": row.model})
    return pd.DataFrame(rows).map(inert).to_csv(index=False).encode()


def inert(cell: object) -> object:
    """A cell a spreadsheet reads as text: statuses are not signed, and a name or answer starting "=", "+", "-",
    "@" (or a tab, a return) would run as a formula when the teacher opens the file (OWASP's CSV injection)."""
    return f"'{cell}" if isinstance(cell, str) and cell[:1] in ("=", "+", "-", "@", "\t", "\r") else cell
