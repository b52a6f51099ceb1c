"""The training history stays bounded however long a run lasts: the latest steps all, older
ones at an even stride, the first and the last always; its frame is exactly the kept rows."""
from dataclasses import asdict

import numpy as np
import pandas as pd
import pytest

import engine
from engine.history import History, StepStats

from .cases import overflow_updates

COLUMNS = ["step", "loss", "metric", "grad_norm", "grad_norm_clipped", "diverged"]


def stats(step: int, diverged: bool = False) -> StepStats:
    """Values that differ in every column and every step, so a misplaced row shows."""
    return StepStats(step, 1.0 / step, step % 7 / 7, 2.0 * step, float(step % 5), diverged)


def filled(n: int, max_rows: int) -> History:
    history = History(max_rows)
    for step in range(1, n + 1):
        history.add(stats(step, diverged=step == n))
    return history


def test_a_million_steps_keep_at_most_max_rows_in_the_same_memory():
    history = History(4096)
    size = sum(a.nbytes for a in history.kept[:3])
    for step in range(1, 1_000_001):
        history.add(stats(step))
    assert history.total == 1_000_000 and len(history) <= 4096
    assert sum(a.nbytes for a in history.kept[:3]) == size  # thinning writes into new buffers of the same size
    assert len(history.frame()) == len(history)


def test_what_a_reader_took_never_changes_as_training_goes_on():
    """A page or a download reads `kept` without the training lock while steps are added and
    thinned: the rows it took stay as they were."""
    history = filled(60, 64)
    taken = history.kept
    before = [a[:taken.rows].copy() for a in taken[:3]]
    for step in range(61, 1000):  # past max_rows: thinned many times
        history.add(stats(step))
    assert all(np.array_equal(a[:taken.rows], b) for a, b in zip(taken[:3], before))
    assert history.kept.rows < 64 < 1000 and history[-1].step == 999


@pytest.mark.parametrize("n", [1, 63, 64, 65, 1000, 12_345])
def test_thinning_keeps_the_first_the_last_and_every_recent_step(n):
    max_rows = 64
    history = filled(n, max_rows)
    steps = history.frame()["step"].to_numpy()
    assert len(steps) <= max_rows and history.total == n
    assert steps[0] == 1 and steps[-1] == n and history.last == stats(n, diverged=True)
    recent = np.arange(max(1, n - max_rows // 4 + 1), n + 1)
    assert set(recent) <= set(steps)  # the latest quarter of the rows, every step
    if n <= max_rows:
        assert list(steps) == list(range(1, n + 1))  # nothing thinned before the rows run out
    assert np.all(np.diff(steps) > 0)


def test_older_steps_are_sampled_evenly_and_never_denser_than_newer_ones():
    history = filled(12_345, 64)
    gaps = np.diff(history.frame()["step"].to_numpy())  # [kept - 1]
    assert np.all(np.diff(gaps) <= 0)  # going back in time, the gaps only widen
    assert gaps[0] == history.stride > 1  # the oldest rows sit at the stride


def test_the_frame_is_exactly_the_kept_rows():
    history = filled(1000, 64)
    frame = history.frame()
    assert list(frame.columns) == COLUMNS
    expected = pd.DataFrame([asdict(s) for s in history], columns=COLUMNS)
    pd.testing.assert_frame_equal(frame, expected, check_dtype=False)
    for step in frame["step"]:  # each kept row holds its own step's values
        assert history[list(frame["step"]).index(step)] == stats(step, diverged=step == 1000)
    assert history[-1] == history.last and history[0:2] == [history[0], history[1]]
    with pytest.raises(IndexError):
        history[len(history)]
    frame.loc[0, "loss"] = -1.0  # a copy: the page may change it
    assert history[0].loss == 1.0


def test_applied_and_clipped_count_every_step_not_only_the_kept_rows():
    history = filled(1000, 64)  # stats(step): grad_norm_clipped = step % 5 < 2 * step always
    assert history.applied == 999 and history.clipped == 999  # all but the diverged last step
    frame = history.frame()
    kept = ((frame["grad_norm_clipped"] < frame["grad_norm"]) & ~frame["diverged"]).sum()
    assert kept == len(history) - 1 < history.clipped  # what the kept rows alone would say
    unclipped = History(8)
    for step in range(1, 21):
        unclipped.add(StepStats(step, 1.0, 0.5, 2.0, 2.0 if step % 4 else 1.0, False))
    assert (unclipped.applied, unclipped.clipped) == (20, 5)


def test_an_empty_history_has_its_columns():
    history = History()
    assert len(history) == 0 and history.last is None and not history
    assert list(history.frame().columns) == COLUMNS and history.frame().empty


def test_a_trainer_keeps_a_bounded_history_and_counts_every_step():
    task = engine.make_task("adding", seq_len=5)
    model = engine.build_model(engine.ModelConfig(arch="rnn", hidden_size=2), task, seed=0)
    trainer = engine.Trainer(model, task, engine.TrainConfig(batch_size=2), history_rows=16)
    assert trainer.last is None and trainer.steps_done == 0
    returned = []
    for _ in range(10):
        returned += trainer.step(10)
    assert [s.step for s in returned] == list(range(1, 101))  # step(n) still returns all n
    assert trainer.steps_done == 100 and trainer.last == returned[-1]
    frame = trainer.history_frame()
    assert len(frame) <= 16 and frame["step"].iloc[0] == 1 and frame["step"].iloc[-1] == 100
    by_step = {s.step: s for s in returned}
    for row in frame.itertuples(index=False):  # the kept rows are the steps as they ran
        assert StepStats(*row) == by_step[row.step]
    assert trainer.status == "trained 100 steps"


def test_the_step_counter_survives_thinning_when_a_run_diverges():
    task = engine.make_task("adding", seq_len=5)
    model = engine.build_model(engine.ModelConfig(arch="rnn", hidden_size=2), task, seed=0)
    trainer = engine.Trainer(model, task, engine.TrainConfig(optimizer="sgd", lr=1e-3), history_rows=8)
    trainer.step(30)
    overflow_updates(trainer, model)
    assert trainer.step(5)[-1].diverged
    assert trainer.diverged_at == 31 == trainer.steps_done and trainer.last.diverged
    assert trainer.history.applied == 30 and trainer.history.clipped == 0  # clipping off
    assert trainer.history_frame()["diverged"].tolist()[-1] is True
