"""The spectra of W_hh, on demand: eigenvalues and singular values of every [H, H] gate block.

Two reasons this is not part of every recording:
- cost: each block's eigendecomposition is O(H^3); an LSTM at H=512, two layers, bidirectional
  has 16 blocks and took 5 s a recording on the class server, so spectra have a size limit.
- safety: on a matrix holding NaN or inf, this torch build's `torch.linalg.eigvals` does not
  raise, it segfaults (oneMKL rejects the input of its balancing step) and takes the whole
  server, every student's session, with it. Every matrix is checked finite before any
  torch.linalg call sees it, here and in the Jacobian norms of engine.record.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from .cells import GATE_COUNT, GATE_NAMES
from .config import ModelConfig
from .recurrent import layer_weights, suffix

# Blocks x H^3 over every stack; about 0.25 s on one core (e.g. 16 blocks at H=256, 2 at H=512).
MAX_SPECTRA_WORK = 2**28


@dataclass(frozen=True)
class Spectra:
    """One recurrent stack's W_hh, block by block (the gates, or ("hh",) for a vanilla RNN)."""

    blocks: tuple[str, ...]
    eigenvalues: Tensor  # [layers, directions, blocks, H] complex
    singular_values: Tensor  # [layers, directions, blocks, H] descending


def check_finite(named: Iterable[tuple[str, Tensor]]) -> None:
    """ValueError naming the first tensor that holds NaN or inf."""
    for name, values in named:
        if not bool(torch.isfinite(values).all()):
            raise ValueError(
                f"{name} holds NaN or inf, so it has no spectrum; the model diverged or the "
                "checkpoint is damaged: reset the model, or train with a lower lr or clip_norm"
            )


def spectral_norms(matrices: Tensor) -> Tensor:
    """||J||_2 of each matrix of a [N, H, H] batch: [N]. A matrix holding NaN or inf gets NaN
    and never reaches the SVD (see the module's docstring)."""
    finite = torch.isfinite(matrices).flatten(1).all(dim=1)  # [N]
    norms = torch.full(matrices.shape[:1], float("nan"), dtype=matrices.dtype)  # [N]
    if bool(finite.any()):
        norms[finite] = torch.linalg.matrix_norm(matrices[finite], ord=2)  # [N_finite]
    return norms


def recurrent_weights(model: nn.Module) -> dict[str, tuple[ModelConfig, list[tuple[str, Tensor]]]]:
    """Every recurrent stack's config and W_hh of each layer and direction, by parameter name:
    {stack: (cfg, [(name, [G*H, H]), ...])}, layers outer, directions inner."""
    stacks = {}
    for stack, (cfg, rnn) in model.recurrent_stacks().items():
        weights = [
            (f"{stack}.weight_hh{suffix(layer, direction)}", layer_weights(rnn, layer, direction).w_hh.detach())
            for layer in range(cfg.num_layers)
            for direction in range(cfg.num_directions)
        ]
        stacks[stack] = (cfg, weights)
    return stacks


def check_spectra_size(stacks: dict) -> None:
    """ValueError, saying what to change, when the spectra would cost more than MAX_SPECTRA_WORK."""
    work = sum(GATE_COUNT[cfg.arch] * w.shape[1] ** 3 for cfg, weights in stacks.values() for _, w in weights)
    if work > MAX_SPECTRA_WORK:
        widest = max(cfg.hidden_size for cfg, _ in stacks.values())
        fits = int(widest * (MAX_SPECTRA_WORK / work) ** (1 / 3))
        raise ValueError(
            f"the spectra of W_hh cost blocks x H^3 = {work:.2g} operations here, over the limit of "
            f"{MAX_SPECTRA_WORK:.2g} (about a quarter of a second); use a hidden_size of about {fits} "
            "or less, fewer layers, or one direction, or leave the spectra out"
        )


@torch.no_grad()
def weight_spectra(model: nn.Module) -> dict[str, Spectra]:
    """The eigenvalues and singular values of every [H, H] block of every W_hh, per recurrent
    stack ("rnn", or "encoder" and "decoder"). ValueError if the model has no recurrent stack,
    if any W_hh holds NaN or inf (naming it), or if the spectra are over the size limit."""
    stacks = recurrent_weights(model)
    if not stacks:
        raise ValueError(
            f"a {type(model).__name__} has no recurrent weights W_hh, so no spectra; build an RNN, LSTM or GRU"
        )
    check_finite(w for _, weights in stacks.values() for w in weights)
    check_spectra_size(stacks)
    return {name: stack_spectra(cfg, [w for _, w in weights]) for name, (cfg, weights) in stacks.items()}


def stack_spectra(cfg: ModelConfig, weights: list[Tensor]) -> Spectra:
    """weights: each layer and direction's W_hh [G*H, H], already checked finite."""
    H, G = cfg.hidden_size, GATE_COUNT[cfg.arch]
    square = torch.stack([w.reshape(G, H, H) for w in weights])  # [L*dirs, G, H, H]
    shape = (cfg.num_layers, cfg.num_directions, G, H)
    return Spectra(
        blocks=GATE_NAMES[cfg.arch] or ("hh",),
        eigenvalues=torch.linalg.eigvals(square).reshape(shape),  # [L, dirs, G, H]
        singular_values=torch.linalg.svdvals(square).reshape(shape),  # [L, dirs, G, H]
    )
