"""Read-outs of the masked (BERT) and next-word (GPT) models of engine/tasks/masked_lm.py on
sentences a student types.

- `guess_mask`: each model's distribution over the vocabulary for the one <mask> of a sentence. The
  masked model reads the whole sentence, <mask> included, and answers at the mask; the next-word
  model can read only the words to the mask's left, so it is given those alone and answers with
  its distribution for the word after them (`MaskGuess.reads` says which words each one read).
- `word_in_context`: one word's vector at every layer of a transformer: layer 0 its input embedding
  (the table's row, the same in every sentence: position signals are added after it), then the
  residual stream after each block, read at the block's hook point (engine/hooks.py).
- `compare_contexts`: the cosine of the same word's vectors in two sentences, layer by layer, beside
  a static vector's (a word2vec vector or the embedding row: one vector a word, so the same in both
  sentences and its cosine 1): Devlin et al.'s contextual embeddings against context-free ones.

Every typed sentence is cut into words as the prose is (engine.prose.words); <mask> (or [MASK]) is
the hidden word. Each bad sentence is a ValueError saying what to change.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .embeddings import ids_of
from .hooks import recording_blocks
from .prose import words
from .record import attention_traces
from .sites import AttentionTrace, Site
from .tasks.masked_lm import MASK, SPECIALS, UNK, ProseWordsTask
from .vocab import check_vocab

MASK_MARK = re.compile(r"<mask>|\[mask\]", re.IGNORECASE)
EXAMPLE = "she was very <mask> to see him"
MASK_TASK, NEXT_WORD_TASK = "masked_lm", "word_lm"


@dataclass(frozen=True)
class Sentence:
    """A typed sentence as a model reads it."""

    words: tuple[str, ...]  # as typed (lower-cased), "<mask>" for the mask
    ids: Tensor  # [T] word ids, <unk> for a word outside the vocabulary
    unknown: tuple[str, ...]  # the words read as <unk>
    mask_at: int | None  # the mask's position, or None


def read_sentence(task: ProseWordsTask, text: str, *, masked: bool) -> Sentence:
    """`text` as word ids. masked: it must hold exactly one <mask>. ValueError saying what to change
    for an empty sentence, a missing or second mask, no word the model knows, or more words than
    the models' windows (task.seq_len)."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"type a sentence{' with one <mask>' if masked else ''}, e.g. {EXAMPLE!r}")
    pieces = [words(piece) for piece in MASK_MARK.split(text)]  # the words between the masks
    masks = len(pieces) - 1
    if masked and masks == 0:
        raise ValueError(f"the sentence has no <mask>: write <mask> where the hidden word goes, e.g. {EXAMPLE!r}")
    if masked and masks > 1:
        raise ValueError(f"the sentence has {masks} masks; keep one <mask>: each model guesses one hidden word")
    found: list[str] = []
    for i, piece in enumerate(pieces):
        found += ([SPECIALS[MASK]] if i else []) + piece
    plain = [w for w in found if w != SPECIALS[MASK]]
    if not plain:
        raise ValueError(f"the sentence has no word{' besides the <mask>' if masks else ''}; type a sentence "
                         f"of words, e.g. {EXAMPLE!r}")
    unknown = tuple(dict.fromkeys(w for w in plain if w not in task.index))  # words() never makes a special
    if len(unknown) == len(set(plain)):
        raise ValueError(f"none of the words {', '.join(repr(w) for w in unknown)} is among the model's "
                         f"{len(task.vocab) - len(SPECIALS):,} words (the prose's most frequent); use everyday "
                         f"words, e.g. {EXAMPLE!r}")
    if len(found) > task.seq_len:
        raise ValueError(f"the sentence has {len(found)} words{' (the <mask> counted)' if masks else ''}, and the "
                         f"models read windows of {task.seq_len}: leave out {len(found) - task.seq_len} of them")
    ids = [MASK if w == SPECIALS[MASK] else task.index.get(w, UNK) for w in found]
    mask_at = found.index(SPECIALS[MASK]) if masks else None
    return Sentence(tuple(found), torch.tensor(ids), unknown, mask_at)


def check_model_of(model: nn.Module, task: ProseWordsTask, names: tuple[str, ...]) -> None:
    """ValueError unless `model` was built for one of the tasks `names` with this task's words."""
    spec = getattr(model, "spec", None)
    if spec is None or spec.name not in names:
        raise ValueError(f"this is a model of the {getattr(spec, 'name', '?')} task; use one of "
                         f"{' or '.join(names)}, whose models read these words")
    check_vocab(model, task)


@torch.no_grad()
def forward(model: nn.Module, ids: Tensor) -> Tensor:
    """The model's output [T, V] for one sentence ids [T], in eval mode (dropout off); its mode is
    left as it was."""
    was_training = model.training
    model.eval()
    try:
        return model(ids[None])[0]  # [T, V]
    finally:
        model.train(was_training)


@dataclass(frozen=True)
class MaskGuess:
    """One model's distribution for the hidden word."""

    probs: Tensor  # [V] over the vocabulary
    reads: tuple[str, ...]  # the words the model read: the whole sentence, or the words left of the mask
    both_sides: bool  # True: read at the mask, both sides seen; False: the next word after `reads`
    vocab: tuple[str, ...]

    def top(self, k: int = 5) -> list[tuple[str, float]]:
        """The k most likely words, [(word, probability)], most likely first."""
        best = self.probs.topk(min(k, len(self.probs)))
        return [(self.vocab[i], p) for i, p in zip(best.indices.tolist(), best.values.tolist())]


def guess_mask(model: nn.Module, task: ProseWordsTask, text: str) -> MaskGuess:
    """The model's distribution for the <mask> of `text`: a masked_lm model's softmax at the mask
    with the whole sentence read, a word_lm model's softmax for the next word after the words left
    of the mask (the words right of it it never reads). ValueError for a bad sentence
    (read_sentence), another task's model, or a mask with no word left of it for a next-word model."""
    check_model_of(model, task, (MASK_TASK, NEXT_WORD_TASK))
    sentence = read_sentence(task, text, masked=True)
    at = sentence.mask_at
    if model.spec.name == MASK_TASK:
        probs = forward(model, sentence.ids)[at].softmax(-1)  # [V]
        return MaskGuess(probs, sentence.words, True, tuple(task.vocab))
    if at == 0:
        raise ValueError("the <mask> is the first word, and a next-word model reads only the words to its left: "
                         "there are none; put at least one word before the <mask>")
    probs = forward(model, sentence.ids[:at])[-1].softmax(-1)  # [V]: after the last word left of the mask
    return MaskGuess(probs, sentence.words[:at], False, tuple(task.vocab))


@dataclass(frozen=True)
class WordInContext:
    """One word's vector at every layer of a transformer, in one sentence."""

    word: str
    position: int
    sentence: tuple[str, ...]
    vectors: Tensor  # [L+1, d]: the input embedding's row, then the output of each block
    labels: tuple[str, ...]  # "embedding", "after block 0", "after block 1", ... (layer_labels)


def word_in_context(model: nn.Module, task: ProseWordsTask, text: str, word: str) -> WordInContext:
    """`word`'s vector at every layer when the model reads `text` (its first occurrence there):
    the embedding's row (layer 0), then the residual stream after each block at its position."""
    check_model_of(model, task, (MASK_TASK, NEXT_WORD_TASK))
    if not hasattr(model, "blocks"):
        raise ValueError(f"this {model.cfg.arch.upper()} has no transformer blocks; contextual vectors are read "
                         "from a transformer's residual stream (arch='transformer')")
    wanted = words(word) if isinstance(word, str) else []
    if len(wanted) != 1:
        raise ValueError(f"give one word to follow, e.g. 'bank'; got {word!r}")
    ids_of(task.vocab[len(SPECIALS):], wanted)  # ValueError naming a word the model lacks
    sentence = read_sentence(task, text, masked=False)
    if wanted[0] not in sentence.words:
        raise ValueError(f"{wanted[0]!r} is not a word of the sentence {' '.join(sentence.words)!r}; "
                         "type a sentence that uses it")
    at = sentence.words.index(wanted[0])
    vectors = layer_vectors(model, sentence.ids[None])[:, 0, at]  # [L+1, d]
    return WordInContext(wanted[0], at, sentence.words, vectors, layer_labels(model))


def layer_vectors(model: nn.Module, ids: Tensor) -> Tensor:
    """[L+1, B, T, d] every position's vector at every layer for windows ids [B, T], in eval mode:
    the embedding's row of its word (layer 0), then the residual stream after each block."""
    stack = model.stack_name
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad(), recording_blocks(model.cfg, {stack: model.blocks}, None) as cache:
            model(ids)
    finally:
        model.train(was_training)
    return torch.stack([model.embedding.weight.detach()[ids], *cache.stacks[stack].outputs])  # [L+1, B, T, d]


@dataclass(frozen=True)
class SentenceAttention:
    """Every attention of a transformer over one sentence, by Site, as a Recording keeps them (the
    attention figures read this field of either)."""

    attention_traces: dict[Site, AttentionTrace]


def attention_of(model: nn.Module, ids: Tensor) -> SentenceAttention:
    """Every block's attention weights over one sentence ids [T], in eval mode, no gradient: what a
    page shows of a model it must not train (a shared, shipped one)."""
    stack = model.stack_name
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad(), recording_blocks(model.cfg, {stack: model.blocks}, None) as cache:
            model(ids[None])
    finally:
        model.train(was_training)
    return SentenceAttention(attention_traces(cache.attention))


def layer_labels(model: nn.Module) -> tuple[str, ...]:
    """The names of layer_vectors' layers: "embedding", then each block's output, "after block 0", "after block
    1", ... (as the lesson's card says them)."""
    return ("embedding", *(f"after block {i}" for i in range(len(model.blocks))))


@dataclass(frozen=True)
class ContextCosines:
    """The same word in two sentences, layer by layer."""

    word: str
    first: WordInContext
    second: WordInContext
    cosines: Tensor  # [L+1]: layer 0 (the embedding) is 1, the same row in both
    static: float  # the static vector's cosine with itself across the two sentences: 1 by construction

    @property
    def labels(self) -> tuple[str, ...]:
        return self.first.labels


def compare_contexts(model: nn.Module, task: ProseWordsTask, word: str, first: str, second: str,
                     static: tuple[Tensor, tuple[str, ...]] | None = None) -> ContextCosines:
    """The cosine of `word`'s vectors in sentences `first` and `second` at every layer
    (word_in_context), and of its static vector: a word2vec model's, given as (vectors [V', d'],
    its vocabulary), else the model's own embedding row. A static vector is looked up by the word
    alone, so it is the one vector in both sentences."""
    a, b = word_in_context(model, task, first, word), word_in_context(model, task, second, word)
    cosines = F.cosine_similarity(a.vectors, b.vectors, dim=1)  # [L+1]
    if static is None:
        vector = a.vectors[0]  # [d]
    else:
        vectors, vocab = static
        vector = vectors[ids_of(vocab, [a.word])[0]].float()  # [d']
    in_first, in_second = vector, vector  # what a context-free model gives the word in each sentence
    static_cosine = F.cosine_similarity(in_first, in_second, dim=0).item()
    return ContextCosines(a.word, a, b, cosines, static_cosine)
