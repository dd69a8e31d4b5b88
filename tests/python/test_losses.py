"""Losses through aot_function against eager: cross_entropy and nll_loss with
class weights, ignore_index and each reduction, batched and single inputs,
forward and gradients."""

import pytest
import torch
import torch.nn.functional as F

from aotcache.torch import aot_function


def _compare(fn, *args):
    compiled = aot_function(fn, server=_compare.server)
    leaves = [a.detach().clone().requires_grad_(a.requires_grad) for a in args]
    twins = [a.detach().clone().requires_grad_(a.requires_grad) for a in args]
    got, want = compiled(*leaves), fn(*twins)
    assert torch.allclose(got, want, rtol=1e-5, atol=1e-6, equal_nan=True), (got, want)
    got.sum().backward()
    want.sum().backward()
    for a, b in zip(leaves, twins):
        if a.requires_grad:
            assert torch.allclose(a.grad, b.grad, rtol=1e-5, atol=1e-6), (a.grad, b.grad)
    return compiled


@pytest.fixture(autouse=True)
def _server(daemon):
    _compare.server = daemon


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ignore_index", [-100, 2])
def test_cross_entropy(reduction, weighted, ignore_index):
    torch.manual_seed(0)
    x = torch.randn(6, 5, requires_grad=True)
    target = torch.tensor([0, 2, 4, 2, 1, 3])
    weight = torch.rand(5) + 0.5 if weighted else None
    _compare(lambda x, t: F.cross_entropy(x, t, weight=weight, ignore_index=ignore_index,
                                          reduction=reduction), x, target)


def test_nll_loss_of_a_single_sample_and_float64():
    x = torch.randn(4, dtype=torch.float64, requires_grad=True)
    _compare(lambda x, t: F.nll_loss(x, t), x, torch.tensor(3))


def test_a_mean_over_only_ignored_targets_is_nan_as_in_eager():
    x = torch.randn(3, 4, requires_grad=True)
    _compare(lambda x, t: F.nll_loss(x, t, ignore_index=1), x, torch.tensor([1, 1, 1]))


def test_a_class_out_of_range_is_an_error_not_a_read_past_the_input():
    f = aot_function(lambda x, t: F.nll_loss(x, t), server=_compare.server)
    x = torch.randn(2, 3)
    f(x, torch.tensor([0, 1]))  # Compiles with valid classes.
    with pytest.raises(Exception, match="out of bounds"):
        f(x, torch.tensor([0, 7]))


def test_a_weight_that_requires_grad_is_refused_as_in_eager():
    x = torch.randn(2, 3, requires_grad=True)
    w = torch.rand(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="weight"):
        aot_function(lambda x, t, w: F.nll_loss(x, t, weight=w),
                     server=_compare.server)(x, torch.tensor([0, 1]), w)
