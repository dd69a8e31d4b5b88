"""Inputs sliced from a larger tensor (a batch and its targets from one
dataset tensor, as a character LM takes them) are compiled where they lie
relative to each other, not where they lie in the storage: every batch is
one signature and one key, not a new trace and compile per step. Outputs
that alias such inputs, writes into them and values saved from them for
the backward must still land in the caller's memory as in eager."""

import torch

from aotcache.torch import aot_function


def _data():
    torch.manual_seed(0)
    return torch.randn(64, 9)


def test_batches_sliced_from_one_tensor_are_one_signature(daemon):
    data = _data()

    def f(x, y):
        return (x * 2 + y).sum(1)

    g = aot_function(f, server=daemon)
    for i in range(0, 40, 8):
        x, y = data[i:i + 4, :-1], data[i:i + 4, 1:]
        assert torch.allclose(g(x, y), f(x, y))
    assert len(g.cache_info()) == 1
    # Another function of the same graph, on another batch: the same key.
    h = aot_function(f, server=daemon)
    h(data[40:44, :-1], data[40:44, 1:])
    assert h.cache_info()[0]["key"] == g.cache_info()[0]["key"]


def test_an_output_aliasing_a_sliced_input_is_a_view_of_the_callers_memory(daemon):
    data = _data()
    g = aot_function(lambda x: x[1:].t(), server=daemon)
    for i in (0, 5, 17):
        x = data[i:i + 4]
        got, want = g(x), x[1:].t()
        assert torch.equal(got, want)
        assert got.data_ptr() == want.data_ptr() and got.stride() == want.stride()
        assert got._base is data
    assert len(g.cache_info()) == 1


def test_a_write_into_a_sliced_input_lands_where_eager_writes(daemon):
    compiled, eager = _data(), _data()

    def f(x):
        x.mul_(2)
        return x.sum()

    g = aot_function(f, server=daemon)
    for i in (3, 11, 30):
        assert torch.allclose(g(compiled[i:i + 2]), f(eager[i:i + 2]))
        assert torch.equal(compiled, eager)
    assert len(g.cache_info()) == 1


def test_a_sliced_input_saved_for_backward_gives_eagers_gradients(daemon):
    data = _data()
    w = torch.randn(9, requires_grad=True)

    def f(x, w):
        return (x * w).tanh().sum()

    g = aot_function(f, server=daemon)
    for i in (0, 7, 20):
        x = data[i:i + 3]
        w.grad = None
        g(x, w).backward()
        got = w.grad.clone()
        w.grad = None
        f(x, w).backward()
        assert torch.allclose(got, w.grad, atol=1e-6), i
    assert len(g.cache_info()) == 1
