"""Custom autograd.Functions inside a compiled graph (issue 40, item 3):
with the default options the graph compiles around them and each runs
with its own backward -- under torch.compile its forward and backward
graphs (Dynamo's autograd_function_apply) compiled on their own, under
aot_function the Function's own apply between compiled segments. A
Function whose backward is not the derivative of its forward shows the
difference: autodiff of the forward would give another gradient."""

import copy
import warnings

import pytest
import torch
import torch.nn as nn

from aotcache.torch import aot_function
from test_autograd_inside import GradReverse


class ScaledClip(torch.autograd.Function):
    """clamp(x, -1, 1) * scale, whose backward passes the gradient where
    x is clipped too, at half strength (a straight-through estimator)."""

    @staticmethod
    def forward(ctx, x, scale):
        ctx.save_for_backward(x)
        ctx.scale = scale
        return x.clamp(-1, 1) * scale

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        inside = (x.abs() <= 1).to(grad.dtype)
        return grad * ctx.scale * (0.5 + 0.5 * inside), None


class Twice(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.mark_dirty(x)
        return x.mul_(2)

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(8, 8)
        self.b = nn.Linear(8, 4)

    def forward(self, x):
        h = ScaledClip.apply(self.a(x) * 3, 2.0)
        return self.b(torch.tanh(h)).square().mean()


def _train(model, steps, x):
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = model(x)
        loss.backward()
        opt.step()
        losses.append(loss.detach())
    return losses


def _trains_as_eager(model_class, daemon, nothing_eager=False):
    """model_class() trained 3 steps through torch.compile(backend=
    "aotcache") and eagerly: the same losses and parameters (and, if
    `nothing_eager`, no aotcache warning of anything run eagerly)."""
    torch.manual_seed(0)
    eager = model_class()
    model = copy.deepcopy(eager)
    x = torch.randn(16, 8)
    compiled = torch.compile(model, backend="aotcache", options={"server": daemon})
    with warnings.catch_warnings():
        if nothing_eager:
            warnings.filterwarnings("error", message="aotcache")
        got = _train(compiled, 3, x)
    want = _train(eager, 3, x)
    torch.testing.assert_close(torch.stack(got), torch.stack(want))
    for p, q in zip(model.parameters(), eager.parameters()):
        torch.testing.assert_close(p, q)


@pytest.mark.skipif(not hasattr(torch, "compile"), reason="torch.compile needs torch 2")
def test_torch_compile_compiles_the_function_with_its_own_backward(daemon):
    import aotcache.dynamo
    torch._dynamo.reset()
    _trains_as_eager(Net, daemon, nothing_eager=True)
    rows = aotcache.dynamo.cache_info()
    parts = sorted(r["custom_function"] for r in rows if "custom_function" in r)
    assert parts == ["backward", "forward"]
    assert all(r["status"] != "eager" for r in rows)
    assert all(r["mode"] == "inference" for r in rows if "custom_function" in r)


def test_aot_function_runs_the_function_between_compiled_segments(daemon):
    torch.manual_seed(0)
    a, b = nn.Linear(4, 4), nn.Linear(4, 4)
    twin_a, twin_b = copy.deepcopy(a), copy.deepcopy(b)

    def f(x):
        return b(GradReverse.apply(a(x)).relu()).sum()

    def twin_f(x):
        return twin_b(GradReverse.apply(twin_a(x)).relu()).sum()

    g = aot_function(f, server=daemon)
    x = torch.randn(3, 4)
    g(x).backward()
    twin_f(x).backward()
    for p, q in zip(list(a.parameters()) + list(b.parameters()),
                    list(twin_a.parameters()) + list(twin_b.parameters())):
        torch.testing.assert_close(p.grad, q.grad)
    rows = g.cache_info()
    islands = [r for r in rows if r.get("op")]
    assert [r["op"] for r in islands] == [
        "custom autograd.Function %s.GradReverse" % GradReverse.__module__]
    assert "run through its own apply" in islands[0]["eager"]
    assert sum(1 for r in rows if "segment" in r) == 2


def test_aot_function_with_scaled_clip_gives_its_gradient(daemon):
    x = torch.randn(5, 3, requires_grad=True)
    twin = x.detach().clone().requires_grad_()

    def f(x):
        return (ScaledClip.apply(x * 3, 2.0).sin() * x).sum()

    aot_function(f, server=daemon)(x).backward()
    f(twin).backward()
    torch.testing.assert_close(x.grad, twin.grad)


def test_a_function_writing_its_input_runs_the_whole_function_eagerly(daemon):
    def f(x):
        return Twice.apply(x) + 1

    x, twin = torch.ones(3), torch.ones(3)
    with pytest.warns(UserWarning, match="Twice writes its input in place"):
        out = aot_function(f, server=daemon)(x)
    assert torch.equal(out, f(twin)) and torch.equal(x, twin)  # Written once.


class Checkpointed(nn.Module):
    def __init__(self, p: float = 0.0):
        super().__init__()
        self.a = nn.Linear(8, 8)
        self.b = nn.Linear(8, 4)
        self.drop = nn.Dropout(p)
        self.scale = nn.Parameter(torch.ones(()))

    def block(self, x):
        return self.drop(torch.tanh(self.a(x)).sin()) * self.scale

    def forward(self, x):
        from torch.utils.checkpoint import checkpoint
        h = checkpoint(self.block, x, use_reentrant=False)
        return self.b(h).square().mean()


@pytest.mark.skipif(not hasattr(torch, "compile"), reason="torch.compile needs torch 2")
def test_torch_compile_recomputes_a_checkpointed_region_in_the_backward(daemon):
    import aotcache.dynamo
    torch._dynamo.reset()  # Drops the graphs cache_info() lists: count after it.
    before = len(aotcache.dynamo.cache_info())
    _trains_as_eager(Checkpointed, daemon)
    body = [r for r in aotcache.dynamo.cache_info()[before:] if r.get("checkpoint")]
    # The forward runs the body without autograd, the backward again with it.
    assert sorted(r["mode"] for r in body) == ["inference", "training"]


@pytest.mark.skipif(not hasattr(torch, "compile"), reason="torch.compile needs torch 2")
def test_the_recomputed_region_draws_the_same_dropout_mask(daemon):
    """d(loss)/d(scale) of sum(dropout(h) * scale) at scale 1 is the loss
    itself only if the backward's recomputed mask is the forward's."""
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = Checkpointed(p=0.5)

    def loss_of(x):
        from torch.utils.checkpoint import checkpoint
        return checkpoint(model.block, x, use_reentrant=False).sum()

    compiled = torch.compile(loss_of, backend="aotcache", options={"server": daemon})
    for _ in range(3):
        model.scale.grad = None
        loss = compiled(torch.randn(16, 8))
        loss.backward()
        torch.testing.assert_close(model.scale.grad, loss.detach())
