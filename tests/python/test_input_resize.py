"""resize_ of an input (issue 22, item 4), with eager as the oracle: the
caller's tensor ends with eager's shape, values and version counter, the
same tensor passed twice is one input (as AOTAutograd deduplicates it), and
what aotcache does not support is refused by name."""

import pytest
import torch

from aotcache.torch import CompileError, aot_function
from aotcache.torch_version import storage_of


def _state(t):
    return t.shape, t.stride(), t.storage_offset(), t._version


def _run_both(daemon, f, make, **kw):
    ref = make()
    ref_out = f(*ref)
    compiled = aot_function(f, server=daemon, **kw)
    got = make()
    out = compiled(*got)
    torch.testing.assert_close(out, ref_out)
    for a, b in zip(got, ref):
        assert _state(a) == _state(b)
        torch.testing.assert_close(a, b)
    return compiled, got


def test_grow_then_compute(daemon):
    def f(buf, x):
        buf.resize_(2, 3)
        buf.copy_(x * 2)
        return buf.sum(0) + 1

    _run_both(daemon, f, lambda: (torch.empty(0), torch.arange(6.).view(2, 3)))


def test_shrink_keeps_leading_values(daemon):
    def f(x):
        x.resize_(2, 2)
        return x * 3

    compiled, (got,) = _run_both(daemon, f, lambda: (torch.arange(6.),))
    # The caller's storage keeps its memory, as eager's resize_ to fewer
    # elements does.
    assert storage_of(got).nbytes() == 6 * 4


def test_grow_beside_a_training_input(daemon):
    def f(out, w, x):
        out.resize_(3)
        out.copy_((w * x).detach())
        return (w * x).sum()

    w = torch.randn(3, requires_grad=True)
    x = torch.randn(3)
    ref_out, ref_w = torch.empty(0), w.detach().clone().requires_grad_()
    f(ref_out, ref_w, x).backward()
    compiled = aot_function(f, server=daemon)
    got_out, got_w = torch.empty(0), w.detach().clone().requires_grad_()
    compiled(got_out, got_w, x).backward()
    assert compiled.cache_info()[0]["mode"] == "training"
    torch.testing.assert_close(got_out, ref_out)
    torch.testing.assert_close(got_w.grad, ref_w.grad)


def test_a_tensor_that_requires_grad_is_refused_as_eager_refuses_it(daemon):
    def f(x):
        x.resize_(4)
        return x

    with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
        f(torch.zeros(2, requires_grad=True))
    # The trace meets eager's error.
    with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
        aot_function(f, server=daemon)(torch.zeros(2, requires_grad=True))


def test_a_tensor_sharing_memory_is_refused_by_name(daemon):
    def f(x, y):
        y.resize_(8)
        return x + 1

    base = torch.zeros(4)
    with pytest.raises(CompileError, match="resize_ of a tensor that shares its memory"):
        aot_function(f, server=daemon, fallback="error")(base, base.view(2, 2))


def test_growing_into_memory_the_storage_holds_past_it_is_refused(daemon):
    def f(x):
        x.resize_(4)
        return x + 0

    compiled = aot_function(f, server=daemon)
    compiled(torch.zeros(2))  # Ends its storage: eager's new values are free.
    within = torch.arange(6.)[:2]
    with pytest.raises(RuntimeError, match="resize_ grows input 0 into memory"):
        compiled(within)
    assert within.shape == (2,) and within._version == 0


def test_the_same_tensor_twice_is_one_input(daemon):
    def f(x, y):
        x.mul_(2)
        return x + y

    _run_both(daemon, f, lambda: (lambda t: (t, t))(torch.arange(3.)))
    # Two tensors over one storage are two inputs: another signature.
    compiled = aot_function(f, server=daemon)
    t = torch.arange(3.)
    compiled(t, t)
    u = torch.arange(3.)
    ref = torch.arange(3.)
    torch.testing.assert_close(compiled(u, u[:]), f(ref, ref[:]))
    assert len(compiled.cache_info()) == 2
