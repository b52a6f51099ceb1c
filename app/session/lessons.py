"""One-click lessons: a setup, the page to open, and what to do and look at there.

Every claim in a lesson's text was measured on a 2-core CPU with exactly these settings, and
tests/app/test_lessons.py asserts it (tests/engine/test_lessons.py trains the task presets they
start from).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import engine
from app.session.link import Setup, preset_setup


@dataclass(frozen=True)
class Lesson:
    key: str
    title: str
    setup: Setup
    page: str  # url_path of the page it opens
    steps: int  # train up to this many steps
    what_to_do: str


def variant(task: str, steps: int | None = None, task_params: dict | None = None, **model_changes) -> tuple[Setup, int]:
    base = preset_setup(task)
    setup = dataclasses.replace(
        base,
        model=dataclasses.replace(base.model, **model_changes),
        task_params={**base.task_params, **(task_params or {})},
    )
    return setup, steps or engine.TASKS[task].preset.steps


def lesson(key, title, page, what_to_do, task, **kwargs) -> Lesson:
    setup, steps = variant(task, **kwargs)
    return Lesson(key, title, setup, page, steps, what_to_do)


EXPLODING = dataclasses.replace(
    preset_setup("adding"),
    model=engine.ModelConfig(arch="rnn", activation="relu", hidden_size=64, init="identity"),
    train=engine.TrainConfig(optimizer="sgd", lr=0.01, batch_size=64, clip_norm=None),
)

LESSONS = [
    lesson(
        "rnn-forgets", "Why vanilla RNNs forget", "build",
        "A tanh RNN on the adding problem (T=50). Press Play: for 3000 steps the loss stays at "
        "0.167, the score of always guessing 1.0. Then set the cell to LSTM, press Reset and Play "
        "again: the loss falls below 0.01 within about 1000 steps.",
        "adding", arch="rnn",
    ),
    lesson(
        "vanishing", "Vanishing gradients, measured", "gradients",
        "A tanh RNN on the adding problem (T=50). Before training, the first step gets about 3e-11 of "
        "the gradient the last step gets. Press Play and watch the ratio over training: in 3000 "
        "steps the tanh RNN's stays below 1e-6 most of the time, and its spikes, late in training, "
        "never reach 1e-2. Set the cell to LSTM on Build & Train and play again: it starts at the "
        "same 3e-11 and, near step 750, learns to pass more than 1e-2.",
        "adding", arch="rnn",
    ),
    lesson(
        "recall-lag", "Why vanilla RNNs forget: one number, the lag", "build",
        "A tanh RNN must name the symbol it saw 50 steps ago. It stays at chance (25%) for all "
        "2000 steps. Set the lag to 5: it gets every one right within a few hundred steps.",
        "recall", arch="rnn", forget_bias=None,
    ),
    Lesson(
        "exploding", "Exploding gradients and clipping", EXPLODING, "build", 1000,
        "A ReLU RNN whose recurrence starts as the identity, trained by plain SGD at lr 0.01 with "
        "no clipping. Press Step twice: the first gradient has norm about 320, and the second step "
        "diverges. Reset, turn clipping on at 1.0, and it trains on.",
    ),
    lesson(
        "lstm-gates", "LSTM gates at work", "gates",
        "An LSTM whose forget gate starts open (bias 3) must name a symbol seen 50 steps ago. Press "
        "Play: within a few hundred steps it is right every time. Its most open forget gate stays "
        "above 0.95 at every step, carrying the cell across the 50 steps; but its input gate stays "
        "around 0.6, so it keeps writing the distractors in too: not the textbook's closed carousel.",
        "recall",
    ),
    lesson(
        "bidirectional", "What bidirectional buys you", "build",
        "The same tanh RNN that fails at lag 50, made bidirectional: its backward direction reads "
        "the signal last, so nothing has to be carried across 50 steps, and it scores 100% within "
        "2000 steps. Forward-only, it stays at chance.",
        "recall", arch="rnn", forget_bias=None, bidirectional=True,
    ),
    lesson(
        "attention-aligns", "Attention aligns", "attention",
        "An LSTM encoder-decoder with dot attention rewrites dates given in five formats as YYYY-MM-DD "
        "(Bahdanau et al. 2015 drew such alignments for translation). Press Play: by step 300 it writes "
        "every held-out character right, and the alignment shows where each output digit comes from: "
        "about 9 in 10 of the year's digits look hardest at that very digit of the source. Pick “none” "
        "as the score function and play again: after 300 steps it gets about 85% of the characters right.",
        "dates",
    ),
    lesson(
        "bottleneck", "The encoder-decoder bottleneck", "attention",
        "An encoder-decoder copies 20 symbols. With dot attention, press Play: after 400 steps it writes "
        "about 98% of the held-out symbols right, and its alignment is the diagonal (output step t looks "
        "at source token t). Pick “none” as the score function and play again: the whole source must "
        "pass through the encoder's last state, and after the same 400 steps about 30% are right.",
        "copy",
    ),
    lesson(
        "pointer-sorts", "A pointer network sorts", "attention",
        "A pointer network (Vinyals et al. 2015) answers with its attention over the input positions: "
        "here, the 5 input numbers from the smallest to the largest. Press Play: after 1500 steps it "
        "points right about 97% of the time on held-out lists, and its pointer matrix is a permutation "
        "matrix, one bright cell in each row.",
        "sort",
    ),
]

BY_KEY = {lesson.key: lesson for lesson in LESSONS}
