"""Every model build_model can return: picked from the registry, carrying its task's vocabulary."""
import pytest

import engine
from engine.build import MODELS, model_class

# (config, a task it fits) for every entry of the registry
BUILDS = [
    (dict(arch="gru", bidirectional=True), "adding"),
    (dict(arch="lstm"), "charlm"),
    (dict(arch="rnn"), "sine"),
    (dict(arch="lstm", bidirectional=True), "reverse"),
    (dict(arch="gru", attention="additive"), "dates"),
    (dict(arch="transformer", num_heads=2), "sentiment"),
    (dict(arch="transformer", num_heads=2, bidirectional=True), "parity"),
    (dict(arch="transformer", num_heads=2), "copy"),
]


def task_of(name):
    return engine.make_task(name, **({"seq_len": 8} if "seq_len" in engine.task_params(name) else {}))


def test_the_registry_picks_each_class_and_every_class_is_reachable():
    picked = {model_class(engine.ModelConfig(**cfg), task_of(name).spec) for cfg, name in BUILDS}
    assert picked == set(MODELS.values())
    assert model_class(engine.ModelConfig(attention="dot"), task_of("reverse").spec) is engine.AttentionEncoderDecoder
    assert model_class(engine.ModelConfig(arch="transformer"), task_of("reverse").spec) is engine.TransformerEncoderDecoder


@pytest.mark.parametrize("cfg, task_name, message", [
    (dict(attention="dot"), "adding", "attention belongs to an encoder-decoder"),
    (dict(reverse_source=True), "charlm", "reverse_source belongs to an encoder-decoder"),
    (dict(arch="transformer", reverse_source=True), "reverse", "Set reverse_source=False"),
])
def test_a_field_that_does_not_fit_the_task_is_named(cfg, task_name, message):
    with pytest.raises(ValueError, match=message):
        engine.build_model(engine.ModelConfig(**cfg), task_of(task_name))


@pytest.mark.parametrize("cfg, task_name", BUILDS, ids=lambda v: str(v))
def test_a_model_carries_its_tasks_vocabulary_and_none_from_a_bare_spec(cfg, task_name):
    task = task_of(task_name)
    config = engine.ModelConfig(hidden_size=8, **cfg)
    assert engine.build_model(config, task).vocab == task.vocab
    assert engine.build_model(config, task.spec).vocab is None
