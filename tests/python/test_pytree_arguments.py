"""Arguments and results beyond flat tensors, as functorch and torch.compile
take them: dicts, lists, tuples, namedtuples, keyword arguments (issue 22,
items 4 and 8b). Eager is the oracle."""

import collections

import warnings

import pytest
import torch
import torch.nn as nn

from aotcache.torch import aot_function, aot_module

Batch = collections.namedtuple("Batch", "x y")


def _grads(f, args):
    out = f(*args)
    leaves = [v for v in (out.values() if isinstance(out, dict) else [out])]
    sum(v.sum() for v in leaves).backward()
    return out


def test_a_dict_result(daemon):
    def f(x, y):
        return {"a": x, "b": y + x}

    x, y = torch.randn(3, requires_grad=True), torch.randn(3)
    x2 = x.detach().clone().requires_grad_()
    got = _grads(aot_function(f, server=daemon), (x, y))
    want = _grads(f, (x2, y))
    assert list(got) == ["a", "b"]
    assert got["a"] is x  # the input itself, as in eager
    assert torch.equal(got["b"], want["b"]) and torch.equal(x.grad, x2.grad)


def test_dict_list_and_namedtuple_arguments(daemon):
    def f(d, pair, batch):
        return d["w"] * pair[0] + pair[1] * batch.x - batch.y

    g = aot_function(f, server=daemon)
    w = torch.randn(3, requires_grad=True)
    args = ({"w": w}, [torch.randn(3), torch.randn(3)], Batch(torch.randn(3), torch.randn(3)))
    got = g(*args)
    got.sum().backward()
    got_grad = w.grad.clone()
    w.grad = None
    want = f(*args)
    want.sum().backward()
    assert torch.allclose(got, want) and torch.allclose(got_grad, w.grad)
    # Another structure is another signature.
    g({"w": w}, (args[1][0], args[1][1]), args[2])
    assert len(g.cache_info()) == 2


def test_keyword_arguments_and_modules_called_with_them(daemon):
    def f(x, *, scale=1.0, bias=None):
        return x * scale + (bias if bias is not None else 0)

    g = aot_function(f, server=daemon)
    x, b = torch.randn(3), torch.randn(3)
    assert torch.allclose(g(x, scale=2.0, bias=b), f(x, scale=2.0, bias=b))
    assert torch.allclose(g(x), f(x))
    # The order of keyword arguments is not part of the signature.
    assert torch.allclose(g(x, bias=b, scale=2.0), f(x, scale=2.0, bias=b))
    assert len(g.cache_info()) == 2

    class Scaled(nn.Module):
        def forward(self, x, scale):
            return x * scale

    assert torch.equal(aot_module(Scaled(), server=daemon)(x, scale=3.0), x * 3.0)


def test_a_list_of_tensors_returned_and_taken(daemon):
    def f(xs):
        return [x.sin() for x in xs]

    xs = [torch.randn(2), torch.randn(3)]
    got = aot_function(f, server=daemon)(xs)
    assert isinstance(got, list) and all(torch.allclose(a, b) for a, b in zip(got, f(xs)))


def test_an_argument_of_another_kind_is_a_clear_type_error(daemon):
    g = aot_function(lambda x, o: x, server=daemon, fallback="error")
    with pytest.raises(TypeError, match="not object"):
        g(torch.ones(1), object())


def test_an_argument_of_another_kind_runs_eagerly_by_default(daemon):
    g = aot_function(lambda x, o: x + 1, server=daemon)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert torch.equal(g(torch.ones(1), object()), torch.full((1,), 2.0))
    assert any("not object" in str(w.message) for w in caught)
