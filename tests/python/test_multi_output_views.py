"""Outputs that are views from multi-output view ops (unbind, split,
chunk) returned directly (issue 22, item 5; issue 40, item 3): values,
_base and requires_grad as eager's, gradients through them as eager's, and
autograd's rules for them as eager's: an in-place write into one raises,
whether it views a leaf, an input or an intermediate, and so does reading
its grad_fn after its base changed; a write inside the function raises as
eager's does."""

import pytest
import torch

from aotcache.torch import aot_function

CASES = {
    "unbind": lambda x: x.unbind(0),
    "split": lambda x: x.split(2),
    "split_with_sizes": lambda x: x.split([1, 3]),
    "chunk": lambda x: torch.chunk(x, 2, dim=1),
    "chunk_of_intermediate": lambda x: torch.chunk(x * 2, 2),
    "view_of_unbind_of_intermediate": lambda x: [o.view(2, 3) for o in (x * 2).unbind(0)],
}

MULTI_OUTPUT_MESSAGE = "Such functions do not allow the output views"


def _non_leaf(*shape):
    return torch.randn(*shape, requires_grad=True).clone()


@pytest.mark.parametrize("name", CASES)
def test_outputs_are_eagers(daemon, name):
    fn = CASES[name]
    x = torch.randn(4, 6, requires_grad=True)
    twin = x.detach().clone().requires_grad_()
    got, want = aot_function(fn, server=daemon)(x), fn(twin)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert torch.equal(g, w) and g.shape == w.shape and g.stride() == w.stride()
        assert g.requires_grad == w.requires_grad
        assert (g._base is x) == (w._base is twin)
    sum((k + 1) * o.sum() for k, o in enumerate(got)).backward()
    sum((k + 1) * o.sum() for k, o in enumerate(want)).backward()
    assert torch.equal(x.grad, twin.grad)


@pytest.mark.parametrize("name", CASES)
def test_writing_into_an_output_raises_as_in_eager(daemon, name):
    fn = CASES[name]
    compiled = aot_function(fn, server=daemon)
    for x in (torch.randn(4, 6, requires_grad=True), _non_leaf(4, 6)):
        with pytest.raises(RuntimeError) as eager:
            fn(x)[0].mul_(2)
        with pytest.raises(RuntimeError) as ours:
            compiled(x)[0].mul_(2)
        if x.is_leaf:  # Eager names the leaf first.
            continue
        assert MULTI_OUTPUT_MESSAGE in str(eager.value)
        assert MULTI_OUTPUT_MESSAGE in str(ours.value)


def test_a_changed_base_makes_grad_fn_raise_as_in_eager(daemon):
    """PyTorch's test_output_aliases_input_multi_output_view_should_raise_autograd_error."""
    def f(a):
        return list(a.unbind(0))
    compiled = aot_function(f, server=daemon)
    for run in (f, compiled):
        x = _non_leaf(3, 3)
        out = run(x)
        x.mul_(2)
        with pytest.raises(RuntimeError, match=MULTI_OUTPUT_MESSAGE):
            out[0].grad_fn
        y = _non_leaf(3, 3)
        out = run(y)
        out[1].detach().mul_(2)
        with pytest.raises(RuntimeError, match=MULTI_OUTPUT_MESSAGE):
            out[0].grad_fn


def test_other_views_stay_writable(daemon):
    """Slices, selects and tensor_split are views of one output each:
    eager lets them be written, and so does the compiled function."""
    def f(a):
        b = a * 2
        return b[0], b.tensor_split(2)[1]
    x = torch.randn(4, 6, requires_grad=True)
    twin = x.detach().clone().requires_grad_()
    got, want = aot_function(f, server=daemon)(x), f(twin)
    for g, w in zip(got, want):
        g.mul_(3)
        w.mul_(3)
    sum(o.sum() for o in got).backward()
    sum(o.sum() for o in want).backward()
    assert torch.equal(x.grad, twin.grad)


def test_a_write_inside_the_function_raises_as_in_eager(daemon):
    def f(a):
        b = a * 2
        b.unbind(0)[0].mul_(2)
        return b
    x = torch.randn(3, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match=MULTI_OUTPUT_MESSAGE):
        f(x)
    with pytest.raises(RuntimeError, match=MULTI_OUTPUT_MESSAGE):
        aot_function(f, server=daemon)(x)
    with torch.no_grad():  # Allowed without grad, in eager and compiled.
        assert torch.equal(aot_function(f, server=daemon)(x), f(x))
