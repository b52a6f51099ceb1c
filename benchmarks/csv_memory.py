"""Large review CSVs (issue 29, finding 5): the peak memory and the time of parse_reviews on an
uploaded file, the streaming parse against the whole-text one it replaced (engine/tasks/review_csv.py
at OLD), each parse in a fresh process so that its peak is its own. Inputs are generated, nothing
is downloaded: IMDB-like reviews (about 230 words on average, a vocabulary of 100,000 words drawn
with Zipf-like frequencies, commas, full stops, <br /> tags and a curly apostrophe now and then)
to 66 MB and 90 MB, and 10^6 tiny rows.

    PYTHONPATH=. python benchmarks/csv_memory.py [--quick]

Peak RSS is VmHWM, reset (/proc/self/clear_refs) once the file's bytes are in memory, minus the
RSS then; "held after" is the RSS once the parse returned, its result alive; the traced peak is
tracemalloc's, in a run of its own (tracing slows a parse down about twice).
"""
from __future__ import annotations

import argparse
import csv
import gc
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

OLD = "a8e36cc"  # the last commit with the whole-text parse
ROOT = Path(__file__).resolve().parents[1]
VOCABULARY = 100_000
MEAN_WORDS = 230  # IMDB 50K: 231 words a review on average, 174 the median
MB = 1_000_000


def vocabulary(rng: np.random.Generator) -> list[str]:
    """VOCABULARY distinct made-up words, the frequent ones short as in English; a few with an
    accent or an apostrophe inside."""
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    words: dict[str, None] = {}
    while len(words) < VOCABULARY:
        rank = len(words)
        length = 2 + int(rng.poisson(0.2 + np.log1p(rank) / 2.5))  # 4.3 letters a word on average, as English
        word = "".join(rng.choice(letters, length))
        if rank % 97 == 3:
            word = word[:-1] + "é"
        elif rank % 89 == 5:
            word = word[:-1] + "'" + "s"
        words[word] = None
    return list(words)


def imdb_like(target_bytes: int, seed: int = 0) -> bytes:
    """A review,sentiment CSV of IMDB-like reviews, written as csv.writer quotes them, to target_bytes."""
    rng = np.random.default_rng(seed)
    words = np.array(vocabulary(rng), dtype=object)
    zipf = np.cumsum(1.0 / (np.arange(VOCABULARY) + 2.7) ** 1.07)  # Zipf-Mandelbrot, about English's
    suffixes = np.array(["", ",", ".", ".<br /><br />", "’s"], dtype=object)  # a curly apostrophe: not Latin-1
    suffix_odds = np.cumsum([0.87, 0.06, 0.055, 0.01, 0.005])
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["review", "sentiment"])
    while out.tell() < target_bytes:  # characters: close to bytes, most being ASCII
        lengths = np.maximum(8, rng.lognormal(np.log(MEAN_WORDS) - 0.75**2 / 2, 0.75, 500)).astype(int)  # [500]
        n = int(lengths.sum())
        ranks = np.searchsorted(zipf, rng.random(n) * zipf[-1])  # [n]
        tails = np.searchsorted(suffix_odds, rng.random(n) * suffix_odds[-1])  # [n]
        picked = words[ranks] + suffixes[tails]  # [n]
        for review in np.split(picked, np.cumsum(lengths)[:-1]):
            review[0] = review[0].capitalize()
            writer.writerow([" ".join(review) + ".", "positive" if rng.random() < 0.5 else "negative"])
    return out.getvalue().encode("utf-8")


def tiny_rows(n: int) -> bytes:
    return ("review,sentiment\n" + "".join(f"film {i % 1000} was good,positive\n" for i in range(n))).encode()


def short_words(target_bytes: int, review_chars: int = 60_000) -> bytes:
    """The most words a byte can hold, in long reviews: one- and two-letter words, reviews of
    review_chars characters (IMDB's longest is about 14,000)."""
    rng = np.random.default_rng(0)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"), dtype=object)
    rows = ["review,sentiment"]
    for _ in range(target_bytes // review_chars):
        n = review_chars // 2
        picked = letters[rng.integers(0, 26, n)] + np.where(rng.random(n) < 0.2, "s", "")  # [n]
        rows.append(" ".join(picked)[:review_chars] + ",positive")
    return ("\n".join(rows) + "\n").encode()


def status_mb(field: str) -> float:
    """A /proc/self/status line (VmRSS now, VmHWM the peak so far) in MB."""
    with open("/proc/self/status") as f:
        kb = next(int(line.split()[1]) for line in f if line.startswith(field + ":"))
    return kb * 1024 / MB


def implementation(which: str):
    """The parse_reviews module to measure: this tree's ("new"), or the one at OLD ("old")."""
    import importlib
    import types

    if which == "new":
        return importlib.import_module("engine.tasks.review_csv")
    source = subprocess.run(["git", "show", f"{OLD}:engine/tasks/review_csv.py"], cwd=ROOT, check=True,
                            capture_output=True, text=True).stdout
    module = types.ModuleType("engine.tasks.review_csv_old")
    module.__package__ = "engine.tasks"  # its `from .text import ...`
    sys.modules[module.__name__] = module  # where its dataclass looks itself up
    exec(compile(source, "review_csv_old.py", "exec"), module.__dict__)
    return module


def child(which: str, path: str, traced: bool, cap: int) -> dict:
    """One parse, in this (fresh) process: its figures, or the message it refused the file with."""
    import tracemalloc

    module = implementation(which)
    if cap and hasattr(module, "MAX_CSV_REVIEWS"):
        module.MAX_CSV_REVIEWS = cap
    module.parse_reviews("review,sentiment\nfine,positive\n")  # pandas' and pyarrow's lazy imports, not measured
    data = Path(path).read_bytes()
    gc.collect()
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # VmHWM := VmRSS
    before = status_mb("VmRSS")
    if traced:
        tracemalloc.start()
    start = time.perf_counter()
    try:
        parsed = module.parse_reviews(data)
        outcome = f"{len(parsed):,} reviews, {len(parsed.word_ids):,} words, {len(parsed.words):,} distinct"
        held = (parsed.word_ids.nbytes + parsed.starts.nbytes + parsed.labels.nbytes + sys.getsizeof(parsed.words)
                + sum(map(sys.getsizeof, parsed.words))) / MB
    except ValueError as err:
        outcome, held = f"refused: {err}", 0.0
    seconds = time.perf_counter() - start
    figures = {"outcome": outcome, "seconds": seconds, "peak": status_mb("VmHWM") - before,
               "after": status_mb("VmRSS") - before, "result": held, "file": len(data) / MB}
    if traced:
        figures["traced"] = tracemalloc.get_traced_memory()[1] / MB
    return figures


def measure(which: str, path: Path, traced: bool, cap: int = 0) -> dict:
    command = [sys.executable, __file__, "--child", which, str(path), "--cap", str(cap)] + ["--traced"] * traced
    env = os.environ | {"PYTHONPATH": str(ROOT)}
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT)
    if done.returncode:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def run(quick: bool = False) -> str:
    from timing import table  # here, not at the top: it imports torch, which a measured parse does not need

    sizes = {"IMDB-like": (6 * MB, 9 * MB), "tiny": 100_000} if quick else {"IMDB-like": (66 * MB, 90 * MB),
                                                                            "tiny": 1_000_000}
    repeats = 1 if quick else 3
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        files = []
        for size in sizes["IMDB-like"]:
            path = Path(folder) / f"imdb_{size // MB}mb.csv"
            path.write_bytes(imdb_like(size))
            files.append((f"IMDB-like, {path.stat().st_size / MB:.0f} MB", path, 0))
        path = Path(folder) / "short_words.csv"
        path.write_bytes(short_words(sizes["IMDB-like"][0]))
        files.append((f"short words, long reviews, {path.stat().st_size / MB:.0f} MB", path, 0))
        path = Path(folder) / "tiny.csv"
        path.write_bytes(tiny_rows(sizes["tiny"]))
        label = f"{sizes['tiny']:,} tiny rows, {path.stat().st_size / MB:.0f} MB"
        files += [(label, path, 0), (label + ", row cap lifted", path, 10 * sizes["tiny"])]
        for label, path, cap in files:
            for which in ("old", "new"):
                if cap and which == "old":
                    continue  # the old parse has no cap to lift
                runs = [measure(which, path, traced=False, cap=cap) for _ in range(repeats)]
                traced = measure(which, path, traced=True, cap=cap)
                rows.append([label, which, statistics.median(r["peak"] for r in runs),
                             statistics.median(r["after"] for r in runs), traced["traced"],
                             runs[0]["result"], statistics.median(r["seconds"] for r in runs),
                             runs[0]["outcome"][:90]])
    return table(f"Parsing an uploaded review CSV in a fresh process (median of {repeats}; traced: one run)",
                 ["file", "parse", "peak RSS increase MB", "RSS held after MB", "tracemalloc peak MB",
                  "result MB", "s", "outcome"], rows)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="6 and 9 MB files, 10^5 tiny rows, one run each")
    parser.add_argument("--child", nargs=2, metavar=("OLD_OR_NEW", "CSV"), help="be the measured parse (used by run)")
    parser.add_argument("--traced", action="store_true")
    parser.add_argument("--cap", type=int, default=0, help="MAX_CSV_REVIEWS for this run (0: as shipped)")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(*args.child, args.traced, args.cap)))
    else:
        from timing import cpu_model, load_average

        print(f"{cpu_model()}, {os.cpu_count()} cores, load average {load_average()}")
        print(run(args.quick))
        print(f"load average at the end {load_average()}")


if __name__ == "__main__":
    main()
