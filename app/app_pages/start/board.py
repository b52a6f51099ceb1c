"""The teacher's board (issue 32): every student session of the class, live; "follow me"; the class's
runs of one lesson over its measured band, and the class's answers to the lesson's question. Only
with the class's teacher key (the link deploy/serve_class.py prints, or typed)."""
from __future__ import annotations

import time

import streamlit as st

from app.charts import class_board as charts
from app.session import ensembles
from app.session.class_board import (
    INSIDE,
    Moves,
    answers_of,
    board_frame,
    class_csv,
    counts_line,
    curves_of,
    inside_band,
    names_hidden,
)
from app.session.class_config import check_code, check_key
from app.session.class_status import MAX_NAME, SERIES
from app.session.class_store import StoreUnavailable
from app.session.lessons import BY_KEY, LESSONS
from app.session.page_runs import page_run
from app.session.teacher_pass import new_pass, pass_holds
from app.widgets import state, teacher_link
from app.widgets.class_link import FOLLOW_POLL, ClassRoom, class_room, presence
from app.widgets.figures import show
from app.widgets.header import current_lab, owner_token, page_header
from app.widgets.literal import literal
from app.widgets.network import client_address

REFRESH = 1.0  # s between the board's looks at the store: a student's page run shows within about one
# s between redraws of one lesson's figures: the class's curves move slowly, and its figure of 60 curves is
# 80 ms of work that the live table's refresh waits behind (unlike the table's, it goes in turn with the
# students' training)
LESSON_REFRESH = 10.0
SHOW = ("all", "playing", "paused", "stalled", "diverged", "disconnected", "not started")
SHOWN_AS = {"not started": "not yet"}  # the filter's choices in one row at a projector's 1024 px
OWN_SETUP = "my own setup (Build & Train's)"
# The live table's columns, what a teacher watches in a lesson first: beside the sidebar a projector's
# 1024 px shows the first six, the others scroll into view; 1400 px shows them all. None is pinned: Streamlit
# greys a pinned column's text, and the names are what a class reads first.
COLUMNS = ("name", "state", "lesson", "answer", "steps", "metric", "curve", "loss", "page", "model", "seen")
# Short headers at fixed widths (px), the rest said in their help: "held-out metric" twice and "last seen (s
# ago)" made the table 1,100 px wide, so at 1400 px the answers were out of sight and the last header cut.
# The curve has no fixed y_min: a metric below it (R² starts negative) drew "Invalid min/max y-axis".
TABLE = {
    "name": st.column_config.TextColumn("student", width=90),
    "state": st.column_config.TextColumn(width=85),
    "lesson": st.column_config.TextColumn(width=160, help="The lesson's number (its file's, in Home's lists' "
                                          "order) and its title up to the colon"),
    "answer": st.column_config.TextColumn(width=150, help="The answer to the open lesson's question"),
    "steps": st.column_config.NumberColumn(format="%d", width=50),
    "metric": st.column_config.NumberColumn(format="%.4g", width=60, help="The latest held-out metric"),
    "curve": st.column_config.LineChartColumn(width=65, help="The held-out metric so far"),
    "loss": st.column_config.NumberColumn(format="%.4g", width=60, help="The latest held-out loss"),
    "page": st.column_config.TextColumn(width=65),
    "model": st.column_config.TextColumn(width=100),
    "seen": st.column_config.NumberColumn(format="%.0f s", width=50, help="Seconds since its page last published"),
}


def run() -> None:
    old_link = teacher_link.take_old_link()
    # No "Your model" in the sidebar: the board trains nothing, and the teacher's own "adding, steps trained 0"
    # beside a class at step 1,000 read as the class's (issue 44, finding 2)
    page_header("Teacher's board", lesson=False, summary=False)
    teacher_link.move_code_to_cookie()
    if old_link:
        st.warning(teacher_link.OLD_LINK, icon=":material/link_off:")
    room = class_room()
    if room is None:
        st.info("This server holds no class, so there is no board. Serve the class with `python deploy/serve_class.py` "
                "(it prints the teacher's link), or set UNROLLED_TEACHER_KEY for a single `streamlit run`.",
                icon=":material/co_present:")
        return
    if isinstance(room, str):
        st.error(f"The class is not set up right: {literal(room)}.", icon=":material/block:")
        return
    if not admitted(room):
        return
    show_state = st.segmented_control("Show", SHOW, default=SHOW[0], key="board_show",
                                      format_func=lambda shown: SHOWN_AS.get(shown, shown))
    hide = st.toggle("Hide names (for the projector)", key=state.BOARD_HIDE_NAMES,
                     help="Each student shows as 'student N' in the table and the class's figure; the download keeps "
                          "their names")
    live_board(room, show_state or SHOW[0], hide)
    # Outside the table's fragment, made on the click (a new file every second re-drew the button under the
    # teacher's pointer); with a fresh memory of steps, so no row reads stalled
    st.download_button("Download the class (CSV)", lambda: class_csv(board_frame(room.store.statuses(), Moves(),
                                                                                 room.store.now())),
                       file_name="class.csv", mime="text/csv", icon=":material/download:", key="board_csv",
                       on_click="ignore", help="Every student as the store has them when you click, with their "
                       "names, their answer and whether the lesson's runs measured it right, their steps and latest "
                       "held-out scores")
    follow_me(room)
    class_lesson(room)


def admitted(room: ClassRoom) -> bool:
    """Whether this session is the teacher's: the key typed in the form, the teacher link's one-time code
    brought once by its cookie, or a pass an earlier session of this browser was given (teacher_link.py)."""
    key = room.config.teacher_key
    if not state.get(state.TEACHER) and pass_holds(teacher_link.pass_given(), key, time.time()):
        st.session_state[state.TEACHER_PASS] = teacher_link.pass_given()
        st.session_state[state.TEACHER] = True
    if state.get(state.TEACHER):
        teacher_link.keep_pass(st.session_state[state.TEACHER_PASS])
        return True
    with st.form("teacher_key_form"):
        typed = st.text_input("Teacher key", type="password", help="Printed by deploy/serve_class.py")
        sent = st.form_submit_button("Open the board", type="primary")
    code = None if sent else teacher_link.cookie_code_once()
    if not sent and code is None:
        st.caption("The board shows every student's page, model, steps and scores live, for the teacher only.")
        return False
    try:
        check = (lambda *args: check_key(typed, *args)) if sent else (lambda *args: check_code(code, *args))
        problem = check(room.config, room.store, owner_token(), client_address())
    except StoreUnavailable as err:
        st.error(f"The class's store cannot be reached ({literal(str(err))}), so the key cannot be checked. The "
                 "students' pages carry on without the board.", icon=":material/cloud_off:")
        return False
    if problem is not None:
        st.error(problem, icon=":material/block:")
        return False
    st.session_state[state.TEACHER_PASS] = new_pass(key, time.time())
    st.session_state[state.TEACHER] = True
    try:
        room.publisher.unregister(presence())  # the teacher is no student of the board
    except StoreUnavailable:
        pass  # its row ages out with the silence; the live board says the store is away
    st.rerun()  # the board without the key's form


@st.fragment(run_every=REFRESH)
def live_board(room: ClassRoom, show_state: str, hide: bool) -> None:
    try:
        statuses, now = room.store.statuses(), room.store.now()
    except StoreUnavailable as err:
        st.error(f"The class's store cannot be reached: {literal(str(err))}. The students' pages carry on without "
                 "the board; it tries again every second.", icon=":material/cloud_off:")
        return
    # Drawn first, as a student's click is (page_runs.py): on a process whose 30 students play, the table
    # otherwise got a thirty-first of the interpreter and reached the projector every 3-8 s. The store is
    # read before, so no training waits on its file or its network.
    with page_run():
        live_table(room, show_state, statuses, now, hide)


def live_table(room: ClassRoom, show_state: str, statuses: list, now: float, hide: bool) -> None:
    moves = st.session_state.setdefault(state.BOARD_SEEN, Moves())
    frame = board_frame(statuses, moves, now)
    st.markdown(f"**{counts_line(frame)}**")
    shown = names_hidden(frame, moves) if hide else frame
    if show_state != SHOW[0]:
        shown = shown[shown["state"] == show_state]
    st.dataframe(shown.drop(columns=["key", "lesson_key"]), hide_index=True, width="stretch", column_order=COLUMNS,
                 column_config=TABLE)
    if room.publisher.problem:
        st.warning(f"This app process cannot publish to the class's store: {literal(room.publisher.problem)}.",
                   icon=":material/cloud_off:")


def latest_sent(room: ClassRoom):
    """The class's current broadcast (None: none, or the store away)."""
    try:
        return room.store.latest_broadcast()
    except StoreUnavailable:
        return None


def send(room: ClassRoom, message: dict, paused: bool | None = None) -> bool:
    """Broadcast `message` with the class's pause: `paused`, else as it stands (every broadcast says it, the latest
    counts, so a "follow me" sent during a pause keeps it); False, said on the page, when it could not be sent or
    the pause could not be read (sent as "not paused", it would have resumed the class)."""
    try:
        if paused is None:
            latest = room.store.latest_broadcast()
            paused = latest is not None and latest.message.get("paused") is True
        room.store.broadcast({**message, "paused": paused})
    except (StoreUnavailable, ValueError) as err:
        st.error(f"It could not be sent: {literal(str(err))}.", icon=":material/block:")
        return False
    return True


def pause_control(room: ClassRoom) -> None:
    """Pause the class (every student's Play stops and their controls wait) or resume it."""
    latest = latest_sent(room)
    paused = latest is not None and latest.message.get("paused") is True
    if paused:
        st.warning("The class is paused: every student's runs stopped and their Play, Step and Reset wait.",
                   icon=":material/pause_circle:")
    label, icon = ("Resume the class", ":material/play_circle:") if paused else \
        ("Pause the class", ":material/pause_circle:")
    if st.button(label, key="board_pause", icon=icon,
                 help=f"Every student's page follows within {FOLLOW_POLL:.0f} seconds; nothing of theirs is lost"):
        # The store holds one broadcast: a pause carries the "follow me" before it (a student who has not
        # answered it still sees its banner), marked as the same one (one who has is not asked again)
        before = latest.message if latest is not None and latest.message.get("kind") != "pause" else None
        message = {"kind": "pause"} if before is None else \
            {**before, "repeat_of": before.get("repeat_of") or latest.seq}
        if send(room, message, not paused):
            st.rerun()  # the button says what it does next


def follow_me(room: ClassRoom) -> None:
    """The teacher sends the class a lesson, or the teacher's own setup: each student sees a banner
    with one button, and nothing of theirs changes without that click. And the pause."""
    st.subheader("Follow me")
    pause_control(room)
    choices = [OWN_SETUP, *(lesson.key for lesson in LESSONS)]
    picked = st.selectbox("Send the class", choices, key="board_follow",
                          format_func=lambda key: key if key == OWN_SETUP else f"the lesson {BY_KEY[key].title}")
    own_seeds = st.checkbox("Each student on a seed of their own", value=True, key="board_own_seeds",
                            help="The class's runs are then an ensemble, drawn over the lesson's measured band; off, "
                                 "every student trains the lesson's own seed (one curve for all). Pages that train "
                                 "runs of their own keep the lesson's seed.")
    if not st.button("Send to the class", icon=":material/co_present:", type="primary"):
        return
    if picked == OWN_SETUP:
        lab = current_lab()
        message = {"kind": "setup", "query": lab.setup.to_query(), "page": "build",
                   "title": f"the teacher's setup ({lab.summary()['task']}, {lab.summary()['model']})"}
    else:
        message = {"kind": "lesson", "lesson": picked, "title": f"the lesson \u201c{BY_KEY[picked].title}\u201d",
                   "own_seeds": own_seeds}
    if not send(room, message):
        return
    st.success(f"Sent: every student's page shows a banner within {FOLLOW_POLL:.0f} seconds, with a button to open "
               f"{message['title']}.", icon=":material/check_circle:")


def class_lesson(room: ClassRoom) -> None:
    """One lesson's runs of the class over its measured band, and the class's answers to its question."""
    st.subheader("The class as an ensemble")
    key = st.selectbox("Lesson", [lesson.key for lesson in LESSONS], format_func=lambda k: BY_KEY[k].title,
                       key="board_lesson")
    reveal = st.toggle("Reveal the measured answer", key="board_reveal") if BY_KEY[key].question else False
    lesson_figures(room, key, reveal)


def band_run(key: str, statuses) -> str | None:
    """The lesson's run the class trains: the run the students' pages show (a page's own runs name
    it), else the run whose setup is the lesson's link; none when no measured run is the class's (the
    exploding lesson's only curve is the clipped run's: its band under unclipped runs would mislead)
    or the lesson was measured without runs."""
    ensemble = ensembles.shipped(key)
    if ensemble is None or not ensemble.runs():
        return None
    named = [entry.status.get("run") for entry in statuses if entry.status.get("lesson") == key]
    shown = next((run for run in named if run in ensemble.runs()), None)
    return shown or ensemble.run_of(BY_KEY[key].setup)


@st.fragment(run_every=LESSON_REFRESH)
def lesson_figures(room: ClassRoom, key: str, reveal: bool) -> None:
    try:
        statuses = room.store.statuses()
    except StoreUnavailable:
        return  # the live board says why
    ensemble, run = ensembles.shipped(key), band_run(key, statuses)
    band, members, series = None, 0, "metric"
    published = [name for name in ensemble.series(run) if name in SERIES] if run is not None else []
    if published:
        series = published[0]
        band, members = ensemble.band(run, series), len(ensemble.members)
    hidden = st.session_state.setdefault(state.BOARD_SEEN, Moves()) if state.get(state.BOARD_HIDE_NAMES) else None
    curves = curves_of(statuses, key, series, hidden)
    show(charts.class_runs(curves, band, members, f"The class on \u201c{BY_KEY[key].title}\u201d",
                           f"held-out {series}"), "board_class_runs")
    if band is not None:
        inside, counted = inside_band(curves, band)
        what = (f"the band spans the {members} runs measured for the lesson's run '{run}' over seeds and CPU kernel "
                f"paths; students' runs inside it: {inside} of {counted} (of those with a point at its steps: inside "
                f"with at least {INSIDE:.0%} of their points, the band widened by a quarter)")
    else:
        what = "no measured run of this lesson is the one its link opens, so no band"
    st.caption(f"Each grey line is one student's held-out {series} on this lesson, as their page last published it "
               f"({len(curves)} of them; a run with one measurement is a dot); {what}. Redrawn every "
               f"{LESSON_REFRESH:.0f} s.")
    if curves:
        pick, go = st.columns([3, 1], vertical_alignment="bottom")
        chosen = pick.selectbox("One student's run, to show the class", list(curves), key="board_snapshot_pick",
                                format_func=lambda student: curves[student][0])
        if go.button("Show it to the class", key="board_snapshot", icon=":material/cast:"):
            send_snapshot(room, key, run, series, *curves[chosen])
    question = BY_KEY[key].question
    if question is not None:
        counts = answers_of(statuses, key, tuple(choice.text for choice in question.choices))
        # The question in the page's text, not the chart's title: at 1024 px it broke into six lines over the first
        # answer's bar (issue 44, finding 2)
        st.markdown(f"**The question:** {question.text}")
        show(charts.answers(counts, question.right.text if reveal else None, "The class's answers"), "board_answers")
        st.caption(f"Each student's answer before Play ({sum(counts.values())} so far)."
                   + (f" Measured over the lesson's runs: {question.measured}." if reveal else ""))
        if reveal and st.button("Show every student the class's answers", key="board_send_answers",
                                icon=":material/groups:"):
            send_answers(room, key, counts)


def send_snapshot(room: ClassRoom, key: str, run: str | None, series: str, name: str, points: list) -> None:
    """One student's held-out curve as the board has it now (their name as the board shows it: hidden names
    stay hidden), to every student's page over the lesson's band."""
    message = {"kind": "snapshot", "lesson": key, "run": run, "series": series, "name": name, "points": points,
               "title": f"{name}'s run on \u201c{BY_KEY[key].title}\u201d"}
    if not send(room, message):
        return
    st.success(f"Sent: every student's page shows {literal(name, MAX_NAME)}'s run within {FOLLOW_POLL:.0f} "
               "seconds.",
               icon=":material/check_circle:")


def send_answers(room: ClassRoom, key: str, counts: dict[str, int]) -> None:
    """The class's answers as they stand, the measured one marked, to every student's page (within
    FOLLOW_POLL seconds, beside their own answer)."""
    message = {"kind": "answers", "lesson": key, "counts": counts,
               "title": f"the class's answers to \u201c{BY_KEY[key].title}\u201d"}
    if not send(room, message):
        return
    st.success(f"Sent: every student's page shows the class's answers within {FOLLOW_POLL:.0f} seconds.",
               icon=":material/check_circle:")

run()
