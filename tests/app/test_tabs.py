"""One lab, one tab: a duplicated tab, a page of the menu opened in a new tab and a reload each
hand the browser's lab to the newest tab; the tab it left lets it go, says so, can take it back,
and never trains or resets it meanwhile (issue 29, finding 9)."""
from streamlit.testing.v1 import AppTest

from app import pages as nav

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
    first.button(key="take_back").click().run()
    assert first.session_state["lab"] is lab and lab.trainer.steps_done == 1 and not moved_warning(first)
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


def test_a_page_opened_from_the_menu_in_a_new_tab_opens_the_browsers_model():
    """The menu's page links carry no query string: a middle-click opened a default model."""
    first = tab(query={"arch": "gru", "hidden_size": "24"})
    lab, owner = first.session_state["lab"], first.session_state["unrolled_owner"]
    lab.step()
    new_tab = tab(owner, page=None)  # no query string, this browser's cookie
    assert new_tab.session_state["lab"] is lab and not new_tab.exception
    assert any("opened your model from your other tab" in i.value for i in new_tab.info)
    gates = new_tab.switch_page(nav.PATHS["gates"]).run()
    assert not gates.exception and gates.session_state["lab"] is lab
    assert gates.query_params["arch"] == "gru"  # its link now names the model
    first.run()
    assert moved_warning(first)

    stranger = tab(page=nav.PATHS["gates"])  # another browser, no link: a default model of its own
    assert stranger.session_state["lab"] is not lab
    assert not [i for i in stranger.info if "from your other tab" in i.value]
