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


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy_with_label_smoothing(reduction, weighted):
    """torch traces it to masked_select (a data-dependent shape); aotcache
    traces the same formula in ops of static shape (traceable_ops.py)."""
    torch.manual_seed(0)
    x = torch.randn(6, 5, requires_grad=True)
    target = torch.tensor([0, 2, 4, -100, 1, 3])
    weight = torch.rand(5) + 0.5 if weighted else None
    _compare(lambda x, t: F.cross_entropy(x, t, weight=weight, reduction=reduction,
                                          label_smoothing=0.1), x, target)
    images = torch.randn(2, 5, 3, 3, requires_grad=True)
    _compare(lambda x: torch.nn.CrossEntropyLoss(weight=weight, reduction=reduction,
                                                 label_smoothing=0.2)(x.mean((2, 3)),
                                                                      target[:2].abs()),
             images)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_cross_entropy_over_images(reduction):
    """Segmentation: a class per pixel (nll_loss2d), with weights and an
    ignored label, and label smoothing on top."""
    torch.manual_seed(0)
    x = torch.randn(2, 4, 3, 5, requires_grad=True)
    target = torch.randint(0, 4, (2, 3, 5))
    target[0, 1, 2] = 255
    weight = torch.rand(4) + 0.5
    _compare(lambda x, t: F.cross_entropy(x, t, reduction=reduction, ignore_index=255), x,
             target)
    _compare(lambda x, t: F.cross_entropy(x, t, weight=weight, reduction=reduction,
                                          ignore_index=255), x, target)
    _compare(lambda x, t: F.cross_entropy(x.permute(0, 1, 3, 2), t.transpose(1, 2),
                                          reduction=reduction, ignore_index=255,
                                          label_smoothing=0.1), x, target)
