"""Held-out evaluation over training and early stopping, on the Lab, without a browser: the log
scores what Trainer.evaluate scores, the best step's weights come back exactly, a tiny review CSV
overfits where the page can see it, and setting changes are marked."""
import dataclasses

import numpy as np
import pytest
import torch

import engine
from app.session import heldout
from app.session.lab import Lab
from app.session.link import DEFAULT, preset_setup
from engine.rng import stream
from engine.tasks.reviews import REVIEWS_CSV

SMALL = dataclasses.replace(DEFAULT, model=dataclasses.replace(DEFAULT.model, hidden_size=16))


def tiny_reviews(n: int = 40) -> str:
    """The first n reviews of the shipped set as a CSV: 32 to train on, 8 held out."""
    return "\n".join(REVIEWS_CSV.read_text().splitlines()[: n + 1]) + "\n"


def weights(model) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


@pytest.mark.parametrize("setup, upload", [(SMALL, None), (preset_setup("sentiment"), tiny_reviews(1000)),
                                           (preset_setup("reverse"), None)],
                         ids=["adding", "sentiment (its whole test split)", "reverse (decoding freely)"])
def test_the_log_holds_what_trainer_evaluate_gives_at_step_0_and_every_25_steps(setup, upload):
    lab = Lab(setup, upload)
    expected = {0: lab.trainer.evaluate(lab.held_out.size)}
    for _ in range(2 * heldout.EVAL_EVERY):
        lab.advance()
        if lab.trainer.steps_done % heldout.EVAL_EVERY == 0:
            expected[lab.trainer.steps_done] = lab.trainer.evaluate(lab.held_out.size)
    log = lab.held_out.frame()
    assert list(log["step"]) == [0, 25, 50]
    assert [tuple(row) for row in log[["loss", "metric"]].to_numpy()] == [expected[s] for s in log["step"]]
    assert lab.model.training  # evaluating left the model in training mode
    assert lab.trainer.steps_done == 50  # evaluating took no training step
    if upload is not None:
        assert lab.held_out.size == len(lab.task.test_set()[1]) > 150  # every held-out review


def test_a_large_test_split_is_cut_to_the_evaluation_budget(monkeypatch):
    monkeypatch.setattr(heldout, "SAMPLE_STEPS", 40 * 50)  # sentiment reads 40 words: 50 reviews
    lab = Lab(preset_setup("sentiment"))
    x, y = lab.task.test_set()
    assert lab.held_out.size == 50 and len(y) > 50
    assert "50 of the task's" in lab.held_out.describe()
    loss, metric = heldout.score(lab.model, lab.task, x[:50], y[:50])
    assert tuple(lab.held_out.frame().iloc[0][["loss", "metric"]]) == (loss, metric)


def test_a_wide_output_layer_is_counted_in_the_evaluation_budget(monkeypatch):
    """A translator over 11,800 French words pays most of a step in its output layer: its held-out samples are cut
    by that width's multiple of OUTPUT_WIDTH (5 here), so an evaluation costs what a preset's does."""
    monkeypatch.setattr(heldout, "OUTPUT_WIDTH", 200)  # the small task's 1,123 French words: 5 times this
    task = engine.make_task("translate", seed=0)
    x, y, available, _ = heldout.held_out_set(task, seed=0)
    steps = max(task.source_len, task.spec.out_len)  # 12
    assert heldout.output_share(task) == 5 and len(y) == heldout.SAMPLE_STEPS // (steps * 5) == 170
    assert torch.equal(x, task.test_set()[0][:170]) and available == len(task.test_set()[1])


def test_the_best_step_is_the_lowest_held_out_loss_and_going_back_restores_its_weights_exactly():
    lab = Lab(SMALL)
    saved = {0: weights(lab.model)}
    for _ in range(4 * heldout.EVAL_EVERY):
        lab.advance()
        if lab.trainer.steps_done % heldout.EVAL_EVERY == 0:
            saved[lab.trainer.steps_done] = weights(lab.model)
    log, best = lab.held_out.frame(), lab.held_out.best
    assert best.loss == log["loss"].min() and best.step == log["step"][log["loss"].idxmin()]
    lab.playing = True
    lab.advance()  # off any evaluation step: the weights are not the best's
    assert not lab.held_out.at_best
    history = lab.trainer.history_frame()

    assert lab.restore_best() == best.step and not lab.playing
    for name, value in lab.model.state_dict().items():
        assert torch.equal(value, saved[best.step][name]), name
    assert lab.held_out.at_best
    assert lab.trainer.steps_done == 101 and lab.trainer.history_frame().equals(history)  # the history stays
    assert lab.marks == [(101, f"back to step {best.step}'s weights")]
    after = lab.held_out.frame().iloc[-1]
    assert after["step"] == 101 and after["loss"] == best.loss  # logged again where it happened
    assert lab.recording(0).main.hidden is not None  # recorded again from the restored weights
    lab.advance()
    assert not lab.held_out.at_best and lab.trainer.steps_done == 102  # training goes on from there


def test_going_back_records_the_restored_weights_not_the_cached_recording():
    lab = Lab(SMALL)
    for _ in range(30):
        lab.advance()
    before = lab.recording(0).main.hidden.clone()
    lab.restore_best()
    fresh = engine.record(lab.model, *lab.probes.samples, index=0).main.hidden
    assert torch.equal(lab.recording(0).main.hidden, fresh) and not torch.equal(fresh, before)


def test_a_tiny_review_csv_overfits_and_the_held_out_loss_shows_it():
    """32 reviews are learnt by heart within 100 steps: the training loss falls far below a coin
    toss's 0.69 while the held-out loss climbs above it, so the best step is the first one."""
    lab = Lab(preset_setup("sentiment"), tiny_reviews())
    assert (lab.held_out.size, len(lab.task.train_y)) == (8, 32)
    for _ in range(100):
        lab.advance()
    train = lab.trainer.history_frame()["loss"]
    held = lab.held_out.frame()
    assert train.iloc[-10:].mean() < 0.01 < 0.6 < train.iloc[:10].mean()
    assert held["loss"].iloc[-1] > 2 * np.log(2) > held["loss"].iloc[0]
    assert held["loss"].iloc[-1] > held["loss"].iloc[1]  # still rising after step 25
    assert lab.held_out.best.step == 0
    lab.restore_best()
    fresh = engine.build_model(lab.setup.model, lab.task, seed=lab.setup.train.seed)
    for name, value in fresh.state_dict().items():
        assert torch.equal(lab.model.state_dict()[name], value)


def test_the_log_and_the_marks_start_again_with_a_new_model():
    lab = Lab(SMALL)
    for _ in range(25):
        lab.advance()
    slower = dataclasses.replace(SMALL, train=dataclasses.replace(SMALL.train, lr=SMALL.train.lr / 10))
    assert lab.change(slower) == "retuned"
    assert len(lab.held_out.frame()) == 2 and lab.marks
    lab.reset()
    assert list(lab.held_out.frame()["step"]) == [0] and lab.marks == [] and lab.held_out.best.step == 0


def test_every_training_setting_change_is_marked_with_what_changed():
    lab = Lab(SMALL)
    for _ in range(3):
        lab.advance()
    slower = dataclasses.replace(SMALL, train=dataclasses.replace(SMALL.train, lr=0.0003))
    assert SMALL.train.lr == 0.003 and lab.change(slower) == "retuned"
    lab.advance()
    unclipped = dataclasses.replace(slower, train=dataclasses.replace(slower.train, clip_norm=None, batch_size=16))
    lab.change(unclipped)
    assert lab.change(unclipped) == "unchanged"
    assert lab.marks == [(3, "lr 0.003 → 0.0003"), (4, "batch_size 64 → 16, clip_norm 1 → none")]


def test_a_diverged_model_is_not_evaluated_again():
    setup = dataclasses.replace(SMALL, train=dataclasses.replace(SMALL.train, optimizer="sgd", lr=100.0,
                                                                 clip_norm=None))
    lab = Lab(setup)
    for _ in range(60):
        lab.advance()
    assert lab.trainer.diverged_at is not None and lab.trainer.diverged_at < 25
    assert list(lab.held_out.frame()["step"]) == [0]


def test_the_log_stays_bounded_and_keeps_step_0_and_the_latest():
    lab = Lab(dataclasses.replace(SMALL, task_params={"seq_len": 5}))
    lab.held_out.log.max_rows = 16
    for step in range(1, 101):
        lab.trainer.history.total = step  # stands for a training step: the log's bound is what is tested
        lab.held_out.measure()
    steps = list(lab.held_out.frame()["step"])
    assert len(steps) <= 16 and steps[0] == 0 and steps[-4:] == [97, 98, 99, 100]
    gaps = np.diff(steps)
    assert (gaps > 0).all() and (np.diff(gaps) <= 0).all()  # in order, denser towards the present


def test_going_back_to_the_best_step_after_a_divergence_trains_on():
    """The Trainer stayed stopped for good after a divergence, so the restored best weights could
    not be trained (Play disabled) and the pages still said the model diverged."""
    from app.session.lessons import BY_KEY

    lab = Lab(BY_KEY["exploding"].setup)
    with lab.lock:
        for _ in range(3):
            lab.advance()
    assert lab.trainer.diverged_at == 2
    lab.restore_best()
    assert lab.trainer.diverged_at is None
    before = lab.trainer.steps_done
    lab.step()
    assert lab.trainer.steps_done == before + 1 and lab.trainer.last.step == before + 1


# ---------------------------------------------------------------- a char LM's held-out text (issue 30)

SMALL_LM = dataclasses.replace(preset_setup("charlm"),
                               model=dataclasses.replace(preset_setup("charlm").model, hidden_size=16))


def char_lm(corpus: str, seq_len: int = 100):
    return dataclasses.replace(SMALL_LM, task_params={"seq_len": seq_len, "corpus": corpus})


def test_the_shakespeare_curve_scores_only_its_held_out_tenth_sampled_as_budgeted():
    """Every id the curve scores lies in Tiny Shakespeare's last 10%: the training text is marked
    with an id no character has, and none of it is scored. The budget is kept (SAMPLE_STEPS /
    seq_len distinct windows), and the log's first point is the model's score on them."""
    lab = Lab(char_lm("shakespeare"))
    task = lab.task
    assert lab.held_out.test_split and lab.held_out.size == heldout.budget(100) == 102
    marked = dataclasses.replace(task)  # the same text, whose training part is then marked
    marked.ids = task.ids.clone()
    marked.ids[: task.train_end] = 255  # [N]
    x, y, available, _ = heldout.held_out_set(marked, lab.setup.train.seed)
    assert (x != 255).all() and (y != 255).all()
    assert torch.equal(x, lab.held_out.x) and torch.equal(y, lab.held_out.y)  # the lab's, id for id
    assert len({tuple(row) for row in x.tolist()}) == 102 and available == len(task.ids) - task.train_end - 100
    assert "last 111,540 characters" in lab.held_out.describe() and "never trained on" in lab.held_out.describe()
    assert lab.held_out.frame()["loss"][0] == heldout.score(lab.model, task, x, y)[0]


def test_an_uploaded_texts_curve_scores_only_the_files_last_tenth():
    """The scored ids, read back as text, are windows of the file's last 10% and nowhere else in it
    (random letters: a 33-character window occurs once)."""
    rng = np.random.default_rng(0)
    text = "".join(rng.choice(list("abcdefghijklmnopqrstuvwxyz .\n"), 5_000))
    lab = Lab(char_lm("python", seq_len=32), text.encode("utf-8"))
    tail = text[int(len(text) * 0.9) :]  # 500 characters
    assert lab.task.train_end == 4_500 and lab.held_out.size == heldout.budget(32) == 320
    x, y = lab.held_out.x, lab.held_out.y
    assert torch.equal(x[:, 1:], y[:, :-1])
    windows = [lab.task.decode(torch.cat([a, b[-1:]])) for a, b in zip(x, y)]
    assert all(w in tail and text.find(w) >= 4_500 for w in windows)
    assert len(set(windows)) == 320  # distinct windows, of the 500 - 32 = 468 it has
    assert "every one" not in lab.held_out.describe() and "of the 468 it has" in lab.held_out.describe()


def test_the_python_corpus_curve_still_scores_trainer_evaluates_batch_of_its_training_text():
    """The Python corpus holds nothing out in the lab (its checkpoints' cards hold out glob.py), so
    the curve scores the seed's "held_out" batch of windows of the text it trains on, and says so."""
    lab = Lab(char_lm("python"))
    assert not lab.held_out.test_split and not lab.task.holds_out
    x, y = lab.task.batch(lab.held_out.size, stream(lab.setup.train.seed, "held_out"))
    assert torch.equal(lab.held_out.x, x) and torch.equal(lab.held_out.y, y)
    assert "windows of the same text" in lab.held_out.describe()
