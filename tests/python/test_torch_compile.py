"""torch.compile(model, backend="aotcache") (torch 2.x): Dynamo hands each
captured graph to aotcache, found through the package's entry point. Values,
gradients and buffers equal eager's through graph breaks, recompiles on
guard failure, eval under no_grad (inference mode) and optimizer steps
outside the graph; dynamic shapes run eagerly with one warning naming the
reason. The zoo's runs are in test_zoo.py."""

import copy
import warnings

import pytest
import torch
import torch.nn as nn

if not hasattr(torch, "compile"):
    pytest.skip("torch.compile needs torch 2", allow_module_level=True)

import aotcache.dynamo  # noqa: E402


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def _rows_since(before):
    return aotcache.dynamo.cache_info()[before:]


class TwoParts(nn.Module):
    """A graph break between two parts: Dynamo makes two graphs."""

    def __init__(self):
        super().__init__()
        self.a = nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.ReLU())
        self.b = nn.Linear(8, 3)
        self.scale = 1.0

    def forward(self, x):
        h = self.a(x)
        torch._dynamo.graph_break()
        return self.b(h) * self.scale


def _train_both(make, steps, daemon, *, change=None):
    torch.manual_seed(0)
    eager = make()
    model = copy.deepcopy(eager)
    compiled = torch.compile(model, backend="aotcache", options={"server": daemon})
    # SGD: Adam would turn the rounding noise of the gradient of the bias
    # before the batch norm (0 in exact arithmetic) into steps of lr.
    opts = [torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9, weight_decay=0.1)
            for m in (model, eager)]
    for step in range(steps):
        if change is not None:
            change(step, eager)
            change(step, model)
        x = torch.randn(16, 6)
        losses = [m(x).square().mean() for m in (compiled, eager)]
        for loss, opt in zip(losses, opts):
            loss.backward()
            opt.step()
            opt.zero_grad()
        assert torch.allclose(losses[0], losses[1], atol=1e-6), step
        for p, q in zip(list(model.parameters()) + list(model.buffers()),
                        list(eager.parameters()) + list(eager.buffers())):
            assert torch.allclose(p.double(), q.double(), atol=1e-5), step
    return model, eager, compiled


def test_graph_breaks_train_as_eager(daemon):
    before = len(aotcache.dynamo.cache_info())
    _train_both(TwoParts, 3, daemon)
    rows = _rows_since(before)
    assert len({r["graph"] for r in rows}) == 2, rows
    assert all(r["mode"] == "training" and r["source"] == "server" for r in rows), rows


def test_a_guard_failure_recompiles(daemon):
    def change(step, m):
        m.scale = 0.5 if step >= 2 else 1.0

    before = len(aotcache.dynamo.cache_info())
    _train_both(TwoParts, 4, daemon, change=change)
    # Dynamo's guard on `scale` makes a third graph for the second part.
    assert len({r["graph"] for r in _rows_since(before)}) == 3


def test_eval_under_no_grad_is_inference_mode(daemon):
    model, eager, compiled = _train_both(TwoParts, 1, daemon)
    before = len(aotcache.dynamo.cache_info())
    model.eval()
    eager.eval()
    x = torch.randn(16, 6)  # The training batch's size: no dynamic shapes.
    with torch.no_grad():
        got, want = compiled(x), eager(x)
    assert torch.allclose(got, want, atol=1e-6)
    assert not got.requires_grad
    rows = _rows_since(before)
    assert rows and all(r["mode"] == "inference" for r in rows), rows


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_transformer_encoder_fast_path_in_eval_under_no_grad(daemon, norm_first, activation):
    # Eval under no_grad takes nn.TransformerEncoderLayer's fast path:
    # Dynamo records aten._transformer_encoder_layer_fwd, recorded by
    # aotcache as the slow path's ops (aotcache/fast_paths.py), masks too.
    torch.manual_seed(0)
    eager = nn.TransformerEncoder(
        nn.TransformerEncoderLayer(16, 4, 32, dropout=0.1, activation=activation,
                                   batch_first=True, norm_first=norm_first),
        num_layers=2, enable_nested_tensor=False).eval()
    compiled = torch.compile(copy.deepcopy(eager), backend="aotcache",
                             options={"server": daemon})
    x = torch.randn(3, 5, 16)
    padding = torch.tensor([[False] * 5, [False] * 3 + [True] * 2, [True] * 5])
    causal = torch.triu(torch.ones(5, 5, dtype=torch.bool), diagonal=1)
    # No mask; a key padding mask (the last sample all padding: NaN there,
    # as eager's); a causal mask with it (Dynamo breaks the graph to test
    # whether it is causal); a float padding mask; the causal mask alone.
    for kw in (dict(), dict(src_key_padding_mask=padding),
               dict(mask=causal, src_key_padding_mask=padding),
               dict(src_key_padding_mask=padding.float() * -1e9), dict(mask=causal)):
        before = len(aotcache.dynamo.cache_info())
        with torch.no_grad():
            got, want = compiled(x, **kw), eager(x, **kw)
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5, equal_nan=True)
        rows = _rows_since(before)
        assert all(r["mode"] == "inference" and not r["eager"] for r in rows), rows


def test_dynamic_shapes_run_eagerly_with_one_warning(daemon, monkeypatch):
    monkeypatch.setattr(aotcache.dynamo, "_warned", set())
    f = torch.compile(lambda x: (x * 2).relu().sum(1), backend="aotcache",
                      options={"server": daemon}, dynamic=True)
    before = len(aotcache.dynamo.cache_info())
    with pytest.warns(UserWarning, match="dynamic shapes") as caught:
        for n in (3, 4, 5):
            x = torch.randn(n, 4)
            assert torch.allclose(f(x), (x * 2).relu().sum(1))
    assert len([w for w in caught if "aotcache" in str(w.message)]) == 1
    assert _rows_since(before) == []


def test_a_size_that_changes_compiles_the_first_and_runs_the_rest_eagerly(daemon,
                                                                            monkeypatch):
    monkeypatch.setattr(aotcache.dynamo, "_warned", set())
    f = torch.compile(lambda x: (x * 3).sum(0), backend="aotcache",
                      options={"server": daemon})
    before = len(aotcache.dynamo.cache_info())
    x = torch.randn(3, 4)
    assert torch.allclose(f(x), (x * 3).sum(0))
    with pytest.warns(UserWarning, match="dynamic shapes"):
        y = torch.randn(5, 4)
        assert torch.allclose(f(y), (y * 3).sum(0))
    assert len(_rows_since(before)) == 1


def test_dynamic_false_compiles_each_size(daemon):
    f = torch.compile(lambda x: (x * 3).sum(0), backend="aotcache",
                      options={"server": daemon}, dynamic=False)
    before = len(aotcache.dynamo.cache_info())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for n in (3, 5):
            x = torch.randn(n, 4)
            assert torch.allclose(f(x), (x * 3).sum(0))
    assert len(_rows_since(before)) == 2


def test_an_unknown_option_is_refused_naming_it():
    f = torch.compile(lambda x: x + 1, backend="aotcache", options={"sever": "unix:x"})
    with pytest.raises(Exception, match="unknown option.*sever"):
        f(torch.ones(2))


class NumberMinusTensor(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(6, 6)

    def forward(self, x):
        gate = torch.sigmoid(self.lin(x))
        return (1 - gate) * x + (0.5 - 2 * gate)


def test_a_number_minus_a_tensor_compiles_whole(daemon):
    """`1 - t` reaches the backend as rsub, which torch's core decomposition
    writes as sub(1, t), a number as sub's self that no graph takes: it ran
    as an eager island until rsub got a decomposition of aotcache's."""
    before = len(aotcache.dynamo.cache_info())
    _train_both(NumberMinusTensor, 3, daemon)
    rows = _rows_since(before)
    assert rows and all(r["status"] != "eager" and not r.get("op") for r in rows), rows
