"""A traced ATen graph split at the nodes aotcache cannot compile: compiled
segments, each compiled on its own as aot_function compiles a function (its
own cache entry, analysis and lazy backward), and eager islands between them,
which run through torch with autograd, as eager runs them.

The split is torch's CapabilityBasedPartitioner (as ONNX Runtime's
torch.compile backend uses it) over the nodes aotcache compiles: an op of
its registry (decompositions included, `supported_ops()`) whose arguments
and results a graph can express (fx_export.refusals). The partitioner
groups them into as few segments as the dependencies allow (never a cycle
between a segment and an island). It orders nodes by their data alone, so
a graph that writes a tensor in place (whose later reads do not depend on
the write in the graph) splits instead into the runs of compiled nodes
between eager ones, in the traced order.

The split graph is a torch.fx.GraphModule whose segments are submodules
(`_Segment`) and whose islands are the traced ATen calls themselves, on
the caller's tensors: mutations, views and version counters across the
boundaries are eager's, since each segment changes what one eager call of
its ops changes.

A segment the daemon refuses (a node it cannot compile with these arguments:
the error names the node) splits again, inside its own compiled function.

Thread-safety: a SplitGraph may run from several threads (segments compile
under their own locks).
"""

import collections
import functools
import logging
import operator
import re
import warnings
from typing import Any, Callable, Dict, FrozenSet, List, Optional, Tuple

import torch
import torch.fx
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner, Partition
from torch.fx.passes.operator_support import OperatorSupportBase

from ._binding import nondifferentiable_ops as _nondifferentiable_ops
from ._binding import supported_ops as _registry_ops
from . import custom_functions, traced_graph_json
from .torch_version import GRAD_META_KEY, op_name

@functools.lru_cache(maxsize=None)
def supported_ops() -> FrozenSet[str]:
    """The ops this build of aotcache compiles, in torch's printed form."""
    return frozenset(_registry_ops())


@functools.lru_cache(maxsize=None)
def nondifferentiable_ops() -> FrozenSet[str]:
    """Those of them it has no derivative of: one whose result eager
    differentiates runs eagerly."""
    return frozenset(_nondifferentiable_ops())


# Ops that compute nothing: a segment of only these is not worth a compile.
_NON_COMPUTE = frozenset({
    "getitem", "aten.view.default", "aten._unsafe_view.default", "aten.t.default",
    "aten.transpose.int", "aten.permute.default", "aten.expand.default",
    "aten.detach.default", "aten.alias.default", "aten.unsqueeze.default",
    "aten.squeeze.dim", "aten.slice.Tensor", "aten.select.int", "aten.lift_fresh.default",
    "aten.lift_fresh_copy.default",
})

# How a daemon's refusal names its node: validation's `nodes[3]`, or the
# unsupported-ops list's quoted op names.
_NODE_INDEX = re.compile(r"\bnodes\[(\d+)\]")
_QUOTED_OP = re.compile(r"""['"](aten\.[A-Za-z0-9_]+\.[A-Za-z0-9_]+)['"]""")


def refused_nodes(gm: torch.fx.GraphModule, message: str) -> Dict[torch.fx.Node, str]:
    """The nodes of traced graph `gm` that a compile's error `message`
    names (the exported graph's nodes are gm's call_function nodes in
    order), each with the message as its reason; empty when it names none."""
    calls = [n for n in gm.graph.nodes if n.op == "call_function"]
    named: Dict[torch.fx.Node, str] = {}
    for match in _NODE_INDEX.finditer(message):
        index = int(match.group(1))
        if index < len(calls) and calls[index].target is not operator.getitem:
            named[calls[index]] = message
    if not named:
        ops = set(_QUOTED_OP.findall(message))
        named = {n: message for n in calls
                 if n.target is not operator.getitem and op_name(n.target) in ops}
    return named


class _Support(OperatorSupportBase):
    """The partitioner's question: is this node compiled? Not when refused,
    nor when it runs under another grad mode than the graph's callers (a
    segment is compiled under the caller's mode)."""

    def __init__(self, refused: Dict[torch.fx.Node, str], grad_enabled: bool):
        self.refused = refused
        self.grad_enabled = grad_enabled

    def is_node_supported(self, submodules, node: torch.fx.Node) -> bool:
        return (node.op == "call_function" and node not in self.refused
                and node.meta.get(GRAD_META_KEY, self.grad_enabled) == self.grad_enabled)


class Island:
    """Nodes of one op that run eagerly, and why."""

    def __init__(self, op: str, reason: str, nodes: int = 0):
        self.op = op
        self.reason = reason
        self.nodes = nodes


class SplitPlan:
    """Where a traced graph splits: the graph with each segment fused into a
    submodule of its own (not compiled yet), the islands, the count of
    ATen nodes in all and in segments, and the grad mode it was traced
    under. As JSON values (to_json, from_json) it is kept under the
    graph's front key."""

    def __init__(self, module: torch.fx.GraphModule, islands: List[Island], total_nodes: int,
                 compiled_nodes: int, grad_enabled: bool):
        self.module = module
        self.islands = islands
        self.total_nodes = total_nodes
        self.compiled_nodes = compiled_nodes
        self.grad_enabled = grad_enabled

    def to_json(self) -> Dict[str, Any]:
        """TypeError when the graph cannot be written (traced_graph_json)."""
        return {"module": traced_graph_json.dumps(self.module),
                "islands": [[i.op, i.reason, i.nodes] for i in self.islands],
                "total_nodes": self.total_nodes, "compiled_nodes": self.compiled_nodes,
                "grad_enabled": self.grad_enabled}

    @staticmethod
    def from_json(data: Dict[str, Any]) -> "SplitPlan":
        return SplitPlan(traced_graph_json.loads(data["module"]),
                         [Island(str(op), str(reason), int(nodes))
                          for op, reason, nodes in data["islands"]],
                         int(data["total_nodes"]), int(data["compiled_nodes"]),
                         bool(data["grad_enabled"]))


def plan(gm: torch.fx.GraphModule, refused: Dict[torch.fx.Node, str],
         grad_enabled: bool) -> SplitPlan:
    """`gm` (a traced ATen graph, traced under grad mode `grad_enabled`)
    split at `refused` (node -> reason): into the partitioner's segments,
    or into runs in the traced order when it writes a tensor. Fuses in
    place."""
    for n in reversed(list(gm.graph.nodes)):  # torch 1.13's dead detach nodes
        if n.op == "call_function" and not n.users and op_name(n.target) in _NON_COMPUTE:
            gm.graph.erase_node(n)
    calls = [n for n in gm.graph.nodes if n.op == "call_function"]
    support = _Support(refused, grad_enabled)
    partitioner = CapabilityBasedPartitioner(gm, support, allows_single_node_partition=True)
    if any(_writes(n) for n in calls):
        partitions = _runs(calls, support)
    else:
        partitions = partitioner.propose_partitions()
    partitions = [p for p in partitions
                  if any(op_name(n.target) not in _NON_COMPUTE for n in p.nodes)]
    in_segments = {n for p in partitions for n in p.nodes}
    # Regions (custom_functions.py) whose graphs compile on their own.
    regions = {n for n in calls if custom_functions.is_region(n.target)
               and custom_functions.lookup(n.args[1]).compiled}
    islands: Dict[Tuple[str, str], Island] = collections.OrderedDict()
    for n in calls:
        if n in in_segments or n in regions or n.target is operator.getitem:
            continue
        op = custom_functions.lookup(n.args[1]).name if custom_functions.is_region(n.target) \
            else op_name(n.target)
        reason = refused.get(n)
        if reason is None:
            reason = ("between ops aotcache runs eagerly" if op in _NON_COMPUTE else
                      "runs with grad %s inside a graph traced with grad %s"
                      % (_on(n.meta.get(GRAD_META_KEY)), _on(grad_enabled)))
        islands.setdefault((op, reason), Island(op, reason)).nodes += 1
    module = partitioner.fuse_partitions(partitions) if partitions else gm
    return SplitPlan(module, list(islands.values()),
                     sum(1 for n in calls if n.target is not operator.getitem),
                     sum(1 for n in in_segments if n.target is not operator.getitem)
                     + len(regions), grad_enabled)


def _writes(n: torch.fx.Node) -> bool:
    """Whether a traced node writes a tensor (its data or its metadata)."""
    schema = getattr(n.target, "_schema", None)
    return schema is not None and schema.is_mutable


def _runs(calls: List[torch.fx.Node], support: _Support) -> List[Partition]:
    """The segments of a graph that writes tensors: each run of compiled
    nodes between two eager ones, so that every read and write keeps its
    place in the traced order (the partitioner orders nodes by their
    data alone, and would move a read past a write of the same memory).
    A getitem goes with the node it reads."""
    partitions: List[Partition] = []
    segment_of: Dict[torch.fx.Node, Partition] = {}
    current: Optional[Partition] = None
    for n in calls:
        if n.target is operator.getitem:
            owner = segment_of.get(n.args[0])
            if owner is not None:
                owner.add_node(n)
                segment_of[n] = owner
            continue
        if not support.is_node_supported({}, n):
            current = None
            continue
        if current is None:
            current = Partition(id=len(partitions), nodes=[])
            partitions.append(current)
        current.add_node(n)
        segment_of[n] = current
    return partitions


class _Segment(torch.nn.Module):
    """A compiled segment in the split graph: its compiled function."""

    def __init__(self, compiled: Callable):
        super().__init__()
        self.compiled = compiled

    def forward(self, *args):
        return self.compiled(*args)


def _called(runner: Callable, name: str) -> Callable:
    """runner as a function (what an fx node's target can be)."""
    def call(*args, **kwargs):
        return runner(*args, **kwargs)
    call.__name__ = name
    return call


def _in_grad_mode(enabled: bool, op: Callable) -> Callable:
    def call(*args, **kwargs):
        with torch.set_grad_enabled(enabled):
            return op(*args, **kwargs)
    call.__name__ = "%s_grad_%s" % (getattr(op, "__name__", "op").replace(".", "_"),
                                     _on(enabled))
    return call


class SplitGraph:
    """A split plan made runnable: its segments compiled by
    `compile_segment(submodule)` (a callable taking the segment's inputs),
    the graphs of its regions (custom_functions.py) by `compile_region`
    (by default the same), its islands run in the grad mode they were
    traced in. Called with the traced graph's inputs, it returns its
    outputs. Takes the plan's module."""

    def __init__(self, split: SplitPlan, compile_segment: Callable[[torch.fx.GraphModule], Any],
                 compile_region: Optional[Callable[[torch.fx.GraphModule], Any]] = None):
        self.plan = split
        module = split.module
        self.segments: List[Any] = []
        self.regions: List[custom_functions.RegionRunner] = []
        for node in list(module.graph.nodes):
            if node.op == "call_module":
                compiled = compile_segment(getattr(module, node.target))
                self.segments.append(compiled)
                setattr(module, node.target, _Segment(compiled))
                continue
            if node.op != "call_function":
                continue
            if custom_functions.is_region(node.target):
                runner = custom_functions.lookup(node.args[1]).runner(
                    compile_region or compile_segment)
                self.regions.append(runner)
                node.target = _called(runner, "custom_function")
            if node.meta.get(GRAD_META_KEY, split.grad_enabled) != split.grad_enabled:
                node.target = _in_grad_mode(node.meta[GRAD_META_KEY], node.target)
        module.recompile()
        self._module = module

    # Called as a CompiledEntry is: the split graph reads the captured
    # tensors itself, so none are passed after the inputs.
    lifted: List[torch.Tensor] = []

    def __call__(self, inputs: List[torch.Tensor]) -> List[torch.Tensor]:
        return list(self._module(*inputs))

    def cache_info(self, front: str) -> List[Dict[str, Any]]:
        """aot_function's cache_info() rows of the split: each segment's
        own rows (with its number, "segment"), then a row per island (the
        op, its count, "nodes", and the reason, "eager")."""
        rows = []
        for k, segment in enumerate(self.segments):
            for row in segment.cache_info():
                rows.append(dict(row, segment=k))
        for k, region in enumerate(self.regions):
            for row in region.cache_info():
                rows.append(dict(row, region=k))
        for island in self.plan.islands:
            rows.append({"key": "", "mode": "", "status": "eager", "backward": "none",
                         "source": "", "backend": "", "fallback_reason": "",
                         "eager": island.reason, "trace_ms": 0.0, "compile_ms": 0.0,
                         "front": front, "nodes": island.nodes, "op": island.op})
        return rows


_log = logging.getLogger("aotcache")
_warned = False


def warn(name: str, plan: SplitPlan) -> None:
    """Logs a split; once per process, warns: ops run eagerly between
    compiled segments."""
    global _warned
    eager = plan.total_nodes - plan.compiled_nodes
    ops = ", ".join("%s (%d)" % (i.op, i.nodes) for i in plan.islands[:8])
    _log.info("aotcache: %s: %d of %d ATen nodes run eagerly: %s", name, eager,
              plan.total_nodes, ops)
    if _warned or not eager:
        return
    _warned = True
    warnings.warn("aotcache: %s: %d of its %d ATen nodes run eagerly, between compiled "
                  "segments: %s%s. cache_info() lists each segment and island with its "
                  "reason (for every graph; this warning comes once per process); "
                  "fallback='error' refuses instead."
                  % (name, eager, plan.total_nodes, ops,
                     ", ..." if len(plan.islands) > 8 else ""), stacklevel=8)


def _on(enabled: Optional[bool]) -> str:
    return "on" if enabled else "off"
