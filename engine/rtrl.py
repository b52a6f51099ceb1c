"""Real-time recurrent learning (RTRL, Williams & Zipser 1989): the exact gradient carried forward
in time, beside backpropagation through time (BPTT), for a one-layer RNN or GRU and its read-out.

The course (Schmidt, eqs. 5 and 9) writes the loss as a sum over steps and its gradient as

    L = Σ_t ℓ_t,        ∂L/∂θ = Σ_t ∂ℓ_t/∂h_t · Σ_{k≤t} ∂h_t/∂h_k · ∂⁺h_k/∂θ

with ∂⁺h_k/∂θ the immediate derivative (h_{k-1} held fixed). BPTT evaluates the outer sum backwards
from T, so it keeps every h_t until the end. RTRL evaluates the inner sum forwards: it is the
sensitivity S_t = dh_t/dθ, an H x P matrix for the P recurrent parameters, and it needs only S_{t-1}:

    a_t = W_ih x_t + b_ih + W_hh h_{t-1} + b_hh,        h_t = φ(a_t)
    S_t = diag(φ'(a_t)) (W_hh S_{t-1} + ∂⁺a_t/∂θ),        S_0 = 0

where ∂⁺a_t/∂θ is x_t in row i of W_ih's block, h_{t-1} in row i of W_hh's, and 1 for b_ih_i and
b_hh_i (row i of a_t meets only row i of each). So ∂ℓ_t/∂θ = ∂ℓ_t/∂h_t S_t is ready as soon as ℓ_t
is, with nothing of the past stored. The linear read-out ŷ_t = W_o h_t + b_o needs no sensitivity:
∂ℓ_t/∂h_t = W_o^T ∂ℓ_t/∂ŷ_t, ∂ℓ_t/∂W_o = ∂ℓ_t/∂ŷ_t h_t^T, ∂ℓ_t/∂b_o = ∂ℓ_t/∂ŷ_t.

The price: S_t holds H·P ≈ H³ numbers (BPTT keeps T·H), and W_hh S_{t-1} costs H·H·P ≈ H⁴ per step
(BPTT: about H² per step, forward and back). benchmarks/rtrl.py measures both.

The GRU (nn.GRU's equations, engine/cells.py) splits its input side A_x = W_ih x_t + b_ih and hidden
side A_h = W_hh h_{t-1} + b_hh into (r, z, n) blocks; with dA_x = ∂⁺A_x/∂θ and
dA_h = W_hh S_{t-1} + ∂⁺A_h/∂θ:

    dr_t = r_t (1 - r_t) ⊙ (dA_x^r + dA_h^r)
    dz_t = z_t (1 - z_t) ⊙ (dA_x^z + dA_h^z)
    dn_t = (1 - n_t²) ⊙ (dA_x^n + r_t ⊙ dA_h^n + A_h^n ⊙ dr_t)
    S_t  = (1 - z_t) ⊙ dn_t + (h_{t-1} - n_t) ⊙ dz_t + z_t ⊙ S_{t-1}

The loss terms are the model's own: a seq2vec task has one, ℓ_T = loss(ŷ_T, y); a seq2seq task has
ℓ_t = loss(ŷ_t, y_t) / T, which add up to the task's mean loss (the split engine/truncated.py makes).
Truncated BPTT with a window keeps, for each ℓ_t, only the k of t's own chunk in the inner sum:
`truncated_gradients` gives that biased gradient, from the engine's own truncated replay.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial

import torch
from torch import Tensor, nn

from .cells import ACTIVATION_FNS, LayerWeights, gru_step, rnn_step
from .config import check_int
from .losses import compute_loss
from .model import SequenceModel
from .recurrent import layer_weights
from .replay import Taps
from .train_config import MAX_BPTT_WINDOW
from .truncated import replay_truncated

# φ'(a_t) from h_t = φ(a_t), for the activations a ModelConfig(arch="rnn") may have.
SLOPES = {
    "tanh": lambda h: 1 - h * h,
    "relu": lambda h: (h > 0).to(h.dtype),
    "sigmoid": lambda h: h * (1 - h),
    "linear": torch.ones_like,
}
# The recurrent parameters in the order the sensitivity's P columns take them, each flattened row-major.
RECURRENT = ("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0")


@dataclass
class OnlineStep:
    """What RTRL knows right after reading x_t, before anything later has been read."""

    t: int  # the step just read, from 0
    loss: float  # Σ_{s≤t} ℓ_s: the loss terms seen so far
    grads: dict[str, Tensor]  # ∂(Σ_{s≤t} ℓ_s)/∂θ, named and shaped as model.named_parameters()
    sensitivity: Tensor  # [B, H, P]  S_t = dh_t/dθ over the recurrent parameters, in RECURRENT's order


def check_rtrl(model: nn.Module) -> None:
    """ValueError, saying what to change, unless RTRL here can follow this model: a SequenceModel
    with one unidirectional RNN or GRU layer that reads values, in a seq2seq or seq2vec task."""
    if not isinstance(model, SequenceModel):
        raise ValueError(f"RTRL here follows one recurrent stack with a linear head (a SequenceModel), "
                         f"not a {type(model).__name__}")
    cfg, spec = model.cfg, model.spec
    if cfg.arch not in ("rnn", "gru"):
        raise ValueError(f"RTRL here is written for arch='rnn' and arch='gru', not {cfg.arch!r}")
    if cfg.layer_norm or cfg.zoneout:
        raise ValueError("RTRL here follows the plain cell's equations: set layer_norm=False and zoneout=0")
    if cfg.num_layers != 1 or cfg.bidirectional:
        raise ValueError("RTRL carries one layer's state forward in time: set num_layers=1 and bidirectional=False")
    if spec.input_kind != "values":
        raise ValueError(f"this {spec.name} task reads tokens, and RTRL here has no sensitivity for an embedding "
                         "table; pick a task of values (adding, recall, parity, sine)")
    if spec.mapping not in ("seq2seq", "seq2vec"):
        raise ValueError(f"RTRL here reads one sequence with a target at every step or at the last; this "
                         f"{spec.name} task is {spec.mapping}")


def direct(x: Tensor, h: Tensor, rows: int) -> tuple[Tensor, Tensor]:
    """(∂⁺A_x/∂θ, ∂⁺A_h/∂θ), each [B, rows, P]: the immediate derivatives of the input side
    A_x = W_ih x + b_ih and the hidden side A_h = W_hh h + b_hh. Row i of A meets only row i of W,
    so a weight's block is I ⊗ v^T (v in row i, at W's row i) and a bias's block is I; each side
    is zero in the other side's columns."""
    batch = x.shape[0]
    eye = torch.eye(rows, dtype=x.dtype).expand(batch, rows, rows)  # [B, R, R]
    w_x = torch.einsum("bij,bk->bijk", eye, x).flatten(2)  # [B, R, R*D]
    w_h = torch.einsum("bij,bk->bijk", eye, h).flatten(2)  # [B, R, R*H]
    zero_b = torch.zeros_like(eye)  # [B, R, R]
    d_x = torch.cat([w_x, torch.zeros_like(w_h), eye, zero_b], dim=2)  # [B, R, P]
    d_h = torch.cat([torch.zeros_like(w_x), w_h, zero_b, eye], dim=2)  # [B, R, P]
    return d_x, d_h


def rnn_forward(w: LayerWeights, activation: str, x: Tensor, h: Tensor, S: Tensor) -> tuple[Tensor, Tensor]:
    """(h_t, S_t) from x_t [B, D], h_{t-1} [B, H], S_{t-1} [B, H, P]: S_t = φ'(a_t) (W_hh S_{t-1} + ∂⁺a_t/∂θ)."""
    d_x, d_h = direct(x, h, w.w_hh.shape[0])  # each [B, H, P]
    h_new = rnn_step(x @ w.w_ih.T + w.b_ih, h, w, ACTIVATION_FNS[activation])  # [B, H]
    da = d_x + w.w_hh @ S + d_h  # [B, H, P]  da_t/dθ, through h_{t-1} and directly
    return h_new, SLOPES[activation](h_new)[:, :, None] * da  # [B, H], [B, H, P]


def gru_forward(w: LayerWeights, x: Tensor, h: Tensor, S: Tensor) -> tuple[Tensor, Tensor]:
    """(h_t, S_t) of nn.GRU's cell from x_t [B, D], h_{t-1} [B, H], S_{t-1} [B, H, P]: the
    module docstring's four lines, one per gate and one for h_t."""
    d_x, d_direct = direct(x, h, w.w_hh.shape[0])  # each [B, 3H, P]
    h_new, (r, z, n) = gru_step(x @ w.w_ih.T + w.b_ih, h, w)  # [B, H], gates each [B, H]
    a_hn = (h @ w.w_hh.T + w.b_hh).chunk(3, dim=1)[2]  # [B, H]  W_hn h_{t-1} + b_hn, which r_t scales
    dx_r, dx_z, dx_n = d_x.chunk(3, dim=1)  # each [B, H, P]  dA_x^r, dA_x^z, dA_x^n
    dh_r, dh_z, dh_n = (w.w_hh @ S + d_direct).chunk(3, dim=1)  # each [B, H, P]  dA_h^r, dA_h^z, dA_h^n
    dr = (r * (1 - r))[:, :, None] * (dx_r + dh_r)  # [B, H, P]
    dz = (z * (1 - z))[:, :, None] * (dx_z + dh_z)  # [B, H, P]
    dn = (1 - n * n)[:, :, None] * (dx_n + r[:, :, None] * dh_n + a_hn[:, :, None] * dr)  # [B, H, P]
    S_new = (1 - z)[:, :, None] * dn + (h - n)[:, :, None] * dz + z[:, :, None] * S  # [B, H, P]
    return h_new, S_new


def loss_term(kind: str, y_hat: Tensor, y: Tensor, scale: float) -> tuple[Tensor, Tensor]:
    """(ℓ, ∂ℓ/∂ŷ) for ℓ = scale · loss(ŷ, y), written out so that RTRL builds no graph at all.
    mse: y_hat and y [B, out]; ce: y_hat [B, C] logits, y [B] classes (values tasks mark none ignored)."""
    if kind == "mse":
        diff = y_hat - y  # [B, out]
        return scale * diff.square().mean(), scale * 2 * diff / diff.numel()  # [], [B, out]
    log_p = torch.log_softmax(y_hat, dim=1)  # [B, C]
    target = torch.nn.functional.one_hot(y, y_hat.shape[1]).to(y_hat.dtype)  # [B, C]
    batch = y_hat.shape[0]
    return -scale * (target * log_p).sum() / batch, scale * (log_p.exp() - target) / batch  # [], [B, C]


def step_targets(model: SequenceModel, y: Tensor, T: int) -> list[tuple[Tensor, float] | None]:
    """For each step, (y_t, the weight of its loss term) or None where the task has no target."""
    if model.spec.mapping == "seq2seq":
        return [(y_t, 1 / T) for y_t in y.unbind(1)]
    return [None] * (T - 1) + [(y, 1.0)]


def rtrl_online(model: nn.Module, x: Tensor, y: Tensor) -> Iterator[OnlineStep]:
    """RTRL over a batch (x, y) of the model's task, one OnlineStep per time step, each computed
    from the previous step's h and S alone: the gradient an online learner would have at step t.
    The weights are read, never changed; the last step's grads are the whole loss's gradient.
    The model is checked here, at the call, not at the first step."""
    check_rtrl(model)
    return online_steps(model, x, y)


@torch.no_grad()
def online_steps(model: SequenceModel, x: Tensor, y: Tensor) -> Iterator[OnlineStep]:
    """rtrl_online's steps: the recursion of the module docstring, and each step's loss term."""
    cfg, w = model.cfg, layer_weights(model.rnn, 0, 0)
    names = [name for name, _ in model.named_parameters()]
    W_o = model.head.weight  # [out, H]
    x_in = model.inputs(x)  # [B, T, D]
    batch, T = x_in.shape[:2]
    size = sum(p.numel() for p in (w.w_ih, w.w_hh, w.b_ih, w.b_hh))  # P
    h = x_in.new_zeros(batch, cfg.hidden_size)  # [B, H]
    S = x_in.new_zeros(batch, cfg.hidden_size, size)  # [B, H, P]
    g_rec = x_in.new_zeros(size)  # [P]  ∂(Σ_{s≤t} ℓ_s)/∂θ for the recurrent parameters
    g_W_o, g_b_o = torch.zeros_like(W_o), torch.zeros_like(model.head.bias)  # [out, H], [out]
    loss = 0.0
    for t, (x_t, target) in enumerate(zip(x_in.unbind(1), step_targets(model, y, T))):  # x_t [B, D]
        if cfg.arch == "gru":
            h, S = gru_forward(w, x_t, h, S)  # [B, H], [B, H, P]
        else:
            h, S = rnn_forward(w, cfg.activation, x_t, h, S)  # [B, H], [B, H, P]
        if target is not None:
            ell, g = loss_term(model.spec.loss, model.head(h), *target)  # g = ∂ℓ_t/∂ŷ_t [B, out]
            loss += ell.item()
            g_W_o += g.T @ h  # [out, H]
            g_b_o += g.sum(0)  # [out]
            g_rec += torch.einsum("bh,bhp->p", g @ W_o, S)  # [P]  ∂ℓ_t/∂h_t · S_t
        yield OnlineStep(t, loss, named_grads(model, names, g_rec, g_W_o, g_b_o), S)


def named_grads(model: SequenceModel, names: list[str], g_rec: Tensor, g_W_o: Tensor, g_b_o: Tensor
                ) -> dict[str, Tensor]:
    """The flat recurrent gradient [P] cut back into weight_ih, weight_hh, bias_ih, bias_hh, and the
    head's, by model.named_parameters()'s names and in its order (fresh tensors: a caller may keep them)."""
    shapes = [getattr(model.rnn, name).shape for name in RECURRENT]
    pieces = g_rec.split([shape.numel() for shape in shapes])  # 4 x [numel]
    grads = {f"rnn.{name}": piece.reshape(shape).clone() for name, piece, shape in zip(RECURRENT, pieces, shapes)}
    grads |= {"head.weight": g_W_o.clone(), "head.bias": g_b_o.clone()}
    return {name: grads[name] for name in names}


def rtrl_gradients(model: nn.Module, x: Tensor, y: Tensor) -> dict[str, Tensor]:
    """∂L/∂θ by RTRL, by parameter name: what loss.backward() on the task's loss would leave in .grad."""
    *_, last = rtrl_online(model, x, y)
    return last.grads


def truncated_gradients(model: nn.Module, x: Tensor, y: Tensor, window: int) -> dict[str, Tensor]:
    """Truncated BPTT's gradient with this window, by parameter name: the engine's own truncated
    replay (engine/truncated.py, the chunks Trainer trains on), differentiated by autograd. The state
    crosses chunk borders detached, so each ℓ_t sees only its own chunk's past; a window of T or more
    is full BPTT. The model's .grad is left alone."""
    check_rtrl(model)
    check_int("window", window, 1, MAX_BPTT_WINDOW)
    _, loss = replay_truncated(model, x, y, Taps(), window, partial(compute_loss, model.spec.loss))
    named = dict(model.named_parameters())
    return dict(zip(named, torch.autograd.grad(loss, list(named.values()))))
