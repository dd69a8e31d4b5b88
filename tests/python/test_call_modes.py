"""The caller's modes a compiled call honours as eager does: inference
mode and torch's thread count (issue 22, item 8b); torch.func transforms refused."""

import os
import time

import pytest
import torch
import torch.nn as nn

from aotcache.torch import aot_function, aot_module


def test_inference_mode_runs_compiled_and_gives_inference_tensors(daemon):
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4), nn.ReLU()).eval()
    cm = aot_module(m, server=daemon)
    g = aot_function(lambda x: x * 2, server=daemon)
    with torch.inference_mode():
        x = torch.randn(3, 4)
        got, want = cm(x), m(x)
        doubled = g(x)
    assert torch.allclose(got, want, atol=1e-6)
    assert got.is_inference() == want.is_inference() == True  # noqa: E712
    assert torch.equal(doubled, x * 2) and doubled.is_inference()
    # Outside inference mode, the same function on a normal tensor.
    y = torch.randn(3, 4)
    assert torch.allclose(cm(y), m(y), atol=1e-6) and not cm(y).is_inference()


@pytest.mark.skipif(bool(os.environ.get("OPENBLAS_NUM_THREADS")),
                    reason="OPENBLAS_NUM_THREADS rules OpenBLAS's threads")
def test_compiled_code_uses_the_threads_torch_may_use(daemon):
    """Matrix products in compiled code ran on every core whatever
    torch.set_num_threads said. One thread: the process's CPU time stays
    within its wall time."""
    f = aot_function(lambda a, b: (a @ b).relu() @ b, server=daemon)
    a, b = torch.randn(384, 384), torch.randn(384, 384)
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        f(a, b)
        wall, cpu = time.perf_counter(), time.process_time()
        for _ in range(20):
            f(a, b)
        ratio = (time.process_time() - cpu) / (time.perf_counter() - wall)
    finally:
        torch.set_num_threads(before)
    assert ratio < 1.3, ratio


def test_a_torch_func_transform_is_refused_naming_it(daemon):
    """Under grad or vmap the arguments are functorch's wrappers, whose
    memory the compiled code cannot read: refused, not an error from deep
    inside (it was "Cannot access storage of TensorWrapper")."""
    try:
        from torch.func import grad, vmap
    except ImportError:  # torch 1.13
        from functorch import grad, vmap
    import aotcache

    def square_sum(x):
        return (x * x).sum()

    g = aot_function(square_sum, server=daemon)
    x = torch.randn(3)
    for transformed in (grad(g), vmap(g)):
        with pytest.raises(aotcache.Unimplemented, match="square_sum is compiled and cannot "
                                                         "run under a torch.func transform"):
            transformed(x)
    assert torch.allclose(g(x), square_sum(x))  # Outside a transform, as before.
