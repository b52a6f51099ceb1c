"""The top of every page: this session's Lab (made from the link on first use), the title, what
was wrong with the link, the open lesson's banner, the link kept in the address bar, and the
sidebar summary of the model every page works on."""
from __future__ import annotations

import functools
import json
from collections.abc import Callable

import streamlit as st

from app.session import pretrained
from app.session.lab import Lab
from app.session.lessons import BY_KEY
from app.session.link import DEFAULT, Setup, check_given_once, echo, parse_query, parse_target_steps
from app.session.memory import MemoryFull
from app.session.store import TIME_TO_LIVE, LabStore, is_token, new_token
from app.widgets import address, prediction, state
from app.widgets.corpus_needed import ask, asked_for
from app.widgets.figures import figure_settings
from app.widgets.literal import literal
from app.widgets.network import client_address
from engine import datasets


@functools.cache  # not st.cache_resource: any client's clear_cache message empties those, for every session
def lab_store() -> LabStore:
    """The one register of labs for the whole server (see session/store.py: a lab is handed back
    only to the browser that owns it)."""
    return LabStore()


def owner_token() -> str:
    """This browser's owner token: from its cookie when the cookie holds one this app made, else a
    new one for this session, which keep_owner_cookie() sets as the cookie (the token never goes
    into the address bar). A cookie holding anything else (planted by another site on the same
    host, or a plain-HTTP network) is ignored, so it never reaches the page's script."""
    cookie = st.context.cookies.get(state.OWNER_COOKIE)
    return cookie if is_token(cookie) else st.session_state.setdefault(state.OWNER_COOKIE, new_token())


def keep_owner_cookie() -> None:
    """Set (or refresh) the owner token's cookie, from a script in the sidebar. On
    every run, so the page has the same elements from run to run: one that came and went moved
    everything after it, and Streamlit redrew an open expander closed (hiding its upload's message)."""
    cookie = f"{state.OWNER_COOKIE}={owner_token()}; path=/; max-age={TIME_TO_LIVE}; SameSite=Strict"
    # json.dumps: a JavaScript string literal, whatever it holds (the token is checked too: is_token)
    script = f"document.cookie = {json.dumps(cookie)};{address.check_script()}"
    st.sidebar.html(f"<script>{script}</script>", unsafe_allow_javascript=True)


def tab_token() -> str:
    """This tab's token (one per Streamlit session): the store hands a lab to one tab at a time."""
    return st.session_state.setdefault(state.TAB, new_token())


def holds_its_lab() -> bool:
    """Whether this tab still drives its lab: another tab of this browser (a duplicated tab, a page
    of the menu opened in a new tab, the link reloaded elsewhere) may have taken it since."""
    return lab_store().holds(st.session_state.get(state.LAB_ID), tab_token())


def this_tab_only(action: Callable) -> Callable:
    """A button's callback on the Lab (Play, Step, Reset...), run only while this tab holds the lab:
    callbacks run before the page, so a tab whose lab moved would act on the other tab's model
    before its run could say the model moved."""
    def act(*args) -> None:
        if holds_its_lab():
            action(*args)
    return act


def current_lab() -> Lab:
    """This session's Lab. After a reload, the lab this tab had (its id in the address bar, its
    owner this browser), with its lesson and target (a page of the menu opened in a new tab gets
    the address of the tab it came from: address.py); else a new one from the link (or the
    defaults, with a message saying what in the link was wrong). A link goes through the Lab's
    one install step, so the size budget holds for it as for the form. A tab whose lab another tab
    took lets it go, says so, and starts from its link afresh."""
    moved = None
    if state.lab() is not None and not holds_its_lab():
        moved = st.session_state.pop(state.LAB_ID)
        del st.session_state[state.LAB]
        st.session_state[state.LAB_MOVED] = moved
    if state.lab() is None:
        query = st.query_params.to_dict()  # a key given twice keeps its last value here: given_once says so
        given = {key: st.query_params.get_all(key) for key in query}
        owner = owner_token()
        lab_id = query.pop(state.LAB_PARAM, None)
        dropped = query.pop(address.LINK_DROPPED, None)
        given.pop(address.LINK_DROPPED, None)
        if dropped is not None and not query:  # beside settings it says nothing true: ignored
            st.session_state[state.LINK_PROBLEM] = address.message(dropped)
        if moved is not None:
            lab_id = None  # taken back only with the message's button
        kept = lab_store().find(lab_id, owner, tab_token())
        if kept is not None:
            st.session_state[state.LAB], st.session_state[state.LAB_ID] = kept.lab, lab_id
            st.session_state.update(kept.extras)
            apply_edited_link(kept.lab, query)
        else:
            start_from_link(query, owner, given)
            if lab_id is not None:  # a reload (or a reconnect) whose lab this process does not hold
                st.session_state[state.LAB_LOST] = lost_message(lab_id)
    return state.lab()


def lost_message(lab_id: str) -> str:
    """Why the link's lab is not here, as far as this process can tell."""
    why = {
        "room": "the server's store of models was full, and this browser held the most models in it (many "
                "tabs of big models), so its least recently used were dropped first",
        "expired": f"it went unused for {TIME_TO_LIVE // 3600} hours",
    }.get(lab_store().why_dropped(lab_id),
          "the app process that held it stopped (restarted, or killed), or this link was opened in another browser")
    return (f"The model this tab had (lab {literal(lab_id, 40)}) is not on this server any more: {why}. What it "
            "had trained is lost; Unrolled built the link's settings afresh, at step 0, with its lesson and target.")


def apply_edited_link(lab: Lab, query: dict[str, str]) -> None:
    """A reload brings the tab's lab back; its address bar holds the lab's own settings, so a link
    whose settings differ was edited by hand, and the edit applies as the form's would (a new model,
    or training retuned), saying so. The edit was ignored before, silently."""
    settings = {k: v for k, v in query.items() if k not in (state.LESSON_PARAM, state.STEPS_PARAM)}
    if not settings:
        return
    try:
        done = lab.change(parse_query(settings), lab.upload)
    except ValueError as err:
        st.session_state[state.LINK_PROBLEM] = (f"This link's edited settings could not be used ({literal(err)}). "
                                                "Your model is as it was.")
        return
    if done != "unchanged":
        st.session_state[state.LINK_PROBLEM] = (
            "This link's settings differ from this tab's model (edited in the address bar): "
            + ("a new model was built from them, at step 0." if done == "rebuilt" else
               "its training settings were applied; training goes on from the same weights."))


def default_lab() -> Lab:
    """The defaults' lab (the adding problem with an LSTM), or, when the server's memory is full (a class's
    models hold it), the page stops with the reason: every page needs a lab."""
    try:
        return Lab(DEFAULT)
    except MemoryFull as full:
        st.error(f"This server cannot open a model for this tab now: {literal(full)}.", icon=":material/memory:")
        st.stop()


def start_from_link(query: dict[str, str], owner: str, given: dict[str, list[str]]) -> None:
    """A new lab from the link's settings (`given`: every value of each key), the lesson it names
    and its step target."""
    lesson_key = query.pop(state.LESSON_PARAM, None)
    steps = query.pop(state.STEPS_PARAM, None)
    lesson = BY_KEY.get(lesson_key)
    try:
        check_given_once(given)
        if lesson_key is not None and lesson is None:
            raise ValueError(f"lesson={echo(lesson_key)} is not a lesson of this app; Home lists them")
        steps = None if steps is None else parse_target_steps(steps)
        lab = Lab(parse_query(query) if query else DEFAULT)
    except datasets.CorpusMissing as missing:  # a good link to a task on a corpus this machine lacks: said above
        ask(missing, "This link's model trains on it: Unrolled started with the defaults meanwhile (the adding "
                     "problem with an LSTM); open the link again once it is here.")
        lab, lesson, steps = default_lab(), None, None
    except ValueError as err:  # a bad value, settings that cannot train together, over the budget
        st.session_state[state.LINK_PROBLEM] = (
            f"This link's settings could not be used ({literal(err)}). Unrolled started with the "
            "defaults instead: the adding problem with an LSTM."
        )
        lab, lesson, steps = default_lab(), None, None
    st.session_state[state.LAB] = lab
    st.session_state[state.LAB_ID] = lab_store().add(lab, owner, tab_token(), client_address())
    if steps is not None:  # the teacher's target, over the lesson's
        st.session_state[state.TARGET_STEPS] = steps
    if lesson is not None and lesson.shipped is not None and lesson.setup == lab.setup:
        try:  # the lesson reads the trained model its link is the setup of
            pretrained.install_into(lab, lesson.shipped)
        except (ValueError, OSError) as err:  # over the memory budget, a checkpoint missing or unreadable
            st.session_state[state.LINK_PROBLEM] = (
                f"This lesson's trained model could not be opened ({literal(err)}): its settings are built afresh, "
                "untrained, and the lesson is not open.")
            lesson = None
    if lesson is not None and lesson.setup.task == lab.setup.task:
        st.session_state[state.LESSON] = lesson.key
        st.session_state.setdefault(state.TARGET_STEPS, lesson.steps)


def page_header(title: str, summary: bool = True, lesson: bool = True, own_runs: str | None = None) -> Lab:
    """Title, link problem, the lesson banner (unless lesson=False: Home lists every lesson) and
    the link; the sidebar summary unless the page draws it from a live fragment (summary=False),
    where the step count keeps up while playing. `own_runs`: what the page trains instead of the Lab
    ("runs of its own, side by side"), said under the summary, whose "steps trained" is the Lab's and
    read 0 after a page's runs reached 1,000 (issues 28 and 44)."""
    lab = current_lab()
    keep_owner_cookie()
    figure_settings()
    st.title(title)
    show_link_problem()
    asked_for()  # what the student asked for (a lesson, a model) that needs a corpus this machine lacks
    if lesson:
        lesson_banner()
    write_link(lab.setup)
    if summary:
        sidebar_summary(lab)
    if own_runs is not None:
        st.sidebar.caption(f"{title} trains {own_runs}: the model above (Build & Train's) does not train here, "
                           "and its steps stay as they were.")
    return lab


def lesson_banner() -> None:
    """The open lesson's question to predict, then its title and what to do (whose figures would answer
    the question, so it comes first)."""
    lesson = BY_KEY.get(state.get(state.LESSON))
    prediction.show(lesson)
    if not lesson:
        return
    if lesson.question is not None and not prediction.progress(lesson).started:  # its card would answer it
        st.info(f"**{lesson.title}.** Answer the question above, then press {prediction.go_word(lesson)}: what to "
                "look at, and what the lesson's runs measured, show here once your answer is locked.",
                icon=":material/school:")
        return
    st.info(f"**{lesson.title}.** {lesson.what_to_do} *Reproduces: {lesson.published}.*", icon=":material/school:")


def show_link_problem() -> None:
    moved = st.session_state.pop(state.LAB_MOVED, None)
    if moved is not None:
        with st.container(border=True):
            st.warning("Your model is now open in another tab of this browser (a duplicated tab, or a page opened "
                       "in a new tab): it trains there, as one model is driven from one tab at a time. This tab "
                       "built its link's settings afresh, at step 0.", icon=":material/tab_move:")
            st.button("Bring my model back to this tab", key="take_back", icon=":material/tab:",
                      on_click=take_back, args=(moved,))
    lost = st.session_state.pop(state.LAB_LOST, None)
    if lost:
        st.warning(lost, icon=":material/cloud_off:")
    problem = st.session_state.pop(state.LINK_PROBLEM, None)
    if problem:
        st.warning(problem, icon=":material/link_off:")


def take_back(lab_id: str) -> None:
    """The moved message's button: this tab takes its model back from the tab that has it now, and
    the model it built meanwhile is forgotten."""
    kept = lab_store().find(lab_id, owner_token(), tab_token())
    if kept is None:
        st.session_state[state.LAB_LOST] = lost_message(lab_id)
        return
    lab_store().discard(st.session_state.get(state.LAB_ID))
    st.session_state[state.LAB], st.session_state[state.LAB_ID] = kept.lab, lab_id
    st.session_state.update(kept.extras)


def write_link(setup: Setup) -> None:
    """Mirror the settings in the address bar, so the link reproduces them, with the open lesson
    (a lesson's link opens it), the step target and this tab's lab id (a reload brings the lab
    back); and tell the store what a reload should bring back with the lab."""
    query = setup.to_query()
    lesson = state.get(state.LESSON)
    if lesson is not None:
        query[state.LESSON_PARAM] = lesson
    steps = state.get(state.TARGET_STEPS)
    if steps is not None:
        query[state.STEPS_PARAM] = str(steps)
    query[state.LAB_PARAM] = st.session_state[state.LAB_ID]
    if st.query_params.to_dict() != query:
        st.query_params.from_dict(query)
    extras = {k: st.session_state[k] for k in state.KEPT_WITH_THE_LAB if k in st.session_state}
    lab_store().seen(query[state.LAB_PARAM], state.lab(), owner_token(), extras, tab_token(), client_address())


def sidebar_summary(lab: Lab) -> None:
    """The model every page works on."""
    with st.sidebar:
        st.markdown("**Your model**")
        summary = lab.summary()
        st.markdown("  \n".join(f"{k}: **{v}**" for k, v in summary.items()))
        if lab.trainer.diverged_at is not None:
            st.markdown(f":red[{lab.trainer.status}]")
