"""Attention, written out so that every weight can be recorded.

A query q scores every key k_i, a softmax turns the scores into weights alpha_i that sum to 1,
and the output is the weighted sum of the values: the context c = sum_i alpha_i v_i.

- The transformer's `scaled_dot_product_attention`: softmax(Q K^T / sqrt(d_k) + M) V (or, for the
  "why sqrt(d_k)" experiment, without the division), with the
  mask M (0 where a query may look, -inf where it may not: the future of a causal layer, the
  padding of a padded input) added before the softmax, so masked weights are exactly 0.
- The score functions of the recurrent encoder-decoder (`Attention`), by name: "dot" and
  "general" (Luong et al. 2015), "additive" (Bahdanau et al. 2015; Luong's "concat"),
  "scaled_dot" (Vaswani et al. 2017), "cosine" (content-based, Graves et al. 2014) and
  "location" (Luong et al. 2015: alpha_t = softmax(W_a s_t), which reads no encoder state).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .config import LOCATION_POSITIONS, SCORES, check_choice


@dataclass
class Attended:
    """One attention layer's result, every head kept apart (a recurrent decoder's has one head)."""

    context: Tensor  # [B, heads, T_q, d_v]  sum_i alpha_ti v_i, before any output projection
    weights: Tensor  # [B, heads, T_q, T_k]  alpha_ti: each row sums to 1
    logits: Tensor  # [B, heads, T_q, T_k]  the softmax's input (scaled, masked entries -inf)


def check_keys(keys: Tensor) -> None:
    if keys.shape[-2] == 0:
        raise ValueError(
            "attention needs at least one position to look at, and the source is empty; give a non-empty sequence"
        )


def identity(x: Tensor) -> Tensor:
    return x


def scaled_dot_product_attention(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None,
                                 hooks: tuple[Callable, Callable, Callable] = (identity,) * 3,
                                 scale: bool = True) -> Attended:
    """softmax(Q K^T / sqrt(d_k) + M) V for q [B, h, T_q, d_k], k [B, h, T_k, d_k], v [B, h, T_k, d_v];
    mask broadcasts to [B, h, T_q, T_k]. If q and k have independent components of variance 1,
    q . k = sum_i q_i k_i has variance d_k: dividing by sqrt(d_k) keeps the logits' variance near 1
    however wide the heads. scale=False drops the division (the "why sqrt(d_k)" experiment):
    softmax(Q K^T + M) V, whose logits spread like sqrt(d_k), so the softmax saturates and its
    gradient vanishes. `hooks` pass the logits, the weights and the context on as they are
    computed (a MultiHeadAttention's hook points, where a recording reads them)."""
    check_keys(k)
    on_logits, on_weights, on_context = hooks
    logits = q @ k.transpose(-2, -1)  # [B, h, T_q, T_k]
    if scale:
        logits = logits / math.sqrt(q.shape[-1])
    if mask is not None:
        logits = logits + mask  # -inf where a query may not look
    logits = on_logits(logits)
    weights = on_weights(torch.softmax(logits, dim=-1))  # [B, h, T_q, T_k]
    return Attended(on_context(weights @ v), weights, logits)  # context: [B, h, T_q, d_v]


def causal_mask(T: int, dtype: torch.dtype = torch.float32) -> Tensor:
    """[T, T]: 0 on and below the diagonal, -inf above it: position t sees positions <= t only."""
    future = torch.ones(T, T, dtype=torch.bool).triu(1)  # [T, T]: True where key > query
    return torch.zeros(T, T, dtype=dtype).masked_fill(future, float("-inf"))


def key_padding_mask(padded: Tensor, dtype: torch.dtype = torch.float32) -> Tensor:
    """padded [B, T_k] (True at a padding position) -> [B, 1, 1, T_k]: no query looks at padding."""
    return torch.zeros(padded.shape, dtype=dtype).masked_fill(padded, float("-inf"))[:, None, None]


def padding_mask(padded: Tensor, causal: bool = False, dtype: torch.dtype = torch.float32) -> Tensor:
    """The mask of a layer whose keys are a padded sequence, padded [B, T_k] True at padding:
    -inf on the padding and, when causal (self-attention, T_q = T_k), on the future. [B, 1, 1, T_k],
    or [B, 1, T_k, T_k] causal. A query left with nothing but padding to see (a front pad in a
    causal stack, or a sequence that is all padding) sees that padding as unmasked: a row of
    nothing but -inf would make its softmax 0/0, and the NaN would reach every position through
    the values."""
    T_k = padded.shape[1]
    ahead = torch.ones(T_k, T_k, dtype=torch.bool).triu(1)  # [T_k, T_k]: True where key > query
    future = ahead if causal else torch.zeros(1, T_k, dtype=torch.bool)  # [T_q, T_k]
    hidden = future | padded[:, None, None]  # [B, 1, T_q, T_k]
    hidden = torch.where(hidden.all(-1, keepdim=True), future, hidden)  # [B, 1, T_q, T_k]: never a whole row
    return torch.zeros(hidden.shape, dtype=dtype).masked_fill(hidden, float("-inf"))


class DotScore(nn.Module):
    """score(s, h) = s . h  (Luong "dot")."""

    def forward(self, s: Tensor, h: Tensor) -> Tensor:  # s [B, T_q, D], h [B, S, D]
        return s @ h.transpose(1, 2)  # [B, T_q, S]


class GeneralScore(nn.Module):
    """score(s, h) = s^T W_a h  (Luong "general": a bilinear form, learned)."""

    def __init__(self, size: int):
        super().__init__()
        self.W_a = nn.Linear(size, size, bias=False)

    def forward(self, s: Tensor, h: Tensor) -> Tensor:
        return s @ self.W_a(h).transpose(1, 2)  # [B, T_q, S]


class AdditiveScore(nn.Module):
    """score(s, h) = v^T tanh(W [s; h])  (Bahdanau; Luong "concat"). W [s; h] is computed as
    W_s s + W_h h, its two halves, so each (query, key) pair costs an add, not a matmul."""

    def __init__(self, size: int):
        super().__init__()
        self.W_s = nn.Linear(size, size, bias=False)
        self.W_h = nn.Linear(size, size)
        self.v = nn.Linear(size, 1, bias=False)

    def forward(self, s: Tensor, h: Tensor) -> Tensor:
        hidden = torch.tanh(self.W_s(s)[:, :, None] + self.W_h(h)[:, None])  # [B, T_q, S, D]
        return self.v(hidden).squeeze(-1)  # [B, T_q, S]


class ScaledDotScore(nn.Module):
    """score(s, h) = s . h / sqrt(D)  (Vaswani et al.)."""

    def forward(self, s: Tensor, h: Tensor) -> Tensor:
        return s @ h.transpose(1, 2) / math.sqrt(s.shape[-1])  # [B, T_q, S]


class CosineScore(nn.Module):
    """score(s, h) = beta cos(s, h)  (content-based addressing, Graves et al. 2014). A cosine lies
    in [-1, 1], too flat for a softmax to pick one position, so a learned key strength beta > 0
    (one for the model, where the Neural Turing Machine emits one per step) sharpens it."""

    def __init__(self):
        super().__init__()
        self.log_beta = nn.Parameter(torch.tensor(math.log(5.0)))

    def forward(self, s: Tensor, h: Tensor) -> Tensor:
        cosine = F.normalize(s, dim=-1) @ F.normalize(h, dim=-1).transpose(1, 2)  # [B, T_q, S]
        return self.log_beta.exp() * cosine  # [B, T_q, S]


class LocationScore(nn.Module):
    """score(s_t, h_i) = (W_a s_t)_i  (Luong "location": alpha_t = softmax(W_a s_t)). The decoder's
    state alone says where to look, by position: h_i is never read (the context still sums the
    h_i). W_a has one row per position, `positions` of them, and a source of S tokens keeps the
    first S: position i is scored the same whatever the source's length, and a source longer
    than `positions` has positions W_a cannot score, so it is refused.

    Positions count the source's real tokens only (padded [B, S], True at a pad): a front-padded
    date's first character is position 0 however long the date, as the encoder, which skips the
    pads, sees it. The pads' own scores are masked by the Attention."""

    def __init__(self, size: int, positions: int = LOCATION_POSITIONS):
        super().__init__()
        self.W_a = nn.Linear(size, positions, bias=False)

    def forward(self, s: Tensor, h: Tensor, padded: Tensor | None = None) -> Tensor:
        S, positions = h.shape[1], self.W_a.out_features
        if S > positions:
            raise ValueError(
                f"location-based attention scores at most {positions} source positions (W_a has one row per "
                f"position), and this source has {S}; use a shorter source or another score function"
            )
        scores = self.W_a(s)  # [B, T_q, positions]
        if padded is None:
            return scores[..., :S]  # [B, T_q, S]: the first S
        rank = ((~padded).cumsum(1) - 1).clamp(min=0)  # [B, S]: each real token's place among them
        return scores.gather(-1, rank[:, None].expand(-1, s.shape[1], -1))  # [B, T_q, S]


def make_score(name: str, size: int) -> nn.Module:
    check_choice("attention", name, SCORES)
    if name == "general":
        return GeneralScore(size)
    if name == "additive":
        return AdditiveScore(size)
    if name == "location":
        return LocationScore(size)
    return {"dot": DotScore, "scaled_dot": ScaledDotScore, "cosine": CosineScore}[name]()


class Attention(nn.Module):
    """A recurrent decoder's attention over the encoder's states h_i (keys and values at once):
    e_ti = score(s_t, h_i), alpha_ti = softmax_i(e_ti), c_t = sum_i alpha_ti h_i. The states of
    padding tokens (padded [B, S], True there) score -inf, so they get exactly 0 weight."""

    def __init__(self, score: str, size: int):
        super().__init__()
        self.score = make_score(score, size)

    def forward(self, s: Tensor, h: Tensor, padded: Tensor | None = None) -> Attended:  # s [B, T_q, D], h [B, S, D]
        check_keys(h)
        # Location-based scores count positions past the padding; the others score each state as it is.
        e = self.score(s, h, padded) if isinstance(self.score, LocationScore) else self.score(s, h)  # [B, T_q, S]
        if padded is not None:
            e = e + padding_mask(padded, dtype=e.dtype)[:, 0]  # [B, T_q, S]: -inf on padding
        alpha = torch.softmax(e, dim=-1)  # [B, T_q, S]
        c = alpha @ h  # [B, T_q, D]
        return Attended(c[:, None], alpha[:, None], e[:, None])  # one head
