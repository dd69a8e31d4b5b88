"""Resizing ops through aot_function against eager (issue 22, item 6):
nearest, bilinear and bicubic interpolation to any size and by fractional
scale factors, pixel shuffle, unfold and fold; values and gradients."""

import pytest
import torch
import torch.nn.functional as F

from aotcache.torch import aot_function
from eager_compare import compare as _compare, compare_through_the_daemon  # noqa: F401


def test_nearest_interpolation_to_any_size():
    # Sizes that are no whole multiple, shrinking, and one dim unchanged:
    # each output reads floor(o * in / out) as torch's nearest_idx.
    torch.manual_seed(0)
    x = torch.randn(2, 3, 7, 5, requires_grad=True)
    for size in ((10, 5), (3, 2), (7, 12), (13, 9), (1, 1)):
        _compare(lambda x: F.interpolate(x, size=size), x)


@pytest.mark.parametrize("mode", ["nearest", "bilinear", "bicubic"])
def test_fractional_scale_factors(mode):
    # torch 2.x's trace gives the scale beside the output size, and torch
    # reads source positions with 1 / scale (not in / out, which differ when
    # in * scale is not whole). torch 1.13's trace holds the scale factors
    # themselves, as a float list: exported as the call its .vec makes.
    torch.manual_seed(0)
    x = torch.randn(1, 2, 7, 5, requires_grad=True)
    kw = {} if mode == "nearest" else {"align_corners": False}
    for s in (1.5, 0.5, (2.3, 0.7)):
        _compare(lambda x: F.interpolate(x, scale_factor=s, mode=mode, **kw), x)


@pytest.mark.parametrize("align_corners", [False, True])
def test_bilinear_interpolation(align_corners):
    torch.manual_seed(0)
    x = torch.randn(2, 3, 4, 5, requires_grad=True)
    for kwargs in (dict(scale_factor=2.0), dict(size=(7, 3)), dict(size=(4, 9)),
                   dict(size=(1, 1))):
        _compare(lambda x: F.interpolate(x, mode="bilinear", align_corners=align_corners,
                                         **kwargs), x)


@pytest.mark.parametrize("align_corners", [False, True])
def test_bicubic_interpolation(align_corners):
    # Taps past the edges clamp to them, negative source positions (shrinking
    # without align_corners) floor below 0: values and gradients as eager's.
    torch.manual_seed(0)
    x = torch.randn(2, 3, 4, 5, requires_grad=True)
    for kwargs in (dict(scale_factor=2.0), dict(scale_factor=3), dict(size=(7, 3)),
                   dict(size=(4, 9)), dict(size=(1, 1)), dict(size=(4, 5))):
        _compare(lambda x: F.interpolate(x, mode="bicubic", align_corners=align_corners,
                                         **kwargs), x)
    _compare(lambda x: F.interpolate(x, size=(6, 2), mode="bicubic",
                                     align_corners=align_corners),
             torch.randn(1, 2, 3, 4, dtype=torch.float64, requires_grad=True))


def test_pixel_shuffle_and_unshuffle():
    torch.manual_seed(0)
    x = torch.randn(2, 8, 3, 5, requires_grad=True)
    _compare(lambda x: F.pixel_shuffle(x, 2), x)
    _compare(torch.nn.PixelShuffle(2), x[0].detach().requires_grad_())
    y = torch.randn(2, 3, 4, 6, requires_grad=True)
    _compare(lambda y: F.pixel_unshuffle(y, 2), y)


UNFOLD = [
    dict(kernel_size=2),
    dict(kernel_size=(2, 3), padding=1, stride=(1, 2)),
    dict(kernel_size=3, dilation=(2, 1), padding=(2, 0), stride=2),
]


@pytest.mark.parametrize("kw", UNFOLD)
def test_unfold_and_fold(kw):
    torch.manual_seed(0)
    x = torch.randn(2, 3, 7, 6, requires_grad=True)
    _compare(lambda x: F.unfold(x, **kw), x)
    _compare(lambda x: F.unfold(x[0], **kw) * 3, x)  # Unbatched.
    blocks = F.unfold(x.detach(), **kw).clone().requires_grad_()
    _compare(lambda b: F.fold(b, (7, 6), **kw), blocks)
    _compare(lambda b: F.fold(b[0], (7, 6), **kw), blocks)
    # Blocks move without arithmetic: inf and NaN stay what they are.
    odd = x.detach().clone()
    odd[0, 0, 1, 1], odd[1, 2, 3, 0] = float("inf"), float("nan")
    got = aot_function(lambda t: F.unfold(t, **kw), server=_compare.server)(odd)
    assert torch.equal(got.isnan(), F.unfold(odd, **kw).isnan())
    assert torch.equal(got.nan_to_num(), F.unfold(odd, **kw).nan_to_num())


def test_unfold_and_fold_modules_in_float64():
    x = torch.randn(1, 2, 5, 5, dtype=torch.float64, requires_grad=True)
    _compare(torch.nn.Unfold(3, padding=1), x)
    _compare(torch.nn.Sequential(torch.nn.Unfold(2), torch.nn.Fold((5, 5), 2)), x)
