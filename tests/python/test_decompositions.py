"""Ops validation rewrites (split, unbind, chunk, stack, masked_fill, tril,
silu; see core/graph/decompositions.h) and the indexing and factory ops the
models need (embedding, arange) against eager: values, gradients, and the
aliasing of results (split's chunks are views of the input)."""

import pytest
import torch

from aotcache.torch import aot_function


@pytest.fixture
def compile_(daemon):
    return lambda fn: aot_function(fn, server=daemon)


def _grads_match(fn, compiled, *shapes):
    torch.manual_seed(0)
    xs = [torch.randn(*s, requires_grad=True) for s in shapes]
    ys = [x.detach().clone().requires_grad_() for x in xs]
    got, want = compiled(*xs), fn(*ys)
    assert torch.allclose(got, want, atol=1e-6)
    got.sum().backward()
    want.sum().backward()
    for x, y in zip(xs, ys):
        assert torch.allclose(x.grad, y.grad, atol=1e-6)


@pytest.mark.parametrize("fn", [
    lambda x: sum(c * (i + 1) for i, c in enumerate(x.split(2, dim=1))).sum(1),
    lambda x: sum(c * (i + 1) for i, c in enumerate(x.split([1, 3, 1], dim=-1))).sum(1),
    lambda x: sum(c.sum() * (i + 1) for i, c in enumerate(x.chunk(3, dim=1))).reshape(1),
    lambda x: sum(r * (i + 1) for i, r in enumerate(x.unbind(0))),
    lambda x: torch.stack([x, x * 2, x.sin()], dim=1).sum(0).sum(0),
    lambda x: torch.stack(list(x.unbind(1)), dim=-1).tanh().sum(0),
])
def test_values_and_gradients_match_eager(compile_, fn):
    _grads_match(fn, compile_(fn), (4, 5))


def test_a_written_chunk_writes_the_input_as_in_eager(compile_):
    def f(x):
        a, b = x.split(2)
        a.mul_(10)
        return b + 1

    x, y = torch.arange(4.0), torch.arange(4.0)
    got, want = compile_(f)(x), f(y)
    assert torch.equal(got, want) and torch.equal(x, y)
    assert x.tolist() == [0.0, 10.0, 2.0, 3.0]


def test_lstm_cell_gates_chunked_unsafely_and_activated_in_place(compile_):
    def cell(x, h, c, w_ih, w_hh):
        gates = x @ w_ih.t() + h @ w_hh.t()
        i, f, g, o = gates.unsafe_chunk(4, 1)
        i, f, g, o = i.sigmoid_(), f.sigmoid_(), g.tanh_(), o.sigmoid_()
        c2 = f * c + i * g
        return (o * c2.tanh()).sum() + c2.sum()

    _grads_match(cell, compile_(cell), (3, 4), (3, 5), (3, 5), (20, 4), (20, 5))


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bool])
def test_masked_fill_keeps_self_dtype(compile_, dtype):
    def f(x, m):
        return x.masked_fill(m, 3.7)

    x = (torch.arange(6).reshape(2, 3) % 2).to(dtype)
    m = torch.tensor([True, False, True])
    got, want = compile_(f)(x, m), f(x, m)
    assert got.dtype == want.dtype and torch.equal(got, want)


def test_masked_fill_of_a_transposed_tensor_keeps_its_layout(compile_):
    def f(x, m):
        return x.t().masked_fill(m, 0.0)

    x, m = torch.randn(3, 4), torch.tensor([True, False, True])
    got, want = compile_(f)(x, m), f(x, m)
    assert torch.equal(got, want) and got.stride() == want.stride()


def test_masked_fill_with_minus_infinity_and_its_gradient(compile_):
    def f(x):
        mask = torch.ones(4, 4, dtype=torch.bool).tril()
        return torch.softmax(x.masked_fill(~mask, float("-inf")), -1) * torch.arange(4.0)

    _grads_match(f, compile_(f), (4, 4))


@pytest.mark.parametrize("fn", [
    lambda x: torch.nn.functional.silu(x),
    lambda x: x.triu(1) + x.tril(-1) * 2,
    lambda x: x * torch.arange(5),
    lambda x: x + torch.arange(1, 6),
    lambda x: x * torch.arange(0.5, 2.9, 0.5),
    lambda x: x * torch.arange(5, 0, -1, dtype=torch.float64),
])
def test_more_values_and_gradients_match_eager(compile_, fn):
    _grads_match(fn, compile_(fn), (4, 5))


@pytest.mark.parametrize("padding_idx,by_freq", [(None, False), (2, False), (None, True)])
def test_embedding_and_its_gradient(compile_, padding_idx, by_freq):
    torch.manual_seed(0)
    emb = torch.nn.Embedding(6, 3, padding_idx=padding_idx, scale_grad_by_freq=by_freq)
    idx = torch.tensor([[0, 2, 2], [5, 1, 2]])

    def f(w, i):
        return torch.nn.functional.embedding(i, w, padding_idx=padding_idx,
                                             scale_grad_by_freq=by_freq).tanh()

    w1 = emb.weight.detach().clone().requires_grad_()
    w2 = emb.weight.detach().clone().requires_grad_()
    got, want = compile_(f)(w1, idx), f(w2, idx)
    assert torch.allclose(got, want)
    (got * torch.arange(3.0)).sum().backward()
    (want * torch.arange(3.0)).sum().backward()
    assert torch.allclose(w1.grad, w2.grad)


def test_an_embedding_index_out_of_range_is_an_error(compile_):
    f = compile_(lambda w, i: torch.nn.functional.embedding(i, w))
    w = torch.randn(4, 2)
    f(w, torch.tensor([0, 3]))
    with pytest.raises(Exception, match="out of range"):
        f(w, torch.tensor([0, 4]))
