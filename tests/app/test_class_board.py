"""The class board (issue 32) in one process on a real SQLite store: a student session's status read
back against its Lab, the publisher's rounds against the store, disconnected and stalled as the board
works them out, the teacher key (constant-time, tries limited), and under AppTest a teacher and a
student: the board lists the student for the teacher link's cookie, a wrong key is refused, a key in the
query string is refused unchecked, a cookie's key is tried once per session, and a "follow me" brings the
student a banner whose button opens the lesson (and nothing before the click)."""
import gc
import io
import json
import time
from types import SimpleNamespace

import pandas as pd
import pytest
import streamlit
from streamlit.testing.v1 import AppTest

from app import pages as nav
from app.charts.style import BLUE, GREEN
from app.session.class_board import (
    DISCONNECTED_AFTER,
    STALLED_AFTER,
    Moves,
    answers_of,
    board_frame,
    class_csv,
    counts_line,
    inside_band,
)
from app.session.class_config import MAX_TRIES, ClassConfig, check_key, class_config
from app.session.class_publisher import FORGET_AFTER, SILENT_AFTER, Publisher
from app.session.class_status import CURVE_POINTS, MAX_NAME, Presence, clean_name
from app.session.class_store import MAX_JSON_BYTES, StoreUnavailable
from app.session.class_store_sqlite import SQLiteStore
from app.session.lab import Lab
from app.session.lesson_runs import seeded
from app.session.lessons import BY_KEY, LESSONS
from app.session.link import DEFAULT
from app.session.teacher_pass import new_code
from app.widgets import state, teacher_link
from app.widgets.class_link import class_room, student_seed

from .conftest import MAIN, chart, plotted

KEY = "teacher-key-for-tests-22"


class Clock:
    def __init__(self, now: float = 1_000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def store(tmp_path):
    clock = Clock()
    opened = SQLiteStore(tmp_path / "class.db", clock=clock)
    opened.clock_for_tests = clock
    yield opened
    opened.close()


def trained_lab(steps: int) -> Lab:
    lab = Lab(DEFAULT)
    with lab.lock:
        while lab.advance(steps):
            pass
    return lab


# ------------------------------------------------------------------ what a student shows

def test_a_status_is_the_labs_own_figures_and_stays_small():
    lab = trained_lab(60)
    here = Presence(name="Ada", page="build", lab=lab)
    status = here.status()
    rows = lab.held_out.log.rows()
    assert status["steps"] == 60 and status["state"] == "paused" and status["name"] == "Ada"
    assert status["loss"] == rows[-1]["loss"] and status["metric"] == rows[-1]["metric"]
    assert status["curves"]["metric"] == [[r["step"], round(r["metric"], 5)] for r in rows]
    assert status["model"] == "adding · LSTM 1 x 64"
    long = Presence(name="x" * MAX_NAME, lab=trained_lab(2000))
    assert len(long.lab.held_out.log.rows()) > CURVE_POINTS
    assert all(len(curve) == CURVE_POINTS for curve in long.status()["curves"].values())
    assert len(json.dumps(long.status()).encode()) < MAX_JSON_BYTES // 2


def test_a_diverged_lab_reads_diverged_and_its_figures_stay_json():
    lab = Lab(DEFAULT)
    with lab.lock:
        lab.trainer.model.head.weight.data.fill_(float("nan"))
        lab.advance(1)
    status = Presence(lab=lab).status()
    assert status["state"] == "diverged"
    json.dumps(status, allow_nan=False)  # NaN is not JSON: the board would not read it


@pytest.mark.parametrize("typed, shown, said", [
    ("Ada", "Ada", None),
    ("<b>Ada</b> **bold** [x](javascript:1)", "<b>Ada</b> **bold** [x](javascript:1)", None),  # plain text on the board
    ("A\u200bda\x00  Lovelace", "Ada Lovelace", "invisible characters"),
    ("x" * 10_000, "x" * MAX_NAME, f"at most {MAX_NAME} characters"),
    ("Zoë Ōkubo 李", "Zoë Ōkubo 李", None),  # letters of any script are kept
    # issue 43, finding 8: blank rows on the board, the teacher's name, another's handle
    ("\u2800\u2800\u2800", "", "invisible characters only"),
    ("\u3164 \u115f\u1160\uffa0", "", "invisible characters only"),
    ("\u200b\u2060\ufeff", "", "invisible characters only"),
    ("\u0301\u0302 \u20dd", "", "invisible characters only"),  # combining marks on nothing
    ("Teacher", "", "your teacher's name"),
    ("ＴＥＡＣＨＥＲ", "", "your teacher's name"),  # full-width letters, as NFKC reads them
    ("the t-e-a-c-h-e-r", "", "your teacher's name"),
    ("\u0422\u0435acher", "", "your teacher's name"),  # a Cyrillic Т and е among Latin letters
    ("\u0442\u0435\u0430\u0441\u04bb\u0435\u0433", "", "your teacher's name"),  # Cyrillic only: теасһег
    ("\u03c4\u03b5acher", "", "your teacher's name"),  # Greek τ and ε
    ("Анна Петрова", "Анна Петрова", None),  # a Cyrillic name is a name
    ("Calm Otter 42", "", "names students without a name"),
    ("calm otter", "calm otter", None),  # no number: not a handle
])
def test_a_name_is_plain_text_of_at_most_forty_characters(typed, shown, said):
    name, changed = clean_name(typed)
    assert name == shown
    assert (changed is None) if said is None else said in changed


# ------------------------------------------------------------------ the publisher and the board's reading

def test_a_round_publishes_every_session_and_forgets_the_gone(store):
    publisher = Publisher(store, threaded=False)
    first, second = Presence(name="Ada", lab=trained_lab(25)), Presence(name="Alan")
    publisher.register(first)
    publisher.register(second)
    assert publisher.publish_round()
    published = {entry.session_id: entry.status for entry in store.statuses()}
    assert published == {first.key: first.status(), second.key: second.status()}
    gone = second.key
    del second  # the session dropped its state, and the Presence in it
    gc.collect()
    assert publisher.publish_round()
    assert [entry.session_id for entry in store.statuses()] == [first.key]
    assert gone not in publisher.sessions and gone not in publisher.published_keys


def test_a_silent_tab_ages_on_the_board_then_leaves_it(store):
    """A Presence not stamped for SILENT_AFTER s (no page run, no banner poll: its tab is gone) is
    published no more, so it ages into "disconnected"; after FORGET_AFTER its entry goes."""
    publisher = Publisher(store, threaded=False)
    here = Presence(name="Ada")
    publisher.register(here)
    assert publisher.publish_round()
    store.clock_for_tests.now += 7
    here.seen_at = time.monotonic() - SILENT_AFTER - 1
    assert publisher.publish_round()
    [entry] = store.statuses()
    assert entry.age == pytest.approx(7)  # not published again: aging
    assert board_frame(store.statuses(), Moves(), store.now()).state.tolist() == ["disconnected"]
    here.seen()
    assert publisher.publish_round() and store.statuses()[0].age == 0  # back
    here.seen_at = time.monotonic() - FORGET_AFTER - 1
    assert publisher.publish_round()
    assert store.statuses() == [] and here.key not in publisher.sessions


def test_one_sessions_broken_status_leaves_the_others_published(store):
    class Broken(Presence):
        def status(self) -> dict:
            raise KeyError("metric")

    publisher = Publisher(store, threaded=False)
    broken, fine = Broken(), Presence(name="Ada")
    publisher.register(broken)
    publisher.register(fine)
    assert publisher.publish_round()
    assert [entry.status["name"] for entry in store.statuses()] == ["Ada"]
    assert "KeyError" in publisher.problem


def test_a_store_that_fails_is_said_and_tried_again(tmp_path):
    broken = SQLiteStore(tmp_path / "missing" / "class.db")
    publisher = Publisher(broken, threaded=False)
    here = Presence()
    publisher.register(here)
    assert not publisher.publish_round() and publisher.problem
    (tmp_path / "missing").mkdir()
    assert publisher.publish_round() and publisher.problem is None


def test_the_board_reads_disconnected_and_stalled(store):
    clock = store.clock_for_tests
    playing = {"name": "Ada", "state": "playing", "steps": 10}
    store.publish("a", playing)
    store.publish("b", {"name": "Alan", "state": "paused", "steps": 5})
    moves = Moves()
    frame = board_frame(store.statuses(), moves, store.now())
    assert dict(zip(frame.name, frame.state)) == {"Ada": "playing", "Alan": "paused"}
    clock.now += STALLED_AFTER
    store.publish("a", playing)  # still at step 10, still playing
    frame = board_frame(store.statuses(), moves, store.now())
    assert dict(zip(frame.name, frame.state)) == {"Ada": "stalled", "Alan": "disconnected"}
    assert STALLED_AFTER > DISCONNECTED_AFTER  # Alan has not published for 10 s
    store.publish("a", playing | {"steps": 11})
    frame = board_frame(store.statuses(), moves, store.now())
    assert frame.set_index("name").state["Ada"] == "playing"
    assert counts_line(frame) == "2 students: 1 playing, 1 disconnected."


# ------------------------------------------------------------------ the teacher key

def test_the_key_comes_from_the_environment_or_the_secrets_and_must_be_long():
    assert class_config({}, {}) is None
    assert class_config({"UNROLLED_TEACHER_KEY": KEY}, {}).teacher_key == KEY
    assert class_config({}, {"teacher_key": KEY}).teacher_key == KEY
    assert KEY not in repr(class_config({}, {"teacher_key": KEY}))
    with pytest.raises(ValueError, match="at least 12"):
        class_config({"UNROLLED_TEACHER_KEY": "short"}, {})


def test_a_wrong_key_is_refused_and_tries_are_limited_per_browser(store, tmp_path):
    config = ClassConfig(KEY, None, tmp_path)
    assert check_key(KEY, config, store, "browser-1", "10.0.0.1") is None
    assert "not this class's teacher key" in check_key(KEY[:-1] + "x", config, store, "browser-1", "10.0.0.1")
    for _ in range(MAX_TRIES - 2):
        check_key("wrong", config, store, "browser-1", "10.0.0.1")
    assert "Too many tries" in check_key(KEY, config, store, "browser-1", "10.0.0.1")  # the right key, too late
    assert check_key(KEY, config, store, "browser-2", "10.0.0.1") is None  # another browser
    store.clock_for_tests.now += 61
    assert check_key(KEY, config, store, "browser-1", "10.0.0.1") is None  # a minute on


def test_a_script_of_new_browsers_gets_one_guess_each_and_never_locks_the_teacher_out(store, tmp_path):
    """Issue 43, finding 5: the class-wide limit (300 a minute) was reached by one script in under a minute,
    and the teacher's right key was then refused in 9 of 11 probes. Wrong tries are counted per address;
    past MAX_ADDRESS_TRIES a browser of that address gets its first try only, which may be the right key."""
    config = ClassConfig(KEY, None, tmp_path)
    for guess in range(400):  # a script: a new browser for every guess, from one address, as fast as it can
        assert "not this class's teacher key" in check_key(f"guess-{guess}", config, store, f"bot-{guess}", "10.0.0.9")
    assert check_key(KEY, config, store, "teacher", "10.0.0.9") is None  # behind the same NAT, first try
    assert check_key(KEY, config, store, "teacher-at-home", "192.0.2.7") is None
    refused = check_key("guess-again", config, store, "bot-0", "10.0.0.9")  # a second try from the flooded address
    assert "Too many wrong tries" in refused and "network" in refused
    assert check_key("wrong", config, store, "student", "10.0.0.1") and \
        "not this class's" in check_key("wrong", config, store, "student", "10.0.0.1")  # another address: as ever


# ------------------------------------------------------------------ a teacher and a student in the app

@pytest.fixture
def in_class(monkeypatch, tmp_path):
    monkeypatch.setenv("UNROLLED_TEACHER_KEY", KEY)
    monkeypatch.setenv("UNROLLED_RUN_DIR", str(tmp_path))
    monkeypatch.delenv("UNROLLED_CLASS_STORE", raising=False)
    class_room.cache_clear()
    yield
    class_room.cache_clear()


@pytest.fixture
def cookies(monkeypatch) -> dict[str, str]:
    """The cookies the app's st.context.cookies gives. A browser sends them with the websocket's
    handshake, and AppTest has none to give (AppTest.context seeds only what a rerun carries), so
    st.context is replaced, for the test, by one holding this dict (and, as AppTest's, no address)."""
    jar = {}
    monkeypatch.setattr(streamlit, "context", SimpleNamespace(cookies=jar, ip_address=None, headers={}))
    return jar


@pytest.fixture
def tries(in_class, monkeypatch) -> list[str]:
    """Every try the class's store counts, as it counts them (class_config.check_key)."""
    counted, store = [], class_room().store
    count_try = store.count_try
    monkeypatch.setattr(store, "count_try", lambda client, window: counted.append(client) or count_try(client, window))
    return counted


def student_app() -> AppTest:
    return AppTest.from_file(MAIN, default_timeout=120).run()


def teacher_app(cookies: dict[str, str], code: str | None = None) -> AppTest:
    """A teacher's session on Home, then on the board with a one-time code of the teacher link in its
    cookie (as the board's own script leaves it: teacher_link.py), a new one unless given."""
    at = AppTest.from_file(MAIN, default_timeout=120).run()
    cookies[teacher_link.COOKIE] = new_code(KEY, time.time()) if code is None else code
    return at.switch_page(nav.BOARD[0]).run()


def test_the_board_lists_a_student_for_the_code_in_the_cookie(in_class, cookies):
    student = student_app()
    student.sidebar.text_input(key=state.CLASS_NAME).input("Ada").run()
    class_room().publisher.publish_round()
    teacher = teacher_app(cookies)
    assert not teacher.exception and teacher.session_state[state.TEACHER]
    script = " ".join(html.proto.body for html in teacher.sidebar.get("html"))
    assert json.dumps(f"{teacher_link.COOKIE}=") in script and "location.replace(opened.pathname)" in script
    board = teacher.dataframe[0].value
    assert list(board.name) == ["Ada"] and list(board.page) == ["home"]
    assert board.steps.tolist() == [0] and board.model.tolist() == ["adding · LSTM 1 x 64"]
    assert any("1 student: 1 not started." in m.value for m in teacher.markdown)
    assert not any("Your model" in m.value for m in teacher.sidebar.markdown)  # the board trains nothing
    # the teacher's own session publishes nothing
    class_room().publisher.publish_round()
    assert [entry.status["name"] for entry in class_room().store.statuses()] == ["Ada"]


def test_a_wrong_code_gets_a_plain_refusal_and_no_board(in_class, cookies):
    for wrong in ("not-the-key-at-all", new_code("another class's key", time.time()), KEY):
        teacher = teacher_app(cookies, wrong)
        assert not teacher.exception and not teacher.dataframe
        assert any("not this class's teacher link" in e.value for e in teacher.error)
        assert state.TEACHER not in teacher.session_state


def test_the_links_code_opens_the_board_once_and_its_pass_again_on_a_reload(in_class, cookies):
    """Issue 43, finding 7: chromium's profile keeps board#... in its History, Top Sites and Sessions,
    whatever the page does; a code spent by the first board holds nothing that opens it again. The
    session it admitted leaves a pass in a session cookie, which a reload of the board brings back."""
    code = new_code(KEY, time.time())
    teacher = teacher_app(cookies, code)
    assert teacher.session_state[state.TEACHER] and teacher.dataframe
    given = teacher.session_state[state.TEACHER_PASS]
    script = " ".join(html.proto.body for html in teacher.sidebar.get("html"))
    assert json.dumps(f"{teacher_link.PASS_COOKIE}={given}; path=/; SameSite=Strict") in script
    assert KEY not in script
    again = teacher_app(cookies, code)  # the same link, from the history, in a new session
    assert not again.dataframe and state.TEACHER not in again.session_state
    assert any("has been used" in e.value for e in again.error)
    cookies[teacher_link.PASS_COOKIE] = given  # the browser that spent it, reloaded
    reloaded = AppTest.from_file(MAIN, default_timeout=120).run().switch_page(nav.BOARD[0]).run()
    assert reloaded.session_state[state.TEACHER] and reloaded.dataframe
    cookies[teacher_link.PASS_COOKIE] = given[:-1] + ("A" if given[-1] != "A" else "B")  # a pass not made here
    forged = AppTest.from_file(MAIN, default_timeout=120).run().switch_page(nav.BOARD[0]).run()
    assert state.TEACHER not in forged.session_state and not forged.dataframe


def test_a_key_in_the_query_string_is_refused_unchecked_and_said(in_class, cookies, tries):
    """The link before the key moved after "#": taken out of the address, said, and counted as no try."""
    at = AppTest.from_file(MAIN, default_timeout=120).run()
    at.query_params[teacher_link.OLD_PARAM] = KEY
    teacher = at.switch_page(nav.BOARD[0]).run()
    assert not teacher.exception and not teacher.dataframe and state.TEACHER not in teacher.session_state
    assert "key" not in teacher.query_params
    assert [w.value for w in teacher.warning if "?key=" in w.value] == [teacher_link.OLD_LINK]
    assert not teacher.error and tries == []
    [typed] = [box for box in teacher.text_input if box.label == "Teacher key"]  # the form stays
    typed.input(KEY)
    [send] = [b for b in teacher.button if b.label == "Open the board"]
    send.click().run()
    assert teacher.session_state[state.TEACHER] and teacher.dataframe


def test_a_cookies_code_is_tried_once_per_session_however_many_reruns(in_class, cookies, tries):
    teacher = teacher_app(cookies, "not-the-key-at-all")
    assert any("not this class's teacher link" in e.value for e in teacher.error)
    once = len(tries)
    assert once > 0
    for _ in range(MAX_TRIES + 1):
        teacher.run()
    assert len(tries) == once and not teacher.error  # the refusal said once; reruns ask nothing
    [typed] = [box for box in teacher.text_input if box.label == "Teacher key"]
    typed.input(KEY)
    [send] = [b for b in teacher.button if b.label == "Open the board"]
    send.click().run()  # within the limit: the reruns counted no tries
    assert teacher.session_state[state.TEACHER] and teacher.dataframe


def test_follow_me_brings_a_banner_and_only_the_click_opens_the_lesson(in_class, cookies):
    student = student_app()
    before = student.session_state[state.LAB].setup
    teacher = teacher_app(cookies)
    teacher.selectbox(key="board_follow").select("vanishing").run()
    [send] = [b for b in teacher.button if b.label == "Send to the class"]
    send.click().run()
    assert any("Sent:" in s.value for s in teacher.success)
    student.run()
    banner = [i.value for i in student.info if "Your teacher asks the class to open" in i.value]
    assert banner and "Vanishing gradients, measured" in banner[0]
    assert student.session_state[state.LAB].setup == before  # nothing changed before the click
    [open_it] = [b for b in student.button if b.key.startswith("follow_open_")]
    open_it.click().run()
    lesson = BY_KEY["vanishing"]
    assert student.session_state[state.LESSON] == "vanishing"
    seed = student_seed(student.session_state[state.PRESENCE].handle)  # the class an ensemble: a seed each
    assert student.session_state[state.LAB].setup == seeded(lesson.setup, seed) and 1 <= seed < 10_000
    student.run()
    assert not [i for i in student.info if "Your teacher asks" in i.value]  # answered: the banner is gone
    another = student_app()
    teacher.checkbox(key="board_own_seeds").uncheck().run()  # every student on the lesson's own seed
    [send] = [b for b in teacher.button if b.label == "Send to the class"]
    send.click().run()
    another.run()
    [b for b in another.button if b.key.startswith("follow_open_")][0].click().run()
    assert another.session_state[state.LAB].setup == lesson.setup


def test_a_followed_setup_over_the_budget_is_refused_and_the_model_kept(in_class):
    student = student_app()
    before = student.session_state[state.LAB]
    huge = {**DEFAULT.to_query(), "hidden_size": "4096", "num_layers": "4"}
    class_room().store.broadcast({"kind": "setup", "query": huge, "page": "build", "title": "a huge setup"})
    student.run()
    [open_it] = [b for b in student.button if b.key.startswith("follow_open_")]
    open_it.click().run()
    assert any("could not be opened here" in e.value for e in student.error)
    assert student.session_state[state.LAB] is before and before.setup == DEFAULT


def test_no_key_no_board_and_nothing_published(monkeypatch):
    monkeypatch.delenv("UNROLLED_TEACHER_KEY", raising=False)
    class_room.cache_clear()
    try:
        student = student_app()
        assert class_room() is None and state.PRESENCE not in student.session_state
        assert not student.sidebar.text_input  # no name box
    finally:
        class_room.cache_clear()


def test_an_unreachable_store_leaves_the_students_page_working(monkeypatch):
    monkeypatch.setenv("UNROLLED_TEACHER_KEY", KEY)
    monkeypatch.setenv("UNROLLED_CLASS_STORE", "redis://127.0.0.1:1/0")  # nothing listens on port 1
    class_room.cache_clear()
    try:
        student = student_app()
        assert not student.exception and student.title[0].value == "Unrolled"
        with pytest.raises(StoreUnavailable):
            class_room().store.statuses()
        assert not class_room().publisher.publish_round() and class_room().publisher.problem
    finally:
        class_room.cache_clear()



def test_the_board_counts_the_class_answers_and_reveals_the_measured_one(in_class, cookies):
    lesson = BY_KEY["exploding"]
    question = lesson.question
    store = class_room().store
    picks = [question.choices[0].text, question.choices[0].text, question.right.text]
    for n, choice in enumerate(picks):
        store.publish(f"student{n}", {"name": f"s{n}", "lesson": lesson.key, "state": "paused", "steps": 0,
                                      "prediction": {"lesson": lesson.key, "choice": choice, "locked": True}})
    store.publish("other", {"name": "o", "lesson": "vanishing", "state": "paused", "steps": 0,
                            "prediction": {"lesson": "vanishing", "choice": question.choices[0].text, "locked": True}})
    teacher = teacher_app(cookies)
    teacher.selectbox(key="board_lesson").select(lesson.key).run()
    spec = chart(teacher, "The class's answers")
    assert any(m.value == f"**The question:** {question.text}" for m in teacher.markdown)
    [bars] = spec["data"]
    expected = {choice.text: picks.count(choice.text) for choice in question.choices}
    assert dict(zip(plotted(bars["y"]), plotted(bars["x"]))) == expected
    assert set(bars["marker"]["color"]) == {BLUE}  # nothing revealed yet
    teacher.toggle(key="board_reveal").set_value(True).run()
    [bars] = chart(teacher, "The class's answers")["data"]
    colours = dict(zip(plotted(bars["y"]), bars["marker"]["color"]))
    assert colours[question.right.text] == GREEN and list(colours.values()).count(GREEN) == 1


def test_the_board_names_lessons_by_title_hides_names_for_the_projector_and_downloads_the_class(in_class, cookies):
    lesson = BY_KEY["exploding"]
    question = lesson.question
    store = class_room().store
    picks = {"Ada": question.right.text, "Alan": question.choices[1].text, "Grace": ""}
    for n, (name, choice) in enumerate(picks.items()):
        prediction = {"lesson": lesson.key, "choice": choice, "locked": True} if choice else None
        store.publish(f"student{n}", {"name": name, "named": True, "lesson": lesson.key, "state": "paused",
                                      "steps": 2 + n, "metric": 0.5 + n / 10, "prediction": prediction,
                                      "curves": {"metric": [[0, 0.5], [25, 0.6 + n / 10]]}})
    teacher = teacher_app(cookies)
    board = teacher.dataframe[0].value
    number = [entry.key for entry in LESSONS].index(lesson.key) + 1
    assert set(board.lesson) == {f"{number}. Exploding gradients and clipping"}  # its title, not its key
    assert sorted(board.name) == ["Ada", "Alan", "Grace"]
    teacher.selectbox(key="board_lesson").select(lesson.key).run()
    teacher.toggle(key=state.BOARD_HIDE_NAMES).set_value(True).run()
    hidden = teacher.dataframe[0].value
    assert sorted(hidden.name) == ["student 1", "student 2", "student 3"]
    assert not any(name in json.dumps(chart(teacher, "The class on")) for name in picks)  # the figure's hovers too
    [download] = [e for e in teacher.get("download_button") if e.proto.label == "Download the class (CSV)"]
    exported = pd.read_csv(io.BytesIO(class_csv(board_frame(store.statuses(), Moves(), store.now()))), dtype=str,
                           keep_default_na=False)
    assert sorted(exported.student) == ["Ada", "Alan", "Grace"]  # the teacher's record keeps the names
    by_name = exported.set_index("student")
    assert by_name.loc["Ada", "answer measured right"] == "yes" and by_name.loc["Alan", "answer measured right"] == "no"
    assert by_name.loc["Grace", "answer"] == "" and by_name.loc["Grace", "answer measured right"] == ""
    assert by_name.loc["Alan", "steps"] == "3" and float(by_name.loc["Alan", "held-out metric"]) == pytest.approx(0.6)
    store.publish("mallory", {"name": "=HYPERLINK(\"http://x\")", "named": True, "lesson": lesson.key})
    cells = pd.read_csv(io.BytesIO(class_csv(board_frame(store.statuses(), Moves(), store.now()))), dtype=str,
                        keep_default_na=False)
    assert "'=HYPERLINK(\"http://x\")" in set(cells.student)  # read as text by a spreadsheet, not run
    assert download.proto.deferred_file_id and download.proto.ignore_rerun  # made on the click, no rerun


def test_after_the_reveal_the_teacher_sends_every_student_the_class_answers(in_class, cookies):
    lesson = BY_KEY["exploding"]
    question = lesson.question
    student = student_app()
    student.session_state[state.PREDICTION] = {"lesson": lesson.key, "choice": question.right.text, "locked": True}
    store = class_room().store
    for n, choice in enumerate([question.right.text, question.choices[1].text, question.right.text]):
        store.publish(f"s{n}", {"name": f"s{n}", "lesson": lesson.key, "state": "paused", "steps": 0,
                                "prediction": {"lesson": lesson.key, "choice": choice, "locked": True}})
    teacher = teacher_app(cookies)
    teacher.selectbox(key="board_lesson").select(lesson.key).run()
    assert not [b for b in teacher.button if b.key == "board_send_answers"]  # only once the answer is revealed
    teacher.toggle(key="board_reveal").set_value(True).run()
    [send] = [b for b in teacher.button if b.key == "board_send_answers"]
    send.click().run()
    assert any("Sent: every student's page shows the class's answers" in s.value for s in teacher.success)
    expected = answers_of(store.statuses(), lesson.key, tuple(c.text for c in question.choices))  # as sent
    student.run()
    [bars] = chart(student, "The class's answers")["data"]
    assert dict(zip(plotted(bars["y"]), plotted(bars["x"]))) == expected and sum(expected.values()) == 3
    colours = dict(zip(plotted(bars["y"]), bars["marker"]["color"]))
    assert colours[question.right.text] == GREEN and list(colours.values()).count(GREEN) == 1
    said = " ".join(m.value for m in student.markdown)
    assert "Your teacher shows the class's answers" in said and f"Yours: **{question.right.text}**" in said
    [close] = [b for b in student.button if b.key.startswith("answers_close_")]
    close.click().run()
    assert not [m for m in student.markdown if "Your teacher shows the class's answers" in m.value]


def test_the_teacher_pauses_the_class_and_every_run_stops_and_waits_until_resumed(in_class, cookies):
    student = student_app()
    lab = student.session_state[state.LAB]
    teacher = teacher_app(cookies)
    teacher.selectbox(key="board_follow").select("vanishing").run()
    [send] = [b for b in teacher.button if b.label == "Send to the class"]
    send.click().run()
    follower = student_app()
    [b for b in follower.button if b.key.startswith("follow_open_")][0].click().run()  # answered before the pause
    lab.playing = True  # as Play leaves it
    [pause] = [b for b in teacher.button if b.key == "board_pause"]
    assert pause.label == "Pause the class"
    pause.click().run()
    assert any("The class is paused" in w.value for w in teacher.warning)
    assert [b.label for b in teacher.button if b.key == "board_pause"] == ["Resume the class"]
    student.run()
    assert not lab.playing and student.session_state[state.CLASS_PAUSED]
    assert any("Your teacher has paused the class" in w.value for w in student.warning)
    # the "follow me" sent before the pause is still there to answer; one who answered it is not asked again
    [open_it] = [b for b in student.button if b.key.startswith("follow_open_")]
    follower.run()
    assert not [b for b in follower.button if b.key.startswith("follow_open_")]
    assert any("Your teacher has paused the class" in w.value for w in follower.warning)
    student.switch_page(nav.PATHS["build"]).run()
    controls = {b.key: b for b in student.button if b.key in ("play", "step", "reset")}
    assert len(controls) == 3 and all(b.disabled for b in controls.values())  # every control waits
    [resume] = [b for b in teacher.button if b.key == "board_pause"]
    resume.click().run()
    student.run()
    assert not student.session_state[state.CLASS_PAUSED]
    assert not any("Your teacher has paused the class" in w.value for w in student.warning)
    assert not any(b.disabled for b in student.button if b.key in ("play", "step", "reset"))
    assert lab.playing is False  # resuming gives Play back; it does not press it
    # the unanswered "follow me" is still there after the resume, the same one; the follower is not asked again
    assert [b.key for b in student.button if b.key.startswith("follow_open_")]
    follower.run()
    assert not [b for b in follower.button if b.key.startswith("follow_open_")]
    del open_it


def test_an_old_signed_pause_written_back_steers_no_one_and_a_store_away_releases_the_pause(in_class, monkeypatch):
    student = student_app()
    store = class_room().store
    store.broadcast({"kind": "pause", "paused": True})
    old = store.read_broadcast()  # (seq, body, signature) as the store holds it: what a replay writes back
    student.run()
    assert student.session_state[state.CLASS_PAUSED]
    store.broadcast({"kind": "pause", "paused": False})
    student.run()
    assert not student.session_state[state.CLASS_PAUSED]
    with store.transaction() as db:  # the old pause written back as it was, seq and signature: a replay
        db.execute("INSERT OR REPLACE INTO broadcast VALUES (?, ?, ?, ?, ?)",
                   (store.namespace, int(old[0]), old[1], old[2], store.clock()))
    assert store.latest_broadcast().message["paused"] is True  # it checks out as signed
    student.run()
    assert not student.session_state[state.CLASS_PAUSED]  # older than one the page read: it steers nothing
    store.broadcast({"kind": "pause", "paused": True})
    student.run()
    assert student.session_state[state.CLASS_PAUSED]

    def away():
        raise StoreUnavailable("the class's store is down")

    monkeypatch.setattr(store, "latest_broadcast", away)
    student.run()  # no teacher can resume through a store that is away: the student's work carries on
    assert not student.session_state[state.CLASS_PAUSED]


def test_the_teacher_shows_the_class_one_students_run_over_the_lessons_band(in_class, cookies):
    from app.session import ensembles

    lesson = BY_KEY["rnn-forgets"]  # its band is of the held-out loss
    store = class_room().store
    ada = [[0, 0.9], [25, 0.5], [50, 0.3]]
    store.publish("ada", {"name": "Ada", "named": True, "lesson": lesson.key, "state": "paused", "steps": 50,
                          "curves": {"loss": ada}})
    student = student_app()
    teacher = teacher_app(cookies)
    teacher.selectbox(key="board_lesson").select(lesson.key).run()
    teacher.toggle(key=state.BOARD_HIDE_NAMES).set_value(True).run()  # on the projector: no name sent either
    picker = teacher.selectbox(key="board_snapshot_pick")
    assert picker.value == "ada" and picker.format_func("ada").startswith("student ")
    [show_it] = [b for b in teacher.button if b.key == "board_snapshot"]
    show_it.click().run()
    assert any("Sent: every student's page shows student" in s.value for s in teacher.success)
    student.run()
    spec = chart(student, "student ")
    [run] = [t for t in spec["data"] if t.get("legendgroup") == "class"]
    assert [plotted(run["x"]), plotted(run["y"])] == [[0, 25, 50], [0.9, 0.5, 0.3]]  # Ada's curve, as published
    ensemble = ensembles.shipped(lesson.key)
    [band] = [t for t in spec["data"] if t.get("name", "").endswith("measured runs")]
    expected = ensemble.band(ensemble.run_of(lesson.setup), "loss")
    assert plotted(band["y"]) == pytest.approx(list(expected["low"]))
    assert "Ada" not in json.dumps(spec) and not any("Ada" in m.value for m in student.markdown)
    inside, counted = inside_band({"ada": ("Ada", ada)}, expected)
    said = f"students' runs inside it: {inside} of 1 (of those with a point at its steps"
    assert counted == 1 and any(said in c.value for c in teacher.caption)
    [close] = [b for b in student.button if b.key.startswith("snapshot_close_")]
    close.click().run()
    titles = [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in student.get("plotly_chart")]
    assert not [title for title in titles if title.endswith("'s run")]  # closed


def test_a_follow_me_sent_while_paused_keeps_the_pause_and_one_the_pause_cannot_be_read_for_is_not_sent(
        in_class, cookies, monkeypatch):
    teacher = teacher_app(cookies)
    store = class_room().store
    [b for b in teacher.button if b.key == "board_pause"][0].click().run()
    teacher.selectbox(key="board_follow").select("vanishing").run()
    [b for b in teacher.button if b.label == "Send to the class"][0].click().run()
    latest = store.latest_broadcast()
    assert latest.message["kind"] == "lesson" and latest.message["paused"] is True  # the class stays paused

    def away():
        raise StoreUnavailable("the class's store is down")

    read = store.latest_broadcast
    monkeypatch.setattr(store, "latest_broadcast", away)
    [b for b in teacher.button if b.label == "Send to the class"][0].click().run()
    assert any("It could not be sent" in e.value and "down" in e.value for e in teacher.error)
    monkeypatch.setattr(store, "latest_broadcast", read)
    assert store.latest_broadcast().seq == latest.seq  # nothing sent that would have resumed the class


def test_a_hidden_name_is_never_given_to_another_student():
    moves = Moves()
    assert [moves.anonymous(key) for key in ("a", "b", "c")] == ["student 1", "student 2", "student 3"]
    moves.keep_only({"a", "b"})  # c left the board
    assert moves.anonymous("d") == "student 4" and moves.anonymous("a") == "student 1"


def test_the_board_counts_the_runs_inside_the_lessons_band_as_the_full_tier_holds_a_run():
    band = pd.DataFrame({"step": [0, 25, 50, 75], "low": [1.0, 0.5, 0.3, 0.2], "high": [1.2, 0.7, 0.5, 0.4]})
    curves = {"in": ("a", [[0, 1.1], [25, 0.6], [50, 0.4], [75, 0.3]]),
              "edge": ("b", [[0, 1.1], [25, 0.74], [50, 0.4], [75, 0.3]]),  # 0.74: within the quarter widening
              "out": ("c", [[0, 1.1], [25, 0.9], [50, 0.9], [75, 0.3]]),  # two of four outside
              "elsewhere": ("d", [[10, 0.5]])}  # no point at a band's step: not counted
    assert inside_band(curves, band) == (2, 3)


def test_answers_of_a_forged_shape_show_no_student_anything(in_class):
    student = student_app()
    for forged in ({"kind": "answers", "lesson": "exploding", "counts": {"x": "many"}},
                   {"kind": "answers", "lesson": "no-such-lesson", "counts": {}},
                   {"kind": "answers", "lesson": "exploding", "counts": [1, 2]}):
        class_room().store.broadcast(forged)
        student.run()
        assert not student.exception and not student.get("plotly_chart")
        assert not [m for m in student.markdown if "Your teacher shows" in m.value]


def test_two_students_of_one_name_are_two_lines_and_a_name_is_never_markup():
    from app.charts.class_board import class_runs
    from app.session.class_board import curves_of
    from app.session.class_store import Status

    markup = '<span style="font-size:80px">Alex</span> %{y}'
    statuses = [Status(key, {"name": name, "lesson": "vanishing", "curves": {"loss": [[0, 1.0], [25, 0.5]]}}, 0.0)
                for key, name in (("k1", "Alex"), ("k2", "Alex"), ("k3", markup))]
    curves = curves_of(statuses, "vanishing", "loss")
    assert len(curves) == 3
    fig = class_runs(curves, None, 0, "The class", "held-out loss")
    metas = [trace.meta for trace in fig.data]
    [escaped] = [meta for meta in metas if meta != "Alex"]
    assert metas.count("Alex") == 2 and escaped.startswith("&lt;span") and "<" not in escaped
    assert all(trace.hovertemplate.startswith("%{meta}") for trace in fig.data)


def test_the_board_page_publishes_nothing_of_its_visitor(in_class, cookies):
    teacher_app(cookies, "not-the-key-at-all")  # Home first (a student there), then the board, turned away
    class_room().publisher.publish_round()
    assert [entry.status["page"] for entry in class_room().store.statuses()] == ["home"]
