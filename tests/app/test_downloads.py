"""Every download of the Gradients and Compare cells pages works after a long training, while a
training loop holds the lock (issue 12, item 6: "Gradients over training (.csv)" stayed a spinner,
deferredFile timed out, after the 3000-step lesson). The Encoder-decoder page's alignment holds the
map the page shows: the probe sample's teacher-forced one, or a typed source's free run.

Streamlit runs a download's callable on click in another thread and the browser gives up after
180 s. A callable that waits for the lock a playing loop takes step after step can outlast that.
These tests hold the lock in a training thread (threading.Event, no sleeps) and hand the pages a
lock that fails at once, instead of waiting, when a download would wait for it: structural, not
timed. The bytes are then checked against the numbers made here under the lock.
"""
import io
import threading

import numpy as np
import pandas as pd
import pytest
from streamlit.elements.widgets.button import ButtonMixin
from streamlit.testing.v1 import AppTest

from app import pages as nav
from app.app_pages.recurrent.gradients import gradient_table, truncation_table
from app.charts import gradients as cg
from app.charts.labels import visible
from app.session.probes import RECORD_EVERY
from app.widgets import state

from .conftest import MAIN, chart, plotted, shown_window

LONG = 3000  # the Vanishing lesson's budget, on a small model so the test stays fast
SMALL = {"hidden_size": "4", "seq_len": "8"}


class NoWaiting:
    """The lock as a download sees it: taking it when free works; waiting for it fails the test."""

    def __init__(self, lock):
        self.lock = lock
        self.waited = []

    def acquire(self, blocking=True, timeout=-1):
        if self.lock.acquire(blocking=False):
            return True
        if blocking:
            self.waited.append(threading.current_thread().name)
            raise AssertionError("a download waited for the lock a training loop holds")
        return False

    def release(self):
        self.lock.release()

    def __enter__(self):
        return self.acquire()

    def __exit__(self, *exc):
        self.release()


class Training:
    """A thread that holds `lock` from start() until stop(), as a training step in progress does."""

    def __init__(self, lock):
        self.held, self.done = threading.Event(), threading.Event()
        self.thread = threading.Thread(target=self.hold, args=(lock,), name="training")

    def hold(self, lock):
        with lock:
            self.held.set()
            self.done.wait()

    def __enter__(self):
        self.thread.start()
        self.held.wait()
        return self

    def __exit__(self, *exc):
        self.done.set()
        self.thread.join()


@pytest.fixture
def buttons(monkeypatch):
    """Every download button a page run makes: label -> the callable Streamlit would run on click."""
    made = {}
    real = ButtonMixin.download_button

    def download_button(self, label, data, *args, **kwargs):
        made[label] = data
        return real(self, label, data, *args, **kwargs)

    monkeypatch.setattr(ButtonMixin, "download_button", download_button)
    return made


@pytest.fixture
def files(monkeypatch):
    """Every download button a page run makes: label -> (the callable run on click, the file's name)."""
    made = {}
    real = ButtonMixin.download_button

    def download_button(self, label, data, file_name=None, *args, **kwargs):
        made[label] = data, file_name
        return real(self, label, data, file_name, *args, **kwargs)

    monkeypatch.setattr(ButtonMixin, "download_button", download_button)
    return made


def csv(data) -> pd.DataFrame:
    return pd.read_csv(io.StringIO(data))


@pytest.mark.parametrize("arch", ["lstm", "rnn"])  # a vanilla RNN's HTML draws the ρ^(T−t) line: it read W_hh's
# spectra under the lock
def test_every_gradients_download_works_while_training_holds_the_lock_after_a_long_training(buttons, arch):
    at = AppTest.from_file(MAIN, default_timeout=60)
    for k, v in (SMALL | {"arch": arch}).items():
        at.query_params[k] = v
    at = at.run().switch_page(nav.PATHS["gradients"]).run()
    lab = at.session_state["lab"]
    with lab.lock:  # as a playing page trains
        for _ in range(LONG):
            lab.advance()
    # the page draws the trained model, its experiments open: what a download falls back on is drawn
    at.session_state[state.TRUNCATION_OPEN] = at.session_state[state.INITIALISATION_OPEN] = True
    at.run()
    assert not at.exception and lab.trainer.steps_done == LONG
    real = lab.lock
    assert lab.probes.lock is real
    made = {}
    lab.lock = lab.probes.lock = guard = NoWaiting(real)
    try:
        with Training(real):
            for label, make in buttons.items():
                made[label] = make()
    finally:
        lab.lock = lab.probes.lock = real
    assert not guard.waited
    assert len(made) == 7
    with lab.lock:  # what each file must hold, made here under the lock
        rec, window = lab.recording(0), shown_window(at)
        log = lab.probes.log_frame()
        expected = {
            "Gradients per step (.csv)": gradient_table(rec, None),
            "Eigenvalues of W_hh (.csv)": rec.to_frame("eigenvalues"),
            "Gradients over training (.csv)": log,
            "Full vs truncated BPTT (.csv)": truncation_table(rec, lab.probes.truncated_recording(0, window), window),
            "Clipping per step, thinned past 4,096 steps (.csv)": cg.clipping_frame(lab.trainer.history_frame()),
            "Gradients at initialisation (.csv)": lab.probes.initial_gradients(0),
        }
    assert list(log.step) == list(range(0, LONG + 1, RECORD_EVERY))
    for label, frame in expected.items():
        assert made[label] == frame.to_csv(index=False), label
    assert list(csv(made["Gradients over training (.csv)"]).columns[:2]) == ["step", "ratio"]
    assert made["Gradients per step, interactive (.html)"][:100].count("<html>") == 1


def test_every_compare_download_works_while_training_holds_the_lock_after_a_long_training(buttons):
    at = AppTest.from_file(MAIN, default_timeout=60)
    for k, v in SMALL.items():
        at.query_params[k] = v
    at = at.run().switch_page(nav.PATHS["compare"]).run()
    comparison = at.session_state["comparison"]
    until = LONG // 4
    comparison.playing = True
    comparison.train_for(float("inf"), until)  # as the playing page trains, every cell
    at.run()
    assert not at.exception and [run.steps_done for run in comparison.runs] == [until] * 4
    real = comparison.lock
    made = {}
    comparison.lock = guard = NoWaiting(real)
    try:
        with Training(real):
            for label, make in buttons.items():
                made[label] = make()
    finally:
        comparison.lock = real
    assert not guard.waited
    assert len(made) == 6
    with comparison.lock:
        expected = {
            "Gradients per step (.csv)": comparison.curves_frame(),
            "Ratio and loss over training (.csv)": comparison.log_frame(),
            "Training steps, thinned past 4,096 (.csv)": comparison.history_frame(),
        }
    for label, frame in expected.items():
        assert made[label] == frame.to_csv(index=False), label
    log = csv(made["Ratio and loss over training (.csv)"])
    assert list(log.step.unique()) == list(range(0, until + 1, RECORD_EVERY)) and log.run.nunique() == 4
    assert all(made[f"{what}, interactive (.html)"][:100].count("<html>") == 1
               for what in ("Gradients per step", "Ratio over training", "Loss over training"))


def the_map(spec: dict) -> tuple[np.ndarray, list[str], list[str]]:
    """A map on the page: its weights [T_out, S], its source tokens (across) and output tokens (down)."""
    [z] = [plotted(t["z"]) for t in spec["data"] if t["type"] == "heatmap" and t.get("name") != "masked"]
    return np.asarray(z, dtype=np.float64), spec["layout"]["xaxis"]["ticktext"], spec["layout"]["yaxis"]["ticktext"]


def check_holds(frame: pd.DataFrame, spec: dict) -> None:
    """The CSV's cells are the map's: alpha at (t, i), and the tokens its axes name."""
    z, source, output = the_map(spec)
    assert len(frame) == z.size
    np.testing.assert_allclose(frame.pivot(index="t", columns="i", values="alpha").to_numpy(), z, rtol=1e-6)
    by_i, by_t = frame.groupby("i")["source"].first(), frame.groupby("t")["output"].first()
    assert [visible(str(tok)) for tok in by_i] == source and [visible(str(tok)) for tok in by_t] == output


def test_the_alignment_download_holds_the_map_shown_a_typed_sources_free_run_while_one_is_typed(files):
    """It always held the probe sample's teacher-forced map, also while the page showed a typed
    source's free run; now it holds the map on the page, says which (a column, the file's name),
    and, while a training loop holds the lock, takes the free run the page drew."""
    at = AppTest.from_file(MAIN, default_timeout=120)
    at.query_params["task"] = "dates"
    at = at.run().switch_page(nav.PATHS["attention"]).run()
    lab = at.session_state["lab"]
    with lab.lock:  # trained, its greedy decoding depends on the source (see test_attention_page.trained)
        for _ in range(60):
            lab.advance()
    at.run()
    assert not at.exception
    make, name = files["Alignment α_ti, teacher-forced (.csv)"]
    forced = csv(make())
    check_holds(forced, chart(at, "Teacher forcing: alignment"))
    assert set(forced.decoded) == {"sample 0, teacher-forced"} and name == "unrolled-dates-lstm-alignment.csv"

    files.clear()
    at.text_input(key="attention_source_text").set_value("21 Nov 2026").run()
    assert not at.exception and not at.warning
    assert list(files) == ["Alignment α_ti, free-running on your source (.csv)"]
    make, name = files["Alignment α_ti, free-running on your source (.csv)"]
    made = make()
    free = csv(made)
    check_holds(free, chart(at, "Free running: alignment"))
    assert "".join(free.groupby("i")["source"].first()) == "21 Nov 2026"  # the typed text, its padding left out
    assert set(free.decoded) == {"typed '21 Nov 2026', free-running"}
    assert name == "unrolled-dates-lstm-alignment-typed-free-running.csv"

    real = lab.lock
    lab.lock = lab.probes.lock = guard = NoWaiting(real)
    try:
        with Training(real):
            while_training = make()
    finally:
        lab.lock = lab.probes.lock = real
    assert not guard.waited and while_training == made
