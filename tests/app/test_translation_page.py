"""The Encoder-decoder page on the translate task: its button opens the preset, the alignment is
drawn over real words (source words across, the target's French words down) and read back
against the recording, and a typed English sentence is translated with its own alignment, unknown
words named, and a sentence the model cannot read refused saying what to change."""
import numpy as np
import pytest

import engine
from app.charts.labels import visible
from app.session import decoding
from app.session.lessons import BY_KEY
from app.widgets import length_lesson
from engine import bleu as engine_bleu
from engine.losses import IGNORE
from engine.sites import ALIGNMENT

from .conftest import chart, plotted
from .test_attention_page import heatmap_z, lab, page
from .test_downloads import check_holds, csv, files  # noqa: F401 (files: a fixture)


def ticks(spec: dict, axis: str) -> list[str]:
    return spec["layout"][f"{axis}axis"]["ticktext"]


def test_the_button_opens_the_translation_preset():
    at = page()
    at.button(key="attention.open.translate").click().run()
    assert not at.exception
    setup = lab(at).setup
    assert setup.task == "translate" and setup.model == engine.TASKS["translate"].preset.model
    assert at.session_state["target_steps"] == engine.TASKS["translate"].preset.steps == 800


def test_the_alignment_has_the_source_words_across_and_the_targets_french_words_down():
    at = page({"task": "translate", "hidden_size": "16", "embedding_dim": "8"})
    assert not at.exception
    at.button(key="step").click().run()
    task, rec = lab(at).task, lab(at).recording(0)
    x, y = lab(at).probes.samples
    english, n = task.source_words(x[0]), int((y[0] != IGNORE).sum())
    french = task.target_words(y[0])
    assert n == len(french) + 1 < task.spec.out_len or n == task.spec.out_len  # </s>, then nothing to show
    spec = chart(at, "Teacher forcing: alignment")
    assert ticks(spec, "x") == [visible(w) for w in [*english, "</s>"]]  # the padding left out
    assert ticks(spec, "y") == [visible(w) for w in [*french, "</s>"]]
    weights = rec.attention_traces[ALIGNMENT].weights[0, :n, : len(english) + 1].double().numpy()  # [n, words]
    np.testing.assert_allclose(heatmap_z(spec), weights, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(weights.sum(axis=1), 1.0, atol=1e-5)  # the pads get exactly nothing
    [caption] = [c.value for c in at.caption if c.value.startswith("Recorded at")]
    assert f"Target: {' '.join(french)} </s>. The source's" in caption  # no word for the steps after </s>


def test_a_typed_sentence_is_translated_with_its_alignment_and_unknown_words_named():
    at = page({"task": "translate", "hidden_size": "16", "embedding_dim": "8"})
    at.text_input(key="attention_source_text").set_value("I am zyzzyva.").run()
    assert not at.exception and not at.warning
    [info] = [i.value for i in at.info if "vocabulary" in i.value]
    assert "zyzzyva" in info and "unk" in info
    task, model = lab(at).task, lab(at).model
    greedy = engine.beam_search(model, task.encode("I am zyzzyva."), width=1).best.tokens
    spec = chart(at, "Free running: alignment")
    assert ticks(spec, "x") == [visible(w) for w in ["i", "am", "<unk>", ".", "</s>"]]
    assert ticks(spec, "y") == [visible(task.target_vocab[t]) for t in greedy]
    assert decoding.unknown_words(task, "I am zyzzyva, zyzzyva.") == ["zyzzyva"]


@pytest.mark.parametrize("text, says", [
    ("zyzzyva quux", "None of 'zyzzyva', 'quux' is in the model's English vocabulary"),
    ("?!", "Type an English sentence with at least one word"),
    ("   ", "There is nothing but spaces to read"),
    ("I am very cold and tired today", "The sentence has 7 words and marks; the model reads at most 6"),
])
def test_a_sentence_it_cannot_read_says_what_to_change_and_shows_the_sample(text, says):
    at = page({"task": "translate", "hidden_size": "16", "embedding_dim": "8"})
    at.text_input(key="attention_source_text").set_value(text).run()
    assert not at.exception
    [warning] = at.warning
    assert warning.value.startswith(says) and warning.value.endswith("Showing sample 0 instead.")
    assert chart(at, "Teacher forcing: alignment")  # the probe sample is drawn instead


def test_the_alignment_download_holds_the_translation_map_shown(files):  # noqa: F811 (the fixture)
    """The teacher-forced CSV holds the map drawn: the target's words down to its </s>, none of
    the steps after it (IGNORE in the target); a typed sentence's, its free run."""
    at = page({"task": "translate", "hidden_size": "16", "embedding_dim": "8"})
    make, name = files["Alignment α_ti, teacher-forced (.csv)"]
    forced = csv(make())
    check_holds(forced, chart(at, "Teacher forcing: alignment"))
    _, y = lab(at).probes.samples
    assert forced.t.nunique() == int((y[0] != IGNORE).sum()) and name == "unrolled-translate-gru-alignment.csv"
    files.clear()
    at.text_input(key="attention_source_text").set_value("I am cold.").run()
    free = csv(files["Alignment α_ti, free-running on your source (.csv)"][0]())
    check_holds(free, chart(at, "Free running: alignment"))
    assert list(free.groupby("i")["source"].first()) == ["i", "am", "cold", ".", "</s>"]


def test_the_held_out_bleu_is_the_engines_greedy_then_with_the_beam_asked_for():
    at = page({"task": "translate", "hidden_size": "16", "embedding_dim": "8"})
    task, model = lab(at).task, lab(at).model

    def said() -> str:
        [caption] = [c.value for c in at.caption if c.value.startswith("Held-out BLEU")]
        return caption

    greedy = engine_bleu.held_out_bleu(model, task)
    assert said().startswith(f"Held-out BLEU at step 0 (sacrebleu, 0-100, on the 260 English sentences held out, "
                             f"their 538 French translations as references): greedy {greedy:.1f}.")
    at.button(key="attention.bleu_beam").click().run()
    beam = engine_bleu.held_out_bleu(model, task, width=3)
    assert f"greedy {greedy:.1f}; beam of 3 {beam:.1f}." in said()
    with lab(at).lock:  # 25 steps, as a playing page trains: the next held-out evaluation
        for _ in range(25):
            lab(at).advance()
    at.run()
    assert not at.exception
    again = engine_bleu.held_out_bleu(model, task)
    assert said().startswith("Held-out BLEU at step 25 ") and f"greedy {again:.1f}." in said()
    assert "beam of 3" not in said()  # measured on the weights of step 0, so no longer shown
    spec = chart(at, "Held-out BLEU over training")
    [line] = spec["data"]  # every evaluation the page measured
    assert plotted(line["x"]) == [0, 25] and plotted(line["y"]) == pytest.approx([greedy, again], abs=1e-9)
    assert spec["layout"]["yaxis"]["range"] == pytest.approx([0, max(1.0, 1.1 * max(greedy, again))])


def test_typed_text_is_echoed_cut_and_as_its_characters():
    """Issue 43, finding 8: typed text came back whole in a message (100,113 characters), and $qq$ $zz$
    rendered as maths in the caption that repeats the source."""
    at = page({"task": "translate", "hidden_size": "16", "embedding_dim": "8"})
    at.text_input(key="attention_source_text").set_value("z" * 100_000).run()
    assert not at.exception
    [warning] = at.warning
    assert len(warning.value) < 1_000 and "characters, cut" in warning.value
    at.text_input(key="attention_source_text").set_value("i $qq$").run()
    assert not at.exception and not at.warning
    [said] = [c.value for c in at.caption if "from the source you typed" in c.value]
    assert "'i \\$qq\\$'" in said


def test_the_bleu_by_length_is_the_engines_on_the_first_held_out_sentences_of_each_length():
    """On the 2017 corpus the page draws Bahdanau et al.'s Figure 2 for its model when asked: each span's greedy BLEU
    and how many sentences it scored, as engine.bleu.bleu_by_length measures them; kept until the weights move."""
    at = page({"task": "translate", "corpus": "eng-fra-2017", "max_words": "12", "hidden_size": "16",
               "embedding_dim": "8"})
    assert not at.exception and not [c for c in at.caption if "each point the corpus BLEU" in c.value]
    at.button(key="attention.bleu_by_length").click().run()
    assert not at.exception
    task, model = lab(at).task, lab(at).model
    measured = engine_bleu.bleu_by_length(model, task, most=engine_bleu.PER_LENGTH)
    spec = chart(at, "Held-out BLEU by sentence length")
    [line] = spec["data"]
    assert plotted(line["x"]) == ["1-5", "6-10", "11-15"]
    assert plotted(line["y"]) == pytest.approx([bleu for _, bleu in measured.values()], abs=1e-9)
    assert plotted(line["customdata"]) == [n for n, _ in measured.values()] == [engine_bleu.PER_LENGTH] * 3
    [caption] = [c.value for c in at.caption if "each point the corpus BLEU" in c.value]
    assert caption.startswith("At step 0,") and "200 of 11-15 words" in caption
    with lab(at).lock:
        lab(at).advance()
    at.run()
    assert not at.exception and not [c for c in at.caption if "each point the corpus BLEU" in c.value]


def test_the_length_lesson_draws_its_runs_range_and_seed_0s_pair_measured_here_with_the_pages_model():
    """The length lesson's figure: each shipped run's range over its ensemble (lowest as y, highest as customdata),
    seed 0's pair measured on this server as pretrained.bleu_by_length measures it (inside the range its ensemble
    measured for seed 0, widened as a replay is), and the page's own model as the engine measures it."""
    from streamlit.testing.v1 import AppTest

    from app.session import ensembles, pretrained
    from app.session.lesson_runs import replay

    from .conftest import MAIN

    at = AppTest.from_file(MAIN, default_timeout=180).run()
    at.button(key="lesson.length").click().run()
    assert not at.exception, [e.message for e in at.exception]
    at.button(key="attention.bleu_by_length").click().run()
    assert not at.exception, [e.message for e in at.exception]
    ensemble, pair = ensembles.shipped("length"), pretrained.lesson_pair("length", 0)
    traces = {trace.get("name"): trace for trace in chart(at, "Held-out BLEU by sentence length")["data"]}
    spans = ["1-5", "6-10", "11-15", "16-20"]
    for run, said in length_lesson.RUN_NAMES.items():
        band = traces[f"{said}: range of {len({m['seed'] for m in ensemble.members})} seeds"]
        ranges = [ensemble.value_range(f"shipped_{run}.bleu_{span.replace('-', '_')}") for span in spans]
        assert plotted(band["x"]) == spans
        assert plotted(band["y"]) == pytest.approx([low for low, _ in ranges], abs=1e-9)
        assert plotted(band["customdata"]) == pytest.approx([high for _, high in ranges], abs=1e-9)
        line = traces[f"seed 0 {said}, measured here"]
        measured = pretrained.bleu_by_length(pair[run])
        assert plotted(line["y"]) == pytest.approx([score for _, score in measured.values()], abs=1e-9)
        for span, (_, score) in zip(spans, measured.values()):
            seed_0 = [m["values"][f"shipped_{run}.bleu_{span.replace('-', '_')}"] for m in ensemble.members
                      if m["seed"] == 0]
            assert replay.close(score, min(seed_0), max(seed_0)), (run, span, score, seed_0)
    mine = engine_bleu.bleu_by_length(lab(at).model, lab(at).task, most=engine_bleu.PER_LENGTH)
    assert plotted(traces["your model, greedy"]["y"]) == pytest.approx([s for _, s in mine.values()], abs=1e-9)
    [caption] = [c.value for c in at.caption if "Shaded: for each, the range of the lesson's 3 shipped" in c.value]
    assert BY_KEY["length"].caption("bleu_by_length") in caption
    assert "holds out other sentences" not in caption  # the lesson's link: seed 0's pair's split
