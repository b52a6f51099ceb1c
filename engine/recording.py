"""Recording: everything the pages plot about one sample passing through a model.

Tensors are indexed [layer, direction, t, unit]; direction 0 is forward, 1 is backward, and a
backward direction's values are stored at the input position they belong to (as nn.LSTM does).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd
import torch
from torch import Tensor

from .sites import AttentionTrace, ByLabel, Site
from .spectra import Spectra

DIRECTIONS = ("forward", "backward")


@dataclass
class StackTrace:
    """One recurrent stack of the model (the only one, or the encoder, or the decoder), recorded."""

    hidden: Tensor  # [layers, directions, T, H]  h_t
    cell: Tensor | None  # [layers, directions, T, H]  c_t, LSTM only
    gates: dict[str, Tensor]  # "i","f","g","o" (LSTM) or "r","z","n" (GRU): each [layers, directions, T, H]
    grad_h: Tensor  # [layers, directions, T, H]  dL/dh_t, the total BPTT gradient
    jacobian_norm: Tensor | None  # [layers, directions, T]  ||dh_T/dh_t||_2, None if not asked for
    spectra: Spectra | None = None  # W_hh's eigen- and singular values, when recorded with spectra=True
    pad_mask: Tensor | None = None  # [T] bool  True at a pad step (the state carried through); None: never padded

    @property
    def grad_norm_h(self) -> Tensor:
        """[layers, directions, T]  ||dL/dh_t||."""
        return self.grad_h.norm(dim=-1)

    def asked_spectra(self) -> Spectra:
        if self.spectra is None:
            raise ValueError(
                "this recording has no W_hh spectra; record with engine.record(model, x, y, spectra=True), "
                "or take them from engine.weight_spectra(model)"
            )
        return self.spectra

    # Names of the [H, H] blocks of W_hh (the gates, or ("hh",) for an RNN), and of each block
    # its eigenvalues ([layers, directions, blocks, H] complex) and singular values (descending).
    blocks = property(lambda self: self.asked_spectra().blocks)
    eigenvalues = property(lambda self: self.asked_spectra().eigenvalues)
    singular_values = property(lambda self: self.asked_spectra().singular_values)


@dataclass
class BlockTrace:
    """One stack of transformer blocks, recorded: no cell, gates, W_hh or recurrence to chain
    Jacobians through, only what flows between blocks. Laid out as a StackTrace's states (one
    "direction"), so a page indexes both alike."""

    hidden: Tensor  # [layers, 1, T, d_model]  each block's output x_t (the residual stream)
    grad_h: Tensor  # [layers, 1, T, d_model]  dL/dx_t there

    @property
    def grad_norm_h(self) -> Tensor:
        """[layers, 1, T]  ||dL/dx_t||."""
        return self.grad_h.norm(dim=-1)


@dataclass
class Recording:
    """A SequenceModel has one stack, "rnn"; an EncoderDecoder has "encoder" and "decoder".
    rec.hidden, rec.gates, ... are those of the first stack; rec.stacks[name] holds each.

    A transformer has "encoder" (bidirectional), "decoder" (causal), or both, each a BlockTrace:
    its rec.cell and rec.jacobian_norm are None and rec.gates {}. Every attention is an
    AttentionTrace keyed by its Site (engine/sites.py); rec.attention, rec.attention_logits and
    rec.attention_context read one field of each by the site's label: "layer 0 self",
    "encoder layer 0 self", "decoder layer 1 cross", ..., or "alignment" for a recurrent
    encoder-decoder's (alpha[t, i]: target step t over source position i)."""

    arch: str
    x: Tensor  # the sample's input: [T, D] values, [T] tokens or [D] vector
    y: Tensor  # its target
    y_hat: Tensor  # the model's output for it
    loss: float
    stacks: dict[str, StackTrace | BlockTrace]
    param_grad_norm: dict[str, float]  # ||dL/dW|| for every named parameter, on this sample
    attention_traces: dict[Site, AttentionTrace] = field(default_factory=dict)

    @property
    def main(self) -> StackTrace | BlockTrace:
        return next(iter(self.stacks.values()))

    attention = property(lambda self: ByLabel(self.attention_traces, "weights"))  # [heads, T_query, T_key]
    attention_logits = property(lambda self: ByLabel(self.attention_traces, "logits"))  # [heads, T_query, T_key]
    attention_context = property(lambda self: ByLabel(self.attention_traces, "context"))  # [heads, T_query, d_v]

    hidden = property(lambda self: self.main.hidden)
    grad_h = property(lambda self: self.main.grad_h)
    grad_norm_h = property(lambda self: self.main.grad_norm_h)
    cell = property(lambda self: self.recurrent_field("cell", None))
    gates = property(lambda self: self.recurrent_field("gates", {}))
    jacobian_norm = property(lambda self: self.recurrent_field("jacobian_norm", None))
    pad_mask = property(lambda self: self.recurrent_field("pad_mask", None))  # [T] bool, the first stack's

    blocks = property(lambda self: self.spectra_field("blocks"))
    eigenvalues = property(lambda self: self.spectra_field("eigenvalues"))
    singular_values = property(lambda self: self.spectra_field("singular_values"))

    def recurrent_field(self, name: str, none):
        """A field of the first stack that only a recurrent stack has."""
        return getattr(self.main, name) if isinstance(self.main, StackTrace) else none

    def spectra_field(self, name: str):
        if not isinstance(self.main, StackTrace):
            raise ValueError("a transformer has no recurrent weights W_hh, so no spectra; record an RNN, LSTM or GRU")
        return getattr(self.main, name)

    @property
    def num_layers(self) -> int:
        return self.hidden.shape[0]

    @property
    def num_directions(self) -> int:
        return self.hidden.shape[1]

    @property
    def seq_len(self) -> int:
        return self.hidden.shape[2]

    def to_frame(self, key: str, stack: str | None = None) -> pd.DataFrame:
        """A long DataFrame for plotting. Keys: hidden, cell, grad_h, gates (with a `gate`
        column), grad_norm_h, jacobian_norm, eigenvalues, singular_values, param_grad_norm,
        attention and attention_logits (columns name, head, query, key, value).
        `stack` picks "encoder" or "decoder" of an encoder-decoder (default: the first)."""
        if key in ("attention", "attention_logits"):
            if not self.attention:
                raise ValueError(
                    f"this {self.arch.upper()} has no attention; "
                    "record an encoder-decoder with attention or a transformer"
                )
            return attention_frame(getattr(self, key))
        if key == "param_grad_norm":
            return pd.DataFrame({"parameter": list(self.param_grad_norm), "value": list(self.param_grad_norm.values())})
        if stack is not None and stack not in self.stacks:
            raise ValueError(f"no stack {stack!r}; this recording has {', '.join(self.stacks)}")
        return stack_frame(self.stacks[stack] if stack else self.main, self.arch, key)


def stack_frame(trace: StackTrace | BlockTrace, arch: str, key: str) -> pd.DataFrame:
    """to_frame for one stack."""
    if isinstance(trace, BlockTrace) and key not in ("hidden", "grad_h", "grad_norm_h"):
        raise ValueError(f"a transformer block has no {key}; its stacks record hidden, grad_h and grad_norm_h")
    if key in ("hidden", "cell", "grad_h"):
        values = getattr(trace, key)
        if values is None:
            raise ValueError(f"this {arch.upper()} has no {key}; only an LSTM has a cell state")
        return state_frame(values)
    if key == "gates":
        if not trace.gates:
            raise ValueError("a vanilla RNN has no gates; record an LSTM or GRU")
        frames = [state_frame(v).assign(gate=name) for name, v in trace.gates.items()]
        return pd.concat(frames, ignore_index=True)
    if key in ("grad_norm_h", "jacobian_norm"):
        values = getattr(trace, key)
        if values is None:
            raise ValueError("record with jacobians=True to get jacobian_norm")
        return series_frame(values)
    if key == "eigenvalues":
        frame = block_frame(trace.eigenvalues.abs(), trace.blocks).rename(columns={"value": "modulus"})
        frame["real"] = trace.eigenvalues.real.flatten().tolist()
        frame["imag"] = trace.eigenvalues.imag.flatten().tolist()
        return frame
    if key == "singular_values":
        return block_frame(trace.singular_values, trace.blocks)
    raise ValueError(
        f"unknown key {key!r}; use hidden, cell, grad_h, gates, grad_norm_h, jacobian_norm, "
        "eigenvalues, singular_values or param_grad_norm"
    )


def index_frame(shape: tuple[int, ...], names: tuple[str, ...]) -> pd.DataFrame:
    """Every index of a tensor of `shape` as columns, in row-major order (flatten's order)."""
    grids = torch.meshgrid(*[torch.arange(n) for n in shape], indexing="ij")
    frame = pd.DataFrame({name: grid.flatten().numpy() for name, grid in zip(names, grids)})
    if "direction" in frame:
        frame["direction"] = frame["direction"].map(dict(enumerate(DIRECTIONS)))
    return frame


def state_frame(values: Tensor) -> pd.DataFrame:  # values: [layers, directions, T, H]
    frame = index_frame(tuple(values.shape), ("layer", "direction", "t", "unit"))
    frame["value"] = values.flatten().numpy()
    return frame


def series_frame(values: Tensor) -> pd.DataFrame:  # values: [layers, directions, T]
    frame = index_frame(tuple(values.shape), ("layer", "direction", "t"))
    frame["value"] = values.flatten().numpy()
    return frame


def attention_frame(maps: dict[str, Tensor]) -> pd.DataFrame:  # name -> [heads, T_query, T_key]
    frames = []
    for name, values in maps.items():
        frame = index_frame(tuple(values.shape), ("head", "query", "key"))
        frame.insert(0, "name", name)
        frame["value"] = values.flatten().numpy()
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def block_frame(values: Tensor, blocks: tuple[str, ...]) -> pd.DataFrame:  # [layers, directions, blocks, H]
    frame = index_frame(tuple(values.shape), ("layer", "direction", "block", "index"))
    frame["block"] = frame["block"].map(dict(enumerate(blocks)))
    frame["value"] = values.flatten().numpy()
    return frame
