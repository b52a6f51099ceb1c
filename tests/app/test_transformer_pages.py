"""The Transformers pages: Positional encoding plots engine.positional_encoding and a learned table
as it trains; Self-attention plots the recording's own weights for every layer and head, a
causal model's masked entries exactly 0, and opens a transformer from the default lab."""
import json

import numpy as np
import pytest
import torch
from streamlit.testing.v1 import AppTest

import engine
from app import pages as nav
from app.charts.attention_lines import LINES_UP_TO
from app.charts.labels import visible
from app.session.lab import RENEW_FACTOR
from app.widgets import state

from .conftest import MAIN, chart, plotted

POSITIONS, SELF_ATTENTION = nav.PATHS["positions"], nav.PATHS["self-attention"]


def page(path: str, query: dict | None = None) -> AppTest:
    at = AppTest.from_file(MAIN, default_timeout=60)
    for k, v in (query or {}).items():
        at.query_params[k] = v
    return at.run().switch_page(path).run()


def no_exception(at: AppTest) -> None:
    assert not at.exception, [e.message for e in at.exception]


def z(trace: dict) -> np.ndarray:
    return np.array(plotted(trace["z"]))


def maps(spec: dict) -> list[np.ndarray]:
    """The weight maps of an attention figure, in order (the grey mask overlays left out)."""
    return [z(t) for t in spec["data"] if t["type"] == "heatmap" and t.get("name") != "masked"]


def lines(spec: dict) -> dict[tuple[int, int], float]:
    """The lines view read back: each line drawn, (query i, key j) -> the weight its hover gives."""
    ends = set()
    for trace in (t for t in spec["data"] if t["name"].startswith("weight ")):
        y = np.array(plotted(trace["y"]), dtype=float).reshape(-1, 3)  # [lines, 3] query, key, None
        ends |= {(int(i), int(j)) for i, j in y[:, :2]}
    (points,) = [t for t in spec["data"] if t.get("name") == "weights"]
    said = {(i, j): w for i, j, _, _, w in points["customdata"]}
    assert set(said) == ends  # one hover per line
    return said


def nonzero(weights: torch.Tensor, rows) -> dict[tuple[int, int], float]:
    """What the lines view should draw: each weight of `rows` that is not 0, by (i, j)."""
    return {(i, j): float(weights[i, j]) for i in rows for j in range(weights.shape[1]) if weights[i, j] != 0}


def titles(at: AppTest) -> list[str]:
    return [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in at.get("plotly_chart")]


def transformer_link(task: str, **params) -> dict:
    return {"task": task, "arch": "transformer", "hidden_size": "16", "num_heads": "2", "num_layers": "2",
            "forget_bias": "none", **{k: str(v) for k, v in params.items()}}


# ------------------------------------------------------------------ Positional encoding

def test_the_positional_heatmap_is_engine_positional_encoding_with_the_course_cell_read_out():
    at = page(POSITIONS)
    no_exception(at)
    assert at.get("latex") and "10000" in at.get("latex")[0].proto.body
    heat = chart(at, "Positional encoding, d = 512")
    expected = engine.positional_encoding(64, 512).float().numpy()
    assert np.array_equal(z(heat["data"][0]), expected)
    notes = " ".join(a["text"] for a in heat["layout"]["annotations"])
    assert "PE(22, 100)" in notes and "-0.4786" in notes and "-0.8781" in notes
    assert any("GWU lecture's worked example" in c.value for c in at.caption)
    dots = chart(at, "Dot products between positions")
    assert np.allclose(z(dots["data"][0]), expected @ expected.T, rtol=1e-5, atol=1e-4)
    at.slider(key=state.PE_WIDTH).set_value(128).run()
    at.slider(key=state.PE_POSITIONS).set_value(16).run()  # below position 22: the cell read moves in range
    no_exception(at)
    assert np.array_equal(z(chart(at, "Positional encoding, d = 128")["data"][0]),
                          engine.positional_encoding(16, 128).float().numpy())
    assert at.number_input(key=state.PE_POSITION_BOX).value == 15


def test_the_default_lab_is_offered_a_learned_table_that_trains_live():
    at = page(POSITIONS)
    assert "not a transformer" in at.info[0].value
    at.button(key="positions.open.learned").click().run()
    no_exception(at)
    lab = at.session_state["lab"]
    assert lab.setup.model.arch == "transformer" and lab.setup.model.position_encoding == "learned"
    before = maps(chart(at, "Learned positions beside the sinusoid"))
    table = lab.model.positions.table.weight.detach()
    rows = before[0].shape[0]
    assert rows == max(lab.task.spec.out_len, lab.recording(0).x.shape[0])  # every position reversal trains
    assert np.array_equal(before[0], table[:rows].float().numpy())
    assert np.array_equal(before[1], engine.positional_encoding(rows, table.shape[1]).float().numpy())
    assert any("Since its random start, the 9 rows trained have moved 0.0%" in c.value for c in at.caption)
    at.button(key="step").click().run()
    no_exception(at)
    assert lab.trainer.steps_done == 1
    after = maps(chart(at, "Learned positions beside the sinusoid"))
    assert not np.array_equal(after[0], before[0])  # trained, and drawn again
    assert np.array_equal(after[0], lab.model.positions.table.weight.detach()[:rows].float().numpy())
    change = np.linalg.norm(after[0].astype(np.float64) - before[0]) / np.linalg.norm(before[0].astype(np.float64))
    assert any(f"have moved {change:.1%}" in c.value for c in at.caption) and change > 0
    held = lab.held_out.log.last  # the lesson's figure on the page, not only in the sidebar
    assert any(c.value.endswith(f"Held-out accuracy: {held['metric']:.1%} of the symbols right (step "
                                f"{held['step']:,}).") for c in at.caption)


def test_a_sinusoidal_transformer_is_told_it_has_nothing_to_learn():
    at = page(POSITIONS, transformer_link("reverse", seq_len=4))
    no_exception(at)
    assert "fixed sinusoid" in at.info[0].value and at.button(key="positions.open.learned")


# ------------------------------------------------------------------ Self-attention

def test_the_default_lab_is_offered_three_transformers():
    at = page(SELF_ATTENTION)
    no_exception(at)
    assert "no self-attention" in at.info[0].value and not at.get("plotly_chart")
    for task in ("charlm", "sentiment", "reverse"):
        assert at.button(key=f"self_attention.open.{task}")


def test_a_causal_char_lm_plots_its_recorded_weights_with_the_future_exactly_zero():
    at = page(SELF_ATTENTION)
    at.button(key="self_attention.open.charlm").click().run()
    no_exception(at)
    lab = at.session_state["lab"]
    assert lab.setup.model.arch == "transformer" and not lab.setup.model.bidirectional
    rec = lab.recording(0)
    sites = sorted(rec.attention_traces, key=lambda s: s.layer)
    grid = maps(chart(at, "Self-attention of every layer"))
    heads = lab.setup.model.num_heads
    assert len(grid) == len(sites) * heads
    T = rec.attention_traces[sites[0]].weights.shape[1]
    future = np.triu(np.ones((T, T), dtype=bool), k=1)
    for k, plotted_map in enumerate(grid):
        weights = rec.attention_traces[sites[k // heads]].weights[k % heads].numpy()
        assert np.array_equal(plotted_map, weights)
        assert (plotted_map[future] == 0).all() and np.allclose(plotted_map.sum(axis=1), 1, atol=1e-5)
    ticks = chart(at, "Layer 0 self, head 0")["layout"]["yaxis"]["ticktext"]  # the grid ticks 16 tokens at most
    assert ticks == [visible(ch) for ch in lab.symbols(0)] and len(ticks) == T
    # the focused map: layer 1, head 2
    at.number_input(key=state.LAYER).set_value(1).run()
    at.selectbox(key=state.SA_HEAD).set_value(2).run()
    no_exception(at)
    focused = maps(chart(at, "Layer 1 self, head 2"))[0]
    assert np.array_equal(focused, rec.attention_traces[sites[1]].weights[2].numpy())
    drawn = at.session_state[state.SA_DRAWN]["head"]  # what the CSV download writes
    assert np.array_equal(drawn["weight"].to_numpy().reshape(T, T), focused.astype(np.float64))
    at.selectbox(key=state.SA_HEAD).set_value("mean of heads").run()
    mean = maps(chart(at, "Layer 1 self, mean of"))[0]
    assert np.allclose(mean, rec.attention_traces[sites[1]].weights.mean(dim=0).numpy(), atol=1e-7)


def test_the_lines_view_draws_the_focused_heads_weights_and_the_picked_querys_row():
    at = page(SELF_ATTENTION, transformer_link("charlm", seq_len=12))
    no_exception(at)
    rec = at.session_state["lab"].recording(0)
    sites = sorted(rec.attention_traces, key=lambda s: s.layer)
    first = rec.attention_traces[sites[0]].weights  # [heads, T, T]
    T = first.shape[1]
    drawn = lines(chart(at, "Who looks at whom: layer 0 self, head 0"))
    assert drawn == nonzero(first[0], range(T))
    assert not any(j > i for i, j in drawn)  # the causal mask: no line to a later token
    assert any("No line runs down" in c.value for c in at.caption)
    # it follows the focused map's layer and head
    at.number_input(key=state.LAYER).set_value(1).run()
    at.selectbox(key=state.SA_HEAD).set_value(1).run()
    no_exception(at)
    assert lines(chart(at, "Who looks at whom: layer 1 self, head 1")) == nonzero(
        rec.attention_traces[sites[1]].weights[1], range(T))
    at.selectbox(key=state.SA_LINES_QUERY).set_value(5).run()
    no_exception(at)
    assert at.session_state[state.SA_LINES_QUERY] == 5
    assert lines(chart(at, "Who looks at whom: layer 1 self, head 1")) == nonzero(
        rec.attention_traces[sites[1]].weights[1], [5])
    at.selectbox(key=state.SA_HEAD).set_value("mean of heads").run()
    mean = rec.attention_traces[sites[1]].weights.mean(dim=0)
    assert lines(chart(at, "Who looks at whom: layer 1 self, mean of 2 heads")) == nonzero(mean, [5])
    at.selectbox(key=state.SA_LINES_QUERY).set_value(None).run()
    no_exception(at)
    assert lines(chart(at, "Who looks at whom")) == nonzero(mean, range(T))


def test_step_trains_and_redraws_the_grid():
    at = page(SELF_ATTENTION, transformer_link("charlm", seq_len=12))
    lab = at.session_state["lab"]
    before = maps(chart(at, "Self-attention of every layer"))
    at.button(key="step").click().run()
    no_exception(at)
    assert lab.trainer.steps_done == 1
    after = maps(chart(at, "Self-attention of every layer"))
    rec = lab.recording(0)
    first = rec.attention_traces[sorted(rec.attention_traces, key=lambda s: s.layer)[0]]
    assert np.array_equal(after[0], first.weights[0].numpy()) and not np.array_equal(after[0], before[0])


def test_a_playing_page_draws_one_recording_until_renewing_it_is_due(monkeypatch):
    """Ticks between two renewals (Lab.recording) send each figure exactly as it was, with the step
    it was recorded at, while the model trains on; the renewal draws the weights as they are then."""
    from app.session import probes

    from .test_page_reruns import tick

    clock = [100.0]
    monkeypatch.setattr(probes.time, "monotonic", lambda: clock[0])
    at = page(SELF_ATTENTION, transformer_link("charlm", seq_len=12))
    lab = at.session_state["lab"]
    lab.playing = True
    at.run()  # a playing page's whole run: it records the weights as they are (step 0)
    specs = [c.proto.spec for c in at.get("plotly_chart")]
    for _ in range(2):
        drawn = tick(at)
        assert lab.trainer.steps_done > 0 and lab.probes.recorded_at == 0
        assert [c.proto.spec for c in drawn.get("plotly_chart")] == specs
        assert any(c.value.startswith("Recorded at step 0 on sample 0.") for c in drawn.caption)
    clock[0] += lab.renewal_cost * RENEW_FACTOR + 1
    drawn = tick(at)
    renewed_at = lab.probes.recorded_at
    assert renewed_at > 0 and any(c.value.startswith(f"Recorded at step {renewed_at:,} on sample 0.")
                                  for c in drawn.caption)
    rec = lab.probes.drawn_recording(0)  # the renewed one (the tick trained on after drawing it)
    first = rec.attention_traces[sorted(rec.attention_traces, key=lambda s: s.layer)[0]]
    grid = maps(json.loads(drawn.get("plotly_chart")[0].proto.spec))
    assert np.array_equal(grid[0], first.weights[0].numpy())
    assert not np.array_equal(grid[0], maps(json.loads(specs[0]))[0])


def test_the_why_sqrt_dk_pair_opens_the_picked_query_of_the_focused_head():
    at = page(SELF_ATTENTION, transformer_link("charlm", seq_len=12))
    at.slider(key=state.SA_QUERY_SLIDER).set_value(5).run()
    no_exception(at)
    rec = at.session_state["lab"].recording(0)
    trace = rec.attention_traces[sorted(rec.attention_traces, key=lambda s: s.layer)[0]]
    bars = chart(at, "Why divide by")["data"]
    used = [b for b in bars if b["xaxis"] == "x2" and "what the head uses" in b["name"]][0]
    assert np.array_equal(np.array(plotted(used["y"]), dtype=np.float32), trace.weights[0, 5].numpy())
    entropy = chart(at, "Softmax entropy per query")["data"]
    assert len(plotted(entropy[0]["x"])) == trace.weights.shape[1]


def test_an_encoder_decoders_three_attentions_can_each_be_opened():
    at = page(SELF_ATTENTION)
    at.button(key="self_attention.open.reverse").click().run()
    no_exception(at)
    lab = at.session_state["lab"]
    assert lab.task.spec.mapping == "encdec" and lab.setup.model.arch == "transformer"
    rec = lab.recording(0)
    assert any("encoder layer" in t for t in titles(at))
    at.radio(key=state.STACK).set_value("decoder").run()
    assert "Self-attention of every decoder layer" in titles(at)[0]
    at.radio(key=state.SA_KIND).set_value("cross").run()
    no_exception(at)
    spec = chart(at, "Cross-attention of every decoder layer")
    cross = sorted((s for s in rec.attention_traces if s.kind == "cross"), key=lambda s: s.layer)
    for k, plotted_map in enumerate(maps(spec)):
        assert np.array_equal(plotted_map, rec.attention_traces[cross[k // 2]].weights[k % 2].numpy())
    assert spec["layout"]["yaxis"]["ticktext"][0] == "&lt;sos&gt;"  # the decoder's inputs, teacher-forced
    bottom = [axis for name, axis in spec["layout"].items() if name.startswith("xaxis") and "ticktext" in axis]
    assert bottom and all(axis["ticktext"] == [visible(s) for s in lab.symbols(0)] for axis in bottom)  # the source


def test_an_encoder_on_sentiment_has_no_causal_mask():
    at = page(SELF_ATTENTION)
    at.button(key="self_attention.open.sentiment").click().run()
    no_exception(at)
    lab = at.session_state["lab"]
    assert lab.setup.model.bidirectional and lab.task.spec.mapping == "seq2vec"
    rec = lab.recording(0)
    site = sorted(rec.attention_traces, key=lambda s: s.layer)[0]
    assert np.array_equal(maps(chart(at, "Self-attention of every"))[0], rec.attention_traces[site].weights[0].numpy())
    assert any("No mask" in c.value for c in at.caption)


def test_values_have_no_tokens_so_positions_label_the_maps():
    at = page(SELF_ATTENTION, transformer_link("adding", seq_len=8))
    no_exception(at)
    ticks = chart(at, "Self-attention of every layer")["layout"]["yaxis"]["ticktext"]
    assert ticks == [f"t={t}" for t in range(8)]


def test_typed_text_is_read_and_bad_text_gets_a_message():
    at = page(SELF_ATTENTION, transformer_link("charlm", seq_len=12))
    at.text_input(key=state.SA_TEXT).set_value("the cat sat").run()
    no_exception(at)
    lab = at.session_state["lab"]
    ids = lab.task.encode("the cat sat")
    rec = engine.record(lab.model, ids[None, :-1], ids[None, 1:], jacobians=False)
    spec = chart(at, "Self-attention of every layer")
    assert spec["layout"]["yaxis"]["ticktext"] == [visible(ch) for ch in "the cat sa"]  # it predicts the last "t"
    first = rec.attention_traces[sorted(rec.attention_traces, key=lambda s: s.layer)[0]]
    assert np.array_equal(maps(spec)[0], first.weights[0].numpy())
    at.text_input(key=state.SA_TEXT).set_value("the cat \u2603 sat").run()
    no_exception(at)
    assert "not in this corpus" in at.warning[0].value and "Showing sample 0" in at.warning[0].value
    at.text_input(key=state.SA_TEXT).set_value("t").run()
    assert "at least two characters" in at.warning[0].value
    at.session_state[state.SA_TEXT] = "the cat sat on the mat. " * 30  # 720: the box keeps 513 (max_chars)
    at.run()
    no_exception(at)
    assert len(at.text_input(key=state.SA_TEXT).value) == 513 and not at.warning
    assert len(maps(chart(at, "Self-attention of every layer"))[0]) == 512


@pytest.mark.parametrize("bidirectional", [False, True])
def test_a_long_sample_draws_512_positions_of_a_causal_model_and_refuses_an_encoders(bidirectional):
    """Past 128 positions the grid draws each layer's mean of heads (every head would be 14 MB a
    redraw at 512); the focused map draws one head whole."""
    task = "masked_lm" if bidirectional else "charlm"  # an encoder reads ahead: the masked task's, not a char model's
    at = page(SELF_ATTENTION, transformer_link(task, seq_len=600, bidirectional=str(bidirectional).lower(),
                                               batch_size=2))
    no_exception(at)
    if bidirectional:
        assert "600 positions" in at.warning[0].value and not at.get("plotly_chart")
        return
    rec = at.session_state["lab"].recording(0)
    first = rec.attention_traces[sorted(rec.attention_traces, key=lambda s: s.layer)[0]]
    layer_mean = maps(chart(at, "Self-attention of every layer"))[0]
    assert layer_mean.shape == (512, 512) and "mean over heads" in chart(at, "Self-attention of every layer")[
        "layout"]["title"]["text"]
    np.testing.assert_allclose(layer_mean, first.weights[:, :512, :512].mean(dim=0).numpy(), rtol=1e-5, atol=1e-7)
    assert torch.allclose(first.weights[0, :512, :512].sum(dim=1), torch.ones(512), atol=1e-5)  # nothing cut off
    assert any("first 512 of 600" in c.value for c in at.caption)
    drawn = lines(chart(at, "Who looks at whom"))  # the first 60 queries' lines: every one would be a blur
    assert drawn == nonzero(first.weights[0, :512, :512], range(LINES_UP_TO))
    assert any(f"Over {LINES_UP_TO} queries" in c.value for c in at.caption)
    at.selectbox(key=state.SA_LINES_QUERY).set_value(500).run()
    no_exception(at)
    assert lines(chart(at, "Who looks at whom")) == nonzero(first.weights[0], [500])
