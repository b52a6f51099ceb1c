"""Every lesson measured over seeds and kernel paths (issue 27), and CPUs (issue 42): the ensemble its
card quotes and its page draws as a band behind the student's run.

Each lesson's runs are trained as its page trains them (app/session/lesson_runs) from each seed
(0, 1, 2: the task's data, the start and the batches all follow it) under each kernel path this CPU
can take (pretrained/kernels.py: avx2, the app's, and avx512 where the CPU has it; `default`, the
vector-free path, on request), one process a run, one torch thread, two at a time. A lesson whose
claims hold over all of them holds where the seed or the CPU's rounding changes, not only on the
run one machine gave. Writes app/data/ensembles/<lesson>.json: the lesson's settings (its link and
budget), the machine and versions, and for every run its seed, path, CPU, seconds, the values the
claims name and the curves (thinned to 5 significant digits). tests/app/test_lesson_claims.py checks
the lessons' claims against these files.

A machine of another CPU adds its runs to the ensembles rather than replacing them: `--add` merges
the runs it measures into each lesson's file, and `--from-cache DIR` merges runs measured elsewhere
(each `<family>-<seed>-<path>.json` in DIR, the output of `--one`, as `--cache` keeps them) without
training anything. A run is one member by its seed, path and CPU: merged again, it replaces itself;
the file's `machine` (the primary CPU, where every seed ran on every path) stays. A lesson whose
settings changed since its file was measured is refused: measure it again whole.

    PYTHONPATH=. python benchmarks/lesson_ensembles.py [--lessons KEY ...] [--seeds 0 1 2]
        [--paths avx2 avx512] [--workers 2] [--cache DIR] [--add]
    PYTHONPATH=. python benchmarks/lesson_ensembles.py --from-cache DIR [--lessons KEY ...] [--cpu NAME]
    PYTHONPATH=. python benchmarks/lesson_ensembles.py --check DIR [--lessons KEY ...] [--cpu NAME]
        (writes nothing: each claim a kept run breaks, and each of its curves outside the band)
    PYTHONPATH=. python benchmarks/lesson_ensembles.py --one KEY [KEY ...] --seed S   (one run, JSON out)
    PYTHONPATH=. python benchmarks/lesson_ensembles.py --readme   (the shipped runs' table, benchmarks/README.md)
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

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
        results[key] = {"seconds": round(time.perf_counter() - start, 1), "cpu": cpu_model(), **measured.to_dict()}
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


def cpu_model() -> str:
    """This machine's CPU as /proc/cpuinfo names it ("AMD EPYC 9B14", "Intel(R) Xeon(R) Processor")."""
    if not Path("/proc/cpuinfo").exists():
        return platform.processor()
    with open("/proc/cpuinfo") as info:
        return next((line.split(":", 1)[1].strip() for line in info if line.startswith("model name")),
                    platform.processor())


def machine() -> dict:
    import torch

    return {"cpu": cpu_model(), "torch": torch.__version__, "python": platform.python_version(), "torch_threads": 1,
            "date": datetime.date.today().isoformat()}


def member(key: str, seed: int, path: str, result: dict, cpu: str) -> dict:
    """One run of lesson `key` as its ensemble keeps it; `cpu` where the run's result names none (runs
    measured before results named their CPU)."""
    found = result[key]
    return {"seed": seed, "path": path, "cpu": found.get("cpu") or cpu, "seconds": found["seconds"],
            "values": found["values"], "links": found["links"], "curves": thinned(found["curves"])}


def run_of(member: dict, document: dict) -> tuple[int, str, str]:
    """What makes a member one run: its seed, path and CPU (the document's when it names none)."""
    return member["seed"], member["path"], member.get("cpu") or document["machine"]["cpu"]


def same_settings(measured: dict, key: str) -> bool:
    """Whether an ensemble's settings are lesson `key`'s now, its link compared as a setup (a link's
    wording may change: an LSTM's once named activation=tanh)."""
    from app.session.lessons import BY_KEY
    from app.session.link import parse_query

    now = settings(key)
    return (parse_query(measured["link"]) == BY_KEY[key].setup
            and {k: v for k, v in measured.items() if k != "link"} == {k: v for k, v in now.items() if k != "link"})


def merged(document: dict, members: list[dict], key: str) -> dict:
    """Ensemble `document` with `members` added: a member of the same seed, path and CPU as one there
    replaces it; the members it had keep their CPU, now written out; its machine stays the primary CPU.
    Refused (ValueError) when the lesson's settings are no longer the document's."""
    if not same_settings(document["settings"], key):
        raise ValueError(f"{key}: the lesson's settings changed since its ensemble was measured; measure it "
                         "again whole (without --add or --from-cache)")
    kept = {run_of(m, document): {**m, "cpu": run_of(m, document)[2]} for m in document["members"]}
    kept |= {run_of(m, document): m for m in members}
    primary = document["machine"]["cpu"]
    order = list(kernels.PATHS)
    ordered = sorted(kept.values(), key=lambda m: (m["cpu"] != primary, m["cpu"], m["seed"], order.index(m["path"])))
    paths = {p: kernels.PATHS[p] for p in order if p in document["paths"] or any(m["path"] == p for m in members)}
    seeds = sorted({*document["seeds"], *(m["seed"] for m in members)})
    return {**document, "paths": paths, "seeds": seeds, "members": ordered}


CACHED = re.compile(r"^(?P<family>.+)-(?P<seed>\d+)-(?P<path>" + "|".join(kernels.PATHS) + r")\.json$")


def from_cache(folder: Path, keys: list[str]) -> list[tuple[tuple[list[str], int, str], dict]]:
    """The runs kept in `folder` (`<family>-<seed>-<path>.json`, the output of --one) of these lessons'
    families, as run_one would return them."""
    wanted = {family[0]: family for family in families(keys)}
    found = []
    for file in sorted(folder.glob("*.json")):
        name = CACHED.match(file.name)
        if name is None or name["family"] not in wanted:
            continue
        found.append(((wanted[name["family"]], int(name["seed"]), name["path"]), json.loads(file.read_text())))
    return found


def check(folder: Path, keys: list[str], cpu: str) -> int:
    """Each lesson's claims against the runs kept in `folder` not yet in its ensemble, as --from-cache
    would merge them, and each of their curves against the shipped band as the full tier holds a new run
    (tests/app/test_lessons.py: 90% of its points inside, widened by a quarter of its width). Prints what
    fails; returns how many claims a kept run breaks. Writes nothing."""
    from app.session import ensembles
    from app.session.lesson_runs.replay import close
    from app.session.lessons import BY_KEY

    runs = from_cache(folder, keys)
    print(f"{len(runs)} runs kept in {folder}", flush=True)
    broken = 0
    for key in keys:
        shipped = ensembles.shipped(key)
        known = {run_of(m, shipped.document) for m in shipped.members}
        new = [m for m in (member(key, seed, path, result, cpu) for (family, seed, path), result in runs
                           if key in family) if run_of(m, shipped.document) not in known]
        if not new:
            continue
        new = ensembles.read(key, {**shipped.document, "members": new}).members  # with the ratio claims' values
        print(f"{key}: " + ", ".join(f"seed {m['seed']} {m['path']}" for m in new), flush=True)
        for claim in BY_KEY[key].claims.values():
            for m in new:
                value = m["values"].get(claim.name, "missing")
                if value == "missing" or not claim.holds(value):
                    broken += 1
                    print(f"  {claim.name} = {value} (seed {m['seed']}, {m['path']}, {m['cpu']}) outside "
                          f"{claim.quote()}", flush=True)
        for m in new:
            for run, series in m["curves"].items():
                for name, curve in series.items():
                    band = shipped.band(run, name).set_index("step")
                    points = [(v, *band.loc[step, ["low", "high"]]) for step, v in curve if step in band.index]
                    inside = sum(close(v, low, high, 0.25) for v, low, high in points) / max(len(points), 1)
                    if inside < 0.9:
                        print(f"  {run} {name} (seed {m['seed']}, {m['path']}): {inside:.0%} of {len(points)} "
                              "points inside the band, widened a quarter", flush=True)
    print(f"{broken} claim(s) broken", flush=True)
    return broken


def readme_section() -> str:
    """The shipped ensembles in a table: each lesson's runs, what they cost (on the primary CPU), how
    far its values spread."""
    from timing import paragraph, table

    from app.session import ensembles
    from app.session.lessons import LESSONS

    rows, about, measured, machines = [], None, [], {}
    for lesson in LESSONS:
        ensemble = ensembles.shipped(lesson.key)
        about = ensemble.document["machine"]
        machines.setdefault((about["cpu"], about["date"]), []).append(lesson.title)
        members = ensemble.members
        primary = [m for m in members if m["cpu"] == ensemble.cpu]
        seconds = {path: sorted(m["seconds"] for m in primary if m["path"] == path)
                   for path in dict.fromkeys(m["path"] for m in primary)}
        held = sum(all(claim.holds(m["values"].get(claim.name)) for m in members) for claim in lesson.claims.values())
        measured.append(seconds)
        rows.append([lesson.title, len(members), seconds, f"{held} of {len(lesson.claims)}"])
    paths = [path for path in kernels.PATHS if any(path in seconds for seconds in measured)]
    everywhere = [path for path in paths if all(path in seconds for seconds in measured)]
    some = [path for path in paths if path not in everywhere]
    for row in rows:  # a path a lesson was not measured on: a dash
        times = row[2]
        row[2:3] = [f"{times[path][len(times[path]) // 2]:.0f}" if path in times else "–" for path in paths]
    # Each lesson's primary CPU and date: most were measured together, a lesson measured again since on its own
    largest = max(machines.values(), key=len)
    where = "; ".join(f"{cpu}, {date}" + ("" if titles is largest else f" ({', '.join(titles)})")
                      for (cpu, date), titles in machines.items())
    text = paragraph(
        f"benchmarks/lesson_ensembles.py, {where}, torch {about['torch']}, one thread a run, "
        f"two runs at a time: every lesson trained as its page trains it from seeds {', '.join(map(str, SEEDS))} "
        f"on the kernel paths {' and '.join(everywhere)}"
        + (f" (and {' and '.join(some)} for the lessons with a figure in its column)" if some else "")
        + " (pretrained/kernels.py); runs on other CPUs, where an ensemble has them, count among its runs. The "
        "seconds are each lesson's median "
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
    parser.add_argument("--add", action="store_true",
                        help="merge the runs into each lesson's ensemble file instead of writing it anew")
    parser.add_argument("--from-cache", type=Path, metavar="DIR",
                        help="train nothing: merge the runs kept in DIR (<family>-<seed>-<path>.json) into the files")
    parser.add_argument("--check", type=Path, metavar="DIR",
                        help="write nothing: the claims the runs kept in DIR break, and their curves outside the band")
    parser.add_argument("--cpu", help="the CPU the runs merged from a cache ran on, where a run names none "
                                      "(default: this machine's)")
    parser.add_argument("--readme", action="store_true", help="only write the shipped runs' table to benchmarks/README")
    args = parser.parse_args()
    kernels.pin()  # the path UNROLLED_KERNELS names, before torch is imported
    if args.one:
        print(json.dumps(one(args.one, args.seed)))
        return
    if args.readme:
        from timing import replace_section

        replace_section(README, HEADING, readme_section())
        return

    from app.session.lesson_runs import MEASURES

    keys = args.lessons or list(MEASURES)
    if args.check is not None:
        sys.exit(1 if check(args.check, keys, args.cpu or cpu_model()) else 0)
    if args.from_cache is not None:
        results = from_cache(args.from_cache, keys)
        print(f"{len(results)} runs kept in {args.from_cache}", flush=True)
        write(keys, results, set(), args.cpu or cpu_model(), add=True)
        return
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
    write(keys, results, failed, cpu_model(), add=args.add, seeds=args.seeds, paths=paths)


def write(keys: list[str], results: list, failed: set[str], cpu: str, add: bool, seeds: list[int] | None = None,
          paths: list[str] | None = None) -> None:
    """Each lesson's ensemble file from `results` ((family, seed, path), result): written anew, or, with
    `add`, its runs merged into the file there (a lesson with no file yet is written anew)."""
    OUT.mkdir(parents=True, exist_ok=True)
    about = machine()
    order = list(kernels.PATHS)
    for key in sorted(set(keys) - failed, key=keys.index):
        members = sorted((member(key, seed, path, result, cpu) for (family, seed, path), result in results
                          if key in family), key=lambda m: (m["seed"], order.index(m["path"])))
        if not members:
            continue
        file = OUT / f"{key}.json"
        if add and file.exists():
            document = merged(json.loads(file.read_text()), members, key)
            print(f"{key}: {len(members)} runs merged, {len(document['members'])} in all", flush=True)
        else:
            used = paths or [p for p in order if any(m["path"] == p for m in members)]
            document = {"lesson": key, "settings": settings(key), "paths": {p: kernels.PATHS[p] for p in used},
                        "seeds": seeds or sorted({m["seed"] for m in members}), "machine": {**about, "cpu": cpu},
                        "members": members}
        file.write_text(json.dumps(document, indent=1) + "\n")
        print(f"wrote {file}", flush=True)


if __name__ == "__main__":
    main()
