"""Beam search: decode keeping the `width` most likely target prefixes, not just the best one.

At every step each kept prefix is extended by every token, and the `width` extensions with the
highest total log-probability log p(y_1..y_t | x) survive. One that ends with <eos> is finished
and leaves the beam. The search stops when nothing is left to extend, when the target reaches
the task's length, or when the best finished sequence beats every prefix still in the beam
(a prefix's log-probability can only fall). Scores are not length-normalised: the encdec tasks
here have targets of one length. Width 1 is greedy decoding, up to its first <eos>.

Forcing a prefix (Seq2Seq-Vis's idea, Strobelt et al. 2018): `forced_search` feeds the decoder
given tokens y_1..y_k first, whatever it would have chosen (a student replacing the token at step
t), and the beam goes on from there. The prefix's score is its own log-probability,

    log p(y_1..y_k | x) = sum_{t<=k} log softmax(z_t)[y_t],   z_t the decoder's logits at step t,

so every candidate's score is still log p(tokens | x), comparable with an unforced search's.

The result is itself a recording: every step's candidates with their scores, and where the
decoder looked to write each token. A decoder with attention computes, at step t, a distribution
alpha_t over the source (a recurrent decoder's alignment, a pointer network's pointer, a
transformer's last cross-attention); it depends on the prefix read so far, so every hypothesis
has its own. The search keeps the row each step computed, read from the attention module as the
step runs (a forward hook: the rows are the decoding itself, not a second pass that could drift).
Hypotheses that share a prefix share its rows; they part from the step after their split.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch
from torch import Tensor, nn

from .attention_seq2seq import AttentionEncoderDecoder
from .config import check_int
from .hooks import hooked
from .pointer import PointerNetwork
from .seq2seq import EOS, SOS
from .tasks.base import DECODERS
from .transformer_seq2seq import TransformerEncoderDecoder

MAX_WIDTH = 100


@dataclass(frozen=True)
class Candidate:
    tokens: tuple[int, ...]  # target tokens after <sos> (ending with <eos> once finished)
    score: float  # log p(tokens | source)
    # [len(tokens), heads, S_k]: row t is the decoder's attention over the source's keys at the step
    # that wrote tokens[t], keyed as the recording's alignment, pointer or cross-attention trace;
    # None for a decoder without attention. Not compared: two candidates are equal by tokens and score.
    attention: Tensor | None = field(default=None, compare=False, repr=False)


@dataclass
class Beam:
    steps: list[list[Candidate]]  # after each step, every extension kept, best first (finished ones too)
    finished: list[Candidate]  # every candidate that ended with <eos>, best first
    forced: int = 0  # how many first steps were forced: each of those steps holds the one forced prefix

    @property
    def best(self) -> Candidate:
        """The most likely finished sequence; if none finished, the best of the last step."""
        return self.finished[0] if self.finished else self.steps[-1][0]


@torch.no_grad()
def beam_search(model: nn.Module, x: Tensor, width: int = 3) -> Beam:
    """Beam search for one source sequence x ([S] tokens, or [S, D] values for a pointer
    network) with an encoder-decoder model."""
    return forced_search(model, x, (), width)


@torch.no_grad()
def forced_search(model: nn.Module, x: Tensor, prefix: tuple[int, ...], width: int = 3) -> Beam:
    """Beam search for one source sequence x (as beam_search's) whose first target tokens are
    `prefix` (the tokens after <sos>): the decoder reads them whatever it would have chosen, and
    the beam of `width` goes on from there. beam.steps[:len(prefix)] hold the forced prefixes,
    one a step, scored log p(y_1..y_t | x); the rest is the search."""
    check_int("width", width, 1, MAX_WIDTH)
    check_source(model, x)
    prefix = check_prefix(prefix, model.spec.out_len, writable(model, x))
    was_training = model.training
    model.eval()
    try:
        return search(model, x, width, prefix)
    finally:
        model.train(was_training)


def check_source(model: nn.Module, x: Tensor) -> None:
    if getattr(getattr(model, "spec", None), "mapping", None) not in DECODERS:
        raise ValueError(
            "beam search decodes with an encoder-decoder; build the model for an encdec task such as "
            "reverse, or a pointer task such as sort"
        )
    tokens = model.spec.input_kind == "tokens"
    if x.dim() != (1 if tokens else 2):
        shape = "token ids of shape [S]" if tokens else f"values of shape [S, {model.spec.input_size}]"
        raise ValueError(f"beam_search takes one source sequence, {shape}; got shape {list(x.shape)}")


def writable(model: nn.Module, x: Tensor) -> range:
    """The target tokens the decoder can write for the source x: an encoder-decoder's whole
    target vocabulary (an untrained one may even write <sos>); a pointer network's <eos> and one
    class per position of this x ([S, D]), never <sos>, whose probability is exactly 0."""
    if model.spec.mapping == "pointer":
        return range(EOS, x.shape[0] + 2)
    return range(model.spec.output_size)


def check_prefix(prefix, out_len: int, tokens: range) -> tuple[int, ...]:
    """The forced tokens as a tuple, or a ValueError saying which token cannot be forced and why."""
    if isinstance(prefix, (str, bytes)) or not hasattr(prefix, "__iter__"):
        raise ValueError(f"prefix must be a sequence of target token ids, got {prefix!r}")
    prefix = tuple(prefix)
    if len(prefix) > out_len:
        raise ValueError(
            f"the prefix has {len(prefix)} tokens, and the target has at most {out_len}; force at most {out_len}"
        )
    for t, token in enumerate(prefix):
        if isinstance(token, bool) or not isinstance(token, int) or token not in tokens:
            raise ValueError(
                f"prefix token {t} is {token!r}, which the decoder cannot write: it writes the ids "
                f"{tokens.start}..{tokens.stop - 1}"
            )
        if token == EOS and t < len(prefix) - 1:
            raise ValueError(
                f"prefix token {t} is <eos> (id {EOS}), which ends the target, and {len(prefix) - 1 - t} more "
                "follow it; end the prefix there or force another token"
            )
    return prefix


def looked_at_by(model: nn.Module) -> nn.Module | None:
    """The module whose output, at each decoding step, is the decoder's attention over the source
    (what a recording keeps as the alignment, the pointer, or the top layer's cross-attention);
    None for a decoder without attention."""
    if isinstance(model, PointerNetwork):
        return model.pointer  # Attended over [e_end, e_0 ..]
    if isinstance(model, AttentionEncoderDecoder):
        return model.attention  # Attended over the encoder's states
    if isinstance(model, TransformerEncoderDecoder):
        return model.decoder[-1].cross_attention.hook_weights  # the weights tensor itself
    return None


@contextmanager
def attention_rows(model: nn.Module) -> Iterator[list[Tensor]]:
    """Within the block, each model.step appends the attention its decoder computed, [K, heads, S_k]:
    for each of the K prefixes, the row of the token it just read (a transformer reruns the whole
    prefix, so that is its last query). Nothing is appended for a decoder without attention."""
    seen: list[Tensor] = []
    point = looked_at_by(model)

    def keep(module: nn.Module, inputs, out) -> None:
        weights = out if isinstance(out, Tensor) else out.weights  # [K, heads, T_q, S_k]
        seen.append(weights[:, :, -1])  # [K, heads, S_k]

    with hooked([(point, keep)] if point is not None else []):
        yield seen


def with_row(attention: Tensor | None, looked: Tensor | None, k: int) -> Tensor | None:
    """A prefix's rows [t, heads, S_k] and its step's, row k of looked [K, heads, S_k]: [t+1, heads, S_k]."""
    if looked is None:  # a decoder without attention
        return None
    row = looked[k : k + 1]  # [1, heads, S_k]
    return row if attention is None else torch.cat([attention, row])  # [t+1, heads, S_k]


def search(model: nn.Module, x: Tensor, width: int, prefix: tuple[int, ...]) -> Beam:
    state = model.start(x[None])  # a batch of one; it grows to the beam's width
    alive, finished, steps = [Candidate((), 0.0)], [], []
    with attention_rows(model) as seen:
        for t in range(model.spec.out_len):
            last = torch.tensor([c.tokens[-1] if c.tokens else SOS for c in alive])  # [K]
            seen.clear()
            logits, state = model.step(last, state)  # [K, V]
            looked = seen[-1] if seen else None  # [K, heads, S_k]: where each prefix looked for its next token
            so_far = torch.tensor([c.score for c in alive], dtype=logits.dtype)  # [K]
            total = so_far[:, None] + logits.log_softmax(dim=-1)  # [K, V]
            kept, rows = [], []
            for score, row, token in forced(total, prefix[t]) if t < len(prefix) else best(total, width):
                parent = alive[row]
                candidate = Candidate(parent.tokens + (token,), score, with_row(parent.attention, looked, row))
                kept.append(candidate)
                if token == EOS:
                    finished.append(candidate)
                else:
                    rows.append(row)
            steps.append(kept)
            alive = [c for c in kept if c.tokens[-1] != EOS]
            finished.sort(key=lambda c: -c.score)
            if not alive or (finished and finished[0].score >= alive[0].score):
                break
            state = state.select(torch.tensor(rows))  # the states of the prefixes that go on
    return Beam(steps, finished, len(prefix))


def best(total: Tensor, width: int) -> list[tuple[float, int, int]]:
    """The `width` best extensions (score, row, token) of the prefixes' scores total [K, V], best first."""
    V = total.shape[1]
    top = total.flatten().topk(min(width, total.numel()))
    picks = []
    for score, flat in zip(top.values.tolist(), top.indices.tolist()):
        if score == float("-inf"):  # a token of probability 0 (a pointer's <sos>) is no candidate
            break
        picks.append((score, *divmod(flat, V)))
    return picks


def forced(total: Tensor, token: int) -> list[tuple[float, int, int]]:
    """The one extension a forced step allows: `token` after the one prefix (total [1, V])."""
    return [(total[0, token].item(), 0, token)]
