"""A t-SNE map of word vectors (van der Maaten and Hinton 2008), through openTSNE (Poličar et al.
2024): the second 2-D projection the Embeddings page offers beside PCA. PCA keeps the two directions
of largest variance, so distant groups stay distant but neighbours crowd; t-SNE keeps each word's
nearest neighbours near and gives up global distances (read the gaps between groups with care).

`tsne(points)` starts from the points' own PCA (engine.embeddings.pca, sign fixed) scaled to a
standard deviation of 1e-4 (openTSNE's recommended initialisation: Kobak and Berens 2019), so the
maps of one set of words at successive training steps look alike, and every random choice comes
from the seed on one thread: the same points give the same map, to the last bit.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from openTSNE import TSNEEmbedding, affinity, initialization
from torch import Tensor

from .config import check_choice, check_float, check_int
from .embeddings import pca

METRICS = ("cosine", "euclidean")
GRADIENTS = ("bh", "fft")
MIN_POINTS = 5  # a perplexity of at least 1 needs 3 neighbours a point


@dataclass(frozen=True)
class TSNEConfig:
    """perplexity  about how many neighbours each word keeps near: openTSNE's and the literature's 30
                (Wattenberg et al. 2016: 5-50 reads well); cut to (n - 1) / 3 for fewer points, as
                a point needs 3 x perplexity neighbours
    metric      "cosine": nearness as the page's neighbour table measures it (word vectors' lengths
                follow frequency, not meaning)
    early_iter  iterations with the attraction exaggerated (`exaggeration`), which lets groups form
    iter        iterations after it: openTSNE's defaults, 250 and 500
    gradient    "bh" (Barnes-Hut) or "fft" (the interpolation of Linderman et al. 2019). On this
                2-core machine FFT cost 12-25 ms an iteration whatever the count (numpy's FFT on a
                grid of at least 50 intervals a side), Barnes-Hut 1-4 ms for the few hundred words a
                2-second map allows, so "bh" (benchmarks/README section 19); FFT overtakes it only
                at thousands of words, which take 20 s either way
    seed        the nearest-neighbour index's random choices
    """

    perplexity: float = 30.0
    metric: str = "cosine"
    early_iter: int = 250
    exaggeration: float = 12.0
    iter: int = 500
    gradient: str = "bh"
    seed: int = 0

    def __post_init__(self) -> None:
        check_float("perplexity", self.perplexity, 1.0, 100.0)
        check_choice("metric", self.metric, METRICS)
        check_int("early_iter", self.early_iter, 0, 5000)
        check_float("exaggeration", self.exaggeration, 1.0, 100.0)
        check_int("iter", self.iter, 1, 5000)
        check_choice("gradient", self.gradient, GRADIENTS)
        check_int("seed", self.seed, 0, 2**31 - 1)


DEFAULT = TSNEConfig()


def perplexity_for(n: int, cfg: TSNEConfig = DEFAULT) -> float:
    """The perplexity used for n points: cfg.perplexity, or (n - 1) / 3 when that is less."""
    return min(cfg.perplexity, (n - 1) / 3)


def initial(points: Tensor) -> np.ndarray:
    """[n, 2] the start of the map: the points' PCA (its sign fixed), scaled to a standard
    deviation of 1e-4 along the first component, as openTSNE's own "pca" initialisation does."""
    return initialization.rescale(pca(points).coords.double().numpy())


def tsne(points: Tensor, cfg: TSNEConfig = DEFAULT) -> Tensor:
    """[n, 2] the t-SNE map of points [n, d], on one thread (n_jobs=1: a class shares the CPU).
    ValueError for fewer than MIN_POINTS points."""
    if points.dim() != 2 or len(points) < MIN_POINTS or points.shape[1] < 2:
        raise ValueError(f"a t-SNE map needs at least {MIN_POINTS} points of at least 2 dimensions, "
                         f"got {tuple(points.shape)}")
    data = points.double().numpy()  # [n, d]
    affinities = affinity.PerplexityBasedNN(
        data, perplexity=perplexity_for(len(points), cfg), metric=cfg.metric, n_jobs=1, random_state=cfg.seed,
        verbose=False)
    embedding = TSNEEmbedding(initial(points), affinities, negative_gradient_method=cfg.gradient, n_jobs=1,
                              random_state=cfg.seed, verbose=False)
    if cfg.early_iter:
        embedding = embedding.optimize(cfg.early_iter, exaggeration=cfg.exaggeration)
    embedding = embedding.optimize(cfg.iter)
    return torch.from_numpy(np.asarray(embedding, dtype=np.float64).copy()).float()  # [n, 2]
