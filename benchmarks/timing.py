"""Shared by every benchmark: interleaved median timings, markdown tables, the machine's description.

Interleaving matters on a shared machine: the candidates of one comparison run in turn, repeat
after repeat, so a burst of load from elsewhere slows them alike and their ratio survives it.
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import torch


def seconds(fn: Callable[[], object], calls: int = 1) -> float:
    """Wall time of one call of fn, averaged over `calls` calls in a row."""
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls


def calls_for(fn: Callable[[], object], budget: float, most: int = 1000) -> int:
    """How many calls of fn in a row take about `budget` seconds (at least 1), after a warm-up call."""
    one = seconds(fn)
    return max(1, min(most, round(budget / max(one, 1e-6))))


def interleaved(fns: dict[str, Callable[[], object]], repeats: int, budget: float) -> dict[str, float]:
    """Median seconds per call of each fn, the fns taking turns in every repeat. Each
    measurement runs its fn for about `budget` seconds, so fast calls are averaged over many."""
    calls = {name: calls_for(fn, budget) for name, fn in fns.items()}
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            samples[name].append(seconds(fn, calls[name]))
    return {name: statistics.median(values) for name, values in samples.items()}


def table(title: str, header: list[str], rows: list[list]) -> str:
    """A markdown table (readable in a terminal, pasted as-is into benchmarks/README.md)."""
    def cell(value) -> str:
        return f"{value:.2f}" if isinstance(value, float) else str(value)

    lines = [f"### {title}", "", "| " + " | ".join(header) + " |",
             "|" + "|".join("---" if i == 0 else "---:" for i in range(len(header))) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def cpu_model() -> str:
    with open("/proc/cpuinfo") as f:
        names = [line.split(":", 1)[1].strip() for line in f if line.startswith("model name")]
    return names[0] if names else platform.processor()


def load_average() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def machine() -> str:
    return (f"{cpu_model()}, {os.cpu_count()} cores, torch {torch.__version__}, "
            f"{torch.get_num_threads()} torch thread(s) (as app/main.py sets), load average {load_average()}")


def run_alone(run: Callable[[bool], str], quick_help: str) -> None:
    """A section's command line when run on its own: --quick, one torch thread (as the app)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help=quick_help)
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(machine())
    print(run(args.quick))


def paragraph(text: str) -> str:
    """Prose for benchmarks/README.md, in lines of at most 100 characters."""
    return textwrap.fill(text, 100, break_on_hyphens=False)


def replace_section(readme: Path, heading: str, section: str) -> None:
    """`section` (which starts with `heading`) in place of `heading`'s section of `readme`, which ends at the
    next second-level heading; at the end of the file when there is none yet. The sections after it stay."""
    text, section = readme.read_text(), section.rstrip("\n") + "\n"
    if heading not in text:
        readme.write_text(text.rstrip("\n") + "\n\n" + section)
        return
    start = text.index(heading)
    end = text.find("\n## ", start + len(heading))
    readme.write_text(text[:start] + section + ("" if end == -1 else text[end:]))
