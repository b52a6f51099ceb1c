"""Beam search: decode keeping the `width` most likely target prefixes, not just the best one.

At every step each kept prefix is extended by every token, and the `width` extensions with the
highest total log-probability log p(y_1..y_t | x) survive. One that ends with <eos> is finished
and leaves the beam. The search stops when nothing is left to extend, when the target reaches
the task's length, or when the best finished sequence beats every prefix still in the beam
(a prefix's log-probability can only fall). Scores are not length-normalised: the encdec tasks
here have targets of one length. Width 1 is greedy decoding, up to its first <eos>.

The result is itself a recording: every step's candidates with their scores.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from .config import check_int
from .seq2seq import EOS, SOS
from .tasks.base import DECODERS

MAX_WIDTH = 100


@dataclass(frozen=True)
class Candidate:
    tokens: tuple[int, ...]  # target tokens after <sos> (ending with <eos> once finished)
    score: float  # log p(tokens | source)


@dataclass
class Beam:
    steps: list[list[Candidate]]  # after each step, every extension kept, best first (finished ones too)
    finished: list[Candidate]  # every candidate that ended with <eos>, best first

    @property
    def best(self) -> Candidate:
        """The most likely finished sequence; if none finished, the best of the last step."""
        return self.finished[0] if self.finished else self.steps[-1][0]


@torch.no_grad()
def beam_search(model: nn.Module, x: Tensor, width: int = 3) -> Beam:
    """Beam search for one source sequence x ([S] tokens, or [S, D] values for a pointer
    network) with an encoder-decoder model."""
    check_int("width", width, 1, MAX_WIDTH)
    if getattr(getattr(model, "spec", None), "mapping", None) not in DECODERS:
        raise ValueError(
            "beam search decodes with an encoder-decoder; build the model for an encdec task such as "
            "reverse, or a pointer task such as sort"
        )
    tokens = model.spec.input_kind == "tokens"
    if x.dim() != (1 if tokens else 2):
        shape = "token ids of shape [S]" if tokens else f"values of shape [S, {model.spec.input_size}]"
        raise ValueError(f"beam_search takes one source sequence, {shape}; got shape {list(x.shape)}")
    was_training = model.training
    model.eval()
    try:
        return search(model, x, width)
    finally:
        model.train(was_training)


def search(model: nn.Module, x: Tensor, width: int) -> Beam:
    state = model.start(x[None])  # a batch of one; it grows to the beam's width
    alive, finished, steps = [Candidate((), 0.0)], [], []
    for _ in range(model.spec.out_len):
        last = torch.tensor([c.tokens[-1] if c.tokens else SOS for c in alive])  # [K]
        logits, state = model.step(last, state)  # [K, V]
        so_far = torch.tensor([c.score for c in alive], dtype=logits.dtype)  # [K]
        total = so_far[:, None] + logits.log_softmax(dim=-1)  # [K, V]
        V = total.shape[1]
        top = total.flatten().topk(min(width, total.numel()))
        kept, rows = [], []
        for score, flat in zip(top.values.tolist(), top.indices.tolist()):
            if score == float("-inf"):  # a token of probability 0 (a pointer's <sos>) is no candidate
                break
            row, token = divmod(flat, V)
            candidate = Candidate(alive[row].tokens + (token,), score)
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
    return Beam(steps, finished)
