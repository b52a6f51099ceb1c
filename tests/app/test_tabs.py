"""One lab, one tab: a duplicated tab and a reload each hand the browser's lab to the newest tab;
the tab it left lets it go, says so, can take it back,
and never trains or resets it meanwhile (issue 29, finding 9)."""
from streamlit.testing.v1 import AppTest

from app import pages as nav
from app.widgets.header import lab_store

from .conftest import MAIN
from .test_page_reruns import tick

BUILD = nav.PATHS["build"]


def tab(owner: str | None = None, query: dict | None = None, page: str | None = BUILD) -> AppTest:
    """A tab of the browser whose owner cookie is `owner` (a new browser when None), opened on
    `query`: AppTests of one process share the server's lab store, as tabs of one server do."""
    at = AppTest.from_file(MAIN, default_timeout=60)
    if owner is not None:
        at.session_state["unrolled_owner"] = owner  # the browser's cookie, as owner_token reads it
    for key, value in (query or {}).items():
        at.query_params[key] = value
    at.run()  # AppTest opens the default page first (a switch_page before the first run is not kept)
    return at.switch_page(page).run() if page else at


def moved_warning(at: AppTest) -> list[str]:
    return [w.value for w in at.warning if "now open in another tab" in w.value]


def test_a_duplicated_tab_takes_the_lab_and_the_first_tab_can_neither_reset_nor_train_it():
    first = tab(query={"hidden_size": "24"})
    lab, owner = first.session_state["lab"], first.session_state["unrolled_owner"]
    for _ in range(3):
        lab.step()
    duplicate = tab(owner, dict(first.query_params))  # the same address, the same cookie
    assert duplicate.session_state["lab"] is lab and lab.trainer.steps_done == 3

    first.button(key="reset").click().run()  # the first tab still shows its old page: Reset there
    assert not first.exception and lab.trainer.steps_done == 3  # the duplicate's model was not reset
    assert moved_warning(first) and first.session_state["lab"] is not lab
    fresh = first.session_state["lab"]
    assert fresh.setup == lab.setup and fresh.trainer.steps_done == 0  # its link's settings, afresh
    assert first.query_params["lab"] != duplicate.query_params["lab"]
    first.run()
    assert not moved_warning(first)  # said once
    duplicate.run()
    assert duplicate.session_state["lab"] is lab and not moved_warning(duplicate)


def test_the_tab_left_behind_takes_its_model_back_with_the_messages_button():
    first = tab(query={"hidden_size": "24"})
    lab, owner = first.session_state["lab"], first.session_state["unrolled_owner"]
    lab.step()
    duplicate = tab(owner, dict(first.query_params))
    first.run()
    meanwhile = first.session_state["lab_id"]  # the model this tab built when it let its own go
    first.button(key="take_back").click().run()
    assert first.session_state["lab"] is lab and lab.trainer.steps_done == 1 and not moved_warning(first)
    assert meanwhile not in lab_store().kept  # forgotten: it counts against no one's share
    duplicate.run()  # now the duplicate lets it go
    assert moved_warning(duplicate) and duplicate.session_state["lab"] is not lab


def test_a_playing_tab_whose_lab_moved_stops_training_it_at_its_next_tick():
    first = tab(query={"hidden_size": "24"})
    lab, owner = first.session_state["lab"], first.session_state["unrolled_owner"]
    first.button(key="play").click().run()
    tick(first)
    assert lab.trainer.steps_done > 0
    duplicate = tab(owner, dict(first.query_params))
    lab.playing = False  # the duplicate shows it paused: only the first tab's tick could train it now
    steps = lab.trainer.steps_done
    lab.playing = True
    tick(first)  # the first tab's fragment, still ticking in its browser
    assert lab.trainer.steps_done == steps  # the tick let the lab go instead of training it
    assert first.session_state["lab"] is not lab and moved_warning(first)
    assert duplicate.session_state["lab"] is lab


def test_a_bare_address_opens_the_defaults_not_the_browsers_model():
    """A typed or bookmarked address names no model: it gets the defaults, and the browser's other
    tab keeps its own (a page of the menu opened in a new tab is sent its tab's address by the
    page's script: tests/browser/test_reload.py)."""
    first = tab(query={"arch": "gru", "hidden_size": "24"})
    lab, owner = first.session_state["lab"], first.session_state["unrolled_owner"]
    bare = tab(owner, page=None)
    assert bare.session_state["lab"] is not lab and not bare.exception
    first.run()
    assert first.session_state["lab"] is lab and not moved_warning(first)
