"""Pretrained embeddings: three runs of one LSTM from the same seed on the same batches, the frozen
and fine-tuned ones with the word2vec vectors in their embedding's word rows (the frozen one's never
moving, no gradient reaching it); the page plots the runs' own logs and keeps the runs the student
had when asked for vectors it does not have."""
import numpy as np
import pandas as pd
import pytest
import torch
from streamlit.testing.v1 import AppTest

from app import pages as nav
from app.charts.style import BLUE, GREEN, GREY
from app.session.embeddings import DEFAULT, EmbeddingRun, with_settings
from app.session.lessons import BY_KEY
from app.session.word_vectors import (
    LESSON_NETWORK,
    LESSON_PLAN,
    SENTENCE_WORDS,
    Plan,
    VectorRuns,
    setup_of,
    shipped_vectors,
)
from app.widgets import state
from engine.bag_of_words import bag_of_words_accuracy
from engine.tasks import parse_reviews
from engine.tasks.sentiment import longer_than, shipped_sentences, words_for_most
from engine.word_vectors import WordVectors, scaled

from .conftest import MAIN, chart, plotted
from .test_transfer_page import no_exception, stepped

COLOURS = {"random": GREY, "frozen": BLUE, "fine-tuned": GREEN}  # the page's, in every figure of it

PAGE = nav.PATHS["word-vectors"]


def page() -> AppTest:
    at = AppTest.from_file(MAIN, default_timeout=120)
    return at.run().switch_page(PAGE).run()


def test_the_lessons_network_is_the_plans():
    assert LESSON_PLAN.network(shipped_vectors()) == LESSON_NETWORK
    assert setup_of(LESSON_PLAN, LESSON_NETWORK).make_task().spec.name == "sentiment"


def test_the_runs_differ_only_in_the_embeddings_word_rows():
    runs = VectorRuns(Plan(labelled=100), shipped_vectors())
    random, frozen, tuned = (dict(run.model.named_parameters()) for run in runs.runs)
    vocab, found = runs.task.vocab, shipped_vectors()
    for name in random:
        if name != "embedding.weight":
            assert torch.equal(random[name], frozen[name]) and torch.equal(random[name], tuned[name]), name
    assert torch.equal(frozen["embedding.weight"], tuned["embedding.weight"])
    index = {w: i for i, w in enumerate(found.words)}
    copied = [i for i, w in enumerate(vocab) if w in index and not w.startswith("<")]
    assert len(copied) == runs.covered.found > 0.9 * runs.covered.words
    expected = scaled(found.vectors[[index[vocab[i]] for i in copied]])  # [S, d]
    torch.testing.assert_close(frozen["embedding.weight"][copied], expected)
    kept = [i for i in range(len(vocab)) if i not in set(copied)]
    assert torch.equal(frozen["embedding.weight"][kept], random["embedding.weight"][kept])


def test_the_frozen_embedding_never_moves_and_the_fine_tuned_one_does():
    runs = stepped(VectorRuns(Plan(labelled=100), shipped_vectors()), 50)
    start = runs.runs[1].start
    frozen, tuned = runs.runs[1].model.embedding.weight, runs.runs[2].model.embedding.weight
    assert torch.equal(frozen, start["embedding.weight"])
    assert not torch.equal(tuned, start["embedding.weight"])
    parts = runs.parts_frame()
    embedding = parts[(parts.part == "embedding") & (parts.step > 0)]
    by_run = embedding.groupby("run")
    assert (by_run.get_group("frozen").grad_norm == 0).all() and (by_run.get_group("frozen").moved == 0).all()
    assert (by_run.get_group("fine-tuned").grad_norm > 0).all() and (by_run.get_group("random").moved > 0).all()
    assert all(run.steps_done == 50 for run in runs.runs)


def test_the_page_plots_the_runs_own_logs():
    at = page()
    no_exception(at)
    runs = at.session_state[state.VECTORS]
    assert runs.plan == LESSON_PLAN and len(runs.task.train_y) == 300
    stepped(runs, 50)
    at.run()
    no_exception(at)
    spec = chart(at, "Held-out accuracy of each run")
    log = runs.log_frame()

    for run in ("random", "frozen", "fine-tuned"):
        [trace] = [t for t in spec["data"] if t.get("name") == run]
        rows = log[log.run == run]
        assert plotted(trace["x"]) == rows.step.tolist()
        assert plotted(trace["y"]) == rows.metric.tolist()
    assert any(f"{runs.covered.found:,} of the {runs.covered.words:,} words" in m.value for m in at.markdown)
    task = runs.task  # the line to beat: a bag of words on the runs' own labelled sentences and scored rows
    expected = bag_of_words_accuracy(task.train_x, task.train_y,
                                     *task.test_set(), len(task.vocab), 2, task.spec.pad_id)
    [line] = [t for t in spec["data"] if t.get("name", "").startswith("bag of words, same words")]
    assert plotted(line["y"]) == [expected, expected] and 0.6 < expected < 0.9
    assert len(task.train_y) == LESSON_PLAN.labelled and len(runs.held_out[1]) == len(task.test_set()[1])
    assert any(f"scores {expected:.1%}: the line to beat" in c.value for c in at.caption)
    at_50 = log[log.step == 50].set_index("run").metric  # the caption's verdict: the best run against the line
    best = at_50.max()
    said = (f"is ahead of the bag of words ({best:.1%} against {expected:.1%})" if best > expected else
            f"**The bag of words is ahead** ({expected:.1%} against the " if best < expected else "is level with")
    assert any("At step 50: " in c.value and said in c.value for c in at.caption)
    behind = pd.DataFrame({"run": ["random", "frozen", "fine-tuned"], "step": 1000, "metric": [0.65, 0.706, 0.695]})
    assert "Fine-tuned is behind frozen here" in runs.standing(behind)  # said, not left for a class to wonder
    ahead = behind.assign(metric=[0.65, 0.95, 0.96])  # above the bag of words too
    assert "behind" not in runs.standing(ahead) and "The fine-tuned run is ahead" in runs.standing(ahead)


def test_the_lessons_band_draws_each_run_in_its_colour_on_the_page():
    at = AppTest.from_file(MAIN, default_timeout=120).run()
    at.button(key="lesson.pretrained-embeddings").click().run()
    no_exception(at)
    stepped(at.session_state[state.VECTORS], 5)
    at.run()
    band = chart(at, "Your run among the measured runs")
    accuracy = chart(at, "Held-out accuracy of each run")
    accuracy_colours = {t["name"]: t["line"]["color"] for t in accuracy["data"] if t.get("name") in COLOURS}
    band_colours = {t["name"].removesuffix(": yours"): t["line"]["color"] for t in band["data"]
                    if t.get("name", "").endswith(": yours")}
    assert band_colours == accuracy_colours == COLOURS  # random grey, frozen blue, fine-tuned green in both


def test_asking_for_your_vectors_before_training_any_keeps_the_runs():
    at = page()
    runs = at.session_state[state.VECTORS]
    at.radio[0].set_value("yours")
    at.button(key="FormSubmitter:vectors_form-Train the three runs").click().run()
    no_exception(at)
    assert any("not trained word2vec on the Embeddings page" in w.value for w in at.warning)
    assert at.session_state[state.VECTORS] is runs and not runs.playing


def reviews_csv(n: int = 60) -> bytes:
    rows = ["review,sentiment"] + [f'"the food was {"great" if i % 2 else "awful"}, visit {i}",'
                                   f'{"positive" if i % 2 else "negative"}' for i in range(n)]
    return "\n".join(rows).encode()


def test_an_uploaded_csv_is_read_with_its_own_vocabulary_and_must_be_the_one_the_plan_names():
    reviews = parse_reviews(reviews_csv())
    plan = Plan(labelled=0, csv_digest=reviews.digest)
    runs = VectorRuns(plan, shipped_vectors(), reviews)
    assert "visit" in runs.task.vocab and len(runs.task.train_y) + len(runs.held_out[1]) == 60
    assert runs.covered.words == len(runs.task.vocab) - 2  # <pad>, <unk>
    with pytest.raises(ValueError, match="not the ones the plan names"):
        VectorRuns(Plan(labelled=0), shipped_vectors(), reviews)


def long_reviews_csv(n: int = 60) -> bytes:
    """Reviews of 30 to 325 words (review i: 30 + 5 i), their label decided by their first word: a run reading
    only the last 40 words of each could not tell."""
    rows = ["review,sentiment"]
    for i in range(n):
        label = "positive" if i % 2 else "negative"
        rows.append(f'"{"great" if i % 2 else "awful"} {" ".join(["film"] * (29 + 5 * i))}",{label}')
    return "\n".join(rows).encode()


def test_the_shipped_sentences_are_read_whole_but_for_21_and_a_plan_is_made_without_reading_them():
    sentences = shipped_sentences()[0]
    assert words_for_most(sentences) == SENTENCE_WORDS == LESSON_PLAN.seq_len(None) == 40
    assert longer_than(sentences, 40) == 21 and len(sentences.labels) == 3_000
    assert BY_KEY["pretrained-embeddings"].setup.task_params["seq_len"] == 40  # the lesson's, measured at 40


def test_an_uploaded_csv_is_read_by_default_far_enough_for_9_in_10_and_the_page_says_how_many_were_cut():
    reviews = parse_reviews(long_reviews_csv())
    lengths = sorted(int(n) for n in np.diff(reviews.starts))  # 30, 35, ..., 325
    runs = VectorRuns(Plan(labelled=0, csv_digest=reviews.digest), shipped_vectors(), reviews)
    assert runs.task.seq_len == 400 >= np.quantile(lengths, 0.9) > 200  # the fewest of 40, 100, 200, 400, 800
    assert runs.cut_counts == (0, 60) and runs.task.train_x.shape[1] == 400
    first = runs.task.vocab.index("great"), runs.task.vocab.index("awful")
    assert all(set(row.tolist()) & set(first) for row in runs.task.train_x)  # each read from its first word
    short = VectorRuns(Plan(labelled=0, words=100, csv_digest=reviews.digest), shipped_vectors(), reviews)
    assert short.task.seq_len == 100 and short.cut_counts == (sum(n > 100 for n in lengths), 60) == (45, 60)
    at = AppTest.from_file(MAIN, default_timeout=120).run()
    at.session_state[state.VECTORS_REVIEWS] = reviews
    at.session_state[state.VECTORS_PLAN] = short.plan
    no_exception(at.switch_page(PAGE).run())
    said = " ".join(m.value for m in at.markdown)
    assert "the last 100 words of each: 45 of the 60 reviews are longer, and are read from their last 100 words" in said
    [caption] = [c.value for c in at.caption if "Dotted: a bag of words" in c.value]
    assert "each cut to the same last 100 words" in caption
    box = next(b for b in at.selectbox if b.label == "Words read of each")
    assert box.value == 100 and box.options[0] == "enough for 9 in 10 whole"


def test_the_fine_tuned_run_opens_in_the_lab_on_the_reviews_it_read():
    at = page()
    runs = at.session_state[state.VECTORS]
    stepped(runs, 10)
    at.button(key="vectors.open").click().run()
    no_exception(at)
    lab = at.session_state[state.LAB]
    assert lab.setup == setup_of(runs.plan, runs.network) and lab.task.vocab == runs.task.vocab
    assert all(torch.equal(a, b) for a, b in zip(lab.model.parameters(), runs.runs[2].model.parameters()))
    assert all(p.requires_grad for p in lab.model.parameters())


def test_reviews_left_by_a_refused_plan_do_not_stop_the_shipped_sentences_opening():
    """An upload parsed for a plan that could not be run stays in the session; a plan that names no
    upload reads the shipped sentences all the same."""
    at = AppTest.from_file(MAIN, default_timeout=120).run()
    at.session_state[state.VECTORS_REVIEWS] = parse_reviews(reviews_csv())
    at.switch_page(PAGE).run()
    no_exception(at)
    assert not at.error, [e.value for e in at.error]
    assert at.session_state[state.VECTORS].reviews is None


def your_word2vec(dim: int) -> EmbeddingRun:
    run = EmbeddingRun(with_settings(DEFAULT, dim=dim))
    for _ in range(3):
        run.step()
    return run


def test_your_own_vectors_start_the_runs_and_new_ones_at_the_same_step_start_them_again():
    at = page()
    for dim in (20, 30):  # both trained to step 3: told apart by their settings
        at.session_state[state.EMBEDDINGS] = your_word2vec(dim)
        at.radio[0].set_value("yours")
        at.button(key="FormSubmitter:vectors_form-Train the three runs").click().run()
        no_exception(at)
        runs = at.session_state[state.VECTORS]
        assert runs.network.embedding_dim == dim and f"at step 3 ({dim} dims" in runs.plan.vectors
        yours = at.session_state[state.EMBEDDINGS].run
        assert runs.vectors.words == yours.words and torch.equal(runs.vectors.vectors, yours.vectors())


def test_vectors_too_large_for_three_runs_are_refused_saying_what_to_change():
    """Three runs of 400-d vectors over 5,000 words hold 6.1 M weights together, over the 5 M a session's runs may
    (300-d ones, 4.6 M, are within it since a step's arithmetic leaves the looked-up embeddings out)."""
    words = shipped_vectors().words
    big = WordVectors(words, torch.randn(len(words), 400), {"name": "big"})
    with pytest.raises(ValueError, match="train word2vec with fewer dimensions"):
        VectorRuns(Plan(vectors="big"), big)
