"""F.scaled_dot_product_attention (torch 2.x: make_fx records
_scaled_dot_product_flash_attention_for_cpu) through aot_function against
eager: values and gradients with causal, boolean and additive masks, a
scale, and queries laid out as nn.MultiheadAttention lays them out; the
output keeps eager's layout (views of it stay valid)."""

import pytest
import torch
import torch.nn.functional as F

from aotcache.torch import aot_function

if not hasattr(F, "scaled_dot_product_attention"):
    pytest.skip("scaled_dot_product_attention needs torch 2", allow_module_level=True)


def _qkv(transposed=False, seed=0):
    torch.manual_seed(seed)
    shape = (2, 5, 3, 8) if transposed else (2, 3, 5, 8)  # (B, L, H, E) or (B, H, L, E)
    qkv = [torch.randn(*shape) for _ in range(3)]
    if transposed:
        qkv = [t.transpose(1, 2) for t in qkv]
    return [t.requires_grad_() for t in qkv]


def _match(daemon, fn, args):
    compiled = aot_function(fn, server=daemon)
    mine = [a.detach().clone().requires_grad_() if a.requires_grad else a for a in args]
    theirs = [a.detach().clone().requires_grad_() if a.requires_grad else a for a in args]
    got, want = compiled(*mine), fn(*theirs)
    assert got.shape == want.shape and got.stride() == want.stride()
    assert torch.allclose(got, want, atol=1e-5), (got - want).abs().max()
    w = torch.randn_like(want)
    (got * w).sum().backward()
    (want * w).sum().backward()
    for a, b in zip(mine, theirs):
        if a.requires_grad:
            assert torch.allclose(a.grad, b.grad, atol=1e-5), (a.grad - b.grad).abs().max()
    assert compiled.cache_info()[0]["mode"] == "training"


@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("causal", [False, True])
def test_attention(daemon, transposed, causal):
    _match(daemon, lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=causal),
           _qkv(transposed))


def test_attention_with_a_scale_and_a_view_of_the_output(daemon):
    def f(q, k, v):
        out = F.scaled_dot_product_attention(q, k, v, scale=0.3)
        return out.transpose(1, 2).reshape(2, 5, 24)  # as MultiheadAttention merges heads
    _match(daemon, f, _qkv(transposed=True))


def test_attention_with_masks(daemon):
    q, k, v = _qkv(seed=1)
    keep = torch.rand(5, 5) > 0.3
    keep[:, 0] = True  # every row sees something
    bias = torch.randn(2, 3, 5, 5)
    _match(daemon, lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m),
           [q, k, v, keep])
    _match(daemon, lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m),
           [q, k, v, bias])


def test_attention_dropout_keeps_the_expected_value(daemon):
    q, k, v = [t.detach() for t in _qkv(seed=2)]
    f = aot_function(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, dropout_p=0.5),
                     server=daemon)
    plain = F.scaled_dot_product_attention(q, k, v)
    # 1,600 draws: with 400, eager's own mean strayed up to 0.14 from the
    # expectation (20 seeds), the compiled one's up to 0.18, both near atol.
    runs = torch.stack([f(q, k, v) for _ in range(1600)])
    assert not torch.equal(runs[0], runs[1])
    assert torch.allclose(runs.mean(0), plain, atol=0.15), (runs.mean(0) - plain).abs().max()


@pytest.mark.parametrize("causal", [False, True])
def test_grouped_query_attention(daemon, causal):
    """Fewer key/value heads than query heads (Llama's grouped-query
    attention): each key/value head serves two query heads, compiled."""
    torch.manual_seed(2)
    q = torch.randn(2, 4, 5, 8, requires_grad=True)
    k, v = (torch.randn(2, 2, 5, 8, requires_grad=True) for _ in range(2))

    def f(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)

    _match(daemon, f, [q, k, v])
    aot_function(f, server=daemon, fallback="error")(q, k, v)  # Whole: no island.
