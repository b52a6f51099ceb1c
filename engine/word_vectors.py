"""Word vectors learnt elsewhere (word2vec on unlabelled text) as the start of a model's embedding:
"train embedding as part of RNN or use pre-trained one" ("Recurrent Architectures", section NLP).

`start_embedding` copies each vocabulary word's vector into the model's embedding row for it; a
word the vectors do not hold, and the model's own tokens (<pad>, <unk>), keep their random start.
The copied vectors are scaled to the norm of nn.Embedding's start, N(0, 1) in every dimension:
word2vec's vectors are a few times shorter, and a network fed shorter inputs learns more slowly
whatever they say, so only their directions differ between a random and a pretrained start.
Whether the embedding then trains (fine-tuned) or not (frozen) is the Trainer's freeze.

Vectors are kept as one .safetensors file: the [V, d] tensor, and in its header the words (in the
tensor's row order) and what made them. Never pickle.
"""
from __future__ import annotations

import json
import math
from typing import NamedTuple

import torch
from safetensors.torch import load as load_tensors
from safetensors.torch import save as save_tensors
from torch import Tensor, nn

STARTS = ("random", "frozen", "fine-tuned")  # the embedding's start, and whether it trains after


class WordVectors(NamedTuple):
    words: tuple[str, ...]
    vectors: Tensor  # [V, d] one row a word
    about: dict  # what made them: the corpus, the settings, the steps


class Covered(NamedTuple):
    found: int  # of the vocabulary's words, those given a vector
    words: int  # the vocabulary's words (its own tokens left out)
    missing: tuple[str, ...]  # the words without one, in vocabulary order (most frequent first)


def to_bytes(found: WordVectors) -> bytes:
    header = {"words": json.dumps(found.words), "about": json.dumps(found.about)}
    return save_tensors({"vectors": found.vectors.contiguous()}, metadata=header)


def from_bytes(data: bytes) -> WordVectors:
    """The vectors a to_bytes file holds; ValueError for one that is not such a file."""
    try:
        tensors = load_tensors(data)
        # the header's metadata, which load() does not return: 8 bytes of its length, then its JSON
        header = json.loads(data[8: 8 + int.from_bytes(data[:8], "little")]).get("__metadata__", {})
        words, about = tuple(json.loads(header["words"])), json.loads(header["about"])
    except Exception as err:  # safetensors raises its own types; anything unreadable is one answer
        raise ValueError(f"not a word-vector file ({type(err).__name__}); give one pretrained.word_vectors wrote"
                         ) from None
    vectors = tensors.get("vectors")
    if vectors is None or vectors.dim() != 2 or len(words) != vectors.shape[0]:
        raise ValueError("the file's vectors do not match its words; rebuild it")
    return WordVectors(words, vectors, about)


def scaled(vectors: Tensor) -> Tensor:
    """[V, d] each row at norm sqrt(d), the expected norm of nn.Embedding's N(0, 1) start (a zero
    row stays zero)."""
    norms = vectors.norm(dim=1, keepdim=True)  # [V, 1]
    return vectors * (math.sqrt(vectors.shape[1]) / norms.clamp_min(1e-12))  # [V, d]


def is_token(symbol: str) -> bool:
    """A vocabulary's own tokens (<pad>, <unk>, <s>): never words."""
    return symbol.startswith("<") and symbol.endswith(">")


@torch.no_grad()
def start_embedding(embedding: nn.Embedding, vocab: tuple[str, ...], found: WordVectors) -> Covered:
    """Copy into `embedding` [len(vocab), d] the scaled vector of every word of `vocab` that `found`
    holds; ValueError, copying nothing, when the dimensions differ."""
    d = found.vectors.shape[1]
    if embedding.embedding_dim != d:
        raise ValueError(f"the vectors have {d} dimensions and the embedding {embedding.embedding_dim}; "
                         f"build the model with embedding_dim={d}")
    index = {word: i for i, word in enumerate(found.words)}
    words = [(row, word) for row, word in enumerate(vocab) if not is_token(word)]
    rows = [(row, index[word]) for row, word in words if word in index]
    if rows:
        target, source = (torch.tensor(side) for side in zip(*rows))  # [S] each
        embedding.weight[target] = scaled(found.vectors[source])  # [S, d]
    missing = tuple(word for _, word in words if word not in index)
    return Covered(len(rows), len(words), missing)
