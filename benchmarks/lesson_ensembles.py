"""Every lesson measured over seeds and kernel paths (issue 27): the ensemble its card quotes and its
page draws as a band behind the student's run.

Each lesson's runs are trained as its page trains them (app/session/lesson_runs) from each seed
(0, 1, 2: the task's data, the start and the batches all follow it) under each kernel path this CPU
can take (pretrained/kernels.py: avx2, the app's, and avx512 where the CPU has it; `default`, the
vector-free path, on request), one process a run, one torch thread, two at a time. A lesson whose
claims hold over all of them holds where the seed or the CPU's rounding changes, not only on the
run one machine gave. Writes app/data/ensembles/<lesson>.json: the lesson's settings (its link and
budget), the machine and versions, and for every run its seed, path, seconds, the values the claims
name and the curves (thinned to 5 significant digits). tests/app/test_lesson_claims.py checks the
lessons' claims against these files.

    PYTHONPATH=. python benchmarks/lesson_ensembles.py [--lessons KEY ...] [--seeds 0 1 2]
        [--paths avx2 avx512] [--workers 2] [--cache DIR]
    PYTHONPATH=. python benchmarks/lesson_ensembles.py --one KEY [KEY ...] --seed S   (one run, JSON out)
    PYTHONPATH=. python benchmarks/lesson_ensembles.py --readme   (the shipped runs' table, benchmarks/README.md)
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from timing import paragraph, replace_section, table

from pretrained import kernels

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "benchmarks" / "README.md"
HEADING = "## 14. Every lesson over seeds and kernel paths (issue 27)"
OUT = ROOT / "app" / "data" / "ensembles"
SEEDS = (0, 1, 2)
DIGITS = 5  # significant digits a curve keeps: a band drawn on a screen needs no more
# The longest lessons to measure first, so that two workers end together (measured: minutes each).
LONGEST_FIRST = ("transfer", "why-sqrt-dk", "gru-update-gate", "initialisation", "layer-norm", "rnn-forgets",
                 "pointer-sorts", "positions", "attention-aligns", "bidirectional", "bottleneck", "lstm-gates")


def one(keys: list[str], seed: int) -> dict:
    """Measure lessons `keys` (one measurement function, so their runs are trained once) from `seed`,
    in this process, whose kernel path was pinned before torch was imported."""
    import torch

    from app.session import lesson_runs

    torch.set_num_threads(1)
    results = {}
    start = time.perf_counter()  # a lesson measured on runs another trained costs their training too
    for key in keys:
        measured = lesson_runs.measure(key, seed)
        results[key] = {"seconds": round(time.perf_counter() - start, 1), **measured.to_dict()}
    return results


def families(keys: list[str]) -> list[list[str]]:
    """The keys grouped so that lessons measured on the same runs share a process (SHARED_RUNS)."""
    from app.session.lesson_runs import SHARED_RUNS

    groups: dict[str, list[str]] = {}
    for key in keys:
        family = next((shared[0] for shared in SHARED_RUNS if key in shared), key)
        groups.setdefault(family, []).append(key)
    return list(groups.values())


def run_one(keys: list[str], seed: int, path: str, cache: Path | None = None) -> dict:
    """One family, one seed, one path, in a fresh process (or as `cache` kept it from an earlier run)."""
    kept = None if cache is None else cache / f"{keys[0]}-{seed}-{path}.json"
    if kept is not None and kept.exists():
        return json.loads(kept.read_text())
    env = {**os.environ, kernels.CHOICE: path, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, __file__, "--one", *keys, "--seed", str(seed)], env=env, cwd=ROOT,
                          capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"{keys} seed {seed} on {path} failed:\n{done.stderr[-3000:]}")
    print(f"  {', '.join(keys)}: seed {seed}, {path} done", flush=True)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    if kept is not None:
        kept.write_text(json.dumps(result))
    return result


def thinned(curves: dict) -> dict:
    return {run: {name: [[step, float(f"{value:.{DIGITS}g}")] for step, value in curve]
                  for name, curve in series.items()} for run, series in curves.items()}


def settings(key: str) -> dict:
    from app.session.lessons import BY_KEY

    lesson = BY_KEY[key]
    return {"link": lesson.setup.to_query(), "steps": lesson.steps, "page": lesson.page,
            "compare_kind": lesson.compare_kind}


def machine() -> dict:
    import torch

    model = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")),
                 platform.processor()) if Path("/proc/cpuinfo").exists() else platform.processor()
    return {"cpu": model, "torch": torch.__version__, "python": platform.python_version(), "torch_threads": 1,
            "date": datetime.date.today().isoformat()}


def readme_section() -> str:
    """The shipped ensembles in a table: each lesson's runs, what they cost, how far its values spread."""
    from app.session.lessons import LESSONS

    rows, about, measured = [], None, []
    for lesson in LESSONS:
        document = json.loads((OUT / f"{lesson.key}.json").read_text())
        about = document["machine"]
        members = document["members"]
        seconds = {path: sorted(m["seconds"] for m in members if m["path"] == path) for path in document["paths"]}
        held = sum(all(claim.holds(m["values"].get(claim.name)) for m in members) for claim in lesson.claims.values())
        measured.append(seconds)
        rows.append([lesson.title, len(members), seconds, f"{held} of {len(lesson.claims)}"])
    paths = [path for path in kernels.PATHS if any(path in seconds for seconds in measured)]
    everywhere = [path for path in paths if all(path in seconds for seconds in measured)]
    some = [path for path in paths if path not in everywhere]
    for row in rows:  # a path a lesson was not measured on: a dash
        times = row[2]
        row[2:3] = [f"{times[path][len(times[path]) // 2]:.0f}" if path in times else "–" for path in paths]
    text = paragraph(
        f"benchmarks/lesson_ensembles.py, {about['date']}, {about['cpu']}, torch {about['torch']}, one thread a run, "
        f"two runs at a time: every lesson trained as its page trains it from seeds {', '.join(map(str, SEEDS))} "
        f"on the kernel paths {' and '.join(everywhere)}"
        + (f" (and {' and '.join(some)} for the lessons with a figure in its column)" if some else "")
        + " (pretrained/kernels.py). The seconds are each lesson's median "
        "run, every run its card asks for included, with other work on the same two cores part of the time (so "
        "an upper bound). Each lesson's card quotes the ranges of its data file (app/data/lessons), which held on "
        "every run here with a margin; tests/app/test_lesson_claims.py checks them against the shipped runs and "
        "replays each lesson's first steps; the full tier trains every lesson again on two paths.")
    header = ["lesson", "runs", *(f"s a run, {path}" for path in paths), "claims held on every run"]
    return f"{HEADING}\n\n{text}\n\n" + table("", header, rows).split("\n", 2)[2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lessons", nargs="*")
    parser.add_argument("--seeds", nargs="*", type=int, default=list(SEEDS))
    parser.add_argument("--paths", nargs="*")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--one", nargs="*")
    parser.add_argument("--seed", type=int)
    parser.add_argument("--cache", type=Path, help="keep each run's result here, and take those kept from it")
    parser.add_argument("--readme", action="store_true", help="only write the shipped runs' table to benchmarks/README")
    args = parser.parse_args()
    kernels.pin()  # the path UNROLLED_KERNELS names, before torch is imported
    if args.one:
        print(json.dumps(one(args.one, args.seed)))
        return
    if args.readme:
        replace_section(README, HEADING, readme_section())
        return

    from app.session.lesson_runs import MEASURES

    keys = args.lessons or list(MEASURES)
    paths = args.paths or [path for path in kernels.available() if path != "default"]
    missing = set(paths) - set(kernels.available())
    if missing:
        sys.exit(f"this CPU cannot take the kernel path(s) {', '.join(sorted(missing))}")
    ordered = sorted(families(keys), key=lambda family: LONGEST_FIRST.index(family[0]) if family[0] in LONGEST_FIRST
                     else len(LONGEST_FIRST))
    jobs = [(family, seed, path) for family in ordered for seed in args.seeds for path in paths]
    print(f"{len(jobs)} runs: {len(keys)} lessons x {len(args.seeds)} seeds x {len(paths)} paths", flush=True)
    results, failed = [], set()
    with ThreadPoolExecutor(args.workers) as pool:
        if args.cache is not None:
            args.cache.mkdir(parents=True, exist_ok=True)
        futures = {pool.submit(run_one, *job, args.cache): job for job in jobs}
        for future in as_completed(futures):
            try:
                results.append((futures[future], future.result()))
            except RuntimeError as err:  # the other lessons' files are still written
                print(err, flush=True)
                failed.update(futures[future][0])
    OUT.mkdir(parents=True, exist_ok=True)
    about = machine()
    for key in sorted(set(keys) - failed, key=keys.index):
        measured = [({"seed": seed, "path": path, "seconds": result[key]["seconds"], "values": result[key]["values"],
                      "links": result[key]["links"], "curves": thinned(result[key]["curves"])})
                    for (family, seed, path), result in results if key in family]
        members = sorted(measured, key=lambda member: (member["seed"], paths.index(member["path"])))
        document = {"lesson": key, "settings": settings(key), "paths": {p: kernels.PATHS[p] for p in paths},
                    "seeds": args.seeds, "machine": about, "members": members}
        (OUT / f"{key}.json").write_text(json.dumps(document, indent=1) + "\n")
        print(f"wrote {OUT / f'{key}.json'}", flush=True)


if __name__ == "__main__":
    main()
