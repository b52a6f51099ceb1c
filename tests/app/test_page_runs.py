"""Whole-page runs first: a playing tick's training waits between two steps while any session's
page is being built (app/session/page_runs.py, controls.yield_to_the_page)."""
import re
import threading

import pytest

from app.session import page_runs
from app.widgets import controls

from .conftest import APP


def test_a_page_run_is_under_way_from_its_start_to_its_end_even_when_it_raises():
    assert page_runs.under_way() == 0 and page_runs.wait_for_page_runs(0.0)
    try:
        with page_runs.page_run():
            assert page_runs.under_way() == 1 and not page_runs.wait_for_page_runs(0.0)
            raise RuntimeError("a rerun ends the script by raising")
    except RuntimeError:
        pass
    assert page_runs.under_way() == 0 and page_runs.wait_for_page_runs(0.0)


def test_a_waiting_thread_is_woken_when_the_last_page_run_ends():
    started, woke = threading.Event(), []
    with page_runs.page_run():
        waiter = threading.Thread(target=lambda: (started.set(), woke.append(page_runs.wait_for_page_runs(60.0))))
        waiter.start()
        started.wait()
        assert woke == []
    waiter.join()
    assert woke == [True]


def test_training_waits_in_slices_checking_its_own_session_between_them(monkeypatch):
    answers = iter([False, False, True])  # two slices with a page run under way, then none
    monkeypatch.setattr(controls, "wait_for_page_runs", lambda most: next(answers))
    checks = []
    monkeypatch.setattr(controls, "streamlit_yield", lambda: checks.append(1))
    controls.yield_to_the_page()()
    assert len(checks) == 3  # before the first slice, and after each of the two it waited


def test_a_training_loop_yields_to_streamlit_at_most_every_yield_every_seconds(monkeypatch):
    now, checks = [0.0], []
    monkeypatch.setattr(controls, "wait_for_page_runs", lambda most: True)
    monkeypatch.setattr(controls, "streamlit_yield", lambda: checks.append(now[0]))
    between_steps = controls.yield_to_the_page(clock=lambda: now[0])
    for step in range(10):  # a step every 7 ms
        now[0] = step * 0.007
        between_steps()
    assert checks == pytest.approx([0.0, 0.021, 0.042, 0.063])


def test_training_waits_no_longer_than_page_run_wait_in_all(monkeypatch):
    slices = []
    monkeypatch.setattr(controls, "wait_for_page_runs", lambda most: slices.append(most) or False)
    controls.yield_to_the_page()()
    assert len(slices) * controls.PAGE_RUN_POLL == pytest.approx(controls.PAGE_RUN_WAIT)
    assert set(slices) == {controls.PAGE_RUN_POLL}


def test_nothing_under_app_uses_streamlits_private_api():
    """Private API pinned Streamlit to one version (issue 29, finding 14): the app imports only
    `streamlit` and its documented exceptions, and names no underscored member of anything
    (`_ancestor_block_types` was read with getattr, `get_run_yield_check` imported from
    streamlit.runtime)."""
    imports = re.compile(r"^\s*(?:from|import) (streamlit[\w.]*)")
    underscored = re.compile(r"""\._[a-z]\w*|getattr\([^)]*["']_""")  # x._name, getattr(x, "_name")
    offenders, files = [], sorted(APP.rglob("*.py"))
    assert len(files) > 50  # the app's own files, wherever pytest runs from
    for path in files:
        for n, line in enumerate(path.read_text().splitlines(), 1):
            module = imports.match(line)
            if module and module.group(1) not in ("streamlit", "streamlit.errors") or underscored.search(line):
                offenders.append(f"{path}:{n}: {line.strip()}")
    assert offenders == []
