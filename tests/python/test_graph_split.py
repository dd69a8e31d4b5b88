"""A graph with ops aotcache cannot compile runs by default as compiled
segments with eager islands between them (graph_split.py): values,
gradients, version counters and in-place writes as eager's; cache_info()
names each island's op and reason; one warning per process; a warm process
finds the split under the front key without tracing (torch 2.x);
fallback="error" refuses, naming the op and the option."""

import copy
import warnings

import pytest
import torch
import torch.nn as nn

import aotcache.torch as aot_torch
from aotcache import graph_split
from aotcache.torch import CompileError, aot_function


def _lacking(x):
    """An op aotcache lacks, which torch does not decompose."""
    return torch.logcumsumexp(x, -1)


LACKING_OP = "aten.logcumsumexp.default"


@pytest.fixture
def fresh_warning(monkeypatch):
    monkeypatch.setattr(graph_split, "_warned", False)


def _islands(rows):
    return [r for r in rows if r["status"] == "eager"]


def _segments(rows):
    return [r for r in rows if "segment" in r]


def test_an_op_aotcache_lacks_runs_eagerly_between_compiled_segments(daemon, fresh_warning):
    def f(x, w):
        h = (x @ w).tanh()
        return (_lacking(h) * h).relu().sum()

    x = torch.randn(4, 5)
    w = torch.randn(5, 6, requires_grad=True)
    w_eager = w.detach().clone().requires_grad_()
    g = aot_function(f, server=daemon)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = g(x, w)
    want = f(x, w_eager)
    torch.testing.assert_close(got, want)
    got.backward()
    want.backward()
    torch.testing.assert_close(w.grad, w_eager.grad)
    messages = [str(m.message) for m in caught if "run eagerly" in str(m.message)]
    assert len(messages) == 1 and LACKING_OP in messages[0], messages
    rows = g.cache_info()
    assert [(r["op"], r["nodes"]) for r in _islands(rows)] == [(LACKING_OP, 1)]
    assert "aotcache has no " + LACKING_OP in _islands(rows)[0]["eager"]
    segments = _segments(rows)
    assert [r["segment"] for r in segments] == [0, 1]
    assert all(r["mode"] == "training" and r["key"] for r in segments), segments
    # Later calls run the same split, without a compile or a warning.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.testing.assert_close(g(x, w), f(x, w_eager))
    assert not [m for m in caught if "aotcache" in str(m.message)]
    assert g.cache_info() == rows


def test_the_warning_comes_once_per_process(daemon, fresh_warning):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        aot_function(lambda x: _lacking(x.sin()).cos(), server=daemon)(torch.randn(3))
        aot_function(lambda x: _lacking(x.cos()).sin(), server=daemon)(torch.randn(3))
    assert len([m for m in caught if "run eagerly" in str(m.message)]) == 1


def test_writes_across_the_boundaries_are_eagers(daemon):
    """An island reads what a segment wrote in place; a segment writes an
    input in place after an island read it; version counters move as in
    eager."""
    def f(x, state):
        y = x * 2
        y.add_(1)                   # a segment writes its own intermediate
        z = _lacking(y)             # the island reads it
        state.mul_(z.mean())        # the next segment writes an input
        return z + y, state.view(-1)[:2]

    x = torch.randn(3, 4)
    state, state_eager = torch.ones(2, 2), torch.ones(2, 2)
    g = aot_function(f, server=daemon)
    for _ in range(2):
        v, v_eager = state._version, state_eager._version
        got, want = g(x, state), f(x, state_eager)
        torch.testing.assert_close(got, want)
        torch.testing.assert_close(state, state_eager)
        assert state._version - v == state_eager._version - v_eager
        assert got[1]._base is state  # A view of the input, as eager's.


def test_reads_and_writes_keep_their_order(daemon):
    """The island reading x comes after the segment writing it, though no
    data flows from the write to the read (make_fx's later uses of x are
    the input itself): a split by data alone would run the read first."""
    def f(x, y):
        a = x * 2
        b = _lacking(y)
        x.add_(1)
        return a + b + _lacking(x)

    x, x_eager, y = torch.randn(3), torch.randn(3), torch.randn(3)
    x_eager.copy_(x)
    torch.testing.assert_close(aot_function(f, server=daemon)(x, y), f(x_eager, y))
    torch.testing.assert_close(x, x_eager)


def test_no_grad_inside_a_split_graph_runs_without_grad(daemon):
    def f(x, w):
        h = x @ w
        with torch.no_grad():
            scale = h.abs().amax()
        return _lacking(h / scale).sum()

    w = torch.randn(4, 4, requires_grad=True)
    w_eager = w.detach().clone().requires_grad_()
    x = torch.randn(3, 4)
    aot_function(f, server=daemon)(x, w).backward()
    f(x, w_eager).backward()
    torch.testing.assert_close(w.grad, w_eager.grad)


def test_a_module_trains_as_eager(daemon):
    torch.manual_seed(0)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(6, 8), nn.Linear(8, 2)

        def forward(self, x):
            return self.b(_lacking(self.a(x).relu()))

    model = Block()
    twin = copy.deepcopy(model)
    compiled = aot_torch.aot_module(model, server=daemon)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    opt_twin = torch.optim.AdamW(twin.parameters(), lr=1e-2)
    x = torch.randn(5, 6)
    for _ in range(3):
        for m, o in ((compiled, opt), (twin, opt_twin)):
            o.zero_grad()
            m(x).square().mean().backward()
            o.step()
    for p, q in zip(model.parameters(), twin.parameters()):
        torch.testing.assert_close(p, q)


def test_fallback_error_refuses_naming_the_op_and_the_option(daemon):
    g = aot_function(lambda x: _lacking(x) + 1, server=daemon, fallback="error")
    with pytest.raises(CompileError, match="logcumsumexp.*fallback='error'"):
        g(torch.randn(4))


@pytest.mark.skipif(not hasattr(torch, "compile"), reason="torch.compile needs torch 2")
def test_torch_compile_finds_the_split_under_its_front_key(daemon, tmp_path, monkeypatch):
    import aotcache.dynamo

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))

    def step():
        torch._dynamo.reset()
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(6, 8), nn.Tanh())
        x = torch.randn(5, 6)
        before = len(aotcache.dynamo.cache_info())
        compiled = torch.compile(lambda x: _lacking(model(x)).sum(), backend="aotcache",
                                 options={"server": daemon})
        got = compiled(x)
        got.backward()
        grads = [p.grad for p in model.parameters()]
        for p in model.parameters():
            p.grad = None
        want = _lacking(model(x)).sum()
        want.backward()
        torch.testing.assert_close(got, want)
        for g, p in zip(grads, model.parameters()):
            torch.testing.assert_close(g, p.grad)
        return aotcache.dynamo.cache_info()[before:]

    cold = step()
    assert _islands(cold) and all(r["front"] == "miss" for r in cold), cold
    assert all(r["trace_ms"] > 0 for r in _segments(cold))
    warm = step()
    assert [r["key"] for r in _segments(warm)] == [r["key"] for r in _segments(cold)]
    assert all(r["front"] == "hit" and r["trace_ms"] == 0 for r in warm), warm


def test_what_cannot_be_traced_runs_eagerly_by_default(daemon):
    """A forward hook (which a compiled call would skip): the module runs
    eagerly, its hook called, with a warning and the reason in cache_info()."""
    calls = []
    m = nn.Linear(3, 3)
    m.register_forward_hook(lambda mod, i, o: calls.append(1))
    compiled = aot_torch.aot_module(m, server=daemon)
    x = torch.randn(2, 3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.testing.assert_close(compiled(x), m(x))
    assert calls == [1, 1]
    assert any("running" in str(w.message) and "eagerly" in str(w.message) for w in caught)
    assert "forward hooks" in compiled.cache_info()[0]["eager"]


def test_an_op_without_a_derivative_runs_eagerly_where_eager_differentiates(daemon):
    """_softmax_backward_data (a double backward): aotcache has no
    derivative of it, eager has; its gradient comes from eager."""
    def f(g, x):
        y = torch.softmax(x, -1)
        return torch.ops.aten._softmax_backward_data(g, y, -1, torch.float32).sin().sum()

    g = torch.randn(3, 4, requires_grad=True)
    g_eager = g.detach().clone().requires_grad_()
    x = torch.randn(3, 4)
    compiled = aot_function(f, server=daemon)
    compiled(g, x).backward()
    f(g_eager, x).backward()
    torch.testing.assert_close(g.grad, g_eager.grad)
    islands = _islands(compiled.cache_info())
    assert [r["op"] for r in islands] == ["aten._softmax_backward_data.default"]
    assert "no derivative" in islands[0]["eager"]


def test_sign_gives_a_zero_gradient_as_eager(daemon):
    x = torch.randn(5, requires_grad=True)
    out = aot_function(lambda x: x.sign(), server=daemon, fallback="error")(x)
    assert out.requires_grad
    out.sum().backward()
    assert torch.equal(x.grad, torch.zeros(5))


def test_a_daemons_refusal_names_the_nodes_to_split_at(daemon):
    """A daemon whose registry lacks what this client's has (another
    release) refuses naming the node, or the ops when there are several:
    those nodes are where the graph splits."""
    import json

    import aotcache
    from aotcache import _binding, fx_export, graph_split

    def one(x):
        return _lacking(x.sin()).cos()

    def several(x):
        return _lacking(x) + torch.cummax(x, 0)[0] + _lacking(x * 2)

    for f, want in ((one, [LACKING_OP]),
                    (several, ["aten.cummax.default", LACKING_OP, LACKING_OP])):
        exported = fx_export.export_function(f, [torch.randn(4)])
        with pytest.raises(aotcache.InvalidArgument) as raised:
            _binding.Client(daemon).compile(json.dumps(exported.graph))
        named = graph_split.refused_nodes(exported.traced, str(raised.value))
        assert sorted(str(n.target) for n in named) == want, str(raised.value)
