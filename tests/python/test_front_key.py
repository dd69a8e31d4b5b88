"""Front keys (torch 2.x): a torch.compile graph compiled before, with the same
signature and switches, skips its make_fx trace; anything the trace depends
on changes the key; a record that cannot be used, or a directory another
user could write, costs a trace and never serves another graph. The zoo's
warm processes (test_zoo.py) check that every graph is a front hit there."""

import copy
import glob
import os

import pytest
import torch
import torch.nn as nn

if not hasattr(torch, "compile"):
    pytest.skip("torch.compile needs torch 2", allow_module_level=True)

import aotcache.dynamo  # noqa: E402
from aotcache import front_key  # noqa: E402


@pytest.fixture(autouse=True)
def private_front_keys(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    torch._dynamo.reset()
    yield os.path.join(str(tmp_path), "aotcache", "front-keys")
    torch._dynamo.reset()


def _model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 8), nn.LayerNorm(8), nn.GELU(), nn.Linear(8, 3))


def _step(daemon, model=None, x=None):
    """One training step through torch.compile in a fresh Dynamo, against
    eager; the new graph's cache_info row."""
    torch._dynamo.reset()
    model = model or _model()
    eager = copy.deepcopy(model)
    x = torch.randn(5, 6) if x is None else x
    before = len(aotcache.dynamo.cache_info())
    compiled = torch.compile(model, backend="aotcache", options={"server": daemon})
    got, want = compiled(x), eager(x)
    got.square().sum().backward()
    want.square().sum().backward()
    torch.testing.assert_close(got, want)
    for p, q in zip(model.parameters(), eager.parameters()):
        torch.testing.assert_close(p.grad, q.grad)
    rows = aotcache.dynamo.cache_info()[before:]
    assert len(rows) == 1, rows
    return rows[0]


def test_a_graph_compiled_before_skips_its_trace(daemon, private_front_keys):
    cold = _step(daemon)
    assert (cold["front"], cold["status"]) == ("miss", "miss")
    assert cold["trace_ms"] > 0
    warm = _step(daemon)
    assert (warm["front"], warm["status"], warm["trace_ms"]) == ("hit", "hit", 0)
    assert warm["key"] == cold["key"]
    assert warm["mode"] == "training"


def test_what_the_trace_depends_on_changes_the_key(daemon):
    _step(daemon)
    assert _step(daemon, x=torch.randn(7, 6))["front"] == "miss"  # another shape
    with torch.no_grad():
        torch._dynamo.reset()
        before = len(aotcache.dynamo.cache_info())
        torch.compile(_model(), backend="aotcache", options={"server": daemon})(
            torch.randn(5, 6))
        row = aotcache.dynamo.cache_info()[before]
    assert (row["front"], row["mode"]) == ("miss", "inference")  # grad mode
    previous = torch.backends.mkldnn.enabled
    torch.backends.mkldnn.enabled = not previous
    try:
        assert _step(daemon)["front"] == "miss"  # a switch make_fx reads
    finally:
        torch.backends.mkldnn.enabled = previous
    frozen = _model()
    frozen[0].weight.requires_grad_(False)
    assert _step(daemon, model=frozen)["front"] == "miss"  # requires_grad


def test_graph_material_names_calls_and_constants_not_nodes():
    def f(x, y):
        return torch.relu(x @ y + 2.5).sum(dim=1)

    def g(a, b):  # The same calls under other names.
        return torch.relu(a @ b + 2.5).sum(dim=1)

    def h(x, y):  # Another constant.
        return torch.relu(x @ y + 2.25).sum(dim=1)

    material = [front_key.graph_material(torch.fx.symbolic_trace(fn)) for fn in (f, g, h)]
    assert material[0] is not None
    assert material[0] == material[1]
    assert material[0] != material[2]


def _user_function(x):
    return x * 2


torch.fx.wrap("_user_function")


def test_a_call_outside_torch_or_a_submodule_has_no_front_key():
    def f(x):
        return _user_function(x) + 1

    assert front_key.graph_material(torch.fx.symbolic_trace(f)) is None
    assert front_key.graph_material(torch.fx.symbolic_trace(nn.Linear(2, 2))) is None
    graph = torch.fx.Graph()  # A dict argument whose keys do not sort.
    x = graph.placeholder("x")
    graph.output(graph.call_function(torch.add, (x, x), {"alpha": {1: 2, "a": 3}}))
    assert front_key.graph_material(torch.fx.GraphModule(nn.Module(), graph)) is None


def test_a_record_that_cannot_be_used_costs_a_trace(daemon, private_front_keys):
    _step(daemon)
    (record,) = glob.glob(os.path.join(private_front_keys, "*.json"))
    with open(record, "w") as f:
        f.write('{"format": 1, "graph": "{not json"')
    assert _step(daemon)["front"] == "miss"
    assert _step(daemon)["front"] == "hit"  # Written anew by that trace.
    with open(record) as f:
        text = f.read()
    with open(record, "w") as f:  # Another constant in the graph: no longer its digest.
        f.write(text.replace("DTYPE_FLOAT32", "DTYPE_FLOAT64", 1))
    assert _step(daemon)["front"] == "miss"
    os.remove(record)
    _step(daemon)
    (five_rows,) = glob.glob(os.path.join(private_front_keys, "*.json"))
    _step(daemon, x=torch.randn(7, 6))
    (seven_rows,) = set(glob.glob(os.path.join(private_front_keys, "*.json"))) - {five_rows}
    with open(five_rows) as src, open(seven_rows, "w") as dst:
        dst.write(src.read())  # A record under another key: not served.
    assert _step(daemon, x=torch.randn(7, 6))["front"] == "miss"


def test_a_directory_others_can_write_is_not_read(daemon, private_front_keys):
    _step(daemon)
    os.chmod(private_front_keys, 0o777)
    try:
        assert _step(daemon)["front"] == "miss"
        assert _step(daemon)["front"] == "miss"
    finally:
        os.chmod(private_front_keys, 0o700)
    assert _step(daemon)["front"] == "hit"
