"""engine.record: replay one sample through the written-out equations on the model's own weights.

The model trains on PyTorch's kernels, which keep neither gates nor per-step gradients. To open
it up we replay the one sample with `unroll_layer`, layer by layer, with a zero "tap" added to
every h_t: the gradient of the loss with respect to those taps is the total BPTT gradient dL/dh_t.
Nothing is hooked into the model, and the model's weights, .grad, requires_grad flags and
train/eval mode are exactly as they were afterwards, even if recording fails.
"""
from __future__ import annotations

from contextlib import contextmanager
from functools import partial

import torch
from torch import Tensor, nn

from .attention import Attended
from .cells import GATE_COUNT, GATE_NAMES, LayerTrace, unroll_layer
from .losses import compute_loss
from .padding import real_steps
from .recording import BlockTrace, Recording, StackTrace
from .recurrent import initial_state, layer_weights
from .replay import StackReplay, Taps
from .sites import AttentionTrace, Site
from .spectra import Spectra, spectral_norms, weight_spectra
from .truncated import check_truncation, replay_truncated


@contextmanager
def opened(model: nn.Module):
    """Eval mode, autograd on and every parameter differentiable for the replay (even inside a
    caller's no_grad or inference_mode); every module's mode and every parameter's flag
    restored after."""
    modes = [m.training for m in model.modules()]
    flags = [p.requires_grad for p in model.parameters()]
    try:
        with torch.inference_mode(False), torch.enable_grad():
            model.eval()  # dropout off: the recording shows the network as it predicts
            for p in model.parameters():
                p.requires_grad_(True)
            yield
    finally:
        for m, mode in zip(model.modules(), modes):
            m.training = mode
        for p, flag in zip(model.parameters(), flags):
            p.requires_grad_(flag)


# J_t for every t is T*H*H numbers; past this many the recording refuses rather than fill memory.
MAX_JACOBIAN_ENTRIES = 2**25  # e.g. T=500 with H=256, or T=2000 with H=128: 128 MB of float32
# Rows of the identity backpropagated at once: bounds the replayed batch's graph (~100 MB).
GRAPH_BUDGET = 2**22


def jacobian_norms(stack: StackReplay) -> Tensor:
    """||dh_T/dh_t||_2 for every layer, direction and t: [L, dirs, T].

    Within one layer and direction, with that layer's inputs held fixed; "T" is the direction's
    last step (position 0 for a backward direction). The sample is replayed as a batch, one copy
    per row of the identity backpropagated from h_T, so one backward pass gives those rows of
    every J_t = dh_T/dh_t at once. For an LSTM this is the derivative through h_t alone, with c_t
    held: the h-to-h block of the chained (h, c) state Jacobian.
    """
    cfg, x_in = stack.cfg, stack.x_in
    H, T = cfg.hidden_size, x_in.shape[1]
    if T * H * H > MAX_JACOBIAN_ENTRIES:
        raise ValueError(
            f"jacobian_norm at T={T}, H={H} needs {T * H * H * 4 / 2**20:,.0f} MB; record with "
            "jacobians=False, or use a shorter sequence or a smaller hidden size"
        )
    rows_at_once = max(1, min(H, GRAPH_BUDGET // (T * H * GATE_COUNT[cfg.arch])))
    norms = torch.zeros(cfg.num_layers, cfg.num_directions, T, dtype=x_in.dtype)  # [L, dirs, T]
    layer_in = x_in.detach()[0]  # [T, D]
    real = real_steps(stack.padded)  # [T, 1] or None: pads are carried through, as in the replay
    for layer in range(cfg.num_layers):
        for direction in range(cfg.num_directions):
            k = layer * cfg.num_directions + direction
            h0, c0 = initial_state(cfg, stack.state, k, x_in)  # [1, H]: where the replay started
            jac = torch.empty(T, H, H, dtype=x_in.dtype)  # [T, H, H]: J_t
            for first in range(0, H, rows_at_once):
                rows = torch.arange(first, min(first + rows_at_once, H))  # [R]
                R = len(rows)
                taps = torch.zeros(T, R, H, dtype=x_in.dtype, requires_grad=True)  # [T, R, H]
                trace = unroll_layer(
                    cfg.arch,
                    layer_weights(stack.rnn, layer, direction),
                    layer_in[:, None, :].expand(-1, R, -1),  # [T, R, D]
                    h0.detach().expand(R, -1),  # [R, H]
                    c0.detach().expand(R, -1) if c0 is not None else None,
                    activation=cfg.activation,
                    reverse=direction == 1,
                    taps=taps,
                    keep_gates=False,
                    real=real.expand(-1, R) if real is not None else None,  # [T, R]
                )
                pick = torch.eye(H, dtype=x_in.dtype)[rows]  # [R, H]: copy r backpropagates e_r
                (jac[:, first : first + R],) = torch.autograd.grad((trace.h_last * pick).sum(), taps)
            norms[layer, direction] = spectral_norms(jac)  # [T]: NaN where J_t is not finite
        layer_in = torch.cat([t.h[:, 0] for t in stack.traces[layer]], dim=1).detach()  # [T, dirs*H]
    return norms


def stack_field(traces: list[list[LayerTrace]], get) -> Tensor:
    """[L, dirs, T, H] from one [T, 1, H] field of every trace."""
    return torch.stack([torch.stack([get(t)[:, 0] for t in row]) for row in traces]).detach()


def stack_trace(stack, grad_taps: Tensor, jacobians: bool, spectra: Spectra | None) -> StackTrace | BlockTrace:
    if not isinstance(stack, StackReplay):  # a transformer's blocks: no recurrence, no W_hh
        return stack.trace(grad_taps)
    gates = {name: stack_field(stack.traces, lambda t, n=name: t.gates[n]) for name in GATE_NAMES[stack.cfg.arch]}
    return StackTrace(
        hidden=stack_field(stack.traces, lambda t: t.h),
        cell=stack_field(stack.traces, lambda t: t.c) if stack.cfg.arch == "lstm" else None,
        gates=gates,
        grad_h=grad_taps[:, :, :, 0].detach(),  # [L, dirs, T, H]
        jacobian_norm=jacobian_norms(stack) if jacobians else None,
        spectra=spectra,
        pad_mask=stack.padded[0].clone() if stack.padded is not None else None,  # [T], in the stack's reading order
    )


def record(model: nn.Module, x: Tensor, y: Tensor, index: int = 0, *, jacobians: bool = True,
           bptt_window: int = 0, spectra: bool = False) -> Recording:
    """Everything the pages plot, for sample `index` of the batch (x, y).

    bptt_window > 0 records the gradients as truncated BPTT computes them when training with
    TrainConfig(bptt_window=...): the state carried forward but detached every `bptt_window`
    steps, so dL/dh_t (and dL/dW) hold only the loss terms of h_t's own chunk (for a seq2vec task,
    nothing before the last chunk), and the loss is the sum of the chunks' terms the Trainer adds
    up. The forward pass, and so h_t, the gates and y_hat, are those of full BPTT; jacobian_norm
    is the model's own, uncut. A window of T or more is full BPTT, as in training.

    spectra=True adds the eigenvalues and singular values of every W_hh block (engine.weight_spectra,
    which has a size limit and refuses a non-finite W_hh); they depend on the weights only, so a
    caller recording many samples of one model may rather take them once from weight_spectra.
    """
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(x):
        raise ValueError(f"index must be between 0 and {len(x) - 1} (the batch has {len(x)} samples), got {index}")
    check_truncation(model.cfg, model.spec.mapping, bptt_window)
    spectra_of = weight_spectra(model) if spectra else {}  # first: a refusal costs no replay
    xs, ys = x[index : index + 1], y[index : index + 1]
    with opened(model):
        taps = Taps()
        if bptt_window and bptt_window < xs.shape[1]:
            replay, loss = replay_truncated(model, xs, ys, taps, bptt_window, partial(compute_loss, model.spec.loss))
        else:
            replay = model.replay(xs, ys, taps)
            loss = compute_loss(model.spec.loss, replay.y_hat, ys)
        names, params = zip(*model.named_parameters())
        grads = torch.autograd.grad(loss, [*taps.by_stack.values(), *params], allow_unused=True)
        grad_taps = dict(zip(taps.by_stack, grads))  # stack name -> [L, dirs, T, 1, H]
        grad_params = grads[len(taps.by_stack) :]
        stacks = {
            name: stack_trace(stack, grad_taps[name], jacobians, spectra_of.get(name))
            for name, stack in replay.stacks.items()
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
        attention_traces=attention_traces(replay.attention),
    )


def attention_traces(attended: dict[Site, Attended]) -> dict[Site, AttentionTrace]:
    """A replay's attention, for its one sample: each field [heads, T_q, ...]."""
    return {
        site: AttentionTrace(site, a.weights.detach()[0], a.logits.detach()[0], a.context.detach()[0])
        for site, a in attended.items()
    }
