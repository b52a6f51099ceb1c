"""The course's central results, trained for real on this CPU with each task's lesson preset.

These take tens of seconds each: they are the claims the app's lessons make, so they run in
the suite (marked `training`, selectable with -m training or -m "not training").

Each assertion is the claim as the lesson text states it (engine/tasks/*.py presets, app/session/
lessons.py): "below 0.01" is asserted as below 0.01, but "about 1.3 nats" or "stays at chance"
to the precision such words carry (`about`), never to the digits one torch build happened to give.
"""
import dataclasses

import pytest
import torch

import engine

pytestmark = pytest.mark.training


def about(value: float, stated: float, within: float) -> bool:
    """`value` is the `stated` figure to within a relative `within` either way."""
    return stated * (1 - within) < value < stated * (1 + within)


def chance(task) -> float:
    return 1 / task.spec.output_size


def train_preset(task, **model_changes):
    preset = task.preset
    cfg = dataclasses.replace(preset.model, **model_changes)
    model = engine.build_model(cfg, task, seed=preset.train.seed)
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
    assert lstm_mse < 0.01  # "drives the MSE below 0.01"
    # "stays at the 0.167 of always guessing 1.0": no better than that guess, in MSE and in R²
    # within 15%: on the avx512 kernel path the tanh RNN ended at 0.1836, 10.1% above (avx2: within 10%)
    assert about(rnn_mse, task.baseline_loss, 0.15) and abs(rnn_r2) < 0.15


def test_running_parity_is_learned_but_parity_with_one_final_target_is_not():
    running = engine.make_task("parity", seq_len=10, running=True)
    _, trainer = train_preset(running)
    assert trainer.evaluate(1000)[1] > 0.99  # "gets all 10 right"
    final = engine.make_task("parity", seq_len=10, running=False)
    _, trainer = train_preset(final)
    assert about(trainer.evaluate(1000)[1], chance(final), 0.2)  # "stays at chance"


def test_sine_forecast_preset_explains_the_variance():
    _, trainer = train_preset(engine.make_task("sine"))
    assert trainer.evaluate(500)[1] > 0.99  # "R² > 0.99"


def test_charlm_preset_learns_python_source():
    task = engine.make_task("charlm")
    _, trainer = train_preset(task)
    loss, accuracy = trainer.evaluate(64)
    # "from the 5.1 nats of guessing uniformly ... to about 1.3 nats (two in three next characters right)"
    assert about(task.baseline_loss, 5.1, 0.05)
    assert about(loss, 1.3, 0.25) and about(accuracy, 2 / 3, 0.2)


def test_sentiment_lstm_reads_word_order_that_a_bag_of_words_cannot():
    task = engine.make_task("sentiment")
    _, trainer = train_preset(task)
    lstm_accuracy = trainer.evaluate()[1]
    assert lstm_accuracy > 0.95  # "passes 95%"
    what, bag = task.baseline_metric  # the Build & Train page draws this line
    assert what == "bag of words" and about(bag, 0.66, 0.03)  # "about 66% of the held-out reviews"


def test_reverse_preset_encoder_decoder_gets_most_whole_sequences_right():
    task = engine.make_task("reverse")
    model, _ = train_preset(task)
    x, y = task.batch(500, torch.Generator().manual_seed(9))
    model.eval()
    with torch.no_grad():
        # "about 95% of whole sequences right", decoding greedily, no teacher
        assert about(task.sequence_accuracy(model(x), y), 0.95, 0.1)


def test_delayed_recall_lstm_remembers_across_50_steps_where_rnn_and_gru_do_not():
    task = engine.make_task("recall", lag=50)
    assert task.preset.model.forget_bias == 3.0
    assert chance(task) == 1 / task.symbols == 0.25  # "chance (25%)"
    _, lstm = train_preset(task)
    assert lstm.evaluate(1000)[1] > 0.95  # "names the signal every time"
    for arch in ("rnn", "gru"):
        _, trainer = train_preset(task, arch=arch, forget_bias=None)
        assert about(trainer.evaluate(1000)[1], chance(task), 0.4)  # "stay at chance (25%)"
    easy = engine.make_task("recall", lag=5)
    _, rnn = train_preset(easy, arch="rnn", forget_bias=None)
    assert rnn.evaluate(1000)[1] > 0.95  # "all three succeed"
