"""The figure builders plot exactly the numbers they are given, from really trained models."""
import dataclasses
import re

import numpy as np
import pandas as pd
import pytest

import engine
import engine.build
from app.charts import network as charts_network
from app.charts import training as charts_training


def trained(arch="lstm", task="adding", steps=30, optimizer="adam", lr=1e-2, clip_norm=None, **model):
    t = engine.make_task(task, seq_len=12)
    m = engine.build_model(engine.ModelConfig(arch=arch, hidden_size=8, **model), t, seed=0)
    train = engine.TrainConfig(optimizer=optimizer, lr=lr, batch_size=8, clip_norm=clip_norm)
    trainer = engine.Trainer(m, t, train)
    trainer.step(steps)
    return trainer


def diverged_trainer():
    """A relu RNN that trains calmly for 10 SGD steps, then explodes once the rate is raised."""
    trainer = trained("rnn", steps=10, optimizer="sgd", lr=0.05, activation="relu", init="identity")
    trainer.retune(dataclasses.replace(trainer.cfg, lr=100.0))
    trainer.step(100)
    assert trainer.diverged_at is not None and trainer.diverged_at > 10
    return trainer


def trace(fig, name):
    [found] = [t for t in fig.data if t.name == name]
    return found


def xy(fig, name):
    t = trace(fig, name)
    return np.asarray(t.x, dtype=float), np.asarray(t.y, dtype=float)


def annotation_text(fig) -> str:
    return "\n".join(a.text or "" for a in fig.layout.annotations)


def assert_readable(fig):
    assert fig.layout.title.text
    assert fig.layout.template.layout.paper_bgcolor == "white"  # plotly_white
    assert fig.layout.height and fig.layout.height <= 800


def test_training_curves_plot_the_history_and_the_baseline():
    trainer = trained(clip_norm=1.0)
    h = trainer.history_frame()
    fig = charts_training.training_curves(h, "R²", baseline_loss=1 / 6)
    x, y = xy(fig, "training loss")
    np.testing.assert_array_equal(x, h["step"])
    np.testing.assert_array_equal(y, h["loss"])
    x, y = xy(fig, "training R²")
    np.testing.assert_array_equal(x, h["step"])
    np.testing.assert_array_equal(y, h["metric"])
    _, base = xy(fig, "baseline")
    assert list(base) == [1 / 6, 1 / 6] and trace(fig, "baseline").line.dash == "dash"
    assert "baseline" in annotation_text(fig)
    assert fig.layout.yaxis.type == "log"  # every loss > 0
    assert "loss" in fig.layout.yaxis.title.text and "MSE" in fig.layout.yaxis.title.text
    assert "R²" in fig.layout.yaxis2.title.text
    assert "step" in fig.layout.xaxis.title.text and "step" in fig.layout.xaxis2.title.text
    assert "%{y" in trace(fig, "training loss").hovertemplate
    assert_readable(fig)
    assert fig.layout.height == 360  # the legend under the panels


def test_accuracy_axis_runs_from_0_to_1():
    h = trained("gru", task="parity", steps=10).history_frame()
    fig = charts_training.training_curves(h, "accuracy")
    np.testing.assert_array_equal(xy(fig, "training accuracy")[1], h["metric"])
    low, high = fig.layout.yaxis2.range
    assert low == 0 and 1 <= high <= 1.05
    assert "cross-entropy" in fig.layout.yaxis.title.text


def test_linear_loss_axis_when_a_loss_is_zero():
    h = trained(steps=5).history_frame()
    h.loc[2, "loss"] = 0.0
    assert charts_training.training_curves(h, "R²").layout.yaxis.type == "linear"


@pytest.mark.parametrize("rows, expect_all", [(2000, True), (2001, False), (7919, False)])
def test_long_histories_are_downsampled_keeping_the_last_step(rows, expect_all):
    real = trained(steps=40, clip_norm=1.0).history_frame()
    h = pd.concat([real] * (rows // len(real) + 1), ignore_index=True).iloc[:rows]
    h["step"] = np.arange(1, rows + 1)
    by_step = h.set_index("step")
    for fig, columns in (
        (charts_training.training_curves(h, "R²"), {"training loss": "loss", "training R²": "metric"}),
        (charts_training.gradient_norm_curve(h, 1.0),
         {"before clipping": "grad_norm", "after clipping": "grad_norm_clipped"}),
    ):
        for name, column in columns.items():
            x, y = xy(fig, name)
            assert len(x) <= 2000 and (len(x) == rows) == expect_all
            assert x[0] == 1 and x[-1] == rows  # first and last step always drawn
            assert np.all(np.diff(x) > 0)
            np.testing.assert_array_equal(y, by_step.loc[x.astype(int), column])
    title = charts_training.training_curves(h, "R²").layout.title.text
    assert ("drawn" in title) != expect_all


def test_gradient_norm_curve_before_and_after_clipping():
    trainer = trained(clip_norm=0.5)
    h = trainer.history_frame()
    assert (h["grad_norm"] > 0.5).any()  # so clipping really happened
    fig = charts_training.gradient_norm_curve(h, 0.5)
    x, before = xy(fig, "before clipping")
    np.testing.assert_array_equal(x, h["step"])
    np.testing.assert_array_equal(before, h["grad_norm"])
    np.testing.assert_array_equal(xy(fig, "after clipping")[1], h["grad_norm_clipped"])
    _, clip = xy(fig, "clip threshold")
    assert list(clip) == [0.5, 0.5] and trace(fig, "clip threshold").line.dash == "dash"
    assert fig.layout.yaxis.type == "log" and fig.layout.yaxis.title.text and fig.layout.xaxis.title.text
    assert_readable(fig)
    assert "clip threshold" not in {t.name for t in charts_training.gradient_norm_curve(h, None).data}


def test_diverged_step_is_marked_at_the_top_of_the_axis():
    trainer = diverged_trainer()
    h = trainer.history_frame()
    loss_fig = charts_training.training_curves(h, "R²", baseline_loss=1 / 6)
    x, y = xy(loss_fig, "diverged")
    assert list(x) == [trainer.diverged_at]
    axis = loss_fig.layout.yaxis
    top = 10 ** axis.range[1] if axis.type == "log" else axis.range[1]
    assert y[0] == pytest.approx(top)
    assert trace(loss_fig, "diverged").xaxis == "x"  # the loss panel
    assert "diverged" in trace(loss_fig, "diverged").hovertemplate
    np.testing.assert_array_equal(xy(loss_fig, "training loss")[1], h["loss"])  # still every step

    grad_fig = charts_training.gradient_norm_curve(h, None)
    x, y = xy(grad_fig, "diverged")
    assert list(x) == [trainer.diverged_at] and y[0] == pytest.approx(10 ** grad_fig.layout.yaxis.range[1])


@pytest.mark.parametrize("history", [pd.DataFrame(), None], ids=["empty frame", "fresh trainer"])
def test_empty_history_shows_axes_and_a_hint(history):
    if history is None:
        history = trained(steps=0).history_frame()
    figures = (charts_training.training_curves(history, "R²", baseline_loss=1 / 6),
               charts_training.gradient_norm_curve(history, 1.0))
    for fig in figures:
        text = annotation_text(fig).replace("<br>", " ")
        assert "No training steps yet — press Step or Play" in text
        assert fig.layout.xaxis.title.text and fig.layout.yaxis.title.text
        assert "diverged" not in {t.name for t in fig.data}
    assert charts_training.training_curves(history, "R²").layout.yaxis2.title.text


MODELS = {
    "lstm adding": (engine.ModelConfig(arch="lstm", hidden_size=8), "adding"),
    "bi 2-layer lstm tokens": (
        engine.ModelConfig(arch="lstm", hidden_size=8, num_layers=2, bidirectional=True), "masked_lm"
    ),
    "peephole 3-layer": (engine.ModelConfig(arch="lstm", hidden_size=6, num_layers=3, peephole=True), "recall"),
    "relu rnn seq2seq": (engine.ModelConfig(arch="rnn", hidden_size=5, activation="relu"), "sine"),
    "gru encdec": (engine.ModelConfig(arch="gru", hidden_size=8, num_layers=2), "reverse"),
    "bi lstm encdec": (engine.ModelConfig(arch="lstm", hidden_size=8, bidirectional=True), "reverse"),
}


def build(name):
    cfg, task = MODELS[name]
    return engine.build_model(cfg, engine.make_task(task), seed=0)


def rect_names(fig):
    return [s.name for s in fig.layout.shapes if s.type == "rect"]


@pytest.mark.parametrize("name", MODELS)
def test_diagram_and_table_count_every_parameter(name):
    model = build(name)
    total = sum(p.numel() for p in model.parameters())
    fig = charts_network.network_diagram(model)
    counted = re.search(r"— ([\d,]+) parameters", fig.layout.title.text).group(1)
    assert int(counted.replace(",", "")) == total
    assert model.cfg.arch.upper() in fig.layout.title.text
    assert fig.layout.xaxis.visible is False and fig.layout.yaxis.visible is False
    assert_readable(fig)

    table = charts_network.layer_table(model)
    assert list(table.columns) == ["part", "shape", "parameters"]
    assert table["parameters"].sum() == total
    named = dict(model.named_parameters())
    groups = model.param_groups()
    assert list(table["part"]) == list(groups)
    for part, count in zip(table["part"], table["parameters"], strict=True):
        assert count == sum(named[n].numel() for n in groups[part])

    text = annotation_text(fig)
    for names in groups.values():  # every box states its own count (one direction's)
        forward = sum(named[n].numel() for n in names if not n.endswith("_reverse"))
        assert f"{forward:,} params" in text
    hover = " ".join(trace(fig, "parts").hovertext)
    assert all(n in hover for n in named)  # hovering lists every parameter tensor


def test_bidirectional_two_layer_lstm_has_four_recurrent_boxes():
    model = build("bi 2-layer lstm tokens")
    fig = charts_network.network_diagram(model)
    layers = [n for n in rect_names(fig) if "layer" in n]
    assert sorted(layers) == ["layer 0 backward", "layer 0 forward", "layer 1 backward", "layer 1 forward"]
    assert "bidirectional" in fig.layout.title.text and "2 layers × 8 units" in fig.layout.title.text
    text = annotation_text(fig)
    vocab = model.spec.input_size  # the masked task's 4,000 words
    assert "forward →" in text and "← backward" in text and f"tokens: vocab {vocab}" in text
    assert f"→ {vocab} classes" in text
    shapes = list(charts_network.layer_table(model)["shape"])
    assert shapes == [f"vocab {vocab} → 16", "16 → 2 × 8", "16 → 2 × 8", f"16 → {vocab}"]


def test_unidirectional_diagram_has_one_box_per_layer_and_names_its_input():
    fig = charts_network.network_diagram(build("peephole 3-layer"))
    assert [n for n in rect_names(fig) if "layer" in n] == ["layer 0", "layer 1", "layer 2"]
    assert "x_t: 8 values" in annotation_text(fig)
    assert charts_network.network_diagram(build("lstm adding")).layout.height <= 320  # 3 rows stay compact
    assert "→ 1 value" in annotation_text(charts_network.network_diagram(build("lstm adding")))


@pytest.mark.parametrize("key", list(engine.build.MODELS), ids=" / ".join)
def test_every_class_build_model_can_return_is_drawn_from_its_description(key):
    """Attention models and transformers too: the diagram and the table read model.describe(),
    never parameter names (which raised StopIteration for every attention model and transformer)."""
    family, shape = key
    kind = dict(arch="transformer", num_heads=2) if family == "transformer" else dict(arch="gru")
    attention = "additive" if "attention" in shape or "pointer" in shape else None
    cfg = engine.ModelConfig(**kind, hidden_size=8, num_layers=2, attention=attention)
    task = "sort" if "pointer" in shape else "reverse" if "encoder" in shape else "charlm"
    model = engine.build_model(cfg, engine.make_task(task), seed=0)
    assert type(model) is engine.build.MODELS[key]
    fig, table = charts_network.network_diagram(model), charts_network.layer_table(model)
    total = sum(p.numel() for p in model.parameters())
    assert f"— {total:,} parameters" in fig.layout.title.text and table["parameters"].sum() == total
    names = set(rect_names(fig))
    assert {p.name for p in model.describe() if p.kind not in ("input", "recurrent")} <= names
    assert all(any(n.startswith(p.name) for n in names) for p in model.describe() if p.kind == "recurrent")
    hover = " ".join(trace(fig, "parts").hovertext)
    assert all(name in hover for name, _ in model.named_parameters())
    assert_readable(fig)


def test_a_bidirectional_seq2vec_head_says_which_states_it_reads():
    """The head reads [h→_T ; h←_0]: the backward direction's state at t = 0 has read the whole
    sequence (from the model's own description, so the picture cannot drift from the model)."""
    model = engine.build_model(engine.ModelConfig(arch="rnn", hidden_size=4, bidirectional=True),
                               engine.make_task("recall"), seed=0)
    text = annotation_text(charts_network.network_diagram(model))
    assert "reads [h→<sub>T</sub> ; h←<sub>0</sub>]" in text


def test_encoder_decoder_diagram_shows_both_stacks_and_the_context():
    fig = charts_network.network_diagram(build("gru encdec"))
    names = rect_names(fig)
    assert {"encoder layer 0", "encoder layer 1", "decoder layer 0", "decoder layer 1", "head"} <= set(names)
    assert "context" in annotation_text(fig)
    assert "encoder-decoder" in fig.layout.title.text
    boxes = {s.name: s for s in fig.layout.shapes if s.type == "rect"}
    assert boxes["encoder layer 1"].x1 < boxes["decoder layer 1"].x0  # side by side
    assert boxes["encoder layer 1"].y0 == boxes["decoder layer 1"].y0


def test_a_thinned_history_is_drawn_evenly_over_the_steps():
    """Past 4096 steps the Trainer keeps the latest steps densely and older ones at a stride: the
    curve still spreads its points evenly over the steps trained, not over the kept rows."""
    from engine.history import History, StepStats

    history = History()
    for step in range(1, 20_001):
        history.add(StepStats(step, 1.0 / step, 0.5, 1.0, 1.0, diverged=False))
    frame = history.frame()
    assert len(frame) < 5000 and frame["step"].iloc[-1] == 20_000  # thinned, the last kept
    x, y = xy(charts_training.training_curves(frame, "R²"), "training loss")
    assert x[0] == 1 and x[-1] == 20_000
    np.testing.assert_allclose(y, 1.0 / x)
    first_half = np.mean(x <= 10_000)
    assert 0.45 < first_half < 0.55  # evenly by rows, the dense last quarter would take most points


@pytest.mark.parametrize("steps", [0, 1, 3, 7, 12, 20])
def test_the_step_axis_has_whole_number_ticks_early_on(steps):
    """Before a few steps plotly's automatic ticks fall at 0.5, 1.5...: a step is a whole number."""
    h = trained(steps=steps, clip_norm=1.0).history_frame()
    for fig in (charts_training.training_curves(h, "R²"), charts_training.gradient_norm_curve(h, 1.0)):
        for axis in (fig.layout.xaxis, *([fig.layout.xaxis2] if "xaxis2" in fig.layout else [])):
            assert axis.dtick >= 1 and float(axis.dtick).is_integer() and float(axis.tick0).is_integer()
            assert max(steps, 10) / axis.dtick <= 10 and axis.tickformat == "d"  # at most 11 ticks


def test_the_step_axis_is_left_to_plotly_once_its_ticks_are_whole_numbers_anyway():
    h = trained(steps=40).history_frame()
    fig = charts_training.training_curves(h, "R²")
    assert fig.layout.xaxis.dtick is None and fig.layout.xaxis.tickformat == "d"


def trained_lab(steps=60):
    """A small adding lab trained `steps` steps, its rate lowered at step 30, its best step restored."""
    import dataclasses

    from app.session.lab import Lab
    from app.session.link import DEFAULT

    setup = dataclasses.replace(DEFAULT, model=dataclasses.replace(DEFAULT.model, hidden_size=8))
    lab = Lab(setup)
    for _ in range(30):
        lab.advance()
    lab.change(dataclasses.replace(setup, train=dataclasses.replace(setup.train, lr=0.0003)))
    for _ in range(steps - 30):
        lab.advance()
    lab.restore_best()
    return lab


def curves_of(lab):
    best = lab.held_out.best
    return charts_training.training_curves(
        lab.trainer.history_frame(), "R²", 1 / 6, lab.held_out.frame(), (best.step, best.loss, best.metric), lab.marks
    )


def test_held_out_curves_plot_exactly_the_log_dashed_in_the_training_colours():
    lab = trained_lab()
    log = lab.held_out.frame()
    assert len(log) == 4  # steps 0, 25, 50, and 60 after the restore
    fig = curves_of(lab)
    pairs = (("loss", "held-out loss", "training loss"), ("metric", "held-out R²", "training R²"))
    for column, name, training in pairs:
        x, y = xy(fig, name)
        np.testing.assert_array_equal(x, log["step"])
        np.testing.assert_array_equal(y, log[column])
        assert trace(fig, name).line.dash == "dash" and trace(fig, training).line.dash in (None, "solid")
        assert trace(fig, name).line.color == trace(fig, training).line.color
        assert trace(fig, name).xaxis == trace(fig, training).xaxis  # the same panel
    low, high = fig.layout.yaxis.range  # log axis: log10 units
    assert low <= np.log10(log["loss"].min()) and np.log10(log["loss"].max()) <= high


def test_the_best_step_is_ringed_on_both_held_out_curves():
    lab = trained_lab()
    best = lab.held_out.best
    fig = curves_of(lab)
    name = f"best step ({best.step}): lowest held-out loss"
    assert xy(fig, name) == ([best.step], [best.loss]) and trace(fig, name).xaxis == "x"
    assert xy(fig, "held-out R² at the best step") == ([best.step], [best.metric])
    assert trace(fig, name).showlegend


def test_every_setting_change_and_restore_is_a_dotted_line_labelled_with_what_changed():
    lab = trained_lab()
    assert [text for _, text in lab.marks] == ["lr 0.003 → 0.0003", f"back to step {lab.held_out.best.step}'s weights"]
    fig = curves_of(lab)
    lines = [(s.x0, s.xref) for s in fig.layout.shapes if s.type == "line" and s.line.dash == "dot"]
    assert sorted(lines) == sorted([(30, "x"), (30, "x2"), (60, "x"), (60, "x2")])  # across both panels
    labels = {a.text: a for a in fig.layout.annotations}
    for step, text in lab.marks:
        assert labels[text].x == step and labels[text].textangle == -90


def test_the_legend_sits_under_the_panels_and_names_each_line_style_once():
    lab = trained_lab()
    fig = curves_of(lab)
    assert fig.layout.legend.y < 0 and fig.layout.legend.yanchor == "top"  # outside the plot area
    grad = charts_training.gradient_norm_curve(lab.trainer.history_frame(), 1.0)
    assert grad.layout.legend.y < 0 and grad.layout.legend.yanchor == "top"  # not over the title either
    shown = [t.name for t in fig.data if t.showlegend]
    assert shown[:2] == ["training loss", "held-out loss"] and shown[2].startswith("best step")
    assert len(shown) == 3


def test_before_any_step_the_step_0_evaluation_shows_whole():
    from app.session.lab import Lab
    from app.session.link import DEFAULT

    lab = Lab(DEFAULT)
    fig = curves_of(lab)
    assert xy(fig, "held-out loss")[0].tolist() == [0]
    assert fig.layout.xaxis.range[0] < 0 < fig.layout.xaxis.range[1]
    assert "No training steps yet" in annotation_text(fig)


def test_a_baseline_metric_is_a_dashed_line_on_the_metric_panel_only():
    h = trained("rnn", task="parity", steps=3).history_frame()
    fig = charts_training.training_curves(h, "accuracy", baseline_metric=("bag of words", 0.66))
    (line,) = [t for t in fig.data if t.name == "bag of words (held-out)"]
    assert list(line.y) == [0.66, 0.66] and line.xaxis == "x2" and line.line.dash == "dash"
    assert not [t for t in charts_training.training_curves(h, "accuracy").data if "held-out)" in (t.name or "")]
