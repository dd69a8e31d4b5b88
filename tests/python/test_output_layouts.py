"""A compiled function's results have eager's strides (a caller can see
them: is_contiguous(), view(), what a later kernel costs). Elementwise
results follow torch's TensorIterator: `x.t() * 2` is transposed like
x.t(), `relu(x)` of a channels-last x is channels-last."""

import pytest
import torch
import torch.nn.functional as F

from aotcache.torch import aot_function


def _cl(*shape):
    return torch.randn(*shape).contiguous(memory_format=torch.channels_last)


CASES = {
    "transposed_times_number": (lambda x: x.t() * 2, lambda: [torch.randn(3, 4)]),
    "permuted_relu": (lambda x: torch.relu(x.permute(0, 2, 3, 1)),
                      lambda: [torch.randn(2, 3, 4, 5)]),
    "transposed_plus_transposed": (lambda x, y: x.t() + y.t(),
                                   lambda: [torch.randn(3, 4), torch.randn(3, 4)]),
    "transposed_plus_contiguous": (lambda x, y: x.t() + y,
                                   lambda: [torch.randn(3, 4), torch.randn(4, 3)]),
    "contiguous_plus_transposed": (lambda x, y: y + x.t(),
                                   lambda: [torch.randn(3, 4), torch.randn(4, 3)]),
    "channels_last_chain": (lambda x: torch.sigmoid(x * 3 + 1), lambda: [_cl(2, 3, 4, 5)]),
    "channels_last_plus_bias": (lambda x, b: x + b.view(1, 3, 1, 1),
                                lambda: [_cl(2, 3, 4, 5), torch.randn(3)]),
    "channels_last_plus_contiguous": (lambda x, y: x + y,
                                      lambda: [_cl(2, 3, 4, 5), torch.randn(2, 3, 4, 5)]),
    "broadcast_row_transposed": (lambda x, r: x.t() * r,
                                 lambda: [torch.randn(5, 4), torch.randn(5)]),
    "expanded": (lambda x: x.expand(4, 3) * 1.5, lambda: [torch.randn(3)]),
    "strided_slice": (lambda x: torch.exp(x[:, ::2]), lambda: [torch.randn(4, 6)]),
    "transposed_3d_compare": (lambda x: (x.transpose(0, 2) > 0).float(),
                              lambda: [torch.randn(2, 3, 4)]),
    "where_transposed": (lambda c, x: torch.where(c.t() > 0, x.t(), 0.0),
                         lambda: [torch.randn(3, 4), torch.randn(3, 4)]),
    "size_one_dims": (lambda x: x.permute(2, 0, 1) - 1, lambda: [torch.randn(1, 3, 1)]),
    "gelu_permuted": (lambda x: F.gelu(x.permute(1, 0, 2)), lambda: [torch.randn(2, 3, 4)]),
    # Decomposed ops, each as eager lays out its result.
    "silu_transposed": (lambda x: F.silu(x.t()), lambda: [torch.randn(3, 4)]),
    "clamp_transposed": (lambda x: x.t().clamp(-0.5, 0.5), lambda: [torch.randn(3, 4)]),
    "triu_transposed": (lambda x: torch.triu(x.t()), lambda: [torch.randn(3, 4)]),
    "tril_channels_last": (lambda x: torch.tril(x, 1), lambda: [_cl(2, 3, 4, 5)]),
    "masked_fill_channels_last": (lambda x, m: x.masked_fill(m, 0.0),
                                  lambda: [_cl(2, 3, 4, 5), torch.randn(5) > 0]),
    "full_like_transposed": (lambda x: torch.full_like(x.t(), 2.0), lambda: [torch.randn(3, 4)]),
    "to_float64_transposed": (lambda x: x.t().double() * 2, lambda: [torch.randn(3, 4)]),
    "clone_of_a_strided_slice": (lambda x: x.t()[:, ::2].clone(), lambda: [torch.randn(4, 6)]),
}


def _same_layout(a, b):
    assert a.shape == b.shape and a.stride() == b.stride(), (a.stride(), b.stride())


def _same_layout_but_size_one_dims(a, b):
    """Gradients: the layout contract of torch's AccumulateGrad ignores the
    strides of dims of size 1 (and the compiled backward, like
    AOTAutograd's, takes contiguous tangents, which may differ there)."""
    assert a.shape == b.shape
    assert [s for s, n in zip(a.stride(), a.shape) if n != 1] == \
        [s for s, n in zip(b.stride(), b.shape) if n != 1], (a.stride(), b.stride())


@pytest.mark.parametrize("name", sorted(CASES))
def test_results_have_eagers_strides(daemon, name):
    fn, make = CASES[name]
    args = make()
    expected = fn(*args)
    got = aot_function(fn, server=daemon)(*args)
    _same_layout(got, expected)
    torch.testing.assert_close(got, expected)


@pytest.mark.parametrize("name", sorted(CASES))
def test_trained_results_and_gradients_have_eagers_strides(daemon, name):
    fn, make = CASES[name]
    args = [a.requires_grad_() if a.is_floating_point() else a for a in make()]
    eager_args = [a.detach().clone().requires_grad_(a.requires_grad) for a in args]
    expected = fn(*eager_args)
    got = aot_function(fn, server=daemon)(*args)
    _same_layout(got, expected)
    torch.testing.assert_close(got, expected)
    if not expected.requires_grad:  # a comparison's result
        assert not got.requires_grad
        return
    grad = torch.randn_like(expected)
    expected.backward(grad)
    got.backward(grad)
    for a, e in zip(args, eager_args):
        assert (a.grad is None) == (e.grad is None)
        if e.grad is not None:
            _same_layout_but_size_one_dims(a.grad, e.grad)
            torch.testing.assert_close(a.grad, e.grad)
