"""word2vec: skip-gram with negative sampling (Mikolov et al. 2013, "Distributed Representations of
Words and Phrases and their Compositionality"), trained a step at a time so a page can play, pause
and step it like any other model.

Each word w has two vectors: v_w when it is the centre word (the input embedding, the one read out)
and u_w when it is a context word (the output embedding). A step takes centre words, pairs each
with the words around it (a true context word o) and with k words drawn from the noise
distribution (n_1..n_k), and lowers, for every pair,

    -log σ(u_o · v_c) - Σ_i log σ(-u_{n_i} · v_c)

so a centre word's vector comes to point along its real neighbours' output vectors and away from
noise words': words found in the same company end up with similar input vectors.
"""
from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import NamedTuple

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .config import check_float, check_int
from .history import MAX_ROWS, History, StepStats
from .rng import stream

NOISE_POWER = 0.75  # Mikolov et al.: the unigram distribution raised to 3/4 "outperformed significantly" the others
MAX_DIM = 512
MAX_WINDOW = 20
MAX_NEGATIVES = 50
MAX_CENTRES = 8192


@dataclass(frozen=True)
class Word2VecConfig:
    """dim         the length of a word's vector
    window      the farthest context word from its centre; each centre draws its own reach from
                1..window, so nearer words are paired more often (word2vec.c's "reduced window")
    negatives   noise words a pair (k); Mikolov et al.: 5-20 for small corpora, 2-5 for large ones
    min_count   words seen fewer times are left out of the vocabulary (and of the text)
    subsample   t of Mikolov et al.'s subsampling: a word of frequency f is kept with probability
                min(1, sqrt(t / f)), so "the" and "of" rarely crowd a window; 0 keeps every word.
                1e-3 (gensim's default): Mikolov et al.'s 1e-5 was for billions of words; on the
                shipped prose's 430,000 it keeps 13% of the text an epoch, and in 3,000 steps its
                vectors had learned far less (benchmarks/word2vec_speed.py)
    centres     centre words a step (each brings up to 2 * window pairs)
    lr          the learning rate of plain SGD on the summed loss of a step's pairs, as word2vec.c
                updates one pair at a time (its starting rate is 0.025)
    seed        seeds the vectors ("init") and the centres, windows, subsampling and noise words
                ("batches"), each from its own stream (engine.rng)
    """

    dim: int = 50
    window: int = 5
    negatives: int = 5
    min_count: int = 5
    subsample: float = 1e-3
    centres: int = 256
    lr: float = 0.025
    seed: int = 0

    def __post_init__(self) -> None:
        check_int("dim", self.dim, 2, MAX_DIM)
        check_int("window", self.window, 1, MAX_WINDOW)
        check_int("negatives", self.negatives, 1, MAX_NEGATIVES)
        check_int("min_count", self.min_count, 1, 1_000_000)
        check_float("subsample", self.subsample, 0.0, 1.0)
        check_int("centres", self.centres, 1, MAX_CENTRES)
        check_float("lr", self.lr, 0.0, 10.0, low_open=True)
        check_int("seed", self.seed, 0, 2**31 - 1)

    def to_dict(self) -> dict:
        return asdict(self)


class Vocabulary(NamedTuple):
    words: tuple[str, ...]  # most frequent first, ties in alphabetical order
    counts: Tensor  # [V] int64: how often each word occurs in the text


def build_vocabulary(tokens: Sequence[str], min_count: int) -> Vocabulary:
    """The words seen at least min_count times, most frequent first (ties alphabetically, so the
    order never depends on where a word first appears)."""
    check_int("min_count", min_count, 1, 1_000_000)
    counted = sorted(((-n, w) for w, n in Counter(tokens).items() if n >= min_count))
    if not counted:
        raise ValueError(f"no word occurs {min_count} times in {len(tokens):,} words; lower min_count or give "
                         "more text")
    return Vocabulary(tuple(w for _, w in counted), torch.tensor([-n for n, _ in counted], dtype=torch.int64))


def encode(tokens: Sequence[str], vocab: Vocabulary) -> Tensor:
    """[N] the ids of the tokens in the vocabulary, in order; the others are dropped before any
    window is cut, as word2vec.c drops them, so a window reaches past a rare word."""
    index = {w: i for i, w in enumerate(vocab.words)}
    return torch.tensor([index[t] for t in tokens if t in index], dtype=torch.int64)  # [N]


class Corpus(NamedTuple):
    """A text as runs train on it: its vocabulary's words and counts and its words as ids, in
    read-only numpy arrays (a write raises, and torch has no read-only tensor: an inference
    tensor's in-place write is refused only after it is done), so one Corpus serves every run of a
    process, each with weights of its own. A run reads the ids where they are, never copied whole,
    and copies the counts (a few KB)."""

    words: tuple[str, ...]  # most frequent first
    counts: np.ndarray  # [V] int64, read-only
    ids: np.ndarray  # [N] int64, read-only
    min_count: int


def make_corpus(tokens: Sequence[str], min_count: int) -> Corpus:
    """The vocabulary of the words seen at least min_count times and the text's ids, read-only."""
    vocab = build_vocabulary(tokens, min_count)
    counts, ids = vocab.counts.numpy().copy(), encode(tokens, vocab).numpy()  # [V], [N]
    counts.flags.writeable = ids.flags.writeable = False
    return Corpus(vocab.words, counts, ids, min_count)


def keep_probability(counts: Tensor, t: float) -> Tensor:
    """[V] the chance a word is kept in an epoch, min(1, sqrt(t / f)) with f its frequency (Mikolov
    et al.'s discard probability is 1 - sqrt(t / f)); t = 0 keeps every word. word2vec.c keeps
    sqrt(t / f) + t / f instead, a little more of each word."""
    if t == 0:
        return torch.ones(len(counts))
    f = counts.double() / counts.sum()  # [V]
    return (t / f).sqrt().clamp(max=1.0).float()  # [V]


def noise_distribution(counts: Tensor, power: float = NOISE_POWER) -> Tensor:
    """[V] P_n(w) = count(w)^power / Σ count^power: the unigram distribution flattened, so rare words
    are drawn as noise more often than their frequency alone would have them."""
    weights = counts.double() ** power  # [V]
    return (weights / weights.sum()).float()  # [V]


class Pairs(NamedTuple):
    centre: Tensor  # [P] the centre word of each pair
    context: Tensor  # [P] a word within its window
    negatives: Tensor  # [P, k] noise words drawn for it


def alias_table(p: Tensor) -> tuple[Tensor, Tensor]:
    """Walker's alias method (Vose's construction) for drawing from p [V]: column i keeps its own
    word with probability keep[i] and gives `alias[i]` otherwise, every column as likely. Exact, and
    a draw costs two random numbers whatever V (torch.multinomial and searchsorted cost 1.2 ms a step)."""
    n = len(p)
    scaled = (p.double() * n).tolist()
    keep, alias = [1.0] * n, list(range(n))
    small = [i for i, x in enumerate(scaled) if x < 1.0]
    large = [i for i, x in enumerate(scaled) if x >= 1.0]
    while small and large:
        s, big = small.pop(), large.pop()
        keep[s], alias[s] = scaled[s], big
        scaled[big] -= 1.0 - scaled[s]  # big gave column s what it lacked
        (small if scaled[big] < 1.0 else large).append(big)
    return torch.tensor(keep, dtype=torch.float64), torch.tensor(alias, dtype=torch.int64)  # the rest keep 1.0


class SkipGramBatches:
    """Centre words in epochs: each epoch subsamples the text afresh, then visits every kept word
    once as a centre, in an order shuffled for that epoch. Windows are cut from the kept words,
    so subsampling also widens them (as in word2vec.c). All draws come from `generator`."""

    def __init__(self, ids: Tensor | np.ndarray, counts: Tensor, cfg: Word2VecConfig, generator: torch.Generator):
        self.ids, self.cfg, self.generator = ids, cfg, generator  # ids: [N], read where they are (a Corpus's)
        self.keep = keep_probability(counts, cfg.subsample)  # [V]
        self.noise_keep, self.noise_alias = alias_table(noise_distribution(counts))  # [V], [V]
        reach = torch.arange(1, cfg.window + 1)  # [w]
        self.offsets = torch.cat([-reach.flip(0), reach])  # [2w]: -w..-1, 1..w
        self.epoch = 0
        self.new_epoch()

    def new_epoch(self) -> None:
        ids = np.asarray(self.ids)  # [N]: the tensor's or the corpus's own memory, only read
        kept = torch.rand(len(ids), generator=self.generator).numpy() < self.keep.numpy()[ids]  # [N]
        self.text = torch.from_numpy(ids[kept])  # [M] a copy of the kept words
        self.order = torch.randperm(len(self.text), generator=self.generator)  # [M]
        self.at = 0
        self.epoch += 1

    @property
    def progress(self) -> float:
        """Epochs done, the current one in part."""
        return self.epoch - 1 + self.at / max(len(self.order), 1)

    def next(self) -> Pairs:
        """The pairs of the next cfg.centres centre words (fewer at the end of an epoch)."""
        if self.at >= len(self.order):
            self.new_epoch()
        centres = self.order[self.at : self.at + self.cfg.centres]  # [B] positions in the kept text
        self.at += len(centres)
        reach = torch.randint(1, self.cfg.window + 1, (len(centres), 1), generator=self.generator)  # [B, 1]
        where = centres[:, None] + self.offsets  # [B, 2w]
        valid = (self.offsets.abs() <= reach) & (where >= 0) & (where < len(self.text))  # [B, 2w]
        centre = self.text[centres[:, None].expand_as(where)[valid]]  # [P]
        context = self.text[where[valid]]  # [P]
        return Pairs(centre, context, self.noise_words(len(context)))

    def noise_words(self, pairs: int) -> Tensor:
        """[pairs, k] words drawn from the noise distribution."""
        shape = (pairs, self.cfg.negatives)
        column = torch.randint(len(self.noise_keep), shape, generator=self.generator)  # [P, k]
        own = torch.rand(shape, generator=self.generator, dtype=torch.float64) < self.noise_keep[column]  # [P, k]
        return torch.where(own, column, self.noise_alias[column])  # [P, k]


def scores(v: Tensor, u_context: Tensor, u_noise: Tensor) -> tuple[Tensor, Tensor]:
    """Each pair's scores: u_o · v_c [P] and u_n · v_c [P, k], from v [P, d], u_context [P, d] and
    u_noise [P, k, d]."""
    positive = (v * u_context).sum(-1)  # [P]
    negative = torch.bmm(u_noise, v.unsqueeze(2)).squeeze(2)  # [P, k, d] @ [P, d, 1] -> [P, k]
    return positive, negative


def sgns_loss(positive: Tensor, negative: Tensor) -> Tensor:
    """[P] each pair's loss from its scores: -log σ(u_o · v_c) - Σ_n log σ(-u_n · v_c)."""
    return -(F.logsigmoid(positive) + F.logsigmoid(-negative).sum(-1))  # [P]


def sgns_gradients(v: Tensor, u_context: Tensor, u_noise: Tensor, positive: Tensor, negative: Tensor
                   ) -> tuple[Tensor, Tensor, Tensor]:
    """The gradient of a pair's loss by v_c [P, d], u_o [P, d] and each u_n [P, k, d], written out
    (d/ds -log σ(s) = σ(s) - 1, d/ds -log σ(-s) = σ(s)), as word2vec.c computes it and a slide
    writes it. No faster than backward() through sparse nn.Embedding rows and torch.optim.SGD on
    the same batches (the same words/s within 3%, the same vectors: benchmarks/word2vec_speed.py),
    but the update is the equation, and the step's gradient norm comes exact, rows summed."""
    g_pos = torch.sigmoid(positive) - 1  # [P]
    g_neg = torch.sigmoid(negative)  # [P, k]
    grad_v = g_pos[:, None] * u_context + torch.bmm(g_neg.unsqueeze(1), u_noise).squeeze(1)  # [P, d]
    return grad_v, g_pos[:, None] * v, g_neg[:, :, None] * v[:, None, :]  # [P, d], [P, d], [P, k, d]


class SkipGram(nn.Module):
    """The two embeddings of skip-gram: v_w (input, read out) and u_w (output)."""

    def __init__(self, vocab_size: int, dim: int, generator: torch.Generator | None = None):
        super().__init__()
        self.input_embedding = nn.Embedding(vocab_size, dim)  # v_w: what the read-outs show
        self.output_embedding = nn.Embedding(vocab_size, dim)  # u_w
        # word2vec.c's start: input vectors uniform in ±0.5/dim, output vectors zero
        nn.init.uniform_(self.input_embedding.weight, -0.5 / dim, 0.5 / dim, generator=generator)
        nn.init.zeros_(self.output_embedding.weight)

    def lookup(self, pairs: Pairs) -> tuple[Tensor, Tensor, Tensor]:
        """v_c [P, d], u_o [P, d], u_n [P, k, d]."""
        return self.input_embedding(pairs.centre), self.output_embedding(pairs.context), \
            self.output_embedding(pairs.negatives)

    def forward(self, pairs: Pairs) -> Tensor:
        """[P] each pair's loss (differentiable: the tests hold sgns_gradients against it)."""
        return sgns_loss(*scores(*self.lookup(pairs)))


class Word2Vec:
    """A vocabulary, the text as ids, a SkipGram model and its training, step by step.

    Not an engine.Trainer: that trains a model on a task's (x, y) batches through autograd, the
    task's loss and metric and an optimizer of torch's; here a batch is (centre, context, noise)
    pairs and a step is plain SGD on SGNS's gradient written out (sgns_gradients). The face a page
    uses is the same: step(n) returns StepStats, `history` is the same bounded History, `status`,
    `steps_done`, `last`, `diverged_at`. A step's metric is the share of its scores on the right
    side of zero (true pairs above, noise pairs below): how well the vectors tell context from noise."""

    def __init__(self, tokens: Sequence[str] | Corpus, cfg: Word2VecConfig, history_rows: int = MAX_ROWS):
        """`tokens`: the text's words, or a Corpus made from them once (make_corpus) that many runs
        share read-only; its min_count must be cfg's."""
        corpus = tokens if isinstance(tokens, Corpus) else make_corpus(tokens, cfg.min_count)
        if corpus.min_count != cfg.min_count:
            raise ValueError(f"the corpus keeps words seen {corpus.min_count} times, the config asks "
                             f"min_count={cfg.min_count}; make the corpus with the config's min_count")
        self.cfg = cfg
        self.vocab = Vocabulary(corpus.words, torch.from_numpy(corpus.counts.copy()))  # counts: [V], its own
        self.ids = corpus.ids  # [N] the corpus's, read-only
        self.model = SkipGram(len(self.vocab.words), cfg.dim, stream(cfg.seed, "init"))
        self.batches = SkipGramBatches(self.ids, self.vocab.counts, cfg, stream(cfg.seed, "batches"))
        self.history = History(history_rows)
        self.diverged_at: int | None = None

    @property
    def words(self) -> tuple[str, ...]:
        return self.vocab.words

    @property
    def steps_done(self) -> int:
        return self.history.total

    @property
    def last(self) -> StepStats | None:
        return self.history.last

    @property
    def epochs(self) -> float:
        """Passes over the (subsampled) text, the current one in part."""
        return self.batches.progress

    @property
    def status(self) -> str:
        if self.diverged_at is not None:
            return f"diverged at step {self.diverged_at}"
        return f"trained {self.steps_done} steps ({self.epochs:.2f} epochs)"

    def step(self, n: int = 1) -> list[StepStats]:
        """Run up to n steps; stops for good once a step's loss or gradient is not finite (that
        step is not applied: the vectors keep their last finite values)."""
        check_int("n", n, 0, 1_000_000)
        done = []
        for _ in range(n):
            if self.diverged_at is not None:
                break
            stats = self.train_step(self.batches.next())
            self.history.add(stats)
            done.append(stats)
            if stats.diverged:
                self.diverged_at = stats.step
        return done

    @torch.no_grad()
    def train_step(self, pairs: Pairs) -> StepStats:
        v, u_context, u_noise = self.model.lookup(pairs)  # [P, d], [P, d], [P, k, d]
        positive, negative = scores(v, u_context, u_noise)  # [P], [P, k]
        loss = sgns_loss(positive, negative).mean().item()
        grad_v, grad_context, grad_noise = sgns_gradients(v, u_context, u_noise, positive, negative)
        # The summed loss's gradient, each word's row once: every pair moves the vectors as much as
        # one update of word2vec.c does
        w_in, w_out = self.model.input_embedding.weight, self.model.output_embedding.weight  # [V, d] each
        grad_in = torch.zeros_like(w_in).index_add_(0, pairs.centre, grad_v)  # [V, d]
        grad_out = torch.zeros_like(w_out).index_add_(0, pairs.context, grad_context)  # [V, d]
        grad_out.index_add_(0, pairs.negatives.flatten(), grad_noise.flatten(0, 1))  # [V, d]
        grad_norm = math.sqrt(grad_in.pow(2).sum().item() + grad_out.pow(2).sum().item())
        step = self.steps_done + 1
        # Finite scores and gradient, and lr at most 10: the update stays finite unless a weight is
        # already near float32's limit, where its scores would have overflowed first.
        if not (math.isfinite(loss) and math.isfinite(grad_norm)):
            return StepStats(step, loss, float("nan"), grad_norm, grad_norm, diverged=True)
        w_in.sub_(grad_in, alpha=self.cfg.lr)
        w_out.sub_(grad_out, alpha=self.cfg.lr)
        right = (positive > 0).sum() + (negative < 0).sum()
        metric = right.item() / max(positive.numel() + negative.numel(), 1)
        return StepStats(step, loss, metric, grad_norm, grad_norm, diverged=False)

    def vectors(self) -> Tensor:
        """[V, dim] a copy of the input vectors (rows in vocab order): what the read-outs take."""
        return self.model.input_embedding.weight.detach().clone()

    def history_frame(self) -> pd.DataFrame:
        return self.history.frame()
