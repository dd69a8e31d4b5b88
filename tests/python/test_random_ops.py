"""Random ops run compiled (Philox, seeded from torch's default generator on
every call): the keep rate within a binomial bound, p = 0 and p = 1,
torch.manual_seed reproducing a run, a fresh mask per call, and gradients
exactly where (and scaled as) the forward kept, also through the cache's
hit in another process."""

import math
import os
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F

from aotcache.torch import aot_function, aot_module

N = 200_000


@pytest.fixture
def compile_(daemon):
    return lambda fn: aot_function(fn, server=daemon)


@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
def test_the_keep_rate_is_within_a_binomial_bound(compile_, p):
    f = compile_(lambda x: F.dropout(x, p, training=True))
    kept = int((f(torch.ones(N)) != 0).sum())
    sigma = math.sqrt(N * p * (1 - p))
    assert abs(kept - N * (1 - p)) < 5 * sigma, (kept, N * (1 - p), sigma)
    assert f.cache_info()[0]["status"] in ("miss", "hit")  # Compiled, not a bypass.


def test_kept_values_are_scaled_and_the_gradient_uses_the_forward_mask(compile_):
    p = 0.3
    f = compile_(lambda x: F.dropout(x, p, training=True) * 3)
    x = torch.randn(N, requires_grad=True)
    y = f(x)
    kept = y != 0
    assert torch.allclose(y[kept], x.detach()[kept] * 3 / (1 - p))
    y.sum().backward()
    assert torch.equal(x.grad == 0, ~kept)  # Zero exactly where dropped.
    assert torch.allclose(x.grad[kept], torch.full_like(x.grad[kept], 3 / (1 - p)))


@pytest.mark.parametrize("p,kept", [(0.0, N), (1.0, 0)])
def test_p_zero_keeps_all_and_p_one_drops_all(compile_, p, kept):
    x = torch.ones(N, requires_grad=True)
    f = compile_(lambda x: F.dropout(x, p, training=True) + x * 0)
    y = f(x)
    assert int((y != 0).sum()) == kept
    y.sum().backward()
    assert int((x.grad != 0).sum()) == kept


def test_manual_seed_reproduces_and_each_call_draws_anew(compile_):
    f = compile_(lambda x: F.dropout(x, 0.5, training=True))
    x = torch.ones(1000)
    torch.manual_seed(5)
    a, b = f(x), f(x)
    torch.manual_seed(5)
    c = f(x)
    assert torch.equal(a, c)
    assert not torch.equal(a, b)


def test_two_dropouts_in_one_graph_draw_independent_masks(compile_):
    f = compile_(lambda x: torch.stack([F.dropout(x, 0.5, training=True),
                                        F.dropout(x, 0.5, training=True)]))
    masks = f(torch.ones(N)) != 0
    agree = float((masks[0] == masks[1]).float().mean())
    assert abs(agree - 0.5) < 0.01, agree


def test_rand_like_and_randn_like_have_their_moments(compile_):
    f = compile_(lambda x: torch.stack([torch.rand_like(x), torch.randn_like(x)]))
    u, n = f(torch.zeros(N))
    assert 0 <= float(u.min()) and float(u.max()) < 1
    assert abs(float(u.mean()) - 0.5) < 5 * math.sqrt(1 / 12 / N)
    assert abs(float(n.mean())) < 5 / math.sqrt(N)
    assert abs(float(n.std()) - 1) < 0.01


def test_bernoulli_keeps_autograd_history_with_a_zero_gradient_as_eager(compile_):
    # Eager records bernoulli and bernoulli_(p) on a tensor that requires
    # grad, with a zero gradient (derivatives.yaml: zeros_like(grad)).
    def f(a, w):
        x = a * 1
        x.bernoulli_(0.5)
        return (x * w).sum(), torch.bernoulli(a)

    def inputs():
        return (torch.rand(64, requires_grad=True), torch.rand(64, requires_grad=True))

    a, w = inputs()
    loss, drawn = f(a, w)
    loss.backward()
    b, v = inputs()
    compiled_loss, compiled_drawn = compile_(f)(b, v)
    assert compiled_drawn.requires_grad == drawn.requires_grad
    assert set(compiled_drawn.unique().tolist()) <= {0.0, 1.0}
    compiled_loss.backward()
    assert torch.equal(b.grad, a.grad) and not b.grad.any()
    assert v.grad is not None and w.grad is not None


def test_a_dropout_model_trains_through_a_hit_in_another_process(daemon):
    script = """
import sys, torch
sys.path.insert(0, %r)
import zoo
from aotcache.torch import aot_module
torch.manual_seed(0)
w = zoo.ZOO["gpt"](0.1)
m = aot_module(w.module.train(), server=%r)
opt = torch.optim.Adam(w.module.parameters(), lr=1e-2)
losses = []
for _ in range(8):
    opt.zero_grad()
    loss = w.loss(m(*w.inputs), w.target)
    loss.backward()
    opt.step()
    losses.append(loss.item())
print(m.cache_info()[0]["status"], losses[0], losses[-1])
""" % (os.path.dirname(os.path.abspath(__file__)), daemon)
    for status in ("miss", "hit"):
        out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
        assert out.returncode == 0, out.stderr[-3000:]
        got, first, last = out.stdout.split()
        assert got == status
        assert float(last) < float(first)  # It learns, dropout and all.
