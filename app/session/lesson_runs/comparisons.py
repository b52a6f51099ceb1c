"""The Compare cells page's lessons: one Comparison each, trained as the page trains it (the runs in
turns, each measured every 25 steps on the held-out samples and probe sample 0)."""
from __future__ import annotations

import pandas as pd

from app.session.comparison import Comparison
from app.session.lesson_runs import Measured, first_step, last_step, measures_for, seeded
from app.session.lessons import BY_KEY


def compared(key: str, seed: int) -> tuple[Comparison, dict[str, pd.DataFrame]]:
    """The lesson's comparison trained to its budget, and each run's log indexed by step."""
    lesson = BY_KEY[key]
    comparison = Comparison(seeded(lesson.setup, seed), kind=lesson.compare_kind)
    with comparison.lock:
        while comparison.advance(lesson.steps):
            pass
    log = comparison.log_frame()
    return comparison, {run.name: log[log.run == run.name].set_index("step", drop=False) for run in comparison.runs}


def curves_of(logs: dict[str, pd.DataFrame], series: tuple[str, ...]) -> Measured:
    out = Measured()
    for name, log in logs.items():
        out.add_curves(name, log, series)
    return out


@measures_for("initialisation")
def initialisation(seed: int) -> Measured:
    comparison, logs = compared("initialisation", seed)
    irnn, orthogonal, default = (logs[name] for name in ("identity (IRNN)", "orthogonal", "PyTorch default"))
    out = curves_of(logs, ("loss", "ratio"))
    out.values["baseline"] = comparison.task.baseline_loss
    out.values |= {"irnn.below_0.05": first_step(irnn.loss, irnn.loss < 0.05),
                   "irnn.loss_end": float(irnn.loss.iloc[-1]),
                   "irnn.loss_max_after_300": float(irnn.loss.loc[300:].max()),
                   "irnn.ratio_low": float(irnn.ratio.min()), "irnn.ratio_high": float(irnn.ratio.max()),
                   "irnn.ratio_start": float(irnn.ratio.iloc[0])}
    after = orthogonal.loc[25:]
    out.values |= {"orthogonal.below_0.15": first_step(after.loss, after.loss < 0.15),
                   "orthogonal.loss_end": float(orthogonal.loss.iloc[-1]),
                   "orthogonal.ratio_start": float(orthogonal.ratio.iloc[0]),
                   "orthogonal.ratio_max": float(orthogonal.ratio.max())}
    rest = default.loc[25:]
    out.values |= {"default.loss_low_after_25": float(rest.loss.min()),
                   "default.loss_high_after_25": float(rest.loss.max()),
                   "default.loss_end": float(default.loss.iloc[-1]),
                   "default.ratio_max": float(default.ratio.max()),
                   "default.ratio_start": float(default.ratio.iloc[0])}
    return out


@measures_for("layer-norm")
def layer_norm(seed: int) -> Measured:
    comparison, logs = compared("layer-norm", seed)
    out = curves_of(logs, ("loss", "ratio"))
    baseline = comparison.task.baseline_loss
    out.values["baseline"] = baseline
    last_250 = BY_KEY["layer-norm"].steps - 250  # the card's "over the last 250 steps"
    names = {"without": "plain", "layer norm": "norm", f"zoneout {comparison.runs[2].cfg.zoneout:g}": "zoneout",
             "both": "both"}
    for name, short in names.items():
        log = logs[name]
        loss = log.loss
        out.values |= {f"{short}.ratio_start": float(log.ratio.iloc[0]),
                       f"{short}.below_0.9_baseline": first_step(loss, loss < 0.9 * baseline),
                       f"{short}.last_at_baseline": last_step(loss, loss >= 0.9 * baseline),
                       f"{short}.loss_end": float(loss.loc[last_250:].mean()),
                       f"{short}.loss_low_after_25": float(loss.loc[25:].min()),
                       f"{short}.loss_high_after_25": float(loss.loc[25:].max())}
    return out


@measures_for("echo-state")
def echo_state(seed: int) -> Measured:
    comparison, logs = compared("echo-state", seed)
    out = curves_of(logs, ("metric", "ratio"))
    out.values["held_out_sequences"] = float(len(comparison.held_out[1]))
    for name, log in logs.items():
        rho = name.removeprefix("ρ = ")
        out.values |= {f"rho_{rho}.accuracy_end": float(log.metric.iloc[-1]),
                       f"rho_{rho}.ratio_low": float(log.ratio.min()),
                       f"rho_{rho}.ratio_high": float(log.ratio.max())}
    return out


@measures_for("four-cells")
def four_cells(seed: int) -> Measured:
    """Compare cells as it opens on the adding problem: the four cells, their gradient's reach and loss."""
    comparison, logs = compared("four-cells", seed)
    out = curves_of(logs, ("ratio", "loss"))
    baseline = comparison.task.baseline_loss
    names = {"tanh RNN": "tanh", "ReLU RNN": "relu", "LSTM": "lstm", "GRU": "gru"}
    for name, short in names.items():
        log = logs[name]
        ratio, loss = log.ratio, log.loss
        passes = first_step(ratio, ratio > 0.1)
        leaves = first_step(loss, loss < 0.9 * baseline)
        after = None if passes is None else float(ratio.loc[passes:].min())
        out.values |= {f"{short}.ratio_start": float(ratio.iloc[0]), f"{short}.ratio_max": float(ratio.max()),
                       f"{short}.first_above_0.1": passes, f"{short}.min_after_first_above_0.1": after,
                       f"{short}.leaves_baseline": leaves,
                       f"{short}.ratio_when_leaving": None if leaves is None else float(ratio.loc[leaves]),
                       f"{short}.loss_end": float(loss.iloc[-1])}
    return out
