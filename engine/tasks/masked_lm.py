"""BERT beside GPT on the same words: a masked language model (Devlin et al. 2019) and a next-word
(causal) language model (GPT's objective) over windows of the Austen prose (engine.datasets' corpus "prose",
cut into words by engine.prose.words).

Word level, not characters: the contextual lesson compares the vectors of one word ("bank") in two
sentences, which needs the word to be one token with one input vector; a character model spreads a
word over several positions and has no single vector of it to compare.

Both tasks read the same vocabulary (<pad>, <unk>, <mask>, then the max_vocab - 3 most frequent words
of the training text, ties alphabetically; every other word is <unk>), the same training text (the
prose's first 90%; its last 10% is held out, as charlm cuts Tiny Shakespeare) and, for the same seed,
the same windows batch after batch: each batch draws its window starts and then one seed for the
masks from the batch's generator, and the causal task draws (and drops) that seed too. So two models
of the same size train side by side on the same text, one objective apart.

No model is asked to predict <unk> (BERT's WordPiece vocabulary has no unknown words): a masked task
never chooses an <unk> position, and a causal task's target is IGNORE where the next word is <unk>.
"""
from __future__ import annotations

import functools
import re
from collections import Counter
from dataclasses import dataclass
from typing import ClassVar

import torch
from torch import Tensor

from ..config import ModelConfig, check_int
from ..losses import IGNORE
from ..prose import prose_words
from ..train_config import TrainConfig
from .base import Preset, Task, TaskSpec, check_seq_len
from .features import word_features

SPECIALS = ("<pad>", "<unk>", "<mask>")  # word ids 0, 1 and 2
PAD, UNK, MASK = range(3)
TRAIN_SHARE = 0.9  # the prose's first 90% of words trains; the rest is held out
# BERT's rule (Devlin et al. 2019, section 3.1 and appendix C.2): 15% of the positions are chosen;
# of those, 80% read <mask>, 10% a random word, 10% the word itself; the loss is on the chosen only.
CHOSEN_SHARE, MASKED_SHARE, RANDOM_SHARE = 0.15, 0.8, 0.1
TEST_WINDOWS = 128  # held-out windows Trainer.evaluate scores: 128 x 32 x 4,000 logits are 65 MB
HELD_OUT_MASK_SEED = 0  # the held-out windows' masks are the same whatever the task's seed
MAX_VOCAB = 20_000


@functools.lru_cache(maxsize=4)  # a few vocabulary sizes at once, each 1.8 MB of ids
def prose_ids(max_vocab: int) -> tuple[tuple[str, ...], Tensor, int]:
    """(vocab, ids [N] int32 read-only in spirit, train_end): SPECIALS then the max_vocab - 3 words
    seen most often in the prose's first TRAIN_SHARE (ties alphabetically), every word of the prose
    as its id (<unk> outside the vocabulary), and where the held-out words start. Made once a
    process for each vocabulary size (the last few asked) and shared by every task that asks (never
    written to)."""
    text = prose_words()
    train_end = int(len(text) * TRAIN_SHARE)
    counts = Counter(text[:train_end])
    kept = sorted(counts, key=lambda w: (-counts[w], w))[: max_vocab - len(SPECIALS)]
    vocab = SPECIALS + tuple(kept)
    index = {w: i for i, w in enumerate(vocab)}
    ids = torch.tensor([index.get(w, UNK) for w in text], dtype=torch.int32)  # [N]
    return vocab, ids, train_end


@functools.cache
def prose_halves() -> tuple[str, str]:
    """The training text and the held-out text, each as one string of its words with a space at both ends:
    where a typed phrase is looked up whole. Made once a process (2.4 MB)."""
    text = prose_words()
    train_end = int(len(text) * TRAIN_SHARE)
    return f" {' '.join(text[:train_end])} ", f" {' '.join(text[train_end:])} "


@functools.lru_cache(maxsize=256)  # a page asks again on every rerun: a scan of 2.4 MB takes 30-130 ms
def found_in_prose(words: tuple[str, ...]) -> tuple[int, int]:
    """How many times `words`, in a row, occur in the prose's training text and in its held-out text (overlaps
    counted: "the the" twice in "the the the"). The prose's own words, so a word outside the vocabulary is
    found too; CorpusMissing when the prose is not on this machine."""
    phrase = re.compile(f"(?= {re.escape(' '.join(words))} )")
    return tuple(len(phrase.findall(half)) for half in prose_halves())


def chosen_count(seq_len: int) -> int:
    """Positions a window of seq_len words chooses: 15% of them, rounded, at least one (BERT's
    create_pretraining_data.py: max(1, round(n * 0.15)))."""
    return max(1, round(seq_len * CHOSEN_SHARE))


@dataclass
class ProseWordsTask(Task):
    """What the two tasks share: the vocabulary, the words as ids, the split and the windows.

    seq_len    words a window reads
    max_vocab  the vocabulary's size, the three special tokens included
    """

    seq_len: int = 32
    max_vocab: int = 4000
    corpus_made: ClassVar[tuple[str, ...]] = ("ids", "train_end")

    def __post_init__(self) -> None:
        super().__post_init__()
        check_seq_len(self.seq_len)
        check_int("max_vocab", self.max_vocab, len(SPECIALS) + 2, MAX_VOCAB)
        self.vocab, self.ids, self.train_end = prose_ids(self.max_vocab)
        self.known_from_header(None)
        held = len(self.ids) - self.train_end
        if held < self.seq_len + 1:
            raise ValueError(f"a window of seq_len + 1 = {self.seq_len + 1} words does not fit in the "
                             f"{held:,} held-out words; shorten seq_len to at most {held - 1}")

    def known_from_header(self, target_vocab) -> None:
        self.index = {w: i for i, w in enumerate(self.vocab)}  # a sentence a student types, as ids

    @property
    def public_corpus(self) -> str:
        return "prose"

    def window_starts(self, batch_size: int, generator: torch.Generator) -> Tensor:
        """[B] training windows' starts: a window is seq_len + 1 words, all before train_end."""
        return torch.randint(0, self.train_end - self.seq_len, (batch_size,), generator=generator)  # [B]

    def windows(self, starts: Tensor) -> Tensor:
        """[W, T+1] the words from each start [W]."""
        return self.ids[starts[:, None] + torch.arange(self.seq_len + 1)].long()  # [W, T+1]

    def held_out_starts(self, count: int | None = None) -> Tensor:
        """[W] starts of held-out windows, each seq_len + 1 words inside ids[train_end:]: all of them
        end to end (count None), else `count` of those spread evenly from the first to the last."""
        every = torch.arange(self.train_end, len(self.ids) - self.seq_len, self.seq_len)  # [W]
        if count is None or count >= len(every):
            return every
        return every[torch.linspace(0, len(every) - 1, count).round().long()]  # [count]

    def draw(self, batch_size: int, generator: torch.Generator) -> tuple[Tensor, torch.Generator]:
        """The batch's windows [B, T+1] and the generator of its masks: both tasks draw the same."""
        starts = self.window_starts(batch_size, generator)  # [B]
        mask_seed = int(torch.randint(0, 2**62, (1,), generator=generator))
        return self.windows(starts), torch.Generator().manual_seed(mask_seed)

    # ------------------------------------------------------------ what the task knows

    @property
    def class_names(self):
        return self.vocab  # the word predicted

    def input_features(self, symbols, x):
        return word_features(symbols, pad=SPECIALS[PAD])

    def unigram(self) -> Tensor:
        """[V] the training text's word frequencies, specials and <unk> at 0."""
        counts = torch.bincount(self.ids[: self.train_end].long(), minlength=len(self.vocab)).double()  # [V]
        counts[: len(SPECIALS)] = 0
        return counts / counts.sum()

    @property
    def baseline_loss(self) -> float:
        """The cross-entropy of guessing every word from the training text's word frequencies alone
        (the unigram model's entropy, in nats): what a model reading no context scores."""
        p = self.unigram()
        p = p[p > 0]
        return float(-(p * p.log()).sum())

    @property
    def baseline_metric(self) -> tuple[str, float]:
        """Always guessing the training text's most frequent word, scored on test_set's targets."""
        most = int(self.unigram().argmax())
        _, y = self.test_set()
        scored = y[y != IGNORE]
        return f"always {self.vocab[most]!r} (the most frequent word)", float((scored == most).double().mean())

    def decode(self, ids) -> str:
        return " ".join(self.vocab[int(i)] for i in ids)

    def trained_on(self) -> str:
        n = len(self.ids)
        return (f"four novels of Jane Austen as {n:,} words: the first {self.train_end:,} ({self.train_end / n:.0%}; "
                f"the rest is held out), {len(self.vocab) - len(SPECIALS):,} words known, the rest <unk>")


@dataclass
class MaskedLMTask(ProseWordsTask):
    """BERT's objective: x is a window of seq_len words in which chosen_count(seq_len) known words
    (15%) are chosen; of the chosen, 80% read <mask>, 10% a word drawn uniformly from the known
    words (which may be the word itself, as in BERT), 10% the word unchanged. y is the original word
    at the chosen positions and IGNORE everywhere else, so the loss (cross-entropy) and the metric
    (accuracy) count the chosen positions only. The model should read both sides of each position:
    a bidirectional transformer (the preset), BERT's encoder."""

    help: ClassVar[str] = "BERT's objective: guess the hidden 15% of the words of Austen's prose from both sides"
    scores_targets_only: ClassVar[bool] = True  # 15% of a window's words
    preset: ClassVar[Preset] = Preset(
        model=ModelConfig(arch="transformer", hidden_size=64, num_layers=2, num_heads=4, bidirectional=True),
        train=TrainConfig(optimizer="adam", lr=1e-3, batch_size=64, clip_norm=1.0),
        steps=500,
        lesson=(
            "A two-layer bidirectional transformer (d_model 64, 4 heads) fills in Austen's masked words from both "
            "sides: in 500 steps (2.3 min on a busy 2-core machine, seed 0) its held-out accuracy at the masked "
            "words rose from 0.05, always guessing 'the', to 0.08, still rising at step 500."
        ),
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        self.spec = TaskSpec("masked_lm", "seq2seq", "tokens", len(self.vocab), len(self.vocab), loss="ce",
                             pad_id=PAD)

    def mask(self, words: Tensor, generator: torch.Generator) -> tuple[Tensor, Tensor]:
        """BERT's masking of words [B, T] (word ids): (x, y), each [B, T]. The chosen positions are
        min(chosen_count(T), known words) positions of each window drawn uniformly among its known
        words (never <unk>)."""
        B, T = words.shape
        known = words != UNK  # [B, T]
        order = torch.rand(B, T, generator=generator).masked_fill(~known, 2.0)  # [B, T]: <unk> sorts last
        first = order.topk(chosen_count(T), dim=1, largest=False).indices  # [B, k]
        chosen = torch.zeros(B, T, dtype=torch.bool).scatter_(1, first, True) & known  # [B, T]
        action = torch.rand(B, T, generator=generator)  # [B, T]: which of the three a chosen word gets
        random_words = torch.randint(len(SPECIALS), len(self.vocab), (B, T), generator=generator)  # [B, T]
        masked = chosen & (action < MASKED_SHARE)  # [B, T]
        replaced = chosen & (action >= MASKED_SHARE) & (action < MASKED_SHARE + RANDOM_SHARE)  # [B, T]
        x = torch.where(masked, MASK, torch.where(replaced, random_words, words))  # [B, T]
        y = torch.where(chosen, words, IGNORE)  # [B, T]
        return x, y

    def sample(self, batch_size, generator):
        windows, masks = self.draw(batch_size, generator)  # [B, T+1]
        return self.mask(windows[:, :-1], masks)  # x, y: [B, T]

    def test_set(self) -> tuple[Tensor, Tensor]:
        """TEST_WINDOWS held-out windows, spread over the held-out text, masked by one fixed
        generator: the same samples every call and every seed."""
        words = self.windows(self.held_out_starts(TEST_WINDOWS))[:, :-1]  # [W, T]
        return self.mask(words, torch.Generator().manual_seed(HELD_OUT_MASK_SEED))


@dataclass
class WordLMTask(ProseWordsTask):
    """GPT's objective on the masked task's words and windows: x is a window of seq_len words and
    y the next word at every position (IGNORE where it is <unk>). The model must not see the
    future: a causal transformer (the preset), GPT's decoder."""

    help: ClassVar[str] = "GPT's objective: predict the next word of Austen's prose from the words before it"
    predicts_next: ClassVar[bool] = True
    preset: ClassVar[Preset] = Preset(
        model=ModelConfig(arch="transformer", hidden_size=64, num_layers=2, num_heads=4, bidirectional=False),
        train=TrainConfig(optimizer="adam", lr=1e-3, batch_size=64, clip_norm=1.0),
        steps=500,
        lesson=(
            "A two-layer causal transformer of the masked model's size predicts the next word of Austen's prose "
            "from the words before it: in 500 steps (3 min on a busy 2-core machine, seed 0) its held-out "
            "accuracy rose from 0.04, always guessing 'the', to 0.12, its loss from 6.17 nats (the words' "
            "frequencies alone) to 5.27."
        ),
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        self.spec = TaskSpec("word_lm", "seq2seq", "tokens", len(self.vocab), len(self.vocab), loss="ce",
                             pad_id=PAD)

    @staticmethod
    def next_words(windows: Tensor) -> tuple[Tensor, Tensor]:
        """(x, y) [W, T] of windows [W, T+1]: y is x one word on, IGNORE where that word is <unk>."""
        y = windows[:, 1:]
        return windows[:, :-1], torch.where(y == UNK, IGNORE, y)

    def sample(self, batch_size, generator):
        windows, _ = self.draw(batch_size, generator)  # the masks' seed is drawn and dropped
        return self.next_words(windows)

    def test_set(self) -> tuple[Tensor, Tensor]:
        """The masked task's TEST_WINDOWS held-out windows, every next word scored."""
        return self.next_words(self.windows(self.held_out_starts(TEST_WINDOWS)))
