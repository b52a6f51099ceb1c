"""The teacher's board as data (issue 32): the store's statuses as one table, a row per student, with
what the statuses alone cannot say worked out here: disconnected (no publish for DISCONNECTED_AFTER
seconds: a closed tab, a lost network, a killed app process) and stalled (playing, yet no step for
STALLED_AFTER seconds, as this board has seen it). No Streamlit here."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import pandas as pd

from app.session.class_store import Status

# s without a publish: three missed at the publisher's 2 s, so a killed process's students read
# disconnected within 6 s of its last publish, shown at the board's next refresh (1 s): under 10 s
DISCONNECTED_AFTER = 6.0
STALLED_AFTER = 10.0  # s playing without a step
COLUMNS = ["name", "state", "page", "lesson", "model", "steps", "loss", "metric", "curve", "seen", "answer"]


@dataclass
class Moves:
    """What the board remembers of each student between refreshes: the steps last seen and when
    they last changed (the store's clock), to tell a stalled run from a playing one."""

    steps: dict[str, tuple[int, float]] = field(default_factory=dict)

    def keep_only(self, keys: set[str]) -> None:
        """Forget the students the store no longer has: the board's memory stays the class's size."""
        for gone in set(self.steps) - keys:
            del self.steps[gone]

    def stalled(self, key: str, steps: int, playing: bool, now: float) -> bool:
        seen = self.steps.get(key)
        if seen is None or seen[0] != steps:
            self.steps[key] = (steps, now)
            return False
        return playing and now - seen[1] >= STALLED_AFTER


def state_of(status: dict, age: float, stalled: bool) -> str:
    if age >= DISCONNECTED_AFTER:
        return "disconnected"
    if status.get("state") == "playing" and stalled:
        return "stalled"
    return str(status.get("state", "not started"))


def board_frame(statuses: list[Status], moves: Moves, now: float) -> pd.DataFrame:
    """A row per student (COLUMNS), most recently seen first; `now` on the store's clock."""
    moves.keep_only({entry.session_id for entry in statuses})
    rows = []
    for entry in statuses:
        status = entry.status
        steps = int(status.get("steps") or 0)
        stalled = moves.stalled(entry.session_id, steps, status.get("state") == "playing", now)
        prediction = status.get("prediction") or {}
        rows.append({
            "key": entry.session_id, "name": str(status.get("name", "")), "state": state_of(status, entry.age, stalled),
            "page": status.get("page"), "lesson": status.get("lesson") or "", "model": status.get("model", ""),
            "steps": steps, "loss": status.get("loss"), "metric": status.get("metric"),
            "curve": [point[1] for point in (status.get("curves") or {}).get("metric", [])],
            "seen": round(entry.age, 1),
            "answer": prediction.get("choice", "") if prediction.get("lesson") == status.get("lesson") else "",
        })
    return pd.DataFrame(rows, columns=["key", *COLUMNS])


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
    counts = Counter(entry.status["prediction"]["choice"] for entry in statuses
                     if (entry.status.get("prediction") or {}).get("lesson") == lesson)
    return {choice: counts.get(choice, 0) for choice in choices}


def curves_of(statuses: list[Status], lesson: str, series: str) -> dict[str, tuple[str, list[list[float]]]]:
    """Each student's held-out `series` ("loss" or "metric") on `lesson`: their store key -> (the
    name shown on the board, [[step, value], ...]); keyed apart, as two students may share a name."""
    found = {}
    for entry in statuses:
        curve = (entry.status.get("curves") or {}).get(series)
        if entry.status.get("lesson") == lesson and curve:
            found[entry.session_id] = (str(entry.status.get("name", "?")), curve)
    return found
