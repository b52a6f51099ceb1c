"""A word's vector in context set against the same model's vectors of held-out prose: which held-out
words, in which sentences, a contextual vector lies nearest (nearest words in context), and how alike
one word's vectors stay across the contexts it occurs in, layer by layer.

`self_similarity` is Ethayarajh's (2019, "How Contextual are Contextualized Word Representations?",
sections 3.2 and 4): for each word, the mean cosine between its vectors in different contexts, less
the mean cosine between the vectors of two words drawn at random (the layer's anisotropy: vectors
that all point one way are alike whatever their word). A static embedding scores 1 less its
anisotropy; a layer whose vectors depend on their context scores less.
"""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .contextual import check_model_of, layer_labels, layer_vectors
from .tasks.masked_lm import SPECIALS, UNK, ProseWordsTask

BANK_WINDOWS = 256  # held-out windows read: 256 x 32 = 8,192 words, 3 layers x 64 numbers = 6.3 MB a model
CONTEXT_WORDS = 4  # the words either side of a neighbour its context shows
SIMILARITY_WORDS = 200  # self_similarity: the most frequent known words, each with at least two occurrences
PER_WORD = 20  # self_similarity: each word's first occurrences compared, pairwise
RANDOM_PAIRS = 4000  # self_similarity: pairs of different words drawn for the anisotropy baseline
PAIRS_SEED = 0


@dataclass(frozen=True)
class ContextBank:
    """Every word of `windows` held-out windows as the model reads them, at every layer."""

    vectors: Tensor  # [L+1, N, d]: N = W x T words, unit length (cosines are dot products)
    ids: Tensor  # [N] the words
    windows: Tensor  # [W, T] the windows, for a neighbour's context
    labels: tuple[str, ...]  # "embedding", "after block 0", ... (layer_labels)


def context_bank(model: nn.Module, task: ProseWordsTask, windows: int = BANK_WINDOWS) -> ContextBank:
    """The model's vectors of `windows` held-out windows spread over the prose's held-out 10% (the
    same windows for every model and seed)."""
    check_model_of(model, task, ("masked_lm", "word_lm"))
    ids = task.windows(task.held_out_starts(windows))[:, :-1]  # [W, T]
    vectors = layer_vectors(model, ids)  # [L+1, W, T, d]
    flat = F.normalize(vectors.flatten(1, 2), dim=-1)  # [L+1, N, d]
    return ContextBank(flat, ids.flatten(), ids, layer_labels(model))


@dataclass(frozen=True)
class Neighbour:
    word: str
    context: str  # the words around it, the word itself in [brackets]
    cosine: float


def nearest(bank: ContextBank, task: ProseWordsTask, vector: Tensor, layer: int, k: int = 5) -> list[Neighbour]:
    """The k held-out words whose vector at `layer` is nearest `vector` [d] by cosine, most alike
    first, each with its context. <unk> positions are left out: their vector is no word's."""
    scores = bank.vectors[layer] @ F.normalize(vector, dim=0)  # [N]
    scores = scores.masked_fill(bank.ids == UNK, -2.0)
    best = scores.topk(k)
    T = bank.windows.shape[1]
    found = []
    for at, cosine in zip(best.indices.tolist(), best.values.tolist()):
        window, t = divmod(at, T)
        row = bank.windows[window].tolist()
        left = [task.vocab[i] for i in row[max(0, t - CONTEXT_WORDS):t]]
        right = [task.vocab[i] for i in row[t + 1:t + 1 + CONTEXT_WORDS]]
        word = task.vocab[row[t]]
        found.append(Neighbour(word, " ".join([*left, f"[{word}]", *right]), cosine))
    return found


def self_similarity(bank: ContextBank) -> pd.DataFrame:
    """Per layer: `same`, the mean over SIMILARITY_WORDS frequent words of the mean cosine between
    the word's vectors in different contexts (its first PER_WORD occurrences, every pair); `random`,
    the mean cosine of RANDOM_PAIRS pairs of different words' vectors; `adjusted` = same - random."""
    counts = torch.bincount(bank.ids, minlength=int(bank.ids.max()) + 1)  # [V]
    counts[: len(SPECIALS)] = 0
    words = [w for w in counts.argsort(descending=True).tolist() if counts[w] >= 2][:SIMILARITY_WORDS]
    generator = torch.Generator().manual_seed(PAIRS_SEED)
    known = (bank.ids >= len(SPECIALS)).nonzero().flatten()  # [K]
    a = known[torch.randint(len(known), (RANDOM_PAIRS,), generator=generator)]  # [P]
    b = known[torch.randint(len(known), (RANDOM_PAIRS,), generator=generator)]  # [P]
    a, b = a[bank.ids[a] != bank.ids[b]], b[bank.ids[a] != bank.ids[b]]
    rows = []
    for layer, label in enumerate(bank.labels):
        vectors = bank.vectors[layer]  # [N, d]
        same = []
        for word in words:
            v = vectors[(bank.ids == word).nonzero().flatten()[:PER_WORD]]  # [n, d]
            n = len(v)
            same.append(((v @ v.T).sum() - (v * v).sum()) / (n * (n - 1)))  # the mean off the diagonal
        alike = float(torch.stack(same).mean())
        random = float((vectors[a] * vectors[b]).sum(-1).mean())
        rows.append({"layer": label, "same": alike, "random": random, "adjusted": alike - random})
    return pd.DataFrame(rows)
