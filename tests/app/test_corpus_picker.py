"""The char LM's corpus, where a student picks it (Build & Train's task tab): each shown by its
name ("Tiny Shakespeare"), stored and linked by its key ("shakespeare")."""
from streamlit.testing.v1 import AppTest

from app import pages as nav

from .conftest import MAIN


def test_the_corpus_radio_shows_readable_names_and_keeps_the_stored_value_and_link():
    at = AppTest.from_file(MAIN, default_timeout=60)
    at.query_params["task"] = "charlm"
    at.query_params["hidden_size"] = "16"
    at.run().switch_page(nav.PATHS["build"]).run()
    assert not at.exception, [e.message for e in at.exception]
    radio = at.radio(key="form.task.corpus")
    assert radio.options == ["Python source", "Reviews' text", "Tiny Shakespeare"]
    assert radio.value == "python"
    radio.set_value("shakespeare").run()
    assert not at.exception, [e.message for e in at.exception]
    lab = at.session_state["lab"]
    assert lab.setup.task_params["corpus"] == "shakespeare" and lab.task.corpus == "shakespeare"
    assert at.query_params["corpus"] == "shakespeare"  # the link keeps the key
    assert at.radio(key="form.task.corpus").value == "shakespeare"
    assert not radio.disabled


def test_the_shipped_corpus_is_greyed_out_while_the_lab_trains_on_the_students_file():
    at = AppTest.from_file(MAIN, default_timeout=60)
    at.query_params["task"] = "charlm"
    at.query_params["hidden_size"] = "16"
    at.run().switch_page(nav.PATHS["build"]).run()
    lab = at.session_state["lab"]
    lab.install(lab.setup, "It is a truth universally acknowledged. " * 100)
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    radio = at.radio(key="form.task.corpus")
    assert radio.disabled and radio.help == "your file replaces the shipped corpus"
    assert at.session_state["lab"].upload is not None  # the form's read left the file in place
