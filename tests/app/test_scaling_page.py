"""Why √d_k: the random-score figure against its own draws and the variance d_k it illustrates; the
two runs are the student's transformer with and without the scaling from the same weights, their
logs are engine.saturation on the samples they name, and the page plots those logs."""
import dataclasses
import math

import numpy as np
import pytest
import torch
from streamlit.testing.v1 import AppTest

from app import pages as nav
from app.charts import saturation as charts
from app.session.link import preset_setup
from app.session.scaling import SATURATION_SAMPLES, ScalingRuns
from app.session.transformers import WIDE_REVERSAL
from engine.multihead import saturation

from .conftest import MAIN, chart, plotted
from .test_page_reruns import tick

SCALING = nav.PATHS["scaling"]
SMALL = dataclasses.replace(WIDE_REVERSAL, model=dataclasses.replace(WIDE_REVERSAL.model, hidden_size=16, num_heads=2,
                                                                     dim_feedforward=16),
                            task_params={"seq_len": 5, "symbols": 4})


def page(query: dict | None = None) -> AppTest:
    at = AppTest.from_file(MAIN, default_timeout=60)
    for k, v in (query or {}).items():
        at.query_params[k] = v
    return at.run().switch_page(SCALING).run()


def no_exception(at: AppTest) -> None:
    assert not at.exception, [e.message for e in at.exception]


# ------------------------------------------------------------------ random scores

def test_random_scores_spread_as_sqrt_dk_undivided_and_as_1_divided():
    frame = charts.random_scores(widths=(4, 64, 256), rows=2000)
    spread = frame.pivot(index="d_k", columns="scores", values="std")
    assert np.allclose(spread["q·k"], np.sqrt(spread.index), rtol=0.05)  # variance d_k
    assert np.allclose(spread["q·k / √d_k"], 1, rtol=0.05)
    entropy = frame.pivot(index="d_k", columns="scores", values="entropy")
    assert (entropy["q·k"].diff().dropna() < 0).all()  # sharper with every width
    assert entropy["q·k / √d_k"].max() - entropy["q·k / √d_k"].min() < 0.1  # the same at every width
    assert entropy["q·k"][256] < 0.2 < 1.8 < entropy["q·k / √d_k"][256] < math.log(charts.KEYS)


def test_random_scores_entropy_is_the_softmax_entropy_of_its_own_draws():
    frame = charts.random_scores(widths=(8,), keys=5, rows=3, seed=7)
    generator = torch.Generator().manual_seed(7)
    q = torch.randn(3, 1, 8, generator=generator, dtype=torch.float64)
    k = torch.randn(3, 5, 8, generator=generator, dtype=torch.float64)
    scores = (q * k).sum(-1)  # [3, 5]
    for name, z in (("q·k", scores), ("q·k / √d_k", scores / math.sqrt(8))):
        p = z.softmax(-1)
        row = frame[frame["scores"] == name].iloc[0]
        assert row["entropy"] == pytest.approx(-(p * p.log()).sum(-1).mean().item(), abs=1e-12)
        assert row["std"] == pytest.approx(z.std().item(), abs=1e-12)


def test_the_spread_figure_plots_the_frame():
    frame = charts.random_scores(widths=(1, 16, 256), rows=200)
    fig = charts.spread_by_width(frame).to_plotly_json()
    for trace in (t for t in fig["data"] if t["name"] in ("q·k", "q·k / √d_k")):
        rows = frame[frame["scores"] == trace["name"]]
        column = "std" if trace["xaxis"] == "x" else "entropy"
        assert np.allclose(plotted(trace["y"]), rows[column]) and list(plotted(trace["x"])) == [1, 16, 256]
    (uniform,) = [t for t in fig["data"] if t["name"].startswith("uniform")]
    assert plotted(uniform["y"]) == [pytest.approx(math.log(charts.KEYS))] * 2


# ------------------------------------------------------------------ the two runs

def test_the_runs_differ_only_in_the_scaling_start_from_the_same_weights_and_log_engine_saturation():
    runs = ScalingRuns(SMALL)
    divided, undivided = runs.runs
    assert divided.cfg == dataclasses.replace(SMALL.model, attention_scale=True)
    assert undivided.cfg == dataclasses.replace(SMALL.model, attention_scale=False)
    for p, q in zip(divided.model.parameters(), undivided.model.parameters(), strict=True):
        assert torch.equal(p, q)
    with runs.lock:
        while runs.advance(25):
            pass
    log = runs.log_frame()
    assert list(log["step"]) == [0, 25, 0, 25] and list(log["run"]) == [divided.name] * 2 + [undivided.name] * 2
    x, y = runs.held_out[0][:SATURATION_SAMPLES], runs.held_out[1][:SATURATION_SAMPLES]
    for run in runs.runs:
        measured = saturation(run.model, runs.task.loss, x, y)  # the reference, at step 25
        last = log[log["run"] == run.name].iloc[-1]
        assert last["entropy"] == measured.entropy and last["logit_grad_norm"] == measured.logit_grad_norm
        assert last["uniform_entropy"] == measured.uniform_entropy
    trained = [dict(run.model.named_parameters()) for run in runs.runs]
    assert not torch.equal(trained[0]["encoder.0.self_attention.W_q.weight"],
                           trained[1]["encoder.0.self_attention.W_q.weight"])  # the scaling changed the updates


def test_the_runs_compare_a_setup_with_either_scaling_and_refuse_a_recurrent_model():
    runs = ScalingRuns(SMALL)
    flipped = dataclasses.replace(SMALL, model=dataclasses.replace(SMALL.model, attention_scale=False))
    assert runs.compares(SMALL) and runs.compares(flipped)
    wider = dataclasses.replace(SMALL, model=dataclasses.replace(SMALL.model, hidden_size=32))
    assert not runs.compares(wider)
    with pytest.raises(ValueError, match="the scaling is a transformer's, and this model is LSTM"):
        ScalingRuns(preset_setup("adding"))


# ------------------------------------------------------------------ the page

def test_a_recurrent_model_gets_the_figure_and_a_button_that_opens_the_wide_transformer():
    at = page()
    no_exception(at)
    assert chart(at, "Random scores over 10 keys")
    assert "no attention scores to divide" in at.info[0].value
    at.button(key="scaling.open").click().run()
    no_exception(at)
    lab = at.session_state["lab"]
    assert lab.setup == WIDE_REVERSAL
    runs = at.session_state["scaling"]
    assert runs.setup == WIDE_REVERSAL and at.session_state["scaling_steps"] == 150


def small_page() -> AppTest:
    link = {"task": "reverse", "seq_len": "5", "symbols": "4", "arch": "transformer", "hidden_size": "16",
            "num_heads": "2", "num_layers": "1", "forget_bias": "none"}
    at = page(link)
    no_exception(at)
    return at


def test_step_trains_both_one_step_and_the_figures_plot_their_logs():
    at = small_page()
    at.button(key="scaling_step").click().run()
    no_exception(at)
    runs = at.session_state["scaling"]
    assert [run.steps_done for run in runs.runs] == [1, 1]
    log = runs.log_frame()
    for title, column in (("Held-out accuracy of each run", "metric"), ("Entropy of the attention rows", "entropy"),
                          ("Gradient reaching the scores", "logit_grad_norm")):
        traces = {t["name"]: t for t in chart(at, title)["data"]}
        for run in runs.runs:
            rows = log[log["run"] == run.name]
            assert list(plotted(traces[run.name]["x"])) == list(rows["step"]) == [0, 1]
            trace = traces[run.name]  # a log axis's line keeps the exact values in customdata (log_lines.log_line)
            drawn = plotted(trace["customdata"] if "customdata" in trace else trace["y"])
            assert np.allclose(np.asarray(drawn, dtype=float).ravel(), rows[column], rtol=1e-12, atol=0)
    uniform = plotted(next(t for t in chart(at, "Entropy of the attention rows")["data"] if t["name"] == "uniform rows")
                      ["y"])
    assert uniform == [pytest.approx(log["uniform_entropy"].iloc[0])] * 2
    assert any("2 heads (d_k = 8)" in m.value for m in at.markdown)


def test_play_trains_in_the_ticks_and_a_changed_setup_is_said_not_mixed_in():
    at = small_page()
    at.session_state["scaling_steps"] = 3
    at.button(key="scaling_play").click().run()
    runs = at.session_state["scaling"]
    assert runs.playing and runs.steps_done == 0  # a whole-page run only draws
    while runs.playing:
        tick(at)
    assert [run.steps_done for run in runs.runs] == [3, 3]
    lab = at.session_state["lab"]
    at.switch_page(nav.PATHS["build"]).run()
    at.session_state["lab"].start(dataclasses.replace(lab.setup, model=dataclasses.replace(lab.setup.model,
                                                                                              hidden_size=32)))
    at.switch_page(SCALING).run()
    no_exception(at)
    assert at.session_state["scaling"] is runs  # trained: kept, and the change said
    assert "has changed since these runs were trained" in at.warning[0].value
    at.button(key="scaling_new").click().run()
    assert at.session_state["scaling"].setup.model.hidden_size == 32
