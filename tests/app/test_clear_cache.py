"""Issue 43, finding 2: Streamlit's clear_cache message, which any client may send over its websocket, empties
every st.cache_resource of the process (AppSession._handle_clear_cache_request). The lab store and the class
room lived there: one student's message lost every classmate's model at their next reload (the page blaming
a server restart) and would have started a second class publisher. They are the process's own now; what a
clear_cache still empties is read-only and made again from its source."""
import streamlit as st

from app.widgets.class_link import class_room
from app.widgets.header import lab_store

from .test_tabs import tab


def test_a_clients_clear_cache_loses_no_classmates_model():
    classmate = tab(query={"hidden_size": "24"})
    lab, owner = classmate.session_state["lab"], classmate.session_state["unrolled_owner"]
    for _ in range(3):
        lab.step()
    store, room = lab_store(), class_room()
    st.cache_resource.clear()  # what the message does, for every session of the process
    st.cache_data.clear()
    assert lab_store() is store and class_room() is room
    reloaded = tab(owner, dict(classmate.query_params))  # the classmate's reload: same cookie, same link
    assert not reloaded.exception
    assert reloaded.session_state["lab"] is lab and lab.trainer.steps_done == 3
    assert not [w.value for w in reloaded.warning if "restart" in w.value or "not on this server" in w.value]
