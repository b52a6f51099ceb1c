"""Each lesson's own claims, trained for real with exactly its setup (the task presets they start
from are trained in tests/engine/test_lessons.py)."""
import dataclasses

import pytest

from app.session.lab import Lab
from app.session.lessons import BY_KEY

pytestmark = pytest.mark.training


def test_exploding_first_gradient_near_320_then_diverges_and_clipping_trains_on():
    lab = Lab(BY_KEY["exploding"].setup)
    first = lab.trainer.step(1)[0]
    assert 300 < first.grad_norm < 340 and not first.diverged
    lab.trainer.step(1)
    assert lab.trainer.diverged_at == 2
    setup = BY_KEY["exploding"].setup
    clipped = Lab(dataclasses.replace(setup, train=dataclasses.replace(setup.train, clip_norm=1.0)))
    clipped.trainer.step(BY_KEY["exploding"].steps)
    assert clipped.trainer.diverged_at is None


def test_rnn_forgets_then_an_lstm_gets_below_001_within_about_1000_steps():
    setup = BY_KEY["rnn-forgets"].setup
    lstm = Lab(dataclasses.replace(setup, model=dataclasses.replace(setup.model, arch="lstm")))
    lstm.trainer.step(1200)
    assert lstm.trainer.evaluate(1000)[0] < 0.01


def test_bidirectional_tanh_rnn_recalls_across_50_steps():
    lesson = BY_KEY["bidirectional"]
    lab = Lab(lesson.setup)
    lab.trainer.step(lesson.steps)
    assert lab.trainer.evaluate(1000)[1] > 0.95


def test_vanishing_ratio_starts_near_3e_11_and_only_the_lstm_learns_to_pass_gradient():
    setup = BY_KEY["vanishing"].setup
    ratios = {}
    for arch in ("rnn", "lstm"):
        lab = Lab(dataclasses.replace(setup, model=dataclasses.replace(setup.model, arch=arch)))
        start = lab.probes.log_frame().ratio.iloc[0]
        assert 1e-11 < start < 1e-10
        with lab.lock:
            for _ in range(BY_KEY["vanishing"].steps):
                lab.advance()
        ratios[arch] = lab.probes.log_frame().ratio.iloc[-1]
    assert ratios["rnn"] < 1e-3 < 1e-2 < ratios["lstm"]


def test_lstm_gates_lesson_forget_gate_stays_open_and_input_gate_does_not_close():
    lab = Lab(BY_KEY["lstm-gates"].setup)
    with lab.lock:
        for _ in range(300):
            lab.advance()
    assert lab.trainer.evaluate(1000)[1] > 0.95
    rec = lab.recording(0)
    f, i = rec.gates["f"][0, 0], rec.gates["i"][0, 0]  # [T, H]
    unit = int(f.mean(dim=0).argmax())
    assert f[:, unit].min() > 0.95
    assert 0.5 < i[1:, unit].mean() < 0.9
