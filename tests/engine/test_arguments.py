"""The engine's public calls given the wrong kind of argument (issue 15: a string for a model, None
for a config, a sample without its batch dimension) say which argument to fix and what to pass,
where they raised AttributeError, TypeError or IndexError from deep inside; and an in-range batch
that would hold hundreds of GB is refused, naming the limit, before anything is drawn."""
import dataclasses

import pytest
import torch

import engine
from engine.tasks.base import MAX_BATCH_BYTES

TASK = engine.make_task("adding", seq_len=10)
MODEL = engine.build_model(engine.ModelConfig(hidden_size=8), TASK, seed=0)
X, Y = TASK.batch(4)
SETTINGS = engine.TrainConfig()
WRONG = {"text": "lstm", "None": None, "number": 2.5, "dict": {"hidden_size": 8}, "bytes": b"\x00"}

CALLS = {  # call(wrong) -> the call with `wrong` in one argument's place; the words its message must hold
    "Trainer(model)": (lambda v: engine.Trainer(v, TASK, SETTINGS), ["model", "engine.build_model"]),
    "Trainer(task)": (lambda v: engine.Trainer(MODEL, v, SETTINGS), ["task", "engine.make_task"]),
    "Trainer(cfg)": (lambda v: engine.Trainer(MODEL, TASK, v), ["cfg", "engine.TrainConfig"]),
    "Trainer.retune(cfg)": (lambda v: engine.Trainer(MODEL, TASK, SETTINGS).retune(v), ["cfg", "engine.TrainConfig"]),
    "record(model)": (lambda v: engine.record(v, X, Y), ["model", "engine.build_model"]),
    "record(x)": (lambda v: engine.record(MODEL, v, Y), ["x", "torch.Tensor"]),
    "record(y)": (lambda v: engine.record(MODEL, X, v), ["y", "torch.Tensor"]),
    "build_model(cfg)": (lambda v: engine.build_model(v, TASK), ["cfg", "engine.ModelConfig"]),
    "from_bytes(data)": (lambda v: engine.from_bytes(v), ["data", "bytes", "engine.load"]),
    "ModelConfig.from_dict": (lambda v: engine.ModelConfig.from_dict(v), ["from_dict", "a dict of its fields"]),
    "TrainConfig.from_dict": (lambda v: engine.TrainConfig.from_dict(v), ["from_dict", "a dict of its fields"]),
}


RIGHT_KIND = {"from_bytes(data)": "bytes", "ModelConfig.from_dict": "dict", "TrainConfig.from_dict": "dict"}
CASES = [(call, wrong) for call in CALLS for wrong in WRONG if RIGHT_KIND.get(call) != wrong]


@pytest.mark.parametrize("call, wrong", CASES, ids=[f"{c}={w}" for c, w in CASES])
def test_a_wrong_kind_of_argument_names_the_argument_and_what_to_give(call, wrong):
    make, words = CALLS[call]
    with pytest.raises(TypeError) as info:
        make(WRONG[wrong])
    message = str(info.value)
    assert all(word in message for word in words) and "got" in message, message


def test_a_config_field_of_the_wrong_kind_is_a_value_error_naming_it():
    """Configs and tasks checked every field's kind already (test_validation.py has their table);
    None, a string and a float where a whole number goes, once more for every task's parameters."""
    for name in engine.TASKS:
        for param, default in engine.task_params(name).items():
            if isinstance(default, int) and not isinstance(default, bool):
                for wrong in (None, "ten", 2.5):
                    with pytest.raises(ValueError, match=param):
                        engine.make_task(name, **{param: wrong})


@pytest.mark.parametrize("x, y, words", [
    (X[0], Y, ["x must be [batch, steps, 2] float values", "shape [10, 2]"]),  # one sample, no batch
    (X[..., :1], Y, ["[batch, steps, 2]", "shape [4, 10, 1]"]),  # another task's width
    (X.long(), Y, ["float values", "int64"]),
    (X[:0], Y[:0], ["no samples"]),
    (X[:, :0], Y, ["no steps"]),
    (X, Y[:2], ["one target per sample of x (4)", "[2, 1]"]),
])
def test_a_batch_of_the_wrong_shape_says_the_shape_to_give(x, y, words):
    with pytest.raises(ValueError) as info:
        engine.record(MODEL, x, y)
    assert all(word in str(info.value) for word in words), str(info.value)


def test_targets_outside_the_classes_are_refused_naming_them():
    task = engine.make_task("sort")
    model = engine.build_model(engine.ModelConfig(attention="additive"), task, seed=0)
    x, y = task.batch(2)
    with pytest.raises(ValueError, match="class ids from 0 to 2"):  # one input step: <sos>, <eos>, position 0
        engine.record(model, x[:, :1], y)
    with pytest.raises(ValueError, match="an integer tensor"):
        engine.record(model, x, y.float())


# ---------------------------------------------------------------- the batch's memory

WIDE_RECALL = dict(lag=1999, symbols=64, distractors=64)  # in range: 2000 steps x 128 one-hot inputs
SHAPES = [("adding", {}), ("recall", WIDE_RECALL), ("sine", dict(mode="generate")), ("sine", {}),
          ("charlm", {}), ("sentiment", {}), ("char_sentiment", {}), ("parity", {}), ("reverse", {}),
          ("copy", {}), ("dates", {}), ("sort", {})]


@pytest.mark.parametrize("name, params", SHAPES, ids=[f"{n}{p or ''}" for n, p in SHAPES])
def test_a_samples_bytes_are_known_without_drawing_and_are_what_a_batch_holds(name, params):
    task = engine.make_task(name, **params)
    x, y = task.batch(3)
    assert task.sample_bytes * 3 == x.nbytes + y.nbytes


def test_an_in_range_batch_of_hundreds_of_gb_is_refused_naming_the_limit_and_drawing_nothing():
    task = engine.make_task("recall", **WIDE_RECALL)
    assert task.sample_bytes == 1_024_008  # 2000 x 128 float32 inputs and one class id
    with pytest.raises(ValueError) as info:
        task.batch(100_000)
    said = str(info.value)
    assert "102.4 GB" in said and f"limit of {MAX_BATCH_BYTES // 2**20} MB a batch" in said
    assert f"at most {MAX_BATCH_BYTES // 1_024_008:,} samples" in said
    fresh = engine.make_task("recall", **WIDE_RECALL)
    for a, b in zip(task.batch(2), fresh.batch(2)):  # the refusal drew nothing: the seeded stream is where it was
        assert torch.equal(a, b)
    task.batch(MAX_BATCH_BYTES // task.sample_bytes)  # the largest batch allowed is drawn


def test_a_trainer_whose_batch_is_over_the_limit_is_refused_when_made_or_retuned():
    task = engine.make_task("recall", **WIDE_RECALL)
    model = engine.build_model(engine.ModelConfig(hidden_size=4), task, seed=0)
    with pytest.raises(ValueError, match="over the limit of 256 MB a batch"):
        engine.Trainer(model, task, engine.TrainConfig(batch_size=1024))
    trainer = engine.Trainer(model, task, engine.TrainConfig(batch_size=64))
    with pytest.raises(ValueError, match="at most 262 samples"):
        trainer.retune(dataclasses.replace(trainer.cfg, batch_size=1024))
    assert trainer.cfg.batch_size == 64
