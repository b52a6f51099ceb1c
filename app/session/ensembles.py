"""The shipped lesson ensembles (app/data/ensembles/<key>.json, benchmarks/lesson_ensembles.py): each
lesson's runs over seeds and kernel paths, read once for the server (immutable data), and the
band of every run's curve: the lowest and highest value its runs took at each step. No Streamlit here.
"""
from __future__ import annotations

import dataclasses
import functools
import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from app.session.link import Setup, parse_query

FOLDER = Path(__file__).resolve().parents[1] / "data" / "ensembles"


@dataclass(frozen=True)
class Ensemble:
    key: str
    document: dict

    @property
    def members(self) -> list[dict]:
        return self.document["members"]

    def describe(self) -> str:
        """Which runs the band spans, for a caption."""
        seeds = sorted({m["seed"] for m in self.members})
        paths = list(dict.fromkeys(m["path"] for m in self.members))
        return (f"{len(self.members)} runs measured: seeds {', '.join(map(str, seeds))}, each on the CPU kernel "
                f"paths {' and '.join(paths)} ({self.document['machine']['cpu']}, torch "
                f"{self.document['machine']['torch']})")

    def minutes(self) -> float:
        """How long the lesson's runs (every one its card asks for) trained on the app's kernel path, one
        thread, outside a page: the median over its seeds, in minutes."""
        seconds = sorted(m["seconds"] for m in self.members if m["path"] == self.members[0]["path"])
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
        """step, low, high: the range of `series` over every member of `run` (of those `seeds`), at the
        steps all of them measured (worked out once for the server: 0.1 s for four runs on a busy machine)."""
        return band_of(self.key, run, series, seeds).copy()


@functools.lru_cache(maxsize=256)
def band_of(key: str, run: str, series: str, seeds: tuple[int, ...] | None) -> pd.DataFrame:
    members = shipped(key).members
    frames = [pd.DataFrame(m["curves"][run][series], columns=["step", "value"]).set_index("step")["value"]
              for m in members if seeds is None or m["seed"] in seeds]
    values = pd.concat(frames, axis=1, join="inner")  # [steps, members]
    return pd.DataFrame({"step": values.index, "low": values.min(axis=1).to_numpy(),
                         "high": values.max(axis=1).to_numpy()})


@functools.cache
def shipped(key: str) -> Ensemble | None:
    """Lesson `key`'s ensemble, or None when none is shipped."""
    path = FOLDER / f"{key}.json"
    return Ensemble(key, json.loads(path.read_text())) if path.exists() else None


def without_seed(setup: Setup) -> Setup:
    """The setup at seed 0: an ensemble's runs differ only in their seeds."""
    return dataclasses.replace(setup, train=dataclasses.replace(setup.train, seed=0))


@functools.lru_cache(maxsize=256)
def setup_of(link: tuple[tuple[str, str], ...]) -> Setup:
    """A run's recorded link (its items, without its seed) as a setup at seed 0, parsed once for the server."""
    return parse_query(dict(link))
