"""Training mode's autograd node (_native.TrainingStep in C++, or
_torch_node.TrainingPlan over _core): what the node must get right beyond
the scenarios' values: its backward runs on torch's engine from several
threads, also twice, and when the daemon is gone; and it refuses inputs its
plan does not describe."""

import threading

import pytest
import torch

from aotcache.torch import aot_function


def layer(x, w):
    return torch.tanh(x @ w).sum()


def test_backward_from_several_threads_at_once_matches_eager(daemon):
    g = aot_function(layer, server=daemon)
    w = torch.randn(16, 8, requires_grad=True)
    g(torch.randn(4, 16), w).backward()  # Compile the forward and backward.
    xs = [torch.randn(4, 16) for _ in range(4)]
    got = [None] * len(xs)

    def run(i):
        wi = w.detach().clone().requires_grad_()
        for _ in range(50):
            wi.grad = None
            g(xs[i], wi).backward()
        got[i] = wi.grad

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(xs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for x, grad in zip(xs, got):
        wi = w.detach().clone().requires_grad_()
        layer(x, wi).backward()
        torch.testing.assert_close(grad, wi.grad, rtol=1e-5, atol=1e-6)


def test_backward_twice_with_retain_graph_accumulates_as_in_eager(daemon):
    g = aot_function(layer, server=daemon)
    x = torch.randn(4, 16)
    w = torch.randn(16, 8, requires_grad=True)
    loss = g(x, w)
    loss.backward(retain_graph=True)
    loss.backward()
    twin = w.detach().clone().requires_grad_()
    eager = layer(x, twin)
    eager.backward(retain_graph=True)
    eager.backward()
    torch.testing.assert_close(w.grad, twin.grad, rtol=1e-5, atol=1e-6)


def test_an_output_written_in_place_still_gets_its_gradient(daemon):
    g = aot_function(lambda x, w: x * w, server=daemon)
    x = torch.randn(5)
    w = torch.randn(5, requires_grad=True)
    out = g(x, w)
    assert out._base is None  # The node's own output, not a view.
    out.mul_(3)
    out.sum().backward()
    torch.testing.assert_close(w.grad, 3 * x)


def test_a_backward_first_needed_after_the_daemon_is_gone_is_compiled_here(own_daemon):
    def f(x, w):  # A graph no other test compiles: its backward is nowhere yet.
        return torch.sigmoid(x @ w).mean() * 7

    g = aot_function(f, server=own_daemon.target)
    x, w = torch.randn(3, 5), torch.randn(5, 2, requires_grad=True)
    loss = g(x, w)
    assert g.cache_info()[0]["backward"] == "pending"
    own_daemon.stop()
    loss.backward()  # Fetched on first use: no daemon, so compiled here.
    twin = w.detach().clone().requires_grad_()
    f(x, twin).backward()
    torch.testing.assert_close(w.grad, twin.grad, rtol=1e-5, atol=1e-6)


def test_a_training_step_refuses_inputs_that_do_not_match_its_plan(daemon):
    g = aot_function(layer, server=daemon)
    x, w = torch.randn(4, 16), torch.randn(16, 8, requires_grad=True)
    g(x, w)
    step = next(iter(g._compiled.values()))[0].entry.step
    with pytest.raises(ValueError, match="takes 2 inputs, not 1"):
        step.run([x], [x])
