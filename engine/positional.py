"""Where each token is: the sinusoid of Vaswani et al. (2017), or one learned vector per position.

Self-attention is blind to order (permute the tokens and the outputs permute with them), so
the transformer adds a position signal to every token's embedding before the first layer.
"""
from __future__ import annotations

import torch
from torch import Tensor, nn

from .config import MAX_HIDDEN, ModelConfig, check_int
from .tasks.base import MAX_SEQ_LEN


def positional_encoding(max_len: int, d_model: int) -> Tensor:
    """[max_len, d_model]: PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(pos / 10000^(2i/d)).

    Each pair of dimensions is a clock turning at its own rate, from one turn per 2*pi positions
    (i=0) to one per 10000*2*pi; PE(pos + k) is a rotation of PE(pos), the same for every pos.
    """
    check_int("max_len", max_len, 1, 100_000)
    check_int("d_model", d_model, 1, 4 * MAX_HIDDEN)
    pos = torch.arange(max_len, dtype=torch.float64)[:, None]  # [T, 1]
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # [ceil(d/2)]: 2i
    angle = pos / 10000 ** (two_i / d_model)  # [T, ceil(d/2)]
    pe = torch.zeros(max_len, d_model, dtype=torch.float64)  # [T, d]
    pe[:, 0::2] = torch.sin(angle)  # even dimensions
    pe[:, 1::2] = torch.cos(angle[:, : d_model // 2])  # odd dimensions (an odd d_model has one fewer)
    return pe.to(torch.get_default_dtype())


class Positions(nn.Module):
    """Adds the position signal: the fixed sinusoid, a trained table (`table.weight[pos]`), or
    nothing ("none")."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.d_model, self.kind = cfg.hidden_size, cfg.position_encoding
        learned = cfg.position_encoding == "learned"
        self.table = nn.Embedding(MAX_SEQ_LEN, cfg.hidden_size) if learned else None

    def forward(self, x: Tensor) -> Tensor:
        """x + PE: [B, T, d] -> [B, T, d]."""
        T = x.shape[1]
        if self.kind == "none":
            return x
        if self.table is None:
            return x + positional_encoding(T, self.d_model).to(x.dtype)  # [B, T, d]
        if T > MAX_SEQ_LEN:
            raise ValueError(
                f"learned positions go up to {MAX_SEQ_LEN}, and this sequence has {T}; "
                "shorten it or use position_encoding='sinusoidal'"
            )
        return x + self.table.weight[:T]  # [B, T, d]
