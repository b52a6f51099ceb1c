"""Forged statuses on the teacher's board (issue 32, found in review): statuses are not signed, and
anyone who reaches a Redis server without a password can write one. Each is one odd row; the board's
table, its class figure and its answers read every other student as before."""
import pytest

from app.session.class_board import Moves, answers_of, as_shown, board_frame, curves_of
from app.session.class_status import Presence
from app.session.class_store import Status
from app.session.lab import Lab
from app.session.link import DEFAULT

FORGED = [
    {"steps": "x"}, {"steps": True}, {"steps": -5}, {"steps": 1e300}, {"prediction": "x"}, {"prediction": []},
    {"prediction": {"lesson": 5, "choice": ["a"]}}, {"curves": 5}, {"curves": {"metric": "x"}},
    {"curves": {"metric": [[1], [1, "a"], "p", [1, 2, 3], [2, 0.5]]}}, {"name": ["Ada"]}, {"name": "A\u200bda" * 50},
    {"state": 7}, {"loss": "NaN", "metric": {}}, {"lesson": ["rnn-forgets"], "page": None, "model": 3}, {},
    {"loss": float("inf"), "metric": float("nan"), "steps": 2**60},  # JSON reads NaN and Infinity
    {"curves": {"metric": [[1e308, 0.5], [float("nan"), 1], [3, float("inf")], [2.5, 1], [-1, 1]]}},
]


@pytest.fixture(scope="module")
def real() -> dict:
    lab = Lab(DEFAULT)
    with lab.lock:
        while lab.advance(30):  # until it has trained 30 steps
            pass
    return Presence(name="Ada", page="build", lesson="rnn-forgets", lab=lab,
                    prediction={"lesson": "rnn-forgets", "choice": "halfway", "locked": True}).status()


def test_a_students_own_status_reads_as_published(real):
    shown = as_shown(real)
    for field in ("name", "state", "page", "lesson", "model", "steps", "loss", "metric"):
        assert shown[field] == real[field], field
    assert shown["curves"] == real["curves"] and shown["prediction"] == {"lesson": "rnn-forgets", "choice": "halfway"}


def test_forged_statuses_are_odd_rows_and_the_rest_of_the_board_reads_right(real):
    statuses = [Status("real", real, 0.5)] + [Status(f"forged{i}", forged, 0.5) for i, forged in enumerate(FORGED)]
    frame = board_frame(statuses, Moves(), now=1_000.0)
    assert len(frame) == 1 + len(FORGED)
    row = frame.set_index("key").loc["real"]
    assert (row["name"], row["state"], row["steps"], row["answer"]) == ("Ada", "paused", 30, "halfway")
    forged = frame[frame.key != "real"]
    assert forged.steps.tolist() == [0] * len(FORGED)  # no "x", no negative, no 1e300, no True
    assert forged.name.str.len().max() <= 40 and "\u200b" not in "".join(forged.name)
    assert set(forged.state) == {"not started"}
    assert [len(curve) for curve in forged.curve] == [0] * 9 + [1] + [0] * 8  # [2, 0.5] the one true point
    assert forged.loss.isna().all() and forged.metric.isna().all()
    assert answers_of(statuses, "rnn-forgets", ("near the baseline", "halfway", "near zero")) == {
        "near the baseline": 0, "halfway": 1, "near zero": 0}
    assert list(curves_of(statuses, "rnn-forgets", "metric")) == ["real"]


def test_a_forged_teacher_or_blank_name_reads_as_no_name_and_a_handle_as_given():
    """Issue 43, finding 8: names of invisible characters only showed as blank rows; a student could
    show as "Teacher". Written straight into the store, they read as UNNAMED; a handle stays."""
    from app.session.class_board import UNNAMED, shown_name

    assert shown_name("\u2800\u3164", named=True) == UNNAMED
    assert shown_name("Teacher", named=True) == UNNAMED
    assert shown_name("calm otter 42", named=False) == "calm otter 42"
    assert shown_name("Ada\u200b", named=True) == "Ada"
