"""A session's side of the class (issue 32), when this server holds one (a teacher key is set,
app/session/class_config.py): its Presence kept current on every page run and published by the
process's one Publisher, the student's name box in the sidebar, and the teacher's "follow me" as a
banner polled every FOLLOW_POLL seconds, which opens what the teacher sent only on the student's
click. A server without a class shows and publishes nothing."""
from __future__ import annotations

import functools
import hashlib
import html
import os
from dataclasses import dataclass

import streamlit as st

from app import pages
from app.charts import class_board as class_charts
from app.session import ensembles
from app.session.class_board import as_shown
from app.session.class_config import ClassConfig, class_config
from app.session.class_publisher import Publisher
from app.session.class_status import MAX_NAME, SERIES, NamesByBrowser, Presence, clean_name
from app.session.class_store import ClassStore, StoreUnavailable, open_store
from app.session.lessons import BY_KEY
from app.session.link import parse_query
from app.widgets import state
from app.widgets.figures import show
from app.widgets.header import current_lab, owner_token
from app.widgets.literal import literal
from app.widgets.open_lesson import open_lesson

# s between a student page's looks for a new "follow me": each look is a fragment run of about 4 ms of the
# server's (measured: 30 idle students cost their process 0.028 of a core at 5 s)
FOLLOW_POLL = 10.0


@dataclass(frozen=True)
class ClassRoom:
    config: ClassConfig
    store: ClassStore
    publisher: Publisher
    names: NamesByBrowser  # the name each browser gave, for its next session (a reload)


def secrets() -> dict:
    """Streamlit's secrets, or none when the server has no secrets file."""
    try:
        return dict(st.secrets)
    except FileNotFoundError:  # StreamlitSecretNotFoundError is one: no secrets.toml
        return {}


@functools.cache  # not st.cache_resource, which any client's clear_cache message empties: a second publisher
def class_room() -> ClassRoom | str | None:
    """This process's class: its store and publisher; None when it holds no class; a message when
    its configuration is wrong (the board says it; students see nothing)."""
    try:
        config = class_config(os.environ, secrets())
    except ValueError as err:
        return str(err)
    if config is None:
        return None
    try:
        store = open_store(config.store_url, config.run_dir, keys=config.store_keys)
    except ValueError as err:
        return str(err)
    return ClassRoom(config, store, Publisher(store), NamesByBrowser())


def presence() -> Presence:
    return st.session_state.setdefault(state.PRESENCE, Presence())


def in_class() -> ClassRoom | None:
    """This process's class when this session is one of its students (not the teacher's session:
    the board is the teacher's)."""
    room = class_room()
    return room if isinstance(room, ClassRoom) and not state.get(state.TEACHER) else None


def join(url_path: str) -> None:
    """Before the page runs: the follow banner, the name box, this session registered with the
    publisher. Nothing on a server without a class."""
    room = in_class()
    if room is None or url_path == pages.BOARD[2]:  # the board's visitors are the teacher, or turned away
        return
    follow_banner(room)
    here = presence()
    name_box(room.names, here)
    room.publisher.register(here)
    keep_presence(url_path)


def keep_presence(url_path: str) -> None:
    """This session's Presence brought up to date: before the page runs, and again after it (which
    made the lab, or the page's runs, on a first visit), however it ended."""
    room = in_class()
    if room is None or url_path == pages.BOARD[2]:
        return
    here = presence()
    here.page, here.lesson, here.lab = url_path or "home", state.get(state.LESSON), state.lab()
    lesson = BY_KEY.get(here.lesson)
    runs_page = lesson.page if lesson is not None else url_path  # a lesson's runs, wherever the student looks
    here.runs = state.get(state.OWN_RUNS[runs_page]) if runs_page in state.OWN_RUNS else None
    here.prediction = state.get(state.PREDICTION)
    here.seen()
    room.publisher.nudge(here)  # a page run is where what the board shows changes: published at once


def name_box(names: NamesByBrowser, here: Presence) -> None:
    """The student's name for the board; a reloaded tab's box filled with the name its browser gave."""
    browser = owner_token()
    if state.CLASS_NAME not in st.session_state and (given := names.get(browser)) is not None:
        st.session_state[state.CLASS_NAME] = given  # before the box is drawn: its value, not its default
    typed = st.sidebar.text_input("Your name on the class board", key=state.CLASS_NAME, max_chars=MAX_NAME,
                                  placeholder=here.handle, help="Optional: the teacher's board shows this name, "
                                  f"or '{here.handle}' without one. It shows your page, model, steps and scores, "
                                  "nothing else.")
    here.name, changed = clean_name(typed)
    names.keep(browser, here.name)
    if changed:
        st.sidebar.caption(f"Your name: {changed}.")


@st.fragment(run_every=FOLLOW_POLL)
def follow_banner(room: ClassRoom) -> None:
    """The teacher's latest "follow me", until the student opens or dismisses it."""
    presence().seen()  # this fragment runs only while the tab is connected: the publisher's heartbeat
    if room.publisher.store_failed:  # this process's last try failed: a student's page waits for no timeout
        held_still(False)  # no teacher can resume a class through a store that is away: its own work carries on
        return
    try:
        latest = room.store.latest_broadcast()
    except StoreUnavailable:
        held_still(False)  # the class's store is away: the student's own work carries on
        return
    if latest is not None and latest.seq < state.get(state.CLASS_NEWEST, 0):
        return  # older than one this page has read: a signed broadcast written back (a replay) steers nothing
    if latest is not None:
        st.session_state[state.CLASS_NEWEST] = latest.seq
    held_still(latest is not None and latest.message.get("paused") is True)
    if latest is None or latest.seq <= state.get(state.FOLLOWED, 0):
        return
    message = latest.message
    repeat_of = message.get("repeat_of")
    if isinstance(repeat_of, int) and not isinstance(repeat_of, bool) and repeat_of <= state.get(state.FOLLOWED, 0):
        st.session_state[state.FOLLOWED] = latest.seq  # the "follow me" this one carries was answered
        return
    if message.get("kind") == "pause":  # nothing to open: the pause itself is said above
        return
    if message.get("kind") == "answers":
        class_answers(message, latest.seq)
        return
    if message.get("kind") == "snapshot":
        one_run(message, latest.seq)
        return
    with st.container(border=True):
        st.info(f"**Your teacher asks the class to open {literal(str(message.get('title', 'a page')), 120)}.** "
                "Your own model stays as it is until you click.", icon=":material/co_present:")
        go, later = st.columns([1, 1])
        if go.button("Open it", key=f"follow_open_{latest.seq}", type="primary", icon=":material/open_in_new:"):
            st.session_state[state.FOLLOWED] = latest.seq
            follow(message)
        if later.button("Not now", key=f"follow_later_{latest.seq}"):
            st.session_state[state.FOLLOWED] = latest.seq
            st.rerun(scope="fragment")


def held_still(paused: bool) -> None:
    """The class paused by the teacher (every broadcast says whether it is): this session's runs stop, its
    controls wait, and it says so; the page drawn again when that changes, so the controls follow."""
    if paused:
        st.warning("**Your teacher has paused the class:** look up at the front. Play comes back when they resume; "
                   "nothing of yours is lost.", icon=":material/pause_circle:")
        for trainee in (state.lab(), state.get(state.EMBEDDINGS), *(state.get(key) for key in state.OWN_RUNS.values())):
            if trainee is not None and trainee.playing:
                trainee.playing = False  # as Pause does: the step under way ends, no new one starts
    if paused != state.get(state.CLASS_PAUSED, False):
        st.session_state[state.CLASS_PAUSED] = paused
        st.rerun()  # the whole page: its Play, Step and Reset wait, or come back


def one_run(message: dict, seq: int) -> None:
    """One student's run the teacher shows the class: its held-out curve over the lesson's measured band, until
    the student closes it. A message of another shape (the store's rows are signed, yet read as any row is)
    shows nothing."""
    lesson, series = BY_KEY.get(message.get("lesson")), message.get("series")
    if lesson is None or series not in SERIES:
        return
    shown = as_shown({"name": message.get("name"), "named": True, "curves": {series: message.get("points")}})
    points = shown["curves"][series]
    if not points:
        return
    ensemble, run = ensembles.shipped(lesson.key), message.get("run")
    measured = ensemble is not None and run in ensemble.runs() and series in ensemble.series(run)
    band = ensemble.band(run, series) if measured else None
    name, escaped = shown["name"], html.escape(shown["name"])  # plotly reads a title and a legend as markup
    with st.container(border=True):
        st.markdown(f":material/cast: **Your teacher shows the class {literal(name, MAX_NAME)}'s run** on "
                    f"“{lesson.title}”.")
        show(class_charts.class_runs({"shown": (name, points)}, band, len(ensemble.members) if measured else 0,
                                     f"{escaped}'s run", f"held-out {series}", legend=f"{escaped}'s run"),
             "class_snapshot")
        st.caption(f"Their held-out {series} at each measurement as the teacher's board had it"
                   + (f", over the band of the lesson's {len(ensemble.members)} measured runs." if measured else ".")
                   + " Your own run is on your page, to set beside it.")
        st.button("Close", key=f"snapshot_close_{seq}", icon=":material/close:", on_click=seen_up_to, args=(seq,))


def class_answers(message: dict, seq: int) -> None:
    """The class's answers to a lesson's question, the measured one marked, as the teacher sent them after the
    reveal; until the student closes them. A message naming no lesson with a question, or counts of the wrong
    shape, shows nothing (a broadcast is signed, yet read as carefully as any row)."""
    lesson = BY_KEY.get(message.get("lesson"))
    counts = message.get("counts")
    if lesson is None or lesson.question is None or not isinstance(counts, dict):
        return
    choices = [choice.text for choice in lesson.question.choices]
    given = {choice: counts.get(choice) for choice in choices}
    if not all(isinstance(n, int) and not isinstance(n, bool) and 0 <= n < 100_000 for n in given.values()):
        return
    with st.container(border=True):
        mine = state.get(state.PREDICTION)
        yours = (f" Yours: **{literal(mine['choice'], 120)}**." if mine is not None and mine["lesson"] == lesson.key
                 else "")
        st.markdown(f":material/groups: **Your teacher shows the class's answers** to “{lesson.title}”.{yours}")
        show(class_charts.answers(given, lesson.question.right.text, "The class's answers"), "class_answers")
        st.caption(f"{sum(given.values())} students answered before they ran the lesson. Green: the answer the "
                   f"lesson's runs measured ({lesson.question.measured}).")
        st.button("Close", key=f"answers_close_{seq}", icon=":material/close:", on_click=seen_up_to, args=(seq,))


def seen_up_to(seq: int) -> None:
    """A button's callback: the teacher's messages up to `seq` are answered (before the rerun draws the banner)."""
    st.session_state[state.FOLLOWED] = seq


def student_seed(handle: str) -> int:
    """A seed of this student's own, the same on every lesson (1 to 9,999: the lesson's own is 0), from the
    handle their session was given."""
    return int(hashlib.sha256(handle.encode()).hexdigest()[:8], 16) % 9_999 + 1


def follow(message: dict) -> None:
    """Open what the teacher sent: a lesson, or the teacher's own setup on a page. A setup this
    student's install refuses (the size budget) leaves the student's model as it was, saying why."""
    lesson = BY_KEY.get(message.get("lesson"))
    if message.get("kind") == "lesson" and lesson is not None:
        # Each student on a seed of their own makes the class an ensemble; a page that trains runs of its own (or
        # a shipped model) keeps the lesson's
        own = message.get("own_seeds") is True and lesson.shipped is None and lesson.page not in state.OWN_RUNS
        open_lesson(lesson, student_seed(presence().handle) if own else None)
        return
    try:
        setup = parse_query(dict(message.get("query", {})))
        current_lab().start(setup)
    except (ValueError, TypeError) as err:
        st.error(f"Your teacher's setup could not be opened here ({literal(str(err))}). Your model is unchanged.",
                 icon=":material/block:")
        return
    st.session_state.pop(state.LESSON, None)
    st.switch_page(pages.PATHS.get(message.get("page"), pages.PATHS["build"]))
