"""The memory bound measured (issue 43, finding 6): sessions playing the BERT and GPT page's two
transformers at once, each in its own thread as Streamlit runs them, in a fresh process whose peak
RSS (VmHWM) is theirs alone; once with the process's steps let in STEP_SLOTS at a time, once with a
gate as wide as the sessions (every step at once, as before the gate). Full tier: it trains."""
import json
import subprocess
import sys
import textwrap

import pytest

from app.session import memory

SESSIONS = 10
STEPS = 12  # each run's: one held-out scoring (RECORD_EVERY 10) among them

CHILD = textwrap.dedent("""
    import json, sys, threading, time
    from app.session import memory
    memory.tune_allocator()
    import torch
    torch.set_num_threads(1)
    from app.session.bert_gpt import ObjectiveRuns, Plan

    sessions, steps, slots = map(int, sys.argv[1:])
    memory.STEPS = memory.Steps(slots)

    def mb(field):
        with open("/proc/self/status") as status:
            return next(int(line.split()[1]) for line in status if line.startswith(field + ":")) / 1024

    runs = [ObjectiveRuns(Plan()) for _ in range(sessions)]
    built = mb("VmRSS")
    start = threading.Barrier(sessions)

    def play(each):
        each.playing = True
        start.wait()
        while each.playing:
            each.train_for(1.0, steps, clock=time.thread_time)

    threads = [threading.Thread(target=play, args=(each,)) for each in runs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print(json.dumps({"built": built, "peak": mb("VmHWM"), "steps": [each.steps_taken for each in runs],
                      "most_inside": memory.STEPS.gate.most_inside}))
""")


def played(slots: int) -> dict:
    done = subprocess.run([sys.executable, "-c", CHILD, str(SESSIONS), str(STEPS), str(slots)], capture_output=True,
                          text=True, check=True, timeout=280)
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.training
def test_sessions_playing_the_heaviest_page_at_once_take_a_fraction_of_what_they_took_ungated():
    gated, ungated = played(memory.STEP_SLOTS), played(SESSIONS)
    for run in (gated, ungated):
        assert run["steps"] == [2 * STEPS] * SESSIONS  # every session played its budget, both runs
    assert gated["most_inside"] == memory.STEP_SLOTS and ungated["most_inside"] > memory.STEP_SLOTS
    grown, grown_ungated = gated["peak"] - gated["built"], ungated["peak"] - ungated["built"]
    # ungated, the steps' outputs pile up with the sessions stepping at once (2.5 GB over the built models at
    # 10 sessions, measured); gated, with the slots and what the allocator keeps
    assert grown < 0.5 * grown_ungated, (gated, ungated)
