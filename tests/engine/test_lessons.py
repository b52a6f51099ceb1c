"""The course's central results, trained for real on this CPU with each task's lesson preset.

These take tens of seconds each: they are the claims the app's lessons make, so they run in
the suite (marked `training`, selectable with -m training or -m "not training").
"""
import dataclasses

import pytest
import torch

import engine

pytestmark = pytest.mark.training


def train_preset(task, **model_changes):
    preset = task.preset
    torch.manual_seed(preset.train.seed)
    cfg = dataclasses.replace(preset.model, **model_changes)
    model = engine.build_model(cfg, task)
    trainer = engine.Trainer(model, task, preset.train)
    trainer.step(preset.steps)
    assert trainer.diverged_at is None
    return model, trainer


def test_adding_problem_lstm_learns_where_tanh_rnn_stays_at_the_baseline():
    task = engine.make_task("adding", seq_len=50, seed=0)
    assert task.preset.steps == 3000 and task.preset.train.lr == 3e-3
    _, lstm = train_preset(task)
    _, rnn = train_preset(task, arch="rnn")
    lstm_mse, _ = lstm.evaluate(2000)
    rnn_mse, rnn_r2 = rnn.evaluate(2000)
    assert lstm_mse < 0.01
    assert rnn_mse > 0.15 and abs(rnn_r2) < 0.05  # no better than always guessing 1.0 (MSE 1/6)
