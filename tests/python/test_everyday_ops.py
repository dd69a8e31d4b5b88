"""Everyday ops a trainer meets on day one (issue 22, item 6), through
aot_function against eager: values and the gradients of every input that
requires grad, at the points where a naive formula's gradient differs from
torch's (0 for leaky_relu and elu, the bounds of hardtanh and hardswish,
past softplus's threshold, the 2-norm of zeros, xlogy at 0) as well as at
random ones."""

import pytest
import torch
import torch.nn.functional as F

from aotcache.torch import aot_function
from eager_compare import compare as _compare, compare_through_the_daemon  # noqa: F401


def _points(*special):
    torch.manual_seed(0)
    x = torch.cat([torch.randn(40) * 3, torch.tensor(special, dtype=torch.float32)])
    return x.requires_grad_()


ACTIVATIONS = {
    "softplus": (lambda x: F.softplus(x), (0.0, 19.9, 20.0, 25.0, 100.0, -100.0)),
    "softplus_beta": (lambda x: F.softplus(x, beta=2.0, threshold=5.0), (2.5, 3.0, -3.0)),
    "leaky_relu": (lambda x: F.leaky_relu(x, 0.1), (0.0,)),
    "elu": (lambda x: F.elu(x, alpha=0.7), (0.0, 100.0, -100.0)),
    "selu": (lambda x: F.selu(x), (0.0, 95.0)),
    "celu": (lambda x: F.celu(x, alpha=1.5), (0.0,)),
    "hardtanh": (lambda x: F.hardtanh(x, -0.5, 0.5), (-0.5, 0.5, 0.0)),
    "relu6": (lambda x: F.relu6(x), (0.0, 6.0)),
    "hardswish": (lambda x: F.hardswish(x), (-3.0, 3.0, 0.0)),
    "mish": (lambda x: F.mish(x), (0.0, 20.0, 30.0, 100.0, -100.0)),
    "logsigmoid": (lambda x: F.logsigmoid(x), (0.0, 30.0, -30.0, 100.0)),
}


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_activation(name):
    fn, special = ACTIVATIONS[name]
    _compare(fn, _points(*special))


def test_activation_modules_in_float64():
    x = torch.randn(5, 8, dtype=torch.float64, requires_grad=True)
    for module in (torch.nn.LeakyReLU(0.2), torch.nn.ELU(), torch.nn.Softplus(),
                   torch.nn.Mish(), torch.nn.Hardswish(), torch.nn.LogSigmoid()):
        _compare(module, x)


def test_glu_and_expm1_log1p():
    x = torch.randn(4, 6, requires_grad=True)
    _compare(lambda x: F.glu(x, 1), x)
    _compare(lambda x: F.glu(x, 0), x)
    small = torch.tensor([1e-8, -1e-8, 1e-3, 0.5, -0.5, 3.0], requires_grad=True)
    _compare(lambda x: torch.expm1(x) + torch.log1p(x.abs()), small)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_pointwise_losses(reduction):
    torch.manual_seed(0)
    x = torch.randn(6, 4, requires_grad=True)
    y = torch.randn(6, 4)
    y[0, :2] = x[0, :2].detach() + torch.tensor([1.0, -1.0])  # |d| exactly at beta
    _compare(lambda x, y: F.smooth_l1_loss(x, y, reduction=reduction), x, y)
    _compare(lambda x, y: F.smooth_l1_loss(x, y, reduction=reduction, beta=0.5), x, y)
    _compare(lambda x, y: F.smooth_l1_loss(x, y, reduction=reduction, beta=0.0), x, y)
    _compare(lambda x, y: F.huber_loss(x, y, reduction=reduction, delta=0.7), x, y)
    _compare(lambda x, y: F.l1_loss(x, y, reduction=reduction), x, y)
    p = torch.rand(6, 4).clamp(0.01, 0.99).requires_grad_()
    t = torch.rand(6, 4)
    w = torch.rand(6, 4)
    _compare(lambda p, t: F.binary_cross_entropy(p, t, reduction=reduction), p, t)
    _compare(lambda p, t: F.binary_cross_entropy(p, t, weight=w, reduction=reduction), p, t)


def test_binary_cross_entropy_where_the_probability_saturates():
    """A sigmoid's output reaches exactly 0 or 1 in float32, or comes within
    1e-12 of them: torch's gradient for the input is (x - y) / max(x (1 - x),
    1e-12) there (the formula's is infinite, or larger), through the sigmoid
    too."""
    p = torch.tensor([0.0, 1.0, 1.0, 0.0, 1e-13, 1 - 1e-7, 3e-7, 0.5], requires_grad=True)
    t = torch.tensor([0.0, 0.9, 1.0, 0.3, 1.0, 0.0, 0.5, 0.25])
    for reduction in ("none", "mean"):
        _compare(lambda p, t: F.binary_cross_entropy(p, t, reduction=reduction), p, t)
    logits = torch.tensor([-120.0, -28.0, -16.0, 0.3, 17.0, 40.0], requires_grad=True)
    labels = torch.tensor([1.0, 1.0, 0.0, 1.0, 0.0, 0.7])
    _compare(lambda z, t: F.binary_cross_entropy(torch.sigmoid(z), t), logits, labels)


def test_binary_cross_entropy_gradient_for_the_target():
    """torch's gradient for the target is -logit(input): infinite where the
    input is exactly 0 or 1 (the clamped logs would give 100)."""
    p = torch.tensor([[0.0, 1.0, 0.3], [0.7, 1e-30, 0.5]], dtype=torch.float64,
                     requires_grad=True)
    t = torch.tensor([[0.2, 0.7, 0.4], [1.0, 0.0, 0.5]], dtype=torch.float64,
                     requires_grad=True)
    w = torch.tensor([0.5, 2.0, 1.5], dtype=torch.float64)  # broadcast over rows
    for reduction in ("none", "mean", "sum"):
        _compare(lambda p, t: F.binary_cross_entropy(p, t, reduction=reduction), p, t)
        _compare(lambda p, t: F.binary_cross_entropy(p, t, w.expand(2, 3), reduction=reduction),
                 p, t)


def test_binary_cross_entropy_of_values_outside_0_1_is_an_error_as_in_eager():
    """Raw logits given to BCELoss: eager raises, the compiled call too
    (it used to return NaN). A target outside [0, 1] raises on torch 2.x;
    torch 1.13 does not check it, aotcache does on both. The error is
    aotcache's InvalidArgument (a ValueError), not eager's RuntimeError."""
    from aotcache import InvalidArgument
    f = aot_function(lambda p, t: F.binary_cross_entropy(p, t), server=_compare.server)
    t = torch.rand(2, 3)
    f(torch.rand(2, 3), t)
    for bad in (1.5, -0.25, float("nan")):
        p = torch.rand(2, 3)
        p[1, 2] = bad
        with pytest.raises(InvalidArgument, match="all elements of input should be between 0 and 1"):
            f(p, t)
        with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
            F.binary_cross_entropy(p, t)
    t[0, 0] = 1.25
    with pytest.raises(InvalidArgument, match="all elements of target should be between 0 and 1"):
        f(torch.rand(2, 3), t)


def test_kl_div_with_zeros_in_the_target():
    torch.manual_seed(0)
    x = torch.randn(4, 5, requires_grad=True)
    t = torch.softmax(torch.randn(4, 5), 1)
    t[0, 1] = 0.0
    _compare(lambda x, t: F.kl_div(F.log_softmax(x, 1), t, reduction="batchmean"), x, t)
    target = t.clone().requires_grad_()
    _compare(lambda t: torch.xlogy(t, t + 0.5), target)
    _compare(lambda a, b: torch.xlogy(a, b),
             torch.tensor([0.0, 0.0, 1.0, 2.0], requires_grad=True),
             torch.tensor([0.0, float("nan"), 0.0, 3.0], requires_grad=True))


def test_std_and_norms():
    torch.manual_seed(0)
    x = torch.randn(5, 6, requires_grad=True)
    _compare(lambda x: x.std(1), x)
    _compare(lambda x: x.std(0, unbiased=False, keepdim=True), x)
    _compare(lambda x: x.std(), x)
    zeros_row = torch.cat([torch.zeros(1, 6), torch.randn(4, 6)]).requires_grad_()
    _compare(lambda x: x.norm(dim=1), zeros_row)
    _compare(lambda x: F.normalize(x, dim=1), zeros_row)
    _compare(lambda x: x.norm(p=1, dim=1, keepdim=True), x)
    _compare(lambda x: torch.linalg.norm(x, ord=float("inf"), dim=1), x)
    zeros_row.data[2, 3] = 0.0  # A zero in a row whose norm is not.
    for p in (3, 1.5, 4.0):  # zeros_row: a norm of 0 has gradient 0, as torch's.
        _compare(lambda x: x.norm(p=p, dim=1), zeros_row)
        _compare(lambda x: torch.linalg.vector_norm(x, ord=p), x)


def test_norms_below_1_and_minus_inf():
    """Below 1 torch's gradient is 0 at the zeros of x (the formula's is
    not finite there), NaN there when the norm is NaN; a negative p is 0
    where a zero is reduced; -inf is min |x| (ties share; with a NaN reduced
    its gradient is NaN, eager's 0, as for inf). p = 0 counts nonzeros (NaN
    too); its gradient is zeros where eager's is None."""
    torch.manual_seed(0)
    x = torch.cat([torch.zeros(1, 6), torch.randn(4, 6)])
    x[2, 3] = 0.0
    x[3, 1] = float("nan")
    x[4, 0] = x[4, 5] = -x[4].abs().min()  # A tie for min |x|.
    x.requires_grad_()
    for p in (0.5, 0.3, -1.0, -2.5):
        _compare(lambda x: x.norm(p=p, dim=1), x)
        _compare(lambda x: torch.linalg.vector_norm(x, ord=p, dim=1, keepdim=True), x)
        _compare(lambda x: torch.linalg.vector_norm(x[1:], ord=p), x)
    finite = x.detach()[[0, 1, 2, 4]].requires_grad_()
    _compare(lambda x: x.norm(p=float("-inf"), dim=1), finite)
    _compare(lambda x: torch.linalg.vector_norm(x[1:], ord=float("-inf")), finite)
    count = aot_function(lambda x: torch.linalg.vector_norm(x, ord=0, dim=1),
                         server=_compare.server)
    twin = x.detach().clone().requires_grad_()
    got, want = count(twin), torch.linalg.vector_norm(x, ord=0, dim=1)
    assert torch.equal(got, want) and got.requires_grad == want.requires_grad
    got.sum().backward()
    want.sum().backward()
    assert x.grad is None and torch.equal(twin.grad, torch.zeros_like(x))
    y = torch.randn(3, 5, dtype=torch.float64, requires_grad=True)
    _compare(lambda y: torch.linalg.vector_norm(y, ord=0.7, dim=0), y)
    _compare(lambda x: torch.linalg.vector_norm(x, ord=3, dim=1, dtype=torch.float64), x)


def test_atan2_in_every_quadrant_and_on_the_axes():
    y = torch.tensor([1.0, 1.0, -1.0, -1.0, 0.0, 0.0, 2.0, -3.0, 0.5], requires_grad=True)
    x = torch.tensor([1.0, -1.0, -1.0, 1.0, 2.0, -2.0, 0.0, 0.0, 4.0], requires_grad=True)
    _compare(torch.atan2, y, x)
    _compare(lambda y, x: torch.atan2(y, x), torch.randn(3, 4, requires_grad=True),
             torch.randn(4, requires_grad=True))  # Broadcast: x's gradient summed.
    _compare(lambda y: torch.atan2(y, torch.tensor(2)), torch.randn(5, requires_grad=True))


def test_cdist_small_and_large():
    """Up to 25 rows torch records _cdist_forward (the norm of each
    difference: a point paired with itself has distance 0 and gradient 0),
    above it _euclidean_dist (one matrix product, whose value for a pair
    within float32's rounding of each other is about sqrt(eps) |x| in
    eager's order of summation and in ours alike, so that those pairs do not
    compare)."""
    torch.manual_seed(0)
    for rows, p in ((5, 2.0), (5, 1.0), (5, 3.0), (5, float("inf")), (5, 0.5), (5, 0.0)):
        x = torch.randn(2, rows, 4, requires_grad=True)
        y = torch.cat([x.detach()[:, :3], torch.randn(2, rows + 1, 4)], 1).requires_grad_()
        _compare(lambda a, b: torch.cdist(a, b, p=p), x, y)
    _compare(lambda a: torch.cdist(a, a), torch.randn(6, 3, requires_grad=True))
    _compare(lambda a, b: torch.cdist(a, b), torch.randn(2, 30, 4, requires_grad=True),
             torch.randn(2, 40, 4, requires_grad=True))
    _compare(lambda a, b: torch.cdist(a, b), torch.randn(40, 3, requires_grad=True),
             torch.randn(26, 3))


def test_flip_roll_repeat_pad():
    torch.manual_seed(0)
    x = torch.randn(3, 4, 5, requires_grad=True)
    _compare(lambda x: x.flip(1), x)
    _compare(lambda x: x.flip(0, 2), x)
    _compare(lambda x: x.roll(1, 1), x)
    _compare(lambda x: x.roll((2, -1), (0, 2)), x)
    _compare(lambda x: x.repeat(2, 1, 3), x)
    _compare(lambda x: x.repeat(2, 1, 1, 2), x)
    _compare(lambda x: F.pad(x, (1, 2)), x)
    _compare(lambda x: F.pad(x, (1, 0, 2, 1), value=-1.5), x)
    _compare(lambda x: F.pad(x, (-1, 2, 0, -2)), x)
    _compare(lambda x: F.smooth_l1_loss(x, x.flip(0).detach()), x)


def test_logsumexp_cosine_similarity_and_prelu():
    torch.manual_seed(0)
    x = torch.randn(4, 6, requires_grad=True)
    _compare(lambda x: torch.logsumexp(x, 1), x)
    _compare(lambda x: torch.logsumexp(x * 50, (0, 1), keepdim=True), x)
    big = torch.tensor([[0.0, float("-inf")], [float("-inf"), float("-inf")]],
                       requires_grad=True)
    _compare(lambda x: torch.logsumexp(x, 1), big)
    y = torch.randn(4, 6)
    _compare(lambda x, y: F.cosine_similarity(x, y, dim=1), x, y)
    images = torch.randn(2, 3, 4, 4, requires_grad=True)
    for weight in (torch.tensor([0.25]), torch.tensor([0.1, 0.2, 0.3])):
        _compare(lambda x, w: F.prelu(x, w), images, weight.requires_grad_())


def test_clamp_min_by_a_tensor_keeps_nans_ties_and_gradients():
    # torch 2.x's cosine_similarity clamps by a tensor. Ties send the
    # gradient to self, NaN from either side stays NaN and sends none.
    nan = float("nan")
    x = torch.tensor([[nan, 1.0, 2.0, -1.0, 3.0], [0.5, -2.0, 2.0, 4.0, nan]],
                     requires_grad=True)
    m = torch.tensor([0.0, nan, 2.0, 0.0, 5.0], requires_grad=True)
    _compare(lambda x, m: torch.clamp_min(x, m), x, m)
    _compare(lambda x, m: (x * 1).clamp_min_(m), x, m)


def test_in_place_activations_and_masked_fill_write_their_input_as_eager():
    torch.manual_seed(0)
    base = torch.randn(3, 5, requires_grad=True)
    for fn in (lambda x: F.leaky_relu_(x * 1, 0.2), lambda x: F.elu_(x * 1),
               lambda x: F.hardtanh_(x * 1, -0.3, 0.3), lambda x: (x * 1).clamp_(-0.5, 0.2),
               lambda x: (x * 1).clamp_min_(0.1).sqrt_(),
               lambda x: torch.nn.ReLU6(inplace=True)(x * 1)):
        _compare(fn, base)
    # masked_fill_ (torch's attention masks are built with it).
    mask = base.detach() > 0.5
    _compare(lambda x: (x * 1).masked_fill_(mask, -2.0), base)
    _compare(lambda x: (x * 1).masked_fill_(mask[0], torch.tensor(3.0)), base)

    def assign_a_number(x):  # fill_ with the number as a 0-d tensor
        y = x * 1
        y[0, 1:] = 2.0
        y[1:, 0] = 7  # an int into float
        return y
    _compare(assign_a_number, base)
    # On an input: written in place, as eager writes it.
    got, want = torch.randn(4), torch.randn(4)
    want.copy_(got)
    aot_function(lambda x: F.leaky_relu_(x, 0.3), server=_compare.server)(got)
    F.leaky_relu_(want, 0.3)
    assert torch.equal(got, want)


def test_multihead_attention_with_a_key_padding_mask():
    # torch builds the additive mask with masked_fill_, in place.
    torch.manual_seed(0)
    attention = torch.nn.MultiheadAttention(16, 4, batch_first=True)
    padding = torch.zeros(2, 5, dtype=torch.bool)
    padding[1, 3:] = True
    _compare(lambda x: attention(x, x, x, key_padding_mask=padding)[0],
             torch.randn(2, 5, 16, requires_grad=True))


def test_group_norm_and_nearest_interpolation():
    torch.manual_seed(0)
    x = torch.randn(2, 6, 5, 4, requires_grad=True)
    w, b = torch.randn(6, requires_grad=True), torch.randn(6, requires_grad=True)
    _compare(lambda x, w, b: F.group_norm(x, 3, w, b), x, w, b)
    _compare(lambda x: F.group_norm(x, 1), x)
    _compare(torch.nn.GroupNorm(2, 6), x)
    _compare(lambda x: F.interpolate(x, scale_factor=2.0), x)
    _compare(lambda x: F.interpolate(x, size=(15, 8)), x)
    _compare(torch.nn.Upsample(scale_factor=3), x)


def test_cumsum():
    torch.manual_seed(0)
    x = torch.randn(4, 6, requires_grad=True)
    _compare(lambda x: x.cumsum(1), x)
    _compare(lambda x: x.t().cumsum(0) * 2, x)
    _compare(lambda x: torch.cumsum(x, -2, dtype=torch.float64), x)
    _compare(lambda x: x.cumsum(0), torch.randn(5, dtype=torch.float64, requires_grad=True))
    ids = torch.tensor([[1, 0, 1, 1], [0, 0, 1, 0]])
    got = aot_function(lambda m: m.cumsum(1), server=_compare.server)(ids)
    assert torch.equal(got, ids.cumsum(1)) and got.dtype == torch.int64
    mask = ids.bool()
    got = aot_function(lambda m: m.cumsum(1) * m, server=_compare.server)(mask)
    assert torch.equal(got, mask.cumsum(1) * mask)


def test_pow_of_two_tensors():
    torch.manual_seed(0)
    base = torch.cat([torch.rand(6) + 0.5, torch.tensor([0.0, 0.0, 2.0])]).requires_grad_()
    exponent = torch.cat([torch.randn(6), torch.tensor([0.0, 2.0, 0.0])]).requires_grad_()
    _compare(lambda x, e: torch.pow(x, e), base, exponent)
    _compare(lambda x, e: x ** e, torch.rand(3, 4, requires_grad=True) + 0.1,
             torch.randn(4, requires_grad=True))
    ints = torch.tensor([2, 3, 4])
    got = aot_function(lambda a, b: a ** b, server=_compare.server)(ints, torch.tensor([3, 2, 0]))
    assert torch.equal(got, ints ** torch.tensor([3, 2, 0])) and got.dtype == torch.int64


def test_sort_topk_argsort():
    torch.manual_seed(0)
    x = torch.randn(4, 7, requires_grad=True)
    _compare(lambda x: torch.sort(x, 1)[0], x)
    _compare(lambda x: torch.sort(x, 0, descending=True)[0] * 2, x)
    _compare(lambda x: torch.topk(x, 3, 1)[0], x)
    _compare(lambda x: torch.topk(x, 2, 0, largest=False)[0], x)
    g = aot_function(lambda x: (torch.sort(x, 1)[1], x.argsort(1, descending=True),
                                torch.topk(x, 3)[1]), server=_compare.server)
    got, want = g(x), (torch.sort(x, 1)[1], x.argsort(1, descending=True), torch.topk(x, 3)[1])
    assert all(torch.equal(a, b) for a, b in zip(got, want))
    # Ties and NaN: NaN above every number, as torch's; ties in the stable
    # order, which short rows get from torch's unstable sort too.
    ties = torch.tensor([1.0, 1.0, 1.0, 0.0, 1.0, float("nan"), 2.0])
    for descending in (False, True):
        got = aot_function(lambda t: torch.sort(t, descending=descending),
                           server=_compare.server)(ties)
        want = torch.sort(ties, descending=descending)
        assert torch.equal(got[1], want[1])
        torch.testing.assert_close(got[0], want[0], equal_nan=True)


def test_stable_sort_on_many_ties_equals_eager():
    # Long rows of ties, where torch's unstable sort reorders them: with
    # stable=True (which eager keeps to) the indices are eager's.
    torch.manual_seed(0)
    x = torch.randint(0, 3, (4, 300)).float().requires_grad_()
    for descending in (False, True):
        fn = lambda t: (torch.sort(t, dim=1, descending=descending, stable=True),
                        torch.argsort(t, dim=0, stable=True, descending=descending))
        (values, indices), order = aot_function(fn, server=_compare.server)(x)
        (want_values, want_indices), want_order = fn(x.detach())
        assert torch.equal(indices, want_indices) and torch.equal(order, want_order)
        assert torch.equal(values, want_values)
    _compare(lambda t: torch.sort(t, stable=True, descending=True)[0], x)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64])
def test_topk_on_ties_picks_eager_indices(dtype):
    # Both of torch's paths (partial sort when 64 k <= n, else nth_element),
    # sorted or not, largest or smallest: the same values and indices in the
    # same order as eager, and so the gradient lands where eager's does.
    torch.manual_seed(0)
    rows = torch.randint(0, 5, (3, 700)).to(dtype)
    rows[1, ::7] = float("nan") if dtype.is_floating_point else 4
    for k in (1, 3, 10, 11, 200, 700):
        for largest in (True, False):
            for sorted_ in (True, False):
                fn = lambda t: torch.topk(t, k, 1, largest=largest, sorted=sorted_)
                got = aot_function(fn, server=_compare.server)(rows)
                want = fn(rows)
                assert torch.equal(got[1], want[1]), (k, largest, sorted_)
                torch.testing.assert_close(got[0], want[0], equal_nan=True)
    if dtype.is_floating_point:
        weights = torch.randn(3, 10, dtype=dtype)
        _compare(lambda t: torch.topk(t, 10, 1)[0] * weights,
                 rows.nan_to_num(2.0).requires_grad_())


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag(mode):
    torch.manual_seed(0)
    weight = torch.randn(10, 4, requires_grad=True)
    indices = torch.tensor([1, 2, 4, 5, 4, 3, 9, 4])
    offsets = torch.tensor([0, 2, 2, 5])  # Bag 1 is empty.
    ends = torch.tensor([0, 2, 2, 5, 8])  # include_last_offset: the last is n.
    for o, kw in ((offsets, dict()), (offsets, dict(padding_idx=4)),
                  (ends, dict(include_last_offset=True)),
                  (ends, dict(include_last_offset=True, padding_idx=4))):
        _compare(lambda w, i, o: F.embedding_bag(i, w, o, mode=mode, **kw),
                 weight, indices, o)
    _compare(lambda w, i: F.embedding_bag(i, w, mode=mode), weight,
             torch.tensor([[1, 2, 3], [4, 4, 0]]))  # Bags of one length.
    bag = torch.nn.EmbeddingBag(10, 4, mode=mode, padding_idx=2)
    _compare(bag, torch.tensor([2, 1, 2, 7, 7]), torch.tensor([0, 1, 3]))
    if mode == "sum":
        scales = torch.randn(8, requires_grad=True)
        _compare(lambda w, i, o, s: F.embedding_bag(i, w, o, mode="sum",
                                                     per_sample_weights=s, padding_idx=4),
                 weight, indices, offsets, scales)


def test_embedding_bag_max_ties_nan_and_empty_bags():
    # Rows 1 and 3 tie in every column, row 2 ties them in one: torch's
    # kernel takes the first row in the bag holding the largest value, and
    # only that row gets the gradient; an empty bag is 0; index 0 is
    # repeated within a bag (the same row twice). Row 5's NaN stays when it
    # comes first in its bag and is passed over after it (torch's `>`); row
    # 6 is -inf.
    nan, inf = float("nan"), float("inf")
    weight = torch.tensor([[0., 0., 0.], [1., 2., 3.], [1., -5., 3.], [1., 2., 3.],
                           [-1., -1., -1.], [nan, 9., nan], [-inf, -inf, 4.]],
                          requires_grad=True)
    for indices, offsets in ((torch.tensor([3, 1, 2, 4, 0, 0, 2]), torch.tensor([0, 3, 3, 5])),
                             (torch.tensor([2, 1, 3]), torch.tensor([0])),
                             (torch.tensor([4, 4]), torch.tensor([0, 1, 2, 2])),
                             (torch.tensor([5, 1, 1, 5, 6, 6, 3, 6]), torch.tensor([0, 2, 4, 6]))):
        _compare(lambda w, i, o: F.embedding_bag(i, w, o, mode="max"), weight, indices, offsets)
        _compare(lambda w, i, o: F.embedding_bag(i, w, o, mode="max", padding_idx=3),
                 weight, indices, offsets)

def test_as_strided_in_place_restrides_an_intermediate():
    """torch 2.x's mean over a channels-last tensor (convnext) restrides its
    result with as_strided_: compiled whole, values, layout and gradient as
    eager's."""
    torch.manual_seed(0)
    x = torch.randn(2, 3, 4, 4, requires_grad=True)

    def f(x):
        m = (x * 2).mean((-1, -2), keepdim=True)
        m.as_strided_([2, 3, 1, 1], [3, 1, 3, 3])
        return m.permute(0, 2, 3, 1) * x.sum()

    _compare(f, x)
    got = aot_function(f, server=_compare.server, fallback="error")(x)
    assert got.stride() == f(x).stride()


def test_inverse_trigonometry_inside_and_at_the_edges():
    x = torch.cat([torch.rand(30) * 1.98 - 0.99, torch.tensor([0.0, 0.5, -0.5])])
    for op in (torch.asin, torch.acos, torch.atan):
        _compare(op, x.clone().requires_grad_())
    _compare(torch.atan, (torch.randn(20) * 50).requires_grad_())
    # Outside [-1, 1]: NaN values, as eager's.
    _compare(torch.asin, torch.tensor([1.5, -2.0, 0.25], requires_grad=True))


def test_rounding_keeps_integers_and_rounds_halves_to_even():
    halves = torch.tensor([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.49999997, -0.0, 3.7, -3.7])
    for op in (torch.floor, torch.ceil, torch.round, torch.trunc):
        _compare(lambda x: op(x) * x, halves.clone().requires_grad_())  # Zero gradient.
        big = torch.tensor([2 ** 62 + 1, -(2 ** 62) - 3, 7], dtype=torch.int64)
        got = aot_function(op, server=_compare.server)(big)
        assert got.dtype == torch.int64 and torch.equal(got, big)


def test_isnan():
    x = torch.tensor([0.0, float("nan"), float("inf"), -1.0, float("-nan")])
    got = aot_function(lambda x: torch.where(torch.isnan(x), 0.0, x), server=_compare.server)(x)
    assert torch.equal(got, torch.where(torch.isnan(x), 0.0, x))
    assert torch.equal(aot_function(torch.isnan, server=_compare.server)(x), torch.isnan(x))
