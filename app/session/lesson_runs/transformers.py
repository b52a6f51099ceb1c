"""The lessons of Why √d_k, Positional encoding and Transfer learning, each trained as its page
trains it."""
from __future__ import annotations

import dataclasses

import pandas as pd

from app.session import pretrained
from app.session.lab import Lab
from app.session.lesson_runs import Measured, first_step, measures_for, seeded
from app.session.lesson_runs.recurrent import held_out, trained, with_model
from app.session.lessons import BY_KEY
from app.session.scaling import RUNS, ScalingRuns
from app.session.transfer import LESSON_RECIPE, TransferRuns


def played(runs, steps: int):
    """Side-by-side runs trained in turns to `steps`, as their page trains them."""
    with runs.lock:
        while runs.advance(steps):
            pass
    return runs


@measures_for("why-sqrt-dk")
def why_sqrt_dk(seed: int) -> Measured:
    lesson = BY_KEY["why-sqrt-dk"]
    runs = played(ScalingRuns(seeded(lesson.setup, seed)), lesson.steps)
    log = runs.log_frame()
    divided, undivided = (log[log.run == name].set_index("step", drop=False) for name in RUNS)
    out = Measured()
    for name, page_name, run in zip(("divided", "undivided"), RUNS, (divided, undivided)):
        out.add_curves(page_name, run, ("metric", "entropy"))  # by the page's names: its band finds them so
        out.values |= {f"{name}.accuracy_50": float(run.metric.loc[50]),
                       f"{name}.accuracy_end": float(run.metric.iloc[-1]),
                       f"{name}.entropy_50": float(run.entropy.loc[50])}
    out.values["uniform_entropy_50"] = float(undivided.uniform_entropy.loc[50])
    out.values["logit_grad_divided_over_undivided_25"] = float(divided.logit_grad_norm.loc[25]
                                                              / undivided.logit_grad_norm.loc[25])
    later = undivided.loc[25:]
    out.values["undivided.entropy_share_high_after_25"] = float((later.entropy / later.uniform_entropy).max())
    return out


@measures_for("positions")
def positions(seed: int) -> Measured:
    """The learned table (the lesson's), then the sinusoid and no positions, as the card asks on
    Build & Train; each to the lesson's budget."""
    lesson = BY_KEY["positions"]
    setup = seeded(lesson.setup, seed)
    out = Measured()
    for encoding in ("learned", "sinusoidal", "none"):
        lab = Lab(with_model(setup, position_encoding=encoding))
        if encoding == "learned":
            start = lab.model.positions.table.weight.detach().clone()[:9]  # [8 symbols + the end marker, d]
        trained(lab, 100)
        out.values[f"{encoding}.accuracy_100"] = lab.trainer.evaluate(1000)[1]
        if encoding == "learned":
            moved = (lab.model.positions.table.weight.detach()[:9] - start).norm() / start.norm()
            out.values["learned.table_moved_100"] = float(moved)
        trained(lab, lesson.steps)
        metric = held_out(lab).metric
        out.values[f"{encoding}.accuracy_end"] = lab.trainer.evaluate(1000)[1]
        out.values[f"{encoding}.above_0.99"] = first_step(metric, metric > 0.99)
        out.add_curves(encoding, held_out(lab), ("metric",), lab.setup)
    return out


def transfer_source(name: str):
    return pretrained.load(pretrained.read(name))[0]


@measures_for("transfer")
def transfer(seed: int) -> Measured:
    """The page's two runs from the reviews' char LM, then the pretrained run from the char LM of
    Python source (its from-scratch twin is the same network and seed: the first pair's)."""
    lesson = BY_KEY["transfer"]
    recipe = dataclasses.replace(LESSON_RECIPE, seed=seed)
    runs = played(TransferRuns(recipe, transfer_source(recipe.source)), lesson.steps)
    log = runs.log_frame()
    out = Measured({"held_out_reviews": float(len(runs.held_out[1]))})
    for name, short in (("pretrained", "reviews_lm"), ("from scratch", "scratch")):
        run = log[log.run == name].set_index("step", drop=False)
        out.values |= {f"{short}.accuracy_100": float(run.metric.loc[100]),
                       f"{short}.accuracy_end": float(run.metric.iloc[-1])}
        out.add_curves(name, run, ("metric",))
    parts = runs.parts_frame()
    frozen = parts[(parts.run == "pretrained") & (parts.part == "layer 0")]
    out.values["reviews_lm.frozen_grad_zero_to_100"] = float((frozen[frozen.step <= 100].grad_norm == 0).all())
    out.values["reviews_lm.trains_after_100"] = float((frozen[frozen.step > 100].grad_norm > 0).all())
    embedding = parts[(parts.run == "pretrained") & (parts.part == "embedding")]
    out.values["reviews_lm.embedding_never_moved"] = float((embedding.moved == 0).all())

    code = dataclasses.replace(recipe, source="charlm-lstm")
    run = TransferRuns(code, transfer_source(code.source)).pretrained
    for _ in range(lesson.steps):
        run.advance(final=run.steps_done + 1 == lesson.steps)
    code_log = pd.DataFrame(run.log.rows()).set_index("step", drop=False)
    out.values |= {"code_lm.accuracy_100": float(code_log.metric.loc[100]),
                   "code_lm.accuracy_end": float(code_log.metric.iloc[-1])}
    out.add_curves("pretrained on Python source", code_log, ("metric",))
    return out
