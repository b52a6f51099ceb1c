"""What a page reads out of word vectors: nearest neighbours, analogies, a word's place on the axis
between two words, a 2-D projection, and the TensorFlow Embedding Projector's TSV files.

Every function takes the vectors [V, d] and the vocabulary (a tuple of V words, row i the vector of
word i), not a model: word2vec's input vectors (engine.word2vec.Word2Vec.vectors()) and any token
model's own embedding (`token_embedding`: the sentiment LSTM's, a checkpoint's) read out the same
way. Similarity is cosine, measured in the full space, never in a projection.
"""
from __future__ import annotations

import difflib
import math
from collections.abc import Sequence
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .config import check_choice, check_int
from .rng import stream

HOW = ("frequent", "random")  # how sample_words picks


def ids_of(vocab: Sequence[str], words: Sequence[str]) -> Tensor:
    """[n] the rows of `words`; a word not in the vocabulary raises ValueError naming it and the
    nearest spellings that are."""
    index = {w: i for i, w in enumerate(vocab)}
    missing = [w for w in words if w not in index]
    if missing:
        word = missing[0]
        close = difflib.get_close_matches(word.lower(), index, n=3)
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        raise ValueError(f"{word!r} is not in the vocabulary of {len(index):,} words{hint}")
    return torch.tensor([index[w] for w in words], dtype=torch.int64)  # [n]


def unit(vectors: Tensor) -> Tensor:
    """[V, d] every row scaled to length 1 (a zero row, e.g. a padding token's, stays zero)."""
    return F.normalize(vectors.float(), dim=1)  # [V, d]


def ranked(similarity: Tensor, vocab: Sequence[str], k: int, skip: Tensor) -> list[tuple[str, float]]:
    """The k words of highest similarity [V], leaving out the rows in `skip`."""
    similarity = similarity.clone()  # [V]
    similarity[skip] = -math.inf
    k = min(k, len(vocab) - len(set(skip.tolist())))
    top = similarity.topk(k)
    return [(vocab[i], s) for i, s in zip(top.indices.tolist(), top.values.tolist())]


def nearest(vectors: Tensor, vocab: Sequence[str], word: str, k: int = 10) -> list[tuple[str, float]]:
    """The k words whose vectors have the highest cosine with `word`'s, the word itself left out:
    [(word, cosine)], highest first."""
    check_int("k", k, 1, 10_000)
    row = ids_of(vocab, [word])  # [1]
    u = unit(vectors)  # [V, d]
    return ranked(u @ u[row[0]], vocab, k, row)


def closer_share(vectors: Tensor, vocab: Sequence[str], a: str, b: str) -> float:
    """The share of the other words (all but a and b) whose cosine with a is higher than b's: 0
    when b is a's nearest neighbour, about 0.5 for a word picked at random."""
    rows = ids_of(vocab, [a, b])  # [2]
    u = unit(vectors)  # [V, d]
    similarity = u @ u[rows[0]]  # [V]
    others = torch.ones(len(vocab), dtype=torch.bool)
    others[rows] = False
    return (similarity[others] > similarity[rows[1]]).float().mean().item()


def analogy(vectors: Tensor, vocab: Sequence[str], a: str, b: str, c: str, k: int = 5) -> list[tuple[str, float]]:
    """a - b + c (king - man + woman): the k words of highest cosine with unit(a) - unit(b) + unit(c),
    the three query words left out, as Mikolov et al. score analogies (3CosAdd: Levy and Goldberg
    2014's name). [(word, cosine with the target)], highest first."""
    check_int("k", k, 1, 10_000)
    rows = ids_of(vocab, [a, b, c])  # [3]
    u = unit(vectors)  # [V, d]
    target = F.normalize(u[rows[0]] - u[rows[1]] + u[rows[2]], dim=0)  # [d]
    return ranked(u @ target, vocab, k, rows)


def axis(vectors: Tensor, vocab: Sequence[str], a: str, b: str, words: Sequence[str]) -> Tensor:
    """[n] where each word lies on the axis from a to b (whatlies' habit): its unit vector projected
    onto unit(b) - unit(a), scaled so a is at 0 and b at 1. Unit vectors, so a frequent word's
    longer vector does not push it along the axis."""
    ends = ids_of(vocab, [a, b])  # [2]
    if ends[0] == ends[1]:
        raise ValueError(f"an axis needs two different words; both ends are {a!r}")
    u = unit(vectors)  # [V, d]
    start, direction = u[ends[0]], u[ends[1]] - u[ends[0]]  # [d], [d]
    return (u[ids_of(vocab, words)] - start) @ direction / direction.dot(direction)  # [n]


def cosines(vectors: Tensor, vocab: Sequence[str], words: Sequence[str]) -> Tensor:
    """[n, n] the cosine of every pair of the words (one-hot vectors would give the identity)."""
    u = unit(vectors)[ids_of(vocab, words)]  # [n, d]
    return u @ u.T  # [n, n]


class Projection(NamedTuple):
    coords: Tensor  # [n, 2] each row's place on the first two principal components
    explained: Tensor  # [2] the share of the variance each component holds


def pca(points: Tensor) -> Projection:
    """The rows of points [n, d] on their first two principal components: the top two eigenvectors
    of the centred matrix's d x d scatter matrix (in float64; the same as an SVD of the centred
    matrix, and 5-15x faster for thousands of points: benchmarks/word2vec_speed.py). Each
    component's sign is fixed (scikit-learn's svd_flip rule): the point farthest along it lies on
    its positive side, so the picture does not flip between two runs over the same points."""
    if points.dim() != 2 or len(points) < 2 or points.shape[1] < 2:
        raise ValueError(f"a 2-D projection needs at least 2 points of at least 2 dimensions, "
                         f"got {tuple(points.shape)}")
    centred = points.double() - points.double().mean(0)  # [n, d]
    variance, axes = torch.linalg.eigh(centred.T @ centred)  # [d] ascending, [d, d] eigenvectors in columns
    coords = centred @ axes[:, [-1, -2]]  # [n, 2]: the largest component first
    farthest = coords.abs().argmax(0)  # [2]
    coords = coords * coords[farthest, torch.arange(2)].sign()  # [n, 2]
    explained = variance[[-1, -2]].clamp(min=0) / variance.clamp(min=0).sum().clamp(min=1e-300)  # [2]
    return Projection(coords.float(), explained.float())


def sample_words(counts: Tensor, n: int, how: str = "frequent", seed: int = 0) -> Tensor:
    """[n] rows to show, never "the first n": the n of highest count ("frequent", ties to the lower
    row), or n drawn uniformly without replacement ("random", from the seed's "probe" stream: the
    words a page opens up). Rows of count 0 (a padding
    or unknown token a page leaves out) are never picked. Sorted ascending."""
    check_choice("how", how, HOW)
    eligible = (counts > 0).nonzero().squeeze(1)  # [E]
    check_int("n", n, 1, max(len(eligible), 1))
    if how == "frequent":
        # a stable sort by descending count: among equal counts the lower row first
        order = torch.sort(counts[eligible], descending=True, stable=True).indices[:n]  # [n]
        return eligible[order].sort().values
    picked = torch.randperm(len(eligible), generator=stream(seed, "probe"))[:n]  # [n]
    return eligible[picked].sort().values


def projector_tsv(vectors: Tensor, vocab: Sequence[str]) -> tuple[str, str]:
    """(vectors.tsv, metadata.tsv) as the TensorFlow Embedding Projector loads them: one row of
    tab-separated values a word, and its label a line (one column, so no header row). Values in
    9 significant digits, which give every float32 back exactly; a tab or line break inside a label
    (it would split the row) becomes a space."""
    if len(vectors) != len(vocab):
        raise ValueError(f"{len(vectors)} vectors for {len(vocab)} words; give one vector a word")
    rows = "".join("\t".join(f"{x:.9g}" for x in row) + "\n" for row in vectors.float().tolist())
    labels = "".join(" ".join(str(w).split()) + "\n" for w in vocab)
    return rows, labels


def read_projector_tsv(vectors_tsv: str, metadata_tsv: str) -> tuple[Tensor, tuple[str, ...]]:
    """The vectors [V, d] and vocabulary of a projector_tsv pair (a one-column metadata file)."""
    vectors = torch.tensor([[float(x) for x in line.split("\t")] for line in vectors_tsv.splitlines()])  # [V, d]
    vocab = tuple(metadata_tsv.split("\n")[:-1] if metadata_tsv.endswith("\n") else metadata_tsv.split("\n"))
    if len(vectors) != len(vocab):
        raise ValueError(f"{len(vectors)} vector rows but {len(vocab)} labels")
    return vectors, vocab


def token_embedding(model: nn.Module) -> tuple[Tensor, tuple[str, ...]]:
    """A token model's own input vectors [V, d] (a copy) and its vocabulary: the sentiment LSTM's
    words, a translation model's source symbols, a checkpoint's. ValueError for a model that reads
    values rather than tokens, or has no vocabulary to name the rows."""
    table = getattr(model, "embedding", None)
    if table is None:  # an encoder-decoder: the source's symbols are what it reads
        table = getattr(model, "source_embedding", None)
    if not isinstance(table, nn.Embedding):
        raise ValueError(f"this {type(model).__name__} reads values, not tokens: it has no embedding to show")
    vocab = getattr(model, "vocab", None)
    if vocab is None or len(vocab) != table.num_embeddings:
        raise ValueError("this model's embedding has no vocabulary naming its rows; build it from a task with "
                         "one, or load a checkpoint that holds it")
    return table.weight.detach().clone(), tuple(vocab)
