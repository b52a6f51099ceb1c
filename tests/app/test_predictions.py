"""Predict, then reveal (issue 32): every lesson's question is answered by its claim's measured range,
and so by every run of its shipped ensemble (app/data/ensembles/<key>.json); a question written wrong
is refused saying what to fix; on the pages, the question is asked before Play, the answer locks when
the lesson's runs start, and the measured answer shows beside it when they reach the lesson's budget."""
import re

import pytest
from streamlit.testing.v1 import AppTest

from app.session import ensembles
from app.session.lessons import BY_KEY, FOLDER, LESSONS, Choice, Claim, read
from app.widgets import state

from .conftest import MAIN
from .test_page_reruns import tick

KEYS = [lesson.key for lesson in LESSONS]


# ------------------------------------------------------------------ the questions, against the data

def test_every_lesson_asks_a_question_of_two_to_four_choices_about_one_of_its_claims():
    for lesson in LESSONS:
        question = lesson.question
        assert question is not None, f"{lesson.key} asks no question"
        assert 2 <= len(question.choices) <= 4 and question.claim in lesson.claims, lesson.key
        assert question.text and question.measured, lesson.key


@pytest.mark.parametrize("key", KEYS)
def test_the_right_choice_holds_every_run_of_the_ensemble_and_no_other_choice_holds_any(key):
    lesson = BY_KEY[key]
    question = lesson.question
    assert question.right.covers(lesson.claims[question.claim])  # the claim's whole range, margins included
    for member in ensembles.shipped(key).members:
        assert question.claim in member["values"], (member["seed"], member["path"])
        value = member["values"][question.claim]
        holding = [choice.text for choice in question.choices if choice.holds(value)]
        assert holding == [question.right.text], (member["seed"], member["path"], value, holding)


def test_a_choice_holds_its_range_or_never_and_covers_a_claim_only_whole():
    halfway = Choice("halfway", 0.01, 0.1)
    assert halfway.holds(0.01) and halfway.holds(0.1) and not halfway.holds(0.11) and not halfway.holds(None)
    assert halfway.covers(Claim("loss", 0.02, 0.05)) and not halfway.covers(Claim("loss", 0.05, 0.2))
    assert not halfway.covers(Claim("loss", None, 0.05))  # "below 0.05" reaches under 0.01
    never = Choice("never", never=True)
    assert never.holds(None) and not never.holds(2.0)
    assert never.covers(Claim("diverged_at", None, None, never=True))
    late = Claim("below_0.15", 500, 1400, or_never=True)  # may come or not: no one choice holds both
    assert not never.covers(late) and not Choice("late", 0, 1500).covers(late)


SOURCE = FOLDER / "11-exploding.toml"
GOOD = {"choices": '["On its first or second step", "Within 100 steps (3 to 100)", "Later (after step 100)", '
                   '"Never in 1,000 steps"]',
        "bounds": '[[1, 2], [3, 100], [101, 1000], "never"]',
        "claim": '"unclipped.diverged_at"'}


def written(tmp_path, **changed: str):
    """The exploding lesson's file with its [question] as GOOD, changed (a value None: the key left out)."""
    lines = ['[question]', 'text = "When will it diverge?"', 'measured = "the step it diverges at"']
    lines += [f"{key} = {value}" for key, value in {**GOOD, **changed}.items() if value is not None]
    text = re.sub(r"^\[question\].*?(?=^\[link\])", "\n".join(lines) + "\n\n", SOURCE.read_text(), flags=re.S | re.M)
    path = tmp_path / SOURCE.name
    path.write_text(text)
    return path


def test_the_question_written_as_good_reads_so_each_refusal_below_comes_from_its_one_change(tmp_path):
    question = read(written(tmp_path)).question
    assert question.right.text == "On its first or second step" and question.claim == "unclipped.diverged_at"


@pytest.mark.parametrize("changed, said", [
    ({"claim": '"unclipped.diverges"'},
     "asks about 'unclipped.diverges', which the lesson claims nothing about: name one of unclipped.first_grad_norm"),
    ({"bounds": '[[1, 2], [3, 100], [101, 1000]]'}, "has 4 choices but bounds = [[1, 2], [3, 100], [101, 1000]]"),
    ({"bounds": '[[1, 5], [3, 100], [101, 1000], "never"]'},
     'has choices "On its first or second step" and "Within 100 steps (3 to 100)" whose bounds overlap'),
    ({"bounds": '[[0, 1], [3, 100], [101, 1000], "never"]'},
     "asks about unclipped.diverged_at, whose claimed range (2) lies whole in no one choice's bounds"),
    ({"bounds": '[[2, 1], [3, 100], [101, 1000], "never"]'}, 'has bounds [2, 1] for "On its first or second step"'),
    ({"choices": '["a", "b", "c", "d", "e"]'}, "give 2 to 4 different, non-empty strings"),
    ({"choices": None, "options": '["a", "b"]'}, "has options, which it does not know; no choices"),
])
def test_a_question_written_wrong_is_refused_naming_the_file_and_what_to_fix(tmp_path, changed, said):
    with pytest.raises(ValueError) as refused:
        read(written(tmp_path, **changed))
    message = str(refused.value)
    assert message.startswith("11-exploding.toml's [question] ") and said in message, message
    assert "It takes text = " in message  # the format, for whoever edits the file


# ------------------------------------------------------------------ on the pages

def opened(key: str) -> AppTest:
    """Lesson `key` opened from Home's card, on its page."""
    at = AppTest.from_file(MAIN, default_timeout=120).run()
    at.button(key=f"lesson.{key}").click().run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def radios(at: AppTest, key: str) -> list:
    return [radio for radio in at.radio if radio.key == f"prediction.{key}"]


def said(at: AppTest) -> str:
    """The page's Markdown, once it ran without an exception."""
    assert not at.exception, [e.message for e in at.exception]
    return "\n".join(m.value for m in at.markdown)


def answer(at: AppTest, key: str, choice: str) -> None:
    [radio] = radios(at, key)
    assert radio.options == [c.text for c in BY_KEY[key].question.choices] and radio.value is None
    assert state.PREDICTION not in at.session_state
    radio.set_value(choice).run()
    assert at.session_state[state.PREDICTION] == {"lesson": key, "choice": choice, "locked": False}


def locked(at: AppTest, key: str, choice: str) -> None:
    assert not radios(at, key)
    assert at.session_state[state.PREDICTION] == {"lesson": key, "choice": choice, "locked": True}
    assert f"locked when the lesson's runs started: **{choice}**" in said(at)


def revealed(at: AppTest, key: str) -> bool:
    lesson = BY_KEY[key]
    shown = said(at)
    if f"so the answer is **{lesson.question.right.text}**." not in shown:
        return False
    assert f"{lesson.question.measured}: {lesson.claims[lesson.question.claim].quote()} on every one" in shown
    return True


def test_a_lesson_asks_before_play_locks_at_the_first_step_and_reveals_when_play_stops_at_its_budget():
    """The Lab's lesson: Step locks the answer; one step short of the budget, Play's last tick trains the
    last step and reruns the whole page, which shows the reveal."""
    key = "attention-aligns"
    lesson, at = BY_KEY[key], opened(key)
    right = lesson.question.right.text
    assert lesson.question.text in said(at) and not revealed(at, key)
    answer(at, key, right)
    at.button(key="step").click().run()
    lab = at.session_state[state.LAB]
    assert lab.trainer.steps_done == 1
    locked(at, key, right)
    assert f"shows here when training reaches step {lesson.steps:,}" in "\n".join(c.value for c in at.caption)
    assert not revealed(at, key)
    with lab.lock:
        while lab.trainer.steps_done < lesson.steps - 1:
            lab.advance(lesson.steps)
    at.button(key="play").click().run()
    locked(at, key, right)
    assert not revealed(at, key)
    for _ in range(20):
        if not lab.playing:
            break
        tick(at)
    assert lab.trainer.steps_done == lesson.steps and not at.exception
    assert revealed(at, key) and f"Your prediction, **{right}**, is the measured one." in said(at)


def test_without_an_answer_before_play_the_question_says_so_and_a_run_that_diverged_reveals_it():
    key = "exploding"
    at = opened(key)
    at.button(key="step").click().run()
    assert not radios(at, key) and state.PREDICTION not in at.session_state
    assert "This question was for before Play" in said(at) and not revealed(at, key)
    at.button(key="step").click().run()  # the step it diverges at: it can train no further
    assert at.session_state[state.LAB].trainer.diverged_at == 2
    assert revealed(at, key) and "You did not predict before Play." in said(at)


def test_on_a_page_with_its_own_runs_their_steps_lock_the_answer_and_reveal_it_at_the_budget():
    key = "echo-state"
    lesson, at = BY_KEY[key], opened(key)
    wrong = next(choice.text for choice in lesson.question.choices if choice != lesson.question.right)
    answer(at, key, wrong)
    at.button(key="compare_step").click().run()
    comparison = at.session_state[state.COMPARISON]
    assert comparison.steps_done == 1 and at.session_state[state.LAB].trainer.steps_done == 0
    locked(at, key, wrong)
    with comparison.lock:
        while comparison.advance(lesson.steps):
            pass
    at.run()
    assert revealed(at, key) and f"Your prediction, **{wrong}**, is not: the measurement overturned it." in said(at)


def test_bert_and_gpt_lock_the_answer_at_their_first_step():
    key = "contextual-embeddings"
    lesson, at = BY_KEY[key], opened(key)
    right = lesson.question.right.text
    answer(at, key, right)
    at.button(key="bert_step").click().run()
    assert at.session_state[state.BERT].steps_done == 1
    locked(at, key, right)
    assert not revealed(at, key)


def test_the_swept_lesson_locks_and_reveals_once_its_sweep_is_open():
    """The spectral radius lesson trains nothing: its sweep shows the answer as it opens."""
    key = "spectral-radius"
    lesson, at = BY_KEY[key], opened(key)
    right = lesson.question.right.text
    answer(at, key, right)
    at.session_state[state.SWEEP_OPEN] = True
    at.run().run()  # the run that opens it draws the banner first; any after shows what it measured
    assert at.session_state[state.LAB].trainer.steps_done == 0
    locked(at, key, right)
    assert revealed(at, key) and f"Your prediction, **{right}**, is the measured one." in said(at)


def test_an_answer_to_another_lessons_question_is_dropped_when_a_lesson_opens():
    at = opened("rnn-forgets")
    answer(at, "rnn-forgets", BY_KEY["rnn-forgets"].question.choices[0].text)
    at.switch_page("app_pages/start/home.py").run()
    at.button(key="lesson.exploding").click().run()
    assert state.PREDICTION not in at.session_state and radios(at, "exploding")


def test_the_card_which_would_answer_the_question_shows_only_once_the_answer_is_locked():
    lesson = BY_KEY["rnn-forgets"]
    at = opened(lesson.key)
    banner = [i.value for i in at.info if lesson.title in i.value]
    assert banner and "Answer the question above" in banner[0] and lesson.what_to_do not in banner[0]
    lab = at.session_state[state.LAB]
    with lab.lock:
        lab.advance(1)
    at.run()
    assert any(lesson.what_to_do in i.value for i in at.info)
