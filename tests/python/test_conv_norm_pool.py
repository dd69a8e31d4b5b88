"""Convolutions, batch norm and pooling through aot_function against eager:
values and gradients for 1-d and 2-d convolutions with stride, padding,
dilation and groups, batch norm in training (running statistics written as
in eager) and in eval, and the pooling ops CNNs use."""

import pytest
import torch
import torch.nn.functional as F

from aotcache.torch import aot_function


@pytest.fixture
def compile_(daemon):
    return lambda fn: aot_function(fn, server=daemon)


def _match(compiled, fn, *args, atol=1e-5):
    """Runs both on copies; compares results and the gradients of every
    floating argument that requires grad."""
    mine = [a.detach().clone().requires_grad_(a.requires_grad) for a in args]
    theirs = [a.detach().clone().requires_grad_(a.requires_grad) for a in args]
    got, want = compiled(*mine), fn(*theirs)
    assert torch.allclose(got, want, atol=atol, rtol=1e-4), (got - want).abs().max()
    weights = torch.randn_like(want)
    (got * weights).sum().backward()
    (want * weights).sum().backward()
    for a, b in zip(mine, theirs):
        if a.requires_grad:
            assert torch.allclose(a.grad, b.grad, atol=atol, rtol=1e-4), \
                (a.grad - b.grad).abs().max()
    return mine, theirs


CONV2D = [
    dict(),
    dict(stride=2, padding=1),
    dict(padding=(2, 1), dilation=(2, 1)),
    dict(stride=(1, 2), padding=1, groups=2),
]


@pytest.mark.parametrize("kw", CONV2D)
@pytest.mark.parametrize("bias", [True, False])
def test_conv2d(compile_, kw, bias):
    torch.manual_seed(0)
    x = torch.randn(2, 4, 7, 6, requires_grad=True)
    w = torch.randn(6, 4 // kw.get("groups", 1), 3, 3, requires_grad=True)
    b = torch.randn(6, requires_grad=True)
    fn = (lambda x, w, b: F.conv2d(x, w, b, **kw)) if bias else \
        (lambda x, w, b: F.conv2d(x, w, None, **kw) + 0 * b.sum())
    _match(compile_(fn), fn, x, w, b)


def test_conv1d_with_stride_and_groups(compile_):
    torch.manual_seed(1)
    x = torch.randn(3, 6, 11, requires_grad=True)
    w = torch.randn(9, 2, 4, requires_grad=True)
    fn = lambda x, w: F.conv1d(x, w, stride=2, padding=1, groups=3)
    _match(compile_(fn), fn, x, w)


CONV_TRANSPOSE2D = [
    dict(),
    dict(stride=2, padding=1),                     # DCGAN's upsampling, k=4
    dict(stride=2, padding=1, output_padding=1),
    dict(stride=(2, 3), padding=(0, 2), dilation=(1, 2), output_padding=(1, 0)),
    dict(stride=2, padding=3, groups=2),           # padding past the kernel: crops
    dict(padding=(1, 0), dilation=3),
]


@pytest.mark.parametrize("kw", CONV_TRANSPOSE2D)
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("backend", ["native", "reference"])
def test_conv_transpose2d(daemon, reference_daemon, kw, bias, backend):
    server = daemon if backend == "native" else reference_daemon
    torch.manual_seed(2)
    groups = kw.get("groups", 1)
    x = torch.randn(2, 4, 5, 6, requires_grad=True)
    w = torch.randn(4, 6 // groups, 4, 3, requires_grad=True)
    b = torch.randn(6, requires_grad=True)
    fn = (lambda x, w, b: F.conv_transpose2d(x, w, b, **kw)) if bias else \
        (lambda x, w, b: F.conv_transpose2d(x, w, None, **kw) + 0 * b.sum())
    compiled = aot_function(fn, server=server)
    _match(compiled, fn, x, w, b, atol=1e-4)
    assert compiled.cache_info()[0]["backend"] == backend


def test_conv_transpose1d_and_3d(compile_):
    torch.manual_seed(3)
    x = torch.randn(2, 3, 7, requires_grad=True)
    w = torch.randn(3, 2, 3, requires_grad=True)
    fn = lambda x, w: F.conv_transpose1d(x, w, stride=3, padding=1, output_padding=2)
    _match(compile_(fn), fn, x, w)
    x = torch.randn(1, 2, 3, 4, 3, requires_grad=True)
    w = torch.randn(2, 2, 2, 3, 2, requires_grad=True)
    fn = lambda x, w: F.conv_transpose3d(x, w, stride=2, padding=(0, 1, 0))
    _match(compile_(fn), fn, x, w)


def test_a_conv_transpose_decoder_trains_as_eager(daemon):
    import copy
    from aotcache.torch import aot_module
    torch.manual_seed(4)
    net = torch.nn.Sequential(
        torch.nn.ConvTranspose2d(8, 4, 4, stride=2, padding=1), torch.nn.ReLU(),
        torch.nn.ConvTranspose2d(4, 1, 3, padding=1), torch.nn.Sigmoid())
    twin = copy.deepcopy(net)
    compiled = aot_module(net, server=daemon)
    z = torch.randn(3, 8, 4, 4)
    got, want = compiled(z), twin(z)
    assert got.shape == want.shape == (3, 1, 8, 8)
    assert torch.allclose(got, want, atol=1e-5)
    got.square().mean().backward()
    want.square().mean().backward()
    for (name, p), q in zip(net.named_parameters(), twin.parameters()):
        assert torch.allclose(p.grad, q.grad, atol=1e-5, rtol=1e-4), name


def test_a_bad_output_padding_is_refused_as_eager_refuses_it(compile_):
    x, w = torch.randn(1, 2, 5, 5), torch.randn(2, 3, 3, 3)
    fn = lambda x, w: F.conv_transpose2d(x, w, stride=2, output_padding=2)
    with pytest.raises(RuntimeError, match="output padding must be smaller"):
        fn(x, w)
    with pytest.raises(RuntimeError, match="output padding must be smaller"):
        compile_(fn)(x, w)


@pytest.mark.parametrize("make", [
    lambda: torch.nn.BatchNorm2d(3),
    lambda: torch.nn.BatchNorm2d(3, affine=False),
    lambda: torch.nn.BatchNorm2d(3, momentum=0.3),
    lambda: torch.nn.BatchNorm2d(3, track_running_stats=False),
    lambda: torch.nn.BatchNorm1d(3),
])
@pytest.mark.parametrize("train", [True, False])
def test_batch_norm_writes_its_running_statistics_as_in_eager(daemon, make, train):
    import copy
    from aotcache.torch import aot_module
    torch.manual_seed(0)
    bn = make()
    with torch.no_grad():  # Statistics that are not the defaults.
        for b in bn.buffers():
            if b.is_floating_point():
                b.uniform_(0.5, 1.5)
    twin = copy.deepcopy(bn)
    bn.train(train)
    twin.train(train)
    compiled = aot_module(bn, server=daemon)
    shape = (4, 3, 5, 5) if isinstance(bn, torch.nn.BatchNorm2d) else (6, 3)
    versions = [(a._version, b._version) for a, b in zip(bn.buffers(), twin.buffers())]
    for step in range(2):  # The second call reads the first call's updates.
        x = torch.randn(*shape, requires_grad=True)
        y = x.detach().clone().requires_grad_()
        got, want = compiled(x), twin(y)
        assert torch.allclose(got, want, atol=1e-5), step
        w = torch.randn_like(want)
        (got * w).sum().backward()
        (want * w).sum().backward()
        assert torch.allclose(x.grad, y.grad, atol=1e-5), step
        for p, q in zip(bn.parameters(), twin.parameters()):
            assert torch.allclose(p.grad, q.grad, atol=1e-5), step
        for (name, a), b, (va, vb) in zip(bn.named_buffers(), twin.buffers(), versions):
            assert torch.allclose(a.double(), b.double(), atol=1e-6), (step, name, a, b)
            assert a._version - va == b._version - vb, (step, name)  # As eager moves them.


@pytest.mark.parametrize("fn", [
    lambda x: F.max_pool2d(x, 2),
    lambda x: F.max_pool2d(x, 3, stride=2, padding=1),
    lambda x: F.max_pool2d(x, (2, 3), stride=(1, 2), dilation=(2, 1), ceil_mode=True),
    lambda x: F.avg_pool2d(x, 2),
    lambda x: F.avg_pool2d(x, 3, stride=2, padding=1),
    lambda x: F.avg_pool2d(x, 3, stride=2, padding=1, count_include_pad=False, ceil_mode=True),
    lambda x: F.avg_pool2d(x, 2, divisor_override=3),
    lambda x: F.adaptive_avg_pool2d(x, (3, 2)),
    lambda x: F.adaptive_avg_pool2d(x, 1),
    lambda x: F.adaptive_avg_pool2d(x[0], (4, 4)),
    lambda x: F.adaptive_max_pool2d(x, (3, 2)),
    lambda x: F.adaptive_max_pool2d(x, (4, 4)),  # Overlapping windows.
    lambda x: F.adaptive_max_pool2d(x, 1),
    lambda x: F.adaptive_max_pool2d(x[0], (5, 3)) * 2,
    lambda x: F.adaptive_max_pool1d(x[0], 4),
    lambda x: torch.nn.AdaptiveMaxPool2d((2, None))(x),
])
def test_pooling(compile_, fn):
    torch.manual_seed(2)
    x = torch.randn(2, 3, 7, 6, requires_grad=True)
    _match(compile_(fn), fn, x)


def test_max_pool_ties_and_nan_as_in_eager(compile_):
    fn = lambda x: F.max_pool2d(x, 2)
    x = torch.tensor([[[[1.0, 1.0, 0.0, float("nan")],
                        [1.0, 0.5, 2.0, 3.0]]]], requires_grad=True)
    got = compile_(fn)(x)
    want = fn(x.detach())
    assert torch.equal(got.isnan(), want.isnan())
    assert torch.equal(got.nan_to_num(), want.nan_to_num())


def test_adaptive_max_pool_indices_ties_nan_and_gradient_as_in_eager(compile_):
    # Overlapping windows (3 -> 2) share their middle element, whose
    # gradient is the sum of both; ties pick the first, NaN the last, and a
    # window of -inf the window's first index.
    inf, nan = float("inf"), float("nan")
    x = torch.tensor([[[[1.0, 1.0, 0.0, nan, 2.0, nan],
                        [1.0, 5.0, 2.0, 3.0, -inf, -inf],
                        [0.5, 5.0, 1.0, 1.0, -inf, -inf]]]])
    fn = lambda t: F.adaptive_max_pool2d(t, (2, 3), return_indices=True)
    got, want = compile_(fn)(x), fn(x)
    assert torch.equal(got[1], want[1]), (got[1], want[1])
    torch.testing.assert_close(got[0], want[0], equal_nan=True)
    x = torch.tensor([[[[0.0, 3.0, 1.0], [3.0, 2.0, 3.0], [1.0, 0.0, 4.0]]]],
                     requires_grad=True)
    _match(compile_(lambda t: F.adaptive_max_pool2d(t, 2)),
           lambda t: F.adaptive_max_pool2d(t, 2), x)


def test_a_captured_batch_norm_writes_its_running_statistics(compile_):
    """Through aot_function the module is captured, not passed: its running
    statistics, which native_batch_norm writes without moving their version
    counters, are inputs of the graph all the same, written back without
    moving them either (num_batches_tracked's add_ moves its own)."""
    import copy
    torch.manual_seed(3)
    bn = torch.nn.BatchNorm2d(4)
    twin = copy.deepcopy(bn)
    f = compile_(lambda x: bn(x).sum())
    for _ in range(2):
        x = torch.randn(2, 4, 3, 3)
        f(x)
        twin(x)
        for a, b in zip(bn.buffers(), twin.buffers()):
            assert torch.allclose(a.double(), b.double(), atol=1e-6)
            assert a._version == b._version
