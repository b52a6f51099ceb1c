"""Input features are what a reader of the sequence would count, and the correlations are
Pearson's r as numpy computes it. (Moved here from tests/app/test_unit_features.py with the code.)"""
import numpy as np
import pytest
import torch

import engine
from engine.tasks.features import char_features, word_features
from engine.units import correlated_units


def test_char_features_count_brackets_quotes_and_positions():
    features = char_features(list("f(a(b))\nxy"))
    # an opening bracket counts from the next character, a closing one from itself
    assert features["bracket depth"].tolist() == [0, 0, 1, 1, 2, 1, 0, 0, 0, 0]
    assert features["position in line"].tolist() == [0, 1, 2, 3, 4, 5, 6, 7, 0, 1]
    assert features["position in word"].tolist() == [1, 0, 1, 0, 1, 0, 0, 0, 1, 2]
    assert features["is a newline"].tolist() == [0] * 7 + [1, 0, 0]
    # a quote mark toggles: the opening one counts as inside, the closing one as outside
    assert char_features(list('a "b" c'))["inside quotes"].tolist() == [0, 0, 1, 1, 0, 0, 0]
    # the spaces that open a line, counted as they are read, held to its end (its newline included)
    assert char_features(list("a\n  b c\n x"))["indentation"].tolist() == [0, 0, 1, 2, 2, 2, 2, 2, 1, 1]


def test_word_features_count_words_since_a_negation():
    features = word_features(["<pad>", "not", "good", "at", "all"], pad="<pad>")
    assert features["is padding"].tolist() == [1, 0, 0, 0, 0]
    assert features["words since a negation"].tolist()[1:] == [0, 1, 2, 3]


def test_adding_features_include_the_running_answer():
    task = engine.make_task("adding", seq_len=4)
    x = torch.tensor([[0.5, 0.0], [0.25, 1.0], [0.75, 0.0], [0.125, 1.0]])  # [T, 2]: value, marker
    features = task.unit_features(task.symbols_of(x), x)
    assert features["sum of marked values so far"].tolist() == [0.0, 0.25, 0.25, 0.375]
    assert features["position t"].tolist() == [0, 1, 2, 3]


def test_adding_running_answer_ends_on_the_target():
    task = engine.make_task("adding", seq_len=20, seed=3)
    x, y = task.batch(5)
    for xs, ys in zip(x, y):
        assert task.unit_features(None, xs)["sum of marked values so far"][-1] == pytest.approx(ys.item(), abs=1e-6)


def test_running_parity_feature_is_the_target():
    task = engine.make_task("parity", seq_len=12, running=True, seed=2)
    x, y = task.batch(5)
    for xs, ys in zip(x, y):
        assert task.unit_features(None, xs)["parity so far"].tolist() == ys.tolist()


def test_sentiment_marks_its_padding_and_negations():
    task = engine.make_task("sentiment", seq_len=8)
    x = task.encode("the film was not good")
    features = task.unit_features(task.symbols_of(x), x)
    assert features["is padding"].tolist() == [1, 1, 1, 0, 0, 0, 0, 0]
    assert features["is a negation"].tolist() == [0, 0, 0, 0, 0, 0, 1, 0]


def test_a_drawn_sine_feature_is_the_wave_the_target_holds():
    task = engine.make_task("sine", mode="generate", seq_len=40, seed=4)
    x, y = task.batch(5)
    for xs, ys in zip(x, y):
        features = task.unit_features(task.symbols_of(xs), xs)
        np.testing.assert_allclose(features["the wave it draws"], ys[:, 0].numpy(), atol=1e-5)


def test_correlations_are_pearson_r_best_first_and_skip_what_never_changes():
    rng = np.random.default_rng(0)
    hidden = torch.tensor(rng.normal(size=(30, 6)))  # [T, H]
    hidden[:, 5] = 0.3  # a unit that never changes has no r
    features = {"a": rng.normal(size=30), "b": hidden[:, 2].numpy() * -2 + 1, "flat": np.ones(30)}
    table = correlated_units(hidden, features, top=20, per_feature=5)
    for row in table.itertuples():
        expected = np.corrcoef(features[row.feature], hidden[:, row.unit].numpy())[0, 1]
        assert row.r == pytest.approx(expected, abs=1e-12)
    assert table.iloc[0].to_dict() == {"feature": "b", "unit": 2, "r": pytest.approx(-1.0)}
    assert "flat" not in set(table["feature"]) and 5 not in set(table["unit"])
    assert list(table["r"].abs()) == sorted(table["r"].abs(), reverse=True)
    assert table["feature"].value_counts().max() <= 5 and len(table) == 10  # 2 features x 5 units
    assert len(correlated_units(hidden, features, top=3)) == 3
