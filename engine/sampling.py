"""Text from a language model: greedy, temperature, top-k and top-p (nucleus) sampling, and beam
search, one token at a time after a prompt.

A recurrent model carries its state from token to token (one step of its stack per token); a
causal transformer rereads the text at every token (it has no state to carry), but only its last
`window` tokens: the length of the windows it was trained on (the task's seq_len), as nanoGPT's
generate crops to block_size. Past that length its positions were never trained (a learned table
has no row for them at all). Either way the distribution over the next token is the one the model
gives reading that context at once (`context_logits`; the tests check it).

    p(x_t = i) = softmax(z / temperature)_i, then
    top-k: only the k most likely tokens keep their probability (renormalised);
    top-p: only the fewest most likely tokens whose probabilities add up to at least p.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from .padding import State

METHODS = ("greedy", "sample", "top-k", "top-p", "beam")


@dataclass(frozen=True)
class Sampling:
    """How the next token is chosen. temperature applies to sample, top-k and top-p; k to top-k;
    p to top-p; width to beam (the hypotheses kept at each step)."""

    method: str = "sample"
    temperature: float = 1.0
    k: int = 10
    p: float = 0.9
    width: int = 4

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {', '.join(METHODS)}, got {self.method!r}")
        if not self.temperature > 0:
            raise ValueError(f"temperature must be above 0 (it divides the scores), got {self.temperature}")
        if not 1 <= self.k:
            raise ValueError(f"k must be at least 1, got {self.k}")
        if not 0 < self.p <= 1:
            raise ValueError(f"p must be in (0, 1], got {self.p}")
        if not 1 <= self.width <= 64:
            raise ValueError(f"the beam's width must be between 1 and 64, got {self.width}")


def check_language_model(model: nn.Module) -> None:
    """A model that predicts the next token from the ones before it, and only from those."""
    spec = model.spec
    if not (spec.mapping == "seq2seq" and spec.input_kind == "tokens" and spec.input_size == spec.output_size):
        raise ValueError(f"the {spec.name} task's model does not predict the next token of a text; generating "
                         "text needs a language model (the char LM task)")
    if model.cfg.bidirectional:
        raise ValueError("this model reads both ways, so it saw each character it predicts; generating text "
                         "needs a model that reads left to right (untick bidirectional / both sides)")


def next_probabilities(logits: Tensor, sampling: Sampling) -> Tensor:
    """The distribution the next token is drawn from: logits [..., V] -> probabilities [..., V],
    exactly 0 for the tokens top-k or top-p leave out."""
    probs = torch.softmax(logits.double() / sampling.temperature, dim=-1)  # [..., V]
    if sampling.method == "top-k":
        kept = probs.topk(min(sampling.k, probs.shape[-1]), dim=-1).indices  # [..., k]
        probs = torch.zeros_like(probs).scatter(-1, kept, probs.gather(-1, kept))
    elif sampling.method == "top-p":
        sorted_probs, order = probs.sort(dim=-1, descending=True)  # [..., V]
        before = sorted_probs.cumsum(-1) - sorted_probs  # mass of the more likely tokens
        keep = before < sampling.p  # the most likely, until p is reached (the first always)
        probs = torch.zeros_like(probs).scatter(-1, order, sorted_probs * keep)
    return probs / probs.sum(-1, keepdim=True)


def context_window(model: nn.Module, window: int | None = None) -> int | None:
    """How many of the latest tokens the model reads to score the next one: None (all of them,
    through its state) for a recurrent model; for a transformer `window` (the seq_len it was
    trained on), and at most its learned position table's rows (a table has none past them)."""
    if hasattr(model, "rnn"):
        return None
    if window is not None and window < 1:
        raise ValueError(f"the context window must be at least 1 token, got {window}")
    table = getattr(getattr(model, "positions", None), "table", None)
    limits = [w for w in (window, None if table is None else table.num_embeddings) if w is not None]
    return min(limits) if limits else None


CHUNK = 64  # windows a transformer reads at once in context_logits: attention holds [CHUNK, heads, W, W]


def context_logits(model: nn.Module, text: Tensor, window: int | None = None) -> Tensor:
    """[T - 1, V]: the scores of the token after each of text[:-1] ([T] token ids), each from the
    context `generate` gives the model there: everything before for a recurrent model (its state;
    one pass), and for a transformer the last context_window(model, window) tokens (one pass over
    the first window, then the window ending at each later token). In eval mode, as generate reads;
    the model's mode is left as it was."""
    read = text[:-1]  # [T - 1]
    W = context_window(model, window)
    was_training = model.training
    model.eval()  # as generate reads (no dropout)
    try:
        with torch.no_grad():
            if W is None or len(read) <= W:
                return model(read[None])[0]  # [T - 1, V]
            later = read.unfold(0, W, 1)[1:]  # [T - 1 - W, W]: the window ending at each token past the first W
            return torch.cat([model(read[None, :W])[0]]  # [W, V]
                             + [model(chunk)[:, -1] for chunk in later.split(CHUNK)])  # each [<=CHUNK, V]
    finally:
        model.train(was_training)


class Reader:
    """Feeds tokens to a model and gives the scores of the next one: [B, V] logits. Recurrent
    models carry their state; transformers reread the text so far, cropped to their window."""

    def __init__(self, model: nn.Module, prompt: Tensor, window: int | None = None):
        """prompt [B, P] token ids, P >= 1; window: a transformer's context (context_window)."""
        self.model, self.recurrent = model, hasattr(model, "rnn")
        self.window = context_window(model, window)
        self.state: State | None = None
        self.text = prompt
        self.logits = self.read(prompt)  # [B, V]

    def read(self, new: Tensor) -> Tensor:
        """new [B, T] tokens after the text so far -> the logits after the last one, [B, V]."""
        if self.recurrent:
            out, self.state = self.model.features(self.model.inputs(new), self.state)  # [B, T, H]
            return self.model.head(out[:, -1])  # [B, V]
        context = self.text if self.window is None else self.text[:, -self.window:]  # [B, <= window]
        return self.model(context)[:, -1]  # [B, T, V] -> [B, V]

    def take(self, token: Tensor) -> None:
        """token [B]: append it and score what follows."""
        self.text = torch.cat([self.text, token[:, None]], dim=1)  # [B, T + 1]
        self.logits = self.read(token[:, None])

    def keep(self, rows: Tensor) -> None:
        """Keep (and repeat) only these rows of the batch [B'], in this order: a beam's survivors."""
        self.text, self.logits = self.text[rows], self.logits[rows]
        if isinstance(self.state, tuple):
            self.state = tuple(s[:, rows] for s in self.state)  # each [layers, B', H]
        elif self.state is not None:
            self.state = self.state[:, rows]


@torch.no_grad()
def generate(model: nn.Module, prompt: Tensor, length: int, sampling: Sampling,
             generator: torch.Generator | None = None, window: int | None = None) -> Tensor:
    """The prompt [P] followed by `length` tokens chosen by `sampling`: [P + length]. Eval mode
    (no dropout) while it runs. window: the length of the windows a transformer was trained on
    (the task's seq_len), the most of the text it reads at each token (context_window); None
    reads all it can. A recurrent model ignores it and reads everything through its state."""
    check_language_model(model)
    if prompt.dim() != 1 or len(prompt) == 0:
        raise ValueError("the prompt is empty: give at least one character to start from")
    was_training = model.training
    model.eval()
    try:
        if sampling.method == "beam":
            return beam(model, prompt, length, sampling.width, window)
        reader = Reader(model, prompt[None], window)
        for _ in range(length):
            if sampling.method == "greedy":
                token = reader.logits.argmax(-1)  # [1]
            else:
                token = torch.multinomial(next_probabilities(reader.logits, sampling), 1, generator=generator)[:, 0]
            reader.take(token)
        return reader.text[0]
    finally:
        model.train(was_training)


def beam(model: nn.Module, prompt: Tensor, length: int, width: int, window: int | None = None) -> Tensor:
    """The most likely continuation a beam of `width` hypotheses finds (sum of log-probabilities,
    every continuation `length` tokens long, so no length normalisation is needed)."""
    reader = Reader(model, prompt[None], window)
    scores = torch.zeros(1, dtype=torch.float64)  # [B]: log p of each hypothesis's continuation
    for _ in range(length):
        total = scores[:, None] + torch.log_softmax(reader.logits.double(), dim=-1)  # [B, V]
        V = total.shape[1]
        scores, flat = total.flatten().topk(min(width, total.numel()))  # [B']
        reader.keep(flat // V)
        reader.take(flat % V)
    return reader.text[0]  # topk sorts: the first hypothesis scores highest


def log_likelihood(model: nn.Module, text: Tensor, start: int, window: int | None = None) -> float:
    """sum over t >= start of log p(text[t] | context) as the model gives it reading each context at
    once (context_logits: the whole text before, or a transformer's last `window` tokens): the score
    a beam's continuation of a prompt of `start` tokens has."""
    logits = context_logits(model, text, window).double()  # [T - 1, V]
    log_p = torch.log_softmax(logits, dim=-1).gather(1, text[1:, None])[:, 0]  # [T - 1]
    return log_p[start - 1:].sum().item()
