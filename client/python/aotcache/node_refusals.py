"""Which nodes of a traced ATen graph an aotcache graph cannot hold, and
why: an op outside the registry, an argument or a result graph_values
cannot write, or an op aotcache has no derivative of whose result eager
would differentiate. graph_split.py splits a graph at them.

Thread-safety: pure functions.
"""

import operator
from typing import Dict, FrozenSet, List

import torch
import torch.fx

from . import custom_functions
from .errors import ExportError
from .graph_values import argument, declared_layouts, layout_meta, without_fractional_scales
from .torch_version import GRAD_META_KEY, op_name, result_layouts


def refusals(gm: torch.fx.GraphModule, inputs: List[torch.Tensor], supported: FrozenSet[str],
             nondifferentiable: FrozenSet[str]) -> Dict[torch.fx.Node, str]:
    """The call nodes of traced graph `gm` (traced on `inputs`) that an
    aotcache graph cannot hold (an op outside `supported`, an argument or
    a result it cannot express, an op of `nondifferentiable` whose result
    eager would differentiate), each with why."""
    refused: Dict[torch.fx.Node, str] = {}
    tracked = _requiring_grad(gm, inputs)
    for n in gm.graph.nodes:
        if n.op != "call_function" or n.target is operator.getitem:
            continue
        try:
            op = op_name(n.target)
            if custom_functions.is_region(n.target):
                region = custom_functions.lookup(n.args[1])
                refused[n] = "%s, %s" % (region.name, "its forward and backward compiled on "
                                         "their own" if region.compiled else
                                         "run through its own apply")
                continue
            if op not in supported:
                refused[n] = "aotcache has no %s" % op
                continue
            if op in nondifferentiable and n in tracked:
                refused[n] = "aotcache has no derivative of %s, which eager differentiates" % op
                continue
            where = "node %s (%s)" % (n.name, op)
            _, args = without_fractional_scales(op, n.args, n)
            for a in list(args) + list(n.kwargs.values()):
                argument(a, where)
            for layout in declared_layouts(n):
                layout_meta(layout, "result of node %s" % n.name)
        except ExportError as e:
            refused[n] = str(e)
    return refused


def _requiring_grad(gm: torch.fx.GraphModule, inputs: List[torch.Tensor]) -> set:
    """The nodes of traced graph `gm` whose floating results autograd may
    track in eager: made under grad mode from a tensor it tracks (an input
    or captured tensor that requires grad, or such a result; a tensor
    written in place from one, for its uses after the write). An
    over-estimate (eager tracks no result of a random op, say), which costs
    an island, never a gradient."""
    tracked = set()
    placeholders = iter(inputs)
    for n in gm.graph.nodes:
        if n.op == "placeholder":
            value = next(placeholders, None)
        elif n.op == "get_attr":
            value = getattr(gm, n.target)
        else:
            value = None
        if isinstance(value, torch.Tensor) and value.requires_grad:
            tracked.add(n)
        if n.op != "call_function":
            continue
        reads = n.all_input_nodes
        if n.target is operator.getitem:
            if reads and reads[0] in tracked:
                tracked.add(n)
            continue
        if op_name(n.target).split(".")[1].endswith("_like"):
            continue  # empty_like, rand_like, ...: fresh tensors, no history.
        layouts = result_layouts(n)
        if n.meta.get(GRAD_META_KEY) and any(a in tracked for a in reads) and \
                any(layout[3].is_floating_point for layout in layouts):
            tracked.add(n)
            schema = getattr(n.target, "_schema", None)
            if schema is not None and schema.is_mutable and reads:
                tracked.add(reads[0])
    return tracked
