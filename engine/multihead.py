"""Multi-head attention (Vaswani et al. 2017): written out, every head's weights kept, whenever
anything may read them; PyTorch's fused kernel when nothing can.

    head_j = softmax(Q W_j^Q (K W_j^K)^T / sqrt(d_k) + M) V W_j^V,   d_k = d_model / heads
    MultiHead(Q, K, V) = [head_1; ...; head_h] W^O

Training needs only the output, and F.scaled_dot_product_attention computes it without storing
the [B, heads, T_q, T_k] weights (benchmarks/sdpa.py). A caller that asks for the weights
(need_weights=True, the default, as nn.MultiheadAttention's) or hooks any of the three hook points
(a recording, `saturation`, beam search's attention rows) gets the written-out equations instead,
so what is recorded is what engine/attention.py computes, never the fused kernel's stand-in.

The per-head projections W_j^Q are the rows j*d_k ... (j+1)*d_k of one d_model x d_model
matrix, so all heads project in one matmul; the same layout as torch.nn.MultiheadAttention's
in_proj_weight, which the tests load into this module to check it computes the same thing.
With scale=False the heads leave out the 1/sqrt(d_k) (ModelConfig.attention_scale), and
`saturation` measures what that does to the softmax: its entropy and the gradient that reaches
its input.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.nn.modules import module as torch_module

from .attention import Attended, check_keys, scaled_dot_product_attention
from .hooks import HookPoint, hooked


def watched(point: nn.Module) -> bool:
    """Whether calling `point` would run any hook: one of its own or a global module hook, the
    same dicts nn.Module.__call__ checks before it skips hooks altogether. However a hook was
    attached, a hooked value is seen, so it must be the written-out one. (Private names of torch's:
    were they renamed, this fails loudly rather than let a recording through fused.)"""
    return bool(point._forward_hooks or point._forward_pre_hooks or point._backward_hooks
                or point._backward_pre_hooks or torch_module._global_forward_hooks
                or torch_module._global_forward_pre_hooks or torch_module._global_backward_hooks
                or torch_module._global_backward_pre_hooks)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, scale: bool = True):
        super().__init__()
        if d_model % num_heads:
            raise ValueError(
                f"num_heads={num_heads} must divide d_model={d_model}; each head gets d_model / num_heads dimensions"
            )
        self.num_heads, self.d_k, self.scale = num_heads, d_model // num_heads, scale
        self.W_q = nn.Linear(d_model, d_model)  # W^Q of every head, stacked
        self.W_k = nn.Linear(d_model, d_model)
        self.W_v = nn.Linear(d_model, d_model)
        self.W_o = nn.Linear(d_model, d_model)
        # Where a recording reads every head's softmax input, weights and context (engine/hooks.py).
        self.hook_logits, self.hook_weights, self.hook_context = HookPoint(), HookPoint(), HookPoint()

    def split(self, x: Tensor) -> Tensor:
        """[B, T, d_model] -> [B, heads, T, d_k]."""
        B, T, _ = x.shape
        return x.view(B, T, self.num_heads, self.d_k).transpose(1, 2)

    def forward(self, query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None = None,
                need_weights: bool = True) -> tuple[Tensor, Attended | None]:
        """query [B, T_q, d], key and value [B, T_k, d]; mask (additive: 0 or -inf) broadcasts to
        [B, heads, T_q, T_k]. Returns the output [B, T_q, d] and what each head attended to, or
        None in its place when need_weights=False and no hook point is hooked: then the fused
        kernel computes the output. Both compute the same function (tests/engine/test_sdpa.py)
        except on a row whose every key is masked, which the models' masks never make
        (engine.attention.padding_mask): written out, its softmax is 0/0, NaN; fused, its context is 0."""
        q = self.split(self.W_q(query))  # [B, h, T_q, d_k]
        k = self.split(self.W_k(key))  # [B, h, T_k, d_k]
        v = self.split(self.W_v(value))  # [B, h, T_k, d_k]
        hooks = (self.hook_logits, self.hook_weights, self.hook_context)
        if need_weights or any(watched(point) for point in hooks):
            heads = scaled_dot_product_attention(q, k, v, mask, hooks, self.scale)
            context = heads.context  # [B, h, T_q, d_k]
        else:
            check_keys(k)
            # SDPA's default scale is 1/sqrt(d_k); 1.0 leaves the logits undivided, as scale=False means.
            scale = None if self.scale else 1.0
            context = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale)  # [B, h, T_q, d_k]
            heads = None  # no weights were ever materialised
        concat = context.transpose(1, 2).flatten(2)  # [B, T_q, d]: the heads side by side
        return self.W_o(concat), heads  # [B, T_q, d]


@dataclass(frozen=True)
class Saturation:
    """How saturated every attention softmax of a transformer is on one batch, all heads of all layers together.

    entropy          mean over every row of H(alpha_t) = -sum_i alpha_ti log alpha_ti, in nats: log T_k
                     for a uniform row, 0 for a one-hot one (masked keys, alpha_ti = 0, add nothing)
    uniform_entropy  the same mean if every row spread its weight evenly over the keys it may see
                     (log of their number: a causal row t sees t + 1), the ceiling `entropy` is read against
    logit_grad_norm  ||dL/dz||_2 over the softmax's inputs z (the logits, after any 1/sqrt(d_k)) of every
                     layer together. dL/dz_ti = alpha_ti (g_ti - sum_j alpha_tj g_tj) with g = dL/dalpha:
                     near 0 wherever one alpha_ti is near 1, so a saturated softmax passes no gradient on
    """

    entropy: float
    uniform_entropy: float
    logit_grad_norm: float


def softmax_entropy(logits: Tensor) -> Tensor:
    """H(softmax(logits)) = -sum_i alpha_i log alpha_i along the last axis, in nats: one value per
    row ([...]). A masked key (logit -inf, alpha_i = 0) adds 0, as the limit p log p -> 0 says."""
    return torch.special.entr(logits.softmax(-1)).sum(-1)


def saturation(model: nn.Module, loss: Callable[[Tensor, Tensor], Tensor], x: Tensor, y: Tensor) -> Saturation:
    """Saturation of a transformer's attention on the batch x, y (teacher-forced; eval mode, so
    no dropout), with `loss` (a task's loss(y_hat, y)). Only the logits are differentiated: the
    parameters' .grad are left as they were."""
    logits: list[Tensor] = []
    sites = [(m.hook_logits, lambda module, inputs, out: logits.append(out))
             for m in model.modules() if isinstance(m, MultiHeadAttention)]
    if not sites:
        raise ValueError("saturation measures a transformer's attention softmaxes, and this model has none")
    was_training = model.training
    model.eval()
    try:
        with torch.enable_grad(), hooked(sites):
            grads = torch.autograd.grad(loss(model(x, y), y), logits)
    finally:
        model.train(was_training)
    rows = [softmax_entropy(z.detach()).flatten() for z in logits]  # per site: [B*h*T_q]
    # A masked key's logit is -inf; every other is finite, however saturated its softmax weight.
    seen = [z.detach().isfinite().sum(-1).flatten().double().log() for z in logits]  # per site: [B*h*T_q]
    return Saturation(
        entropy=torch.cat(rows).mean().item(),
        uniform_entropy=torch.cat(seen).mean().item(),
        logit_grad_norm=torch.cat([g.flatten() for g in grads]).norm().item(),
    )
