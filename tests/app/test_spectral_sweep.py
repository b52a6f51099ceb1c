"""The spectral radius, swept (Gradients page): every line plotted is engine.record's ‖∂L/∂h_t‖ of a
fresh network whose W_hh has the slider's spectral radius, built here again without the page's
code; a linear RNN follows ρ^(T−t) exactly where W_hh is orthogonal × ρ, and (W_hh^T)^(T−t) applied
to ∂L/∂h_T whatever W_hh is; tanh's stays under Pascanu et al.'s bound."""
import re

import pytest
import torch
from streamlit.testing.v1 import AppTest

import engine
from app import pages as nav
from app.session.probes import probe_samples
from app.widgets import state

from .conftest import MAIN, chart, plotted

FAN_TITLE = "as ρ(W_hh) sweeps"
RATIO_TITLE = "First step's share"
PANELS = {"tanh": "x", "linear": "x2"}  # each activation's panel, by its x axis


def page(query: dict | None = None, opened: bool = True) -> AppTest:
    at = AppTest.from_file(MAIN, default_timeout=90)
    for k, v in (query or {}).items():
        at.query_params[k] = v
    at.session_state[state.SWEEP_OPEN] = opened
    return at.run().switch_page(nav.PATHS["gradients"]).run()


def line(at: AppTest, name: str, activation: str) -> list[float]:
    """The exact values of the fan's line `name` in the activation's panel."""
    spec = chart(at, FAN_TITLE)
    found = [t for t in spec["data"] if t.get("name") == name and t.get("xaxis", "x") == PANELS[activation]]
    assert len(found) == 1, [(t.get("name"), t.get("xaxis")) for t in spec["data"]]
    return plotted(found[0]["customdata"] if "customdata" in found[0] else found[0]["y"])


def built(activation: str, rho: float, start: str, task, hidden_size: int = 64, seed: int = 0):
    """The network the page should have built, made here from the engine alone: PyTorch's default
    draw scaled by the engine (init="scaled"), or the orthogonal draw scaled by hand."""
    if start == "default":
        cfg = engine.ModelConfig(arch="rnn", hidden_size=hidden_size, activation=activation, init="scaled",
                                 spectral_radius=rho)
        return engine.build_model(cfg, task, seed=seed)
    cfg = engine.ModelConfig(arch="rnn", hidden_size=hidden_size, activation=activation, init="orthogonal")
    model = engine.build_model(cfg, task, seed=seed)
    with torch.no_grad():
        w = model.rnn.weight_hh_l0  # [H, H]
        w.mul_(rho / torch.linalg.eigvals(w).abs().max().item())
    return model


def adding():
    task = engine.make_task("adding", seq_len=50, seed=0)
    return task, probe_samples(task, 0)


def move(at: AppTest, rho: float | None = None, start: str | None = None) -> AppTest:
    if rho is not None:
        at.slider(key=state.SWEEP_RHO).set_value(rho)
    if start is not None:
        at.radio(key=state.SWEEP_START).set_value(start)
    at.run()
    assert not at.exception
    return at


@pytest.mark.parametrize("start", ["orthogonal", "default"])
def test_every_line_is_engine_record_of_a_network_with_that_radius(start):
    at = move(page(), 1.05, start)
    task, samples = adding()
    for activation in PANELS:
        for rho, name in [(1.05, "ρ = 1.05 (slider)"), *((r, f"ρ = {r:g}") for r in (0.8, 0.9, 1.0, 1.1, 1.2))]:
            rec = engine.record(built(activation, rho, start, task), *samples, index=0, jacobians=False)
            assert line(at, name, activation) == pytest.approx(rec.grad_norm_h[0, 0].tolist(), rel=1e-6), (name, start)
    bold = line(at, "ρ = 1.05 (slider)", "tanh")
    assert line(at, "ρ = 1.1", "tanh") != pytest.approx(bold, rel=1e-3)  # each ρ its own network


@pytest.mark.parametrize("rho", [0.8, 1.05, 1.2])
def test_the_built_w_hh_has_the_chosen_spectral_radius(rho):
    at = move(page(), rho)
    task, _ = adding()
    sweep = at.session_state[state.SWEEP]
    for start in ("orthogonal", "default"):
        move(at, start=start)
        for activation in PANELS:
            w = sweep.curve(activation, rho, start).w_hh  # [H, H], as the page built it
            assert torch.linalg.eigvals(w).abs().max().item() == pytest.approx(rho, rel=1e-5)
            assert torch.equal(w, built(activation, rho, start, task).rnn.weight_hh_l0.detach())
            sigma = torch.linalg.svdvals(w)  # [H]
            if start == "orthogonal":  # every singular value is ρ: Pascanu's σ_max is ρ
                assert sigma.tolist() == pytest.approx([rho] * len(sigma), rel=1e-5)
            else:
                assert sigma.max().item() > 1.3 * rho
        caption = next(c.value for c in at.caption if c.value.startswith("Fresh, untrained"))
        assert f"At ρ = {rho:.2f}, W_hh's largest |eigenvalue| measures {rho:.4g}" in caption


@pytest.mark.parametrize("rho", [0.8, 0.95, 1.2])
def test_a_linear_rnn_follows_rho_to_the_t_minus_t_and_tanh_stays_under_it(rho):
    at = move(page(), rho)
    linear, tanh = (torch.tensor(line(at, f"ρ = {rho:g} (slider)", a), dtype=torch.float64) for a in ("linear", "tanh"))
    back = torch.arange(len(linear) - 1, -1, -1, dtype=torch.float64)  # T−1−t: steps back from the last
    assert linear.tolist() == pytest.approx((rho**back * linear[-1]).tolist(), rel=2e-4)
    assert line(at, "ρ^(T−t), met at t = T", "linear") == pytest.approx(linear.tolist(), rel=2e-4)
    assert (tanh <= rho**back * tanh[-1] * (1 + 1e-5)).all()  # ‖∂L/∂h_t‖ ≤ (γ σ_max)^(T−t) ‖∂L/∂h_T‖, γ = 1
    assert (tanh[0] / tanh[-1]).item() < 0.5 * rho ** (len(tanh) - 1)  # and tanh′ < 1 takes its toll


@pytest.mark.parametrize("rho", [0.8, 1.2])
def test_any_linear_rnn_is_w_hh_transposed_to_the_t_minus_t_and_its_rate_is_rho(rho):
    at = move(page(), rho, "default")
    task, samples = adding()
    plotted_line = torch.tensor(line(at, f"ρ = {rho:g} (slider)", "linear"), dtype=torch.float64)  # [T]
    w = at.session_state[state.SWEEP].curve("linear", rho, "default").w_hh.double()  # [H, H]
    rec = engine.record(built("linear", rho, "default", task), *samples, index=0, jacobians=False)
    g = rec.grad_h[0, 0, -1].double()  # [H] ∂L/∂h_T
    theory = [torch.linalg.matrix_power(w.T, k) @ g for k in range(len(plotted_line))]  # k steps back
    assert plotted_line.flip(0).tolist() == pytest.approx([v.norm().item() for v in theory], rel=1e-4)
    rate = (plotted_line[0] / plotted_line[20]).item() ** (1 / 20)  # far from T, per step
    assert rate == pytest.approx(rho, rel=0.02)


def test_the_slider_runs_from_0_8_to_1_2_and_its_ends_are_drawn_and_quoted():
    at = page()
    proto = at.slider(key=state.SWEEP_RHO).proto
    ends = (proto.min, proto.max, proto.step, at.slider(key=state.SWEEP_RHO).value)
    assert ends == pytest.approx((0.8, 1.2, 0.05, 1.0))
    task, samples = adding()
    for rho in (0.8, 1.2):
        move(at, rho)
        tanh, linear = (line(at, f"ρ = {rho:g} (slider)", a) for a in PANELS)
        ratios = [values[0] / values[-1] for values in (tanh, linear)]
        caption = next(c.value for c in at.caption if c.value.startswith("Fresh, untrained"))
        assert f"is **{ratios[0]:.2g}** for tanh and **{ratios[1]:.2g}** for linear" in caption
        spec = chart(at, RATIO_TITLE)
        title = spec["layout"]["title"]["text"].replace("<br>", " ")  # a long title breaks (widgets/figures.show)
        assert title.endswith(f"(dashed: the slider's {rho:.2f})")
        assert [s["x0"] for s in spec["layout"]["shapes"] if s["type"] == "line"] == [rho]
        points = {t["name"]: t for t in spec["data"]}
        for name, ratio in zip(("tanh RNN", "linear RNN"), ratios, strict=True):
            xs, ys = plotted(points[name]["x"]), plotted(points[name]["y"])
            assert xs == pytest.approx([0.8 + 0.05 * k for k in range(9)])
            assert ys[xs.index(pytest.approx(rho))] == pytest.approx(ratio, rel=1e-6)
    expected = engine.record(built("linear", 1.2, "orthogonal", task), *samples, index=0, jacobians=False)
    assert linear == pytest.approx(expected.grad_norm_h[0, 0].tolist(), rel=1e-6)
    assert linear[0] / linear[-1] == pytest.approx(1.2**49, rel=2e-4)  # 7.6e3: exploding


def test_the_bands_follow_sigma_max_one():
    at = page()
    orthogonal = chart(at, RATIO_TITLE)["layout"]
    rects = sorted((s["x0"], s["x1"]) for s in orthogonal["shapes"] if s["type"] == "rect")
    assert rects == [(0.8, pytest.approx(1.0, rel=1e-5)), (pytest.approx(1.0, rel=1e-5), 1.2)]  # σ_max = ρ
    move(at, start="default")
    default = chart(at, RATIO_TITLE)["layout"]
    assert [(s["x0"], s["x1"]) for s in default["shapes"] if s["type"] == "rect"] == [(0.8, 1.2)]  # σ_max > 1 all along
    words = [a["text"] for a in default["annotations"]]
    assert words == ["σ_max > 1: may explode"]
    edge = re.search(r"lies at ρ = ([\d.]+), off this slider", " ".join(c.value for c in at.caption))
    assert edge and float(edge[1]) < 0.8


def test_nothing_is_computed_while_the_expander_is_closed():
    at = page(opened=False)
    assert not at.exception
    assert state.SWEEP not in at.session_state
    assert not [c for c in at.get("plotly_chart") if FAN_TITLE in c.proto.spec]


def test_a_one_layer_rnn_sweeps_its_own_task_and_sample():
    at = page({"arch": "rnn", "hidden_size": "32"})
    lab = at.session_state["lab"]
    at.number_input(key=state.PROBE_INDEX).set_value(3).run()
    at.toggle(key=state.SWEEP_OWN).set_value(True)
    move(at, 1.1)
    sweep = at.session_state[state.SWEEP]
    assert sweep.source.task is lab.task and sweep.index == 3
    assert "your task (adding, 32 units" in next(c.value for c in at.caption if c.value.startswith("Fresh"))
    rec = engine.record(built("tanh", 1.1, "orthogonal", lab.task, hidden_size=32, seed=lab.setup.train.seed),
                        *lab.probes.samples, index=3, jacobians=False)
    assert line(at, "ρ = 1.1 (slider)", "tanh") == pytest.approx(rec.grad_norm_h[0, 0].tolist(), rel=1e-6)


def test_an_lstm_cannot_sweep_its_own_network():
    at = page()  # the adding preset: an LSTM
    toggle = at.toggle(key=state.SWEEP_OWN)
    assert toggle.proto.disabled and "yours is an LSTM" in toggle.proto.help
    assert at.session_state[state.SWEEP].source.name.startswith("the adding problem")
