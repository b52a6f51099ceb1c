"""Translation: English sentences in, their French translations out, word by word.

The pairs are Tatoeba's, from one of two corpora of engine.datasets, which say where they come from:
"eng-fra-5000", 5,000 short pairs (1-5 English words), each line with its CC-BY 2.0 FR attribution (small
and fast: the task's preset); "eng-fra-2017", manythings.org's whole file of 2017 (142,787 pairs, one
attribution for the corpus), read up to `max_words` English words (the shipped translator: 1-20).

Words, not subword units. Tokens are cut here, by one rule both sides share and the provenance note's
figures are counted by: the text NFC normalised and lower-cased, French typography's no-break and thin
spaces made spaces and the typographic apostrophe a plain one; a token is a run of letters and digits with
apostrophes and hyphens allowed inside it (`don't`, `j'ai`, `peut-être`), or one punctuation mark (`.`,
`!`, `«`). A vocabulary of subword units (sentencepiece's or tokenizers' BPE) would leave no word unknown,
but the alignment a class reads would then be over pieces (`cour`, `ez`), and the map of Bahdanau et al.
(2015, Figure 3) is over words. On the 2017 corpus the words seen 3 times or more in training (7,048 English,
11,777 French) leave 8,319 of its 9,200 held-out sentences of 1-10 words (90%) with no unknown word, and the
page names each word it does not know (unknown_words) rather than guessing it.

A held-out split of whole source sentences: every pair whose English sentence (as its tokens) was
drawn for it is held out, so no source sentence is both trained on and scored, and the held-out
BLEU (engine.bleu) scores each with all its French translations as references.
"""
from __future__ import annotations

import functools
import math
import re
import threading
import unicodedata
from collections import Counter
from dataclasses import dataclass
from typing import ClassVar, NamedTuple

import torch

from .. import datasets
from ..config import ModelConfig, check_int
from ..losses import IGNORE
from ..train_config import TrainConfig
from .base import Preset, Task, TaskSpec, held_bytes
from .features import word_features
from .reverse import ReverseTask

# Token ids 0-3 on both sides. Target 0 and 1 are the encoder-decoder's <sos> and <eos>
# (engine.seq2seq.SOS, EOS); a source ends with </s> and is padded after it with <pad>.
SPECIALS = ("<s>", "</s>", "<pad>", "<unk>")
BOS, EOS, PAD, UNK = range(4)
HELD_OUT_SHARE = 0.1  # of the distinct English sentences
SMALL, LARGE = "eng-fra-5000", "eng-fra-2017"  # the corpora (engine.datasets) the task reads
CORPORA = (SMALL, LARGE)
MAX_WORDS = 30  # the longest English sentence (in words) a task may ask for
TYPED_EXAMPLES = {SMALL: "I am cold.", LARGE: "Where is the station?"}  # TranslateTask.typed_example
TOKEN = re.compile(r"[^\W_]+(?:['-][^\W_]+)*|[^\w\s]")
SPACES = re.compile(r"[\u00a0\u2009\u202f]")  # no-break, thin and narrow no-break spaces


def tokens(text: str) -> list[str]:
    """The tokens of a sentence (the rule in the module's docstring), lower-cased, in order."""
    text = SPACES.sub(" ", unicodedata.normalize("NFC", text).lower()).replace("\u2019", "'")
    return TOKEN.findall(text)


def words(text: str) -> list[str]:
    """The tokens that are words, not punctuation marks: what the corpus's length filter counts."""
    return [t for t in tokens(text) if any(ch.isalnum() for ch in t)]


def word_count(sentence: tuple[str, ...]) -> int:
    """How many of a sentence's tokens are words (a sentence's length, as max_words and BLEU by length count it)."""
    return sum(any(ch.isalnum() for ch in t) for t in sentence)


class Pair(NamedTuple):
    english: str
    french: str
    attribution: str  # each pair's own where its file gives one (eng-fra-5000), else the corpus's (registry)


def read_pairs(text: str, attribution: str = "") -> list[Pair]:
    """Tab-separated lines of English and French, and a third field, the pair's attribution, where the file
    gives one (eng-fra-5000: "CC-BY 2.0 (France) Attribution: tatoeba.org #<id> (<user>) & ..."); a file
    without it (eng-fra-2017) has one attribution for the whole corpus, given as `attribution`. ValueError
    naming the first line that is neither."""
    pairs = []
    for number, line in enumerate(text.splitlines(), 1):
        fields = line.split("\t")
        if len(fields) not in (2, 3) or not all(f.strip() for f in fields):
            raise ValueError(
                f"line {number} of the pair file is not English<TAB>French (with or without <TAB>attribution) "
                f"({len(fields)} tab-separated fields); give one pair a line, two or three fields separated by tabs")
        pairs.append(Pair(fields[0], fields[1], fields[2] if len(fields) == 3 else attribution))
    return pairs


def shipped_pairs(corpus: str = SMALL) -> tuple[Pair, ...]:
    """A corpus's pairs; CorpusMissing when they are not on this machine. Not kept: what a task keeps is its
    split (split_of), and the 2017 corpus's pairs as Python strings are over 100 MB."""
    return tuple(read_pairs(datasets.corpus_text(corpus), datasets.CORPORA[corpus].attribution))


def tokenised_pairs(corpus: str = SMALL) -> tuple[tuple[tuple[str, ...], tuple[str, ...]], ...]:
    """Every pair of a corpus as (English tokens, French tokens)."""
    return tuple((tuple(tokens(p.english)), tuple(tokens(p.french))) for p in shipped_pairs(corpus))


def split_sources(sources: list[tuple[str, ...]], seed: int) -> set[tuple[str, ...]]:
    """The distinct source sentences held out: HELD_OUT_SHARE of them (at least one), drawn by `seed`."""
    distinct = sorted(set(sources))
    order = torch.randperm(len(distinct), generator=torch.Generator().manual_seed(seed)).tolist()
    n_held = max(1, math.ceil(len(distinct) * HELD_OUT_SHARE))
    return {distinct[i] for i in order[:n_held]}


def vocabulary(sentences, min_count: int) -> tuple[str, ...]:
    """SPECIALS, then every token seen at least min_count times, most frequent first (ties in
    alphabetical order)."""
    counts = Counter(t for sentence in sentences for t in sentence)
    kept = sorted((w for w, n in counts.items() if n >= min_count), key=lambda w: (-counts[w], w))
    return SPECIALS + tuple(kept)


def ids_of(sentence, index: dict[str, int], length: int, end: int, fill: int) -> list[int]:
    """A sentence's token ids (unknown tokens <unk>), then `end`, then `fill` up to `length`."""
    ids = [index.get(t, UNK) for t in sentence] + [end]
    return ids + [fill] * (length - len(ids))


def words_until(ids, vocab: tuple[str, ...], stops: tuple[int, ...]) -> list[str]:
    """The words of ids up to the first id in `stops`."""
    found = []
    for i in ids:
        if int(i) in stops:
            break
        found.append(vocab[int(i)])
    return found


def length_buckets(sources: torch.Tensor) -> dict[int, torch.Tensor]:
    """The rows of [N, S] source ids by their length (</s> included): length -> [rows of it]."""
    lengths = (sources != PAD).sum(dim=1)  # [N]
    return {n: torch.nonzero(lengths == n).flatten() for n in lengths.unique().tolist()}


def trimmed(x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """A batch cut to its longest source and its longest target: the columns cut are padding on every row
    (<pad> after </s>, IGNORE after <eos>), which the encoder skips and the loss never reads, so the batch
    trains exactly as before, in as many steps as its sentences have (the corpus's longest is 3 times its
    mean)."""
    source = int((x != PAD).sum(dim=1).max())
    target = int((y != IGNORE).sum(dim=1).max())
    return x[:, :source], y[:, :target]  # [B, S'], [B, T']


class Split(NamedTuple):
    """What a task's parameters make of its corpus: the vocabularies, and the split as tensors."""
    vocab: tuple[str, ...]
    target_vocab: tuple[str, ...]
    index: dict[str, int]  # English word -> id
    max_source_len: int  # the longest English sentence + 1
    out_len: int  # the longest French sentence + 1
    train_x: torch.Tensor  # [N, S]
    train_y: torch.Tensor  # [N, T_out]
    test_x: torch.Tensor  # [N_test, S]
    test_y: torch.Tensor  # [N_test, T_out]
    buckets: dict[int, torch.Tensor]  # training rows by English length (length_buckets)
    reference_sources: torch.Tensor | None  # [N_sentences, S]: each held-out English sentence once
    references: list[list[str]]  # each one's French translations, as token text
    reference_lengths: list[int]  # each one's words (word_count): what BLEU by length groups by


SPLIT_LOCK = threading.Lock()  # a class opening the shipped translator at once makes its split once


def split_of(corpus: str, max_words: int, min_count: int, seed: int) -> Split:
    """The split a task's parameters make, once a process for the last few asked (the 2017 corpus's takes 3 s
    and holds 66 MB; every session opening the shipped translator asks for the same). Its tensors are read,
    never written, by every task given them."""
    with SPLIT_LOCK:
        return kept_split(corpus, max_words, min_count, seed)


@functools.lru_cache(maxsize=4)
def kept_split(corpus: str, max_words: int, min_count: int, seed: int) -> Split:
    pairs = [(e, f) for e, f in tokenised_pairs(corpus) if word_count(e) <= max_words]
    held = split_sources([english for english, _ in pairs], seed)
    train = [p for p in pairs if p[0] not in held]
    test = [p for p in pairs if p[0] in held]  # shuffled below: its first pairs are a fair subset
    order = torch.randperm(len(test), generator=torch.Generator().manual_seed(seed)).tolist()
    test = [test[i] for i in order]
    vocab, target_vocab = vocabulary((e for e, _ in train), min_count), vocabulary((f for _, f in train), min_count)
    index, target_index = {w: i for i, w in enumerate(vocab)}, {w: i for i, w in enumerate(target_vocab)}
    S, T = max(len(e) for e, _ in pairs) + 1, max(len(f) for _, f in pairs) + 1  # </s> ends each

    def tensors(chosen) -> tuple[torch.Tensor, torch.Tensor]:
        x = torch.tensor([ids_of(e, index, S, EOS, PAD) for e, _ in chosen], dtype=torch.long)  # [N, S]
        y = torch.tensor([ids_of(f, target_index, T, EOS, IGNORE) for _, f in chosen], dtype=torch.long)  # [N, T]
        return x.reshape(len(chosen), S), y.reshape(len(chosen), T)

    train_x, train_y = tensors(train)
    test_x, test_y = tensors(test)
    grouped: dict[tuple[str, ...], list[str]] = {}
    for english, french in test:
        grouped.setdefault(english, []).append(" ".join(french))
    sources = torch.tensor([ids_of(e, index, S, EOS, PAD) for e in grouped], dtype=torch.long) if grouped else None
    return Split(vocab, target_vocab, index, S, T, train_x, train_y, test_x, test_y, length_buckets(train_x),
                 sources, list(grouped.values()), [word_count(e) for e in grouped])


@dataclass
class TranslateTask(Task):
    """x: an English sentence as word ids [B, S], ended by </s> and padded after it with <pad> (S: the longest English
    sentence + 1). y: its French translation as target ids [B, T_out], ended by </s> (<eos>), IGNORE after it
    (T_out: the longest French sentence + 1); a training step cuts its batch to the batch's own longest
    sentences (cut). Words seen fewer than min_count times in the training pairs are <unk>, on each side. 10% of
    the distinct English sentences are held out with all their translations (test_set, references). `corpus`:
    the 5,000 short pairs (1-5 words, fast) or the 142,787 of 2017, of which the pairs of at most `max_words`
    English words are read. A batch is drawn from the training sentences of one length (`by_length`, the
    sentence's length drawn as often as the corpus has it), so once cut its English side holds no padding: the
    2017 corpus's batches are 3 times shorter so."""

    corpus: str = SMALL
    max_words: int = 20
    min_count: int = 2
    by_length: bool = True

    help: ClassVar[str] = "encoder-decoder: translate English sentences into French (Tatoeba)"
    choices: ClassVar[dict[str, tuple[str, ...]]] = {"corpus": CORPORA}
    corpus_made: ClassVar[tuple[str, ...]] = ("train_x", "train_y", "test_x", "test_y", "reference_sources",
                                              "references", "reference_lengths", "buckets")
    decodes: ClassVar[bool] = True
    scores_targets_only: ClassVar[bool] = True  # the words of each translation, not the steps after its </s>
    preset: ClassVar[Preset] = Preset(
        model=ModelConfig(arch="gru", hidden_size=64, embedding_dim=32, bidirectional=True, attention="dot"),
        train=TrainConfig(optimizer="adam", lr=3e-3, batch_size=64, clip_norm=1.0),
        steps=800,
        lesson=(
            "A GRU encoder-decoder with attention learns to translate short English sentences into French "
            "from 4,462 Tatoeba pairs. Its held-out BLEU, every translation of a sentence counting as a "
            "reference, passed 10 within 800 steps on seeds 0-2 (11 to 15 greedy, 12 to 15 with a beam of 3; "
            "70-95 s on a busy 2-core machine), while the held-out loss rose after the first few hundred: the "
            "held-out sentences hold words it never saw. Read the alignment: which English words each French "
            "word looked at as it was written."
        ),
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.corpus not in CORPORA:
            raise ValueError(f"the translate task reads the corpus {' or '.join(CORPORA)}, not {self.corpus!r}")
        check_int("max_words", self.max_words, 1, MAX_WORDS)
        check_int("min_count", self.min_count, 1, 100)
        made = split_of(self.corpus, self.max_words, self.min_count, self.seed)
        self.vocab, self.target_vocab, self.index = made.vocab, made.target_vocab, made.index
        self.max_source_len = made.max_source_len
        self.spec = TaskSpec(
            "translate", "encdec", "tokens", input_size=len(self.vocab), output_size=len(self.target_vocab),
            loss="ce", out_len=made.out_len, pad_id=PAD,
        )
        self.train_x, self.train_y, self.test_x, self.test_y = made.train_x, made.train_y, made.test_x, made.test_y
        self.buckets, self.reference_sources, self.references = made.buckets, made.reference_sources, made.references
        self.reference_lengths = made.reference_lengths

    @property
    def public_corpus(self) -> str:
        return self.corpus

    @property
    def typed_example(self) -> str:
        """The sentence a page offers first: every word of it in the corpus's vocabulary, and (the 2017 corpus's)
        one the shipped translator translates right, where "I am cold." comes out "je suis enrhumé ." ("I have a
        cold": tests/pretrained/test_translator.py)."""
        return TYPED_EXAMPLES[self.corpus]

    def held_bytes(self, beside: tuple = ()) -> int:
        """What a caller keeps `beside` it: its data is split_of's, one copy a process however many sessions'
        tasks read it (the 2017 corpus's 66 MB), not this task's."""
        return held_bytes(list(beside))

    def known_from_header(self, target_vocab) -> None:
        """A translator's checkpoint names its French words too (the header's target_vocab). The longest
        English sentence of the pairs is not in it: until the pairs are read, a typed sentence may be as
        long as the longest translation the model writes (spec.out_len, </s> included)."""
        if target_vocab is None:
            raise ValueError("this translator's checkpoint has no French vocabulary in its header (it was saved "
                             "before checkpoints carried one), so its output cannot be read without the pairs")
        self.target_vocab = tuple(target_vocab)
        self.index = {w: i for i, w in enumerate(self.vocab)}
        self.max_source_len = self.spec.out_len

    def source_ids(self, sentence) -> torch.Tensor:
        return torch.tensor(ids_of(sentence, self.index, self.max_source_len, EOS, PAD))  # [S]

    @property
    def source_len(self) -> int:
        return self.max_source_len

    def sample(self, batch_size, generator):
        if self.by_length:  # a length drawn as often as the training sentences have it, then rows of it
            pick = torch.randint(0, len(self.train_x), (1,), generator=generator)  # [1]
            bucket = self.buckets[int((self.train_x[pick] != PAD).sum())]
            rows = bucket[torch.randint(0, len(bucket), (batch_size,), generator=generator)]  # [B]
        else:
            rows = torch.randint(0, len(self.train_x), (batch_size,), generator=generator)  # [B]
        return self.train_x[rows], self.train_y[rows]  # [B, S], [B, T_out]

    def cut(self, x, y):
        return trimmed(x, y)  # [B, S'], [B, T']

    def test_set(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Every held-out pair: [N_test, S], [N_test, T_out]."""
        return self.test_x, self.test_y

    # ------------------------------------------------------------ sentences a student types

    def unknown_words(self, text: str) -> list[str]:
        """The tokens of `text` the source vocabulary lacks (the model reads each as <unk>)."""
        known = set(self.vocab[len(SPECIALS):])
        return [t for t in tokens(text) if t not in known]

    def encode(self, text: str) -> torch.Tensor:
        """An English sentence as the model reads it: [S] ids, </s> and padding after its tokens.
        ValueError for a sentence with no word, too many tokens, or no word the model knows."""
        found = tokens(text)
        if not words(text):
            raise ValueError("type an English sentence with at least one word, e.g. 'I am cold.'")
        if len(found) > self.max_source_len - 1:
            raise ValueError(
                f"the sentence has {len(found)} words and marks; the model reads at most {self.max_source_len - 1} "
                "(the longest English sentence it was trained on): type a shorter one, e.g. 'I am cold.'")
        if len(self.unknown_words(text)) == len(found):
            raise ValueError(
                f"none of {', '.join(repr(t) for t in found)} is in the model's English vocabulary; "
                "use everyday words, e.g. 'I am cold.'")
        return self.source_ids(found)

    # ------------------------------------------------------------ ids back to words

    def decode(self, ids) -> str:
        """Source ids back to words, up to </s> (without the padding)."""
        return " ".join(self.source_words(ids))

    def source_words(self, ids) -> list[str]:
        """Source ids as words, up to </s> or the padding."""
        return words_until(ids, self.vocab, (EOS, PAD))

    def target_words(self, ids) -> list[str]:
        """Target ids (a model's argmax or a beam's tokens) as words, up to </s>."""
        return words_until(ids, self.target_vocab, (EOS, IGNORE))

    def decode_target(self, ids) -> str:
        return " ".join(self.target_words(ids))

    @property
    def class_names(self):
        return self.target_vocab

    def input_features(self, symbols, x):
        return word_features(symbols, pad=self.pad_symbol)

    sequence_accuracy = ReverseTask.sequence_accuracy
