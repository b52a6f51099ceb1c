"""Build the shipped word vectors: `python -m pretrained.word_vectors`.

word2vec (skip-gram with negative sampling, engine/word2vec.py) trained on unlabelled text: the
shipped Austen prose, then the text of the training sentences of the `sentences` review corpus
(their labels never read, the held-out rows never read at all: 10 training sentences have the very
words of a held-out one), REPEATS times over so that a
word used once in them reaches min_count. Writes pretrained/vectors/<NAME>.safetensors (the vectors
and their words: engine.word_vectors) and <NAME>.json, its card: what it read, its settings, how
far it trained, what its space shows, and when, on what CPU and kernel path, in how long. The
Pretrained embeddings page starts a sentiment LSTM's embedding from it.

In their own folder: pretrained/*.json are the model checkpoints' cards.
"""
from __future__ import annotations

import datetime
import io
import json
import os
import platform
import sys
import time
from pathlib import Path

import pandas as pd
import torch

from engine import datasets
from engine.embeddings import closer_share, nearest
from engine.prose import RELATED, prose_words
from engine.tasks.text import words
from engine.word2vec import Word2Vec, Word2VecConfig
from engine.word_vectors import WordVectors, to_bytes
from pretrained import kernels
from pretrained.build import cpu_model, sha256

FOLDER = Path(__file__).resolve().parent / "vectors"
NAME = "word2vec-sentences"
CONFIG = Word2VecConfig(dim=50, window=5, negatives=5, min_count=3, seed=0)
STEPS = 20_000
REPEATS = 3  # passes of the training sentences' text per pass of the prose
SHOWN = ("great", "terrible", "phone", "food")  # words whose neighbours the card lists


def training_sentences() -> list[str]:
    rows = pd.read_csv(io.BytesIO(datasets.corpus_bytes("sentences")), usecols=["review", "split"])
    return rows.review[rows.split == "train"].tolist()


def unlabelled_text() -> list[str]:
    """The words word2vec reads, in order: the prose, then the training sentences REPEATS times."""
    sentences = [word for sentence in training_sentences() for word in words(sentence)]
    return list(prose_words()) + sentences * REPEATS


def build() -> tuple[bytes, dict]:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        text = unlabelled_text()
        model = Word2Vec(text, CONFIG)
        start = time.perf_counter()
        model.step(STEPS)
        seconds = time.perf_counter() - start
    finally:
        torch.set_num_threads(threads)
    if model.diverged_at is not None:
        raise RuntimeError(f"word2vec diverged at step {model.diverged_at}; change its settings")
    vectors = model.vectors()  # [V, d]
    about = {"name": NAME, "corpus": f"engine.datasets' corpus prose (sha256 {datasets.CORPORA['prose'].sha256}), "
             "then the training sentences of its corpus sentences (sha256 "
             f"{datasets.CORPORA['sentences'].sha256}) {REPEATS} times over, labels unread",
             "config": CONFIG.to_dict(), "steps": STEPS}
    data = to_bytes(WordVectors(model.words, vectors, about))
    card = {
        **about,
        "file": {"file": f"{NAME}.safetensors", "bytes": len(data), "sha256": sha256(data)},
        "text": {"words": len(text), "prose_words": len(prose_words()), "vocabulary": len(model.words),
                 "epochs": round(model.epochs, 3)},
        "training": {"seconds": round(seconds, 1), "torch_threads": 1, "final_loss": round(model.last.loss, 4)},
        "space": {"related_closer_share": {f"{a}-{b}": round(closer_share(vectors, model.words, a, b), 4)
                                           for a, b in RELATED},
                  "nearest": {word: [w for w, _ in nearest(vectors, model.words, word, 6)] for word in SHOWN}},
        "built": {"date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
                  "torch": torch.__version__, "python": platform.python_version(),
                  "kernels": kernels.PATHS[kernels.chosen()], "cpu": cpu_model(),
                  "command": "python -m pretrained.word_vectors"},
    }
    return data, card


def main() -> None:
    if not kernels.pinned():  # the chosen path's kernels, set before torch computes: run again pinned
        kernels.pin()
        os.execv(sys.executable, [sys.executable, "-m", "pretrained.word_vectors", *sys.argv[1:]])
    data, card = build()
    FOLDER.mkdir(exist_ok=True)
    for path, content in ((FOLDER / f"{NAME}.safetensors", data),
                          (FOLDER / f"{NAME}.json", (json.dumps(card, indent=2) + "\n").encode())):
        partial = path.with_name(path.name + ".partial")
        partial.write_bytes(content)
        partial.replace(path)
    print(f"{NAME}: {card['training']['seconds']:.0f} s, {len(data):,} bytes, {card['text']['vocabulary']:,} words")


if __name__ == "__main__":
    main()
