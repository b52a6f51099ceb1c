"""The Embeddings page's word2vec run: skip-gram with negative sampling (Mikolov et al. 2013) on the
shipped prose (engine/data/prose.md: four Austen novels), played, paused and stepped like every
other model. Made from a student's settings and kept in their session (never shared). No Streamlit here.
"""
from __future__ import annotations

import dataclasses

from torch import Tensor

from app.session.playback import Playback
from engine.prose import prose_words
from engine.word2vec import StepStats, Word2Vec, Word2VecConfig

# What one step may cost on a CPU a class shares: pairs x (1 + negatives) x dim multiply-adds for the
# scores, as many again for the gradient (step_macs). Measured on one thread of the 2-core machine at a
# load of 5: the default (1.5e6) 4.9 ms a step, 100 dimensions, a window of 8 and 10 noise words (9.0e6)
# 14.6 ms, the widest choices (300, 10, 20: 6.5e7) 145 ms, too slow to watch learn in a class.
MAX_STEP_MACS = 2e7
DIMS = (10, 25, 50, 100, 200, 300)
WINDOWS = (1, 2, 3, 5, 8, 10)
NEGATIVES = (1, 2, 5, 10, 20)
DEFAULT = Word2VecConfig()  # 50 dimensions, a window of 5, 5 noise words, 256 centres a step


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
        self.run = Word2Vec(prose_words(), cfg)

    @property
    def steps_taken(self) -> int:
        return self.run.steps_done

    def steps_left(self, until: int) -> int:
        return 0 if self.run.diverged_at is not None else max(0, until - self.run.steps_done)

    def advance(self, until: int) -> bool:
        if self.finished(until):
            return False
        self.run.step(1)
        return True

    def finished(self, until: int) -> bool:
        return self.run.steps_done >= until or self.run.diverged_at is not None

    def step(self) -> None:
        """One training step, pausing first."""
        self.playing = False
        with self.hold():
            self.run.step(1)

    def reset(self, cfg: Word2VecConfig | None = None) -> None:
        """Fresh vectors from the seed (with new settings, when given); the history cleared. Raises
        ValueError, keeping the run as it was, when the settings are over the budget."""
        cfg = cfg or self.cfg
        check_config(cfg)
        self.playing = False
        run = Word2Vec(prose_words(), cfg)  # built outside the lock: about a second for the vocabulary
        with self.hold():
            self.cfg, self.run = cfg, run

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
