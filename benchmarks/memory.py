"""Memory: peak RSS of a session that trained a 2-layer LSTM (H 128) on the adding problem for 500
steps through the Lab (recording every RECORD_EVERY steps, as the app does) and then recorded it
with Jacobians, as the Unroll, Gates and Gradients pages do. The session runs in a fresh
subprocess, so its peak is its own and not that of whatever benchmark ran before.

    PYTHONPATH=. python benchmarks/memory.py [--quick]
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from memory_class import status_mb
from timing import table

STEPS = 500
QUICK_STEPS = 100
MODEL = dict(arch="lstm", hidden_size=128, num_layers=2)


def session(steps: int) -> dict:
    """The measured session; runs in the child process and returns its figures."""
    import torch

    torch.set_num_threads(1)
    import engine
    from app.session.lab import Lab
    from app.session.link import DEFAULT

    imported = status_mb("VmRSS")
    lab = Lab(dataclasses.replace(DEFAULT, model=engine.ModelConfig(**MODEL)))
    built = status_mb("VmRSS")
    start = time.perf_counter()
    for _ in range(steps):
        lab.advance()
    trained = time.perf_counter() - start
    start = time.perf_counter()
    lab.recording(0)
    recorded = time.perf_counter() - start
    return {"imported": imported, "built": built, "rss": status_mb("VmRSS"), "peak": status_mb("VmHWM"),
            "train_s": trained, "record_s": recorded, "steps": lab.trainer.steps_done}


def run(quick: bool = False) -> str:
    """Start the session in a subprocess; --quick trains 100 steps, which tells nothing about
    the peak after 500 and only checks that the measurement runs."""
    steps = QUICK_STEPS if quick else STEPS
    command = [sys.executable, __file__, "--session", str(steps)]
    env = os.environ | {"PYTHONPATH": str(Path(__file__).resolve().parents[1])}  # app and engine, from any cwd
    done = subprocess.run(command, capture_output=True, text=True, check=True, env=env)
    m = json.loads(done.stdout.strip().splitlines()[-1])
    rows = [[f"lstm H={MODEL['hidden_size']} L={MODEL['num_layers']}, adding T=50 B=64, {m['steps']} steps",
             m["imported"], m["built"], m["peak"], m["peak"] - m["imported"], m["rss"], m["train_s"], m["record_s"]]]
    return table("Memory: one session in its own process (peak RSS = VmHWM)",
                 ["session", "RSS after imports MB", "after Lab made MB", "peak RSS MB", "peak minus imports MB",
                  "RSS at end MB",
                  "training s", "recording with Jacobians s"], rows)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--session", type=int, metavar="STEPS", help="be the measured session (used by run)")
    parser.add_argument("--quick", action="store_true", help=f"train {QUICK_STEPS} steps, not {STEPS}")
    args = parser.parse_args()
    if args.session:
        print(json.dumps(session(args.session)))
    else:
        print(run(args.quick))


if __name__ == "__main__":
    main()
