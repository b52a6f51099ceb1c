"""BPTT and RTRL: the page's figures plot engine.rtrl's and autograd's numbers for the model and
sample it describes (rebuilt here from the engine alone), its budget refuses what RTRL cannot do
in time with a message, and its cost table is what it measured."""
import dataclasses

import numpy as np
import pytest
import torch
from streamlit.testing.v1 import AppTest

import engine
from app import pages as nav
from app.session import budget
from app.session import rtrl as session
from engine.rtrl import rtrl_gradients, rtrl_online, truncated_gradients

from .conftest import MAIN, chart, plotted

RTRL_PAGE = nav.PATHS["rtrl"]
KINDS = {"rtrl_arch": "radio", "rtrl_task": "selectbox", "rtrl_step": "slider"}  # the rest are select_sliders
NAMES = ["rnn.weight_ih_l0", "rnn.weight_hh_l0", "rnn.bias_ih_l0", "rnn.bias_hh_l0", "head.weight", "head.bias"]


def page(**widgets) -> AppTest:
    """The page, with its widgets (by key) set one after the other."""
    at = AppTest.from_file(MAIN, default_timeout=120).run().switch_page(RTRL_PAGE).run()
    for key, value in widgets.items():
        getattr(at, KINDS.get(key, "select_slider"))(key=key).set_value(value)
        at.run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def reference(arch: str, task_name: str, H: int, T: int, steps: int = 0):
    """The model and sample the page says it shows, made from the engine alone: seed 0, trained
    `steps` Adam steps with the task's preset, one sample of a generator seeded 0."""
    task = engine.make_task(task_name, seq_len=T)
    model = engine.build_model(engine.ModelConfig(arch=arch, hidden_size=H), task, seed=0)
    if steps:
        engine.Trainer(model, task, dataclasses.replace(task.preset.train, seed=0)).step(steps)
    x, y = task.batch(1, torch.Generator().manual_seed(0))
    return task, model, x, y


def autograd(model, loss) -> dict[str, torch.Tensor]:
    named = dict(model.named_parameters())
    return dict(zip(named, torch.autograd.grad(loss, list(named.values()))))


def scatter_points(at) -> tuple[np.ndarray, np.ndarray]:
    spec = chart(at, "gradient entries")
    traces = [t for t in spec["data"] if t["name"] != "y = x"]
    return (np.concatenate([plotted(t["x"]) for t in traces]), np.concatenate([plotted(t["y"]) for t in traces]))


@pytest.mark.parametrize("arch, task_name, steps", [("rnn", "sine", 0), ("gru", "adding", 100)])
def test_the_scatter_plots_autograds_bptt_against_engine_rtrl_for_every_entry(arch, task_name, steps):
    H, T = 8, 20
    at = page(rtrl_arch=arch, rtrl_task=task_name, rtrl_hidden=H, rtrl_length=T, rtrl_trained=steps)
    task, model, x, y = reference(arch, task_name, H, T, steps)
    bptt = autograd(model, task.loss(model(x), y))
    rtrl = rtrl_gradients(model, x, y)
    xs, ys = scatter_points(at)
    assert np.array_equal(xs, np.concatenate([bptt[n].flatten().numpy() for n in NAMES]))
    assert np.array_equal(ys, np.concatenate([rtrl[n].flatten().numpy() for n in NAMES]))
    assert f"All {xs.size:,} gradient entries" in chart(at, "gradient entries")["layout"]["title"]["text"]
    table = at.table[0].value
    assert list(table["in PyTorch"]) == NAMES
    assert np.allclose(table["largest |RTRL − BPTT|"], [(rtrl[n] - bptt[n]).abs().max().item() for n in NAMES])
    assert (table["… in float64"] < 1e-12).all() and (table["largest |RTRL − BPTT|"] < 1e-5).all()


def test_the_online_curve_is_rtrls_gradient_after_each_step_and_the_diamond_bptt_through_steps_1_to_t():
    at = page(rtrl_step=10)
    task, model, x, y = reference("rnn", "sine", 16, 50)
    spec = chart(at, "loss so far")
    rtrl_line, diamond = spec["data"]
    expected = [step.grads["rnn.weight_hh_l0"].norm().item() for step in rtrl_online(model, x, y)]
    assert plotted(rtrl_line["x"]) == list(range(1, 51))
    assert np.allclose(plotted(rtrl_line["y"]), expected, rtol=1e-6)
    prefix = task.loss(model(x[:, :10]), y[:, :10]) * 10 / 50  # ℓ_1 + ... + ℓ_10, each loss(ŷ_t, y_t) / T
    (bptt,) = torch.autograd.grad(prefix, [model.rnn.weight_hh_l0])
    assert plotted(diamond["x"]) == [10] and plotted(diamond["y"])[0] == pytest.approx(bptt.norm().item(), rel=1e-6)
    assert plotted(diamond["y"])[0] == pytest.approx(expected[9], rel=1e-5)  # the same gradient, after step 10
    assert f"After step 10 it is {expected[9]:.4g}" in " ".join(c.value for c in at.caption)


def test_a_one_loss_task_has_no_gradient_before_its_last_step_and_says_why():
    at = page(rtrl_task="adding", rtrl_length=20, rtrl_step=5)
    norms = plotted(chart(at, "loss so far")["data"][0]["y"])
    assert all(n == 0 for n in norms[:-1]) and norms[-1] > 0
    assert "the gradient is 0 until t = 20" in " ".join(c.value for c in at.caption)


def test_the_truncation_figure_is_engine_truncated_bptt_against_rtrl_in_float64():
    at = page(rtrl_length=10)
    task, model, x, y = reference("rnn", "sine", 16, 10)
    model, x, y = model.double(), x.double(), y.double()
    exact = rtrl_gradients(model, x, y)["rnn.weight_hh_l0"]
    line, star = chart(at, "Truncated BPTT")["data"]
    windows = plotted(line["x"])
    assert windows == list(range(1, 10))  # every window below T = 10
    errors = [((truncated_gradients(model, x, y, k)["rnn.weight_hh_l0"] - exact).norm() / exact.norm()).item()
              for k in windows]
    assert np.allclose(plotted(line["y"]), errors, rtol=1e-9)
    assert errors[0] > 0.05  # a window of 1 is far off on this sample
    assert plotted(star["x"]) == [10] and "full BPTT" in star["name"]
    full = (truncated_gradients(model, x, y, 10)["rnn.weight_hh_l0"] - exact).norm() / exact.norm()
    assert full < 1e-12 and f"error {full.item():.0e}" in star["name"]


def test_the_cost_figures_plot_the_measured_grid_and_rtrl_memory_is_h_times_p():
    at = page(rtrl_hidden=8, rtrl_length=20)
    table = at.table[1].value  # the second table: the cost grid
    assert sorted(zip(table["H"], table["T"])) == [(2, 20), (4, 20), (8, 2), (8, 5), (8, 10), (8, 20)]
    assert list(table["RTRL S_t KB"]) == [4 * H * session.recurrent_parameters("rnn", H, 1) / 1024 for H in table["H"]]
    at_h = table[table["H"] == 8].sort_values("T")
    assert at_h["RTRL S_t KB"].nunique() == 1 and at_h["BPTT saved KB"].is_monotonic_increasing  # BPTT grows with T
    memory, time = chart(at, "Memory to have"), chart(at, "Time per step")
    by_h = table[table["T"] == 20].sort_values("H")
    rtrl_h = [t for t in memory["data"] if t["name"].startswith("RTRL") and t["xaxis"] == "x"][0]
    assert plotted(rtrl_h["x"]) == list(by_h["H"]) and np.allclose(plotted(rtrl_h["y"]), by_h["RTRL S_t KB"])
    bptt_t = [t for t in time["data"] if t["name"] == "BPTT" and t["xaxis"] == "x2"][0]
    assert plotted(bptt_t["x"]) == list(at_h["T"]) and np.allclose(plotted(bptt_t["y"]), at_h["BPTT ms/step"])
    assert (table["RTRL ms/step"] > 0).all() and (table["BPTT ms/step"] > 0).all()
    assert "measured at" in " ".join(c.value for c in at.caption)


def test_an_h_over_the_budget_is_refused_with_what_to_lower_and_nothing_is_computed():
    at = page(rtrl_hidden=128)
    (error,) = at.error
    assert "Too large for this page" in error.value and "H = 128" in error.value and "lower H to 64" in error.value
    assert not at.get("plotly_chart")
    at.select_slider(key="rtrl_hidden").set_value(16).run()  # back within the budget: the page draws again
    assert not at.error and len(at.get("plotly_chart")) == 5


def test_the_budget_names_a_t_and_an_h_that_fit():
    with pytest.raises(ValueError, match=r"lower T to 5 or H to 32"):
        session.check_budget(session.Settings(arch="gru", task="sine", hidden_size=64, seq_len=20),
                             engine.make_task("sine", seq_len=20))
    session.check_budget(session.Settings(arch="rnn", hidden_size=64, seq_len=50), engine.make_task("sine", seq_len=50))
    with pytest.raises(ValueError, match="training 300 steps"):  # too much arithmetic
        session.check_budget(session.Settings(hidden_size=32, seq_len=500, trained_steps=300),
                             engine.make_task("sine", seq_len=500))
    with pytest.raises(ValueError, match="over 30,000 time steps"):  # too many time steps, however small
        session.check_budget(session.Settings(arch="gru", hidden_size=2, seq_len=100, trained_steps=300),
                             engine.make_task("sine", seq_len=100))
    session.check_budget(session.Settings(arch="gru", hidden_size=2, seq_len=50, trained_steps=300),
                         engine.make_task("sine", seq_len=50))


def test_the_rtrl_network_passes_the_apps_one_gate_first(monkeypatch):
    """The page's network is priced by the gate every model a page builds goes through
    (budget.check_cost), and then by RTRL's own cost: a limit lowered there refuses it here."""
    settings = session.Settings(arch="rnn", hidden_size=16, seq_len=50)
    session.check_budget(settings, engine.make_task("sine", seq_len=50))
    monkeypatch.setattr(budget, "MAX_PARAMETERS", 100)
    with pytest.raises(ValueError, match="this network has 321 parameters, over this app's limit of 100"):
        session.check_budget(settings, engine.make_task("sine", seq_len=50))
