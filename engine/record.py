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

from torch import nn

from .cells import GATE_COUNT, GATE_NAMES, LayerTrace, unroll_layer
from .config import ModelConfig
from .losses import compute_loss
from .recording import Recording, StackTrace
from .recurrent import layer_weights
from .replay import StackReplay, Taps, initial_state


@contextmanager
def opened(model: nn.Module):
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


def jacobian_norms(stack: StackReplay) -> Tensor:
    """||dh_T/dh_t||_2 for every layer, direction and t: [L, dirs, T].

    Within one layer and direction, with that layer's inputs held fixed. The sample is run H
    times as a batch and the identity is backpropagated from h_T, so one backward pass gives
    every J_t = dh_T/dh_t (row b of J_t is the gradient of h_T[b]). For an LSTM this is the
    derivative through h_t alone, with c_t held: the h-to-h block of the chained state Jacobian.
    """
    cfg, x_in = stack.cfg, stack.x_in
    H, T = cfg.hidden_size, x_in.shape[1]
    eye = torch.eye(H, dtype=x_in.dtype)  # [H, H]
    norms = torch.zeros(cfg.num_layers, cfg.num_directions, T, dtype=x_in.dtype)  # [L, dirs, T]
    layer_in = x_in.detach()[0]  # [T, D]
    for layer in range(cfg.num_layers):
        inputs = layer_in[:, None, :].expand(-1, H, -1)  # [T, H(batch), D]
        for direction in range(cfg.num_directions):
            taps = torch.zeros(T, H, H, dtype=x_in.dtype, requires_grad=True)  # [T, H(batch), H]
            h0, c0 = initial_state(cfg, stack.state, layer * cfg.num_directions + direction, x_in)  # [1, H]
            trace = unroll_layer(
                cfg.arch,
                layer_weights(stack.rnn, layer, direction),
                inputs,
                h0.detach().expand(H, -1),  # [H(batch), H]
                c0.detach().expand(H, -1) if c0 is not None else None,
                activation=cfg.activation,
                reverse=direction == 1,
                taps=taps,
                keep_gates=False,
            )
            (jac,) = torch.autograd.grad((trace.h_last * eye).sum(), taps)  # [T, H, H]: J_t
            norms[layer, direction] = torch.linalg.matrix_norm(jac, ord=2)  # [T]
        layer_in = torch.cat([t.h[:, 0] for t in stack.traces[layer]], dim=1).detach()  # [T, dirs*H]
    return norms


@torch.no_grad()
def weight_spectra(cfg: ModelConfig, rnn: nn.Module) -> tuple[tuple[str, ...], Tensor, Tensor]:
    """Eigenvalues and singular values of every [H, H] block of every W_hh."""
    H = cfg.hidden_size
    blocks = GATE_NAMES[cfg.arch] or ("hh",)
    eig, sv = [], []
    for layer in range(cfg.num_layers):
        for direction in range(cfg.num_directions):
            w_hh = layer_weights(rnn, layer, direction).w_hh.detach()  # [G*H, H]
            square = w_hh.reshape(GATE_COUNT[cfg.arch], H, H)  # [G, H, H]
            eig.append(torch.linalg.eigvals(square))  # [G, H]
            sv.append(torch.linalg.svdvals(square))  # [G, H]
    shape = (cfg.num_layers, cfg.num_directions, len(blocks), H)
    return blocks, torch.stack(eig).reshape(shape), torch.stack(sv).reshape(shape)


def stack_field(traces: list[list[LayerTrace]], get) -> Tensor:
    """[L, dirs, T, H] from one [T, 1, H] field of every trace."""
    return torch.stack([torch.stack([get(t)[:, 0] for t in row]) for row in traces]).detach()


def stack_trace(stack: StackReplay, grad_taps: Tensor, jacobians: bool) -> StackTrace:
    blocks, eigenvalues, singular_values = weight_spectra(stack.cfg, stack.rnn)
    gates = {name: stack_field(stack.traces, lambda t, n=name: t.gates[n]) for name in GATE_NAMES[stack.cfg.arch]}
    return StackTrace(
        hidden=stack_field(stack.traces, lambda t: t.h),
        cell=stack_field(stack.traces, lambda t: t.c) if stack.cfg.arch == "lstm" else None,
        gates=gates,
        grad_h=grad_taps[:, :, :, 0].detach(),  # [L, dirs, T, H]
        jacobian_norm=jacobian_norms(stack) if jacobians else None,
        blocks=blocks,
        eigenvalues=eigenvalues,
        singular_values=singular_values,
    )


def record(model: nn.Module, x: Tensor, y: Tensor, index: int = 0, *, jacobians: bool = True) -> Recording:
    """Everything the pages plot, for sample `index` of the batch (x, y)."""
    if not 0 <= index < len(x):
        raise ValueError(f"index must be between 0 and {len(x) - 1} (the batch has {len(x)} samples), got {index}")
    xs, ys = x[index : index + 1], y[index : index + 1]
    with opened(model):
        taps = Taps()
        replay = model.replay(xs, ys, taps)
        loss = compute_loss(model.spec.loss, replay.y_hat, ys)
        names, params = zip(*model.named_parameters())
        tap_tensors = list(taps.by_stack.values())
        grads = torch.autograd.grad(loss, [*tap_tensors, *params], allow_unused=True)
        grad_taps, grad_params = grads[: len(tap_tensors)], grads[len(tap_tensors) :]
        stacks = {
            name: stack_trace(stack, g, jacobians)
            for (name, stack), g in zip(replay.stacks.items(), grad_taps)
        }
    return Recording(
        arch=model.cfg.arch,
        x=xs[0],
        y=ys[0],
        y_hat=replay.y_hat.detach()[0],
        loss=loss.item(),
        stacks=stacks,
        param_grad_norm={
            n: (g.norm().item() if g is not None else 0.0) for n, g in zip(names, grad_params)
        },
    )
