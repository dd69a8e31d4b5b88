"""compare(fn, *args): fn through aot_function against eager on twin
copies of args: the values, then, under a fixed non-uniform cotangent, the
gradients of every arg that requires grad, and no eager fallback. A test
module imports compare and the autouse fixture compare_through_the_daemon
(which points compare.server at the session's daemon).

Thread-safety: compare.server is module state; tests run one at a time."""

import pytest
import torch

from aotcache.torch import aot_function


@pytest.fixture(autouse=True)
def compare_through_the_daemon(daemon):
    compare.server = daemon


def compare(fn, *args, rtol=1e-5, atol=1e-6):
    compiled = aot_function(fn, server=compare.server)
    leaves = [a.detach().clone().requires_grad_(a.requires_grad) for a in args]
    twins = [a.detach().clone().requires_grad_(a.requires_grad) for a in args]
    got, want = compiled(*leaves), fn(*twins)
    torch.testing.assert_close(got, want, rtol=rtol, atol=atol, equal_nan=True)
    seed = torch.Generator().manual_seed(1)
    weights = torch.rand(want.shape, generator=seed, dtype=want.dtype)
    (got * weights).sum().backward()
    (want * weights).sum().backward()
    for a, b in zip(leaves, twins):
        if a.requires_grad:
            torch.testing.assert_close(a.grad, b.grad, rtol=rtol, atol=atol, equal_nan=True)
    assert compiled.cache_info()[0]["eager"] == ""
