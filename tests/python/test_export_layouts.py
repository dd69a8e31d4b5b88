"""The layouts the exporter reads off the trace (every node's output_meta)
against the oracle: the traced graph run again with torch.fx.Interpreter
on fresh copies of the inputs, each node's results measured as they come.
For every scenario of the fixtures and every zoo model, with and without
grad."""

import operator
import os
import sys

import pytest
import torch
import torch.fx

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "fixtures"))

import scenarios  # noqa: E402
import zoo  # noqa: E402
from aotcache import input_copies, torch_version  # noqa: E402


def _layout(t):
    return (tuple(t.shape), t.stride(), t.storage_offset(), t.dtype, t.device)


class _Rerun(torch.fx.Interpreter):
    def __init__(self, gm):
        super().__init__(gm)
        self.layouts = {}

    def run_node(self, n):
        result = super().run_node(n)
        if isinstance(result, torch.Tensor):
            self.layouts[n.name] = [_layout(result)]
        elif isinstance(result, (tuple, list)):
            self.layouts[n.name] = [_layout(r) for r in result if isinstance(r, torch.Tensor)]
        else:
            self.layouts[n.name] = []
        return result


def _check(fn, args):
    spans = input_copies.storage_spans(args)  # as aot_function traces
    gm = torch_version.trace(fn, input_copies.copy_inputs(args, spans))
    rerun = _Rerun(gm)
    with torch.no_grad():
        rerun.run(*input_copies.copy_inputs(args, spans))
    nodes = [n for n in gm.graph.nodes if n.op == "call_function"]
    assert nodes
    for n in nodes:
        layouts = torch_version.result_layouts(n)
        # mkldnn_rnn_layer's workspace for oneDNN's backward (its fourth
        # result) exists only under grad.
        if n.target is _MKLDNN_RNN_LAYER:
            layouts = layouts[:3]
        elif n.target is operator.getitem and n.args[0].target is _MKLDNN_RNN_LAYER \
                and n.args[1] == 3:
            layouts = []
        assert layouts == rerun.layouts[n.name], n.format_node()
    return nodes


_MKLDNN_RNN_LAYER = getattr(torch.ops.aten, "mkldnn_rnn_layer", None)
_MKLDNN_RNN_LAYER = getattr(_MKLDNN_RNN_LAYER, "default", None)


@pytest.mark.parametrize("variant", [v for v in scenarios.VARIANTS if v.hand_graph is None],
                         ids=lambda v: v.name)
def test_scenario_layouts_are_the_reruns(variant):
    with torch.set_grad_enabled(variant.caller_grad):
        _check(variant.fn, variant.fresh_inputs())


@pytest.mark.parametrize("name", sorted(zoo.ZOO))
def test_zoo_layouts_are_the_reruns(name):
    torch.manual_seed(0)
    w = zoo.ZOO[name](0.0)
    module = w.module.train()
    params = list(module.parameters()) + list(module.buffers())
    n = len(params)

    def call(*flat):
        names = [k for k, _ in module.named_parameters()] + [k for k, _ in module.named_buffers()]
        return torch_version.functional_call(module, dict(zip(names, flat[:n])), flat[n:])

    nodes = _check(call, params + list(w.inputs))
    # Multi-output ops (batch norm, max pool, split) are read through getitem.
    assert any(n.target is operator.getitem for n in nodes) or name == "mlp"
