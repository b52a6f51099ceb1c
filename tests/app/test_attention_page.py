"""The Attention page: an encoder-decoder's alignment as it trains, teacher-forced and free
running, one decoding step, and the beam, each read back against the model's own recording."""
import json

import numpy as np
import pandas as pd
import pytest
import torch
from streamlit.testing.v1 import AppTest

import engine
from app import pages as nav
from app.charts import bottleneck as cbottleneck
from app.session import decoding
from engine.sites import ALIGNMENT

from .conftest import MAIN, chart, plotted

ATTENTION = nav.PATHS["attention"]


def page(query: dict | None = None) -> AppTest:
    at = AppTest.from_file(MAIN, default_timeout=120)
    for k, v in (query or {}).items():
        at.query_params[k] = v
    return at.run().switch_page(ATTENTION).run()


def lab(at: AppTest):
    return at.session_state["lab"]


def heatmap_z(spec: dict) -> np.ndarray:
    [z] = [plotted(trace["z"]) for trace in spec["data"] if trace["type"] == "heatmap" and "z" in trace
           and trace.get("name") != "masked"][:1]
    return np.asarray(z, dtype=np.float64)


def test_a_model_without_a_decoder_gets_the_encoder_decoders_to_open_and_a_button_opens_one():
    at = page()
    assert not at.exception
    assert "has no attention over a source" in at.info[0].value
    at.button(key="attention.open.dates").click().run()
    assert not at.exception and lab(at).setup.task == "dates" and lab(at).setup.model.attention == "dot"
    assert at.session_state["target_steps"] == engine.TASKS["dates"].preset.steps


def test_the_plotted_alignment_is_the_recordings_and_the_free_run_is_the_greedy_decoding():
    at = page({"task": "copy", "seq_len": "6"})
    assert not at.exception
    for _ in range(3):
        at.button(key="step").click().run()
    rec = lab(at).recording(0)
    forced = rec.attention_traces[ALIGNMENT].weights[0].double().numpy()  # [T_out, S]
    z = heatmap_z(chart(at, "Teacher forcing: alignment"))
    np.testing.assert_allclose(z[: len(forced)], forced, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(forced.sum(axis=1), 1.0, atol=1e-5)

    x, y = lab(at).probes.samples
    greedy = engine.beam_search(lab(at).model, x[0], width=1).best.tokens
    free = decoding.free_run(lab(at).model, x, y, 0)
    assert free.tokens == greedy
    # the free run replays the decoder on its own guesses: the same logits a step-by-step decode gives
    state = lab(at).model.start(x[:1])
    last = torch.tensor([engine.seq2seq.SOS])
    for t, token in enumerate(greedy):
        logits, state = lab(at).model.step(last, state)
        torch.testing.assert_close(logits[0], free.rec.y_hat[t], rtol=1e-4, atol=1e-5)
        last = torch.tensor([token])


def test_the_decoding_step_shows_row_t_of_the_alignment_and_the_models_next_token_distribution():
    at = page({"task": "dates"})
    at.slider(key="attention_t").set_value(3).run()
    assert not at.exception
    rec = lab(at).recording(0)
    spec = chart(at, "Decoding step t = 3")
    alpha, _, p = (np.asarray(plotted(trace["y"]), dtype=np.float64) for trace in spec["data"])
    trace = rec.attention_traces[ALIGNMENT]
    source = ~torch.isinf(trace.logits[0, 3])  # the padding (logit -inf, weight exactly 0) is left out of the plot
    assert (trace.weights[0, 3][~source] == 0).all() and 0 < len(alpha) == int(source.sum()) < len(source)
    np.testing.assert_allclose(alpha, trace.weights[0, 3][source].numpy(), rtol=1e-6)
    np.testing.assert_allclose(p, torch.softmax(rec.y_hat[3].double(), -1).numpy(), rtol=1e-5)


def test_the_score_picker_builds_each_score_of_the_course_and_none_says_why_there_is_no_map():
    at = page({"task": "reverse", "seq_len": "5"})
    assert "No attention" in at.info[0].value
    assert [json.loads(c.proto.spec)["layout"]["title"]["text"].startswith("The bottleneck")
            for c in at.get("plotly_chart")] == [True]  # no alignment: only the measured bottleneck
    for score in engine.config.SCORES:
        at.selectbox[0].set_value(score).run()
        assert not at.exception, score
        assert lab(at).setup.model.attention == score
        assert chart(at, "Teacher forcing: alignment")


@pytest.mark.parametrize("query", [{"task": "sort"}, {"task": "copy", "seq_len": "5", "arch": "transformer",
                                                       "num_heads": "2", "hidden_size": "16"}])
def test_a_pointer_network_and_a_transformers_cross_attention_open(query):
    at = page(query)
    assert not at.exception
    rec = lab(at).recording(0)
    site = decoding.alignment_site(rec)
    z = heatmap_z(chart(at, "Teacher forcing: alignment"))
    np.testing.assert_allclose(z, rec.attention_traces[site].weights[0].double().numpy(), rtol=1e-6, atol=1e-7)


def test_forcing_a_token_continues_as_the_model_dictates():
    """Made to write another token at step t, the decoder goes on as the model itself would from
    that prefix: stepping it by hand, greedily, gives the same continuation (beam width 1)."""
    at = page({"task": "copy", "seq_len": "6"})
    for _ in range(30):
        at.button(key="step").click().run()
    at.slider(key="beam_width").set_value(1).run()
    at.slider(key="attention_t").set_value(2).run()
    model, (x, y) = lab(at).model, lab(at).probes.samples
    words = decoding.target_words(lab(at).task)
    greedy = engine.beam_search(model, x[0], width=1).best.tokens
    forced = next(w for w in range(2, len(words)) if w != greedy[2])
    at.selectbox(key="forced_token").set_value(words[forced]).run()
    assert not at.exception and not at.warning
    state, last, written = model.start(x[:1]), torch.tensor([engine.seq2seq.SOS]), []
    with torch.no_grad():
        for t in range(y.shape[1]):
            logits, state = model.step(last, state)
            token = (greedy[t] if t < 2 else forced) if t <= 2 else int(logits[0].argmax())
            written.append(token)
            if token == engine.seq2seq.EOS:
                break
            last = torch.tensor([token])
    shown = " ".join(words[w] for w in written)
    assert written[:3] == [*greedy[:2], forced] and f"the decoder goes on: {shown} " in " ".join(
        c.value for c in at.caption)
    assert chart(at, f"Forced: '{words[forced]}' at step 2")


def test_the_bottleneck_figure_plots_the_shipped_measurement_and_its_caption_quotes_it():
    """The rows come from benchmarks/attention_bottleneck.py (re-measured in tests/engine/test_bottleneck.py)."""
    at = page({"task": "reverse", "seq_len": "5"})  # no attention: the page says why the map is missing, and shows this
    rows = pd.DataFrame(json.loads(cbottleneck.SHIPPED.read_text())["rows"])
    rows["attention"] = rows["attention"].fillna("none")
    spec = chart(at, "The bottleneck")
    for trace in spec["data"]:
        attention = "dot" if trace["name"].startswith("dot") else "none"
        field = "sequence_accuracy" if "whole sequences" in trace["name"] else "symbol_accuracy"
        mean = rows[rows["attention"] == attention].groupby("seq_len")[field].mean()
        assert plotted(trace["x"]) == mean.index.tolist()
        np.testing.assert_allclose(plotted(trace["y"]), mean.to_numpy() * 100, rtol=1e-9)
    caption = " ".join(c.value for c in at.caption)
    no_attention_at_40 = rows[(rows["attention"] == "none") & (rows["seq_len"] == 40)]["sequence_accuracy"].mean()
    assert f"{no_attention_at_40:.0%} at 40" in caption


def test_moving_a_slider_does_not_decode_again_until_the_weights_change(monkeypatch):
    at = page({"task": "dates"})
    calls = []
    real = decoding.free_run
    monkeypatch.setattr(decoding, "free_run", lambda *a: calls.append(1) or real(*a))
    at.slider(key="attention_t").set_value(2).run()
    at.slider(key="attention_t").set_value(3).run()
    assert not at.exception and calls == []  # the free run of these weights was kept
    at.button(key="step").click().run()
    assert calls == [1]  # new weights: decoded once again
