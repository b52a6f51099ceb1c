"""The shipped lesson ensembles (app/data/ensembles/<key>.json, benchmarks/lesson_ensembles.py): each
lesson's runs over seeds and kernel paths, and CPUs, read once for the server (immutable data), and
the band of every run's curve: the lowest and highest value its runs took at each step.

Every seed on every path was measured on one CPU, the document's `machine` (the primary CPU); runs of
the same seeds on other CPUs (another vendor's rounding) are members too, each naming its `cpu` (a
member that names none was measured on the primary CPU). A member's values are read with the lesson's
ratio claims worked out from them (app/session/lessons.py), so every reader finds a claim's value in
`values` whatever the file was measured before. No Streamlit here.
"""
from __future__ import annotations

import dataclasses
import functools
import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from app.session.lessons import BY_KEY
from app.session.link import Setup, parse_query

FOLDER = Path(__file__).resolve().parents[1] / "data" / "ensembles"


@dataclass(frozen=True)
class Ensemble:
    key: str
    document: dict
    bands: dict = dataclasses.field(default_factory=dict, compare=False, repr=False)  # band()'s, once each

    @property
    def members(self) -> list[dict]:
        return self.document["members"]

    @property
    def cpu(self) -> str:
        """The primary CPU: every seed was measured on every path there."""
        return self.document["machine"]["cpu"]

    def cpus(self) -> list[str]:
        """Every CPU a member was measured on, the primary first."""
        return list(dict.fromkeys([self.cpu, *(cpu_of(m, self.document) for m in self.members)]))

    def describe(self) -> str:
        """Which runs the band spans, for a caption."""
        seeds = sorted({m["seed"] for m in self.members})
        paths = list(dict.fromkeys(m["path"] for m in self.members if cpu_of(m, self.document) == self.cpu))
        others = [(cpu, list(dict.fromkeys(m["path"] for m in self.members if cpu_of(m, self.document) == cpu)))
                  for cpu in self.cpus()[1:]]
        more = "".join(f"; on {cpu} also the path{'s' if len(on) > 1 else ''} {' and '.join(on)}" for cpu, on in others)
        return (f"{len(self.members)} runs measured: seeds {', '.join(map(str, seeds))}, each on the CPU kernel "
                f"paths {' and '.join(paths)} ({self.cpu}{more}, torch {self.document['machine']['torch']})")

    def value_range(self, name: str) -> tuple[float, float]:
        """The lowest and highest of measured value `name` over every member."""
        values = [m["values"][name] for m in self.members]
        return min(values), max(values)

    def minutes(self) -> float:
        """How long the lesson's runs (every one its card asks for) trained on the app's kernel path, one
        thread, outside a page, on the primary CPU: the median over its seeds, in minutes."""
        primary = [m for m in self.members if cpu_of(m, self.document) == self.cpu]
        seconds = sorted(m["seconds"] for m in primary if m["path"] == primary[0]["path"])
        return seconds[len(seconds) // 2] / 60

    def runs(self) -> list[str]:
        return list(self.members[0]["curves"])

    def run_of(self, setup: Setup) -> str | None:
        """The run whose Lab had this setup (whatever its seed), or None. Compared as setups, not as
        links: a link leaves out what means nothing for its model, and what it leaves out has changed
        since some ensembles were measured (an LSTM's link named activation=tanh)."""
        wanted = without_seed(setup)
        return next((run for run, link in self.members[0].get("links", {}).items()
                     if setup_of(tuple(link.items())) == wanted), None)

    def series(self, run: str) -> list[str]:
        return list(self.members[0]["curves"][run])

    def band(self, run: str, series: str, seeds: tuple[int, ...] | None = None) -> pd.DataFrame:
        """step, low, high: the range of `series` over every member of `run` (of those `seeds`, on any
        CPU), at the steps all of them measured (worked out once for the server: 0.1 s for four runs on
        a busy machine). A chaotic run's (Lesson.chaotic) is the range at its start, then at every step
        the range its members took at any step after the start: no one step of it is where a run will be."""
        found = self.bands.get((run, series, seeds))
        if found is None:
            lesson = BY_KEY.get(self.key)
            chaotic = lesson is not None and lesson.is_chaotic(run, series)
            found = self.bands[run, series, seeds] = band_of(self.members, run, series, seeds, chaotic)
        return found.copy()


def band_of(members: list[dict], run: str, series: str, seeds: tuple[int, ...] | None,
            chaotic: bool = False) -> pd.DataFrame:
    frames = [pd.DataFrame(m["curves"][run][series], columns=["step", "value"]).set_index("step")["value"]
              for m in members if seeds is None or m["seed"] in seeds]
    values = pd.concat(frames, axis=1, join="inner")  # [steps, members]
    low, high = values.min(axis=1), values.max(axis=1)
    if chaotic:
        after = values.index > values.index.min()
        low[after], high[after] = low[after].min(), high[after].max()
    return pd.DataFrame({"step": values.index, "low": low.to_numpy(), "high": high.to_numpy()})


@functools.cache
def shipped(key: str) -> Ensemble | None:
    """Lesson `key`'s ensemble, or None when none is shipped."""
    path = FOLDER / f"{key}.json"
    return read(key, json.loads(path.read_text())) if path.exists() else None


def read(key: str, document: dict) -> Ensemble:
    """An ensemble document as the app reads it: each member's values with the lesson's ratio claims
    worked out from them, and its `cpu` (the document's when it names none)."""
    lesson = BY_KEY.get(key)
    members = [{**m, "cpu": cpu_of(m, document),
                "values": {**m["values"], **(lesson.derived(m["values"]) if lesson else {})}}
               for m in document["members"]]
    return Ensemble(key, {**document, "members": members})


def cpu_of(member: dict, document: dict) -> str:
    """The CPU a member was measured on: its own `cpu`, else the document's (members measured before
    members named their CPU all ran on the document's machine)."""
    return member.get("cpu") or document["machine"]["cpu"]


def without_seed(setup: Setup) -> Setup:
    """The setup at seed 0: an ensemble's runs differ only in their seeds."""
    return dataclasses.replace(setup, train=dataclasses.replace(setup.train, seed=0))


@functools.lru_cache(maxsize=256)
def setup_of(link: tuple[tuple[str, str], ...]) -> Setup:
    """A run's recorded link (its items, without its seed) as a setup at seed 0, parsed once for the server."""
    return parse_query(dict(link))
