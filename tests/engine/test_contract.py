"""Every model build_model can return: picked from the registry, carrying its task's vocabulary,
meeting the written contract (engine.contract) and describing its parts."""
import inspect

import pytest
import torch

import engine
from engine.build import MODELS, model_class
from engine.describe import KINDS, ROLES
from engine.tasks.base import DECODERS

from .test_validation import raises_saying

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
    (dict(arch="lstm", attention="additive"), "sort"),
]


def task_of(name):
    return engine.make_task(name, **({"seq_len": 8} if "seq_len" in engine.task_params(name) else {}))


def test_the_registry_picks_each_class_and_every_class_is_reachable():
    picked = {model_class(engine.ModelConfig(**cfg), task_of(name).spec) for cfg, name in BUILDS}
    assert picked == set(MODELS.values())
    assert model_class(engine.ModelConfig(attention="dot"), task_of("reverse").spec) is engine.AttentionEncoderDecoder
    transformer = engine.ModelConfig(arch="transformer")
    assert model_class(transformer, task_of("reverse").spec) is engine.TransformerEncoderDecoder
    assert model_class(engine.ModelConfig(attention="location"), task_of("sort").spec) is engine.PointerNetwork


@pytest.mark.parametrize("cfg, task_name, message", [
    (dict(attention="dot"), "adding", "attention belongs to an encoder-decoder"),
    (dict(reverse_source=True), "charlm", "reverse_source belongs to an encoder-decoder"),
    (dict(arch="transformer", reverse_source=True), "reverse", "Set reverse_source=False"),
    (dict(arch="transformer"), "sort", ("a pointer network writes", "arch='lstm', 'gru' or 'rnn'")),
    (dict(arch="gru"), "sort", ("needs a score function: set attention", "'additive'")),
])
def test_a_field_that_does_not_fit_the_task_is_named(cfg, task_name, message):
    fragments = message if isinstance(message, tuple) else (message,)
    raises_saying(lambda: engine.build_model(engine.ModelConfig(**cfg), task_of(task_name)), *fragments)


@pytest.mark.parametrize("cfg, task_name", BUILDS, ids=lambda v: str(v))
def test_a_model_carries_its_tasks_vocabulary_and_none_from_a_bare_spec(cfg, task_name):
    task = task_of(task_name)
    config = engine.ModelConfig(hidden_size=8, **cfg)
    assert engine.build_model(config, task).vocab == task.vocab
    assert engine.build_model(config, task.spec).vocab is None


# ---------------------------------------------------------------- the contract, for every class and task

CONFIGS = [  # every registry entry, with the variants that change a class's parts
    dict(arch="lstm", num_layers=2, bidirectional=True),
    dict(arch="gru"),
    dict(arch="rnn", activation="sigmoid"),  # the written-out loop
    dict(arch="lstm", peephole=True, bidirectional=True),  # the loop, with its peephole weights
    dict(arch="gru", attention="additive"),  # asks with s_{t-1}
    dict(arch="lstm", attention="general", bidirectional=True, num_layers=2),  # asks with s_t
    dict(arch="rnn", attention="location", reverse_source=True),  # reads no encoder state
    dict(arch="transformer", num_heads=2, bidirectional=True, position_encoding="learned"),
    dict(arch="transformer", num_heads=2, num_layers=2),
]
TASK_ARGS = {"seq_len": 6, "lag": 4}
TASKS = {
    name: engine.make_task(name, **{k: v for k, v in TASK_ARGS.items() if k in engine.task_params(name)})
    for name in engine.TASKS
}
TASKS["sine generate"] = engine.make_task("sine", seq_len=6, mode="generate")  # vec2seq


def fits(cfg, task):
    """An encdec task takes every config; a pointer task a recurrent one with a score to point
    with; the others no attention; a language model no config that reads ahead (check_reads_ahead)."""
    if task.spec.mapping == "pointer":
        return "attention" in cfg
    if task.predicts_next and cfg.get("bidirectional"):
        return False
    return "attention" not in cfg or task.spec.mapping == "encdec"


FITS = [(cfg, name) for cfg in CONFIGS for name, task in TASKS.items() if fits(cfg, task)]


def model_for(cfg, task_name):
    return engine.build_model(engine.ModelConfig(hidden_size=8, embedding_dim=5, **cfg), TASKS[task_name], seed=0)


def test_every_registry_entry_is_built_by_these_cases():
    built = {model_class(engine.ModelConfig(**cfg), TASKS[name].spec) for cfg, name in FITS}
    assert built == set(MODELS.values())


def parameters_of(signature):
    return [(p.name, p.default) for p in signature.parameters.values()]


@pytest.mark.parametrize("cfg, task_name", FITS, ids=lambda v: str(v))
def test_every_model_meets_the_contract(cfg, task_name):
    model = model_for(cfg, task_name)
    assert isinstance(model, torch.nn.Module) and isinstance(model, engine.Model)
    assert parameters_of(inspect.signature(model.forward))[:2] == [("x", inspect.Parameter.empty), ("y", None)]
    assert parameters_of(inspect.signature(model.replay)) == [
        ("x", inspect.Parameter.empty), ("y", inspect.Parameter.empty), ("taps", None)
    ]
    x, y = TASKS[task_name].batch(3)
    model.eval()
    with torch.no_grad():
        torch.testing.assert_close(model.replay(x, y).y_hat, model(x, y), atol=1e-5, rtol=0)
    stacks = model.recurrent_stacks()
    assert all(cfg_.arch == model.cfg.arch and isinstance(rnn, torch.nn.Module) for cfg_, rnn in stacks.values())
    assert (stacks == {}) == (model.cfg.arch == "transformer")
    if model.spec.mapping not in DECODERS:
        assert not isinstance(model, engine.Decoder)
        return
    assert isinstance(model, engine.Decoder)
    with torch.no_grad():
        state = model.start(x)
        logits, state = model.step(torch.zeros(3, dtype=torch.long), state)
        assert isinstance(state, engine.DecodingState)
        assert logits.shape == (3, model.spec.output_size)
        assert isinstance(state.select(torch.tensor([2, 2])), engine.DecodingState)
        torch.testing.assert_close(logits, model(x)[:, 0], atol=1e-6, rtol=0)  # greedy's first step


def covered(model, parts):
    """Each parameter's part; asserts none is in two parts."""
    owner = {}
    for part in parts:
        for name in part.params:
            assert name not in owner, f"{name} is in {owner[name]} and {part.name}"
            owner[name] = part.name
    return owner


@pytest.mark.parametrize("cfg, task_name", FITS, ids=lambda v: str(v))
def test_describe_counts_every_parameter_once_in_forward_order(cfg, task_name):
    model = model_for(cfg, task_name)
    parts = model.describe()
    named = dict(model.named_parameters())
    assert sum(p.parameters for p in parts) == sum(p.numel() for p in model.parameters())
    assert set(covered(model, parts)) == set(named)
    for part in parts:
        assert part.parameters == sum(named[n].numel() for n in part.params)
        assert part.kind in KINDS and part.role in ROLES
    assert len({p.name for p in parts}) == len(parts)
    head = "pointer" if model.spec.mapping == "pointer" else "linear head"  # a pointer's output is its attention
    assert parts[0].role == "input" and parts[-1].role == "head" and parts[-1].kind == head
    assert {p.role for p in parts} == set(ROLES)
    assert model.param_groups() == {p.name: list(p.params) for p in parts if p.params}
    if model.spec.mapping not in DECODERS:  # one stack: each part reads what the one before wrote
        for before, after in zip(parts[:-2], parts[1:-1]):
            assert before.output_shape == after.input_shape, (before, after)
        assert parts[-1].input_shape[-1] == parts[-2].output_shape[-1]


@pytest.mark.parametrize("cfg, task_name", FITS, ids=lambda v: str(v))
def test_recurrent_and_attention_parts_say_what_they_are(cfg, task_name):
    model = model_for(cfg, task_name)
    stacks = model.recurrent_stacks()
    for part in model.describe():
        if part.kind == "recurrent":
            stack_cfg = stacks[part.stack][0]
            assert (part.arch, part.layers, part.directions, part.hidden_size) == (
                stack_cfg.arch, stack_cfg.num_layers, stack_cfg.num_directions, stack_cfg.hidden_size)
            assert part.output_shape[-1] == stack_cfg.num_directions * stack_cfg.hidden_size
        if part.kind in ("attention", "pointer"):
            assert (part.score, part.heads) == (model.cfg.attention, 1)
        if part.kind == "transformer block":
            assert part.heads == model.cfg.num_heads and part.stack in ("encoder", "decoder")


def read_states(rec, reads):
    """The recorded states a head reads, side by side: [dirs*H] or [T, dirs*H]."""
    states = []
    for read in reads:
        h = rec.stacks[read.stack].hidden[read.layer, read.direction or 0]  # [T, H]
        states.append(h if read.t is None else h[read.t])
    return torch.cat(states, dim=-1)


@pytest.mark.parametrize("cfg, task_name", [f for f in FITS if "attention" not in f[0]], ids=lambda v: str(v))
def test_the_head_reads_the_states_describe_names(cfg, task_name):
    model = model_for(cfg, task_name).double()
    x, y = TASKS[task_name].batch(2)
    x = x.double() if x.is_floating_point() else x
    rec = engine.record(model, x, y.double() if y.is_floating_point() else y, jacobians=False)
    head = model.describe()[-1]
    with torch.no_grad():
        torch.testing.assert_close(model.head(read_states(rec, head.reads)), rec.y_hat, atol=1e-10, rtol=0)


def test_a_bidirectional_seq2vec_head_reads_the_backward_state_at_t0():
    model = model_for(dict(arch="gru", bidirectional=True, num_layers=2), "adding")
    assert [r.label for r in model.describe()[-1].reads] == ["h→_T", "h←_0"]
    assert [r.label for r in model_for(dict(arch="gru"), "adding").describe()[-1].reads] == ["h_T"]
    assert [r.label for r in model_for(dict(arch="gru", bidirectional=True), "parity").describe()[-1].reads] == [
        "h→_t", "h←_t"]
