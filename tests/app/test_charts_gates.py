"""The gate figures plot exactly the recording's numbers, checked against values computed here
independently with numpy from the recorded tensors."""
import numpy as np
import plotly.graph_objects as go
import pytest

import engine
from app.charts import gates as cgt
from app.charts.style import UNDER_AXIS

T = 12
GATES = {"lstm": ["i", "f", "g", "o"], "gru": ["r", "z", "n"]}


def recorded(arch, task="adding", seq_len=T, **model):
    t = engine.make_task(task, seq_len=seq_len)
    m = engine.build_model(engine.ModelConfig(arch=arch, hidden_size=6, **model), t, seed=0)
    x, y = t.batch(4)
    return t, engine.record(m, x, y)


@pytest.fixture(scope="module", params=["lstm", "gru"])
def stacked(request):
    """A 2-layer bidirectional LSTM or GRU recording."""
    return recorded(request.param, num_layers=2, bidirectional=True)[1]


@pytest.fixture(scope="module")
def lstm():
    return recorded("lstm", num_layers=2, bidirectional=True)[1]


@pytest.mark.parametrize("layer, direction", [(0, 0), (1, 1)])
def test_heatmaps_are_the_recorded_gates_units_by_time(stacked, layer, direction):
    fig = cgt.gate_heatmaps(stacked, layer=layer, direction=direction)
    gates = GATES[stacked.arch]
    lstm = stacked.arch == "lstm"
    assert len(fig.data) == (5 if lstm else 3)
    for heatmap, gate in zip(fig.data, gates):
        expected = stacked.gates[gate][layer, direction].numpy().T  # [H, T]
        assert np.array_equal(heatmap.z, expected)
        assert list(heatmap.x) == list(range(T)) and list(heatmap.y) == list(range(6))
        assert (heatmap.zmin, heatmap.zmax) == ((-1, 1) if gate in ("g", "n") else (0, 1))
    if lstm:
        cell = fig.data[-1]
        assert np.array_equal(cell.z, stacked.cell[layer, direction].numpy().T)
        largest = float(stacked.cell[layer, direction].abs().max())
        assert cell.zmid == 0 and cell.zmax == -cell.zmin == pytest.approx(largest)
        assert cell.reversescale  # RdBu reversed: positive red
    titles = [a.text for a in fig.layout.annotations]
    expected_titles = {"lstm": ["i: input gate", "f: forget gate", "g: candidate", "o: output gate", "c_t: cell state"],
                       "gru": ["r: reset gate", "z: update gate", "n: candidate state"]}[stacked.arch]
    assert titles == expected_titles
    assert fig.layout.height == 80 + 170 * len(fig.data)
    arrow = "→" if direction == 0 else "←"
    assert fig.layout.title.text.startswith(f"Gates of layer {layer} {arrow}")
    assert fig.layout.title.text.endswith(f"over time ({stacked.arch.upper()})")
    assert all(h.colorbar.len < 1 / len(fig.data) + 1e-9 for h in fig.data)  # one small colourbar per panel
    assert "%{z:.4g}" in fig.data[0].hovertemplate and "unit %{y}" in fig.data[0].hovertemplate


def test_title_of_layer_0_forward_lstm(lstm):
    assert cgt.gate_heatmaps(lstm).layout.title.text == "Gates of layer 0 → over time (LSTM)"


def test_tokens_become_the_tick_text_and_hover():
    task, rec = recorded("lstm", task="charlm", seq_len=20)
    tokens = list(task.decode(rec.x))
    fig = cgt.gate_heatmaps(rec, tokens=tokens)
    shown = [cgt.visible(tok) for tok in tokens]
    bottom = fig.layout[f"xaxis{len(fig.data)}"]
    assert list(bottom.tickvals) == list(range(20)) and list(bottom.ticktext) == shown
    assert all(ch == cgt.visible(ch) for ch in tokens if ch.isalnum())  # letters are left as they are
    assert cgt.visible(" ") == "␣" and cgt.visible("\n") == "↵" and cgt.visible("<") == "&lt;"
    assert list(fig.data[0].customdata[3]) == shown and "token %{customdata}" in fig.data[0].hovertemplate
    long_task, long_rec = recorded("gru", task="charlm", seq_len=80)
    long = cgt.gate_heatmaps(long_rec, tokens=list(long_task.decode(long_rec.x)))
    assert long.layout.xaxis3.ticktext is None  # > 60 steps: numbered ticks, tokens in the hover only
    with pytest.raises(ValueError, match="one label per step"):
        cgt.gate_heatmaps(rec, tokens=tokens[:-1])


def shares(values: np.ndarray, tanh: bool, low=0.05, high=0.95):
    v = np.abs(values) if tanh else values
    n = v.size
    return np.count_nonzero(v < low) / n, np.count_nonzero((v >= low) & (v <= high)) / n, np.count_nonzero(v > high) / n


@pytest.mark.parametrize("low, high", [(0.05, 0.95), (0.3, 0.6)])
def test_saturation_shares_match_numpy_and_sum_to_one(stacked, low, high):
    table = cgt.saturation_table(stacked, low=low, high=high)
    gates = GATES[stacked.arch]
    assert len(table) == len(gates) * 2 * 2
    for row in table.itertuples(index=False):
        values = stacked.gates[row.gate][row.layer, ("forward", "backward").index(row.direction)].double().numpy()
        tanh = row.gate in ("g", "n")
        assert row.activation == ("tanh" if tanh else "sigmoid")
        expected = shares(values, tanh, low, high)
        assert (row[4], row[5], row[6]) == pytest.approx(expected, abs=1e-12)
    assert np.allclose(table[["near 0", "in between", "near 1"]].sum(axis=1), 1.0)
    fig = cgt.saturation(stacked, low=low, high=high)
    assert fig.layout.title.text == "How saturated the gates are" and fig.layout.barmode == "stack"
    names = [t.name for t in fig.data]
    assert names == ["near 0", "in between", "near 1", "near ±1"]  # tanh gates say "near ±1"
    for bar in fig.data:
        column = "near 1" if bar.name == "near ±1" else bar.name
        rows = table if bar.name in ("near 0", "in between") else table[
            (table["activation"] == "tanh") == (bar.name == "near ±1")]
        assert np.allclose(bar.x, rows[column]) and len(bar.y) == len(rows)
        assert bar.orientation == "h"
    assert fig.layout.xaxis.title.text.startswith("share of (t, unit) values")
    assert "layer 1 ←" in fig.data[0].y[-1]  # several layers and directions: each labelled


def test_single_layer_saturation_labels_only_the_gate():
    _, rec = recorded("gru")
    fig = cgt.saturation(rec)
    assert list(fig.data[0].y) == ["r: reset gate", "z: update gate", "n: candidate state<br>(|·|, tanh)"]


# Source Sans, plotly's 12 px tick labels: about 6.6 px a character (0.55 of the size), measured
# on the Gates page's screenshot at 1024 px ("g: candidate (|·|, tanh)", 24 characters, 125 px).
TICK_CHAR_PX = 0.55 * 12


def test_the_carousels_legend_is_under_its_axis_title(lstm):
    """At 1024 px its legend, at -0.22 of the plot's height, lay on 'time step t'."""
    fig = cgt.constant_error_carousel(lstm)
    plot_px = fig.layout.height - fig.layout.margin.t - fig.layout.margin.b
    assert fig.layout.legend.yanchor == "top" and -fig.layout.legend.y * plot_px >= UNDER_AXIS


def test_saturation_labels_fit_the_left_margin_and_the_legend_is_under_the_bars(stacked):
    """At 1024 px, in half a page, "g: candidate (|·|, tanh)" was cut at the figure's left edge
    (a 10 px margin), and the legend at the right took a third of the width from the bars."""
    fig = cgt.saturation(stacked)
    lines = [line for bar in fig.data[0].y for line in bar.split("<br>")]
    assert fig.layout.margin.l >= TICK_CHAR_PX * max(map(len, lines)) + 8
    assert max(map(len, lines)) <= max(map(len, cgt.NAMES.values()))  # the gate's name, then what sets it apart
    legend = fig.layout.legend
    assert legend.orientation == "h" and legend.y < 0 and legend.yanchor == "top"
    axis_title_px = 50 + 45  # tick labels, and the axis title's three lines
    plot_px = fig.layout.height - fig.layout.margin.t - fig.layout.margin.b
    assert -legend.y * plot_px >= axis_title_px  # under the axis title, not on it


@pytest.mark.parametrize("layer, direction", [(0, 0), (1, 1)])
def test_carousel_plots_mean_over_units_and_one_unit(lstm, layer, direction):
    f = lstm.gates["f"][layer, direction].double().numpy()  # [T, H]
    i = lstm.gates["i"][layer, direction].double().numpy()
    c = lstm.cell[layer, direction].double().numpy()
    fig = cgt.constant_error_carousel(lstm, layer=layer, direction=direction)
    assert fig.layout.title.text.startswith("The constant error carousel: f ≈ 1 keeps c_t, i_t writes into it")
    f_line, i_line, c_line = fig.data[:3]
    assert np.allclose(f_line.y, f.mean(axis=1), rtol=0, atol=1e-12)
    assert np.allclose(i_line.y, i.mean(axis=1), rtol=0, atol=1e-12)
    assert np.allclose(c_line.y, np.abs(c).mean(axis=1), rtol=0, atol=1e-12)
    assert list(f_line.x) == list(range(T))
    assert f_line.yaxis == "y" and c_line.yaxis == "y2" and list(fig.layout.yaxis.range) == [-0.02, 1.05]
    unit = cgt.carousel_unit(lstm, layer=layer, direction=direction)
    assert unit == int(np.argmax(f.mean(axis=0)))
    one = cgt.constant_error_carousel(lstm, layer=layer, direction=direction, unit=unit)
    assert np.array_equal(one.data[0].y, f[:, unit]) and np.array_equal(one.data[1].y, i[:, unit])
    assert np.array_equal(one.data[2].y, c[:, unit])
    assert f"unit {unit}" in one.layout.yaxis.title.text


def test_gru_and_rnn_are_refused_with_a_message():
    _, gru = recorded("gru")
    with pytest.raises(ValueError, match="only an LSTM"):
        cgt.constant_error_carousel(gru)
    with pytest.raises(ValueError, match="only an LSTM"):
        cgt.carousel_unit(gru)
    _, rnn = recorded("rnn")
    for build in (cgt.gate_heatmaps, cgt.saturation, cgt.saturation_table, cgt.constant_error_carousel):
        with pytest.raises(ValueError, match="vanilla RNN has no gates"):
            build(rnn)


def test_bad_layer_unit_and_stack_are_refused(lstm):
    with pytest.raises(ValueError, match="layer must be 0..1"):
        cgt.gate_heatmaps(lstm, layer=2)
    with pytest.raises(ValueError, match="unit must be 0..5"):
        cgt.constant_error_carousel(lstm, unit=6)
    with pytest.raises(ValueError, match="no stack 'decoder'"):
        cgt.saturation(lstm, stack="decoder")


def test_encoder_decoder_plots_the_stack_asked_for():
    _, rec = recorded("lstm", task="reverse", seq_len=5)
    for stack in rec.stacks:
        fig = cgt.gate_heatmaps(rec, stack=stack)
        assert np.array_equal(fig.data[1].z, rec.stacks[stack].gates["f"][0, 0].numpy().T)
        assert f"the {stack}'s" in fig.layout.title.text


def test_the_gates_table_holds_every_gate_and_the_cell_state(lstm):
    table = cgt.gates_table(lstm)
    assert len(table) == 5 * lstm.hidden.numel()  # i, f, g, o and c
    row = table[(table.gate == "c") & (table.layer == 1) & (table.direction == "backward") & (table.t == 4)
                & (table.unit == 3)].iloc[0]
    assert row.value == pytest.approx(lstm.cell[1, 1, 4, 3].item())
    row = table[(table.gate == "f") & (table.layer == 0) & (table.direction == "forward") & (table.t == 2)
                & (table.unit == 1)].iloc[0]
    assert row.value == pytest.approx(lstm.gates["f"][0, 0, 2, 1].item())


def test_the_saturation_rule_names_the_candidates_the_cell_has():
    gru = cgt.saturation(recorded("gru")[1]).layout.xaxis.title.text
    lstm = cgt.saturation(recorded("lstm")[1]).layout.xaxis.title.text
    assert "tanh n: of |value|" in gru and "tanh g: of |value|" in lstm


def test_heatmaps_laid_out_once_are_refilled_with_each_recordings_values(monkeypatch):
    """A playing Gates page redraws the heatmaps on every tick: their layout is made once for the
    model and choices (kept with the model: refill.frame_of), and each new recording's gates and
    cell state put in, the cell state's colour range with them."""
    task = engine.make_task("adding", seq_len=T)
    model = engine.build_model(engine.ModelConfig(arch="lstm", hidden_size=6), task, seed=0)
    x, y = task.batch(4)
    laid_out, carousels = [], []
    real, real_carousel = cgt.gate_heatmaps_frame, cgt.carousel_frame
    monkeypatch.setattr(cgt, "gate_heatmaps_frame", lambda *a: laid_out.append(a) or real(*a))
    monkeypatch.setattr(cgt, "carousel_frame", lambda *a: carousels.append(a[-1]) or real_carousel(*a))
    for index in (0, 3):
        rec = engine.record(model, x, y, index=index, jacobians=False)
        fig = cgt.gate_heatmaps(rec, frames_with=model)
        go.Figure(fig.to_dict())  # plotly's checks pass on what was put in unchecked
        for heatmap, gate in zip(fig.data, "ifgo"):
            assert np.array_equal(heatmap.z, rec.gates[gate][0, 0].numpy().T)
        reach = float(rec.cell[0, 0].abs().max())
        assert np.array_equal(fig.data[-1].z, rec.cell[0, 0].numpy().T)
        assert (fig.data[-1].zmin, fig.data[-1].zmax) == pytest.approx((-reach, reach))
        assert list(fig.data[-1].colorbar.tickvals) == pytest.approx([-reach, 0, reach])
        assert fig.data[-1].colorbar.len == pytest.approx(real(rec, None, 0, 0, None).data[-1].colorbar.len)
        for unit in (None, 2):
            carousel = cgt.constant_error_carousel(rec, unit=unit, frames_with=model)
            go.Figure(carousel.to_dict())
            f, c = rec.gates["f"][0, 0].double(), rec.cell[0, 0].double()
            expected = (f.mean(1), c.abs().mean(1)) if unit is None else (f[:, unit], c[:, unit])
            assert list(carousel.data[0].y) == pytest.approx(expected[0].tolist())
            assert list(carousel.data[2].y) == pytest.approx(expected[1].tolist())
            if unit is None:
                assert list(carousel.layout.yaxis2.range) == pytest.approx([0, 1.1 * float(expected[1].max())])
    assert len(laid_out) == 1
    assert carousels == [None, 2]  # one each: the mean, unit 2


@pytest.mark.parametrize("arch", ["lstm", "gru"])
def test_saturation_bars_get_the_height_their_labels_need(arch):
    """On Gates at 1024 px the legend's rows and the axis title's rule took the figure's 300 px, and
    the four bars of an LSTM, with their labels, were pressed into about 20 px, labels on labels
    (issue 28, item 4): each bar gets 12 px and 14 px a line of its label, whatever the legend takes."""
    _, rec = recorded(arch)
    fig = cgt.saturation(rec)
    bars = list(fig.data[0].y)
    lines = max(bar.count("<br>") + 1 for bar in bars)
    plot_px = fig.layout.height - fig.layout.margin.t - fig.layout.margin.b
    assert plot_px >= len(bars) * (12 + 14 * lines), f"{plot_px} px of plot for {len(bars)} bars"
