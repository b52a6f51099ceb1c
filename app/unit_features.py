"""Simple features of an input sequence, and the hidden units that follow them most closely.

Karpathy, Johnson & Fei-Fei (2015) found char-RNN units that track quotes, brackets and the
position in a line by correlating each unit with such features. These are the same idea on one
sample: Pearson's r between every unit's h_t and every feature, over the sample's time steps.
No streamlit here.
"""
from __future__ import annotations

import string

import numpy as np
import pandas as pd
import torch

OPENING, CLOSING = "([{", ")]}"
NEGATIONS = {"not", "no", "never", "n't", "nothing", "nobody", "hardly"}
QUOTES = "\"'"


def char_features(chars: list[str]) -> dict[str, np.ndarray]:
    """Per character: its class, and the state a reader has to carry (bracket depth, inside a
    quote, position in the word and the line)."""
    depth, quoted, in_word, in_line = 0, False, 0, 0
    rows = []
    for ch in chars:
        if ch in CLOSING:
            depth = max(0, depth - 1)
        if ch in QUOTES:
            quoted = not quoted
        in_word = in_word + 1 if ch.isalnum() or ch == "_" else 0
        rows.append((ch == " ", ch.isalpha(), ch.isupper(), ch.isdigit(), ch in string.punctuation,
                     ch == "\n", quoted, depth, in_word, in_line))
        if ch in OPENING:
            depth += 1
        in_line = 0 if ch == "\n" else in_line + 1
    names = ("is a space", "is a letter", "is upper case", "is a digit", "is punctuation", "is a newline",
             "inside quotes", "bracket depth", "position in word", "position in line")
    return dict(zip(names, np.array(rows, dtype=float).T.reshape(len(names), len(chars))))


def word_features(words: list[str]) -> dict[str, np.ndarray]:
    """Per word: padding, negations and how many words since the last one."""
    since, rows = len(words), []
    for w in words:
        since = 0 if w.lower() in NEGATIONS else since + 1
        rows.append((w == "<pad>", w.lower() in NEGATIONS, since))
    names = ("is padding", "is a negation", "words since a negation")
    return dict(zip(names, np.array(rows, dtype=float).T.reshape(len(names), len(words))))


def symbol_features(symbols: list[str]) -> dict[str, np.ndarray]:
    """One indicator per symbol that occurs (recall's cue and digits, reversal's digits)."""
    seen = list(dict.fromkeys(symbols))
    return {f"is {s!r}": np.array([s == x for x in symbols], dtype=float) for s in seen}


def value_features(task: str, x: torch.Tensor) -> dict[str, np.ndarray]:
    """Each input channel, its running sum, and for the adding problem the sum the network must
    compute: the marked values read so far."""
    values = x.double().numpy().reshape(len(x), -1)  # [T, D]
    if task == "adding":  # channel 0 the value, channel 1 the marker
        return {"value": values[:, 0], "marker": values[:, 1],
                "sum of marked values so far": np.cumsum(values[:, 0] * values[:, 1])}
    if task == "parity":
        return {"bit": values[:, 0], "parity so far": np.cumsum(values[:, 0]) % 2}
    names = ["input"] if values.shape[1] == 1 else [f"input {k}" for k in range(values.shape[1])]
    features = {name: values[:, k] for k, name in enumerate(names)}
    features.update({f"running sum of {name}": np.cumsum(values[:, k]) for k, name in enumerate(names)})
    return features


def features_of(task: str, symbols: list[str] | None, x: torch.Tensor) -> dict[str, np.ndarray]:
    """The features that make sense for this input, each [T], and the position t."""
    if symbols is None:
        features = value_features(task, x)
    elif all(len(s) == 1 for s in symbols):
        features = char_features(symbols) if task == "charlm" else symbol_features(symbols)
    elif task == "sentiment":
        features = word_features(symbols)
    else:
        features = symbol_features(symbols)
    T = len(x)
    return {**features, "position t": np.arange(T, dtype=float)}


def correlated_units(hidden: torch.Tensor, features: dict[str, np.ndarray], top: int = 10, per_feature: int = 3
                     ) -> pd.DataFrame:
    """The (feature, unit) pairs with the largest |r| between h_t of the unit and the feature over
    t, best first: at most `per_feature` units per feature (so one feature many units follow does
    not fill the list), `top` in all. Features or units that never change have no r.

    hidden   [T, H]: one layer and direction of one sample
    """
    h = hidden.double().numpy()  # [T, H]
    h_centred = h - h.mean(axis=0)  # [T, H]
    h_scale = np.sqrt((h_centred**2).sum(axis=0))  # [H]
    rows = []
    for name, values in features.items():
        v = values - values.mean()  # [T]
        v_scale = np.sqrt((v**2).sum())
        if v_scale == 0:
            continue
        with np.errstate(divide="ignore", invalid="ignore"):
            r = (v @ h_centred) / (v_scale * h_scale)  # [H]
        for unit in np.flatnonzero(np.isfinite(r)):
            rows.append((name, int(unit), float(r[unit])))
    table = pd.DataFrame(rows, columns=["feature", "unit", "r"])
    order = table["r"].abs().sort_values(ascending=False, kind="stable").index
    best = table.loc[order].groupby("feature", sort=False).head(per_feature)
    return best.head(top).reset_index(drop=True)
