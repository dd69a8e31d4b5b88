"""What eager reads anew at every call, a compiled call must read too: a
module's train/eval mode, its plain attributes, its parameters and buffers
written outside the function, plain globals. Each test failed silently on a
landed main (issue 22, items 1, 2 and 5b); eager is the oracle."""

import copy
import dataclasses
import types

import pytest
import torch
import torch.nn as nn

from aotcache.torch import CompileError, aot_function, aot_module

SCALE = 2.0


def _bn_dropout_mlp() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(0.5),
                         nn.Linear(16, 2))


def test_eval_after_training_with_grad_on_runs_the_eval_graph(daemon):
    eager = _bn_dropout_mlp()
    compiled = copy.deepcopy(eager)
    cm = aot_module(compiled, server=daemon)
    x = torch.randn(32, 8)
    cm(x).sum().backward()
    eager(x).sum().backward()  # the same running statistics update
    eager.eval()
    cm.eval()
    mean_before = compiled[1].running_mean.clone()
    got, want = cm(x), eager(x)  # grad on: a validation loss without no_grad
    assert torch.allclose(got, want, atol=1e-6), (got - want).abs().max()
    assert torch.equal(compiled[1].running_mean, mean_before)
    assert torch.allclose(compiled[1].running_mean, eager[1].running_mean)
    assert [row["mode"] for row in cm.cache_info()] == ["training", "training"]


def test_training_after_an_eval_call_updates_the_running_statistics(daemon):
    eager = _bn_dropout_mlp()[:3]  # no dropout: values comparable
    compiled = copy.deepcopy(eager)
    cm = aot_module(compiled, server=daemon)
    x = torch.randn(32, 8)
    eager.eval()
    cm.eval()
    assert torch.allclose(cm(x), eager(x), atol=1e-6)
    eager.train()
    cm.train()
    for _ in range(2):
        assert torch.allclose(cm(x), eager(x), atol=1e-5)
    assert torch.allclose(compiled[1].running_mean, eager[1].running_mean, atol=1e-6)
    assert int(compiled[1].num_batches_tracked) == 2
    # Back and forth: each mode's graph is kept, none compiled again.
    cm.eval()
    cm(x)
    assert len(cm.cache_info()) == 2


def test_a_plain_attribute_read_in_forward_is_read_at_every_call(daemon):
    class Tempered(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)
            self.temperature = 1.0

        def forward(self, x):
            return (self.lin(x) / self.temperature).softmax(-1)

    torch.manual_seed(0)
    m = Tempered()
    cm = aot_module(m, server=daemon)
    x = torch.randn(2, 4)
    for t in (1.0, 0.1, 1.0):
        m.temperature = t
        assert torch.allclose(cm(x), m(x), atol=1e-6)
    assert len(cm.cache_info()) == 2


@dataclasses.dataclass
class _Inner:
    scale: float = 1.0


@dataclasses.dataclass
class _Config:
    temperature: float = 1.0
    inner: _Inner = dataclasses.field(default_factory=_Inner)
    unread: int = 0


@dataclasses.dataclass(frozen=True)
class _Frozen:
    shift: float = 0.0


class _Slotted:
    __slots__ = ("__dict__", "bias")  # a __dict__ beside slots: no class swap

    def __init__(self):
        self.bias = 0.0
        self.offset = 0.0


class _Configured(nn.Module):
    def __init__(self, config, frozen, slotted):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.config = config
        self.frozen = frozen
        self.slotted = slotted

    def forward(self, x):
        y = self.lin(x) / self.config.temperature * self.config.inner.scale
        return y + self.frozen.shift + self.slotted.offset


def test_attributes_of_objects_a_module_holds_are_read_at_every_call(daemon):
    torch.manual_seed(0)
    config = _Config()
    m = _Configured(config, _Frozen(), _Slotted())
    cm = aot_module(m, server=daemon)
    x = torch.randn(2, 4)
    changes = [
        lambda: setattr(config, "temperature", 0.1),        # an attribute
        lambda: setattr(config.inner, "scale", 3.0),        # a nested one
        lambda: setattr(m, "config", _Config(temperature=2.0)),  # the object
        lambda: setattr(m, "frozen", dataclasses.replace(m.frozen, shift=1.0)),
        lambda: setattr(m.slotted, "offset", 5.0),
    ]
    assert torch.allclose(cm(x), m(x), atol=1e-6)
    for n, change in enumerate(changes):
        change()
        got, want = cm(x), m(x)
        assert torch.allclose(got, want, atol=1e-6), (n, (got - want).abs().max())
    assert len(cm.cache_info()) == 1 + len(changes)
    # An attribute the trace did not read changes nothing.
    m.config.unread = 7
    cm(x)
    assert len(cm.cache_info()) == 1 + len(changes)
    # The trace left the objects' classes as they were.
    assert type(m.config) is _Config and type(m.frozen) is _Frozen
    assert "_aotcache_reads" not in vars(m.config)


def test_attributes_of_a_global_object_are_read_at_every_call(daemon):
    settings = types.SimpleNamespace(scale=2.0)
    g = aot_function(lambda x: x * settings.scale, server=daemon)
    x = torch.ones(3)
    assert torch.equal(g(x), torch.full((3,), 2.0))
    settings.scale = 5.0
    assert torch.equal(g(x), torch.full((3,), 5.0))


def test_a_plain_global_read_by_the_function_is_read_at_every_call(daemon):
    global SCALE
    g = aot_function(lambda x: x * SCALE, server=daemon)
    x = torch.ones(3)
    try:
        assert torch.equal(g(x), torch.full((3,), 2.0))
        SCALE = 5.0
        assert torch.equal(g(x), torch.full((3,), 5.0))
    finally:
        SCALE = 2.0


def test_module_state_written_outside_the_function_is_never_stale(daemon):
    """Running statistics updated by eager training steps (torch 1.13's
    batch norm does not move their version counter) were baked into the
    graph as constants."""
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 2))
    m.eval()
    predict = aot_function(lambda x: m(x), server=daemon)
    x = torch.randn(32, 8)
    with torch.no_grad():
        assert torch.allclose(predict(x), m(x), atol=1e-6)
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    for _ in range(2):
        m.train()
        m(torch.randn(32, 8) * 3 + 1).sum().backward()
        opt.step()
        opt.zero_grad()
        m.eval()
        with torch.no_grad():
            got, want = predict(x), m(x)
        assert torch.allclose(got, want, rtol=1e-5, atol=1e-5), (got - want).abs().max()
    assert len(predict.cache_info()) == 1


def test_an_ema_copy_updated_every_step_compiles_once(daemon):
    torch.manual_seed(0)
    model = nn.Linear(4, 4)
    ema = copy.deepcopy(model).requires_grad_(False)
    f = aot_function(lambda x: ema(x), server=daemon)
    x = torch.randn(3, 4)
    for _ in range(4):
        with torch.no_grad():
            model.weight.add_(0.1)
            for e, p in zip(ema.parameters(), model.parameters()):
                e.mul_(0.9).add_(p, alpha=0.1)
        assert torch.allclose(f(x), ema(x), atol=1e-6)
    assert len(f.cache_info()) == 1


def test_a_plain_tensor_attribute_is_an_input_not_a_constant(daemon):
    class WithTable(nn.Module):
        def __init__(self):
            super().__init__()
            self.table = torch.zeros(3)  # neither a parameter nor a buffer

        def forward(self, x):
            return x + self.table

    m = WithTable()
    cm = aot_module(m, server=daemon)
    x = torch.ones(3)
    assert torch.equal(cm(x), torch.ones(3))
    m.table.data.add_(1.0)  # no version bump
    assert torch.equal(cm(x), torch.full((3,), 2.0))
    m.table = torch.full((3,), 5.0)  # another tensor
    assert torch.equal(cm(x), torch.full((3,), 6.0))


def test_hooks_on_a_compiled_module_are_refused_naming_the_module(daemon):
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    calls = []
    handle = m[0].register_forward_hook(lambda mod, i, o: calls.append(1))
    cm = aot_module(m, server=daemon, fallback="error")
    with pytest.raises(CompileError, match=r"0 \(Linear\) has forward hooks"):
        cm(torch.randn(2, 4))
    handle.remove()
    x = torch.randn(2, 4)
    assert torch.allclose(cm(x), m(x))
    # A hook added after the compile is refused too, not silently skipped.
    m[0].register_forward_pre_hook(lambda mod, i: None)
    with pytest.raises(CompileError, match="forward pre hooks"):
        cm(x)


def test_backward_hooks_are_refused_as_forward_hooks_are(daemon):
    """Eager runs them in the backward; the compiled backward would not."""
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    cm = aot_module(m, server=daemon, fallback="error")
    x = torch.randn(2, 4)
    cm(x)
    handle = m[1].register_full_backward_hook(lambda mod, gi, go: None)
    with pytest.raises(CompileError, match=r"1 \(ReLU\) has backward hooks"):
        cm(x)
    handle.remove()
    cm(x)
    if hasattr(m[1], "register_full_backward_pre_hook"):  # torch 2.x
        m[1].register_full_backward_pre_hook(lambda mod, go: None)
        with pytest.raises(CompileError, match="backward pre hooks"):
            cm(x)


def test_hooks_with_fallback_eager_run_as_in_eager(daemon):
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    calls = []
    m[0].register_forward_hook(lambda mod, i, o: calls.append(1))
    cm = aot_module(m, server=daemon, fallback="eager")
    with pytest.warns(UserWarning, match="hooks"):
        cm(torch.randn(2, 4))
    cm(torch.randn(2, 4))
    assert len(calls) == 2
    assert "forward hooks" in cm.cache_info()[0]["eager"]


def test_state_dict_has_the_modules_own_keys(daemon):
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4))
    cm = aot_module(m, server=daemon)
    assert list(cm.state_dict()) == list(m.state_dict())
    plain = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4))
    plain.load_state_dict(cm.state_dict())
    other = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4))
    cm.load_state_dict(other.state_dict())
    assert torch.equal(m[0].weight, other[0].weight)
    assert getattr(cm, "0") is m[0]  # attributes reach the module
