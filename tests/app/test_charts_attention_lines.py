"""The lines view draws one line per weight of the head that is not 0, from query i to key j,
in the bin of its weight, its hover exactly weights[h, i, j]; the causal mask's entries draw
nothing, the mean of heads is weights.mean(0), and a highlighted query draws its row only."""
import json

import numpy as np
import pytest
import torch

import engine
from app.charts import attention_lines as cl
from app.charts.labels import visible
from app.charts.style import VERMILLION, WIDTH_ENCODES, for_projector

from .conftest import plotted

T = 12


def record(bidirectional=False, T=T):
    """A transformer (2 layers x 4 heads) on T characters, causal; or (bidirectional) unmasked, on T words of the
    masked task (a character model may not read ahead: engine.build.check_reads_ahead)."""
    task = engine.make_task("masked_lm" if bidirectional else "charlm", seq_len=max(T, 16), seed=0)
    cfg = engine.ModelConfig(arch="transformer", hidden_size=32, num_heads=4, num_layers=2,
                             bidirectional=bidirectional)
    model = engine.build_model(cfg, task, seed=0)
    x, y = task.batch(1)
    rec = engine.record(model, x[:, :T], y[:, :T], jacobians=False)
    return rec, task.symbols_of(rec.x)


def layer(rec, n):
    return rec.attention_traces[sorted(rec.attention_traces, key=lambda s: s.layer)[n]]


@pytest.fixture(scope="module")
def causal():
    return record()


def spec(fig) -> dict:
    return json.loads(fig.to_json())


def drawn(fig_json: dict) -> dict[tuple[int, int], int]:
    """Every line as (query i, key j) -> the index of the bin trace that draws it."""
    lines = {}
    bins = [t for t in fig_json["data"] if t["name"].startswith("weight ")]
    for b, trace in enumerate(bins):
        x, y = np.array(plotted(trace["x"]), dtype=float), np.array(plotted(trace["y"]), dtype=float)
        assert len(x) % 3 == 0 and np.isnan(x[2::3]).all() and np.isnan(y[2::3]).all()  # None between lines
        assert (x[0::3] == 0).all() and (x[1::3] == 1).all()  # from the query column to the key column
        for i, j in zip(y[0::3].astype(int).tolist(), y[1::3].astype(int).tolist()):
            assert (i, j) not in lines, f"line {i} -> {j} drawn twice"
            lines[i, j] = b
    return lines


def hovers(fig_json: dict) -> dict[tuple[int, int], tuple[str, str, float]]:
    """Each line's hover: (i, j) -> (query token, key token, weight)."""
    (points,) = [t for t in fig_json["data"] if t.get("name") == "weights"]
    return {(i, j): (q, k, w) for i, j, q, k, w in points["customdata"]}


def bin_of(fig_json: dict, b: int) -> dict:
    return [t for t in fig_json["data"] if t["name"].startswith("weight ")][b]


def check_lines(fig_json: dict, z: np.ndarray, rows, query: list[str], key: list[str]) -> None:
    """The lines drawn are exactly the entries of z in `rows` that are not 0, each in its weight's
    bin, darker and wider with the bin, each hover exactly z[i, j] and its tokens."""
    lines, said = drawn(fig_json), hovers(fig_json)
    expected = {(i, j) for i in rows for j in range(z.shape[1]) if z[i, j] != 0}
    assert set(lines) == expected and set(said) == expected
    for (i, j), b in lines.items():
        q, k, w = said[i, j]
        assert w == float(z[i, j]) and (q, k) == (query[i], key[j])
        trace = bin_of(fig_json, b)
        low, high = (float(v) for v in trace["name"].removeprefix("weight ").split(" to "))
        assert low < w <= high
        assert trace["opacity"] == max(high, 0.05) and trace["line"]["width"] == pytest.approx(0.6 + 3.4 * high)


def test_every_line_is_one_weight_of_the_head_and_the_causal_mask_draws_none(causal):
    rec, tokens = causal
    trace = layer(rec, 1)
    fig = spec(cl.attention_lines(trace, 2, tokens))
    z = trace.weights[2].numpy()
    shown = [visible(t) for t in tokens]
    check_lines(fig, z, range(T), shown, shown)
    lines = drawn(fig)
    future = [(i, j) for i in range(T) for j in range(i + 1, T)]
    assert all(z[i, j] == 0 for i, j in future) and not any(ij in lines for ij in future)  # masked: no line
    assert len(lines) == T * (T + 1) // 2  # every weight the mask allows is above 0 here
    assert len(fig["data"]) <= len(cl.EDGES) + 3  # a few bins, two token columns and the hover points
    assert fig["layout"]["yaxis"]["ticktext"] == shown and fig["layout"]["yaxis2"]["ticktext"] == shown
    assert not fig["layout"]["showlegend"]
    assert "layer 1 self, head 2" in fig["layout"]["title"]["text"]


def test_the_mean_of_heads_is_weights_mean_over_heads(causal):
    rec, tokens = causal
    trace = layer(rec, 0)
    fig = spec(cl.attention_lines(trace, None, tokens))
    shown = [visible(t) for t in tokens]
    check_lines(fig, trace.weights.mean(dim=0).numpy(), range(T), shown, shown)
    assert "mean of 4 heads" in fig["layout"]["title"]["text"]


def test_a_highlighted_query_draws_its_row_only(causal):
    rec, tokens = causal
    trace = layer(rec, 0)
    fig = spec(cl.attention_lines(trace, 1, tokens, query=7))
    shown = [visible(t) for t in tokens]
    check_lines(fig, trace.weights[1].numpy(), [7], shown, shown)
    assert set(drawn(fig)) == {(7, j) for j in range(8)}  # itself and the 7 before it
    (dot,) = [t for t in fig["data"] if t.get("name") == "highlighted query"]
    assert dot["y"] == [7] and dot["marker"]["color"] == VERMILLION
    assert fig["layout"]["yaxis"]["ticktext"][7] == f"<b>{shown[7]}</b>"
    with pytest.raises(ValueError, match="query must be 0..11"):
        cl.attention_lines(trace, 1, tokens, query=T)


def test_an_unmasked_encoder_draws_lines_to_later_keys_too():
    rec, tokens = record(bidirectional=True)
    trace = layer(rec, 0)
    assert not torch.isneginf(trace.logits).any()
    fig = spec(cl.attention_lines(trace, 3, tokens))
    shown = [visible(t) for t in tokens]
    check_lines(fig, trace.weights[3].numpy(), range(T), shown, shown)
    assert len(drawn(fig)) == T * T


def test_a_long_sequence_draws_the_first_queries_or_the_one_picked():
    long = cl.LINES_UP_TO + 16
    rec, tokens = record(T=long)
    trace = layer(rec, 0)
    z = trace.weights[0].numpy()
    shown = [visible(t) for t in tokens]
    fig = spec(cl.attention_lines(trace, 0, tokens))
    check_lines(fig, z, range(cl.LINES_UP_TO), shown, shown)
    assert f"first {cl.LINES_UP_TO} of {long} queries" in fig["layout"]["title"]["subtitle"]["text"]
    assert "ticktext" not in fig["layout"]["yaxis"]  # 80 labels would overlap: positions instead
    columns = [t for t in fig["data"] if t["name"] in ("query", "key")]
    assert [t["mode"] for t in columns] == ["lines", "lines"]  # 80 dots would merge into a bar
    picked = spec(cl.attention_lines(trace, 0, tokens, query=long - 1))
    check_lines(picked, z, [long - 1], shown, shown)
    assert "first" not in picked["layout"]["title"]["subtitle"]["text"]


def test_a_cross_attention_joins_the_decoders_queries_to_the_source():
    task = engine.make_task("reverse", seq_len=6, seed=0)
    cfg = engine.ModelConfig(arch="transformer", hidden_size=32, num_heads=2, num_layers=2)
    model = engine.build_model(cfg, task, seed=0)
    x, y = task.batch(1)
    rec = engine.record(model, x, y, jacobians=False)
    (site,) = [s for s in rec.attention_traces if s.kind == "cross" and s.layer == 1]
    trace = rec.attention_traces[site]
    source = task.symbols_of(rec.x)
    decoder = ["<sos>"] + [task.target_vocab[i] for i in rec.y.tolist()[:-1]]
    assert len(source) != len(decoder)  # the two columns differ in length
    fig = spec(cl.attention_lines(trace, 1, decoder, source))
    check_lines(fig, trace.weights[1].numpy(), range(len(decoder)), [visible(t) for t in decoder],
                [visible(t) for t in source])
    assert fig["layout"]["yaxis"]["ticktext"][0] == "&lt;sos&gt;"
    assert fig["layout"]["yaxis2"]["ticktext"] == [visible(t) for t in source]
    with pytest.raises(ValueError, match="key_tokens"):
        cl.attention_lines(trace, 1, decoder, decoder)


def test_presentation_mode_keeps_each_bins_width_by_weight(causal):
    """for_projector thickened every scatter line to 3 px, so every bin, from a weight of 0.02 to 1,
    drew one width; each bin says in its meta that its width is data, and keeps it."""
    rec, tokens = causal
    fig = cl.attention_lines(layer(rec, 0), 0, tokens)
    big = spec(for_projector(fig))
    bins = [t for t in big["data"] if t["name"].startswith("weight ")]
    assert len(bins) >= 3 and all(t["meta"] == {WIDTH_ENCODES: "weight"} for t in bins)
    widths = [t["line"]["width"] for t in bins]
    assert widths == [t.line.width for t in fig.data if t.name.startswith("weight ")]
    assert widths == sorted(widths) and len(set(widths)) == len(widths)  # wider with the weight, each its own
    assert big["layout"]["font"]["size"] >= 16  # the rest of the figure is the projector's
