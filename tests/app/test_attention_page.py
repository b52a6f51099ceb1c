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
from app.charts.beam_rows import kept_at
from app.charts.labels import visible
from app.session import decoding
from engine.seq2seq import EOS
from engine.sites import ALIGNMENT

from .conftest import MAIN, chart, plotted, shown
from .test_page_reruns import tick

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


@pytest.mark.parametrize(("seq_len", "stacked"), [("20", True), ("6", False)])
def test_maps_one_above_the_other_keep_one_line_titles_and_side_by_side_ones_break(seq_len, stacked):
    """Copy's 20 symbols put the two maps one above the other, each as wide as the page; their titles
    were broken as if in half a page. Presentation mode's 21 px titles break in a half column."""
    at = page({"task": "copy", "seq_len": seq_len})
    at.toggle(key="presentation").set_value(True).run()
    assert not at.exception
    for title in ("Teacher forcing: alignment", "Free running: alignment"):
        assert ("<br>" not in chart(at, title)["layout"]["title"]["text"]) == stacked, title


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
    # the beam's rows: a pointer's over its end marker and the positions, a transformer's top cross-attention, head 0
    x, _ = lab(at).probes.samples
    beam = engine.beam_search(lab(at).model, x[0], width=3)
    t = min(1, len(beam.steps) - 1)  # the slider's first step, or the last of a beam that stopped before it
    rows = heatmap_z(chart(at, f"Beam at output step t = {t}"))
    reference = [teacher_forced_row(lab(at).model, x[0], c.tokens, t)[0] for c in kept_at(beam, t)]
    np.testing.assert_allclose(rows, np.stack(reference), rtol=1e-5, atol=1e-6)


def teacher_forced_row(model, x, tokens, t) -> np.ndarray:
    """[heads, S_k]: where the decoder teacher-forced on `tokens` (then <eos>) looks at output step
    t, as engine.record gives it: the reference for a beam hypothesis's row."""
    y = torch.tensor([[*tokens, *[EOS] * (model.spec.out_len - len(tokens))]])  # [1, T_out]
    rec = engine.record(model, x[None], y, jacobians=False)
    return rec.attention_traces[decoding.alignment_site(rec)].weights[:, t].double().numpy()


def test_the_beams_rows_are_each_hypothesis_attention_teacher_forced_on_its_own_tokens():
    """The plotted rows at the chosen step, one per hypothesis the beam kept, in the tree's order:
    each is the alignment the decoder computes teacher-forced on that hypothesis's tokens (the
    padding left out, as on the maps), sums to 1, and is the row the beam kept."""
    at = trained(page({"task": "dates"}), 60)
    at.slider(key="beam_step").set_value(4).run()
    assert not at.exception
    model, (x, _) = lab(at).model, lab(at).probes.samples
    spec = chart(at, "Beam at output step t = 4")
    z = heatmap_z(spec)
    beam = engine.beam_search(model, x[0], width=3)
    words = decoding.target_words(lab(at).task)
    # the rows' order: the tree's nodes with 5 tokens written (step 4), top to bottom, as the tree chart plots them
    tree = next(trace for trace in chart(at, "Beam search keeping 3")["data"] if trace["mode"] == "markers+text")
    column = sorted((-y, hover[0]) for x, y, hover in zip(plotted(tree["x"]), plotted(tree["y"]), tree["customdata"])
                    if x == 5)
    by_prefix = {" ".join(visible(words[w]) for w in c.tokens): c for c in beam.steps[4]}
    hypotheses = [by_prefix[prefix] for _, prefix in column]
    source = ~model.spec.padded(x[:1])[0]  # [S]: the characters, not the padding
    assert z.shape == (3, int(source.sum())) and len(hypotheses) == 3
    for row, hypothesis in zip(z, hypotheses, strict=True):
        full = teacher_forced_row(model, x[0], hypothesis.tokens, 4)[0]  # [S]
        assert (full[~source.numpy()] == 0).all()
        np.testing.assert_allclose(row, full[source.numpy()], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(row, hypothesis.attention[4, 0, source].double().numpy(), rtol=1e-6)
    np.testing.assert_allclose(z.sum(axis=1), 1.0, atol=1e-5)
    labels = spec["layout"]["yaxis"]["ticktext"]
    assert [label.rsplit("→ ", 1)[1].split("<")[0] for label in labels] == \
        [visible(words[c.tokens[4]]) for c in hypotheses]  # each row names the token it wrote
    looked = [hover[3] for hover in tree["customdata"]]
    assert looked[0] == "" and all("looked most at" in text for text in looked[1:])  # the root wrote nothing


def trained(at: AppTest, steps: int) -> AppTest:
    """The page's model trained `steps` steps as its Step button does (60 on dates: its greedy
    decoding then depends on the source; after 5 it wrote '-----------' for every date), redrawn."""
    with lab(at).lock:
        for _ in range(steps):
            lab(at).advance()
    return at.run()


def greedy_words(model, x) -> list[str]:
    """The model's own greedy decoding of one source (its forward pass without a target), up to
    and with its first <eos>, as the maps' tick labels write it."""
    assert model.cfg.dropout == 0  # so the forward pass decodes alike in training and eval mode
    with torch.no_grad():
        tokens = model(x[None]).argmax(-1)[0].tolist()  # [T_out]
    tokens = tokens[: tokens.index(EOS) + 1] if EOS in tokens else tokens
    return [visible(engine.make_task("dates").target_vocab[t]) for t in tokens]


def weights_of(model) -> dict[str, torch.Tensor]:
    return {name: p.detach().clone() for name, p in model.named_parameters()}


def test_a_typed_date_is_decoded_free_running_and_the_model_is_untouched():
    at = trained(page({"task": "dates"}), 60)
    model = lab(at).model
    before, training = weights_of(model), model.training
    at.text_input(key="attention_source_text").set_value(" 21 Nov 2026 ").run()
    assert not at.exception and not at.warning
    ids = lab(at).task.encode("21 Nov 2026")  # [18]: the spaces around it dropped
    free = chart(at, "Free running: alignment")
    assert free["layout"]["yaxis"]["ticktext"] == greedy_words(model, ids)
    assert greedy_words(model, ids) != greedy_words(model, lab(at).probes.samples[0][0])  # the probe's would fail
    assert free["layout"]["xaxis"]["ticktext"] == [visible(c) for c in "21 Nov 2026"]  # its characters, no padding
    beam = engine.beam_search(model, ids, width=3)
    typed = slice(-len("21 Nov 2026"), None)  # its characters: a date is padded at the front
    np.testing.assert_allclose(heatmap_z(chart(at, "Beam at output step t = 1")),
                               np.stack([c.attention[1, 0, typed].double().numpy() for c in kept_at(beam, 1)]),
                               rtol=1e-6)
    titles = [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in at.get("plotly_chart")]
    assert not any(title.startswith("Teacher forcing") for title in titles)
    assert "No teacher-forced map" in at.info[0].value and "typed text has no target" in at.info[0].value
    assert "from the source you typed, '21 Nov 2026'" in at.caption[0].value
    after = weights_of(model)
    assert model is lab(at).model and model.training == training
    assert all(torch.equal(before[name], after[name]) for name in before)


@pytest.mark.parametrize(("text", "says"), [
    ("   ", "There is nothing but spaces to read"),
    ("21 Nov 2026!", "Characters ['!'] do not occur in the date formats"),
    ("September 30, 2000 12", "A date has 1 to 18 characters"),  # the task's limit, said
])
def test_typed_text_the_model_cannot_read_says_what_to_change_and_the_probe_sample_stays(text, says):
    at = trained(page({"task": "dates"}), 60)
    at.text_input(key="attention_source_text").set_value(text).run()
    assert not at.exception
    [warning] = at.warning
    assert shown(warning.value).startswith(says) and warning.value.endswith("Showing sample 0 instead.")
    model, (x, _) = lab(at).model, lab(at).probes.samples
    forced = lab(at).recording(0).attention_traces[ALIGNMENT].weights[0]  # [T_out, S]
    source = ~model.spec.padded(x[:1])[0]  # [S]
    np.testing.assert_allclose(heatmap_z(chart(at, "Teacher forcing: alignment")),
                               forced[:, source].double().numpy(), rtol=1e-6, atol=1e-7)
    assert chart(at, "Free running: alignment")["layout"]["yaxis"]["ticktext"] == greedy_words(model, x[0])
    assert at.text_input(key="attention_source_text").value == text  # what was typed is kept, to be corrected


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


def test_a_typed_source_is_decoded_once_per_text_and_recording(monkeypatch):
    at = page({"task": "dates"})
    calls = []
    real = decoding.free_run
    monkeypatch.setattr(decoding, "free_run", lambda *a: calls.append(a[2]) or real(*a))
    at.text_input(key="attention_source_text").set_value("21 Nov 2026").run()
    at.slider(key="attention_t").set_value(3).run()
    at.slider(key="beam_step").set_value(2).run()
    assert not at.exception and calls == [None]  # typed: no target; moving sliders decoded nothing again
    at.text_input(key="attention_source_text").set_value("11/21/26").run()
    at.text_input(key="attention_source_text").set_value("21 Nov 2026").run()
    assert calls == [None, None]  # a new text decoded once, the first one kept


@pytest.mark.parametrize("lesson", ["bottleneck", "attention-aligns"])
def test_play_trains_a_model_without_attention_as_the_lessons_ask(lesson):
    """The lessons' "pick none as the score function and play again": without attention the page
    drew no live fragment, and only its ticks train, so Play turned into Pause and nothing trained."""
    at = AppTest.from_file(MAIN, default_timeout=60).run()
    at.button(key=f"lesson.{lesson}").click().run()
    [score] = [box for box in at.selectbox if box.label == "Score function"]
    score.set_value("none").run()
    assert lab(at).setup.model.attention is None and lab(at).trainer.steps_done == 0
    at.button(key="play").click().run()
    for _ in range(3):
        tick(at)
    assert not at.exception, [e.message for e in at.exception]
    assert lab(at).trainer.steps_done > 0
    assert lab(at).playing and at.button(key="play").label == "Pause"


def test_the_attention_aligns_lessons_year_digits_are_counted_on_the_page():
    """The card's "of the year's digits on the page's samples look hardest at that very digit of the
    source", computed where the student can read it: the caption's count is the alignment's argmax
    over each probe sample's recording, read independently here; a step renews it."""
    from app.session.lessons import BY_KEY

    at = page(BY_KEY["attention-aligns"].setup.to_query())
    model = lab(at)
    for _ in range(40):
        model.step()
    at.run()
    x, y = model.probes.samples

    def counted() -> int:
        hits = 0
        for b in range(len(x)):
            weights = model.recording(b).attention_traces[ALIGNMENT].weights[0]  # [T_out, S]
            source = model.task.symbols_of(x[b])
            year = [model.task.target_vocab[int(t)] for t in y[b, :4]]
            hits += sum(source[int(weights[t].argmax())] == year[t] for t in range(4))
        return hits

    said = [c.value for c in at.caption if "year digits" in c.value]
    assert said == [f"At step 40, {counted()} of the {4 * len(x)} year digits of the {len(x)} probe samples "
                    f"({counted() / (4 * len(x)):.0%}) look hardest at that very digit of the source: the alignment "
                    "has learnt where each comes from."]
    model.step()
    at.run()
    assert [c.value for c in at.caption if "year digits" in c.value][0].startswith(f"At step 41, {counted()} of")
