"""A playing page trains only in its live fragment's own runs (the run_every ticks): a whole-page
run, as moving a control starts, draws what is there and answers in the time a paused page takes
(issue 12, item 5; benchmarks/README section 8)."""
from functools import partial
from unittest.mock import patch

import pytest
from streamlit.runtime.scriptrunner_utils.script_requests import RerunData
from streamlit.testing.v1 import AppTest
from streamlit.testing.v1.element_tree import ElementTree

from app import pages as nav
from app.session.lab import Lab
from app.session.link import DEFAULT

from .conftest import MAIN


def tick(at: AppTest) -> ElementTree:
    """One run of the page's fragment alone, as the browser asks for it when run_every fires;
    returns what it drew. AppTest only runs whole pages, so this hands its script runner the
    request a tick sends (the fragment's id from AppTest's fragment storage). As in the browser,
    the rest of the page stays as the last whole-page run drew it: `at` keeps that page, whose
    widgets the next interaction moves, unless the tick ended the play and so reran the whole page
    (st.rerun): then `at` holds that new page."""
    [fragment] = list(at._fragment_storage._fragments)  # one fragment on each page that plays
    request = partial(RerunData, fragment_id_queue=[fragment], is_auto_rerun=True)
    page = at._tree
    with patch("streamlit.testing.v1.local_script_runner.RerunData", request):
        at.run()
    drawn = at._tree
    if not drawn.title:  # the fragment alone: every whole page has its title (header.page_header)
        at._tree = page
    return drawn


def lab_steps(at: AppTest) -> int:
    return at.session_state["lab"].trainer.steps_done


def compare_steps(at: AppTest) -> int:
    return at.session_state["comparison"].steps_done


# page, query, its Play button, the control a student moves (its key and a new value), the steps trained
PAGES = {
    "build": ("build", {}, "play", ("target_steps", 500), lab_steps),
    "gradients": ("gradients", {}, "play", ("probe_index", 3), lab_steps),
    "gates": ("gates", {"arch": "lstm"}, "play", ("probe_index", 3), lab_steps),
    "compare": ("compare", {"hidden_size": "8"}, "compare_play", ("compare_steps", 500), compare_steps),
}


@pytest.mark.parametrize("name", list(PAGES))
def test_moving_a_control_while_playing_does_not_train_and_the_next_tick_does(name):
    path, query, play, (control, value), steps = PAGES[name]
    at = AppTest.from_file(MAIN, default_timeout=60)
    for k, v in query.items():
        at.query_params[k] = v
    at.run().switch_page(nav.PATHS[path]).run()
    at.button(key=play).click().run()
    assert not at.exception and steps(at) == 0  # pressing Play is a whole-page run: it draws the Pause button
    assert not tick(at).exception
    trained = steps(at)
    assert trained > 0  # a tick trains
    at.number_input(key=control).set_value(value).run()  # a whole-page run while playing
    assert not at.exception and steps(at) == trained
    assert at.button(key=play).label == "Pause"  # still playing
    tick(at)
    assert steps(at) > trained


def test_a_whole_page_run_waiting_ends_a_ticks_training_after_the_step_under_way():
    """controls.yield_to_the_page raises from Streamlit's yield point (its placeholder cleared) when
    a whole-page run waits: the loop stops between two whole steps, still playing, its time counted."""
    lab = Lab(DEFAULT)
    lab.playing = True
    calls = []

    def page_run_waits_after_three_steps():
        calls.append(len(calls))
        if len(calls) > 3:
            raise KeyboardInterrupt  # stands for Streamlit's RerunException

    with pytest.raises(KeyboardInterrupt):
        lab.train_for(60.0, until=1000, between_steps=page_run_waits_after_three_steps)
    assert lab.trainer.steps_done == 3 and lab.playing and lab.seconds > 0
    assert len(lab.trainer.history) == 3  # every step taken is whole and recorded


def test_a_ticks_training_reaches_streamlits_yield_point_before_every_step(monkeypatch):
    """A whole-page run waiting (a click) ends the tick at Streamlit's next yield point; a training
    loop makes no Streamlit call of its own, so controls.yield_to_the_page makes one before a step
    (at most every YIELD_EVERY s; every step here). Without it Pause waited for the tick's whole
    training slice. This watches Streamlit's own check (private API, in a test only) and the step
    count at each of its calls."""
    from streamlit.runtime.scriptrunner.script_runner import ScriptRunner

    from app.widgets import controls

    monkeypatch.setattr(controls, "YIELD_EVERY", 0.0)  # every step (the rate is test_page_runs')
    at = AppTest.from_file(MAIN, default_timeout=60).run().switch_page(nav.PATHS["build"]).run()
    lab = at.session_state["lab"]
    checked_at = []
    check = ScriptRunner._maybe_handle_execution_control_request
    monkeypatch.setattr(ScriptRunner, "_maybe_handle_execution_control_request",
                        lambda runner: (checked_at.append(lab.trainer.steps_done), check(runner))[1])
    at.button(key="play").click().run()
    before = lab.trainer.steps_done
    tick(at)
    trained = range(before, lab.trainer.steps_done)
    assert len(trained) > 2 and set(trained) <= set(checked_at)  # a check with each step's count before it
