"""The process's memory (app/session/memory.py): training steps let in a few at a time in the order they
came, the allocator trimmed as stepping goes, and every experiment's weights and data counted against its
session and the process, a new one refused with the figures when it would take either past its share."""
import gc
import os
import threading

import pytest
import torch
from streamlit.testing.v1 import AppTest

from app import pages as nav
from app.session import memory
from app.session.bert_gpt import MASKED, ObjectiveRuns, Plan, setup_of
from app.session.budget import HELD_PER_PARAMETER, check_runs
from app.session.lab import Lab
from app.session.link import DEFAULT
from app.session.memory import FirstComeGate, Ledger, MemoryFull, Steps
from app.widgets import state
from deploy.serve_class import memory_share

from .conftest import MAIN
from .test_transfer_page import no_exception

MB = 2**20


def waiting(gate: FirstComeGate, count: int) -> None:
    with gate.changed:
        assert gate.changed.wait_for(lambda: len(gate.queue) == count, timeout=30)


def test_the_gate_lets_in_its_slots_in_the_order_they_came_and_the_one_that_left_queues_again():
    gate = FirstComeGate(2)
    entered: list[str] = []
    progress = threading.Condition()  # told when a step goes in
    leave = {name: threading.Event() for name in ("a", "b", "c", "d", "a again")}

    def step(name: str) -> None:
        with gate.held():
            with progress:
                entered.append(name)
                progress.notify_all()
            assert leave[name].wait(30)

    def have_entered(count: int) -> None:
        with progress:
            assert progress.wait_for(lambda: len(entered) == count, timeout=30)

    def twice() -> None:  # "a" steps, and asks again at once, as a playing loop does
        step("a")
        step("a again")

    threads = [threading.Thread(target=twice), threading.Thread(target=step, args=("b",))]
    for thread in threads:
        thread.start()
    have_entered(2)
    for count, name in enumerate(("c", "d"), start=1):
        threads.append(threading.Thread(target=step, args=(name,)))
        threads[-1].start()
        waiting(gate, count)
    leave["a"].set()  # "a" leaves and asks again: behind c and d, who came first
    have_entered(3)
    waiting(gate, 2)  # c went in; d and "a again" wait
    assert entered == ["a", "b", "c"] or entered == ["b", "a", "c"]
    for name in ("b", "c", "d", "a again"):
        leave[name].set()
    for thread in threads:
        thread.join(30)
    assert entered[2:] == ["c", "d", "a again"]
    assert gate.most_inside == 2 and gate.inside == 0 and not gate.queue


def test_the_allocator_is_trimmed_after_a_step_once_every_TRIM_EVERY_seconds():
    now = [0.0]
    steps = Steps(slots=1, clock=lambda: now[0])
    for when in (0.5, 1.0, memory.TRIM_EVERY, memory.TRIM_EVERY + 1.0, 2 * memory.TRIM_EVERY + 0.1):
        now[0] = when
        with steps.one():
            pass
    assert steps.trims == 2  # at TRIM_EVERY, and at 2 x TRIM_EVERY + 0.1
    assert memory.tune_allocator(memory.STEP_SLOTS)  # glibc's mallopt took the arena cap


def test_a_lab_and_side_by_side_runs_count_four_copies_of_their_weights_and_their_data():
    lab = Lab(DEFAULT)
    weights = sum(p.numel() for p in lab.model.parameters())
    assert lab.held_bytes() == 16 * weights + lab.task.held_bytes()
    runs = ObjectiveRuns(Plan(hidden_size=32, num_layers=1, num_heads=2))
    each = [sum(p.numel() for p in run.model.parameters()) for run in runs.runs]
    data = sum(task.held_bytes() for task in runs.tasks.values())
    assert data > 0 and runs.held_bytes() == 16 * sum(each) + data
    assert HELD_PER_PARAMETER == 4 * torch.finfo(torch.float32).bits // 8


class Held:
    def __init__(self, size: int):
        self.size = size

    def held_bytes(self) -> int:
        return self.size


@pytest.fixture
def sessions(monkeypatch):
    """Which session the calling thread runs for, as a test sets it."""
    who = {"now": "a"}
    monkeypatch.setattr(memory, "owner_of_thread", lambda: who["now"])
    return who


def test_a_run_past_the_process_memory_is_refused_with_the_figures_and_goes_once_freed(sessions):
    ledger = Ledger(process_bytes=100 * MB, session_bytes=60 * MB)
    kept = []
    for owner in ("a", "b", "c"):
        sessions["now"] = owner
        kept.append(Held(30 * MB))
        ledger.add(kept[-1])
    sessions["now"] = "d"
    with pytest.raises(MemoryFull, match=r"these runs would hold 20 MB; this server's models hold 90 MB of "
                                         r"the 100 MB it allows \(UNROLLED_MEMORY_MB\) for 3 sessions"):
        ledger.check_room(20 * MB, "these runs")
    ledger.check_room(10 * MB, "these runs")  # exactly the room left
    del kept[0]
    gc.collect()
    ledger.check_room(40 * MB, "these runs")  # a classmate's tab closed: its model went with it
    assert sorted(map(sum, ledger.held().values())) == [30 * MB, 30 * MB]


def test_a_session_may_build_again_what_it_holds_but_not_hold_more_than_its_share(sessions):
    ledger = Ledger(process_bytes=1000 * MB, session_bytes=60 * MB)
    held = [Held(40 * MB), Held(15 * MB)]
    for each in held:
        ledger.add(each)
    ledger.check_room(40 * MB, "this network")  # in place of its 40 MB
    with pytest.raises(MemoryFull, match=r"this network would hold 50 MB beside the 15 MB this tab's other "
                                         r"runs hold, over the 60 MB a tab may hold here"):
        ledger.check_room(50 * MB, "this network")
    sessions["now"] = "b"
    ledger.check_room(60 * MB, "this network")  # another session's share is its own


def test_runs_are_priced_on_the_ledger_before_they_are_built(monkeypatch, sessions):
    plan = Plan(hidden_size=32, num_layers=1, num_heads=2)
    runs = ObjectiveRuns(plan)
    monkeypatch.setattr(memory.LEDGER, "process_bytes", 0)
    setups = {run.name: setup_of(plan, run.name) for run in runs.runs}
    with pytest.raises(MemoryFull, match="these 2 runs would hold"):
        check_runs(setups, runs.tasks[MASKED])


def test_the_bert_and_gpt_page_says_it_declines_a_run_for_memory_and_keeps_the_runs_it_had(monkeypatch):
    at = AppTest.from_file(MAIN, default_timeout=120)
    at.run().switch_page(nav.PATHS["bert-gpt"]).run()
    no_exception(at)
    runs = at.session_state[state.BERT]
    assert runs.held_bytes() in memory.LEDGER.held()[at.session_state[state.TAB]]  # counted against this tab
    monkeypatch.setattr(memory.LEDGER, "process_bytes", 1)  # a class's models hold the server's memory
    next(box for box in at.selectbox if box.label == "d_model").set_value(32)
    next(button for button in at.button if button.label == "Train both").click().run()
    no_exception(at)
    said = " ".join(e.value for e in at.error)
    assert "These runs cannot be trained: these 2 runs would hold" in said and "what you had is kept" in said
    assert at.session_state[state.BERT] is runs


def test_a_new_tab_on_a_full_server_is_told_so_and_no_page_fails(monkeypatch):
    monkeypatch.setattr(memory.LEDGER, "process_bytes", 1)
    at = AppTest.from_file(MAIN, default_timeout=120).run()
    no_exception(at)
    said = " ".join(e.value for e in at.error)
    assert said.startswith("This server cannot open a model for this tab now: this network would hold")


def test_a_class_served_shares_the_machines_memory_among_its_processes_unless_told(monkeypatch):
    monkeypatch.delenv("UNROLLED_MEMORY_MB", raising=False)
    machine_mb = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // MB
    assert memory_share(2) == str(max(512, int(0.6 * machine_mb) // 2 - 1024))
    assert int(memory_share(1000)) == 512  # never less than a tab's share
    monkeypatch.setenv("UNROLLED_MEMORY_MB", "2000")
    assert memory_share(2) == "2000"
