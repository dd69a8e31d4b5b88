"""Export a Python function as an ``aotcache.v1.Graph`` (proto3 JSON form).

``export_graph(fn, *args)`` traces ``fn`` with ``make_fx`` in real mode and
returns a plain ``dict`` that serialises (``json.dumps``) to the proto3-JSON
form of ``aotcache.v1.Graph`` (proto/aotcache/v1/graph.proto):

* field names are the .proto names (snake_case; proto3 JSON parsers accept
  them as well as lowerCamelCase);
* enums are written as their names ("DTYPE_FLOAT32", "GRAD_MODE_ENABLED");
* int64 values are JSON numbers; non-finite floats are "Infinity",
  "-Infinity" or "NaN"; bytes are base64.

What make_fx does not record, the exporter adds:

* the grad mode of every node (``torch.no_grad()`` / ``torch.enable_grad()``
  regions trace to the same ops), recorded by a hook on the tracer's
  ``create_node`` that reads ``torch.is_grad_enabled()`` when the node is
  created;
* for every input: its layout, requires_grad, is_leaf (as the caller passed
  it) and which storage it lives in (aliased inputs share a storage id).

Real-mode tracing runs ``fn``.  It runs on copies of the caller's tensors that
keep their aliasing (inputs sharing a storage share one in the copies, with
the same sizes, strides and offsets), their leaf status and requires_grad, and
with every tensor ``fn`` captures (closure cells, modules' parameters and
buffers) replaced by a copy while it runs, so the caller's tensors are never
touched.  The metas of node results (``output_meta``) are the layouts of
the real results as the trace saw them.
"""

import base64
import operator
import sys
from typing import Any, Callable, Dict, FrozenSet, List, Optional, Tuple

import torch
import torch.fx

from .errors import ExportError  # noqa: F401 (part of this API)
from .graph_values import (argument, declared_layouts, device_name, dtype_name,
                           dtype_of_name, layout_meta, tensor_meta,  # noqa: F401 (API)
                           without_fractional_scales)
from .node_refusals import refusals
from .captures import Captured, Reach, captured_tensors  # noqa: F401 (captured_tensors: API)
from .input_copies import copy_inputs, extent, storage_spans
from .guards import Guards, ReadRecorder, plain_globals_and_cells, refuse_hooks
from .torch_version import (GRAD_META_KEY, RESULT_META_KEY, op_name, result_layouts,
                            storage_key, storage_numel, trace, traceable_mode)

# The ops whose results are random (the registry's kUsesRng rows).
RANDOM_OPS = frozenset({
    "aten.native_dropout.default", "aten.rand_like.default", "aten.randn_like.default",
    "aten.bernoulli.default", "aten.bernoulli.p", "aten.bernoulli_.float",
})


# The ops make_fx puts after the get_attr of a tensor literal the function
# makes (torch.tensor([...])): torch 1.13's lift_fresh_copy, 2.x's lift_fresh.
_LITERAL_COPIES = frozenset({"aten.lift_fresh_copy.default", "aten.lift_fresh.default"})


def uses_random_ops(graph: Dict[str, Any]) -> bool:
    return any(node["op"] in RANDOM_OPS for node in graph["nodes"])


class Exported:
    """What export_function returns: the graph (the proto3-JSON dict), the
    tensors lifted to inputs after the arguments (every captured tensor the
    graph reads: pass them with the arguments on every call, their writes
    are applied to them), which inputs' (the arguments', then the lifted
    tensors') version counters the call moves, and the guards: what else
    the trace read (module attributes, plain globals) and must still hold,
    and where each input's storage begins (storage_spans)."""

    def __init__(self, graph: Optional[Dict[str, Any]], lifted: List[torch.Tensor],
                 version_moved: List[bool], guards: Guards,
                 groups: List[Optional[int]]):
        self.graph = graph  # None when the trace must split (`refused`)
        self.lifted = lifted
        # Per input (arguments, then lifted): whether the call moves its
        # version counter. A write through `.data` (a tensor with a counter
        # of its own) does not, nor batch norm's to its running statistics.
        self.version_moved = version_moved
        self.guards = guards
        # Per input: its storage's number if the storage was compiled as its
        # span (storage_spans), else None. The runtime borrows the inputs of
        # a span from the first element any of them reaches.
        self.groups = groups
        # The traced ATen graph, reading the caller's captured tensors (not
        # the trace's copies); the grad mode it was traced under; and, when
        # export_function was given the ops to split at, the nodes of it
        # the graph cannot hold or aotcache cannot compile, with why.
        self.traced: Optional[torch.fx.GraphModule] = None
        self.grad_enabled = True
        self.refused: Dict[torch.fx.Node, str] = {}


def export_graph(fn: Callable, *args: torch.Tensor) -> Dict[str, Any]:
    """Trace fn(*args) with make_fx (real mode) and return the proto3-JSON
    form of aotcache.v1.Graph as a dict.  The caller's grad mode is the one
    the trace runs under.  Captured tensors are constants of the graph; one
    that requires grad or that fn writes is refused (export_function lifts
    them to inputs)."""
    return export_function(fn, list(args), lift=False).graph


def export_function(fn: Callable, args: List[torch.Tensor], *, lift: bool = True,
                    captures: Optional[Callable] = None,
                    split_at: Optional[FrozenSet[str]] = None,
                    nondifferentiable: FrozenSet[str] = frozenset()) -> Exported:
    """export_graph, lifting every captured tensor the graph reads to an
    input and counting storages from their spans (when `lift`), and
    recording the guards. `captures`: whose captured tensors, modules and
    globals to follow (default fn; a wrapper passes the user's function).
    `split_at`: the ops aotcache compiles; when given, the trace decomposes
    the others where torch has a decomposition, and when nodes remain that
    the graph cannot hold (refusals(); `nondifferentiable`: the ops of
    split_at aotcache has no derivative of), the Exported has no graph but
    `refused`."""
    args = list(args)
    for i, a in enumerate(args):
        if not isinstance(a, torch.Tensor):
            raise ExportError("argument %d is a %s; export_graph takes tensors only"
                              % (i, type(a).__name__))
        dtype_name(a.dtype, "argument %d" % i)
        device_name(a.device, "argument %d" % i)
        if a.layout != torch.strided:
            raise ExportError("argument %d has layout %s; only strided tensors are supported"
                              % (i, a.layout))

    reach = Reach(captures if captures is not None else fn)
    refuse_hooks(reach.modules)
    modules = [m for _, m in reach.modules]
    objects = [o for _, _, o in reach.objects]
    with traceable_mode(), Captured(reach) as captured, \
            ReadRecorder(modules, objects) as reads:
        # export_graph keeps every input where it lies (fixtures, tools).
        spans = storage_spans(args) if lift else {}
        copies = copy_inputs(args, spans)
        for i, (a, c) in enumerate(zip(args, copies)):
            if a.is_leaf and a.grad is not None:
                c.grad = a.grad.detach().clone()
                captured.grad_of[id(c.grad)] = "argument %d" % i
        before = [c._version for c in copies]
        grad_enabled = torch.is_grad_enabled()
        gm = trace(fn, copies, split_at)
        version_moved = [c._version != v for c, v in zip(copies, before)]
        refused = refusals(gm, copies, split_at, nondifferentiable) \
            if split_at is not None else {}
        if refused:
            exported = Exported(None, [], version_moved, Guards(), [])
            exported.refused = refused
        else:
            exported = _export_traced(gm, args, version_moved, captured, lift, spans)
        originals = _read_originals(gm, captured)
        if refused:
            exported.lifted = originals
        exported.traced = gm
        exported.grad_enabled = grad_enabled
    places = {id(t): (holder, key) for holder, key, t, _ in reach.tensors}
    # The objects stay those the trace read from (a config replaced by
    # another retraces), as the lifted tensors stay those it lifted.
    exported.guards = Guards(reads.values() + plain_globals_and_cells(reach.values), modules,
                             [places[id(t)] + (t,) for t in exported.lifted if id(t) in places]
                             + reach.objects)
    return exported


def _read_originals(gm: torch.fx.GraphModule, captured: Captured) -> List[torch.Tensor]:
    """Points gm's reads of captured tensors (the trace's copies) at the
    caller's tensors, and returns those."""
    originals = []
    for n in gm.graph.nodes:
        if n.op != "get_attr":
            continue
        value = getattr(gm, n.target)
        original = captured.original.get(id(value))
        if original is not None:
            setattr(gm, n.target, original[0])
            originals.append(original[0])
    return originals


# Ops whose schema does not say what they write, and which of their
# arguments they write: torch 1.13's native_batch_norm updates the running
# statistics (arguments 3 and 4) when training (argument 5), without moving
# their version counters, so a captured buffer's _version does not show it.
_HIDDEN_WRITES = {
    "aten.native_batch_norm.default": (lambda args: args[5] is True, (3, 4)),
}


def _hidden_writes(gm: torch.fx.GraphModule) -> set:
    """The nodes that ops of _HIDDEN_WRITES write."""
    written = set()
    for n in gm.graph.nodes:
        rule = _HIDDEN_WRITES.get(op_name(n.target)) if n.op == "call_function" else None
        if rule is not None and rule[0](n.args):
            written.update(n.args[k] for k in rule[1] if isinstance(n.args[k], torch.fx.Node))
    return written


def _is_tensor_result(n: torch.fx.Node) -> bool:
    """Whether the traced graph's node n gives one tensor."""
    if n.op == "placeholder" or n.op == "get_attr":
        return True
    return n.op == "call_function" and (
        n.target is operator.getitem and bool(result_layouts(n))
        or isinstance(n.meta.get(RESULT_META_KEY), tuple))


def _export_traced(gm: torch.fx.GraphModule, args: List[torch.Tensor],
                   version_moved: List[bool], captured: Captured,
                   lift: bool, spans: Dict[Any, Tuple[int, int]]) -> Exported:

    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(args):
        raise ExportError("traced graph has %d placeholders for %d arguments"
                          % (len(placeholders), len(args)))

    # Constants: the tensor literals the function makes (a get_attr read
    # only by lift_fresh_copy: a fresh tensor at every call), and, when
    # not `lift`, captured tensors that neither require grad nor are
    # written. Every other captured tensor becomes an input after the
    # arguments (the caller's tensor, passed on every call), so that it
    # never goes stale: a module's state written outside the function
    # (an optimizer, an EMA update, batch norm's running statistics
    # updated by an eager step) is read anew at each call.
    constants = []
    lifted: List[Tuple[torch.fx.Node, torch.Tensor]] = []
    hidden = _hidden_writes(gm)
    lifted_version_moved: List[bool] = []
    for n in gm.graph.nodes:
        if n.op != "get_attr":
            continue
        value = getattr(gm, n.target)
        if not isinstance(value, torch.Tensor):
            raise ExportError("get_attr %s is a %s, not a tensor" % (n.target, type(value).__name__))
        if id(value) in captured.grad_of:
            raise ExportError(
                "the function reads the .grad of %s; aotcache does not follow .grad: "
                "pass the gradient as an argument" % captured.grad_of[id(value)])
        original, name = captured.original.get(id(value), (value, n.target))
        written = id(value) in captured.original and (captured.written(value) or n in hidden)
        literal = all(u.op == "call_function" and op_name(u.target) in _LITERAL_COPIES
                      for u in n.users)
        if not literal and (lift or value.requires_grad or written):
            if not lift:
                raise ExportError(
                    "constant %s (a tensor captured by the function) requires grad or is "
                    "written; pass it as an argument instead" % name)
            lifted.append((n, original))
            lifted_version_moved.append(id(value) in captured.original and
                                        captured.written(value))
            continue
        c = value.detach().contiguous()
        arr = c.numpy()
        arr = arr.astype(arr.dtype.newbyteorder("<"), copy=False)
        constants.append({
            "name": n.name,
            "meta": tensor_meta(c, "constant %s" % n.target, contiguous=True),
            "data": base64.b64encode(arr.tobytes()).decode("ascii"),
        })

    lifted_values = [original for _, original in lifted]
    lifted_nodes = [n for n, _ in lifted]

    storage_ids: Dict[Any, int] = {}
    storages = []
    inputs = []
    groups = []
    for ph, a in list(zip(placeholders, args)) + list(zip(lifted_nodes, lifted_values)):
        key = storage_key(a)
        if lift and key not in storage_ids and key not in spans and not a.requires_grad:
            spans[key] = (a.storage_offset(), extent(a))  # a captured tensor: its own span
        origin, size = spans.get(key, (0, storage_numel(a)))
        if a.storage_offset() < origin or a.storage_offset() + extent(a) > origin + size:
            raise ExportError("input %s (a captured tensor) shares memory with an argument "
                              "but lies outside it; pass it as an argument" % ph.name)
        if key not in storage_ids:
            storage_ids[key] = len(storage_ids)
            storages.append({"id": storage_ids[key], "size": size})
        groups.append(storage_ids[key] if key in spans else None)
        inputs.append({
            "name": ph.name,
            "meta": tensor_meta(a, "input %s" % ph.name, requires_grad=a.requires_grad,
                                 is_leaf=a.is_leaf, origin=origin),
            "storage": storage_ids[key],
        })

    nodes = []
    outputs: List[str] = []
    for n in gm.graph.nodes:
        if n.op == "placeholder" or n.op == "get_attr":
            continue
        if n.op == "output":
            flat = []

            def flatten(x):
                if isinstance(x, (list, tuple)):
                    for y in x:
                        flatten(y)
                else:
                    flat.append(x)
            flatten(n.args[0])
            for o in flat:
                if not (isinstance(o, torch.fx.Node) and _is_tensor_result(o)):
                    raise ExportError("output %r is not a tensor; aotcache graphs return "
                                      "tensors only" % (o,))
                outputs.append(o.name)
            continue
        if n.op != "call_function":
            raise ExportError("node %s has kind %s; expected call_function" % (n.name, n.op))
        where = "node %s (%s)" % (n.name, n.target)
        if GRAD_META_KEY not in n.meta:
            raise ExportError("%s carries no grad mode; was it created outside the tracer?" % where)
        op, args = without_fractional_scales(op_name(n.target), n.args, n)
        entry: Dict[str, Any] = {
            "name": n.name,
            "op": op,
            "args": [argument(a, where) for a in args],
            "kwargs": {k: argument(n.kwargs[k], where) for k in sorted(n.kwargs)},
            "output_meta": [layout_meta(layout, "result of node %s" % n.name)
                            for layout in declared_layouts(n)],
            "grad_mode": "GRAD_MODE_ENABLED" if n.meta[GRAD_META_KEY] else "GRAD_MODE_DISABLED",
        }
        nodes.append(entry)

    graph = {
        "inputs": inputs,
        "storages": storages,
        "constants": constants,
        "nodes": nodes,
        "outputs": outputs,
    }
    return Exported(graph, lifted_values, version_moved + lifted_version_moved, Guards(),
                    groups)


if __name__ == "__main__":  # tiny smoke test: python3 -m aotcache.fx_export
    import json

    def _demo(a, b):
        with torch.no_grad():
            a.mul_(2)
        return torch.relu(a + b)

    x = torch.randn(2, 3, requires_grad=True).clone()
    y = torch.randn(2, 3)
    json.dump(export_graph(_demo, x, y), sys.stdout, indent=2)
    sys.stdout.write("\n")
