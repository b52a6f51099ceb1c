"""One size budget, checked on the one install step every path into a session goes through: the
form, a link, a lesson, an uploaded checkpoint and a comparison. A setup over it is refused before
anything is built (a link over it once took 13.7 s to build and 27.9 s for one step, holding the
session's lock), with a message saying what to lower, and the session keeps what it had."""
import dataclasses

import pytest
import torch
from streamlit.testing.v1 import AppTest

import engine
from app.session import budget
from app.session.comparison import Comparison
from app.session.lab import Lab
from app.session.link import DEFAULT, OFFERED, Setup, parse_query, preset_setup

from .conftest import MAIN

# The adding problem at T=50: batch 1024 x 50 steps x 512 units x 2 layers = 52M activations.
HEAVY = dataclasses.replace(
    DEFAULT,
    model=dataclasses.replace(DEFAULT.model, hidden_size=512, num_layers=2),
    train=dataclasses.replace(DEFAULT.train, batch_size=1024),
)
REFUSED = "over this app's limit"


@pytest.fixture
def builds(monkeypatch):
    """Every model engine.build_model makes from here on (the budget's own count of parameters
    builds on the meta device, allocating nothing, and is not counted)."""
    made, real = [], engine.build_model
    monkeypatch.setattr(engine, "build_model", lambda cfg, *a, **k: made.append(cfg) or real(cfg, *a, **k))
    return made


def test_parameters_and_arithmetic_have_limits_of_their_own():
    """An 8-layer bidirectional LSTM of 1024 units at batch 1 kept few activations, but has 185M
    parameters (2.8 GB with Adam's moments and the best step's copy), 55 GFLOP a step."""
    deep = dataclasses.replace(DEFAULT, model=dataclasses.replace(DEFAULT.model, hidden_size=1024, num_layers=8,
                                                                   bidirectional=True),
                               train=dataclasses.replace(DEFAULT.train, batch_size=1))
    assert budget.step_cost(deep, deep.make_task())[0] < budget.MAX_STEP_COST
    with pytest.raises(ValueError, match="parameters, over this app's limit"):
        Lab(deep)
    wide = dataclasses.replace(DEFAULT, model=dataclasses.replace(DEFAULT.model, hidden_size=1024),
                               train=dataclasses.replace(DEFAULT.train, batch_size=32))
    assert budget.step_cost(wide, wide.make_task())[0] < budget.MAX_STEP_COST
    assert budget.parameters(wide, wide.make_task())[0] < budget.MAX_PARAMETERS
    with pytest.raises(ValueError, match="operations .* over this app's limit"):
        Lab(wide)


def test_the_arithmetic_counts_the_weights_a_step_computes_with_not_the_embeddings_looked_up():
    """A translator on the 2017 corpus: 8,900 English and 15,800 French words of 8 numbers are 197,000 of its
    weights, which a step looks up a row of rather than multiplies by."""
    setup = Setup("translate", engine.ModelConfig(arch="gru", hidden_size=16, embedding_dim=8, bidirectional=True,
                                                  attention="dot"),
                  engine.TrainConfig(batch_size=64), {"corpus": "eng-fra-2017", "max_words": 12})
    task = setup.make_task()
    count, computed = budget.parameters(setup, task)
    model = engine.build_model(setup.model, task)
    embeddings = model.source_embedding.weight.numel() + model.target_embedding.weight.numel()
    assert count == sum(p.numel() for p in model.parameters()) and computed == count - embeddings
    assert embeddings == 8 * (len(task.vocab) + len(task.target_vocab))
    steps = budget.step_cost(setup, task)[1]
    assert 6 * 64 * steps * computed < budget.MAX_STEP_FLOPS < 6 * 64 * steps * count
    Lab(setup)  # within the budget


def test_the_heavy_setup_is_over_the_budget_and_the_default_is_not():
    # an LSTM keeps six values a unit and step for backpropagation: h_t, c_t and the gates i, f, g, o
    assert budget.step_cost(HEAVY, HEAVY.make_task())[0] == 1024 * 50 * 512 * 6 * 2 > budget.MAX_STEP_COST
    assert budget.step_cost(DEFAULT, DEFAULT.make_task())[0] < budget.MAX_STEP_COST


def test_a_new_lab_over_the_budget_builds_nothing(builds):
    with pytest.raises(ValueError, match=REFUSED):
        Lab(HEAVY)
    assert builds == []


def test_a_lesson_or_the_form_over_the_budget_leaves_the_lab_as_it_was(builds):
    lab = Lab(DEFAULT)
    model, built = lab.model, len(builds)
    with pytest.raises(ValueError, match="lower the batch size, the sequence length or the hidden size"):
        lab.start(HEAVY)
    with pytest.raises(ValueError, match=REFUSED):
        lab.change(HEAVY)
    assert lab.model is model and lab.setup == DEFAULT and len(builds) == built


def test_a_training_setting_alone_cannot_take_a_setup_over_the_budget():
    """A bigger batch is a heavier step: changing only the batch size took a network within the
    budget to 12.5 times over it, through the path that retunes rather than rebuilds."""
    lab = Lab(dataclasses.replace(HEAVY, train=dataclasses.replace(HEAVY.train, batch_size=8)))
    trainer = lab.trainer
    with pytest.raises(ValueError, match=REFUSED):
        lab.change(HEAVY)
    assert lab.trainer is trainer and lab.setup.train.batch_size == 8


def test_a_written_out_cell_is_priced_by_its_python_loop(builds):
    """Issue 29's link: T = 2000, 8 bidirectional layers of a layer-normalised peephole LSTM with
    zoneout passed (8 units, batch 1: few activations), and one step took 12-14 s of Python."""
    query = {"task": "adding", "seq_len": "2000", "arch": "lstm", "hidden_size": "8", "num_layers": "8",
             "bidirectional": "true", "layer_norm": "true", "peephole": "true", "zoneout": "0.5", "batch_size": "1"}
    with pytest.raises(ValueError, match="2000 steps x 16 layer-directions = 32,000 a training step, over this "
                                         "app's limit of 1,100"):
        Lab(parse_query(query))
    assert builds == []
    fused = parse_query(query | {"layer_norm": "false", "peephole": "false", "zoneout": "0.0"})
    budget.check_cost(fused, fused.make_task())  # nn.LSTM's own kernel: no Python loop to price


def test_an_uploaded_checkpoint_over_the_budget_is_refused(monkeypatch):
    """A checkpoint is checked against the task as the student has set it (400 steps here), from its
    header, before a weight is read or a model built."""
    long = dataclasses.replace(DEFAULT, task_params={**DEFAULT.task_params, "seq_len": 400})
    lab = Lab(long)
    wide = engine.ModelConfig(arch="lstm", hidden_size=512, bidirectional=True)
    checkpoint = engine.to_bytes(engine.build_model(wide, lab.task, seed=0))  # 64 x 400 x 512 x 6 x 2 = 157M
    model = lab.model
    read = []
    monkeypatch.setattr(engine.checkpoint, "load_bytes", lambda data: read.append(len(data)))
    with pytest.raises(ValueError, match=REFUSED):
        lab.load_model(checkpoint)
    assert lab.model is model and lab.setup == long and read == []


def test_a_comparison_over_the_budget_is_refused(builds):
    with pytest.raises(ValueError, match=REFUSED):
        Comparison(HEAVY)
    assert builds == []


def test_a_comparison_prices_every_cell_it_builds_not_only_the_students():
    """The attack of issue 29: a tanh RNN of 2 x 1024 units passes (3.15M parameters), and Compare
    cells then built its LSTM (12.6M) and GRU (9.5M) beside it."""
    rnn = dataclasses.replace(DEFAULT, model=dataclasses.replace(DEFAULT.model, arch="rnn", hidden_size=1024,
                                                                  num_layers=2),
                              train=dataclasses.replace(DEFAULT.train, batch_size=8), task_params={"seq_len": 20})
    budget.check_cost(rnn, rnn.make_task())  # the student's own network is within the budget
    with pytest.raises(ValueError, match=f"the LSTM run: this network has 12,6[0-9,]+ parameters, {REFUSED}"):
        Comparison(rnn)


def test_runs_side_by_side_are_within_the_budget_together():
    wide = dataclasses.replace(DEFAULT, model=dataclasses.replace(DEFAULT.model, hidden_size=600),
                               train=dataclasses.replace(DEFAULT.train, batch_size=8), task_params={"seq_len": 20})
    task = wide.make_task()
    setups = dict.fromkeys(("one", "two", "three", "four"), wide)
    each = budget.parameters(setups["one"], task)[0]
    assert each <= budget.MAX_PARAMETERS < 4 * each
    with pytest.raises(ValueError, match=f"these runs have {4 * each:,} parameters together"):
        budget.check_runs(setups, task)


def test_a_link_over_the_budget_opens_the_defaults_and_says_why():
    at = AppTest.from_file(MAIN, default_timeout=60)
    at.query_params.update(HEAVY.to_query())
    at.run()
    assert not at.exception
    assert any(REFUSED in w.value and "started with the defaults" in w.value for w in at.warning)
    assert at.session_state["lab"].setup == DEFAULT


def test_every_lesson_and_task_preset_is_within_the_budget():
    from app.session.lessons import LESSONS

    for setup in [lesson.setup for lesson in LESSONS] + [preset_setup(t) for t in OFFERED]:
        budget.check_cost(setup, setup.make_task())


def test_a_network_scaled_to_a_spectral_radius_is_counted_and_opens():
    """The count builds on the meta device, where rescaling W_hh to ρ cannot read eigenvalues: a lab
    with init="scaled" raised RuntimeError ("Tensor.item() cannot be called on meta tensors")."""
    scaled = dataclasses.replace(DEFAULT, model=dataclasses.replace(DEFAULT.model, init="scaled", spectral_radius=1.1))
    lab = Lab(scaled)
    assert budget.parameters(scaled, lab.task)[0] == sum(p.numel() for p in lab.model.parameters())
    W_hh = lab.model.rnn.weight_hh_l0.detach()  # [4H, H]: i, f, g, o
    for block in W_hh.reshape(4, -1, W_hh.shape[1]):
        assert torch.linalg.eigvals(block).abs().max().item() == pytest.approx(1.1, rel=1e-5)
