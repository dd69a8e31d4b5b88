"""Training loops as people write them: compiling must change nothing a
program computes. Each test once failed silently (or crashed) on a landed
main; each compares with torch eager: values, the caller's tensors and their
version counters after each call, gradients, buffers."""

import pytest
import torch

from aotcache.torch import CompileError, aot_function, aot_module

# Module-level state, as scripts write it: reached through the function's
# globals.
torch.manual_seed(0)
GLOBAL_LINEAR = torch.nn.Linear(3, 2)


def _step_global(x):
    with torch.no_grad():
        GLOBAL_LINEAR.weight.sub_(1.0)
    return GLOBAL_LINEAR(x).sum()


def _twins(make):
    torch.manual_seed(1)
    a = make()
    torch.manual_seed(1)
    b = make()
    return a, b


def test_writes_to_captured_parameters_happen_once_per_call(daemon):
    """The trace and the exporter's re-run used to run on the real captured
    tensors: the first call moved the weight by 3 instead of 1."""
    eager, compiled = _twins(lambda: torch.nn.Linear(3, 2))

    def step(lin):
        def f(x):
            with torch.no_grad():
                lin.weight.sub_(1.0)
            return lin(x).sum()
        return f

    g = aot_function(step(compiled), server=daemon)
    f = step(eager)
    for _ in range(3):
        x = torch.randn(4, 3)
        v_eager, v_compiled = eager.weight._version, compiled.weight._version
        assert torch.allclose(f(x), g(x))
        assert torch.equal(eager.weight, compiled.weight)
        assert (compiled.weight._version - v_compiled) == (eager.weight._version - v_eager)


def test_globals_a_function_writes_are_followed(daemon):
    w0 = GLOBAL_LINEAR.weight.detach().clone()
    g = aot_function(_step_global, server=daemon)
    g(torch.randn(4, 3))
    assert torch.allclose(GLOBAL_LINEAR.weight, w0 - 1.0)
    g(torch.randn(4, 3))
    assert torch.allclose(GLOBAL_LINEAR.weight, w0 - 2.0)


class RunningMean(torch.nn.Module):
    """BatchNorm's running-statistics pattern on a buffer."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.register_buffer("mean", torch.zeros(4))
        self.register_buffer("steps", torch.zeros((), dtype=torch.int64))

    def forward(self, x):
        y = self.lin(x)
        with torch.no_grad():
            self.mean.mul_(0.9).add_(0.1 * y.mean(0))
            self.steps.add_(1)
        return (y - self.mean).sum()


def test_buffers_updated_in_place_are_inputs_written_back_every_call(daemon):
    """Captured buffers a graph writes were frozen as constants: after the
    first call they never changed and the outputs went stale."""
    eager, compiled = _twins(RunningMean)
    g = aot_function(lambda x: compiled(x), server=daemon)
    for _ in range(4):
        x = torch.randn(8, 4)
        out_eager, out = eager(x), g(x)
        assert torch.allclose(out_eager, out, atol=1e-5)
        assert torch.allclose(eager.mean, compiled.mean, atol=1e-6)
        assert int(compiled.steps) == int(eager.steps)
        out_eager.backward()
        out.backward()
        assert torch.allclose(eager.lin.weight.grad, compiled.lin.weight.grad, atol=1e-5)
    assert int(compiled.steps) == 4


def test_reading_grad_inside_the_function_is_refused_naming_the_tensor(daemon):
    """`.grad` became a constant (or vanished on argument copies): a manual
    SGD step inside the function silently did nothing, or recompiled every
    step."""
    lin = torch.nn.Linear(3, 1)
    lin(torch.randn(2, 3)).sum().backward()

    def sgd(x):
        with torch.no_grad():
            lin.weight.sub_(0.1 * lin.weight.grad)
        return lin(x).sum()

    w0 = lin.weight.detach().clone()
    with pytest.raises(CompileError, match=r"\.grad of .*weight"):
        aot_function(sgd, server=daemon, fallback="error")(torch.randn(2, 3))
    assert torch.equal(lin.weight, w0)  # The refused compile wrote nothing.

    p = torch.randn(3, requires_grad=True)
    p.grad = torch.ones(3)

    def sgd_arg(p, x):
        with torch.no_grad():
            p.sub_(0.1 * p.grad)
        return (p * x).sum()

    with pytest.raises(CompileError, match=r"\.grad of argument 0"):
        aot_function(sgd_arg, server=daemon, fallback="error")(p, torch.randn(3))


def test_a_failed_compile_leaves_captured_state_untouched(daemon):
    state = torch.zeros(3)

    def f(x):
        with torch.no_grad():
            state.add_(1)
        return torch.special.erfcx(x)  # An op aotcache lacks.

    v0 = state._version
    with pytest.raises(CompileError):
        aot_function(f, server=daemon, fallback="error")(torch.randn(3))
    assert torch.equal(state, torch.zeros(3)) and state._version == v0


def test_a_view_of_a_cat_saved_for_backward_keeps_its_layout(daemon):
    """A select saved for pow's backward came back to the backward at offset
    0: 'layout differs from the graph's input meta'."""
    def h(a, b):
        c = torch.cat([a, b], 0)
        return c[1:4, ::2].sum() + c.select(1, 3).pow(2).sum()

    a, b = torch.randn(3, 6, requires_grad=True), torch.randn(4, 6, requires_grad=True)
    aot_function(h, server=daemon)(a, b).backward()
    ga, gb = a.grad, b.grad
    a.grad = b.grad = None
    h(a, b).backward()
    assert torch.allclose(ga, a.grad) and torch.allclose(gb, b.grad)


def test_double_backward_is_refused_not_silently_dropped(daemon):
    """torch.autograd.grad(..., create_graph=True) returned a gradient that
    did not require grad: a gradient penalty lost its own gradient."""
    lin = torch.nn.Linear(3, 1)
    g = aot_function(lambda x: torch.tanh(lin(x)).sum(), server=daemon)
    x = torch.randn(4, 3, requires_grad=True)
    out = g(x)
    with pytest.raises(RuntimeError, match="double backward"):
        torch.autograd.grad(out, x, create_graph=True)
    # A first-order gradient still works.
    (gx,) = torch.autograd.grad(g(x), x)
    x2 = x.detach().requires_grad_(True)
    (ex,) = torch.autograd.grad(torch.tanh(lin(x2)).sum(), x2)
    assert torch.allclose(gx, ex, atol=1e-6)


def _gradient_strides_and_values(model, step):
    """The strides of the gradients autograd hands each parameter (before
    AccumulateGrad) and the gradients after one step from no .grad."""
    strides = {}
    hooks = [p.register_hook(lambda g, name=name: strides.__setitem__(name, g.stride()))
             for name, p in model.named_parameters()]
    model.zero_grad(set_to_none=True)
    step()
    for h in hooks:
        h.remove()
    return strides, {n: p.grad.clone() for n, p in model.named_parameters()}


@pytest.mark.parametrize("loss_inside", [False, True])
def test_linear_gradients_arrive_in_the_layout_eager_gives_them(daemon, loss_inside):
    """nn.Linear's weight gradients came back transposed (stride (1, out)),
    so AccumulateGrad copied each into .grad; the mean's expanded gradient
    fed a matrix product outside BLAS. Both as eager now: strides, values."""
    torch.manual_seed(5)
    model = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.ReLU(), torch.nn.Linear(5, 3))
    x = torch.randn(4, 6)
    if loss_inside:
        compiled = aot_function(lambda x: model(x).mean(), server=daemon)
        step = lambda: compiled(x).backward()  # noqa: E731
    else:
        compiled = aot_module(model, server=daemon)
        step = lambda: compiled(x).sum().backward()  # noqa: E731
    eager_strides, eager_grads = _gradient_strides_and_values(
        model, lambda: (model(x).mean() if loss_inside else model(x).sum()).backward())
    strides, grads = _gradient_strides_and_values(model, step)
    assert strides == eager_strides
    assert strides["0.weight"] == (6, 1)
    for name, g in eager_grads.items():
        assert torch.allclose(grads[name], g, atol=1e-6), name


def _view_of_input_under_no_grad(a):
    with torch.no_grad():
        v = a.view(-1)
    return v * 2, v


def _view_of_intermediate_under_no_grad(a):
    out = a * 3
    with torch.no_grad():
        v = out.view(-1)
    return v


def _view_of_an_output_under_no_grad(a):
    out = a * 3
    with torch.no_grad():
        v = out.view(-1)
    return out, v


@pytest.mark.parametrize("fn", [_view_of_input_under_no_grad, _view_of_intermediate_under_no_grad,
                                _view_of_an_output_under_no_grad])
def test_views_made_under_no_grad_stop_gradients_as_in_eager(fn, daemon):
    """In eager a view made under no_grad of a tensor that requires grad
    requires grad but has no history: gradients stop there. The compiled
    function regenerated it with history, which sent them to the input."""
    compiled = aot_function(fn, server=daemon)
    torch.manual_seed(0)
    a_eager = torch.randn(2, 3, requires_grad=True)
    a_compiled = a_eager.detach().clone().requires_grad_(True)
    want, got = fn(a_eager), compiled(a_compiled)
    want = want if isinstance(want, tuple) else (want,)
    got = got if isinstance(got, tuple) else (got,)
    for w, g in zip(want, got):
        assert torch.equal(w, g)
        assert (g.requires_grad, g.grad_fn is None, g.is_leaf) == \
            (w.requires_grad, w.grad_fn is None, w.is_leaf)
        assert (g._base is a_compiled) == (w._base is a_eager)
    for outs in (want, got):
        tracked = [o.sum() for o in outs if o.grad_fn is not None]
        if tracked:
            sum(tracked).backward()
    assert (a_compiled.grad is None) == (a_eager.grad is None)
    if a_eager.grad is not None:
        assert torch.equal(a_compiled.grad, a_eager.grad)
