"""What every task knows about its own samples (help, symbols, class names, padding, unit
features), checked against the task's targets and decoders rather than against fixed lists."""
import numpy as np
import pytest
import torch

import engine

# Every task with its default parameters, and the modes that change how a sample reads.
INSTANCES = {name: (name, {}) for name in engine.TASKS}
INSTANCES |= {
    "parity-whole": ("parity", dict(running=False)),
    "sine-generate": ("sine", dict(mode="generate", seq_len=30)),
    "recall-short": ("recall", dict(lag=5, symbols=3, distractors=2)),
}


@pytest.fixture(scope="module", params=INSTANCES)
def sample(request):
    """(task, x, y) of one sample of the instance."""
    name, params = INSTANCES[request.param]
    task = engine.make_task(name, seed=1, **params)
    x, y = task.batch(4)
    return task, x[0], y[0]


def test_every_task_says_what_it_asks_in_one_line(sample):
    task, _, _ = sample
    assert isinstance(task.help, str) and task.help.strip() and "\n" not in task.help


def test_a_sample_reads_as_one_symbol_per_step_or_none_for_values(sample):
    task, x, _ = sample
    symbols = task.symbols_of(x)
    if task.spec.input_kind == "values" and task.vocab is None:
        assert symbols is None
    else:
        assert len(symbols) == task.steps_of(x) == x.shape[0]
        assert set(symbols) <= set(task.vocab)


def test_class_names_name_every_output_class(sample):
    task, _, _ = sample
    names = task.class_names
    if task.spec.loss == "mse":
        assert names is None
    else:
        assert len(names) == task.spec.output_size == len(set(names))


def test_unit_features_are_one_value_per_step_and_the_position(sample):
    task, x, _ = sample
    features = task.unit_features(task.symbols_of(x), x)
    T = task.steps_of(x)
    assert len(features) >= 2
    for name, values in features.items():
        assert values.shape == (T,) and np.isfinite(values).all(), name
    assert features["position t"].tolist() == list(range(T))


def test_pads_are_the_steps_the_spec_calls_padding(sample):
    task, x, _ = sample
    padded = task.spec.padded(x[None]) if task.spec.input_kind == "tokens" else None  # [1, T]
    if padded is None:
        assert task.pad_symbol is None
        return
    symbols = task.symbols_of(x)
    assert [s == task.pad_symbol for s in symbols] == padded[0].tolist()


# ---------------------------------------------------------------- parameters that take named values


@pytest.mark.parametrize("name", list(engine.TASKS))
def test_every_parameter_with_named_values_lists_them_and_takes_each(name):
    """A parameter whose default is a name (sine's mode) says its values in Task.choices, which a
    form offers; the default is one of them, each builds the task, and anything else is refused."""
    task_class, params = engine.TASKS[name], engine.task_params(name)
    named = {param for param, default in params.items() if isinstance(default, str)}
    assert set(task_class.choices) == named
    for param, values in task_class.choices.items():
        assert params[param] in values and len(set(values)) == len(values) >= 2
        for value in values:
            assert getattr(engine.make_task(name, **{param: value}), param) == value
        with pytest.raises(ValueError, match=param):
            engine.make_task(name, **{param: "none of " + ", ".join(values)})


# ---------------------------------------------------------------- symbols against each task's targets


def test_recall_reads_the_signal_it_must_name():
    task = engine.make_task("recall", lag=6, symbols=3, distractors=4, seed=2)
    x, y = task.batch(20)
    for xs, label in zip(x, y.tolist()):
        symbols = task.symbols_of(xs)
        assert symbols[0] == task.class_names[label]
        assert not set(symbols[1:]) & set(task.class_names)  # the rest are distractors


@pytest.mark.parametrize("name, order", [("reverse", -1), ("copy", 1)])
def test_an_encoder_decoder_writes_the_symbols_it_reads(name, order):
    task = engine.make_task(name, seq_len=7, symbols=6, seed=3)
    x, y = task.batch(10)
    for xs, ys in zip(x, y):
        written = [task.class_names[i] for i in ys.tolist()]
        assert written[:-1] == task.symbols_of(xs)[::order] and written[-1] == "<eos>"


def test_dates_read_as_the_date_text_and_name_the_iso_characters():
    task = engine.make_task("dates", seed=4)
    x, y = task.batch(10)
    for xs, ys in zip(x, y):
        symbols = [s for s in task.symbols_of(xs) if s != task.pad_symbol]
        assert task.symbol_separator.join(symbols) == task.decode(xs)
        assert "".join(task.class_names[i] for i in ys.tolist()[:-1]) == task.decode_target(ys)


def test_charlm_symbols_are_the_characters_and_its_classes_the_next_character():
    task = engine.make_task("charlm", text="hello world, hello moon. " * 5, seq_len=12, seed=5)  # 10% held out
    x, y = task.batch(5)
    for xs, ys in zip(x, y):
        assert task.symbol_separator.join(task.symbols_of(xs)) == task.decode(xs)
        assert "".join(task.class_names[i] for i in ys.tolist()) == task.decode(ys)


def test_sentiment_symbols_are_the_words_with_pads_in_front():
    task = engine.make_task("sentiment", seq_len=30, seed=6)
    x, _ = task.batch(10)
    for xs in x:
        symbols = task.symbols_of(xs)
        words = [s for s in symbols if s != task.pad_symbol]
        assert task.symbol_separator.join(words) == task.decode(xs)
        assert symbols[: len(symbols) - len(words)] == [task.pad_symbol] * (len(symbols) - len(words))
    assert task.class_names[1] == "positive" and task.class_names[0] == "negative"
    positive = task.encode("the film was wonderful")
    assert task.symbols_of(positive)[-4:] == ["the", "film", "was", "wonderful"]


def test_parity_classes_name_the_count_of_ones_mod_two():
    task = engine.make_task("parity", seq_len=9, seed=7)
    x, y = task.batch(10)
    for xs, ys in zip(x, y):
        ones = torch.cumsum(xs[:, 0], 0).long() % 2  # [T]
        assert [task.class_names[i] for i in ys.tolist()] == [("even", "odd")[i] for i in ones.tolist()]
