"""The first steps of a lesson's runs, replayed to compare with its shipped ensemble in seconds:
each run the ensemble kept a link for as a Lab, the side-by-side lessons as their page's runs, all
trained REPLAY_STEPS steps as their page trains them; an untrained lesson (the spectral sweep) is
measured whole, since it trains nothing. A run its lesson marks chaotic is held, after its start, to
what holds across runs (its envelope, its orderings), never to the band one step at a time."""
from __future__ import annotations

import dataclasses

from app.session import ensembles
from app.session.comparison import Comparison
from app.session.lab import Lab
from app.session.lesson_runs import Measured, measure, seeded
from app.session.lesson_runs.recurrent import held_out, trained
from app.session.lesson_runs.transformers import played, transfer_source
from app.session.lessons import BY_KEY, Lesson
from app.session.link import parse_query
from app.session.scaling import ScalingRuns
from app.session.transfer import LESSON_RECIPE, TransferRuns
from app.session.word_vectors import LESSON_PLAN as VECTOR_PLAN
from app.session.word_vectors import VectorRuns, shipped_vectors

REPLAY_STEPS = 25  # one measurement after the start: every curve has a point there
# Relative slack around a band. Before training (step 0) the kernel paths gave the same curves to within
# rounding; by step 25 the undivided softmax of Why √d_k had moved 17% between them (chaotic from its
# first steps), so from step 25 a replayed point is held to every seed's band, not seed 0's alone.
# Measured on an AMD EPYC (a CPU the ensembles lack) on its three paths, 2026-11-29: no point of a run not
# chaotic lay further outside its band than 2% of this slack.
TOLERANCE = 0.02
# A chaotic run's band (Lesson.chaotic, ensembles.Ensemble.band) is, after its start, the range every run
# of the ensemble took at any step after the start; the replay widens it by a quarter of its width either
# side (as the full tier widens a band for a new CPU) and holds the run to its orderings (out_of_order).
# On that AMD machine's avx2 path the undivided softmax's entropy at step 25 was 0.1158: outside the Intel
# runs' 0.0525-0.1134 at step 25 (even widened by TOLERANCE), inside their 0.0185-0.1134 over steps 25-150
# widened so (to 0.137).
ENVELOPE = 0.25


def seeds_at(step: int, seed: int) -> tuple[int, ...] | None:
    """Which of the ensemble's seeds a point replayed from `seed` at `step` is held to (None: all)."""
    return (seed,) if step == 0 else None


def close(value: float, low: float, high: float, widen: float = 0.0) -> bool:
    """`value` within the band [low, high], widened by TOLERANCE of its size, or by `widen` of its width
    if that is more."""
    slack = max(TOLERANCE * max(abs(low), abs(high)), widen * (high - low)) + 1e-12
    return low - slack <= value <= high + slack


def out_of_order(lesson: Lesson, curves: dict[str, dict[str, list]]) -> list[str]:
    """Where a chaotic run's curve is not below the run its lesson names (Chaotic.below), at a step after
    the start that both curves have; curves: run -> series -> [(step, value), ...], as a Measured or an
    ensemble member keeps them."""
    broken = []
    for chaotic in lesson.chaotic.values():
        for series, other in chaotic.below.items():
            mine, theirs = (dict(map(tuple, curves[run][series])) for run in (chaotic.run, other))
            broken += [f"{chaotic.run} {series} at step {step}: {mine[step]:.4g}, not below {other}'s "
                       f"{theirs[step]:.4g}" for step in sorted(set(mine) & set(theirs))
                       if step > 0 and not mine[step] < theirs[step]]
    return broken


def first_steps(key: str, seed: int) -> Measured:
    lesson, ensemble = BY_KEY[key], ensembles.shipped(key)
    out = Measured()
    if lesson.page == "compare":
        runs = played(Comparison(seeded(lesson.setup, seed), kind=lesson.compare_kind), REPLAY_STEPS)
    elif lesson.page == "scaling":
        runs = played(ScalingRuns(seeded(lesson.setup, seed)), REPLAY_STEPS)
    elif lesson.page == "transfer":
        recipe = dataclasses.replace(LESSON_RECIPE, seed=seed)
        runs = played(TransferRuns(recipe, transfer_source(recipe.source)), REPLAY_STEPS)
    elif lesson.page == "word-vectors":  # a Lab scores 64 held-out sentences, the page all of them
        runs = played(VectorRuns(dataclasses.replace(VECTOR_PLAN, seed=seed), shipped_vectors()), REPLAY_STEPS)
    elif not any(member["curves"] for member in ensemble.members):
        return measure(key, seed)  # untrained: the whole measurement is the replay
    else:
        for run, link in ensemble.members[0]["links"].items():
            lab = trained(Lab(parse_query({**link, "seed": str(seed)})), REPLAY_STEPS)
            series = ensemble.series(run)
            log = lab.probes.log_frame() if series == ["ratio"] else held_out(lab)
            out.add_curves(run, log, tuple(series))
        return out
    log = runs.log_frame()
    for run in ensemble.runs():
        if run in set(log["run"]):
            out.add_curves(run, log[log["run"] == run], tuple(ensemble.series(run)))
    return out
