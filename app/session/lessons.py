"""One-click lessons: a setup, the page to open, and what to do and look at there.

Every claim in a lesson's text was measured on a 2-core CPU with exactly these settings, and
tests/app/test_lessons.py asserts it (tests/engine/test_lessons.py trains the task presets they
start from).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import engine
from app.session import memory_span
from app.session.link import Setup, preset_setup
from app.session.transfer import LESSON_NETWORK, LESSON_RECIPE, setup_of
from app.session.transformers import LEARNED_REVERSAL, WIDE_REVERSAL


@dataclass(frozen=True)
class Lesson:
    key: str
    title: str
    setup: Setup
    page: str  # url_path of the page it opens
    steps: int  # train up to this many steps
    what_to_do: str
    published: str  # the result in the literature it reproduces
    compare_kind: str = "cells"  # on Compare cells: what the runs differ in (comparison.KINDS)


def variant(task: str, steps: int | None = None, task_params: dict | None = None, **model_changes) -> tuple[Setup, int]:
    base = preset_setup(task)
    setup = dataclasses.replace(
        base,
        model=dataclasses.replace(base.model, **model_changes),
        task_params={**base.task_params, **(task_params or {})},
    )
    return setup, steps or engine.TASKS[task].preset.steps


def lesson(key, title, page, what_to_do, published, task, compare_kind="cells", **kwargs) -> Lesson:
    setup, steps = variant(task, **kwargs)
    return Lesson(key, title, setup, page, steps, what_to_do, published, compare_kind)


# The cells of the memory-span measurement (benchmarks/memory_span.py's CELLS) in a sentence.
SPAN_CELLS = {"tanh RNN": "a tanh RNN", "GRU": "a GRU", "LSTM": "an LSTM as PyTorch starts it",
              "LSTM, forget bias 3": "an LSTM whose forget gate starts open (bias 3)"}


def memory_spans() -> str:
    """The longest lag each cell learns within the recall-lag lesson's budget, as measured once
    (app/data/memory_span.json, re-measured in tests/engine/test_memory_span.py), in a sentence."""
    settings = memory_span.shipped()[1]["settings"]
    longest = max(settings["lags"])

    def reach(lag: int | None) -> str:
        if lag is None:
            return f"none (not even {min(settings['lags'])})"
        return f"{lag} (every lag measured)" if lag == longest else f"{lag}"

    cells = [f"{reach(lag)} for {SPAN_CELLS[cell]}" for cell, lag in memory_span.shipped_spans().items()]
    return (f"Open 'Short-term memory, measured' under the curves: with this budget, the longest lag all "
            f"{len(settings['seeds'])} seeds learned is {', '.join(cells[:-1])} and {cells[-1]}; single seeds reach "
            "further or fail sooner (each lag's range is drawn).")


EXPLODING = dataclasses.replace(
    preset_setup("adding"),
    model=engine.ModelConfig(arch="rnn", activation="relu", hidden_size=64, init="identity"),
    train=engine.TrainConfig(optimizer="sgd", lr=0.01, batch_size=64, clip_norm=None),
)

# Echo state networks on delayed recall at lag 30: the read-out alone trains, so a higher rate.
RESERVOIRS = dataclasses.replace(
    preset_setup("recall"),
    task_params={**preset_setup("recall").task_params, "lag": 30},
    model=engine.ModelConfig(arch="rnn", hidden_size=64),
    train=dataclasses.replace(preset_setup("recall").train, lr=0.01),
)

LESSONS = [
    lesson(
        "rnn-forgets", "Why vanilla RNNs forget", "build",
        "A tanh RNN on the adding problem (T=50). Press Play: for 3000 steps the loss stays at "
        "0.167, the score of always guessing 1.0. Then set the cell to LSTM, press Reset and Play "
        "again: the loss falls below 0.01 within about 1000 steps.",
        "Hochreiter & Schmidhuber 1997: on the adding problem, networks trained by backpropagation through time "
        "fail at long lags where an LSTM succeeds",
        "adding", arch="rnn",
    ),
    lesson(
        "vanishing", "Vanishing gradients, measured", "gradients",
        "A tanh RNN on the adding problem (T=50). Before training, the first step gets about 3e-11 of "
        "the gradient the last step gets. Press Play and watch the ratio over training: in 3000 "
        "steps the tanh RNN's stays below 1e-6 most of the time, and its spikes, late in training, "
        "never reach 1e-2. Set the cell to LSTM on Build & Train and play again: it starts at the "
        "same 3e-11 and, near step 750, learns to pass more than 1e-2.",
        "Bengio, Simard & Frasconi 1994; Pascanu, Mikolov & Bengio 2013: the gradient a tanh RNN sends back "
        "shrinks exponentially with the distance",
        "adding", arch="rnn",
    ),
    lesson(
        "spectral-radius", "The spectral radius decides", "gradients",
        "Open 'The spectral radius, swept' under the gradient curves and move ρ from 0.8 to 1.2: fresh RNNs on "
        "the adding problem (T = 50) whose W_hh is orthogonal × ρ, so its largest singular value σ_max is ρ. A "
        "linear RNN's first step gets exactly ρ^49 of the last step's gradient: about 2e-5 at ρ = 0.8, 1 at "
        "1.0, 8e3 at 1.2. A tanh RNN's gets about 5e-6, 0.1 and 6.5: below 1 it must vanish; above 1 its "
        "saturating units hold the explosion back, since σ_max > 1 is necessary for exploding, not enough. "
        "Switch the start to PyTorch's default draw scaled to ρ: its σ_max is about 1.8ρ, so neither condition "
        "decides anywhere on the slider.",
        "Pascanu, Mikolov & Bengio 2013: with |φ'| ≤ γ (γ = 1 for tanh), σ_max(W_hh) < 1/γ is sufficient for "
        "the gradient to vanish, and σ_max > 1/γ is necessary for it to explode",
        "adding", arch="rnn",
    ),
    lesson(
        "recall-lag", "Why vanilla RNNs forget: one number, the lag", "build",
        "A tanh RNN must name the symbol it saw 50 steps ago. It stays at chance (25%) for all "
        "2000 steps. Set the lag to 5: it gets every one right within a few hundred steps. " + memory_spans(),
        "Bengio, Simard & Frasconi 1994: a simple recurrent network's memory of an input fades with the lag",
        "recall", arch="rnn", forget_bias=None,
    ),
    Lesson(
        "exploding", "Exploding gradients and clipping", EXPLODING, "build", 1000,
        "A ReLU RNN whose recurrence starts as the identity, trained by plain SGD at lr 0.01 with "
        "no clipping. Press Step twice: the first gradient has norm about 320, and the second step "
        "diverges. Reset, turn clipping on at 1.0, and it trains on.",
        "Pascanu, Mikolov & Bengio 2013: exploding gradients, and clipping the gradient's norm to keep training",
    ),
    lesson(
        "lstm-gates", "LSTM gates at work", "gates",
        "An LSTM whose forget gate starts open (bias 3) must name a symbol seen 50 steps ago. Press "
        "Play: within a few hundred steps it is right every time. Its most open forget gate stays "
        "above 0.95 at every step, carrying the cell across the 50 steps; but its input gate stays "
        "around 0.6, so it keeps writing the distractors in too: not the textbook's closed carousel.",
        "Hochreiter & Schmidhuber 1997's constant error carousel, with the forget gate of Gers, Schmidhuber & "
        "Cummins 2000",
        "recall",
    ),
    lesson(
        "gru-update-gate", "GRU: the update gate keeps the sum", "gates",
        "A GRU on the adding problem at T=150, three times the length at which a tanh RNN already fails. Press "
        "Play: near step 600 its loss leaves 0.167, and by step 1000 it is below 0.01. In the z_t panel (h_t = z_t "
        "h_{t−1} + (1 − z_t) n_t) the two marked steps are dark columns, as is the first: there the GRU writes into "
        "h_t. From the first mark to the end, about a third of the 64 units keep z_t near 1: about 0.95 at the "
        "unmarked steps, about 0.75 at the marks. Near 1 is not 1: multiplied over the 71 steps between the marks, "
        "their z_t would keep only a few percent of a number; the candidate n_t, which reads h_{t−1} through r_t, "
        "carries the rest, and on Gradients ‖∂L/∂h_t‖ at the first mark is about as large as at the last step. On "
        "Build & Train set the cell to LSTM, press Reset and Play: with PyTorch's default initialisation it stays "
        "at 0.167 for all 1500 steps, and so does a tanh RNN.",
        "Cho et al. 2014 introduced the gated unit now called the GRU: its update gate decides how much of h_{t−1} "
        "carries over, and units that capture long-term dependencies keep it mostly active; Chung et al. 2014: GRUs "
        "and LSTMs both beat tanh units on music and speech modelling (the adding problem is Hochreiter & "
        "Schmidhuber 1997's)",
        "adding", steps=1500, task_params={"seq_len": 150}, arch="gru",
    ),
    lesson(
        "bidirectional", "What bidirectional buys you", "build",
        "The same tanh RNN that fails at lag 50, made bidirectional: its backward direction reads "
        "the signal last, so nothing has to be carried across 50 steps, and it scores 100% within "
        "2000 steps. Forward-only, it stays at chance.",
        "Schuster & Paliwal 1997: a bidirectional RNN reads every position's past and future",
        "recall", arch="rnn", forget_bias=None, bidirectional=True,
    ),
    lesson(
        "attention-aligns", "Attention aligns", "attention",
        "An LSTM encoder-decoder with dot attention rewrites dates given in five formats as YYYY-MM-DD "
        "(Bahdanau et al. 2015 drew such alignments for translation). Press Play: by step 300 it writes "
        "every held-out character right, and the alignment shows where each output digit comes from: "
        "about 9 in 10 of the year's digits look hardest at that very digit of the source. Pick “none” "
        "as the score function and play again: after 300 steps it gets about 85% of the characters right.",
        "Bahdanau, Cho & Bengio 2015, Figure 3: the alignments a trained attention draws, which follow the "
        "words a translator would match",
        "dates",
    ),
    lesson(
        "bottleneck", "The encoder-decoder bottleneck", "attention",
        "An encoder-decoder copies 20 symbols. With dot attention, press Play: after 400 steps it writes "
        "about 98% of the held-out symbols right, and its alignment is the diagonal (output step t looks "
        "at source token t). Pick “none” as the score function and play again: the whole source must "
        "pass through the encoder's last state, and after the same 400 steps about 30% are right.",
        "Cho et al. 2014; Bahdanau, Cho & Bengio 2015, Figure 2: without attention, an encoder-decoder's score "
        "falls as the source grows longer; with it, it holds",
        "copy",
    ),
    lesson(
        "pointer-sorts", "A pointer network sorts", "attention",
        "A pointer network (Vinyals et al. 2015) answers with its attention over the input positions: "
        "here, the 5 input numbers from the smallest to the largest. Press Play: after 1500 steps it "
        "points right about 97% of the time on held-out lists, and its pointer matrix is a permutation "
        "matrix, one bright cell in each row.",
        "Vinyals, Fortunato & Jaitly 2015: a pointer network answers with positions of its input; Vinyals, "
        "Bengio & Kudlur 2016 sort numbers with one",
        "sort",
    ),

    lesson(
        "initialisation", "Initialisation decides: the IRNN", "compare",
        "A ReLU RNN on the adding problem at T = 100 trains from three starts of its recurrent weights, on the "
        "same batches: PyTorch's default, orthogonal W_hh, and the identity with zero biases (IRNN). Press Play: "
        "the IRNN leaves the dashed baseline (0.167, always guessing 1.0) within 300 steps and is near 0.004 by "
        "step 1500, with brief spikes up to about 0.1 before then; from its first step between about 0.13 and "
        "1.4 of the gradient reaching the last step reaches the first. Orthogonal W_hh stays near the baseline "
        "(above 0.15) until about step 1375 and is near 0.12 by step 1500, as the share reaching its first step climbs "
        "from below 1e-10 to about 1e-2. PyTorch's default stays near it all 1500 steps (0.14 to 0.21), with "
        "less than 1e-10 of the gradient reaching the first step.",
        "Le, Jaitly & Hinton 2015: ReLU RNNs started at the identity (IRNN) solve the adding problem at lengths "
        "where other RNNs fail; Henaff, Szlam & LeCun 2016: orthogonal recurrent weights keep ‖W_hh h‖ = ‖h‖",
        "adding", compare_kind="initialisations", steps=1500, task_params={"seq_len": 100}, arch="rnn",
        activation="relu",
    ),
    lesson(
        "layer-norm", "Layer normalisation and zoneout", "compare",
        "The tanh RNN of 'Why vanilla RNNs forget' (the adding problem, T = 50) trains four times from the same "
        "start on the same batches: as it is, with layer normalisation, with zoneout 0.5, and with both. Before "
        "training, the share of the gradient reaching the first step is about 3e-11 as it is, about 7e-6 with "
        "layer normalisation and about 3e-7 with zoneout. Press Play: with layer normalisation the held-out loss "
        "leaves the dashed baseline near step 450 and is near 0.06 by step 1500; with both, it dips near step 475 "
        "and leaves the baseline for good after step 1000 (near 0.08 by step 1500); as it is, and with zoneout "
        "alone, it reaches the baseline within 25 steps and stays there (0.17 to 0.21) all 1500. Keeping each "
        "unit's previous value with probability 0.5 lets more gradient through, yet not enough here: the course "
        "lists zoneout among the regularisers, the dropout an RNN can use; normalising the sums is what lets this "
        "RNN train.",
        "Ba, Kiros & Hinton 2016: layer normalisation stabilises an RNN's hidden dynamics and shortens its "
        "training; Krueger et al. 2017: zoneout, which keeps units' previous values at random, regularises RNNs "
        "and lets gradient flow further back",
        "adding", compare_kind="normalisation", steps=1500, arch="rnn", forget_bias=None,
    ),
    Lesson(
        "echo-state", "Echo state networks: the spectral radius decides", RESERVOIRS, "compare", 500,
        "Five echo state networks name the symbol seen 30 steps ago: tanh RNNs of 64 units whose recurrent "
        "weights are drawn once, scaled to spectral radius ρ = 0.9, 1.2, 1.5, 2 and 3, and never trained; only "
        "the read-out (the head) learns. Press Play: by step 500, of the 330 held-out sequences, ρ = 0.9 names "
        "about 27% (chance is 25%: its state has forgotten the symbol), 1.2 about 49%, 1.5 about 70%, 2 about "
        "74%, and 3 falls back to about 40%. The gradient reaching the first step shows why: at ρ = 0.9 it is "
        "below a twentieth of the last step's all through; at 1.5 and 2, 2 to about 130 times the last step's, the "
        "symbol still echoing; at 3, over a thousand times: the reservoir is chaotic, and a small change at the "
        "first step changes every state after it, drowning the symbol.",
        "Jaeger 2001: an echo state network trains only the read-out of a fixed random reservoir, whose spectral "
        "radius sets how long its state echoes the input; Bertschinger & Natschläger 2004: reservoirs compute "
        "best near the edge of chaos",
        compare_kind="reservoirs",
    ),
    Lesson(
        "why-sqrt-dk", "Why divide by √d_k", WIDE_REVERSAL, "scaling", 150,
        "A transformer with one wide head (d_k = 256) learns to reverse 10 symbols twice from the same "
        "start: once dividing its attention scores by √256 = 16, once not. Press Play: by step 50 the "
        "first writes about 98% of the held-out symbols right and the second about 27%. Undivided, its "
        "attention rows are nearly one-hot from the first step (entropy about 0.05 nats at step 50, where "
        "rows spread evenly over the keys they see would average 2.06), and at step 25 the gradient reaching its "
        "scores is about 25 times smaller. Where it stands by step 150 is chaos, not progress: with its softmax "
        "saturated, its training follows the CPU's rounding, and one thread or two, the fused attention kernel "
        "or the written-out one, gave from 31% to 90% here.",
        "Vaswani et al. 2017, §3.2.1: q·k has variance d_k, and large scores push the softmax into regions "
        "of extremely small gradients; hence the 1/√d_k",
    ),
    Lesson(
        "positions", "Positional encoding: where each token is", LEARNED_REVERSAL, "positions", 400,
        "A transformer that learns one vector per position (as BERT and GPT do) reverses 8 symbols. Press "
        "Play: by step 100 it reverses every held-out sequence, while its table has moved only about 5% "
        "from its random start. On Build & Train set Positions to sinusoidal and play again: about 99.6% of "
        "the symbols right by step 100. Set Positions to none: after 400 steps about 31% are right. "
        "Self-attention alone sees which symbols the source holds, not in which order.",
        "Vaswani et al. 2017, Table 3 (E): learned positions instead of the sinusoid give nearly identical "
        "results (25.7 against 25.8 BLEU)",
    ),
    Lesson(
        "transfer", "Transfer learning: reuse a language model", setup_of(LESSON_RECIPE, LESSON_NETWORK), "transfer",
        400,
        "A char-LSTM that only learnt to predict the next character of the reviews' text (no labels) lends its "
        "embedding and its LSTM layer to a sentiment reader, under a new LSTM layer and a new head. The reused "
        "parts stay frozen, their gradient exactly 0, until step 100; then the reused layer trains at a tenth of "
        "the rate. Press Play: by step 100, training only the new layer and head, it gets about 76% of the 390 "
        "held-out reviews right where the same network from scratch gets about 60%; by step 400, 94 to 97% (as the"
        " CPU's kernels round) against about 81%. Then set Pretrained on to the char-LSTM on Python source and "
        "train with that recipe: frozen, its features are no better than a coin toss (about 52% at step 100), and"
        " by step 400 it is level with training from scratch (about 81%). The more alike the data, the more a "
        "reused layer gives.",
        "Dai & Le 2015: LSTMs first trained as language models on unlabelled text, then fine-tuned, classify IMDB "
        "reviews better than from a random start (7.24% error, their best); Howard & Ruder 2018 (ULMFiT) unfreeze "
        "from the top down at lower learning rates",
    ),
]

BY_KEY = {lesson.key: lesson for lesson in LESSONS}

# The course's learning objectives, in its order (the GWU lecture's "expected" list, then its
# "recommended" one), each with the lessons that serve it: Home groups the lessons so.
OBJECTIVES = {
    "Short-term RNNs": ("rnn-forgets", "recall-lag"),
    "LSTM": ("lstm-gates",),
    "GRU": ("gru-update-gate",),
    "Encoder-decoder networks": ("bottleneck", "pointer-sorts"),
    "Bidirectional RNNs": ("bidirectional",),
    "Attention": ("attention-aligns",),
    "Transformer": ("why-sqrt-dk", "positions"),
    "Good practices for building and training RNNs": ("exploding", "initialisation", "layer-norm", "echo-state"),
    "Transfer learning": ("transfer",),
    "Backpropagation through time (recommended)": ("vanishing", "spectral-radius"),
}


def by_objective() -> list[tuple[str, list[Lesson]]]:
    """(objective, its lessons) in the course's order."""
    return [(objective, [BY_KEY[key] for key in keys]) for objective, keys in OBJECTIVES.items()]

