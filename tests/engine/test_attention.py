"""Attention written out, against references: PyTorch's own scaled_dot_product_attention and
nn.MultiheadAttention given the same weights, each score function against its formula computed
pair by pair, and the positional encoding against Vaswani et al.'s formula."""
import math

import pytest
import torch
import torch.nn.functional as F

import engine
from engine.attention import (
    Attention,
    causal_mask,
    key_padding_mask,
    make_score,
    padding_mask,
    scaled_dot_product_attention,
)
from engine.config import LOCATION_POSITIONS, SCORES
from engine.multihead import MultiHeadAttention

from .test_validation import raises_saying

DOUBLE = dict(dtype=torch.float64)


def qkv(B=2, h=3, T_q=5, T_k=7, d_k=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(B, h, T, d_k, generator=g, **DOUBLE) for T in (T_q, T_k, T_k)]


# ---------------------------------------------------------------- scaled dot-product attention

def test_rows_sum_to_one_and_output_equals_torch_sdpa():
    q, k, v = qkv()
    a = scaled_dot_product_attention(q, k, v)
    torch.testing.assert_close(a.weights.sum(-1), torch.ones(2, 3, 5, **DOUBLE), atol=1e-12, rtol=0)
    torch.testing.assert_close(a.context, F.scaled_dot_product_attention(q, k, v), atol=1e-12, rtol=0)
    torch.testing.assert_close(a.logits, q @ k.transpose(-2, -1) / 2.0, atol=1e-12, rtol=0)  # sqrt(d_k) = 2
    torch.testing.assert_close(a.logits.softmax(-1), a.weights, atol=1e-15, rtol=0)


def test_causal_mask_gives_the_future_exactly_zero_weight():
    q, k, v = qkv(T_q=6, T_k=6)
    mask = causal_mask(6, torch.float64)
    a = scaled_dot_product_attention(q, k, v, mask)
    future = torch.ones(6, 6, dtype=torch.bool).triu(1)
    assert torch.all(a.weights[..., future] == 0.0)  # exactly, not approximately
    assert torch.all(a.weights[..., ~future] > 0)
    torch.testing.assert_close(a.weights.sum(-1), torch.ones(2, 3, 6, **DOUBLE), atol=1e-12, rtol=0)
    assert torch.all(torch.isinf(a.logits[..., future]))  # the mask is added before the softmax
    reference = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    torch.testing.assert_close(a.context, reference, atol=1e-12, rtol=0)
    # Position t's output does not move when the future's keys and values do.
    k2, v2 = k.clone(), v.clone()
    k2[:, :, 4:] += 10.0
    v2[:, :, 4:] -= 10.0
    moved = scaled_dot_product_attention(q, k2, v2, mask)
    torch.testing.assert_close(moved.context[:, :, :4], a.context[:, :, :4], atol=0, rtol=0)


def test_padding_mask_equals_torch_with_a_boolean_mask():
    q, k, v = qkv()
    padded = torch.tensor([[False] * 7, [False] * 4 + [True] * 3])
    a = scaled_dot_product_attention(q, k, v, key_padding_mask(padded, torch.float64))
    allowed = ~padded[:, None, None, :]  # torch's bool mask: True where attending is allowed
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
    torch.testing.assert_close(a.context, expected, atol=1e-12, rtol=0)
    assert torch.all(a.weights[1, :, :, 4:] == 0.0)


def test_a_models_padding_mask_hides_padding_unless_a_query_would_see_nothing_else():
    front = torch.tensor([[False] * 5, [True, True, False, False, False], [True] * 5])  # [3, 5]: none, front, all
    mask = padding_mask(front, dtype=torch.float64)  # [3, 1, 1, 5]
    assert torch.equal(mask[:2], key_padding_mask(front[:2], torch.float64))
    assert torch.equal(mask[2], torch.zeros(1, 1, 5, **DOUBLE))  # all padding: nothing hidden, no 0/0
    causal = padding_mask(front, causal=True, dtype=torch.float64)  # [3, 1, 5, 5]
    both = causal_mask(5, torch.float64) + key_padding_mask(front[:2], torch.float64)
    assert torch.equal(causal[:2, :, 2:], both[:, :, 2:])
    # A front pad in a causal stack sees only padding, so it keeps its causal view (its output is
    # never read, but a NaN there would reach every position through the values).
    assert torch.equal(causal[1, 0, :2], causal_mask(5, torch.float64)[:2])
    assert torch.equal(causal[2, 0], causal_mask(5, torch.float64))
    q, k, v = qkv(B=3, T_q=5, T_k=5)
    for m in (mask, causal):
        assert torch.isfinite(scaled_dot_product_attention(q, k, v, m).context).all()


# ---------------------------------------------------------------- multi-head attention

def loaded_pair(d_model=12, heads=3, seed=0):
    """nn.MultiheadAttention with random weights, and ours holding the same ones."""
    torch.manual_seed(seed)
    reference = torch.nn.MultiheadAttention(d_model, heads, batch_first=True).double()
    ours = MultiHeadAttention(d_model, heads).double()
    with torch.no_grad():
        for p in reference.parameters():
            p.normal_()  # biases too: PyTorch starts them at zero
        for name, w, b in zip("qkv", reference.in_proj_weight.chunk(3), reference.in_proj_bias.chunk(3)):
            getattr(ours, f"W_{name}").weight.copy_(w)
            getattr(ours, f"W_{name}").bias.copy_(b)
        ours.W_o.weight.copy_(reference.out_proj.weight)
        ours.W_o.bias.copy_(reference.out_proj.bias)
    return reference, ours


@pytest.mark.parametrize("masks", ["none", "causal", "padding", "both"])
def test_multi_head_output_and_weights_equal_torch_multihead_attention(masks):
    reference, ours = loaded_pair()
    g = torch.Generator().manual_seed(1)
    query, memory = torch.randn(2, 5, 12, generator=g, **DOUBLE), torch.randn(2, 5, 12, generator=g, **DOUBLE)
    padded = torch.tensor([[False] * 5, [False, False, False, True, True]])
    causal = masks in ("causal", "both")
    padding = masks in ("padding", "both")
    expected, expected_weights = reference(
        query, memory, memory,
        attn_mask=causal_mask(5, torch.float64) if causal else None,
        key_padding_mask=key_padding_mask(padded, torch.float64)[:, 0, 0] if padding else None,
        need_weights=True, average_attn_weights=False,
    )
    mask = 0.0
    if causal:
        mask = mask + causal_mask(5, torch.float64)
    if padding:
        mask = mask + key_padding_mask(padded, torch.float64)
    out, heads = ours(query, memory, memory, mask if masks != "none" else None)
    torch.testing.assert_close(out, expected, atol=1e-12, rtol=1e-12)
    torch.testing.assert_close(heads.weights, expected_weights, atol=1e-12, rtol=0)
    assert heads.weights.shape == (2, 3, 5, 5) and heads.context.shape == (2, 3, 5, 4)
    if padding:  # the models' mask, where no query is left with padding alone: the same numbers
        assert torch.equal(padding_mask(padded, causal, torch.float64).expand(2, 1, 5, 5), mask.expand(2, 1, 5, 5))


def test_each_head_is_its_own_slice_of_the_projections():
    """head_j = softmax(Q W_j^Q (K W_j^K)^T / sqrt(d_k)) V W_j^V, W_j^Q rows j*d_k ... (j+1)*d_k."""
    _, ours = loaded_pair()
    x = torch.randn(1, 6, 12, **DOUBLE)
    _, heads = ours(x, x, x)
    for j in range(3):
        rows = slice(4 * j, 4 * (j + 1))
        q = x @ ours.W_q.weight[rows].T + ours.W_q.bias[rows]  # [1, 6, 4]
        k = x @ ours.W_k.weight[rows].T + ours.W_k.bias[rows]
        v = x @ ours.W_v.weight[rows].T + ours.W_v.bias[rows]
        alpha = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(4), dim=-1)  # [1, 6, 6]
        torch.testing.assert_close(heads.weights[:, j], alpha, atol=1e-12, rtol=0)
        torch.testing.assert_close(heads.context[:, j], alpha @ v, atol=1e-12, rtol=0)


# ---------------------------------------------------------------- score functions

def pairwise(score, s, h):
    """[B, T_q, S] by calling `score` on one (query, key, key's position) at a time."""
    return torch.tensor([[[score(s[b, i], h[b, j], j) for j in range(h.shape[1])] for i in range(s.shape[1])]
                         for b in range(s.shape[0])], **DOUBLE)


def formula(name, module, q, k, j):
    """score(s, h_j) for one query and one key at position j, as the papers write it."""
    if name == "location":  # (W_a s)_j: row j of W_a, whatever h_j holds
        return module.W_a.weight[j] @ q
    if name == "dot":
        return q @ k
    if name == "general":
        return q @ module.W_a.weight @ k  # s^T W_a h
    if name == "additive":
        W = torch.cat([module.W_s.weight, module.W_h.weight], dim=1)  # W [s; h]
        return module.v.weight[0] @ torch.tanh(W @ torch.cat([q, k]) + module.W_h.bias)
    if name == "scaled_dot":
        return q @ k / math.sqrt(len(q))
    return module.log_beta.exp() * F.cosine_similarity(q, k, dim=0)


@pytest.mark.parametrize("name", SCORES)
def test_score_functions_match_their_formulas(name):
    torch.manual_seed(0)
    module = make_score(name, 6).double()
    s, h = torch.randn(2, 3, 6, **DOUBLE), torch.randn(2, 5, 6, **DOUBLE)
    with torch.no_grad():
        expected = pairwise(lambda q, k, j: formula(name, module, q, k, j), s, h)
        torch.testing.assert_close(module(s, h), expected, atol=1e-12, rtol=1e-12)


@pytest.mark.parametrize("name", SCORES)
def test_alignment_rows_sum_to_one_and_context_is_their_weighted_sum(name):
    torch.manual_seed(0)
    attention = Attention(name, 6).double()
    s, h = torch.randn(2, 4, 6, **DOUBLE), torch.randn(2, 9, 6, **DOUBLE)
    a = attention(s, h)
    assert a.weights.shape == (2, 1, 4, 9)
    torch.testing.assert_close(a.weights.sum(-1), torch.ones(2, 1, 4, **DOUBLE), atol=1e-12, rtol=0)
    torch.testing.assert_close(a.context[:, 0], torch.einsum("bti,bid->btd", a.weights[:, 0], h), atol=1e-12, rtol=0)


@pytest.mark.parametrize("name", SCORES)
def test_alignment_gives_padding_exactly_zero_and_is_the_alignment_over_the_rest(name):
    torch.manual_seed(0)
    attention = Attention(name, 6).double()
    s, h = torch.randn(2, 4, 6, **DOUBLE), torch.randn(2, 9, 6, **DOUBLE)
    padded = torch.tensor([[False] * 9, [True] * 3 + [False] * 6])  # the second source front-padded
    a = attention(s, h, padded)
    assert torch.all(a.weights[1, 0, :, :3] == 0.0) and torch.all(torch.isinf(a.logits[1, 0, :, :3]))
    torch.testing.assert_close(a.weights.sum(-1), torch.ones(2, 1, 4, **DOUBLE), atol=1e-12, rtol=0)
    # Unpadded: unchanged, to float64 rounding. Not bit for bit: alone, as a batch of 1, the source
    # may take other matrix-multiply blockings than in the batch of 2, whose sums of 6 products
    # round differently (measured up to 1.7e-16: general on the avx2 path, additive on avx512).
    alone = attention(s[:1], h[:1])
    torch.testing.assert_close(a.weights[0], alone.weights[0], atol=1e-12, rtol=0)
    torch.testing.assert_close(a.context[0], alone.context[0], atol=1e-12, rtol=0)
    rest = attention(s[1:], h[1:, 3:])  # as if the padding were not there at all (location: its positions too)
    torch.testing.assert_close(a.weights[1, :, :, 3:], rest.weights[0], atol=1e-12, rtol=0)
    torch.testing.assert_close(a.context[1], rest.context[0], atol=1e-12, rtol=0)


@pytest.mark.parametrize("name", SCORES)
def test_alignment_gradients_equal_finite_differences(name):
    """Autograd's gradients of the context and the weights (through the score, the padding mask,
    the softmax and the weighted sum) against central differences, with respect to the queries,
    the encoder's states and every weight of the score."""
    torch.manual_seed(0)
    attention = Attention(name, 4).double()
    weights = dict(attention.named_parameters())  # dot and scaled_dot have none
    g = torch.Generator().manual_seed(1)
    s, h = torch.randn(2, 3, 4, generator=g, **DOUBLE), torch.randn(2, 5, 4, generator=g, **DOUBLE)
    padded = torch.tensor([[False] * 5, [True, True, False, False, False]])

    def attend(s, h, *values):
        a = torch.func.functional_call(attention, dict(zip(weights, values)), (s, h, padded))
        return a.context, a.weights

    inputs = (s.requires_grad_(), h.requires_grad_(), *weights.values())
    assert torch.autograd.gradcheck(attend, inputs, eps=1e-6, atol=1e-7)


# ---------------------------------------------------------------- location-based attention

def test_location_weights_are_the_softmax_of_W_a_s_cut_to_the_source_whatever_the_states_hold():
    """alpha_t = softmax(W_a s_t) over the source's S positions, computed by hand; h_i is never
    read by the score (only summed into the context), and position i is scored alike whatever S."""
    torch.manual_seed(0)
    attention = Attention("location", 6).double()
    W_a = attention.score.W_a.weight  # [positions, 6]
    assert W_a.shape == (LOCATION_POSITIONS, 6)
    s, h = torch.randn(2, 4, 6, **DOUBLE), torch.randn(2, 9, 6, **DOUBLE)
    a = attention(s, h)
    for b in range(2):
        for t in range(4):
            e = [sum(W_a[i, k].item() * s[b, t, k].item() for k in range(6)) for i in range(9)]  # (W_a s_t)_i
            alpha = [math.exp(e_i) / sum(math.exp(e_j) for e_j in e) for e_i in e]
            assert a.weights[b, 0, t].tolist() == pytest.approx(alpha, abs=1e-12)
    torch.testing.assert_close(a.weights.sum(-1), torch.ones(2, 1, 4, **DOUBLE), atol=1e-12, rtol=0)
    moved = attention(s, -3 * h)
    assert torch.equal(moved.weights, a.weights)  # no encoder state is scored...
    torch.testing.assert_close(moved.context, -3 * a.context, atol=1e-12, rtol=0)  # ...but all are summed
    longer = attention(s, torch.randn(2, 20, 6, **DOUBLE))
    torch.testing.assert_close(longer.logits[..., :9], a.logits, atol=1e-12, rtol=0)


def test_a_source_longer_than_location_attention_scores_is_refused_when_the_model_is_built():
    attention = Attention("location", 4)
    attention(torch.zeros(1, 2, 4), torch.zeros(1, LOCATION_POSITIONS, 4))  # the longest it scores
    too_long = torch.zeros(1, LOCATION_POSITIONS + 1, 4)
    raises_saying(lambda: attention(torch.zeros(1, 2, 4), too_long), f"at most {LOCATION_POSITIONS} source positions")
    cfg = engine.ModelConfig(attention="location")
    engine.build_model(cfg, engine.make_task("reverse", seq_len=LOCATION_POSITIONS))
    raises_saying(lambda: engine.build_model(cfg, engine.make_task("reverse", seq_len=LOCATION_POSITIONS + 1)),
                  f"at most {LOCATION_POSITIONS} source positions", f"source has {LOCATION_POSITIONS + 1}",
                  "another score function")
    engine.build_model(engine.ModelConfig(attention="dot"), engine.make_task("reverse", seq_len=LOCATION_POSITIONS + 1))
    engine.build_model(cfg, engine.make_task("sort", seq_len=LOCATION_POSITIONS - 1))  # and the end marker
    raises_saying(lambda: engine.build_model(cfg, engine.make_task("sort", seq_len=LOCATION_POSITIONS)),
                  f"at most {LOCATION_POSITIONS} positions", f"among {LOCATION_POSITIONS + 1}")


# ---------------------------------------------------------------- positional encoding

def test_positional_encoding_matches_the_formula():
    pe = engine.positional_encoding(50, 512)
    assert pe.shape == (50, 512)
    # The reference point: position 22, dimensions 100 and 101 (i = 50).
    angle = 22 / 10000 ** (100 / 512)
    assert pe[22, 100].item() == pytest.approx(math.sin(angle), abs=1e-6)
    assert pe[22, 101].item() == pytest.approx(math.cos(angle), abs=1e-6)
    assert round(pe[22, 100].item(), 2) == -0.48 and round(pe[22, 101].item(), 2) == -0.88
    small = engine.positional_encoding(7, 9)  # an odd width: the last sine has no cosine
    for pos in range(7):
        for dim in range(9):
            rate = 10000 ** ((dim - dim % 2) / 9)
            expected = math.sin(pos / rate) if dim % 2 == 0 else math.cos(pos / rate)
            assert small[pos, dim].item() == pytest.approx(expected, abs=1e-6)


def test_positional_encoding_dot_products_depend_only_on_the_offset():
    """PE(p + k) is a rotation of PE(p), so PE(p) . PE(p + k) is the same for every p."""
    pe = engine.positional_encoding(60, 64).double()
    for k in (1, 5, 17):
        dots = (pe[:-k] * pe[k:]).sum(-1)  # [60 - k]
        assert dots.std().item() < 1e-5


# ---------------------------------------------------------------- bad input

def test_bad_attention_input_says_what_to_change():
    raises_saying(lambda: MultiHeadAttention(10, 3), "num_heads=3", "d_model=10")
    raises_saying(lambda: make_score("luong", 4), "attention", "dot, general, additive, scaled_dot, cosine, location",
                  "'luong'")
    q, _, _ = qkv()
    empty = torch.zeros(2, 3, 0, 4, **DOUBLE)
    raises_saying(lambda: scaled_dot_product_attention(q, empty, empty), "source is empty")
    raises_saying(lambda: Attention("dot", 4)(torch.zeros(1, 2, 4), torch.zeros(1, 0, 4)), "source is empty")
    raises_saying(lambda: engine.positional_encoding(0, 8), "max_len", "between 1")
    raises_saying(lambda: engine.positional_encoding(10, 0), "d_model", "between 1")
