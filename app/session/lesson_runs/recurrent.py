"""The recurrent lessons opened on Build & Train, Gates and Gradients: one Lab each (or a few, the
cell swapped as the card says), trained as a playing page trains it (Lab.advance: held-out loss
and metric and the gradient's reach measured every 25 steps)."""
from __future__ import annotations

import dataclasses
import functools

import numpy as np
import pandas as pd
import torch

import engine
from app.session import spectral_sweep
from app.session.lab import Lab
from app.session.lesson_runs import Measured, first_step, measures_for, seeded
from app.session.lessons import BY_KEY
from app.session.probes import probe_samples


def trained(lab: Lab, steps: int) -> Lab:
    """`lab` trained on to `steps` as a playing page trains it."""
    with lab.lock:
        while lab.advance(until=steps):
            pass
    return lab


def with_model(setup, **changes):
    return dataclasses.replace(setup, model=dataclasses.replace(setup.model, **changes))


def held_out(lab: Lab) -> pd.DataFrame:
    """The page's held-out curve (step, loss, metric), one row a step."""
    return lab.held_out.frame().drop_duplicates("step", keep="last").set_index("step", drop=False)


def batch_windows(lab: Lab, width: int = 100) -> np.ndarray:
    """The training loss Build & Train plots (each step's batch), averaged over each `width` steps
    after the first `width`: [windows]."""
    loss = np.array([s.loss for s in lab.trainer.history])  # [steps]
    return loss[width:].reshape(-1, width).mean(axis=1)


@functools.cache
def adding_labs(seed: int) -> dict[str, Lab]:
    """The adding problem's tanh RNN and LSTM, 3000 steps each: the runs of both "rnn-forgets"
    and "vanishing" (one setup), trained once per seed in a process."""
    setup = seeded(BY_KEY["vanishing"].setup, seed)
    steps = BY_KEY["vanishing"].steps
    return {arch: trained(Lab(with_model(setup, arch=arch)), steps) for arch in ("rnn", "lstm")}


@measures_for("rnn-forgets")
def rnn_forgets(seed: int) -> Measured:
    labs = adding_labs(seed)
    out = Measured({"baseline": labs["rnn"].task.baseline_loss})
    windows = batch_windows(labs["rnn"])
    out.values |= {"rnn.window_low": float(windows.min()), "rnn.window_high": float(windows.max()),
                   "rnn.held_out_end": float(held_out(labs["rnn"]).loss.iloc[-1])}
    lstm = held_out(labs["lstm"]).loss
    out.values["lstm.below_0.01"] = first_step(lstm, lstm < 0.01)
    out.values["lstm.held_out_end"] = float(lstm.iloc[-1])
    for arch, lab in labs.items():
        out.add_curves(arch, held_out(lab), ("loss",), lab.setup)
    return out


@measures_for("vanishing")
def vanishing(seed: int) -> Measured:
    out = Measured()
    labs = adding_labs(seed)
    ratio = {arch: lab.probes.log_frame().set_index("step", drop=False) for arch, lab in labs.items()}
    rnn, lstm = ratio["rnn"].ratio, ratio["lstm"].ratio
    out.values |= {"rnn.ratio_start": float(rnn.iloc[0]), "lstm.ratio_start": float(lstm.iloc[0]),
                   "rnn.share_below_1e-6": float((rnn < 1e-6).mean()), "rnn.first_above_1e-5":
                   first_step(rnn, rnn > 1e-5), "rnn.ratio_max": float(rnn.max())}
    passes = first_step(lstm, lstm > 1e-2)
    out.values["lstm.first_above_1e-2"] = passes
    out.values["lstm.min_after_first_above_1e-2"] = None if passes is None else float(lstm.loc[passes:].min())
    for arch, log in ratio.items():
        out.add_curves(arch, log, ("ratio",), labs[arch].setup)
    return out


@measures_for("spectral-radius")
def spectral_radius(seed: int) -> Measured:
    """The sweep's curves, untrained: the page draws seed 0's network, the other seeds say how much
    a fresh draw moves them."""
    source = spectral_sweep.adding_source()
    if seed != source.seed:
        task = engine.make_task("adding", seq_len=source.task.seq_len, seed=seed)
        source = dataclasses.replace(source, task=task, samples=probe_samples(task, seed), seed=seed)
    sweep = spectral_sweep.Sweep(source, 0)
    out = Measured()
    for rho in (0.8, 1.0, 1.2):
        linear = sweep.curve("linear", rho, "orthogonal")
        out.values[f"linear.ratio_{rho:g}"] = linear.ratio
        out.values[f"linear.sigma_max_{rho:g}"] = linear.sigma_max
        out.values[f"tanh.ratio_{rho:g}"] = sweep.curve("tanh", rho, "orthogonal").ratio
    for rho in (0.8, 1.2):
        default = sweep.curve("linear", rho, "default")
        out.values[f"default.sigma_over_rho_{rho:g}"] = default.sigma_max / default.rho
    return out


@measures_for("recall-lag")
def recall_lag(seed: int) -> Measured:
    lesson = BY_KEY["recall-lag"]
    setup = seeded(lesson.setup, seed)
    lab = Lab(setup)
    scores = []
    for stop in range(250, lesson.steps + 1, 250):  # the held-out accuracy at every 250 steps, on 1000 sequences
        trained(lab, stop)
        scores.append(lab.trainer.evaluate(1000)[1])
    short = trained(Lab(dataclasses.replace(setup, task_params={**setup.task_params, "lag": 5})), 300)
    out = Measured({"lag_50.accuracy_low": min(scores), "lag_50.accuracy_high": max(scores),
                    "lag_5.accuracy_300": short.trainer.evaluate(1000)[1]})
    out.add_curves("lag 50", held_out(lab), ("metric",), lab.setup)
    return out


@measures_for("exploding")
def exploding(seed: int) -> Measured:
    lesson = BY_KEY["exploding"]
    setup = seeded(lesson.setup, seed)
    lab = Lab(setup)
    first = lab.trainer.step(1)[0]
    lab.trainer.step(1)
    clipped = trained(Lab(dataclasses.replace(setup, train=dataclasses.replace(setup.train, clip_norm=1.0))),
                      lesson.steps)
    out = Measured({"unclipped.first_grad_norm": first.grad_norm,
                    "unclipped.diverged_at": lab.trainer.diverged_at,
                    "clipped.diverged_at": clipped.trainer.diverged_at,
                    "clipped.held_out_end": float(held_out(clipped).loss.iloc[-1])})
    out.add_curves("clipped", held_out(clipped), ("loss",), clipped.setup)
    return out


@measures_for("lstm-gates")
def lstm_gates(seed: int) -> Measured:
    """The gates as the Gates page shows them on probe sample 0, after 300 steps and at the budget's end."""
    lesson = BY_KEY["lstm-gates"]
    lab = Lab(seeded(lesson.setup, seed))
    out = Measured()
    for steps in (300, lesson.steps):
        trained(lab, steps)
        rec = lab.recording(0)
        f, i = rec.gates["f"][0, 0], rec.gates["i"][0, 0]  # [T, H]
        unit = int(f.mean(dim=0).argmax())  # the most open forget gate
        out.values |= {f"lstm.accuracy_{steps}": lab.trainer.evaluate(1000)[1],
                       f"lstm.most_open_f_min_{steps}": float(f[:, unit].min()),
                       f"lstm.its_i_mean_{steps}": float(i[1:, unit].mean())}
    out.add_curves("lstm", held_out(lab), ("metric",), lab.setup)
    return out


@measures_for("gru-update-gate")
def gru_update_gate(seed: int) -> Measured:
    lesson = BY_KEY["gru-update-gate"]
    setup = seeded(lesson.setup, seed)
    lab = trained(Lab(setup), 1000)
    out = Measured({"gru.held_out_1000": lab.trainer.evaluate(1000)[0]})
    trained(lab, lesson.steps)
    loss = held_out(lab).loss
    left = first_step(loss, loss < 0.1)
    out.values["gru.below_0.1"] = left
    out.values |= z_gate(lab)
    out.add_curves("gru", held_out(lab), ("loss",), lab.setup)
    for arch in ("lstm", "rnn"):  # the card's second half: the cell swapped, PyTorch's default start
        other = trained(Lab(with_model(setup, arch=arch)), lesson.steps)
        windows = batch_windows(other)
        out.values |= {f"{arch}.window_low": float(windows.min()), f"{arch}.window_high": float(windows.max()),
                       f"{arch}.held_out_end": float(held_out(other).loss.iloc[-1])}
        out.add_curves(arch, held_out(other), ("loss",), other.setup)
    return out


def z_gate(lab: Lab) -> dict[str, float]:
    """The update gate on probe sample 0 at the end, as the Gates page's z_t panel shows it: which
    columns are darkest, how many units keep z_t near 1 after the first mark, and how much."""
    rec = lab.recording(0)
    z = rec.gates["z"][0, 0].double()  # [T, H]
    x = lab.probes.samples[0][0]  # [T, 2]: value, marker
    m1, m2 = torch.nonzero(x[:, 1]).flatten().tolist()
    darkest = z[1:].mean(dim=1).argsort()[:2] + 1  # over the units; t = 0 left out
    keepers = z[m1 + 1:].mean(dim=0) > 0.9  # [H]
    unmarked = [t for t in range(m1 + 1, z.shape[0]) if t != m2]
    grad = rec.grad_norm_h[0, 0]  # [T]: ||dL/dh_t||
    values = {"gru.marks_darkest": float(sorted(darkest.tolist()) == [m1, m2]),
              "gru.steps_between_marks": float(m2 - m1 - 1),
              "gru.keepers_share": float(keepers.float().mean())}
    if keepers.any():
        values |= {"gru.keepers_z_unmarked": float(z[unmarked][:, keepers].mean()),
                   "gru.keepers_z_marks": float(z[[m1, m2]][:, keepers].mean()),
                   "gru.keepers_kept_median": float(z[m1 + 1:m2][:, keepers].prod(dim=0).median())}
    values["gru.grad_first_mark_over_last"] = float(grad[m1] / grad[-1])
    return values


@measures_for("bidirectional")
def bidirectional(seed: int) -> Measured:
    lesson = BY_KEY["bidirectional"]
    lab = trained(Lab(seeded(lesson.setup, seed)), lesson.steps)
    metric = held_out(lab).metric
    out = Measured({"bidirectional.above_0.99": first_step(metric, metric > 0.99),
                    "bidirectional.accuracy_end": lab.trainer.evaluate(1000)[1]})
    out.add_curves("bidirectional", held_out(lab), ("metric",), lab.setup)
    return out
