"""What each shipped checkpoint is scored on: data kept apart from what it trained on, and the
metrics its card states.

- charlm: the corpus's last file, glob.py, is held out. The build trains on the six files before
  it (`CorpusHead`, the task with the whole corpus's vocabulary), and the card scores every
  window of glob.py. Next-character accuracy alone hides what the lesson is about, so the card
  also scores the closing brackets and the depth of each line's indentation.
- charlm on the reviews' text: the reviews the char-level sentiment task holds out (seed 0), whose
  text the corpus leaves out.
- charlm on Tiny Shakespeare: the last 10% of the file, which the task itself never trains on
  (nanoGPT's validation split; engine/tasks/charlm.py, TRAIN_SHARE), every window end to end.
- sentiment: the task's own held-out split (20% of the distinct reviews, set apart by its seed).
- dates: dates drawn from the seed's "held_out" stream, apart from the training batches. The task
  has no split: some of its 182,625 (date, format) pairs occur in training too.
- masked_lm and word_lm: the prose's last 10%, which neither task trains on, every window of it end
  to end; the masked task's words chosen and masked by one fixed generator (seed 0), so the card's
  masked words are the same each build. A fresh draw is FRESH_WINDOWS random windows of it, masked
  by the draw's generator.
- translate: the task's held-out split (10% of the distinct English sentences, set apart by its
  seed, with all their translations); besides loss and accuracy the card gives corpus BLEU, greedy
  and with a beam of 3, every translation of a sentence a reference (engine/bleu.py). A fresh draw
  is a random half of those pairs.

`held_out` gives the card's data, the same every time; `fresh` draws new samples of the same kind
(another seed), on which a test checks that the card's figures hold.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

import engine
from engine.bleu import GREEDY_CHUNK, LENGTHS, corpus_bleu, length_groups, translate
from engine.losses import IGNORE
from engine.rng import stream
from engine.tasks.char_sentiment import CharSentimentTask
from engine.tasks.charlm import CharLMTask
from engine.tasks.masked_lm import HELD_OUT_MASK_SEED
from engine.tasks.reviews import generate_reviews
from engine.tasks.sentiment import CLASS_NAMES
from engine.tasks.text import charlm_corpus

HELD_OUT_FILE = "glob.py"
HELD_OUT_FIRST_LINE = '"""Filename globbing utility."""'  # where glob.py starts in the corpus
CLOSING = ")]}"
FRESH_WINDOWS = 256  # charlm: random windows of held-out text a fresh draw scores (each of glob.py's about 3 times)
FRESH_REVIEWS = 2000  # sentiment: generated before dropping those trained on
DATES = 2000
PROSE_WORDS = ("masked_lm", "word_lm")  # the BERT and GPT tasks on the prose's words
SCORED_WINDOWS = 128  # prose windows scored at once: 128 x 32 words x 4,000 logits are 65 MB
BEAMS = {"greedy": 1, "beam 3": 3}  # the translator card's BLEU: decoded greedily and by a beam of this width
# The translator card's BLEU by English sentence length (engine.bleu.LENGTHS), and on the sentences of 1-10 words,
# the lengths the published figures on Tatoeba's pairs are mostly measured on.
BY_LENGTH = LENGTHS
SHORT = (1, 10)


# What each figure of a card means, by task.
METRICS = {
    "charlm": {
        "loss": "cross-entropy, nats per character",
        "accuracy": "next characters predicted right (the most probable one)",
        "closing bracket accuracy": "the `)`, `]` and `}` predicted right",
        "indentation depth accuracy": "lines (begun inside a window) whose leading spaces are all predicted as "
                                      "spaces and whose first other character is predicted not to be one",
    },
    "sentiment": {"loss": "cross-entropy, nats per review", "accuracy": "reviews classified right"},
    "translate": {
        "loss": "cross-entropy, nats per target word, decoding greedily",
        "accuracy": "target words right at their position (to </s>), decoding greedily",
        "BLEU, greedy": "corpus BLEU (sacrebleu, 0-100) of the greedy translations of the held-out English sentences, "
                        "every translation of a sentence a reference",
        "BLEU, beam 3": "the same with beam search of width 3",
        **{f"BLEU, {how}, {low}-{high} words": f"the same, {how}, on the held-out English sentences of {low} to {high} "
                                                "words (punctuation not counted)"
           for how in ("greedy", "beam 3") for low, high in (SHORT, *BY_LENGTH)},
    },
    "masked_lm": {
        "loss": "cross-entropy, nats per chosen word (BERT's 15%: 80% read <mask>, 10% a random word, 10% "
                "themselves)",
        "accuracy": "chosen words predicted right (the most probable word), reading both sides",
    },
    "word_lm": {
        "loss": "cross-entropy, nats per next word (next words outside the vocabulary not scored)",
        "accuracy": "next words predicted right (the most probable word), reading the words before only",
    },
    "dates": {
        "loss": "cross-entropy, nats per output character, decoding greedily",
        "accuracy": "output characters right (the 10 of YYYY-MM-DD and <eos>), decoding greedily",
        "sequence accuracy": "dates written entirely right, decoding greedily",
    },
}


def held_out_start() -> int:
    """The corpus position where the held-out file begins."""
    return charlm_corpus().index(HELD_OUT_FIRST_LINE)


@dataclass
class CorpusHead(CharLMTask):
    """The charlm task on the shipped corpus, drawing its training windows only from the files
    before the held-out one. Its vocabulary (and so its spec) is the whole corpus's, so the model
    opens on the app's charlm task as it is."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.text is not None:
            raise ValueError("CorpusHead holds out a file of the shipped corpus; it takes no text")
        self.train_end = held_out_start()


@dataclass(frozen=True)
class Samples:
    x: Tensor
    y: Tensor
    description: str  # which data, how many samples: the card quotes it


def held_out(task: engine.Task, seed: int) -> Samples:
    """The card's held-out data for a checkpoint trained on `task` with `seed`."""
    if task.spec.name == "charlm" and task.corpus == "reviews":
        return review_windows(task)
    if task.spec.name == "charlm" and task.corpus == "shakespeare":
        return tail_windows(task)
    if task.spec.name == "charlm":
        return glob_windows(task.seq_len)
    if task.spec.name in PROSE_WORDS:
        return prose_windows(task)
    if task.spec.name == "translate":
        x, y = task.test_set()
        return Samples(x, y, f"the task's held-out split: {len(y):,} pairs, {len(task.references):,} English sentences "
                             f"set apart by seed {seed} with all their translations, never trained on")
    if task.spec.name == "sentiment":
        x, y = task.test_set()
        return Samples(x, y, f"the task's held-out split: {len(y):,} distinct reviews set apart by seed {seed}, "
                             "never trained on")
    x, y = task.batch(DATES, stream(seed, "held_out"))
    return Samples(x, y, f"{DATES:,} dates from the seed's 'held_out' stream (apart from the training batches; "
                         "the task has no split, so some also occurred in training), decoded greedily")


def fresh(task: engine.Task, seed: int) -> Samples:
    """New held-out samples of the card's kind, drawn with `seed` (pick one the card's did not use)."""
    generator = torch.Generator().manual_seed(seed)
    if task.spec.name == "charlm" and task.corpus == "reviews":
        return review_windows(task, generator)
    if task.spec.name == "charlm" and task.corpus == "shakespeare":
        return tail_windows(task, generator)
    if task.spec.name == "charlm":
        return glob_windows(task.seq_len, generator)
    if task.spec.name in PROSE_WORDS:
        return prose_windows(task, generator)
    if task.spec.name == "translate":
        x, y = task.test_set()
        half = torch.randperm(len(y), generator=generator)[: len(y) // 2]  # [N / 2]
        return Samples(x[half], y[half], f"{len(half):,} of the held-out pairs drawn with generator seed {seed}")
    if task.spec.name == "sentiment":
        return fresh_reviews(task, seed)
    x, y = task.batch(DATES, generator)
    return Samples(x, y, f"{DATES:,} dates drawn with generator seed {seed}")


def glob_windows(seq_len: int, generator: torch.Generator | None = None) -> Samples:
    """Windows of the held-out file (x, and y the next characters): every window of seq_len
    characters end to end, or FRESH_WINDOWS at random starts drawn from `generator`."""
    ids = CharLMTask().ids  # [N] the shipped corpus
    first, last = held_out_start(), len(ids) - seq_len - 1  # the first and last possible window starts
    if generator is None:
        starts = torch.arange(first, last + 1, seq_len)  # [N]
        what = f"every {seq_len}-character window of {HELD_OUT_FILE} end to end"
    else:
        starts = torch.randint(first, last + 1, (FRESH_WINDOWS,), generator=generator)  # [N]
        what = f"{FRESH_WINDOWS} random {seq_len}-character windows of {HELD_OUT_FILE}"
    window = starts[:, None] + torch.arange(seq_len + 1)  # [N, T+1]
    chunk = ids[window].long()  # [N, T+1]
    return Samples(chunk[:, :-1], chunk[:, 1:], f"{what} ({len(starts)} windows, {chunk[:, 1:].numel():,} next "
                   f"characters), the corpus's last file, never trained on")


def tail_windows(task: engine.Task, generator: torch.Generator | None = None) -> Samples:
    """Windows of the text a char-LM task holds out at its end (from task.train_end on, the task's
    own held_out_windows): every window of seq_len characters end to end, or FRESH_WINDOWS distinct
    random starts drawn from `generator`."""
    tail = f"the corpus's last {len(task.ids) - task.train_end:,} characters"
    if generator is None:
        x, y = task.held_out_windows()
        what = f"every {task.seq_len}-character window of {tail} end to end"
    else:
        x, y = task.held_out_windows(FRESH_WINDOWS, generator)
        what = f"{len(y)} random {task.seq_len}-character windows of {tail}"
    return Samples(x, y, f"{what} ({len(y)} windows, {y.numel():,} next characters), the share the task holds "
                   "out and never trains on")


def review_windows(task: engine.Task, generator: torch.Generator | None = None) -> Samples:
    """Windows of the held-out reviews' text, one review per line, read with the task's vocabulary:
    every window end to end, or FRESH_WINDOWS at random starts drawn from `generator`."""
    held = CharSentimentTask(seed=0)  # the split the reviews corpus left out
    text = "\n".join(held.decode(row) for row in held.test_x)
    ids = task.encode(text)  # [N]
    last = len(ids) - task.seq_len - 1
    if generator is None:
        starts = torch.arange(0, last + 1, task.seq_len)  # [W]
        what = f"every {task.seq_len}-character window of the held-out reviews' text end to end"
    else:
        starts = torch.randint(0, last + 1, (FRESH_WINDOWS,), generator=generator)  # [W]
        what = f"{FRESH_WINDOWS} random {task.seq_len}-character windows of the held-out reviews' text"
    chunk = ids[starts[:, None] + torch.arange(task.seq_len + 1)]  # [W, T+1]
    return Samples(chunk[:, :-1], chunk[:, 1:], f"{what} ({len(starts)} windows, {chunk[:, 1:].numel():,} next "
                   f"characters): the {len(held.test_y)} reviews the char-level sentiment task holds out with seed "
                   "0, never trained on")


def prose_windows(task: engine.Task, generator: torch.Generator | None = None) -> Samples:
    """Windows of the prose's held-out 10% (x, and y the masked or next words): every window end to
    end, masked by a generator of seed HELD_OUT_MASK_SEED, or FRESH_WINDOWS at random starts,
    masked by `generator`."""
    every = task.held_out_starts()  # [W]
    if generator is None:
        starts, masks = every, torch.Generator().manual_seed(HELD_OUT_MASK_SEED)
        what = f"every {task.seq_len}-word window of the prose's held-out words end to end"
    else:
        starts, masks = every[torch.randint(0, len(every), (FRESH_WINDOWS,), generator=generator)], generator
        what = f"{FRESH_WINDOWS} random {task.seq_len}-word windows of the prose's held-out words"
    windows = task.windows(starts)  # [W, T+1]
    x, y = task.mask(windows[:, :-1], masks) if task.spec.name == "masked_lm" else task.next_words(windows)
    scored = int((y != IGNORE).sum())
    return Samples(x, y, f"{what} ({len(starts):,} windows, {scored:,} words scored): the last "
                         f"{len(task.ids) - task.train_end:,} words of the prose, never trained on")


def fresh_reviews(task: engine.Task, seed: int) -> Samples:
    """Reviews newly generated as the shipped ones were, read with the task's vocabulary, less
    those the task trains on (short reviews repeat) and repeats among themselves."""
    trained = {tuple(row) for row in task.train_x.tolist()}
    labels: dict[tuple[int, ...], int] = {}  # word ids -> 0 negative, 1 positive, in the order generated
    for text, label in generate_reviews(FRESH_REVIEWS, seed=seed):
        row = tuple(task.encode(text).tolist())
        if row not in trained:
            labels.setdefault(row, CLASS_NAMES.index(label))
    x, y = torch.tensor(list(labels)), torch.tensor(list(labels.values()))  # [N, T], [N]
    return Samples(x, y, f"{len(y):,} reviews generated with seed {seed}, none of them among the training rows")


@torch.no_grad()
def scores(model: nn.Module, task: engine.Task, samples: Samples, beams: dict[str, int] = BEAMS) -> dict[str, float]:
    """The card's metrics: loss and accuracy as the task measures them (an encoder-decoder decoding
    freely), and the task's own extras (whole dates, brackets and indentation; a translator's BLEU,
    decoded each way of `beams`, and by sentence length)."""
    if task.spec.name in PROSE_WORDS:
        return chunked_scores(model, samples, SCORED_WINDOWS)
    if task.spec.name == "translate":
        return chunked_scores(model, samples, GREEDY_CHUNK) | translation_scores(model, task, samples.x, beams)
    was_training = model.training
    model.eval()
    try:
        y_hat = model(samples.x)  # [N, T, C] or [N, C]
    finally:
        model.train(was_training)
    result = {"loss": task.loss(y_hat, samples.y).item(), "accuracy": task.metric(y_hat, samples.y)}
    if task.spec.name == "dates":
        result["sequence accuracy"] = task.sequence_accuracy(y_hat, samples.y)
    if task.spec.name == "charlm" and task.corpus == "python":
        predicted = y_hat.argmax(-1)  # [N, T]
        result |= code_scores(task.vocab, samples.x, samples.y, predicted)
    return result


def chunked_scores(model: nn.Module, samples: Samples, chunk: int) -> dict[str, float]:
    """Loss and accuracy over every scored word of the samples (the prose's windows, a translator's
    held-out pairs decoded greedily), `chunk` samples at a time (all at once would be gigabytes of
    logits): the sums over the chunks, divided once."""
    was_training = model.training
    model.eval()
    total = right = count = 0.0
    try:
        for x, y in zip(samples.x.split(chunk), samples.y.split(chunk)):
            y_hat = model(x)  # [W, T, V]
            scored = y != IGNORE  # [W, T]
            total += F.cross_entropy(y_hat[scored], y[scored], reduction="sum").item()
            right += (y_hat[scored].argmax(-1) == y[scored]).sum().item()
            count += scored.sum().item()
    finally:
        model.train(was_training)
    return {"loss": total / count, "accuracy": right / count}


def translation_scores(model: nn.Module, task: engine.Task, x: Tensor, beams: dict[str, int]) -> dict[str, float]:
    """Corpus BLEU of the model's translations of the held-out English sentences x [N, S] reads
    (engine.bleu.held_out_bleu's sentences: all of them when x is every held-out pair), each
    against every translation the split has of it, decoded each way of `beams`: over them all, and
    over those of each length of SHORT and BY_LENGTH that has some and not all. Two sentences the
    model reads alike (their differing words both <unk>) are two sentences here, as there."""
    read = {tuple(row.tolist()) for row in x}
    chosen = [i for i, row in enumerate(task.reference_sources) if tuple(row.tolist()) in read]
    lengths = task.reference_lengths
    spans = length_groups([lengths[i] for i in chosen], (SHORT, *BY_LENGTH))
    groups = {"": list(range(len(chosen))),
              **{f", {low}-{high} words": group for (low, high), group in spans.items() if len(group) < len(chosen)}}
    result = {}
    for how, width in beams.items():
        hypotheses = [" ".join(words) for words in translate(model, task, task.reference_sources[chosen], width)]
        for named, group in groups.items():
            result[f"BLEU, {how}{named}"] = corpus_bleu([hypotheses[k] for k in group],
                                                        [task.references[chosen[k]] for k in group])
    return result


def code_scores(vocab: tuple[str, ...], x: Tensor, y: Tensor, predicted: Tensor) -> dict[str, float]:
    """What a reader of code must track. Closing brackets: the share of `)`, `]`, `}` predicted
    right. Indentation depth: the share of lines (starting inside a window) whose leading spaces
    are all predicted as spaces and whose first other character is predicted not to be one, so a
    model that always says " " (the commonest character) scores 0."""
    closing = torch.tensor([ch in CLOSING for ch in vocab])[y]  # [N, T]
    right = predicted == y  # [N, T]
    depths_right = depths = 0
    space = vocab.index(" ")
    for x_row, y_row, p_row in zip(x.tolist(), y.tolist(), predicted.tolist()):
        indenting, ok = False, True
        for read, target, guess in zip(x_row, y_row, p_row):
            if vocab[read] == "\n":
                indenting, ok = True, True
            if indenting:
                ok &= (guess == space) == (target == space)
                if target != space:  # the indentation ends here: the line is scored
                    indenting = False
                    depths, depths_right = depths + 1, depths_right + ok
    return {
        "closing bracket accuracy": right[closing].float().mean().item(),
        "indentation depth accuracy": depths_right / depths,
    }
