"""The Gradients page plots the recording's own numbers, recorded once per model state."""
import json

import pytest
import torch
from streamlit.testing.v1 import AppTest

import engine
from app import pages as nav
from app.charts import gradients as cg
from app.session.probes import RECORD_EVERY
from app.widgets.state import INITIALISATION_OPEN, TRUNCATION_OPEN

from .conftest import MAIN, chart, plotted, shown_window
from .test_page_reruns import tick

GRADIENTS = nav.PATHS["gradients"]
BUILD = engine.build_model  # the real one, while a test counts the calls


def page(query: dict | None = None, opened: tuple[str, ...] = ()) -> AppTest:
    """The Gradients page, with the expanders named in `opened` open (as a click on one does:
    they compute only while open)."""
    at = AppTest.from_file(MAIN, default_timeout=60)
    for k, v in (query or {}).items():
        at.query_params[k] = v
    for key in opened:
        at.session_state[key] = True
    return at.run().switch_page(GRADIENTS).run()


BOTH = (TRUNCATION_OPEN, INITIALISATION_OPEN)


def trace(spec: dict, name: str) -> dict:
    return next(t for t in spec["data"] if t.get("name") == name)


def test_the_plotted_gradients_are_the_recording_of_the_sample_chosen():
    at = page()
    lab = at.session_state["lab"]
    for _ in range(30):
        lab.step()
    at.run()
    assert not at.exception
    rec = lab.recording(0)
    line = trace(chart(at, "BPTT"), "layer 0 →")
    assert plotted(line["y"]) == pytest.approx(rec.grad_norm_h[0, 0].tolist(), rel=1e-6)
    assert plotted(line["x"]) == list(range(rec.seq_len))
    at.number_input(key="probe_index").set_value(3).run()
    other = lab.recording(3)
    line = trace(chart(at, "BPTT"), "layer 0 →")
    assert plotted(line["y"]) == pytest.approx(other.grad_norm_h[0, 0].tolist(), rel=1e-6)
    assert plotted(line["y"]) != pytest.approx(rec.grad_norm_h[0, 0].tolist(), rel=1e-6)
    assert lab.trainer.steps_done == 30  # looking never trains
    assert lab.recording(3) is other  # nor records again until the model changes


def test_the_gradient_log_holds_a_row_every_record_every_steps():
    at = page()
    lab = at.session_state["lab"]
    for _ in range(2 * RECORD_EVERY):
        lab.step()
    at.run()
    log = lab.probes.log_frame()
    assert list(log.step) == [0, RECORD_EVERY, 2 * RECORD_EVERY]
    ratio = chart(at, "How much gradient reaches the first step")["data"][0]
    assert plotted(ratio["x"]) == list(log.step)
    assert plotted(ratio["y"]) == pytest.approx(list(log.ratio), rel=1e-6)
    # the logged ratio is that of a recording of the model as it was at that step
    assert log.ratio.iloc[-1] == pytest.approx(
        (lab.recording(0).grad_norm_h[0, 0, 0] / lab.recording(0).grad_norm_h[0, 0, -1]).item(), rel=1e-6
    )


def test_eigenvalues_plotted_are_those_of_w_hh():
    import torch

    at = page({"arch": "rnn", "forget_bias": "none"})
    lab = at.session_state["lab"]
    spec = chart(at, "Eigenvalues of W_hh")
    points = [t for t in spec["data"] if t.get("mode") == "markers"]
    plotted_moduli = sorted(abs(complex(x, y)) for t in points for x, y in zip(plotted(t["x"]), plotted(t["y"])))
    expected = sorted(torch.linalg.eigvals(lab.model.rnn.weight_hh_l0.detach()).abs().tolist())
    assert plotted_moduli == pytest.approx(expected, rel=1e-5)
    assert any("theory" in t.get("name", "") for t in chart(at, "BPTT")["data"])  # a vanilla RNN


def test_an_encoder_decoder_shows_the_stack_chosen():
    at = page({"task": "reverse"})
    assert not at.exception
    at.radio(key="stack").set_value("decoder").run()
    rec = at.session_state["lab"].recording(0)
    line = trace(chart(at, "BPTT: the gradient reaching each step of the decoder"), "layer 0 →")
    assert plotted(line["y"]) == pytest.approx(rec.stacks["decoder"].grad_norm_h[0, 0].tolist(), rel=1e-6)


# ---------------------------------------------------------------- truncated BPTT, clipping, initialisation

def customdata(spec: dict, name: str) -> list:
    """A log_line's exact values (its y draws an exact 0 at the floor)."""
    return plotted(trace(spec, name)["customdata"])


def cuts(spec: dict) -> list:
    return sorted(s["x0"] for s in spec["layout"].get("shapes", []) if s.get("x0") == s.get("x1"))


def test_truncated_bptt_plots_both_recordings_for_the_window_chosen():
    at = page(opened=(TRUNCATION_OPEN,))
    lab = at.session_state["lab"]
    for _ in range(10):
        lab.step()
    at.run()
    T = lab.recording(0).seq_len
    for window in (T // 4, 7):  # the default to look at, then one the student picks
        if window != T // 4:
            at.slider(key=f"look_window.{T}").set_value(window).run()
        spec = chart(at, "Truncated backpropagation")
        assert spec["layout"]["title"]["text"] == f"Truncated backpropagation: the gradient cut every {window} steps"
        cut = engine.record(lab.model, *lab.probes.samples, index=0, jacobians=False, bptt_window=window)
        assert customdata(spec, "layer 0 → truncated") == pytest.approx(cut.grad_norm_h[0, 0].tolist(), rel=1e-6)
        assert customdata(spec, "layer 0 → full BPTT") == pytest.approx(lab.recording(0).grad_norm_h[0, 0].tolist(),
                                                                         rel=1e-6)
        assert cuts(spec) == [k - 0.5 for k in range(window, T, window)]
        last = (T - 1) // window * window  # the adding problem's loss is at the end: nothing before the last cut
        assert customdata(spec, "layer 0 → truncated")[:last] == [0.0] * last
    assert lab.trainer.steps_done == 10 and lab.setup.train.bptt_window == 0  # looking neither trains nor retunes


def test_a_model_trained_truncated_shows_its_own_window():
    at = page({"bptt_window": "9"}, opened=(TRUNCATION_OPEN,))
    lab = at.session_state["lab"]
    assert not at.slider and "a window of **9** steps" in " ".join(m.value for m in at.markdown)
    spec = chart(at, "Truncated backpropagation: the gradient cut every 9 steps")
    cut = engine.record(lab.model, *lab.probes.samples, index=0, jacobians=False, bptt_window=9)
    assert customdata(spec, "layer 0 → truncated") == pytest.approx(cut.grad_norm_h[0, 0].tolist(), rel=1e-6)


def test_truncated_bptt_says_why_it_does_not_apply_to_a_bidirectional_network():
    at = page({"bidirectional": "true"}, opened=(TRUNCATION_OPEN,))
    assert not at.exception
    [info] = [i.value for i in at.info if "Truncated BPTT" in i.value]
    assert "bidirectional" in info
    titles = [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in at.get("plotly_chart")]
    assert not [t for t in titles if t.startswith("Truncated")]


def test_clipping_plots_the_trainers_norms_with_the_threshold_and_counts_the_clipped_steps():
    at = page()  # the adding preset clips at 1.0
    lab = at.session_state["lab"]
    for _ in range(12):
        lab.step()
    at.run()
    history = lab.trainer.history
    spec = chart(at, "Gradient norm per step")
    assert plotted(trace(spec, "before clipping")["y"]) == pytest.approx([s.grad_norm for s in history], rel=1e-6)
    assert plotted(trace(spec, "after clipping")["y"]) == pytest.approx([s.grad_norm_clipped for s in history],
                                                                        rel=1e-6)
    assert plotted(trace(spec, "clip threshold")["y"]) == [1.0, 1.0]
    clipped = sum(s.grad_norm > 1.0 for s in history)
    assert f"{clipped} of 12 steps clipped" in " ".join(c.value for c in at.caption)


def test_with_clipping_off_the_page_says_how_to_turn_it_on():
    at = page({"clip_norm": "none"})
    [info] = [i.value for i in at.info if "Clipping is off" in i.value]
    assert "Build & Train, Training tab" in info and "Exploding gradients and clipping" in info
    assert not [t for t in chart(at, "Gradient norm per step")["data"] if t.get("name") == "clip threshold"]


def test_initialisation_curves_come_from_fresh_models_built_once(monkeypatch):
    import dataclasses

    import torch

    built = []
    monkeypatch.setattr(engine, "build_model", lambda cfg, *a, **k: built.append(cfg) or BUILD(cfg, *a, **k))
    at = page({"arch": "rnn", "forget_bias": "none"}, opened=BOTH)
    lab = at.session_state["lab"]
    own = lab.setup.model
    schemes = {"default (yours)": own, "orthogonal": dataclasses.replace(own, init="orthogonal"),
               "identity": dataclasses.replace(own, init="identity"),
               "scaled, ρ = 1": dataclasses.replace(own, init="scaled", spectral_radius=1.0)}
    assert built == [own, *schemes.values()]  # the student's model, then one fresh model per scheme
    spec = chart(at, "At initialisation")
    assert [t["name"] for t in spec["data"]] == list(schemes)
    for name, cfg in schemes.items():
        fresh = BUILD(cfg, lab.task, seed=lab.setup.train.seed)
        expected = engine.record(fresh, *lab.probes.samples, index=0, jacobians=False).grad_norm_h[0, 0]
        assert customdata(spec, name) == pytest.approx(expected.tolist(), rel=1e-6)
    lab.step()
    weights = {n: p.detach().clone() for n, p in lab.model.named_parameters()}
    at.run()
    at.slider(key=f"look_window.{lab.recording(0).seq_len}").set_value(5).run()
    assert len(built) == 1 + len(schemes)  # none built again while the model trains and widgets move
    assert customdata(chart(at, "At initialisation"), "orthogonal") == customdata(spec, "orthogonal")
    at.number_input(key="probe_index").set_value(3).run()  # another sample: its own curves, once
    at.number_input(key="probe_index").set_value(0).run()
    assert len(built) == 1 + 2 * len(schemes)
    for n, p in lab.model.named_parameters():  # the student's model is not touched
        assert torch.equal(p, weights[n])
    assert lab.trainer.steps_done == 1


def test_the_initialisation_caption_numbers_are_measured():
    """On the adding problem (T = 50, 64 units, seed 0): ‖∂L/∂h_0‖ / ‖∂L/∂h_T‖ at initialisation."""
    import dataclasses

    from app.session.lab import Lab
    from app.session.link import DEFAULT

    def ratios(**model):
        lab = Lab(dataclasses.replace(DEFAULT, model=engine.ModelConfig(hidden_size=64, **model)))
        assert lab.task.spec.name == "adding" and lab.recording(0).seq_len == 50
        curves = lab.probes.initial_gradients(0)
        return {name: rows.value.iloc[0] / rows.value.iloc[-1] for name, rows in curves.groupby("init")}

    rnn = ratios(arch="rnn")
    assert 2e-11 < rnn["default (yours)"] < 4e-11
    assert 0.07 < rnn["orthogonal"] < 0.13 and 0.07 < rnn["scaled, ρ = 1"] < 0.13
    assert 0.2 < rnn["identity"] < 0.3
    lstm = ratios(arch="lstm")
    assert 2e-11 < lstm["default (yours)"] < 4e-11
    assert 4e-5 < lstm["forget bias 1"] < 6e-5 and 0.15 < lstm["forget bias 3"] < 0.25


@pytest.mark.training
@pytest.mark.xdist_group("lesson-runs-rnn-forgets")  # lesson_runs.recurrent.adding_labs, trained once
def test_the_readmes_lstm_figures_are_measured():
    """The caption under the ratio over training, and README's sentence on the LSTM of the Gradients
    screenshot: the adding preset (T = 50, 64 units, seed 0) as a tanh RNN and as an LSTM, trained
    3000 steps on the page's Lab with its log of every RECORD_EVERY steps. The runs are the Vanishing
    lesson's (the same setup), trained once per session in lesson_runs.recurrent.adding_labs."""
    import numpy as np

    from app.session.lesson_runs.recurrent import adding_labs

    runs = adding_labs(0)
    rnn, lstm = (runs[arch].probes.log_frame().set_index("step").ratio for arch in ("rnn", "lstm"))
    assert RECORD_EVERY == 25 and list(lstm.index) == list(range(0, 3001, 25))  # "every 25 training steps"
    # The caption's ranges are the Vanishing lesson's claims (its data file), checked over its ensemble in
    # test_lesson_claims.py; here the one run the README's screenshot shows (seed 0).
    through = lstm[lstm > 1e-2].index.min()
    assert (lstm.loc[through:] > 1e-2).all()
    # README: "at about step 750 it learns to pass the gradient back 50 steps (the ratio jumps from
    # about 1e-9 to about 1e-1), the moment its loss falls"
    before, after = lstm.loc[100:through - 25], lstm.loc[through:through + 250]
    assert 1e-10 < before.median() < 1e-8 and 3e-2 < after.median() < 3e-1
    batch_loss = np.array([s.loss for s in runs["lstm"].trainer.history])  # [3000], what Build & Train plots
    baseline = runs["lstm"].task.baseline_loss
    assert batch_loss[through - 100:through].mean() > 0.9 * baseline  # on the baseline until the jump ...
    assert batch_loss[through + 50:through + 150].mean() < 0.5 * baseline  # ... and falling right after it


def test_a_bidirectional_model_logs_and_plots_both_directions_in_reading_order():
    """Issue 12, item 4: the ratio of the backward direction is its first step read (t = T-1) over its
    last (t = 0); the figure plots exactly the log, and the caption says what the first step is."""
    at = page({"bidirectional": "true", "hidden_size": "8"})
    lab = at.session_state["lab"]
    for _ in range(RECORD_EVERY):
        lab.step()
    at.run()
    assert not at.exception
    log = lab.probes.log_frame()
    g = engine.record(lab.model, *lab.probes.samples, index=0, jacobians=False).grad_norm_h[0]  # [2, T]
    assert log.ratio.iloc[-1] == pytest.approx((g[0, 0] / g[0, -1]).item(), rel=1e-6)
    assert log.ratio_backward.iloc[-1] == pytest.approx((g[1, -1] / g[1, 0]).item(), rel=1e-6)
    spec = chart(at, "How much gradient reaches the first step")
    arch = lab.setup.model.arch.upper()
    forward, backward = trace(spec, f"{arch} →"), trace(spec, f"{arch} ← (first step read: t = T−1)")
    assert plotted(forward["x"]) == plotted(backward["x"]) == list(log.step)
    assert plotted(forward["y"]) == pytest.approx(list(log.ratio), rel=1e-6)
    assert plotted(backward["y"]) == pytest.approx(list(log.ratio_backward), rel=1e-6)
    assert not [t for t in chart(at, "Gradient norm per parameter")["data"] if "ratio" in t.get("name", "")]
    assert any("the first step it reads is the last position, t = T−1" in c.value for c in at.caption)


@pytest.mark.training
def test_the_bidirectional_lessons_ratios_in_the_caption_are_measured():
    """The caption's sentence on a bidirectional network: the lesson 'What bidirectional buys you'
    (recall at lag 50, tanh RNN, seed 0) trained its 2000 steps as a playing page trains it, the log
    of every RECORD_EVERY steps. Measured: forward between 3e-11 and 2e-9, backward 1.5e-11 at step 0
    and 3e-13 to 1e-12 from step 100 on (7.6e-13 at step 2000), accuracy 1.0 at step 2000."""
    from app.session.lab import Lab
    from app.session.lessons import BY_KEY

    lesson = BY_KEY["bidirectional"]
    lab = Lab(lesson.setup)
    assert lab.task.lag == 50 and lesson.steps == 2000 and lesson.setup.model.bidirectional
    with lab.lock:
        for _ in range(lesson.steps):
            lab.advance()
    log = lab.probes.log_frame().set_index("step")
    assert list(log.index) == list(range(0, 2001, RECORD_EVERY))
    forward, backward = log.ratio, log.ratio_backward
    assert forward.max() < 1e-8 and backward.max() < 1e-8  # "both stay below 1e-8 for all 2000 steps"
    # "the backward one near 1e-12"
    assert 1e-13 < backward.loc[100:].min() and backward.loc[100:].max() < 3e-12
    assert lab.trainer.evaluate(1000)[1] == 1.0  # "names the signal every time"
    # "its backward direction reads the signal last, right before the output": the head reads h<-_0,
    # whose gradient is the backward direction's largest
    g = engine.record(lab.model, *lab.probes.samples, index=0, jacobians=False).grad_norm_h[0, 1]  # [T]
    assert int(g.argmax()) == 0


def counting(monkeypatch, owner, names: tuple[str, ...]) -> list[str]:
    """Patch owner's functions `names` to log their name on every call; the log."""
    calls = []
    for name in names:
        real = getattr(owner, name)
        monkeypatch.setattr(owner, name, lambda *a, _real=real, _name=name, **k: calls.append(_name) or _real(*a, **k))
    return calls


def titles(tree) -> list[str]:
    return [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in tree.get("plotly_chart")]


def test_closed_experiments_compute_nothing_while_the_page_plays(monkeypatch):
    """Issue 12, item 5: the truncated recording and the initialisation curves are made only while
    their expander is open, and never in a tick of the live fragment."""
    from app.session.probes import Probes

    made = counting(monkeypatch, Probes, ("truncated_recording", "initial_gradients"))
    at = page()
    at.button(key="play").click().run()
    drawn = [tick(at), tick(at)]
    at.number_input(key="probe_index").set_value(2).run()  # a whole-page run while playing
    assert not at.exception and at.session_state["lab"].trainer.steps_done > 0
    assert made == []
    for tree in (*drawn, at):
        assert not [t for t in titles(tree) if t.startswith(("Truncated", "At initialisation"))]
    at.session_state[TRUNCATION_OPEN] = True  # the student opens one
    at.run()
    assert made == ["truncated_recording"]
    assert [t for t in titles(at) if t.startswith("Truncated")]


def test_open_experiments_are_drawn_by_whole_page_runs_and_rebuilt_only_when_what_they_show_changed(monkeypatch):
    built = counting(monkeypatch, cg, ("truncated_bptt", "initialisation_gradients"))
    at = page(opened=BOTH)
    assert built == ["truncated_bptt", "initialisation_gradients"]
    at.run()  # nothing changed
    at.button(key="play").click().run()  # Play: a whole-page run that trains nothing
    assert built == ["truncated_bptt", "initialisation_gradients"]
    trained = tick(at)  # the live fragment draws and trains; the experiments are not in it
    assert at.session_state["lab"].trainer.steps_done > 0
    assert not [t for t in titles(trained) if t.startswith(("Truncated", "At initialisation"))]
    assert built == ["truncated_bptt", "initialisation_gradients"]
    at.button(key="play").click().run()  # Pause: the page redraws the trained weights
    assert not at.exception
    assert built == ["truncated_bptt", "initialisation_gradients", "truncated_bptt"]  # fresh models: not again
    spec = chart(at, "Truncated backpropagation")
    cut = at.session_state["lab"].probes.truncated_recording(0, shown_window(at))
    assert customdata(spec, "layer 0 → truncated") == pytest.approx(cut.grad_norm_h[0, 0].tolist(), rel=1e-6)


def diverging():
    """The exploding lesson's ReLU RNN (identity W_hh, plain SGD, no clipping) at lr 1: it diverges
    on its second step, and the recording of the weights it keeps overflows (issue 12, item 5c)."""
    import dataclasses

    from app.session.lessons import BY_KEY

    exploding = BY_KEY["exploding"].setup
    return dataclasses.replace(exploding, train=dataclasses.replace(exploding.train, lr=1.0))


def test_a_diverged_model_opens_and_the_page_says_what_diverged():
    at = page(opened=BOTH)
    lab = at.session_state["lab"]
    lab.start(diverging())
    while lab.trainer.diverged_at is None:
        lab.step()
    assert lab.trainer.diverged_at == 2
    at.run()
    assert not at.exception
    [error] = [e.value for e in at.error if "diverged" in e.value]
    assert "Training diverged at step 2" in error and "last finite weights, after step 1" in error
    rec = lab.recording(0)
    assert not torch.isfinite(rec.grad_norm_h).any()  # the weights are finite, their gradient is not
    [warning] = [w.value for w in at.warning if "overflow" in w.value]
    T = rec.seq_len
    jacobians = int((~torch.isfinite(rec.main.jacobian_norm[0, 0])).sum())  # [T] -> steps
    hidden = int((~torch.isfinite(rec.hidden[0, 0])).any(dim=-1).sum())  # [T, H] -> steps
    assert 0 < jacobians and 0 < hidden < T  # the states overflow from some step on
    assert f"h_t at {hidden} of {T} steps; ‖∂L/∂h_t‖ at {T} of {T} steps; ‖∂h_T/∂h_t‖₂ at {jacobians} of {T}" in warning
    chart(at, "Eigenvalues of W_hh")  # what can be drawn is drawn
    chart(at, "How much gradient reaches the first step")
    chart(at, "At initialisation")
    for key in ("probe_index",):  # another sample: the same
        at.number_input(key=key).set_value(2).run()
        assert not at.exception and any("overflow" in w.value for w in at.warning)


def test_a_new_model_at_the_same_step_count_is_drawn_anew():
    """The figures kept until a step is trained are kept per model: a new one (a setting changed,
    Reset, a lesson) stands at step 0 again and must not be shown the old one's figures."""
    import dataclasses

    at = page()
    lab = at.session_state["lab"]
    names = {t["name"] for t in chart(at, "How much gradient reaches the first step")["data"]}
    assert lab.setup.model.arch.upper() in names
    gru = dataclasses.replace(lab.setup, model=dataclasses.replace(lab.setup.model, arch="gru"))
    assert lab.change(gru) == "rebuilt" and lab.trainer.steps_done == 0
    at.run()
    assert not at.exception
    assert {t["name"] for t in chart(at, "How much gradient reaches the first step")["data"]} == {"GRU"}
    drawn = {t["name"] for t in chart(at, "Gradient norm per parameter")["data"]}
    assert drawn and all(name in dict(lab.model.named_parameters()) for name in drawn)  # the GRU's
    assert any("weight_hh" in name for name in drawn)
