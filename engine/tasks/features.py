"""Simple features of one input sequence, each [T]: what a reader of the sequence would count.

Karpathy, Johnson & Fei-Fei (2015) found char-RNN units that track quotes, brackets and the
position in a line by correlating each unit with such features (engine.units.correlated_units).
A task picks the features that make sense for its inputs (Task.unit_features).
"""
from __future__ import annotations

import string

import numpy as np
import torch

OPENING, CLOSING = "([{", ")]}"
NEGATIONS = {"not", "no", "never", "n't", "nothing", "nobody", "hardly"}
QUOTES = "\"'"


def char_features(chars: list[str]) -> dict[str, np.ndarray]:
    """Per character: its class, and the state a reader has to carry (bracket depth, inside a
    quote, position in the word and the line, and the line's indentation: the spaces that open
    it, as far as they have been read)."""
    depth, quoted, in_word, in_line, indent, leading = 0, False, 0, 0, 0, True
    rows = []
    for ch in chars:
        if ch in CLOSING:
            depth = max(0, depth - 1)
        if ch in QUOTES:
            quoted = not quoted
        in_word = in_word + 1 if ch.isalnum() or ch == "_" else 0
        leading = leading and ch == " "
        indent += leading
        rows.append((ch == " ", ch.isalpha(), ch.isupper(), ch.isdigit(), ch in string.punctuation,
                     ch == "\n", quoted, depth, in_word, in_line, indent))
        if ch in OPENING:
            depth += 1
        in_line = 0 if ch == "\n" else in_line + 1
        if ch == "\n":
            indent, leading = 0, True
    names = ("is a space", "is a letter", "is upper case", "is a digit", "is punctuation", "is a newline",
             "inside quotes", "bracket depth", "position in word", "position in line", "indentation")
    return dict(zip(names, np.array(rows, dtype=float).T.reshape(len(names), len(chars))))


def word_features(words: list[str], pad: str | None = None) -> dict[str, np.ndarray]:
    """Per word: padding (the symbol `pad`), negations and how many words since the last one."""
    since, rows = len(words), []
    for w in words:
        since = 0 if w.lower() in NEGATIONS else since + 1
        rows.append((w == pad, w.lower() in NEGATIONS, since))
    names = ("is padding", "is a negation", "words since a negation")
    return dict(zip(names, np.array(rows, dtype=float).T.reshape(len(names), len(words))))


def symbol_features(symbols: list[str]) -> dict[str, np.ndarray]:
    """One indicator per symbol that occurs (recall's cue and distractors, reversal's digits)."""
    seen = list(dict.fromkeys(symbols))
    return {f"is {s!r}": np.array([s == x for x in symbols], dtype=float) for s in seen}


def channel_values(x: torch.Tensor) -> np.ndarray:
    """One sample's value inputs [T] or [T, D] as float64 [T, D]."""
    return x.double().numpy().reshape(len(x), -1)  # [T, D]


def value_features(x: torch.Tensor) -> dict[str, np.ndarray]:
    """Each input channel of one sample x [T, D], and its running sum."""
    values = channel_values(x)  # [T, D]
    names = ["input"] if values.shape[1] == 1 else [f"input {k}" for k in range(values.shape[1])]
    features = {name: values[:, k] for k, name in enumerate(names)}
    features.update({f"running sum of {name}": np.cumsum(values[:, k]) for k, name in enumerate(names)})
    return features
