"""Outputs that are views from multi-output view ops (unbind, split,
chunk) returned directly (issue 22, item 5): values, _base and requires_grad
as eager's, gradients through them as eager's, and an in-place write into
one refused where eager refuses it because it is a view of a leaf that
requires grad. (Where eager refuses it only for being a multi-output view
of an intermediate, the compiled outputs accept it, as torch 2.13's
AOTAutograd's do: README, known deviations.)"""

import pytest
import torch

from aotcache.torch import aot_function

CASES = {
    "unbind": lambda x: x.unbind(0),
    "split": lambda x: x.split(2),
    "chunk": lambda x: torch.chunk(x, 2, dim=1),
    "chunk_of_intermediate": lambda x: torch.chunk(x * 2, 2),
}


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


@pytest.mark.parametrize("name", ["unbind", "split", "chunk"])
def test_writing_into_a_view_of_a_leaf_is_refused_as_in_eager(daemon, name):
    x = torch.randn(4, 6, requires_grad=True)
    out = aot_function(CASES[name], server=daemon)(x)
    with pytest.raises(RuntimeError):
        CASES[name](x)[0].mul_(2)
    with pytest.raises(RuntimeError):
        out[0].mul_(2)
