"""BERT and GPT: one transformer trained twice from the same seed on the same windows, the masked and the
causal objective; the page's figures read back against the runs' own logs and models: each guess
for a mask against the model's softmax, each attention map against the model's weights (the causal
one's upper triangle exactly 0), each cosine against engine.contextual, each nearest word against
engine.context_bank; a bad sentence gets a message and the rest of the page stays."""
import pytest
import torch
from streamlit.testing.v1 import AppTest

from app import pages as nav
from app.session import budget
from app.session.bert_gpt import (
    CAUSAL,
    LESSON_PLAN,
    LESSON_SENTENCES,
    MASKED,
    SAME_START,
    ObjectiveRuns,
    Plan,
    setup_of,
)
from app.session.lessons import BY_KEY
from app.widgets import state
from engine.context_bank import context_bank, nearest, self_similarity
from engine.contextual import attention_of, compare_contexts, guess_mask, read_sentence
from engine.losses import IGNORE

from .conftest import MAIN, chart, plotted, shown
from .test_transfer_page import no_exception, stepped

PAGE = nav.PATHS["bert-gpt"]
STEPS = 20


def page() -> AppTest:
    at = AppTest.from_file(MAIN, default_timeout=120)
    return at.run().switch_page(PAGE).run()


@pytest.fixture(scope="module")
def trained_page():
    """The page with its runs trained STEPS steps each, redrawn."""
    at = page()
    no_exception(at)
    stepped(at.session_state[state.BERT], STEPS)
    at.run()
    no_exception(at)
    return at


def test_the_lessons_setup_is_the_masked_run_of_the_lessons_plan():
    assert BY_KEY["contextual-embeddings"].setup == setup_of(LESSON_PLAN, MASKED)


def test_the_two_runs_start_alike_and_read_the_same_windows():
    runs = ObjectiveRuns(Plan(hidden_size=32, num_layers=1, num_heads=2))
    masked, causal = (dict(run.model.named_parameters()) for run in runs.runs)
    assert masked.keys() == causal.keys()
    assert all(torch.equal(masked[name], causal[name]) for name in masked)
    assert runs.runs[0].cfg.bidirectional and not runs.runs[1].cfg.bidirectional
    generators = [torch.Generator().manual_seed(5) for _ in range(2)]
    x_masked, y_masked = runs.tasks[MASKED].sample(4, generators[0])
    x_causal, y_causal = runs.tasks[CAUSAL].sample(4, generators[1])
    chosen = y_masked != -100
    assert torch.equal(y_masked[chosen], x_causal[chosen])  # the masked words are the causal run's inputs
    assert torch.equal(x_causal[:, 1:], torch.where(y_causal[:, :-1] == -100, x_causal[:, 1:], y_causal[:, :-1]))


def test_the_accuracy_figure_plots_the_runs_own_logs(trained_page):
    runs = trained_page.session_state[state.BERT]
    assert runs.plan == LESSON_PLAN and all(run.steps_done == STEPS for run in runs.runs)
    spec = chart(trained_page, "Held-out accuracy: masked words")
    log = runs.log_frame()
    for name in (MASKED, CAUSAL):
        [trace] = [t for t in spec["data"] if t.get("name") == name]
        rows = log[log.run == name]
        assert plotted(trace["x"]) == rows.step.tolist() and plotted(trace["y"]) == rows.metric.tolist()
        [level] = [t for t in spec["data"] if t.get("name") == f"{name.split()[0]}: always 'the'"]
        assert plotted(level["y"])[0] == runs.tasks[name].baseline_metric[1]


def test_the_caption_says_what_equal_steps_learn_from_and_not_which_question_is_easier(trained_page):
    """Issue 46: at 500 steps the causal run guessed more hidden words right, while the caption said guessing with
    both sides seen "is easier". A masked step learns from the words it hides, a causal one from every next word;
    the caption says its runs compare at equal steps and the shipped pair at equal words predicted."""
    runs = trained_page.session_state[state.BERT]
    [caption] = [c.value for c in trained_page.caption if c.value.startswith("Each run scored")]
    generator = torch.Generator().manual_seed(0)
    _, y_masked = runs.tasks[MASKED].sample(64, generator)  # [64, 32]
    _, y_causal = runs.tasks[CAUSAL].sample(64, generator)  # [64, 32]
    hidden, next_words = (int((y != IGNORE).sum(dim=1).max()) for y in (y_masked, y_causal))
    assert (hidden, next_words) == (5, 32)
    assert f"a masked step from the {hidden} words hidden in each window of {next_words}" in caption
    assert f"about {next_words / hidden:.0f} times as many guesses" in caption
    assert "Equal steps do not say which question is easier." in caption and "is easier than" not in caption
    assert "so at equal steps (the same windows through the same network" in caption  # the comparison, said
    assert caption.endswith("The shipped pair, read below, compares at equal words predicted: the masked model "
                            "32,000 steps of 64 windows, 10,240,000 words predicted and the causal model 5,000 steps "
                            "of 64 windows, 10,240,000 words predicted.")


def test_each_guess_is_its_models_softmax_and_the_causal_one_reads_the_left(trained_page):
    runs = trained_page.session_state[state.BERT]
    text = trained_page.session_state[state.BERT_MASKED]
    for run in runs.runs:
        guess = guess_mask(run.model, runs.task, text)
        spec = chart(trained_page, f"{run.name}: its 10 likeliest words")
        [bars] = spec["data"]
        assert plotted(bars["y"])[::-1] == [w for w, _ in guess.top(10)]
        assert plotted(bars["x"])[::-1] == pytest.approx([p for _, p in guess.top(10)], abs=1e-7)
    lines = [shown(m.value) for m in trained_page.markdown if "reads:" in m.value]
    assert lines[0].endswith("she was very `<mask>` to see him")
    assert "~~to~~ ~~see~~ ~~him~~" in lines[1] and "never read" in lines[1]


def test_the_attention_maps_are_the_models_and_the_causal_triangle_is_zero(trained_page):
    runs = trained_page.session_state[state.BERT]
    sentence = read_sentence(runs.task, trained_page.session_state[state.BERT_MASKED], masked=True)
    spec = chart(trained_page, "Self-attention: masked (left), causal (right), mean of heads")
    maps = [plotted(t["z"]) for t in spec["data"] if t["type"] == "heatmap" and t.get("coloraxis")]
    traces = {run.name: list(attention_of(run.model, sentence.ids).attention_traces.values()) for run in runs.runs}
    expected = [(name, traces[name][layer].weights.mean(0)) for layer in range(2) for name in (MASKED, CAUSAL)]
    assert len(maps) == len(expected) == 4  # a row per layer: masked, then causal
    for shown_map, (name, weights) in zip(maps, expected):
        torch.testing.assert_close(torch.tensor(shown_map, dtype=weights.dtype), weights, atol=1e-6, rtol=0)
        above = torch.ones_like(weights, dtype=torch.bool).triu(1)
        if name == CAUSAL:
            assert (weights[above] == 0).all()
        else:
            assert (weights[above] > 0).all()
    greyed = [plotted(t["z"]) for t in spec["data"] if t.get("name") == "masked"]
    upper = torch.ones(7, 7).triu(1).bool()
    assert len(greyed) == 2 and all(torch.equal(torch.tensor(g).bool(), upper) for g in greyed)


def test_every_head_is_drawn_as_the_model_holds_it_with_labels_a_projector_can_read(trained_page):
    """Issue 44, finding 4: at 1024 px the view of every head printed 16 panel titles ("masked · layer 0 ·
    head 0") and 8 axis titles over each other: now a panel says its head, a row its layer, each model its name
    once, and the key axis is titled under each model's first head."""
    runs = trained_page.session_state[state.BERT]
    sentence = read_sentence(runs.task, trained_page.session_state[state.BERT_MASKED], masked=True)
    trained_page.radio(key=state.BERT_HEADS).set_value("every head").run()
    spec = chart(trained_page, "Self-attention: masked (left), causal (right), all 4 heads")
    maps = [plotted(t["z"]) for t in spec["data"] if t["type"] == "heatmap" and t.get("coloraxis")]
    traces = {run.name: list(attention_of(run.model, sentence.ids).attention_traces.values()) for run in runs.runs}
    expected = [traces[name][layer].weights[head] for layer in range(2) for name in (MASKED, CAUSAL)
                for head in range(4)]
    assert len(maps) == len(expected) == 16
    for shown_map, weights in zip(maps, expected):
        torch.testing.assert_close(torch.tensor(shown_map, dtype=weights.dtype), weights, atol=1e-6, rtol=0)
    texts = [a["text"] for a in spec["layout"]["annotations"]]
    assert [t for t in texts if t.startswith("head")] == [f"head {h}" for h in range(4)] * 4
    assert f"<b>{MASKED}</b>" in texts and f"<b>{CAUSAL}</b>" in texts
    axes = spec["layout"]
    key_titles = [name for name, axis in axes.items() if name.startswith("xaxis") and axis.get("title", {}).get("text")]
    assert len(key_titles) == 2  # under each model's first head, not under all eight
    assert [axes[f"yaxis{n}"]["title"]["text"] for n in ("", "9")] == ["block 0: query", "block 1: query"]
    trained_page.radio(key=state.BERT_HEADS).set_value("each layer's mean of heads").run()


def test_the_cosines_and_the_nearest_words_are_the_models(trained_page):
    runs = trained_page.session_state[state.BERT]
    spec = chart(trained_page, "The word's two vectors, layer by layer")
    [cosines] = [t.value for t in trained_page.table if "after block 1" in t.value.columns]
    for run in runs.runs:
        compared = compare_contexts(run.model, runs.task, "bank", *LESSON_SENTENCES)
        [trace] = [t for t in spec["data"] if t["name"] == run.name]
        assert plotted(trace["y"]) == pytest.approx(compared.cosines.tolist(), abs=1e-7)
        assert plotted(trace["x"]) == ["embedding", "after block 0", "after block 1"]  # as the card says them
        row = cosines[cosines.model == run.name].iloc[0]  # the table says what the figure draws
        assert [row[label] for label in compared.labels] == [f"{c:.3f}" for c in compared.cosines.tolist()]
    [static] = [t for t in spec["data"] if t["name"].startswith("word2vec")]
    assert plotted(static["y"]) == [1.0] * 3
    masked = runs.runs[0].model
    bank = context_bank(masked, runs.task)
    found = compare_contexts(masked, runs.task, "bank", *LESSON_SENTENCES).first
    table = [t.value for t in trained_page.table if "in context" in t.value.columns][0]  # the first sentence's
    expected = nearest(bank, runs.task, found.vectors[-1], 2)
    assert list(table["in context"]) == [n.context for n in expected]
    assert list(table["cosine"]) == pytest.approx([n.cosine for n in expected], abs=1e-6)


def test_the_same_words_before_the_word_give_the_causal_model_one_vector():
    at = page()
    runs = stepped(at.session_state[state.BERT], STEPS)
    at.button(key="bert_same_start").click().run()  # the question's pair, one click
    no_exception(at)
    assert at.text_input(key=state.BERT_SECOND).value == SAME_START and at.button(key="bert_same_start").disabled
    spec = chart(at, "The word's two vectors, layer by layer")
    causal, masked = ([t for t in spec["data"] if t["name"] == name][0] for name in (CAUSAL, MASKED))
    assert plotted(causal["y"]) == pytest.approx([1.0] * 3, abs=1e-6)  # it never reads past "bank"
    assert plotted(masked["y"])[-1] < 1 - 1e-4  # the masked model reads what follows
    expected = compare_contexts(runs.runs[0].model, runs.task, "bank", LESSON_SENTENCES[0], SAME_START).cosines
    assert plotted(masked["y"]) == pytest.approx(expected.tolist(), abs=1e-7)
    assert any("gives it the same vector in both" in c.value for c in at.caption)


def test_the_page_says_where_the_prose_has_the_word_and_each_sentence():
    at = page()
    no_exception(at)
    said = ("In the prose: 'bank' occurs 8 times in the training text (the first 90%) and 0 in the held-out 10%. "
            "Neither sentence is in it")  # found_in_prose, checked against a plain scan in test_masked_lm
    assert any(said in c.value for c in at.caption)
    at.text_input(key=state.BERT_SECOND).input("nice seat for her on a dry sunny bank").run()
    no_exception(at)  # Austen's own words (Emma): a sentence the models trained on
    assert any("The first sentence is in neither; the second is in the training text" in c.value for c in at.caption)


@pytest.mark.parametrize("typed, saying", [
    ("", "type a sentence with one <mask>"),
    ("she was very happy", "has no <mask>"),
    ("<mask> was very <mask>", "keep one <mask>"),
    ("zzz qqq <mask>", "none of the words"),
    (" ".join(["the"] * 40) + " <mask>", "leave out 9 of them"),
])
def test_a_bad_sentence_says_what_to_change_and_the_rest_stays(typed, saying):
    at = page()
    at.text_input(key=state.BERT_MASKED).input(typed).run()
    no_exception(at)
    assert any(saying in shown(e.value) for e in at.error), [e.value for e in at.error]
    assert chart(at, "The word's two vectors, layer by layer")  # the other read-out still stands
    assert at.session_state[state.BERT].plan == LESSON_PLAN


def test_a_word_missing_from_a_sentence_says_so():
    at = page()
    at.text_input(key=state.BERT_SECOND).input("she was very happy").run()
    no_exception(at)
    assert any("is not a word of the sentence" in shown(e.value) for e in at.error)


def test_a_causal_guess_with_the_mask_first_says_there_is_nothing_to_read():
    at = page()
    at.text_input(key=state.BERT_MASKED).input("<mask> was very happy").run()
    no_exception(at)
    assert any("put at least one word before the <mask>" in shown(w.value) for w in at.warning)
    assert chart(at, f"{MASKED}: its 10 likeliest words")


def test_the_self_similarity_figure_is_ethayarajhs_over_the_runs_models(trained_page):
    runs = trained_page.session_state[state.BERT]
    spec = chart(trained_page, "How alike a word stays across sentences, layer by layer")
    for run in runs.runs:
        expected = self_similarity(context_bank(run.model, runs.task))
        [trace] = [t for t in spec["data"] if t["name"] == run.name]
        assert plotted(trace["x"]) == list(expected.layer)
        assert plotted(trace["y"]) == pytest.approx(list(expected.adjusted), abs=1e-6)
        assert [row[0] for row in plotted(trace["customdata"])] == pytest.approx(list(expected.same), abs=1e-6)
        [table] = [t.value for t in trained_page.table if "self-similarity" in t.value.columns]
        rows = table[table.model == run.name]  # the cosines a student read only on hover before (issue 44)
        assert list(rows.layer) == list(expected.layer)
        assert list(rows["one word, two sentences"]) == [f"{c:.3f}" for c in expected.same]
        assert list(rows["two different words"]) == [f"{c:.3f}" for c in expected.random]
        assert list(rows["self-similarity"]) == [f"{c:.3f}" for c in expected.adjusted]


def test_a_plan_over_the_step_budget_says_what_to_change_on_this_page_and_keeps_the_runs(monkeypatch):
    """Every plan the page offers is within the budget (d_model 96 with 3 blocks computes with 8.9e9 operations a
    step, its 384,000 embedding weights looked up): a lower limit stands in for a smaller server's."""
    monkeypatch.setattr(budget, "MAX_STEP_FLOPS", 6e9)  # the lesson's plan computes with 4.4e9
    at = page()
    no_exception(at)
    runs = at.session_state[state.BERT]
    next(box for box in at.selectbox if box.label == "d_model").set_value(96)
    next(box for box in at.selectbox if box.label == "Blocks").set_value(3)
    next(button for button in at.button if button.label == "Train both").click().run()
    no_exception(at)
    said = " ".join(e.value for e in at.error)
    asked = "cannot be trained: pick a smaller d\\_model or fewer blocks\\: d\\_model 96 with 3 blocks is too large"
    assert asked in said
    assert at.session_state[state.BERT] is runs
