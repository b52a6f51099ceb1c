"""The Embeddings page's word2vec run: skip-gram with negative sampling (Mikolov et al. 2013) on four
novels of Jane Austen (public domain: Project Gutenberg's e-texts as GITenberg keeps them, the corpus
"prose" of engine.datasets, downloaded when a user asks), played, paused and stepped like every
other model. Made from a student's settings and kept in their session (never shared). No Streamlit here.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import cache

from torch import Tensor

from app.session.link import EMBEDDING_PARAMS as LINK_PARAMS
from app.session.link import echo
from app.session.memory import one_step, weights_bytes
from app.session.playback import Playback
from app.session.tsne_maps import TsneMaps
from engine.embeddings import HOW
from engine.prose import prose_words
from engine.word2vec import Corpus, StepStats, Word2Vec, Word2VecConfig, make_corpus

# What one step may cost on a CPU a class shares: pairs x (1 + negatives) x dim multiply-adds for the
# scores, as many again for the gradient (step_macs). Measured on one thread of the 2-core machine at a
# load of 5: the default (1.5e6) 4.9 ms a step, 100 dimensions, a window of 8 and 10 noise words (9.0e6)
# 14.6 ms, the widest choices (300, 10, 20: 6.5e7) 145 ms, too slow to watch learn in a class.
MAX_STEP_MACS = 2e7
DIMS = (10, 25, 50, 100, 200, 300)
WINDOWS = (1, 2, 3, 5, 8, 10)
NEGATIVES = (1, 2, 5, 10, 20)
DEFAULT = Word2VecConfig()  # 50 dimensions, a window of 5, 5 noise words, 256 centres a step
PROJECTIONS = ("pca", "tsne")
FEWEST_WORDS = 50  # drawn in a projection at least
SHOWN = 500  # ... by default
# How many words each projection draws within a 2-second rerun on this 2-core machine
# (benchmarks/embeddings_maps.py, benchmarks/README section 19): PCA with its figure handles the whole
# vocabulary (4,501 words; 200,000 of 50 dimensions fit, section 16); a t-SNE map (openTSNE, 750
# iterations, one thread) of 500 words took 1.7 s at a load of 3.4-4.7 (300 and 400 fitted in two runs
# at 5-7.6; 600 took 2.2 s at best).
TSNE_WORDS = 500


@cache
def prose_corpus(min_count: int) -> Corpus:
    """The prose's vocabulary and ids, made once a process and shared read-only by every session's run
    (about 3.5 MB of ids); each run's weights are its own. CorpusMissing while the prose is not on this
    machine (not kept: the next call looks again)."""
    return make_corpus(prose_words(), min_count)


def step_macs(cfg: Word2VecConfig) -> float:
    """A step's multiply-adds at most: every centre paired with 2 x window context words."""
    return 2 * cfg.centres * 2 * cfg.window * (1 + cfg.negatives) * cfg.dim


def check_config(cfg: Word2VecConfig) -> None:
    """ValueError saying what to lower when a step would cost more than a shared CPU allows."""
    if step_macs(cfg) > MAX_STEP_MACS:
        raise ValueError(
            f"one step would take about {step_macs(cfg):.1e} multiply-adds ({cfg.centres} centres x up to "
            f"{2 * cfg.window} context words x {1 + cfg.negatives} scores x {cfg.dim} dimensions, twice), over "
            f"this page's limit of {MAX_STEP_MACS:.0e} for a CPU a class shares; lower the dimensions, the "
            "window or the noise words")


class EmbeddingRun(Playback):
    """One word2vec run: its settings, and the Word2Vec that trains a step at a time under the lock."""

    def __init__(self, cfg: Word2VecConfig = DEFAULT):
        super().__init__()
        check_config(cfg)
        self.cfg = cfg
        self.run = Word2Vec(prose_corpus(cfg.min_count), cfg)
        self.maps = TsneMaps()  # the t-SNE maps of this run's vectors

    def held_bytes(self) -> int:
        """Its two vectors a word (plain SGD keeps no moments: weights_bytes's four copies overcount it
        twice, a few MB); the corpus is every run's. 0 until built."""
        return weights_bytes(self.run.model) if hasattr(self, "run") else 0

    @property
    def steps_taken(self) -> int:
        return self.run.steps_done

    def steps_left(self, until: int) -> int:
        return 0 if self.run.diverged_at is not None else max(0, until - self.run.steps_done)

    def advance(self, until: int) -> bool:
        if self.finished(until):
            return False
        with one_step():
            self.run.step(1)
        return True

    def finished(self, until: int) -> bool:
        return self.run.steps_done >= until or self.run.diverged_at is not None

    def step(self) -> None:
        """One training step, pausing first."""
        self.playing = False
        with self.hold(), one_step():
            self.run.step(1)

    def reset(self, cfg: Word2VecConfig | None = None) -> None:
        """Fresh vectors from the seed (with new settings, when given); the history cleared. Raises
        ValueError, keeping the run as it was, when the settings are over the budget."""
        cfg = cfg or self.cfg
        check_config(cfg)
        self.playing = False
        run = Word2Vec(prose_corpus(cfg.min_count), cfg)  # built outside the lock
        with self.hold():
            self.cfg, self.run, self.maps = cfg, run, TsneMaps()  # a map of the old vectors is never shown

    def vectors(self) -> Tensor:
        """[V, dim] the input vectors as they are now: read between two steps."""
        with self.hold():
            return self.run.vectors()

    @property
    def last(self) -> StepStats | None:
        return self.run.last


def with_settings(cfg: Word2VecConfig, **changed) -> Word2VecConfig:
    """cfg with some fields changed (a ValueError from the config says which is out of range)."""
    return dataclasses.replace(cfg, **changed)


def whole(text: str) -> int | None:
    """A link's value as a whole number, or None (ASCII digits only: "²".isdigit() is true)."""
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 9 else None


@dataclass(frozen=True)
class PageSettings:
    """What a link of the Embeddings page reproduces: word2vec's settings, how many words the
    projection draws, picked how, and which projection."""

    cfg: Word2VecConfig = DEFAULT
    words: int = SHOWN
    pick: str = "frequent"
    projection: str = "pca"

    def to_query(self) -> dict[str, str]:
        values = {"dim": self.cfg.dim, "window": self.cfg.window, "negatives": self.cfg.negatives,
                  "words": self.words, "pick": self.pick, "projection": self.projection}
        return {LINK_PARAMS[name]: str(value) for name, value in values.items()}


def parse_link(query: dict[str, str]) -> PageSettings:
    """The page's settings from a link's query (its other parameters are the Lab's), the defaults
    for those it leaves out. ValueError saying every problem (a value not offered, not a whole
    number, over the step budget, more words than the vocabulary has)."""
    given = {name: query[param] for name, param in LINK_PARAMS.items() if param in query}
    problems, values = [], {}
    for name, offered in (("dim", DIMS), ("window", WINDOWS), ("negatives", NEGATIVES)):
        if name in given:
            if whole(given[name]) not in offered:
                problems.append(f"{LINK_PARAMS[name]} must be one of {', '.join(map(str, offered))}, got "
                                f"{echo(given[name])}")
            else:
                values[name] = whole(given[name])
    vocabulary = len(prose_corpus(DEFAULT.min_count).words)
    words = whole(given.get("words", str(SHOWN)))
    if words is None or not FEWEST_WORDS <= words <= vocabulary:
        problems.append(f"{LINK_PARAMS['words']} must be a whole number from {FEWEST_WORDS} to {vocabulary:,} (the "
                        f"words of the vocabulary), got {echo(given['words'])}")
    for name, offered in (("pick", HOW), ("projection", PROJECTIONS)):
        if given.get(name, offered[0]) not in offered:
            problems.append(f"{LINK_PARAMS[name]} must be one of {', '.join(offered)}, got {echo(given[name])}")
    cfg = with_settings(DEFAULT, **values)
    try:
        check_config(cfg)
    except ValueError as err:
        problems.append(str(err))
    if problems:
        raise ValueError("; ".join(problems))
    return PageSettings(cfg, words, given.get("pick", "frequent"), given.get("projection", "pca"))
