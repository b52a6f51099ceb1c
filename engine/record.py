"""engine.record: replay one sample through the written-out equations on the model's own weights.

The model trains on PyTorch's kernels, which keep neither gates nor per-step gradients. To open
it up we replay the one sample with `unroll_layer`, layer by layer, with a zero "tap" added to
every h_t: one backward pass then leaves the total BPTT gradient dL/dh_t in the taps' gradient.
Nothing is hooked into the model, and the model's weights, .grad, requires_grad flags and
train/eval mode are exactly as they were afterwards, even if recording fails.
"""
from __future__ import annotations

from contextlib import contextmanager

import torch
from torch import Tensor

from .cells import GATE_COUNT, GATE_NAMES, LayerTrace, unroll_layer
from .losses import compute_loss
from .model import SequenceModel
from .recording import Recording
from .recurrent import layer_weights


@contextmanager
def opened(model: SequenceModel):
    """Eval mode and every parameter differentiable for the replay; the model restored after."""
    was_training = model.training
    flags = [p.requires_grad for p in model.parameters()]
    try:
        model.eval()  # dropout off: the recording shows the network as it predicts
        for p in model.parameters():
            p.requires_grad_(True)
        yield
    finally:
        model.train(was_training)
        for p, flag in zip(model.parameters(), flags):
            p.requires_grad_(flag)


def replay_stack(model: SequenceModel, x_in: Tensor, taps: Tensor | None) -> tuple[list[list[LayerTrace]], Tensor]:
    """Run the recurrent stack with unroll_layer. x_in: [B, T, D]; taps: [L, dirs, T, B, H].
    Returns traces[layer][direction] and the stack's output [B, T, dirs*H]."""
    cfg = model.cfg
    batch = x_in.shape[0]
    layer_in = x_in.transpose(0, 1)  # [T, B, D]
    traces = []
    for layer in range(cfg.num_layers):
        row = []
        for direction in range(cfg.num_directions):
            h0 = x_in.new_zeros(batch, cfg.hidden_size)  # [B, H]
            row.append(
                unroll_layer(
                    cfg.arch,
                    layer_weights(model.rnn, layer, direction),
                    layer_in,
                    h0,
                    h0 if cfg.arch == "lstm" else None,
                    activation=cfg.activation,
                    reverse=direction == 1,
                    taps=taps[layer, direction] if taps is not None else None,
                )
            )
        traces.append(row)
        layer_in = torch.cat([trace.h for trace in row], dim=2)  # [T, B, dirs*H]
    return traces, layer_in.transpose(0, 1)  # [B, T, dirs*H]


def jacobian_norms(model: SequenceModel, traces: list[list[LayerTrace]], x_in: Tensor) -> Tensor:
    """||dh_T/dh_t||_2 for every layer, direction and t: [L, dirs, T].

    Within one layer and direction, with that layer's inputs held fixed. The sample is run H
    times as a batch and the identity is backpropagated from h_T, so one backward pass gives
    every J_t = dh_T/dh_t (row b of J_t is the gradient of h_T[b]). For an LSTM this is the
    derivative through h_t alone, with c_t held: the h-to-h block of the chained state Jacobian.
    """
    cfg = model.cfg
    H, T = cfg.hidden_size, x_in.shape[1]
    eye = torch.eye(H, dtype=x_in.dtype)  # [H, H]
    norms = torch.zeros(cfg.num_layers, cfg.num_directions, T, dtype=x_in.dtype)  # [L, dirs, T]
    layer_in = x_in.detach()[0]  # [T, D]
    for layer in range(cfg.num_layers):
        inputs = layer_in[:, None, :].expand(-1, H, -1)  # [T, H(batch), D]
        for direction in range(cfg.num_directions):
            taps = torch.zeros(T, H, H, dtype=x_in.dtype, requires_grad=True)  # [T, H(batch), H]
            h0 = torch.zeros(H, H, dtype=x_in.dtype)  # [H(batch), H]
            trace = unroll_layer(
                cfg.arch,
                layer_weights(model.rnn, layer, direction),
                inputs,
                h0,
                h0 if cfg.arch == "lstm" else None,
                activation=cfg.activation,
                reverse=direction == 1,
                taps=taps,
                keep_gates=False,
            )
            (jac,) = torch.autograd.grad((trace.h_last * eye).sum(), taps)  # [T, H, H]: J_t
            norms[layer, direction] = torch.linalg.matrix_norm(jac, ord=2)  # [T]
        layer_in = torch.cat([t.h[:, 0] for t in traces[layer]], dim=1).detach()  # [T, dirs*H]
    return norms


@torch.no_grad()
def weight_spectra(model: SequenceModel) -> tuple[tuple[str, ...], Tensor, Tensor]:
    """Eigenvalues and singular values of every [H, H] block of every W_hh."""
    cfg = model.cfg
    H = cfg.hidden_size
    blocks = GATE_NAMES[cfg.arch] or ("hh",)
    eig, sv = [], []
    for layer in range(cfg.num_layers):
        for direction in range(cfg.num_directions):
            w_hh = layer_weights(model.rnn, layer, direction).w_hh.detach()  # [G*H, H]
            square = w_hh.reshape(GATE_COUNT[cfg.arch], H, H)  # [G, H, H]
            eig.append(torch.linalg.eigvals(square))  # [G, H]
            sv.append(torch.linalg.svdvals(square))  # [G, H]
    shape = (cfg.num_layers, cfg.num_directions, len(blocks), H)
    return blocks, torch.stack(eig).reshape(shape), torch.stack(sv).reshape(shape)


def stack_field(traces: list[list[LayerTrace]], get) -> Tensor:
    """[L, dirs, T, H] from one [T, 1, H] field of every trace."""
    return torch.stack([torch.stack([get(t)[:, 0] for t in row]) for row in traces]).detach()


def record(model: SequenceModel, x: Tensor, y: Tensor, index: int = 0, *, jacobians: bool = True) -> Recording:
    """Everything the pages plot, for sample `index` of the batch (x, y)."""
    if not 0 <= index < len(x):
        raise ValueError(f"index must be between 0 and {len(x) - 1} (the batch has {len(x)} samples), got {index}")
    cfg = model.cfg
    xs, ys = x[index : index + 1], y[index : index + 1]
    with opened(model):
        x_in = model.inputs(xs)  # [1, T, D]
        T = x_in.shape[1]
        taps = x_in.new_zeros(cfg.num_layers, cfg.num_directions, T, 1, cfg.hidden_size).requires_grad_()
        traces, out = replay_stack(model, x_in, taps)
        y_hat = model.readout(out)
        loss = compute_loss(model.spec.loss, y_hat, ys)
        names, params = zip(*model.named_parameters())
        grad_taps, *grad_params = torch.autograd.grad(loss, [taps, *params], allow_unused=True)
        jac = jacobian_norms(model, traces, x_in) if jacobians else None
        blocks, eigenvalues, singular_values = weight_spectra(model)
    gates = {name: stack_field(traces, lambda t, n=name: t.gates[n]) for name in GATE_NAMES[cfg.arch]}
    return Recording(
        arch=cfg.arch,
        x=xs[0],
        y=ys[0],
        y_hat=y_hat.detach()[0],
        loss=loss.item(),
        hidden=stack_field(traces, lambda t: t.h),
        cell=stack_field(traces, lambda t: t.c) if cfg.arch == "lstm" else None,
        gates=gates,
        grad_h=grad_taps[:, :, :, 0].detach(),  # [L, dirs, T, H]
        jacobian_norm=jac,
        blocks=blocks,
        eigenvalues=eigenvalues,
        singular_values=singular_values,
        param_grad_norm={
            n: (g.norm().item() if g is not None else 0.0) for n, g in zip(names, grad_params)
        },
    )
