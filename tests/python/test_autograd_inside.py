"""Autograd used inside a compiled function: checkpointing is traced
through (it only recomputes), what cannot be traced (a custom Function's
backward, hooks on its tensors, autograd.grad) is refused naming it, and
fallback="eager" catches every failure of tracing. Each gave a silent
wrong gradient or a raw error on a landed main (issue 22, items 3 and 7)."""

import copy

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

from aotcache.torch import CompileError, aot_function, aot_module


class Checkpointed(nn.Module):
    def __init__(self, reentrant: bool):
        super().__init__()
        self.a = nn.Linear(4, 4)
        self.b = nn.Linear(4, 4)
        self.reentrant = reentrant

    def forward(self, x):
        h = self.a(x)
        h = checkpoint(lambda t: self.b(t).relu(), h, use_reentrant=self.reentrant)
        return h.sum()


@pytest.mark.parametrize("reentrant", [True, False])
def test_checkpoint_gives_eagers_gradients(daemon, reentrant):
    torch.manual_seed(0)
    eager = Checkpointed(reentrant)
    compiled = copy.deepcopy(eager)
    cm = aot_module(compiled, server=daemon)
    x = torch.randn(3, 4)
    cm(x).backward()
    eager(x).backward()
    for (name, p), q in zip(compiled.named_parameters(), eager.parameters()):
        assert p.grad is not None, name
        assert torch.allclose(p.grad, q.grad, atol=1e-6), name


def test_reentrant_checkpoint_of_inputs_without_grad_leaves_its_parameters_without(daemon):
    # Eager: the reentrant checkpoint's output requires grad only when an
    # input does, so the parameters inside get no gradient at all.
    torch.manual_seed(0)
    lin = nn.Linear(4, 4)

    def f(x):
        return checkpoint(lambda t: lin(t).relu(), x).sum()

    g = aot_function(f, server=daemon)
    out = g(torch.randn(3, 4))
    with pytest.warns(UserWarning):  # torch's own, from the eager call
        want = f(torch.randn(3, 4))
    assert out.requires_grad == want.requires_grad == False  # noqa: E712
    assert lin.weight.grad is None


class GradReverse(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.view_as(x)

    @staticmethod
    def backward(ctx, g):
        return -g


def test_a_custom_function_is_refused_naming_it(daemon):
    torch.manual_seed(0)
    a, b = nn.Linear(4, 4), nn.Linear(4, 4)
    g = aot_function(lambda x: b(GradReverse.apply(a(x))).sum(), server=daemon,
                     fallback="error")
    version = a.weight._version
    with pytest.raises(CompileError, match="custom autograd.Function .*GradReverse"):
        g(torch.randn(3, 4))
    assert a.weight.grad is None and a.weight._version == version


def test_a_custom_function_with_fallback_eager_gives_its_gradient(daemon):
    torch.manual_seed(0)
    a, b = nn.Linear(4, 4), nn.Linear(4, 4)

    def f(x):
        return b(GradReverse.apply(a(x))).sum()

    g = aot_function(f, server=daemon, fallback="eager")
    x = torch.randn(3, 4)
    with pytest.warns(UserWarning, match="GradReverse"):
        g(x).backward()
    got = a.weight.grad.clone()
    a.zero_grad()
    f(x).backward()
    assert torch.equal(got, a.weight.grad)
    # Outside a trace, custom Functions are untouched.
    y = torch.randn(3, requires_grad=True)
    GradReverse.apply(y).sum().backward()
    assert torch.equal(y.grad, -torch.ones(3))


def test_register_hook_inside_is_refused(daemon):
    def f(x):
        h = x * 2
        h.register_hook(lambda grad: grad * 10)
        return h.sum()

    with pytest.raises(CompileError, match="register_hook"):
        aot_function(f, server=daemon, fallback="error")(torch.randn(3, requires_grad=True))


@pytest.mark.parametrize("how", ["grad", "backward"])
def test_autograd_inside_is_refused(daemon, how):
    def f(x):
        y = (x * x).sum()
        if how == "grad":
            return torch.autograd.grad(y, x)[0]
        y.backward()
        return y

    with pytest.raises(CompileError, match="grad|backward"):
        aot_function(f, server=daemon, fallback="error")(torch.randn(3, requires_grad=True))


@pytest.mark.parametrize("make", [
    lambda x: x * x.sum().item(),                       # .item()
    lambda x: x * 2 if x.sum() > 0 else x,              # data-dependent if
    lambda x: F.one_hot(x.argmax(-1), 4).float() + x,   # one_hot (nonzero inside)
])
def test_fallback_eager_catches_every_failure_of_tracing(daemon, make):
    x = torch.randn(2, 4)
    g = aot_function(make, server=daemon, fallback="eager")
    with pytest.warns(UserWarning, match="eagerly"):
        got = g(x)
    assert torch.equal(got, make(x))
    assert g.cache_info()[0]["eager"]  # the reason
