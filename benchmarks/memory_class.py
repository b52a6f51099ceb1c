"""A class's memory on the heaviest page (issue 43, finding 6): SESSIONS sessions playing BERT and GPT's two
transformers at once, each in its own thread as Streamlit runs a session's page, in a fresh process whose peak
RSS (VmHWM) is theirs alone. Each class is measured twice: as the app runs it (app/session/memory.py: steps let
in STEP_SLOTS at a time, glibc's arenas capped, trimmed every second of stepping) and as before issue 43 (every
step at once, glibc's own arenas: one a thread, up to 8 a core).

    PYTHONPATH=. python benchmarks/memory_class.py [--sessions 10,20,60] [--steps 50]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

try:
    from timing import table
except ImportError:  # imported as benchmarks.memory_class (the tests)
    from benchmarks.timing import table


REPO = Path(__file__).resolve().parents[1]


def status_mb(field: str) -> float:
    """A /proc/self/status line (VmRSS now, VmHWM the peak so far) in MB (benchmarks/memory.py reads it too)."""
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith(field + ":")) / 1024


def child(sessions: int, steps: int, as_before: bool) -> dict:
    """Runs in the measured process: `sessions` ObjectiveRuns of the lesson's plan, built, then played in a
    thread each until both runs reach `steps`."""
    from app.session import memory

    if not as_before:
        memory.tune_allocator()
    import torch

    torch.set_num_threads(1)
    from app.session.bert_gpt import ObjectiveRuns, Plan

    memory.STEPS = memory.Steps(sessions if as_before else memory.STEP_SLOTS, trims=not as_before)
    runs = [ObjectiveRuns(Plan()) for _ in range(sessions)]
    built = status_mb("VmRSS")
    start = threading.Barrier(sessions)

    def play(each) -> None:
        each.playing = True
        start.wait()
        while each.playing:
            each.train_for(1.0, steps, clock=time.thread_time)

    threads = [threading.Thread(target=play, args=(each,)) for each in runs]
    began = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - began
    return {"sessions": sessions, "as_before": as_before, "built": built, "peak": status_mb("VmHWM"),
            "end": status_mb("VmRSS"), "steps": [each.steps_taken for each in runs], "seconds": seconds,
            "most_inside": memory.STEPS.gate.most_inside, "held": sum(map(sum, memory.LEDGER.held().values()))}


def measured(sessions: int, steps: int, as_before: bool) -> dict:
    """child() in a fresh Python process."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "benchmarks")])}
    done = subprocess.run([sys.executable, __file__, "--child", str(sessions), str(steps), str(int(as_before))],
                          capture_output=True, text=True, check=True, timeout=1800, cwd=REPO, env=env)
    return json.loads(done.stdout.splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=lambda s: [int(n) for n in s.split(",")], default=[10, 20, 60])
    parser.add_argument("--steps", type=int, default=50, help="each run's steps (a session trains two runs)")
    parser.add_argument("--child", nargs=3, type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child[0], args.child[1], bool(args.child[2]))))
        return
    rows = []
    for sessions in args.sessions:
        for as_before in (True, False):
            r = measured(sessions, args.steps, as_before)
            rows.append([str(sessions), "before issue 43" if as_before else "as the app runs",
                         f"{r['built']:,.0f}", f"{r['peak']:,.0f}", f"{r['peak'] - r['built']:,.0f}",
                         f"{r['end']:,.0f}",
                         f"{r['held'] / 2**20:,.0f}", str(r["most_inside"]), f"{sum(r['steps']) / r['seconds']:.1f}"])
            print(rows[-1], flush=True)
    print(table(f"BERT and GPT's runs, every session playing {args.steps} steps a run in its own thread",
                ["sessions", "run", "RSS built MB", "peak MB", "peak over built MB", "RSS at end MB",
                 "ledger's count MB", "steps at once (most)", "steps/s in all"], rows))


if __name__ == "__main__":
    main()
