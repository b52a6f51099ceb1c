"""The teacher's board (issue 32) with a real class: deploy/serve_class.py runs two app processes behind
nginx, on its default SQLite store and on a real redis-server (--store), and three students (three
browser contexts, so three cookie jars: nginx spreads them over both processes) and their teacher (the
link the script printed) use it. The board lists the three by name within seconds; the teacher's
"follow me" brings each student's banner, whose button opens the lesson with its question; each answers
differently and presses Play; the board shows each on the lesson (by its title) with their answer, its
figures draw a run each and count the answers, and the reveal colours the measured one green. The teacher
sends the class its answers, which every student's page then shows; pauses the class (every student's
controls wait) and resumes it; downloads the class as CSV (names, answers, whether each was measured right);
and hides the names for the projector. At 1400 px every column
of the table is in view. The one-time code after "#" in the teacher's link, and the key, are in none of
nginx's logs, the app processes' logs, the tab's address or its history, and the code's cookie is gone once
the board is open; the same link opened again (as from the browser's history) opens nothing. A code of
another class gets the refusal and no board; a fragment that could rewrite the cookie is not written into it.
Screenshots of the board with the three on it: board-wide.png (1400x900) and board-projector.png
(1024x768), -redis.png for Redis's."""
import time
from contextlib import ExitStack

import pandas as pd
import pytest
import redis

from app.charts.style import BLUE, GREEN, GREY
from app.session.class_board import lesson_label
from app.session.class_store_redis import REDIS_PREFIX, SEEN_KEY
from app.session.lessons import BY_KEY
from app.session.teacher_pass import new_code
from app.widgets import teacher_link

from ..redis_server import redis_server
from .conftest import SCRIPT_TIMEOUT, StreamlitPage, wait_for_app
from .test_projector import PROJECTOR
from .test_serve_class import WIDE, backend, serving_a_class

# The lesson sent: its page is Build & Train, and its run without clipping diverges at step 2, so Play
# ends at once and the lesson's measured answer is shown (app/data/lessons/11-exploding.toml).
LESSON = BY_KEY["exploding"]
# Each student's name and answer to the lesson's question: three different choices, the first right.
STUDENTS = {"Ada": LESSON.question.choices[0].text, "Alan": LESSON.question.choices[1].text,
            "Grace": LESSON.question.choices[2].text}
LISTED = 20  # s: a student's status reaches the store within 2 s and the board's next look 2 s later
BANNER = 40_000  # ms: the students' pages look for a "follow me" every 10 s; a loaded machine runs late
OPEN_IT = '[class*="st-key-follow_open_"] button'  # the banner's button (Home has other "Open it" buttons)
WRONG_CODE = new_code("not-this-class-key-at-all", time.time())  # well made, with another key
# A fragment whose code would end the cookie's value and add attributes of its own, were it written as given.
CRAFTED = "code=not-the-code%3B%20max-age%3D99999%3B%20path%3D%2Fboard"
# The board's second load: the one in place of the link, whose navigation entry holds no fragment.
SECOND_LOAD = """() => !performance.getEntriesByType("navigation")[0].name.includes("#")"""
HISTORY = "() => navigation.entries().map(entry => entry.url)"  # the tab's entries of this origin
# The board's table is drawn on a canvas; its grid keeps an accessible table of the cells it shows.
TABLE = """() => {
    const grid = document.querySelector('[data-testid="stDataFrame"] table');
    if (grid === null) return null;
    const head = [...grid.querySelectorAll('thead th')].map(th => th.textContent.trim());
    return [...grid.querySelectorAll('tbody tr')].map(tr =>
        Object.fromEntries([...tr.cells].map((td, i) => [head[i], td.textContent.trim()])));
}"""
# The table's box and the width of its columns (the grid scrolls sideways when they are wider).
TABLE_WIDTH = """() => {
    const scroller = document.querySelector('[data-testid="stDataFrame"] .dvn-scroller');
    return [scroller.clientWidth, scroller.scrollWidth];
}"""
HEADERS = ["student", "state", "lesson", "answer", "steps", "metric", "curve", "loss", "page", "model", "seen"]
# The traces of the plotly figure whose title (its lines and markup taken out) starts with `title`;
# else the titles there are.
FIGURE = """title => {
    const plots = [...document.querySelectorAll('.js-plotly-plot')];
    const titles = plots.map(p => ((p.layout.title || {}).text || '').replace(/<[^>]*>/g, ' ')
        .replace(/\\s+/g, ' ').trim());
    const plot = plots[titles.findIndex(t => t.startsWith(title))];
    if (plot === undefined) return {titles};
    const list = v => v !== undefined && v !== null && typeof v.length === 'number' ? Array.from(v) : v;
    return {traces: plot.data.map(t => ({name: t.name, group: t.legendgroup || '', x: list(t.x), y: list(t.y),
                                         colours: [].concat((t.marker || {}).color)}))};
}"""




def rows_when(page: StreamlitPage, ready, what: str, timeout: float = LISTED) -> dict[str, dict[str, str]]:
    """The board's rows by student, once `ready(rows)` holds; polled as the board refreshes itself."""
    deadline = time.monotonic() + timeout
    while True:
        rows = page.page.evaluate(TABLE) or []
        by_name = {row.get("student"): row for row in rows}
        if ready(by_name):
            return by_name
        if time.monotonic() > deadline:
            counts = page.page.locator('[data-testid="stMain"] p strong').first.inner_text()
            pytest.fail(f"the board did not show {what} within {timeout} s: {counts}; rows {rows}", pytrace=False)
        page.page.wait_for_timeout(250)  # the board redraws every 2 s: look again, until the deadline


def choose(page, label: str, option: str) -> None:
    """Pick `option` in the selectbox labelled `label`."""
    page.get_by_role("combobox", name=label).click()  # focused, its list not always open (22 lessons)
    page.keyboard.type(option)  # the list opened and filtered to the option
    page.get_by_role("option", name=option, exact=True).click()
    wait_for_app(page)


def figure(page: StreamlitPage, title: str) -> list[dict]:
    """The traces of the figure on the page whose title starts with `title`."""
    found = page.page.evaluate(FIGURE, title)
    assert "traces" in found, f"no figure titled {title!r} on the page: {found['titles']}"
    return found["traces"]


def main_text(page) -> str:
    return " ".join(page.locator('[data-testid="stMain"]').inner_text().split())


def open_board_link(page: StreamlitPage, fragment: str) -> None:
    """Open board#<fragment> as the teacher's link is opened, and wait for the board's second load,
    which its script puts in place of the link (app/widgets/teacher_link.py)."""
    page.page.goto(f"{page.base_url}/board#{fragment}")
    page.page.wait_for_function(SECOND_LOAD)
    wait_for_app(page.page)


def assert_kept_nowhere(key: str, run_dir, page: StreamlitPage) -> None:
    """The key (or the code) is in no log of the run directory (nginx's access and error logs, each app
    process's), nor in the tab's address, any entry of its history, or a cookie."""
    logs = sorted(run_dir.glob("*.log"))
    assert {"nginx-access.log", "nginx-error.log"} <= {log.name for log in logs}, logs
    assert len([log for log in logs if log.name.startswith("app-")]) == 2, logs
    assert "GET /board " in (run_dir / "nginx-access.log").read_text()  # the teacher's loads, logged
    assert [log.name for log in logs if key in log.read_text(errors="replace")] == []
    tab = page.page
    assert key not in tab.url
    entries = tab.evaluate(HISTORY)
    assert tab.evaluate("history.length") == len(entries) + 1, entries  # and the tab's first, about:blank
    assert [url for url in entries if key in url] == [], entries
    assert [c["name"] for c in tab.context.cookies() if key in c["value"] or c["name"] == teacher_link.COOKIE] == []


@pytest.mark.timeout(600)
@pytest.mark.parametrize("store", ["sqlite", "redis"])
def test_a_teacher_and_three_students_on_two_processes(browser, store):
    with ExitStack() as stack:
        args = ("--store", stack.enter_context(redis_server())) if store == "redis" else ()
        served = stack.enter_context(serving_a_class(2, *args, name=f"class-board-{store}"))

        def opened(viewport) -> StreamlitPage:
            context = browser.new_context(viewport=viewport)
            stack.callback(context.close)
            context.set_default_timeout(SCRIPT_TIMEOUT)
            return StreamlitPage(context.new_page(), served.url)

        students = {}
        for name in STUDENTS:
            student = students[name] = opened(WIDE)
            student.goto("")
            box = student.page.get_by_role("textbox", name="Your name on the class board")
            box.fill(name)
            box.press("Enter")
            wait_for_app(student.page)
        held = {name: backend(student) for name, student in students.items()}
        assert set(held.values()) == {0, 1}, f"the students' processes: {held}"  # newcomers go in turn

        teacher = opened(WIDE)
        link, code = served.board.split("#code=")
        assert link == f"{served.url}/board" and "?" not in served.board  # the code after "#", no query
        assert served.key not in served.board
        open_board_link(teacher, f"code={code}")
        rows = rows_when(teacher, lambda rows: set(rows) == set(STUDENTS), "the three students")
        assert all(row["page"] == "home" and row["lesson"] == "" for row in rows.values()), rows
        assert "3 students: 3 not started." in main_text(teacher.page)

        for secret in (served.key, code):
            assert_kept_nowhere(secret, served.run_dir, teacher)

        if store == "redis":  # the statuses live in the Redis server, and no SQLite file was made
            with redis.Redis.from_url(args[1]) as client:
                # one class on the server (its namespace, from the teacher key), holding the three
                assert [client.zcard(key) for key in client.scan_iter(f"{REDIS_PREFIX}*:{SEEN_KEY}")] == [len(STUDENTS)]
            assert not (served.run_dir / "class.db").exists()
        else:
            assert (served.run_dir / "class.db").exists()

        choose(teacher.page, "Send the class", f"the lesson {LESSON.title}")
        # The lesson's own seed for all: its unclipped run diverges at step 2 on it (a seed of each student's own,
        # drawn from a random handle, is held in tests/app/test_class_board.py)
        teacher.page.get_by_text("Each student on a seed of their own").click()
        teacher.page.get_by_role("button", name="Send to the class").click()
        wait_for_app(teacher.page)
        assert "Sent: every student's page shows a banner" in main_text(teacher.page)

        question = " ".join(LESSON.question.text.split())
        for name, student in students.items():
            page = student.page
            page.get_by_text("Your teacher asks the class to open").wait_for(timeout=BANNER)
            assert f"the lesson \u201c{LESSON.title}\u201d" in main_text(page)
            page.locator(OPEN_IT).click()
            wait_for_app(page)
            assert page.url.removeprefix(served.url + "/").split("?")[0] == LESSON.page, page.url
            assert LESSON.title in main_text(page) and question in main_text(page), main_text(page)
            assert "Your teacher asks the class" not in main_text(page)  # answered: the banner went
            page.get_by_text(STUDENTS[name], exact=True).click()
            wait_for_app(page)
        label = lesson_label(LESSON.key)  # "11. Exploding gradients and clipping": its title, not its key
        rows = rows_when(teacher, lambda rows: all(rows.get(name, {}).get("lesson") == label
                                                   for name in STUDENTS), "every student on the lesson")
        assert all(row["page"] == LESSON.page for row in rows.values()), rows

        for name, student in students.items():
            page = student.page
            page.get_by_role("button", name="Play", exact=True).click()
            page.get_by_text("Measured:", exact=True).wait_for(timeout=120_000)  # diverged: the measured answer shows
            wait_for_app(page)
            mark = "is the measured one" if STUDENTS[name] == LESSON.question.right.text else "is not"
            assert f"Your prediction, {STUDENTS[name]}, {mark}" in main_text(page), main_text(page)
        rows_when(teacher, lambda rows: all(rows.get(name, {}).get("state") == "diverged" and
                                            rows[name].get("answer") == answer for name, answer in STUDENTS.items()),
                  "every student's run diverged, with their answer")

        choose(teacher.page, "Lesson", LESSON.title)
        runs = figure(teacher, f"The class on \u201c{LESSON.title}\u201d")
        assert len([trace for trace in runs if trace["group"] == "class"]) == len(STUDENTS)  # a curve each
        choices = [choice.text for choice in LESSON.question.choices]
        bars, = figure(teacher, "The class's answers")
        assert bars["y"] == choices
        assert bars["x"] == [list(STUDENTS.values()).count(choice) for choice in choices]
        assert set(bars["colours"]) == {BLUE}  # not revealed yet
        teacher.page.get_by_text("Reveal the measured answer").click()
        wait_for_app(teacher.page)
        bars, = figure(teacher, "The class's answers")
        right = LESSON.question.right.text
        assert bars["colours"] == [GREEN if choice == right else GREY for choice in choices]
        assert f"Measured over the lesson's runs: {LESSON.question.measured}" in main_text(teacher.page)

        teacher.page.get_by_role("button", name="Show every student the class's answers").click()
        wait_for_app(teacher.page)
        for name, student in students.items():  # each sees the class's answers beside their own
            page = student.page
            page.get_by_text("Your teacher shows the class's answers").wait_for(timeout=BANNER)
            bars, = figure(student, "The class's answers")
            assert bars["x"] == [list(STUDENTS.values()).count(choice) for choice in choices]
            assert bars["colours"] == [GREEN if choice == right else GREY for choice in choices]
            assert f"Yours: {STUDENTS[name]}" in main_text(page)
        teacher.page.get_by_role("button", name="Show it to the class").click()  # the first student's run
        wait_for_app(teacher.page)
        shown = " ".join(teacher.page.locator('[data-testid="stAlert"]').last.inner_text().split())
        assert "Sent: every student's page shows" in shown and "'s run" in shown, shown
        name = shown.split("shows ", 1)[1].split("'s run")[0]
        assert name in STUDENTS
        for student in students.values():  # each sees that student's curve, as the board has it
            student.page.get_by_text(f"Your teacher shows the class {name}'s run").wait_for(timeout=BANNER)
            curves = [trace for trace in figure(student, f"{name}'s run") if trace["group"] == "class"]
            assert len(curves) == 1 and len(curves[0]["y"]) >= 1
        teacher.page.get_by_role("button", name="Pause the class").click()
        wait_for_app(teacher.page)
        for student in students.values():  # each page stops and its controls wait (Play is off: it diverged)
            page = student.page
            page.get_by_text("Your teacher has paused the class").wait_for(timeout=BANNER)
            page.wait_for_function("() => document.querySelector('.st-key-reset button').disabled")
        teacher.page.get_by_role("button", name="Resume the class").click()
        wait_for_app(teacher.page)
        for student in students.values():
            student.page.wait_for_function("() => !document.querySelector('.st-key-reset button').disabled",
                                           timeout=BANNER)
            assert "Your teacher has paused the class" not in main_text(student.page)
        with teacher.page.expect_download() as downloading:
            teacher.page.get_by_role("button", name="Download the class (CSV)").click()
        exported = pd.read_csv(downloading.value.path(), dtype=str, keep_default_na=False).set_index("student")
        assert sorted(exported.index) == sorted(STUDENTS)
        assert dict(exported["answer"]) == STUDENTS
        assert dict(exported["answer measured right"]) == {name: "yes" if answer == right else "no"
                                                            for name, answer in STUDENTS.items()}
        teacher.page.get_by_text("Hide names (for the projector)").click()
        hidden = rows_when(teacher, lambda rows: set(rows) == {"student 1", "student 2", "student 3"},
                           "the names hidden")
        assert not any(name in main_text(teacher.page) for name in STUDENTS), "a name still on the projector"
        assert all(row["answer"] in STUDENTS.values() for row in hidden.values())

        suffix = "" if store == "sqlite" else f"-{store}"
        teacher.screenshot(f"board-wide{suffix}")
        shown, wide = teacher.page.evaluate(TABLE_WIDTH)
        assert wide <= shown + 1, f"at 1400 px the board's table is {wide} px wide in {shown} px: it scrolls"
        assert list(rows_when(teacher, lambda rows: True, "its rows")["student 1"]) == HEADERS  # every column in view
        teacher.page.set_viewport_size(PROJECTOR)
        wait_for_app(teacher.page)
        teacher.screenshot(f"board-projector{suffix}")

        stranger = opened(WIDE)
        open_board_link(stranger, CRAFTED)
        text = main_text(stranger.page)  # no code reached the server, so none was refused
        assert "not this class's teacher link" not in text and "Too many tries" not in text, text
        assert stranger.page.get_by_role("button", name="Open the board").count() == 1
        for fragment, refusal in ((f"code={WRONG_CODE}", "That link is not this class's teacher link"),
                                  (served.board.split("#")[1], "That teacher link has been used")):  # as from history
            open_board_link(stranger, fragment)
            text = main_text(stranger.page)
            assert refusal in text, text
            assert "Follow me" not in text and not any(name in text for name in STUDENTS)
            assert stranger.page.locator('[data-testid="stDataFrame"]').count() == 0

        for _ in range(teacher.page.evaluate("navigation.currentEntry.index")):  # back through the history
            teacher.page.go_back()
            assert code not in teacher.page.url and "code=" not in teacher.page.url, teacher.page.url
        for secret in (served.key, code):
            assert_kept_nowhere(secret, served.run_dir, teacher)
