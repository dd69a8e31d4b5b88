"""Reductions, indexing and elementwise-bound ops through aot_function against
eager (torch 1.13): argmax/argmin (ties pick the first index, NaN wins),
max/min with and without dim (values, int64 indices and the tie rules of
their gradients), gather, scatter_add, scatter_reduce (every reduction,
with and without self, ties sharing the gradient, NaN, integer means, in
place), index_select and index_add (repeated indices, int32 indices), clamp/clamp_min/clamp_max (bounds hit exactly,
min > max, int64 kept), full_like, scalar_tensor (torch.where with a
number), baddbmm (beta, alpha, beta=0 ignoring a
NaN self, broadcast self), var_mean and binary_cross_entropy_with_logits
(reductions, weight, pos_weight, logits large enough to overflow a naive
formula). Values and the gradients of every differentiable input; and an
out-of-range index is an error, not a read or write past the tensor."""

import pytest
import torch
import torch.nn.functional as F

from aotcache.torch import aot_function

NAN = float("nan")
_gen = torch.Generator().manual_seed(0)


def _randn(*shape, dtype=torch.float32):
    return torch.randn(*shape, generator=_gen, dtype=dtype)


def _i(values, dtype=torch.int64):
    return torch.tensor(values, dtype=dtype)


@pytest.fixture
def compile_(daemon):
    return lambda fn: aot_function(fn, server=daemon)


def _outputs(out):
    return [out] if isinstance(out, torch.Tensor) else list(out)


def _check(compile_, fn, *args, grad=None, reference=None):
    """fn compiled against reference (default: fn) eager on twin copies of
    args: the result's type, every output's dtype, shape, requires_grad and
    value (integers exactly), then, under a non-uniform cotangent, the
    gradient of the args at the indices in grad (default: every floating arg;
    zero where reference does not use the arg)."""
    if grad is None:
        grad = [k for k, a in enumerate(args) if a.is_floating_point()]

    def twins():
        return [a.detach().clone().requires_grad_(k in grad) for k, a in enumerate(args)]

    xs, ys = twins(), twins()
    got, want = compile_(fn)(*xs), (reference or fn)(*ys)
    assert type(got) is type(want)
    gots, wants = _outputs(got), _outputs(want)
    assert len(gots) == len(wants)
    for g, w in zip(gots, wants):
        assert (g.dtype, g.shape, g.requires_grad) == (w.dtype, w.shape, w.requires_grad)
        if w.is_floating_point():
            tol = dict(atol=1e-12, rtol=1e-10) if w.dtype == torch.float64 else \
                dict(atol=1e-6, rtol=1e-5)
            assert torch.allclose(g, w, equal_nan=True, **tol), (g, w)
        else:
            assert torch.equal(g, w), (g, w)
    pairs = [(g, w) for g, w in zip(gots, wants) if w.requires_grad]
    if not pairs:
        return got
    loss_got = loss_want = 0
    for k, (g, w) in enumerate(pairs):
        cotangent = torch.linspace(0.5, 1.5 + k, w.numel(), dtype=w.dtype).reshape(w.shape)
        loss_got = loss_got + (g * cotangent).sum()
        loss_want = loss_want + (w * cotangent).sum()
    loss_got.backward()
    loss_want.backward()
    for k in grad:
        assert xs[k].grad is not None, "no gradient for argument %d" % k
        tol = dict(atol=1e-12, rtol=1e-10) if args[k].dtype == torch.float64 else \
            dict(atol=1e-6, rtol=1e-5)
        want_grad = torch.zeros_like(args[k]) if ys[k].grad is None else ys[k].grad
        assert torch.allclose(xs[k].grad, want_grad, equal_nan=True, **tol), \
            (k, xs[k].grad, want_grad)
    return got


TIES = torch.tensor([[1., 3., 3.], [2., 2., 0.]])
NANS = torch.tensor([[1., NAN, 3.], [NAN, 2., NAN]])
TIES_3D = (torch.arange(24.) % 5).reshape(2, 3, 4)
INTS = _i([[1, 5, 5], [2, 2, 0]])
REDUCTION_INPUTS = pytest.mark.parametrize("x", [TIES, NANS, TIES_3D, INTS],
                                           ids=["ties", "nan", "ties3d", "int64"])


@REDUCTION_INPUTS
@pytest.mark.parametrize("fn", [
    lambda x: torch.argmax(x),
    lambda x: torch.argmax(x, keepdim=True),
    lambda x: torch.argmax(x, 1),
    lambda x: torch.argmax(x, 0, keepdim=True),
    lambda x: x.argmax(-1, True),
    lambda x: torch.argmin(x),
    lambda x: torch.argmin(x, 1),
    lambda x: torch.argmin(x, -1, keepdim=True),
], ids=["argmax", "argmax_keepdim", "argmax1", "argmax0_keep", "argmax-1_keep",
        "argmin", "argmin1", "argmin-1_keep"])
def test_argmax_argmin(compile_, fn, x):
    out = _check(compile_, fn, x)
    assert out.dtype == torch.int64


@REDUCTION_INPUTS
@pytest.mark.parametrize("fn", [
    lambda x: torch.max(x, 1),
    lambda x: torch.max(x, 0, keepdim=True),
    lambda x: x.max(1),
    lambda x: x.max(dim=-1, keepdim=True),
    lambda x: torch.min(x, 1),
    lambda x: torch.min(x, 0),
    lambda x: x.max(),
    lambda x: x.min(),
], ids=["max1", "max0_keep", "Tmax1", "Tmax-1_keep", "min1", "min0", "max_all", "min_all"])
def test_max_min_values_indices_and_gradients(compile_, fn, x):
    _check(compile_, fn, x)


def test_tied_max_dim_grads_the_first_index_and_max_all_spreads_evenly(compile_):
    x = TIES.clone().requires_grad_()
    values, indices = compile_(lambda x: x.max(1))(x)
    assert values.tolist() == [3., 2.] and indices.tolist() == [1, 0]
    assert indices.dtype == torch.int64
    values.sum().backward()
    assert x.grad.tolist() == [[0., 1., 0.], [1., 0., 0.]]
    x.grad = None
    compile_(lambda x: x.max())(x).backward()
    assert x.grad.tolist() == [[0., .5, .5], [0., 0., 0.]]


X = _randn(4, 5)
SRC_3x4 = _randn(3, 4)


@pytest.mark.parametrize("fn,args", [
    (lambda x, i: torch.gather(x, 1, i), (X, _i([[0, 4, 4], [3, 0, 1]]))),
    (lambda x, i: torch.gather(x, 0, i), (X, _i([[0, 3], [3, 3], [1, 1]]))),
    (lambda x, i: x.gather(-1, i).exp(),
     (_randn(2, 3, 4), _i([[[3, 3, 0], [1, 2, 2]], [[0, 0, 0], [3, 2, 1]]]))),
    (lambda x, i, s: x.scatter_add(1, i, s), (X, _i([[0, 4, 4], [3, 0, 0]]), _randn(2, 3))),
    # src larger than index; a constant: eager 1.13's src gradient fails then.
    (lambda x, i: x.scatter_add(0, i, SRC_3x4), (X, _i([[0, 3], [3, 3], [0, 0]]))),
    (lambda x, i: torch.index_select(x, 0, i), (X, _i([2, 0, 2, 3]))),
    (lambda x, i: torch.index_select(x, 0, i), (X, _i([2, 0, 2, 3], torch.int32))),
    (lambda x, i: torch.index_select(x, 1, i), (X, _i([4, 4, 1]))),
    (lambda x, i: x.index_select(-1, i).tanh(), (X, _i([4, 4, 1], torch.int32))),
    (lambda x, i, s: x.index_add(0, i, s, alpha=2.0), (X, _i([1, 3, 1]), _randn(3, 5))),
    (lambda x, i, s: x.index_add(1, i, s, alpha=2.0),
     (X, _i([0, 0, 2, 4], torch.int32), _randn(4, 4))),
    (lambda x, i, s: x.index_add(0, i, s), (X, _i([2, 2]), _randn(2, 5))),
], ids=["gather1", "gather0", "gather3d", "scatter_add1", "scatter_add0_big_src",
        "index_select0", "index_select0_i32", "index_select1", "index_select-1_i32",
        "index_add0", "index_add1_i32", "index_add_alpha1"])
def test_gather_scatter_add_index_select_index_add(compile_, fn, args):
    _check(compile_, fn, *args)


# Ties on purpose: src repeats values, and self holds a bag's max and min.
TIED_SELF = torch.tensor([[1., 2., 3., 0.], [0., 0., 5., -1.]])
TIED_SRC = torch.tensor([[3., 3., 0.5, 2., 2.], [5., -1., -1., 4., 0.]])
TIED_INDEX = _i([[2, 2, 0, 1, 1], [2, 3, 3, 0, 0]])


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", ["sum", "mean", "amax", "amin"])
def test_scatter_reduce_values_and_gradients(compile_, reduce, include_self):
    kw = dict(include_self=include_self)
    _check(compile_, lambda x, i, s: x.scatter_reduce(1, i, s, reduce, **kw),
           TIED_SELF, TIED_INDEX, TIED_SRC)
    _check(compile_, lambda x, i, s: torch.scatter_reduce(x, 0, i, s, reduce, **kw) * 3,
           X, _i([[0, 3, 3, 1, 1], [3, 3, 0, 1, 2]]), _randn(2, 5))
    # src larger than index, a constant: only index's part of it is reduced
    # (eager's gradient of amax and amin fails then: values only).
    _check(compile_, lambda x, i: x.scatter_reduce(0, i, SRC_3x4, reduce, **kw),
           X, _i([[0, 3], [3, 3], [0, 0]]),
           grad=[] if reduce in ("amax", "amin") else None)
    # In place, on a copy of an input (a NaN wins amax and amin).
    nan_src = TIED_SRC.clone()
    nan_src[0, 1] = NAN
    _check(compile_, lambda x, i, s: x.clone().scatter_reduce_(1, i, s, reduce, **kw),
           TIED_SELF, TIED_INDEX, nan_src)


def test_scatter_reduce_of_integers_prod_and_scatter_add_in_place(compile_):
    ints = _i([[-4, 7, 0], [3, -3, 9]])
    src = _i([[-1, -2, -7], [5, 5, 0]])
    index = _i([[0, 0, 1], [2, 2, 2]])
    for reduce in ("sum", "prod", "mean", "amax", "amin"):
        for include_self in (True, False):
            # Integer means round down: (-4 - 1 - 2) / 3 is -3, not -2.
            _check(compile_, lambda x, i, s: x.scatter_reduce(
                1, i, s, reduce, include_self=include_self), ints, index, src)
    _check(compile_, lambda x, i, s: x.scatter_reduce(1, i, s, "prod"),
           TIED_SELF, TIED_INDEX, TIED_SRC, grad=[])
    _check(compile_, lambda x, i, s: x.clone().scatter_add_(1, i, s),
           TIED_SELF, TIED_INDEX, TIED_SRC)


def test_scatter_reduce_prod_gradient_is_refused_by_name(daemon):
    from aotcache.torch import CompileError
    f = aot_function(lambda x, i, s: x.scatter_reduce(1, i, s, "prod"), server=daemon,
                     fallback="error")
    with pytest.raises(CompileError, match="scatter_reduce with reduce='prod'"):
        f(TIED_SELF.clone().requires_grad_(), TIED_INDEX, TIED_SRC)


@pytest.mark.parametrize("fn,good,bads", [
    (lambda x, i: torch.gather(x, 1, i), _i([[0, 4]]), [_i([[0, 5]]), _i([[-1, 0]])]),
    (lambda x, i: torch.index_select(x, 0, i), _i([0, 3]), [_i([0, 4]), _i([-1, 0])]),
    (lambda x, i: torch.index_select(x, 1, i), _i([4, 0], torch.int32),
     [_i([5, 0], torch.int32), _i([0, -1], torch.int32)]),
    (lambda x, i: x.scatter_add(1, i, torch.ones(1, 2)), _i([[0, 4]]), [_i([[5, 0]])]),
    (lambda x, i: x.scatter_reduce(1, i, torch.ones(1, 2), "amax"), _i([[0, 4]]),
     [_i([[5, 0]]), _i([[0, -1]])]),
    (lambda x, i: x.index_add(0, i, torch.ones(2, 5)), _i([0, 3]), [_i([4, 0])]),
], ids=["gather", "index_select", "index_select_i32", "scatter_add", "scatter_reduce",
        "index_add"])
def test_an_index_out_of_range_is_an_error(compile_, fn, good, bads):
    f = compile_(fn)
    assert torch.equal(f(X, good), fn(X, good))  # Compiles with a valid index.
    for bad in bads:
        with pytest.raises(Exception, match=r"(?i)ind(ex|ices)|out of (range|bounds)"):
            f(X, bad)
    assert torch.equal(f(X, good), fn(X, good))  # And still runs.


@pytest.mark.parametrize("fn", [
    lambda x: x.clamp(min=0., max=1.),
    lambda x: torch.clamp(x, 0, 1),
    lambda x: x.clamp(min=0),
    lambda x: x.clamp(max=1),
    lambda x: torch.clamp_min(x, 0.5),
    lambda x: torch.clamp_max(x, 0.5),
    lambda x: x.clamp(min=0.5, max=0.5),
    lambda x: x.clamp(min=1., max=0.),  # Eager: max everywhere, zero gradient.
], ids=["min_max", "int_bounds", "min", "max", "clamp_min", "clamp_max", "min_eq_max",
        "min_gt_max"])
def test_clamp_values_and_gradients_at_the_bounds(compile_, fn):
    x = torch.tensor([-1., 0., 0.25, 0.5, 1., 2.])  # Hits every bound exactly.
    _check(compile_, fn, x)


@pytest.mark.parametrize("fn,dtype", [
    (lambda i: i.clamp(-1, 5), torch.int64),
    (lambda i: i.clamp(min=0), torch.int64),
    (lambda i: torch.clamp_max(i, 2), torch.int64),
    (lambda i: torch.clamp_min(i, 1), torch.int64),
    (lambda i: i.clamp(min=5, max=-1), torch.int64),
    (lambda i: i.clamp(min=0.5), torch.float32),  # A float bound promotes.
], ids=["min_max", "min", "clamp_max", "clamp_min", "min_gt_max", "float_bound"])
def test_clamp_of_int64(compile_, fn, dtype):
    out = _check(compile_, fn, _i([-3, 0, 2, 5, 7]))
    assert out.dtype == dtype


@pytest.mark.parametrize("fn,x", [
    (lambda x: x * torch.full_like(x, 2.5), X),
    (lambda x: (x + torch.full_like(x, 3, dtype=torch.int64)).tanh(), X),
    (lambda x: x / torch.full_like(x, 4.0), _randn(3, 2, dtype=torch.float64)),
    (lambda x: torch.full_like(x, 3, dtype=torch.int64) * 2 + x.argmax(-1, keepdim=True), X),
    (lambda x: torch.where(x > 0, x, 0.5), X),
    (lambda x: torch.where(x > 0, 2, x), X),
], ids=["float", "int64_into_float", "float64", "int64_result", "where_scalar_other",
        "where_scalar_self"])
def test_full_like_and_scalar_tensor_inside_a_computation(compile_, fn, x):
    _check(compile_, fn, x)


def _bmm_args(self_shape):
    return (_randn(*self_shape, dtype=torch.float64), _randn(2, 3, 4, dtype=torch.float64),
            _randn(2, 4, 5, dtype=torch.float64))


@pytest.mark.parametrize("self_shape,kwargs", [
    ((2, 3, 5), {}),
    ((2, 3, 5), dict(beta=0.5, alpha=2.0)),
    ((3, 5), dict(beta=0.5, alpha=2.0)),
    ((5,), {}),
    ((3, 1), dict(alpha=-1.5)),
    ((1, 3, 5), dict(beta=2.0)),
], ids=["plain", "beta_alpha", "self_np", "self_p", "self_n1", "self_1np"])
def test_baddbmm(compile_, self_shape, kwargs):
    _check(compile_, lambda s, a, b: torch.baddbmm(s, a, b, **kwargs), *_bmm_args(self_shape))


@pytest.mark.parametrize("beta", [0, 0.0])
@pytest.mark.parametrize("poisoned", [False, True])
def test_baddbmm_with_beta_zero_ignores_self(compile_, beta, poisoned):
    # Against alpha * bmm, not eager baddbmm: for small sizes torch 1.13's CPU
    # kernel scales its uninitialized output by beta, so eager itself returns
    # NaN now and then (pytorch issues 80588 and 96037, fixed after 1.13).
    s, a, b = _bmm_args((2, 3, 5))
    if poisoned:
        s[0] = NAN
        s[1, 0] = float("inf")
    out = _check(compile_, lambda s, a, b: torch.baddbmm(s, a, b, beta=beta, alpha=2.0), s, a, b,
                 reference=lambda s, a, b: 2.0 * torch.bmm(a, b))
    assert torch.isfinite(out).all()


@pytest.mark.parametrize("kwargs", [
    dict(dim=1),
    dict(dim=1, unbiased=False, keepdim=True),
    dict(dim=0, correction=2),
    dict(dim=(0, 2), correction=0),
    dict(dim=-1, keepdim=True),
    {},
    dict(unbiased=False),
], ids=["dim1", "biased_keepdim", "correction2", "dims_correction0", "dim-1_keepdim",
        "all", "all_biased"])
def test_var_mean_values_and_gradients_of_both(compile_, kwargs):
    def fn(x):
        var, mean = torch.var_mean(x, **kwargs)
        return var, mean, var.sum() + 3 * mean.sum()

    _check(compile_, fn, _randn(3, 4, 5, dtype=torch.float64))


LOGITS = torch.tensor([[-100., -30., -1., 0.], [0.5, 3., 30., 100.]])
TARGET = torch.tensor([[1., 0.3, 0., 0.5], [1., 0., 0., 0.25]])
BCE_EXTRA = {"weight": torch.tensor([0.5, 1., 2., 0.]),
             "pos_weight": torch.tensor([3., 0.5, 1., 2.])}


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("extra", [(), ("weight",), ("pos_weight",), ("weight", "pos_weight")],
                         ids=["plain", "weight", "pos_weight", "both"])
def test_binary_cross_entropy_with_logits(compile_, reduction, extra):
    def fn(logits, target, *tensors):
        return F.binary_cross_entropy_with_logits(logits, target, reduction=reduction,
                                                  **dict(zip(extra, tensors)))

    # weight and pos_weight are not differentiable in torch: only logits, target.
    out = _check(compile_, fn, LOGITS, TARGET, *[BCE_EXTRA[e] for e in extra], grad=(0, 1))
    assert torch.isfinite(out).all()  # -log(sigmoid(-100)) overflows a naive formula.
