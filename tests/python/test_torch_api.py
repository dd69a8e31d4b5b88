"""aotcache.torch beyond the scenarios: closures, non-tensor arguments,
random ops run eagerly on request, aot_module, unsupported ops and fallback, zero copy, reuse
without a round trip, training an MLP, and the embedded default daemon."""

import copy
import os
import subprocess
import sys
import warnings

import pytest
import torch
import torch.nn.functional as F

from aotcache.torch import CompileError, aot_function, aot_module

HERE = os.path.dirname(os.path.abspath(__file__))


def test_a_closed_over_linear_gets_gradients_and_follows_its_updates(daemon):
    torch.manual_seed(0)
    lin = torch.nn.Linear(4, 3)
    x = torch.randn(5, 4)

    def f(x):
        return lin(x).relu().sum()

    g = aot_function(f, server=daemon)
    g(x).backward()
    got = (lin.weight.grad.clone(), lin.bias.grad.clone())
    lin.zero_grad()
    f(x).backward()
    assert torch.allclose(got[0], lin.weight.grad) and torch.allclose(got[1], lin.bias.grad)
    assert g.cache_info()[0]["mode"] == "training"
    with torch.no_grad():
        lin.weight.mul_(2)  # An optimizer step: the parameter is an input.
    assert torch.allclose(g(x), f(x))
    assert len(g.cache_info()) == 1


def test_a_captured_constant_written_in_place_is_never_stale(daemon):
    c = torch.tensor([1.0, 2.0, 3.0])

    def f(x):
        return x * c

    g = aot_function(f, server=daemon)
    x = torch.ones(3)
    assert torch.equal(g(x), torch.tensor([1.0, 2.0, 3.0]))
    c.add_(10)
    assert torch.equal(g(x), torch.tensor([11.0, 12.0, 13.0]))


def test_a_large_captured_tensor_is_an_input_so_its_graph_is_stored(daemon):
    # 1.2 MB captured without grad: an input of the graph (the caller's
    # tensor, read at every call), not 1.2 MB of constant in the graph, so
    # the graph is small enough to store and a second function hits it.
    torch.manual_seed(0)
    table = torch.randn(300, 1000)

    def f(x):
        return (x @ table).tanh().sum(1)

    for status in ("miss", "hit"):
        g = aot_function(f, server=daemon)
        x = torch.randn(4, 300, requires_grad=True)
        y = x.detach().clone().requires_grad_()
        got, want = g(x), f(y)
        info = g.cache_info()[0]
        assert (info["status"], info["eager"]) == (status, ""), info
        assert torch.allclose(got, want, atol=1e-5)
        got.sum().backward()
        want.sum().backward()
        # Gradients are 300 sums of 1000 products: the compiled one may round
        # otherwise than eager's BLAS (torch 2.x's is not ours), within a few
        # times eager's own distance from float64 (the zoo's bound).
        wide = x.detach().double().requires_grad_()
        (wide @ table.double()).tanh().sum(1).sum().backward()
        error = (x.grad.double() - wide.grad).abs().max()
        drift = (y.grad.double() - wide.grad).abs().max()
        assert error <= 4 * drift + 1e-6 * wide.grad.abs().max(), (error, drift)


def test_a_different_scalar_is_another_signature(daemon):
    g = aot_function(lambda x, s: x * s, server=daemon)
    x = torch.ones(2)
    assert torch.equal(g(x, 2.0), torch.full((2,), 2.0))
    assert torch.equal(g(x, 3.0), torch.full((2,), 3.0))
    assert len(g.cache_info()) == 2


def test_rng_eager_runs_random_functions_eagerly_bit_for_bit(daemon):
    def f(x):
        return F.dropout(x, 0.5, training=True) * 2

    g = aot_function(f, server=daemon, rng="eager")
    x = torch.randn(100)
    torch.manual_seed(7)
    got = g(x)
    torch.manual_seed(7)
    want = f(x)
    assert torch.equal(got, want)
    assert "random ops" in g.cache_info()[0]["eager"]  # Why it runs eagerly.


def test_aot_module_matches_eager(daemon):
    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    twin = copy.deepcopy(model)
    compiled = aot_module(model, server=daemon)
    x = torch.randn(4, 6)
    compiled(x).pow(2).sum().backward()
    twin(x).pow(2).sum().backward()
    for p, q in zip(model.parameters(), twin.parameters()):
        assert torch.allclose(p.grad, q.grad, rtol=1e-5, atol=1e-6)
    assert compiled.cache_info()[0]["mode"] == "training"


def test_an_unsupported_op_is_an_error_naming_it(daemon):
    g = aot_function(lambda x: torch.logcumsumexp(x, 0), server=daemon, fallback="error")
    with pytest.raises(CompileError, match="logcumsumexp.*fallback='error'"):
        g(torch.randn(4))


def test_every_unsupported_op_is_named_in_one_error(daemon):
    def f(x):
        return torch.logcumsumexp(x, 0) + torch.cummax(x, 0)[0] + torch.logcumsumexp(x * 2, 0)

    with pytest.raises(CompileError) as raised:
        aot_function(f, server=daemon, fallback="error")(torch.randn(4))
    message = str(raised.value)
    assert "2 unsupported ops" in message
    assert "'aten.logcumsumexp.default' (2 nodes" in message
    assert "'aten.cummax.default' (node" in message


def test_fallback_eager_runs_the_function_with_a_warning(daemon):
    def f(x):
        return torch.logcumsumexp(x, 0) + 1

    g = aot_function(f, server=daemon, fallback="eager")
    x = torch.randn(4)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = g(x)
    assert torch.equal(got, f(x))
    assert any("logcumsumexp" in str(w.message) for w in caught)
    assert "logcumsumexp" in g.cache_info()[0]["eager"]


def test_outputs_alias_the_callers_memory_and_inputs_are_not_copied(daemon):
    def f(x, w):
        return x.view(-1), (x * w).sum()

    g = aot_function(f, server=daemon)
    x = torch.randn(2, 3)
    w = torch.randn(2, 3, requires_grad=True)
    for _ in range(2):  # A miss, then a hit.
        flat, loss = g(x, w)
        assert flat.data_ptr() == x.data_ptr()
    # x is saved for backward as the caller's tensor: writing into it after
    # the forward is caught, as in eager.
    x.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def test_a_known_signature_runs_without_the_daemon(own_daemon):
    g = aot_function(lambda x: x.sin() * 2, server=own_daemon.target)
    x = torch.randn(3)
    g(x)
    own_daemon.stop()
    assert torch.equal(g(x), x.sin() * 2)  # No daemon any more: no round trip.
    assert g.cache_info()[0]["source"] == "server"


def test_compiling_changes_nothing_the_caller_can_observe(daemon):
    x = torch.randn(3, requires_grad=True).clone()
    version = x._version
    rng = torch.get_rng_state()
    g = aot_function(lambda a: a * 2, server=daemon)
    g(x)
    assert x._version == version
    assert torch.equal(torch.get_rng_state(), rng)


def test_a_two_layer_mlp_trains_as_in_eager(daemon):
    torch.manual_seed(3)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    twin = copy.deepcopy(model)
    compiled = aot_module(model, server=daemon)
    x, y = torch.randn(32, 8), torch.randn(32, 1)
    losses = {}
    for name, net, params in (("eager", twin, twin.parameters()),
                              ("aotcache", compiled, model.parameters())):
        opt = torch.optim.SGD(params, lr=0.05)
        losses[name] = []
        for _ in range(20):
            opt.zero_grad()
            loss = F.mse_loss(net(x), y)
            loss.backward()
            opt.step()
            losses[name].append(loss.item())
    assert losses["aotcache"][-1] < losses["aotcache"][0]
    for a, b in zip(losses["aotcache"], losses["eager"]):
        assert abs(a - b) <= 1e-4, losses


def test_two_processes_share_one_embedded_daemon(tmp_path):
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "xdg"))
    env.pop("AOTCACHE_SERVER", None)
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    procs = [subprocess.Popen([sys.executable, os.path.join(HERE, "embedded_client.py"),
                               str(barrier), str(i)], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for i in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err
    results = [out.split() for out, _ in outs]
    assert all(r[0] == "server" for r in results), results  # Neither fell back.
    assert results[0][1] == results[1][1]  # The same key.
    # What the client made (the cache home, the data dir, its artifacts'
    # dir) is its owner's alone.
    for made in ("xdg", "xdg/aotcache", "xdg/aotcache/client-artifacts"):
        assert (tmp_path / made).stat().st_mode & 0o777 == 0o700, made
    daemons = subprocess.run(["pgrep", "-f", "aotcached.*%s" % (tmp_path / "xdg")],
                             capture_output=True, text=True).stdout.split()
    try:
        assert len(daemons) == 1, daemons
    finally:
        for pid in daemons:
            os.kill(int(pid), 15)


def test_the_embedded_daemon_is_found_beside_the_package(tmp_path):
    """No AOTCACHED, no aotcached on PATH or beside the interpreter: the
    package starts the daemon built (or installed) beside it, not a fallback
    to compiling in process on the reference backend."""
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "xdg"), PATH="/usr/bin:/bin")
    env.pop("AOTCACHE_SERVER", None)
    env.pop("AOTCACHED", None)
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    (barrier / "other").touch()  # embedded_client.py waits for two.
    p = subprocess.run([sys.executable, os.path.join(HERE, "embedded_client.py"),
                        str(barrier), "0"], env=env, capture_output=True, text=True,
                       timeout=120)
    daemons = subprocess.run(["pgrep", "-f", "aotcached.*%s" % (tmp_path / "xdg")],
                             capture_output=True, text=True).stdout.split()
    try:
        assert p.returncode == 0, p.stderr
        assert p.stdout.split()[0] == "server", p.stdout + p.stderr
        assert len(daemons) == 1, daemons
    finally:
        for pid in daemons:
            os.kill(int(pid), 15)


@pytest.mark.parametrize("compiler", ["c++", "/nonexistent/c++"])
def test_compiling_in_process_uses_the_native_backend_and_warns_once(tmp_path, compiler):
    """No daemon answers: the function compiles in this process, with the
    native backend when the machine's compiler builds kernels (the
    reference backend ran a training step about 100x slower than eager),
    else on the reference backend, which the one warning says loudly. A
    log line names each new signature's source and backend."""
    script = """
import logging, warnings, torch
from aotcache.torch import aot_function
logging.basicConfig(level=logging.INFO, format="%%(message)s")
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    f = aot_function(lambda x: (x * 2).sum(), server="unix:%s")
    g = aot_function(lambda x: (x + 1).sum(), server="unix:%s")
    x = torch.randn(3, requires_grad=True)
    f(x).backward(); g(torch.randn(3))
    print(f.cache_info()[0]["source"], g.cache_info()[0]["source"],
          f.cache_info()[0]["backend"], g.cache_info()[0]["backend"])
    assert torch.equal(x.grad, torch.full((3,), 2.0))
print(sum("no daemon answered" in str(w.message) for w in caught),
      sum("REFERENCE" in str(w.message) for w in caught))
""" % (tmp_path / "none.sock", tmp_path / "none.sock")
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                       timeout=120, env=dict(os.environ, AOTCACHE_CXX=compiler))
    assert p.returncode == 0, p.stderr
    backend = "native" if compiler == "c++" else "reference"
    loud = "0" if compiler == "c++" else "1"
    assert p.stdout.split() == ["in_process", "in_process", backend, backend, "1", loud], \
        p.stdout + p.stderr
    assert p.stderr.count("a new signature, ") == 2, p.stderr
    assert "from in_process (%s backend)" % backend in p.stderr


def test_a_tensor_subclass_argument_runs_the_function_eagerly(daemon):
    """A wrapper subclass (torch's TwoTensor: its storage holds no data)
    raised from the call's signature and stopped the run (PyTorch's
    TestAOTAutograd.test_input_mutation_noncontiguous); it runs eagerly,
    with a warning naming it."""
    two_tensor = pytest.importorskip("torch.testing._internal.two_tensor")

    def f(a):
        a.mul_(2)
        return a + 1

    x = two_tensor.TwoTensor(torch.ones(3), torch.ones(3))
    twin = two_tensor.TwoTensor(torch.ones(3), torch.ones(3))
    with pytest.warns(UserWarning, match="tensor subclass .*TwoTensor"):
        out = aot_function(f, server=daemon)(x)
    want = f(twin)
    assert torch.equal(out.a, want.a) and torch.equal(out.b, want.b)
    assert torch.equal(x.a, twin.a)
