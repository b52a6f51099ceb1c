"""The gradient log's recording: every RECORD_EVERY steps the Lab calls Probes.measure, which runs
`engine.record(model, *probe, index=0, jacobians=False)` on probe sample 0. Before issue 10 every
record also took the eigenvalues and singular values of every W_hh block; now only when asked
(`spectra=True`, or `engine.weight_spectra(model)`, which refuses past MAX_SPECTRA_WORK).

Measured for a 2-layer bidirectional LSTM on the adding problem (T=50) as H grows, spectra off (the
log today) against spectra on (what every log row cost before), in one process, taking turns. Where
weight_spectra refuses, "spectra on" is the old cost re-enacted: the record plus engine.spectra's
stack_spectra on the same W_hh blocks, which is what record computed before the limit existed.
Then the same recording at 0 and 1M steps trained: it reads the weights, never the history.

    PYTHONPATH=. python benchmarks/gradient_log.py [--quick]
"""
from __future__ import annotations

import threading

from history_tick import plausible_stats, traced
from timing import interleaved, run_alone, table

import engine
from app.session.link import DEFAULT
from app.session.probes import RECORD_EVERY, Probes, probe_samples
from engine.spectra import MAX_SPECTRA_WORK, recurrent_weights, stack_spectra

HIDDENS = (64, 128, 256, 512)
QUICK_HIDDENS = (64, 128)
LAYERS, BIDIRECTIONAL, T = 2, True, 50
STEPS_TRAINED, QUICK_STEPS_TRAINED = 1_000_000, 100_000


def spectra_past_the_limit(model) -> None:
    """weight_spectra without its size check: the eigvals and svdvals of every W_hh block."""
    for cfg, weights in recurrent_weights(model).values():
        stack_spectra(cfg, [w for _, w in weights])


def refusal(model) -> str:
    """What engine.weight_spectra says for this model: 'computes' or its refusal, shortened."""
    try:
        engine.weight_spectra(model)
    except ValueError as err:
        return "refuses: " + str(err).split(";")[0].replace("the spectra of W_hh cost ", "")
    return "computes"


def spectra_row(H: int, repeats: int, budget: float) -> list:
    task = engine.make_task("adding", seq_len=T, seed=0)
    cfg = engine.ModelConfig(arch="lstm", hidden_size=H, num_layers=LAYERS, bidirectional=BIDIRECTIONAL)
    model = engine.build_model(cfg, task, seed=0)
    x, y = probe_samples(task, seed=0)
    verdict = refusal(model)
    allowed = verdict == "computes"

    def log_row():  # what Probes.measure records
        return engine.record(model, x, y, index=0, jacobians=False)

    def with_spectra():  # every record before issue 10
        if allowed:
            return engine.record(model, x, y, index=0, jacobians=False, spectra=True)
        log_row()
        spectra_past_the_limit(model)

    fns = {"off": log_row, "on": with_spectra}
    if not allowed:  # how long record(spectra=True) takes to say no
        fns["refused"] = lambda: refusal(model)
    times = {k: v * 1e3 for k, v in interleaved(fns, repeats, budget).items()}
    on = f"{times['on']:.2f}" + ("" if allowed else " (past the limit, re-enacted)")
    refused = f"{times['refused']:.3f}" if "refused" in times else ""
    return [f"lstm H={H} L={LAYERS} bi", times["off"], on, times["on"] / times["off"], verdict, refused]


def probes_at(steps: int) -> Probes:
    """Probes on the app's default setup whose trainer has `steps` steps in its history and whose
    gradient log has a row for every RECORD_EVERY of them (copies of its first row; the bytes those
    rows hold, by tracemalloc, in probes.log_bytes)."""
    task = DEFAULT.make_task()
    model = engine.build_model(DEFAULT.model, task, seed=DEFAULT.train.seed)
    trainer = engine.Trainer(model, task, DEFAULT.train)
    for s in plausible_stats(steps, task.baseline_loss, DEFAULT.train.clip_norm):
        trainer.history.add(s)
    probes = Probes(trainer, DEFAULT.model, threading.RLock())
    first = probes.log[0]
    _, probes.log_bytes = traced(lambda: probes.log.extend(
        first | {"step": k} for k in range(RECORD_EVERY, steps + 1, RECORD_EVERY)))
    return probes


def steps_row(steps: int, repeats: int, budget: float) -> list:
    fresh, trained = probes_at(0), probes_at(steps)
    rows = len(trained.log)  # measure adds a row per call
    times = {k: v * 1e3 for k, v in interleaved({
        "fresh": fresh.measure, "trained": trained.measure,
        "fresh log": fresh.log_frame, "trained log": trained.log_frame,
    }, repeats, budget).items()}
    m = DEFAULT.model
    return [f"{m.arch} H={m.hidden_size} L={m.num_layers} (the default setup)", times["fresh"], times["trained"],
            times["trained"] / times["fresh"], f"{rows:,}", trained.log_bytes / 1e6, times["fresh log"],
            times["trained log"]]


def run(quick: bool) -> str:
    repeats, budget = (3, 0.05) if quick else (5, 0.3)
    rows = [spectra_row(H, repeats, budget) for H in (QUICK_HIDDENS if quick else HIDDENS)]
    spectra = table(
        f"Gradient-log recording (engine.record on one probe sample, no Jacobians), adding T={T}: "
        f"spectra off (today) vs on (before), MAX_SPECTRA_WORK = {MAX_SPECTRA_WORK:.3g}",
        ["model", "spectra off ms (the log today)", "spectra on ms (every record before)", "on / off",
         "engine.weight_spectra", "refusal ms"], rows)
    n = QUICK_STEPS_TRAINED if quick else STEPS_TRAINED
    steps = table(
        f"The same recording (Probes.measure) at 0 and {n:,} steps trained",
        ["model", "measure ms at 0 steps", f"measure ms at {n:,} steps", "ratio",
         f"gradient log rows at {n:,}", "their MB", "log_frame() ms at 0", f"log_frame() ms at {n:,}"],
        [steps_row(n, repeats, budget)])
    return spectra + "\n" + steps


if __name__ == "__main__":
    run_alone(run, "H = 64 and 128, 100k steps only; fewer repeats")
