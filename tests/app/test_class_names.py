"""A student's name on the board survives a reload (issue 32): the new session's name box is filled
with the name the same browser (its owner cookie) last gave, and with nothing for another browser."""
from streamlit.testing.v1 import AppTest

from app.session.class_status import NamesByBrowser
from app.session.store import new_token
from app.widgets import state
from app.widgets.class_link import class_room

from .conftest import MAIN
from .test_class_board import cookies, in_class  # noqa: F401 (fixtures: a class, and the browser's cookies)


def a_tab() -> AppTest:
    return AppTest.from_file(MAIN, default_timeout=120).run()


def test_a_reloaded_tab_gets_its_browsers_name_and_another_browser_none(in_class, cookies):  # noqa: F811
    ada = new_token()
    cookies[state.OWNER_COOKIE] = ada
    first = a_tab()
    first.sidebar.text_input(key=state.CLASS_NAME).input("  Ada\u200b ").run()  # kept as the board shows it
    reloaded = a_tab()  # a new session, the same browser
    assert not reloaded.exception
    assert reloaded.sidebar.text_input(key=state.CLASS_NAME).value == "Ada"
    class_room().publisher.publish_round()
    assert sorted(entry.status["name"] for entry in class_room().store.statuses()) == ["Ada", "Ada"]
    cookies[state.OWNER_COOKIE] = new_token()  # another browser
    assert a_tab().sidebar.text_input(key=state.CLASS_NAME).value == ""
    cookies[state.OWNER_COOKIE] = ada
    reloaded.sidebar.text_input(key=state.CLASS_NAME).input("").run()  # Ada goes anonymous
    assert a_tab().sidebar.text_input(key=state.CLASS_NAME).value == ""


def test_the_names_kept_are_bounded_the_least_recently_used_forgotten():
    names = NamesByBrowser()
    for browser in range(names.MAX_BROWSERS):
        names.keep(str(browser), f"student {browser}")
    assert names.get("0") == "student 0"  # used: the least recently used is now "1"
    names.keep("new", "Grace")
    assert names.get("1") is None and names.get("0") == "student 0" and names.get("new") == "Grace"
    assert len(names.names) == names.MAX_BROWSERS
