"""The BPTT figures plot exactly the recording's numbers (and the frames they are given), checked
against values computed here independently from the model's own W_hh."""
import dataclasses

import numpy as np
import pandas as pd
import pytest
import torch

import engine
from app.charts import gradients as cg
from app.charts.style import UNDER_AXIS

T = 12
GATES = {"rnn": 1, "lstm": 4, "gru": 3}


def recorded(arch, task="adding", seq_len=T, steps=0, **model):
    t = engine.make_task(task, seq_len=seq_len)
    m = engine.build_model(engine.ModelConfig(arch=arch, hidden_size=6, **model), t, seed=0)
    if steps:
        engine.Trainer(m, t, engine.TrainConfig(optimizer="adam", lr=1e-2, batch_size=8, seed=0)).step(steps)
    x, y = t.batch(4)
    return m, engine.record(m, x, y, spectra=True)


@pytest.fixture(scope="module", params=["rnn", "lstm", "gru"])
def stacked(request):
    """A 2-layer bidirectional model of each cell and its recording."""
    return recorded(request.param, num_layers=2, bidirectional=True)


@pytest.fixture(scope="module")
def encdec():
    return recorded("gru", task="reverse", seq_len=5)


def w_hh_blocks(model, layer, direction, prefix="rnn"):
    """[blocks, H, H]: the model's W_hh cut into its gate blocks, read straight from the parameter."""
    w = dict(model.named_parameters())[f"{prefix}.weight_hh_l{layer}{'_reverse' if direction else ''}"].detach()
    return w.reshape(-1, w.shape[1], w.shape[1])


def trace(fig, name):
    [found] = [t for t in fig.data if t.name == name]
    return found


def ys(t):
    return np.asarray(t.y, dtype=float)


def as_set(real, imag) -> list:
    """Points of the complex plane in a fixed order (the order eigvals returns them in is not)."""
    return sorted(zip(np.round(np.asarray(real, dtype=float), 5), np.round(np.asarray(imag, dtype=float), 5),
                      strict=True))


def block_name(rec, block, layer, arrow):
    """The legend name of one block of a 2-layer bidirectional model's W_hh."""
    return f"{rec.blocks[block]} block, layer {layer} {arrow}" if rec.arch != "rnn" else f"layer {layer} {arrow}"


def annotation_text(fig) -> str:
    return "\n".join(a.text or "" for a in fig.layout.annotations)


def assert_readable(fig, x_title, y_title):
    assert fig.layout.title.text
    assert fig.layout.template.layout.paper_bgcolor == "white"  # plotly_white
    assert 300 <= fig.layout.height <= 800
    assert fig.layout.xaxis.title.text == x_title and fig.layout.yaxis.title.text == y_title


def test_one_line_per_layer_and_direction_with_its_jacobian_norms(stacked):
    _, rec = stacked
    fig = cg.gradient_through_time(rec)
    assert_readable(fig, "time step t", "‖∂L/∂h_t‖ (log)")
    assert fig.layout.yaxis.type == "log"
    names = [t.name for t in fig.data if t.name.startswith("layer")]
    assert names == ["layer 0 →", "layer 0 → ‖∂h_T/∂h_t‖₂", "layer 0 ←", "layer 0 ← ‖∂h_T/∂h_t‖₂",
                     "layer 1 →", "layer 1 → ‖∂h_T/∂h_t‖₂", "layer 1 ←", "layer 1 ← ‖∂h_T/∂h_t‖₂"]
    for layer in range(2):
        for direction, arrow in enumerate("→←"):
            line = trace(fig, f"layer {layer} {arrow}")
            jac = trace(fig, f"layer {layer} {arrow} ‖∂h_T/∂h_t‖₂")
            assert list(line.x) == list(range(T)) and list(jac.x) == list(range(T))
            assert ys(line) == pytest.approx(rec.grad_norm_h[layer, direction].tolist(), rel=1e-12)
            assert ys(jac) == pytest.approx(rec.jacobian_norm[layer, direction].tolist(), rel=1e-12)
            assert jac.line.dash == "dash" and jac.line.color == line.line.color
            assert jac.legendgroup == line.legendgroup  # its layer's legend entry shows and hides it
    assert trace(fig, cg.JACOBIAN_KEY).line.dash == "dash"


def test_without_jacobians_there_are_no_dashed_lines():
    model, _ = recorded("lstm")
    x, y = engine.make_task("adding", seq_len=T).batch(4)
    fig = cg.gradient_through_time(engine.record(model, x, y, jacobians=False, spectra=True))
    assert [t.name for t in fig.data if "∂h_T" in t.name] == []


def test_theory_line_uses_the_largest_spectral_radius_of_the_recorded_weights(stacked):
    model, rec = stacked
    g = rec.grad_norm_h.double()  # [L, dirs, T]
    for layer, direction in [(0, 0), (1, 1)]:
        radii = torch.linalg.eigvals(w_hh_blocks(model, layer, direction)).abs().amax(dim=-1)  # [blocks]
        rho = float(radii.max())
        got_rho, line = cg.theory_line(rec, layer=layer, direction=direction)
        assert got_rho == pytest.approx(rho, rel=1e-6)
        t = np.arange(T)
        if direction == 0:  # forward ends at T−1, backward at 0
            expected = rho ** (T - 1 - t) * float(g[layer, direction, -1])
        else:
            expected = rho**t * float(g[layer, direction, 0])
        assert ys(line) == pytest.approx(expected, rel=1e-5)
        assert line.name.startswith(f"ρ^(T−t) theory, ρ = {got_rho:.3g}")
        assert line.line.color == cg.GREY and line.line.dash == "dot"  # told from the dashed Jacobian norms
        if rec.arch != "rnn":
            assert f"({rec.blocks[int(radii.argmax())]} block, layer {layer}" in line.name
    drawn = [t for t in cg.gradient_through_time(rec).data if t.name.startswith("ρ^(T−t) theory")]
    assert len(drawn) == 1 and ys(drawn[0]) == pytest.approx(ys(cg.theory_line(rec)[1]))
    assert not [t for t in cg.gradient_through_time(rec, theory=False).data if t.name.startswith("ρ")]


def test_theory_line_of_a_single_rnn_names_no_block():
    _, rec = recorded("rnn")
    rho, line = cg.theory_line(rec)
    assert line.name == f"ρ^(T−t) theory, ρ = {rho:.3g}"


def test_eigenvalues_are_those_of_each_block_of_w_hh_with_the_unit_circle(stacked):
    model, rec = stacked
    fig = cg.eigenvalue_plane(rec)
    assert_readable(fig, "Re λ", "Im λ")
    assert fig.layout.yaxis.scaleanchor == "x" and fig.layout.yaxis.scaleratio == 1
    circle = trace(fig, "unit circle, |λ| = 1")
    assert np.hypot(circle.x, circle.y) == pytest.approx(1.0)
    assert np.ptp(circle.x) == pytest.approx(2.0) and np.ptp(circle.y) == pytest.approx(2.0, rel=1e-3)
    points = [t for t in fig.data if t.mode == "markers"]
    assert len(points) == 2 * 2 * GATES[rec.arch]
    largest = 0.0
    for layer in range(2):
        for direction, arrow in enumerate("→←"):
            for b, lam in enumerate(torch.linalg.eigvals(w_hh_blocks(model, layer, direction))):
                name = block_name(rec, b, layer, arrow)
                got = trace(fig, name)
                assert as_set(got.x, got.y) == pytest.approx(as_set(lam.real, lam.imag), abs=2e-5)
                assert np.asarray(got.customdata) == pytest.approx(np.hypot(got.x, got.y), rel=1e-5)
                assert "|λ|" in got.hovertemplate and rec.blocks[b] in got.hovertemplate
                largest = max(largest, float(lam.abs().max()))
    assert f"spectral radius ρ = {largest:.3g}" in fig.layout.title.text
    [arrow] = fig.layout.annotations  # at the eigenvalue whose modulus is ρ
    assert abs(complex(arrow.x, arrow.y)) == pytest.approx(largest, rel=1e-5) and arrow.text.startswith("ρ")


@pytest.mark.parametrize("arch, layers", [("rnn", 1), ("lstm", 2)])
def test_the_rho_label_points_into_the_circle_and_the_legend_is_under_the_plane(arch, layers):
    """In half a page at 1024 px the legend at the right squeezed the plane to a sliver, and the
    ρ label, set up and to the right of its eigenvalue, ran into that legend."""
    _, rec = recorded(arch, num_layers=layers, bidirectional=layers > 1)
    fig = cg.eigenvalue_plane(rec)
    [arrow] = fig.layout.annotations
    assert arrow.ax * arrow.x <= 0 and arrow.ay * arrow.y >= 0  # towards 0 (ay counts down): inside the circle
    assert abs(arrow.ax) + abs(arrow.ay) > 0  # px from the point, away from it
    legend = fig.layout.legend
    assert legend.orientation == "h" and legend.yanchor == "top"
    plot_px = fig.layout.height - fig.layout.margin.t - fig.layout.margin.b
    assert -legend.y * plot_px >= UNDER_AXIS  # under the axis title


def test_training_step_axes_tick_whole_steps(over_training):
    """After a Step or two the ratio's axis read -1, -0.5, 0, 0.5, 1: a step has no halves."""
    ratios, norms = over_training
    first = ratios[ratios["step"] == ratios["step"].min()]
    for fig in (cg.gradient_ratio_over_training(first), cg.parameter_gradient_norms(norms.head(3))):
        assert fig.layout.xaxis.dtick == 1 and fig.layout.xaxis.tickformat == "d"


def test_singular_values_are_those_of_each_block_largest_first(stacked):
    model, rec = stacked
    fig = cg.singular_values(rec)
    assert_readable(fig, "index (largest first)", "σ")
    for layer in range(2):
        for direction, arrow in enumerate("→←"):
            for b, sigma in enumerate(torch.linalg.svdvals(w_hh_blocks(model, layer, direction))):
                name = block_name(rec, b, layer, arrow)
                got = trace(fig, name)
                assert list(got.x) == list(range(1, 7))
                assert ys(got) == pytest.approx(sigma.tolist(), rel=1e-5)
    assert len([s for s in fig.layout.shapes if s.y0 == s.y1 == 1]) == 1
    assert "σ = 1: neither grows nor shrinks" in annotation_text(fig)


def test_vanishing_band_is_below_a_thousandth_of_the_largest_and_exploding_only_when_reached():
    _, rec = recorded("lstm")
    fig = cg.gradient_through_time(rec)
    largest = float(rec.grad_norm_h.max())
    [vanishing] = fig.layout.shapes
    assert vanishing.y1 == pytest.approx(1e-3 * largest) and vanishing.y0 < vanishing.y1 / 4  # in view
    assert "vanishing: < 1/1000 of the largest" in annotation_text(fig) and "exploding" not in annotation_text(fig)

    grad_h = rec.main.grad_h.clone()
    grad_h[0, 0, 0] *= 1e4 * grad_h[0, 0, -1].norm() / grad_h[0, 0, 0].norm()  # now ‖∂L/∂h_0‖ = 10⁴ ‖∂L/∂h_T‖
    exploding = dataclasses.replace(rec, stacks={"rnn": dataclasses.replace(rec.main, grad_h=grad_h)})
    fig = cg.gradient_through_time(exploding)
    threshold = 1e3 * float(exploding.grad_norm_h[0, 0, -1])
    [band] = [s for s in fig.layout.shapes if s.y0 == pytest.approx(threshold)]
    assert band.y1 >= float(exploding.grad_norm_h.max())
    assert "exploding: > 1000 × ‖∂L/∂h_T‖ of layer 0 →" in annotation_text(fig)


def test_exact_zeros_are_drawn_at_a_tenth_of_the_smallest_and_marked():
    _, rec = recorded("rnn", num_layers=2)
    grad_h = rec.main.grad_h.clone()
    grad_h[0, 0, :4] = 0.0  # nothing reaches layer 0's first four steps
    zeros = dataclasses.replace(rec, stacks={"rnn": dataclasses.replace(rec.main, grad_h=grad_h)})
    fig = cg.gradient_through_time(zeros)
    norms = zeros.grad_norm_h
    positive = torch.cat([norms[norms > 0], zeros.jacobian_norm[zeros.jacobian_norm > 0]])
    floor = float(positive.min()) / 10
    line = trace(fig, "layer 0 →")
    assert ys(line)[:4] == pytest.approx([floor] * 4) and ys(line)[4:] == pytest.approx(norms[0, 0, 4:].tolist())
    assert list(line.customdata[:4]) == [0.0] * 4  # the hover shows the exact value ...
    assert all("exactly 0" in s for s in line.text[:4]) and not any(line.text[4:])  # ... and says why
    [marks] = [t for t in fig.data if t.name.startswith("exactly 0")]
    assert list(marks.x) == [0, 1, 2, 3] and ys(marks) == pytest.approx([floor] * 4)
    assert fig.layout.yaxis.range[0] <= np.log10(floor)  # in view


def test_encoder_decoder_plots_the_stack_asked_for(encdec):
    model, rec = encdec
    for stack in ("encoder", "decoder"):
        fig = cg.gradient_through_time(rec, stack)
        assert f"of the {stack}" in fig.layout.title.text
        assert ys(trace(fig, "layer 0 →")) == pytest.approx(rec.stacks[stack].grad_norm_h[0, 0].tolist(), rel=1e-12)
        eig = cg.eigenvalue_plane(rec, stack)
        assert f"the {stack}'s W_hh" in eig.layout.title.text
        for b, lam in enumerate(torch.linalg.eigvals(w_hh_blocks(model, 0, 0, prefix=stack))):
            got = trace(eig, f"{rec.stacks[stack].blocks[b]} block")
            assert as_set(got.x, got.y) == pytest.approx(as_set(lam.real, lam.imag), abs=2e-5)
        sv = cg.singular_values(rec, stack)
        assert f"the {stack}'s W_hh" in sv.layout.title.text
        assert ys(trace(sv, "r block")) == pytest.approx(rec.stacks[stack].singular_values[0, 0, 0].tolist())
    assert len(rec.stacks["decoder"].grad_norm_h[0, 0]) != len(rec.stacks["encoder"].grad_norm_h[0, 0])
    with pytest.raises(ValueError, match="encoder, decoder"):
        cg.gradient_through_time(rec, "rnn")


@pytest.fixture(scope="module")
def over_training():
    """Every 3 steps of 9: the ratio ‖∂L/∂h_1‖ / ‖∂L/∂h_T‖ of two cells, and the LSTM's
    per-parameter gradient norms, from real recordings."""
    ratios, norms = [], []
    for arch in ("rnn", "lstm"):
        task = engine.make_task("adding", seq_len=T)
        model = engine.build_model(engine.ModelConfig(arch=arch, hidden_size=6), task, seed=0)
        trainer = engine.Trainer(model, task, engine.TrainConfig(optimizer="adam", lr=1e-2, batch_size=8, seed=0))
        x, y = task.batch(4)
        for step in range(0, 10, 3):
            trainer.step(3 if step else 0)
            rec = engine.record(model, x, y, jacobians=False)
            g = rec.grad_norm_h[0, 0]
            ratios.append(dict(step=step, arch=arch, ratio=float(g[0] / g[-1])))
            norms += [dict(step=step, parameter=k, value=v) for k, v in rec.param_grad_norm.items()] * (arch == "lstm")
    return pd.DataFrame(ratios), pd.DataFrame(norms)


def test_ratio_over_training_plots_the_frame(over_training):
    ratios, _ = over_training
    fig = cg.gradient_ratio_over_training(ratios)
    assert_readable(fig, "training step", "‖∂L/∂h_1‖ / ‖∂L/∂h_T‖ (log)")
    assert fig.layout.title.text == "How much gradient reaches the first step, over training"
    assert fig.layout.yaxis.type == "log"
    for arch in ("rnn", "lstm"):
        rows = ratios[ratios["arch"] == arch]
        line = trace(fig, arch)
        assert list(line.x) == list(rows["step"]) and ys(line) == pytest.approx(rows["ratio"].tolist(), rel=1e-12)
        assert "markers" in line.mode
    renamed = cg.gradient_ratio_over_training(ratios.rename(columns={"arch": "run"}))
    assert [t.name for t in renamed.data] == ["rnn", "lstm"]


def test_parameter_gradient_norms_plot_the_frame(over_training):
    _, norms = over_training
    fig = cg.parameter_gradient_norms(norms)
    assert_readable(fig, "training step", "‖∂L/∂W‖ (log)")
    assert fig.layout.title.text == "Gradient norm per parameter" and fig.layout.yaxis.type == "log"
    assert [t.name for t in fig.data] == list(dict.fromkeys(norms["parameter"]))
    for name, rows in norms.groupby("parameter"):
        assert ys(trace(fig, name)) == pytest.approx(rows["value"].tolist(), rel=1e-12)
    # under the plot, past the axis title (at the right, in a half-page column it scrolled at 1024 px)
    assert fig.layout.legend.orientation == "h" and fig.layout.legend.y < 0 and fig.layout.legend.yanchor == "top"


def test_compare_runs_overlays_each_run_and_marks_zeros():
    curves = []
    for run, arch, activation in [("tanh RNN", "rnn", "tanh"), ("ReLU RNN", "rnn", "relu"), ("LSTM", "lstm", "tanh"),
                                  ("GRU", "gru", "tanh")]:
        _, rec = recorded(arch, activation=activation)
        curves += [dict(run=run, t=t, value=float(v)) for t, v in enumerate(rec.grad_norm_h[0, 0])]
    curves = pd.DataFrame(curves)
    curves.loc[0, "value"] = 0.0
    fig = cg.compare_runs(curves)
    assert_readable(fig, "time step t", "‖∂L/∂h_t‖ (log)")
    assert fig.layout.title.text == "Vanishing gradients: four cells, same task and budget"
    for run, rows in curves.groupby("run"):
        assert np.asarray(trace(fig, run).customdata) == pytest.approx(rows["value"].tolist(), rel=1e-12)
    floor = curves["value"][curves["value"] > 0].min() / 10
    assert ys(trace(fig, "tanh RNN"))[0] == pytest.approx(floor)
    [marks] = [t for t in fig.data if t.name.startswith("exactly 0")]
    assert list(marks.x) == [0] and list(marks.text) == ["tanh RNN"]


@pytest.mark.parametrize("build, columns", [
    (cg.gradient_ratio_over_training, ["step", "run", "ratio"]),
    (cg.parameter_gradient_norms, ["step", "parameter", "value"]),
    (cg.compare_runs, ["run", "t", "value"]),
])
def test_empty_frames_show_axes_and_a_hint(build, columns):
    for frame in (pd.DataFrame(columns=columns), pd.DataFrame()):
        fig = build(frame)
        assert not fig.data and "No training steps yet" in annotation_text(fig)
        assert fig.layout.title.text and fig.layout.yaxis.type == "log"


# ---------------------------------------------------------------- truncated BPTT, clipping, initialisation

@pytest.fixture(scope="module")
def full_and_cut():
    """One sample of a 2-layer LSTM on the adding problem, recorded under full BPTT and cut every 5 steps."""
    task = engine.make_task("adding", seq_len=T)
    model = engine.build_model(engine.ModelConfig(arch="lstm", hidden_size=6, num_layers=2), task, seed=0)
    x, y = task.batch(4)
    return engine.record(model, x, y, index=2), engine.record(model, x, y, index=2, bptt_window=5)


def test_truncated_bptt_overlays_both_recordings_with_a_line_at_every_cut(full_and_cut):
    full, cut = full_and_cut
    fig = cg.truncated_bptt(full, cut, 5)
    assert_readable(fig, "time step t", "‖∂L/∂h_t‖ (log)")
    assert fig.layout.title.text == "Truncated backpropagation: the gradient cut every 5 steps"
    assert fig.layout.yaxis.type == "log"
    for layer in range(2):
        whole, truncated = trace(fig, f"layer {layer} → full BPTT"), trace(fig, f"layer {layer} → truncated")
        assert list(whole.x) == list(range(T)) and list(truncated.x) == list(range(T))
        assert list(whole.customdata) == pytest.approx(full.grad_norm_h[layer, 0].tolist(), rel=1e-12)
        assert list(truncated.customdata) == pytest.approx(cut.grad_norm_h[layer, 0].tolist(), rel=1e-12)
        assert truncated.line.dash == "dash" and truncated.line.color == whole.line.color
        assert truncated.line.width > whole.line.width
    assert sorted(s.x0 for s in fig.layout.shapes) == [4.5, 9.5]  # chunks [0,5) [5,10) [10,12)
    assert all(s.x0 == s.x1 and s.line.dash == "dot" for s in fig.layout.shapes)
    assert trace(fig, cg.CUT_KEY).line.dash == "dot"
    # seq2vec: nothing reaches the steps before the last cut; drawn at a tenth of the smallest value
    values = torch.cat([full.grad_norm_h.flatten(), cut.grad_norm_h.flatten()]).double()
    floor = float(values[values > 0].min()) / 10
    assert ys(trace(fig, "layer 0 → truncated"))[:10] == pytest.approx([floor] * 10)
    [marks] = [t for t in fig.data if t.name.startswith("exactly 0")]
    assert sorted(marks.x) == sorted(list(range(10)) * 2)


def test_truncated_bptt_with_a_window_of_T_or_more_cuts_nothing(full_and_cut):
    full, _ = full_and_cut
    fig = cg.truncated_bptt(full, full, T)
    assert not fig.layout.shapes and f"a window of {T} ≥ T = {T} cuts nothing" in fig.layout.title.text
    assert not [t for t in fig.data if t.name == cg.CUT_KEY]


def test_truncated_bptt_refuses_recordings_of_different_samples(full_and_cut):
    full, _ = full_and_cut
    _, other = recorded("lstm", seq_len=T + 1)
    with pytest.raises(ValueError, match="same sample"):
        cg.truncated_bptt(full, other, 5)


def test_clipped_steps_are_those_clip_grad_norm_rescaled():
    """The frame marks each step clipping rescaled; the history counts them over every step."""
    task = engine.make_task("adding", seq_len=T)
    model = engine.build_model(engine.ModelConfig(arch="rnn", hidden_size=6), task, seed=0)
    clip = 1.0
    trainer = engine.Trainer(model, task, engine.TrainConfig(optimizer="adam", lr=1e-2, batch_size=8, clip_norm=clip))
    trainer.step(30)
    history = trainer.history_frame()
    over = [s.grad_norm > clip for s in trainer.history]  # torch rescales exactly the steps above the threshold
    assert 0 < sum(over) < 30  # a mix, so the count means something
    assert (trainer.history.clipped, trainer.history.applied) == (sum(over), 30)  # counted over every step
    frame = cg.clipping_frame(history)
    assert list(frame["clipped"]) == over
    assert frame.loc[frame["clipped"], "grad_norm_clipped"].tolist() == pytest.approx([clip] * sum(over), rel=1e-4)
    assert list(frame["grad_norm"]) == list(history["grad_norm"])
    fresh = engine.Trainer(model, task, trainer.cfg).history
    assert (fresh.clipped, fresh.applied) == (0, 0)


def test_a_diverged_step_counts_neither_as_clipped_nor_applied():
    """The exploding-gradients lesson's network: its second step diverges."""
    task = engine.make_task("adding", seq_len=50)
    model = engine.build_model(engine.ModelConfig(arch="rnn", activation="relu", hidden_size=64, init="identity"),
                               task, seed=0)
    trainer = engine.Trainer(model, task, engine.TrainConfig(optimizer="sgd", lr=0.01, batch_size=64, clip_value=1e6))
    trainer.step(2)
    assert [s.diverged for s in trainer.history] == [False, True]
    assert (trainer.history.clipped, trainer.history.applied) == (0, 1)
    assert not cg.clipping_frame(trainer.history_frame())["clipped"].any()


def test_initialisation_gradients_plot_each_scheme_and_thicken_yours():
    task = engine.make_task("adding", seq_len=T)
    x, y = task.batch(2)
    schemes = {"default (yours)": dict(), "orthogonal": dict(init="orthogonal"), "forget bias 3": dict(forget_bias=3.0)}
    rows = []
    for name, changes in schemes.items():
        model = engine.build_model(engine.ModelConfig(arch="lstm", hidden_size=6, **changes), task, seed=0)
        g = engine.record(model, x, y, jacobians=False).grad_norm_h[0, 0]
        rows += [dict(init=name, yours=name.endswith("(yours)"), t=t, value=float(v)) for t, v in enumerate(g)]
    curves = pd.DataFrame(rows)
    fig = cg.initialisation_gradients(curves)
    assert_readable(fig, "time step t", "‖∂L/∂h_t‖ (log)")
    assert fig.layout.yaxis.type == "log" and fig.layout.title.text.startswith("At initialisation")
    assert [t.name for t in fig.data] == list(schemes)
    for name, rows in curves.groupby("init"):
        line = trace(fig, name)
        assert list(line.x) == list(range(T)) and list(line.customdata) == pytest.approx(rows["value"].tolist())
    assert trace(fig, "default (yours)").line.width > trace(fig, "orthogonal").line.width
    assert len({trace(fig, n).line.color for n in schemes}) == 3


# ---------------------------------------------------------------- both directions (issue 12, item 4)

def reading_order(rec) -> dict[str, float]:
    """Each direction's first step read over its last, computed here: forward t = 0 over t = T-1;
    backward reads from the end, so t = T-1 over t = 0."""
    g = rec.grad_norm_h[0].double()  # [directions, T]
    return {"ratio": float(g[0, 0] / g[0, -1]), "ratio_backward": float(g[1, -1] / g[1, 0])}


def test_the_ratio_of_a_bidirectional_network_draws_both_directions_in_reading_order():
    rows = []
    for step in (0, 5):
        _, rec = recorded("rnn", steps=step, bidirectional=True)
        rows.append(dict(step=step, run="RNN", **reading_order(rec)))
    points = pd.DataFrame(rows)
    fig = cg.gradient_ratio_over_training(points)
    forward, backward = trace(fig, "RNN →"), trace(fig, "RNN ← (first step read: t = T−1)")
    assert ys(forward) == pytest.approx(list(points.ratio), rel=1e-12)
    assert ys(backward) == pytest.approx(list(points.ratio_backward), rel=1e-12)
    assert list(backward.x) == [0, 5] and backward.line.dash == "dash" and forward.line.dash == "solid"
    assert backward.line.color == forward.line.color  # one colour per run
    assert fig.layout.yaxis.title.text == "‖∂L/∂h‖ of the first step read / of the last (log)"
    # a unidirectional log keeps one line per run, named for the run
    assert [t.name for t in cg.gradient_ratio_over_training(points.drop(columns="ratio_backward")).data] == ["RNN"]


def test_compare_runs_draws_each_runs_backward_direction_dashed():
    curves = []
    for run, arch in (("tanh RNN", "rnn"), ("GRU", "gru")):
        _, rec = recorded(arch, bidirectional=True)
        for d, direction in enumerate(("forward", "backward")):
            curves += [dict(run=run, direction=direction, t=t, value=float(v))
                       for t, v in enumerate(rec.grad_norm_h[0, d])]
    curves = pd.DataFrame(curves)
    fig = cg.compare_runs(curves)
    assert [t.name for t in fig.data] == ["tanh RNN →", "tanh RNN ← (first step read: t = T−1)", "GRU →",
                                          "GRU ← (first step read: t = T−1)"]
    for (run, direction), rows in curves.groupby(["run", "direction"]):
        line = trace(fig, cg.directed(run, direction))
        assert np.asarray(line.customdata) == pytest.approx(rows["value"].tolist(), rel=1e-12)
        assert line.line.dash == ("dash" if direction == "backward" else "solid")
    assert fig.layout.title.text == "Vanishing gradients: two cells, same task and budget"


def test_the_jacobian_lines_and_the_theory_line_differ_by_more_than_colour(stacked):
    """The two dashed lines of the BPTT chart were told apart only by colour, and the legend's
    'dashed' key matched neither."""
    _, rec = stacked
    fig = cg.gradient_through_time(rec, theory=True)
    jacobian = [t for t in fig.data if t.name.endswith("‖∂h_T/∂h_t‖₂") and t.name != cg.JACOBIAN_KEY]
    key = trace(fig, cg.JACOBIAN_KEY)
    theory = next(t for t in fig.data if t.name.startswith("ρ^(T−t) theory"))
    assert jacobian and all(t.line.dash == key.line.dash == "dash" for t in jacobian)
    assert all(t.marker.symbol == key.marker.symbol == "circle-open" for t in jacobian)
    assert theory.line.dash == "dot" and theory.mode == "lines"  # no markers, another dash


def test_compare_cells_figures_keep_their_legends_under_the_plot():
    """Compare cells draws its three figures in half a page: a legend at the right left 60-80 px
    of plot at 1024 px (issue 28, item 4); under the x axis's title it takes none of the width."""
    from app.charts import runs as charts_runs

    runs = ["tanh RNN", "ReLU RNN", "LSTM", "GRU"]
    log = pd.DataFrame([dict(step=s, run=r, ratio=10.0 ** -(s + k), loss=1.0 / (s + 1)) for s in (1, 2)
                        for k, r in enumerate(runs)])
    curves = pd.DataFrame([dict(run=r, t=t, value=10.0 ** -t) for r in runs for t in range(5)])
    for fig in (cg.compare_runs(curves), cg.gradient_ratio_over_training(log),
                charts_runs.loss_over_training(log, "MSE", baseline=0.17)):
        legend = fig.layout.legend
        assert legend.orientation == "h" and legend.y < 0 and legend.yanchor == "top", fig.layout.title.text
        assert fig.layout.margin.b >= UNDER_AXIS, fig.layout.title.text  # room under the axis title for it


def test_singular_values_keep_their_legend_under_the_plot_beside_the_plane():
    """Beside the eigenvalue plane, in half a page at 1024 px, a legend at the right left about 90 px
    of plot (issue 28, item 4): under it, like the plane's, with the plane's height."""
    _, rec = recorded("lstm")
    fig, plane = cg.singular_values(rec), cg.eigenvalue_plane(rec)
    legend = fig.layout.legend
    assert legend.orientation == "h" and legend.yanchor == "top"
    plot_px = fig.layout.height - fig.layout.margin.t - fig.layout.margin.b
    assert -legend.y * plot_px >= UNDER_AXIS  # under the axis title
    assert plot_px == plane.layout.height - plane.layout.margin.t - plane.layout.margin.b
