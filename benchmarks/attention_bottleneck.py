"""The encoder-decoder's bottleneck, measured (issue 13): the copy task's LSTM encoder-decoder
trained with and without dot attention, from the same seeds, for the same number of steps, at
several source lengths, and scored on held-out sources decoded greedily (free running, as
Trainer.evaluate decodes). Without attention the decoder starts from the encoder's final state
alone, one fixed-size vector for the whole source (the course's "Encoder Vector ... a
bottleneck"); with it, every step looks back at every encoder state.

Writes the table to the end of benchmarks/README.md (section 9, replaced if there) and the
measurements with their settings to app/data/bottleneck.json, which the app plots and
tests/engine/test_bottleneck.py re-measures. --quick checks the script runs and writes nothing.
(Not named bottleneck.py: pandas imports the optional package `bottleneck`, and a script of that
name next to the others would be imported in its place.)

    PYTHONPATH=. python benchmarks/attention_bottleneck.py [--quick]
"""
from __future__ import annotations

import dataclasses
import datetime
import json
import time
from pathlib import Path

import torch
from timing import load_average, paragraph, replace_section, run_alone, table

import engine
from engine.rng import stream

ROOT = Path(__file__).resolve().parent.parent
JSON_PATH = ROOT / "app" / "data" / "bottleneck.json"
README = ROOT / "benchmarks" / "README.md"
HEADING = "## 9. The bottleneck, measured (issue 13)"

TASK = "copy"
SYMBOLS = 8
LENGTHS = (5, 10, 15, 20, 30, 40)
ATTENTION = ("dot", None)
STEPS = 400
SEEDS = (0, 1, 2)
HELD_OUT = 512
# The copy lesson's preset (engine/tasks/copy.py): a bidirectional LSTM of 32 units a direction, dot attention.
MODEL = engine.TASKS[TASK].preset.model
TRAIN = engine.TASKS[TASK].preset.train  # its seed is each run's


def settings() -> dict:
    """Everything a re-measurement needs, as the JSON keeps it."""
    return {
        "task": TASK, "symbols": SYMBOLS, "lengths": list(LENGTHS), "attention": list(ATTENTION), "steps": STEPS,
        "seeds": list(SEEDS), "held_out": HELD_OUT, "model": MODEL.to_dict(), "train": TRAIN.to_dict(),
        "torch_threads": 1,
    }


def measure(seq_len: int, attention: str | None, seed: int, steps: int = STEPS) -> dict:
    """Train one model from `seed` (its weights, batches and held-out sources) and score it on
    HELD_OUT sources from the run's held-out stream:
    sequence accuracy (every symbol and the <eos> right) and symbol accuracy (the share of the
    seq_len copied symbols right, <eos> not counted; chance is 1/SYMBOLS)."""
    task = engine.make_task(TASK, seq_len=seq_len, symbols=SYMBOLS)
    cfg = dataclasses.replace(MODEL, attention=attention)
    model = engine.build_model(cfg, task, seed=seed)
    start = time.perf_counter()
    engine.Trainer(model, task, dataclasses.replace(TRAIN, seed=seed)).step(steps)
    seconds = time.perf_counter() - start
    x, y = task.batch(HELD_OUT, stream(seed, "held_out"))
    model.eval()
    with torch.no_grad():
        written = model(x).argmax(-1)  # [N, T+1]: greedy decoding
    right = written == y  # [N, T+1]
    return {
        "seq_len": seq_len, "attention": attention, "seed": seed,
        "sequence_accuracy": right.all(1).float().mean().item(),
        "symbol_accuracy": right[:, :seq_len].float().mean().item(),
        "train_seconds": round(seconds, 1),
    }


def spread(values: list[float]) -> str:
    """Percent: the mean over seeds, and the range when they differ."""
    low, high, mean = 100 * min(values), 100 * max(values), 100 * sum(values) / len(values)
    return f"{mean:.1f}" if high - low < 0.05 else f"{mean:.1f} ({low:.1f}-{high:.1f})"


def markdown(rows: list[dict], steps: int, stamp: str, elapsed: float) -> str:
    def cell(n: int, attention: str | None, key: str) -> str:
        return spread([r[key] for r in rows if r["seq_len"] == n and r["attention"] == attention])

    def seconds(n: int, attention: str | None) -> str:
        times = [r["train_seconds"] for r in rows if r["seq_len"] == n and r["attention"] == attention]
        return f"{sum(times) / len(times):.0f}"

    seeds = ", ".join(str(seed) for seed in sorted({r["seed"] for r in rows}))
    cells = [[n, *(cell(n, a, k) for a in ATTENTION for k in ("sequence_accuracy", "symbol_accuracy")),
              *(seconds(n, a) for a in ATTENTION)] for n in sorted({r["seq_len"] for r in rows})]
    header = ["source length", "dot: sequences %", "dot: symbols %", "none: sequences %", "none: symbols %",
              "dot: train s", "none: train s"]
    m, t = MODEL, TRAIN
    prose = (
        "`PYTHONPATH=. python benchmarks/attention_bottleneck.py` (section `bottleneck` of `run_all.py`): the "
        f"copy task ({SYMBOLS} symbols) at each source length, its lesson's model (LSTM encoder-decoder, "
        f"bidirectional encoder of {m.hidden_size} units a direction, embeddings of {m.embedding_dim}) with dot "
        f"attention and without, each trained {steps} steps from seeds {seeds} (Adam, lr {t.lr}, batch "
        f"{t.batch_size}, clip {t.clip_norm}, 1 torch thread), then decoding {HELD_OUT} held-out sources "
        "greedily. Sequences: every symbol and the <eos> right; symbols: the share of copied symbols right "
        f"(chance {100 / SYMBOLS:.1f}%). Each cell is the mean over the seeds, their range in brackets. The "
        "same figures are in app/data/bottleneck.json, with the settings, for the app's plot; "
        f"tests/engine/test_bottleneck.py re-measures two of them. {stamp}; the whole run took {elapsed:.0f} s."
    )
    grid = table("", header, cells).split("\n", 2)[2]  # the table without its title
    return f"{HEADING}\n\n{paragraph(prose)}\n\n{grid}\n{paragraph(reading(rows))}\n"


def reading(rows: list[dict]) -> str:
    """What the table says, in figures: where each curve starts and ends."""
    def mean(n: int, attention: str | None, key: str) -> float:
        values = [r[key] for r in rows if r["seq_len"] == n and r["attention"] == attention]
        return 100 * sum(values) / len(values)

    lengths = sorted({r["seq_len"] for r in rows})
    short, long = lengths[0], lengths[-1]
    lost = next((n for n in lengths if mean(n, None, "sequence_accuracy") < 1), None)
    return (
        f"Without attention the whole-sequence accuracy falls from {mean(short, None, 'sequence_accuracy'):.1f}% "
        f"at length {short} to {mean(long, None, 'sequence_accuracy'):.1f}% at length {long}"
        + (f" (under 1% from length {lost} on)" if lost is not None else "")
        + f", and the symbols towards chance ({mean(long, None, 'symbol_accuracy'):.1f}% at length {long}): "
        "the encoder's final state cannot hold the whole source. With dot attention, from the same budget, "
        f"{mean(long, 'dot', 'sequence_accuracy'):.1f}% of whole sequences are still right at length {long} "
        f"({mean(long, 'dot', 'symbol_accuracy'):.1f}% of symbols)."
    )


def run(quick: bool) -> str:
    lengths, seeds, steps = ((5, 10), SEEDS[:1], 20) if quick else (LENGTHS, SEEDS, STEPS)
    start, load_at_start = time.perf_counter(), load_average()
    rows = [measure(n, a, seed, steps) for n in lengths for a in ATTENTION for seed in seeds]
    elapsed = time.perf_counter() - start
    now = datetime.datetime.now(datetime.UTC)
    stamp = (f"Measured {now:%Y-%m-%d %H:%M} UTC, torch {torch.__version__}, load average (1, 5, 15 min) "
             f"{load_at_start} at the start and {load_average()} at the end (other engineers' runs shared the "
             "2 cores; the accuracies do not depend on it, the seconds do)")
    section = markdown(rows, steps, stamp, elapsed)
    if not quick:
        JSON_PATH.parent.mkdir(exist_ok=True)
        record = {"measured": f"{now:%Y-%m-%d %H:%M} UTC", "load_average": [load_at_start, load_average()],
                  "torch": torch.__version__, "settings": settings(),
                  "rows_are": "each row: settings.model with the row's attention (null: none), trained from the "
                              "row's seed at the row's seq_len; accuracies are shares (0..1) of the held-out sources",
                  "rows": rows}
        JSON_PATH.write_text(json.dumps(record, indent=1) + "\n")
        replace_section(README, HEADING, section)
    return section


if __name__ == "__main__":
    run_alone(run, "source lengths 5 and 10, 20 steps; writes nothing")
