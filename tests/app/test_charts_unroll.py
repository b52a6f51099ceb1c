"""The Unroll figures plot exactly the recording's numbers at the step asked for."""
import html
import json
import re

import numpy as np
import plotly.graph_objects as go
import pytest
import torch

import engine
from app.charts import labels, step_labels
from app.charts import unroll as cu
from app.charts import unroll_bars as cb
from app.charts import unroll_time as ct

from .conftest import plotted

T, H = 12, 5


def recorded(arch="lstm", task="adding", **model):
    return built(arch, task, **model)[:2]


def built(arch="lstm", task="adding", seq_len=T, **model):
    """The task, a recording of a fresh model on it, and the states its head reads."""
    t = engine.make_task(task, seq_len=seq_len)
    m = engine.build_model(engine.ModelConfig(arch=arch, hidden_size=H, **model), t, seed=0)
    x, y = t.batch(4)
    return t, engine.record(m, x, y, jacobians=False), cu.head_reads(m.describe())


@pytest.fixture(scope="module")
def bilstm():
    return built("lstm", num_layers=2, bidirectional=True)


def spec(fig) -> dict:
    """The figure as the browser gets it, after plotly's checks of every property: the Unroll
    figures are built unchecked (the diagram) or refilled unchecked (the bars, heatmap, unit)."""
    go.Figure(fig.to_dict())
    return json.loads(fig.to_json())


@pytest.mark.parametrize("T_, t, expected", [(50, 0, (0, 9)), (50, 49, (41, 50)), (50, 20, (16, 25)), (12, 2, (0, 12)),
                                             (13, 12, (4, 13))])
def test_the_window_holds_t_and_is_centred_where_it_can_be(T_, t, expected):
    steps = cu.window(T_, t)
    assert (steps.start, steps.stop) == expected and t in steps


def test_state_bars_are_h_t_and_c_t_of_every_layer_and_direction_at_t(bilstm):
    _, rec, _ = bilstm
    t = 7
    fig = spec(cb.state_at(rec, None, t))
    bars = fig["data"]
    assert len(bars) == 2 * 2 * 2  # (h, c) x layers x directions
    expected = [values[layer, d, t] for layer in range(2) for values in (rec.hidden, rec.cell) for d in range(2)]
    for bar, values in zip(bars, expected):
        assert plotted(bar["y"]) == pytest.approx(values.tolist(), rel=1e-6)
        assert plotted(bar["x"]) == list(range(H))
    # one fixed scale per quantity over the whole sample, so the bars move as t does
    reach = float(rec.hidden.abs().max())
    assert fig["layout"]["yaxis"]["range"] == pytest.approx([-1.05 * reach, 1.05 * reach])
    reach_c = float(rec.cell.abs().max())
    assert fig["layout"]["yaxis3"]["range"] == pytest.approx([-1.05 * reach_c, 1.05 * reach_c])  # c_t, layer 0 →
    assert [fig["layout"][f"xaxis{k}"]["title"]["text"] for k in (7, 8)] == ["unit", "unit"]  # the bottom row


def test_gate_bars_are_the_recorded_gates_at_t(bilstm):
    _, rec, _ = bilstm
    fig = spec(cb.gates_at(rec, None, 1, 1, 3))
    for bar, gate in zip(fig["data"], "ifgo"):
        assert plotted(bar["y"]) == pytest.approx(rec.gates[gate][1, 1, 3].tolist(), rel=1e-6)
    with pytest.raises(ValueError, match="no gates"):
        cb.gates_at(recorded("rnn")[1], None, 0, 0, 3)


def test_the_heatmap_shows_both_directions_and_frames_t(bilstm):
    _, rec, _ = bilstm
    fig = spec(ct.hidden_heatmap(rec, None, 1, 4))
    maps = [d for d in fig["data"] if d["type"] == "heatmap"]
    assert len(maps) == 2
    for d, trace in enumerate(maps):
        assert np.allclose(plotted(trace["z"]), rec.hidden[1, d].T.numpy(), rtol=1e-6)
    frames = [s for s in fig["layout"]["shapes"] if s["type"] == "rect"]
    assert [(s["x0"], s["x1"]) for s in frames] == [(3.5, 4.5), (3.5, 4.5)]
    assert {s["xref"] for s in frames} == {"x", "x2"}


def test_the_concatenation_is_forward_then_backward(bilstm):
    _, rec, _ = bilstm
    fig = spec(cb.concatenation_at(rec, None, 0, 6))
    xs = [x for bar in fig["data"] for x in plotted(bar["x"])]
    ys = [y for bar in fig["data"] for y in plotted(bar["y"])]
    assert xs == list(range(2 * H))
    assert ys == pytest.approx(torch.cat([rec.hidden[0, 0, 6], rec.hidden[0, 1, 6]]).tolist(), rel=1e-6)
    assert "layer 1" in fig["layout"]["title"]["text"]
    with pytest.raises(ValueError, match="bidirectional"):
        cb.concatenation_at(recorded()[1], None, 0, 6)


def test_the_diagram_frames_step_t_and_draws_the_arrows_each_way(bilstm):
    task, rec, reads = bilstm
    inputs = step_labels.input_labels(task, rec, None, None)
    outputs = step_labels.output_labels(task, rec, None)
    fig = spec(cu.unrolled_diagram(rec, None, 5, inputs, outputs, reads))
    framed = [s for s in fig["layout"]["shapes"] if s["line"]["color"] == cu.VERMILLION]
    assert {(s["x0"] + s["x1"]) / 2 for s in framed} == {5}
    assert len(framed) == 1 + 2  # the input and both layers (an adding model answers at t = 11 only)
    arrows = [a for a in fig["layout"]["annotations"] if a.get("showarrow") and not a.get("name")]  # not ŷ's
    backward = [a for a in arrows if a["arrowcolor"] == cu.DIRECTION_COLOURS[1]]
    forward = [a for a in arrows if a["arrowcolor"] == cu.DIRECTION_COLOURS[0]]
    assert backward and all(a["ax"] > a["x"] for a in backward)  # leftwards: h_{t+1} -> h_t
    assert forward and all(a["ax"] < a["x"] for a in forward)
    assert any(a["arrowcolor"] == cu.GREEN for a in arrows)  # c_t, an LSTM's
    ticks = fig["layout"]["xaxis"]["ticktext"]
    assert ticks == [f"t = {x}" for x in range(T)]  # a sequence this short is drawn whole
    last = spec(cu.unrolled_diagram(rec, None, T - 1, inputs, outputs, reads))
    texts = [a["text"] for a in last["layout"]["annotations"] if not a.get("showarrow")]
    assert any(outputs[-1] in text for text in texts)  # the answer, boxed at the last step
    with pytest.raises(ValueError, match="one label per step"):
        cu.unrolled_diagram(rec, None, 0, inputs[:-1], outputs, reads)
    with pytest.raises(ValueError, match="t must be 0..11"):
        cu.unrolled_diagram(rec, None, T, inputs, outputs, reads)


def test_a_unit_over_time_is_its_recorded_h_beside_a_feature():
    _, rec = recorded("gru")
    feature = ("marker", rec.x[:, 1].numpy())
    fig = spec(ct.unit_over_time(rec, None, 0, 0, 3, 8, feature))
    assert plotted(fig["data"][0]["y"]) == pytest.approx(rec.hidden[0, 0, :, 3].tolist(), rel=1e-6)
    assert plotted(fig["data"][1]["y"]) == pytest.approx(feature[1].tolist())
    assert [s["x0"] for s in fig["layout"]["shapes"]] == [8]
    with pytest.raises(ValueError, match="unit must be 0..4"):
        ct.unit_over_time(rec, None, 0, 0, H, 8)


def test_coloured_tokens_give_every_value_and_frame_t():
    tokens = ["<", "a", " ", "\n", "b"]
    values = np.array([0.5, -1.0, 0.0, 0.25, 1.0])
    page = ct.coloured_tokens(tokens, values, 1)
    spans = re.findall(r'<span title="t = (\d+): ([^"]+)" style="([^"]+)">([^<]*)</span>', page)
    assert [int(s[0]) for s in spans] == list(range(5))
    assert [float(s[1]) for s in spans] == pytest.approx(values.tolist())
    assert ["outline" in s[2] for s in spans] == [False, True, False, False, False]
    assert spans[0][3] == html.escape("<") and spans[2][3] == "&nbsp;"
    assert "rgba(31, 119, 180, 1.00)" in spans[1][2] and "rgba(214, 39, 40, 0.50)" in spans[0][2]
    assert "</span> <span" not in page  # the characters of a text run together
    assert ct.coloured_tokens(["5", "3"], values[:2], 0, spaced=True).count("</span> <span") == 1  # symbols apart
    with pytest.raises(ValueError, match="one value per token"):
        ct.coloured_tokens(tokens, values[:3], 0)


def test_labels_follow_what_each_stack_reads_and_answers():
    task = engine.make_task("reverse", seq_len=4)
    model = engine.build_model(engine.ModelConfig(arch="gru", hidden_size=H), task, seed=0)
    x, y = task.batch(2)
    rec = engine.record(model, x, y, jacobians=False)
    decoder_in = step_labels.input_labels(task, rec, "decoder", None)
    assert decoder_in[0] == "&lt;sos&gt;"  # teacher forcing: <sos>, then the true previous token
    assert decoder_in[1:] == [task.target_vocab[i] for i in y[0, :-1].tolist()]
    assert step_labels.output_labels(task, rec, "encoder") == [""] * 4
    answers = step_labels.output_labels(task, rec, "decoder")
    best = rec.y_hat.argmax(dim=-1).tolist()  # [T_out]
    assert [a.split(" ")[0] for a in answers] == [labels.visible(task.target_vocab[i]) for i in best]

    adding, rec = recorded()
    outputs = step_labels.output_labels(adding, rec, None)
    assert outputs[:-1] == [""] * (T - 1) and outputs[-1] == f"{rec.y_hat.item():.3g}"
    assert step_labels.input_labels(adding, rec, None, None)[2] == step_labels.values_label(rec.x[2])


def test_a_label_reads_literally_in_a_markdown_sentence():
    assert step_labels.literal("a*b_c$") == "a\\*b\\_c\\$"
    assert step_labels.literal("0.25, 1") == "0.25, 1"


def test_the_states_table_holds_every_h_and_c(bilstm):
    _, rec, _ = bilstm
    table = ct.states_table(rec)
    assert len(table) == rec.hidden.numel()
    row = table[(table.layer == 1) & (table.direction == "backward") & (table.t == 3) & (table.unit == 2)].iloc[0]
    assert (row.h, row.c) == pytest.approx((rec.hidden[1, 1, 3, 2].item(), rec.cell[1, 1, 3, 2].item()))
    assert "c" not in ct.states_table(recorded("gru")[1])


def test_a_vector_to_sequence_model_reads_its_one_vector_at_every_step():
    task = engine.make_task("sine", seq_len=7, mode="generate")
    model = engine.build_model(engine.ModelConfig(arch="gru", hidden_size=H), task, seed=0)
    x, y = task.batch(2)
    rec = engine.record(model, x, y, jacobians=False)
    inputs = step_labels.input_labels(task, rec, None, None)
    assert inputs == [step_labels.values_label(x[0])] * 7  # [3] in, 7 steps run
    outputs = step_labels.output_labels(task, rec, None)
    fig = spec(cu.unrolled_diagram(rec, None, 3, inputs, outputs, cu.head_reads(model.describe())))
    assert [s for s in fig["layout"]["shapes"] if s["line"]["color"] == cu.VERMILLION]


def output_arrows(fig: dict) -> dict[str, list[dict]]:
    """The arrows into the outputs, by the read each draws ("reads h←_0")."""
    found: dict[str, list[dict]] = {}
    for note in fig["layout"]["annotations"]:
        if note.get("showarrow") and note.get("name", "").startswith("reads "):
            found.setdefault(note["name"].removeprefix("reads "), []).append(note)
    return found


def starts_at_box(note: dict, step: int, layer: int, half: int | None) -> bool:
    """Whether an arrow starts on the top edge of the box of `layer` at `step` (its forward half
    (0), its backward half (1), or the whole box (None))."""
    centre = step + (0 if half is None else (-1, 1)[half] * cu.BOX_W / 4)
    return note["ax"] == pytest.approx(centre) and note["ay"] == pytest.approx(1 + layer + cu.BOX_H / 2)


def diagram(task, rec, reads, t):
    inputs = step_labels.input_labels(task, rec, None, None)
    outputs = step_labels.output_labels(task, rec, None)
    return spec(cu.unrolled_diagram(rec, None, t, inputs, outputs, reads)), outputs


def test_a_bidirectional_seq2vec_output_is_drawn_from_the_states_its_head_reads():
    """Issue 12, item 3: ŷ reads h→ at the last step and h← at step 0 (which has read x_T..x_0),
    as model.describe() says, not [h→_T ; h←_T]."""
    task, rec, reads = built("rnn", bidirectional=True, num_layers=2)
    assert [r.label for r in reads] == ["h→_T", "h←_0"]
    fig, outputs = diagram(task, rec, reads, T - 1)
    arrows = output_arrows(fig)
    assert set(arrows) == {"h→_T", "h←_0"} and all(len(a) == 1 for a in arrows.values())
    assert starts_at_box(arrows["h→_T"][0], T - 1, 1, 0) and starts_at_box(arrows["h←_0"][0], 0, 1, 1)
    assert [arrows["h→_T"][0]["x"], arrows["h←_0"][0]["x"]] == pytest.approx([T - 1 - cu.BOX_W / 8,
                                                                              T - 1 + cu.BOX_W / 8])
    assert arrows["h←_0"][0]["y"] == pytest.approx(3 - cu.BOX_H / 2)  # into the output row's box
    subtitle = fig["layout"]["title"]["subtitle"]["text"]
    assert f"ŷ<sub>{T - 1}</sub> reads [h→<sub>{T - 1}</sub> ; h←<sub>0</sub>]" in subtitle

    joined = spec(cb.concatenation_at(rec, None, 1, 4, reads))  # whatever t: the head's states
    ys = [y for bar in joined["data"] for y in plotted(bar["y"])]
    assert ys == pytest.approx(torch.cat([rec.hidden[1, 0, T - 1], rec.hidden[1, 1, 0]]).tolist(), rel=1e-6)
    assert f"[h→_{T - 1} ; h←_0]" in joined["layout"]["title"]["text"]
    assert "at t = 4" not in joined["layout"]["title"]["text"]
    assert [bar["name"] for bar in joined["data"]] == [f"h→_{T - 1} (read x_0..x_{T - 1})",
                                                      f"h←_0 (read x_{T - 1}..x_0)"]
    lower = spec(cb.concatenation_at(rec, None, 0, 4, reads))  # layer 1 reads layer 0 at every t
    assert "What layer 1 reads at t = 4: [h→_4 ; h←_4]" in lower["layout"]["title"]["text"]


def test_a_long_bidirectional_seq2vec_sample_says_where_the_backward_state_comes_from():
    task, rec, reads = built("gru", bidirectional=True, seq_len=40)
    fig, _ = diagram(task, rec, reads, 39)  # steps 31..39 drawn: step 0 lies outside
    arrows = output_arrows(fig)
    assert starts_at_box(arrows["h→_T"][0], 39, 0, 0)
    assert arrows["h←_0"][0]["ax"] < 31 and arrows["h←_0"][0]["x"] > 38  # in from the left edge
    texts = [a["text"] for a in fig["layout"]["annotations"] if not a.get("showarrow")]
    assert "from h←<sub>0</sub>" in texts
    first, _ = diagram(task, rec, reads, 0)  # steps 0..8 drawn: ŷ_39 lies outside
    arrows = output_arrows(first)
    assert set(arrows) == {"h←_0"} and starts_at_box(arrows["h←_0"][0], 0, 0, 1)
    assert "to ŷ<sub>39</sub>" in [a["text"] for a in first["layout"]["annotations"] if not a.get("showarrow")]


def test_a_one_way_seq2vec_output_reads_the_last_state():
    task, rec, reads = built("lstm")
    assert [r.label for r in reads] == ["h_T"]
    fig, _ = diagram(task, rec, reads, T - 1)
    arrows = output_arrows(fig)
    assert list(arrows) == ["h_T"] and len(arrows["h_T"]) == 1 and starts_at_box(arrows["h_T"][0], T - 1, 0, None)


@pytest.mark.parametrize("bidirectional", [False, True])
def test_a_seq2seq_output_reads_the_states_of_its_own_step(bidirectional):
    task, rec, reads = built("gru", "parity", bidirectional=bidirectional, num_layers=2)
    fig, outputs = diagram(task, rec, reads, 5)
    arrows = output_arrows(fig)
    assert all(outputs) and len(arrows) == len(reads) == 1 + bidirectional
    for read in reads:
        notes = arrows[read.label]
        assert len(notes) == T  # one into every output of the twelve steps drawn
        for step, note in enumerate(sorted(notes, key=lambda n: n["ax"])):
            assert starts_at_box(note, step, 1, read.direction if bidirectional else None)


def test_an_output_label_fits_its_box():
    """Issue 12, item 7: "<eos> (100" was cut; the class stays whole and its probability goes
    on a line of its own, and an escaped character is never cut in half."""
    assert cu.answer_text("&lt;eos&gt; (100%)") == "&lt;eos&gt;<br>(100%)"
    assert cu.short("&lt;sos&gt; and more", 8) == "&lt;sos&gt; a…"
    assert cu.answer_text("0.123") == "0.123"


def test_pad_steps_come_from_the_recording_or_else_the_pad_symbol():
    task = engine.make_task("sentiment", seq_len=12)
    model = engine.build_model(engine.ModelConfig(arch="gru", hidden_size=H), task, seed=0)
    x, y = task.batch(16)
    padded = [i for i in range(16) if task.pad_symbol in task.symbols_of(x[i])]
    x = x[padded[0]:]  # a padded review first: the one recorded
    rec = engine.record(model, x, y[padded[0]:], jacobians=False)
    symbols = task.symbols_of(x[0])
    expected = np.array([s == task.pad_symbol for s in symbols])
    assert np.array_equal(ct.pad_steps(rec.main, symbols, task.pad_symbol), expected)
    assert ct.pad_steps(recorded()[1].main, None, None) is None  # values, never padded
    fig = spec(ct.hidden_heatmap(rec, None, 0, 3, symbols, expected))
    grey = [s for s in fig["layout"]["shapes"] if s.get("name") == "padding"]
    assert [(s["x0"] + 0.5, s["x1"] - 0.5) for s in grey] == [tuple(float(v) for v in r) for r in ct.runs(expected)]
    assert any(a["text"] in ("padding", "pad") for a in fig["layout"]["annotations"])
    ticks = fig["layout"]["xaxis"]["ticktext"]  # a greyed step says padding once, not under every tick
    assert [tick == "" for tick in ticks] == expected.tolist()
    page = ct.coloured_tokens(symbols, rec.hidden[0, 0, :, 0].numpy(), 3, spaced=True, pads=expected)
    greyed = re.findall(r'title="t = (\d+)[^"]*padding[^"]*" style="background: #E6E6E6', page)
    assert [int(g) for g in greyed] == np.flatnonzero(expected).tolist()


def test_runs_of_a_mask():
    assert ct.runs(np.array([True, True, False, True, False, False, True])) == [(0, 1), (3, 3), (6, 6)]
    assert ct.runs(np.zeros(3, dtype=bool)) == []


def test_each_step_is_refilled_into_one_frame_per_recording_and_is_a_valid_figure(bilstm, monkeypatch):
    """Moving t rebuilds nothing: the bars, the heatmap's frames and the unit's mark are put into a
    figure built once per recording (refill.py), which a step must not change for the next."""
    _, rec, _ = built("lstm", num_layers=2, bidirectional=True)  # a fresh recording: nothing kept yet
    builds = []
    for module, name in [(cb, "state_frame"), (cb, "gates_frame"), (ct, "heatmap_frame"), (ct, "unit_frame")]:
        real = getattr(module, name)
        monkeypatch.setattr(module, name, lambda *a, real=real, name=name: builds.append(name) or real(*a))
    for t in (7, 2, 7):
        figures = [cb.state_at(rec, None, t), cb.gates_at(rec, None, 1, 0, t), ct.hidden_heatmap(rec, None, 1, t),
                   ct.unit_over_time(rec, None, 0, 1, 3, t)]
        for fig in figures:
            go.Figure(fig.to_dict())  # plotly's checks pass on what was refilled unchecked
            assert f"t = {t}" in fig.layout.title.text
        state, gates, heatmap, unit = (spec(f) for f in figures)
        assert plotted(state["data"][1]["y"]) == pytest.approx(rec.hidden[0, 1, t].tolist(), rel=1e-6)
        assert plotted(gates["data"][2]["y"]) == pytest.approx(rec.gates["g"][1, 0, t].tolist(), rel=1e-6)
        assert [(s["x0"], s["x1"]) for s in heatmap["layout"]["shapes"]] == [(t - 0.5, t + 0.5)] * 2
        assert (unit["layout"]["shapes"][0]["x0"], unit["layout"]["shapes"][0]["x1"]) == (t, t)
        assert plotted(unit["data"][0]["y"]) == pytest.approx(rec.hidden[0, 1, :, 3].tolist(), rel=1e-6)
    assert sorted(builds) == ["gates_frame", "heatmap_frame", "state_frame", "unit_frame"]  # once each
