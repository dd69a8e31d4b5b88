"""Tests of PyTorch's own TestAOTAutograd (test/functorch/test_aotdispatch.py),
run against aotcache's aot_function as that file runs them against
functorch's: outputs and the gradients of every input that requires grad
equal eager's (its verify_aot_autograd, minus the compiler hooks aotcache
does not take)."""

import torch

from aotcache.torch import aot_function


def _outs_and_grads(fn, inps):
    outs = fn(*inps)
    flat = [o for o in torch.utils._pytree.tree_flatten(outs)[0] if isinstance(o, torch.Tensor)]
    grad_inps = [i for i in torch.utils._pytree.tree_flatten(inps)[0]
                 if isinstance(i, torch.Tensor) and i.requires_grad]
    diff = [o for o in flat if o.requires_grad]
    if diff:
        grads = torch.autograd.grad(sum(o.sum() for o in diff), grad_inps, allow_unused=True)
    else:
        grads = []
    return outs, grads


def _clone(inps):
    def one(t):
        if isinstance(t, torch.Tensor):
            return t.detach().clone().requires_grad_(t.requires_grad)
        return t
    return torch.utils._pytree.tree_map(one, inps)


def verify_aot_autograd(server, f, inp):
    compiled_f = aot_function(f, server=server)
    ref_out, ref_grad = _outs_and_grads(f, _clone(inp))
    test_out, test_grad = _outs_and_grads(compiled_f, _clone(inp))
    torch.testing.assert_close(test_out, ref_out)
    assert len(test_grad) == len(ref_grad)
    for a, b in zip(test_grad, ref_grad):
        torch.testing.assert_close(a, b)


def test_output_dict(daemon):
    def f(x):
        return {'a': x, 'b': x}
    inp = [torch.randn(3, 3, requires_grad=True)]
    verify_aot_autograd(daemon, f, inp)

    def f(x, y):
        return {'a': x, 'b': y + x}
    inp = [torch.randn(3, requires_grad=True), torch.randn(3)]
    verify_aot_autograd(daemon, f, inp)

    def f(x):
        new_d = {}
        for k in x:
            new_d[k] = x[k] * 2
        return new_d
    inp = [{'a': torch.randn(3, requires_grad=True), 'b': torch.randn(3, requires_grad=True)}]
    verify_aot_autograd(daemon, f, inp)


def _resize_to_four(daemon, size):
    def f(x, y):
        y.resize_(4)
        y.zero_()
        assert x.shape == (4,)
        return y

    # As PyTorch's test: not verify_aot_autograd, the inputs are mutated.
    compiled_f = aot_function(f, server=daemon)
    ref_x = torch.randn(size)
    ref_out = f(ref_x, ref_x)
    test_x = torch.randn(size)
    test_out = compiled_f(test_x, test_x)
    torch.testing.assert_close(test_out, ref_out)


def test_resize_input(daemon):
    _resize_to_four(daemon, 0)


def test_resize_input_smaller(daemon):
    _resize_to_four(daemon, 5)
