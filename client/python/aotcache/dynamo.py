"""torch.compile(model, backend="aotcache"): aotcache as Dynamo's backend.

Dynamo captures each graph of the model (a graph break makes several), with
the parameters and buffers it reads as inputs, and hands it here with example
inputs. aotcache compiles it as aot_function does (make_fx, then the daemon's
analysis, mode decision, autodiff and backends) on its first call per
signature, and runs the artifacts; the signature and guards of aot_function
hold beneath Dynamo's own (module.training, grad mode, shapes).

A graph compiled before in another process skips its make_fx trace when its
front key (front_key.py) finds the exported graph.

With dynamic shapes (torch.compile(..., dynamic=True), or Dynamo's automatic
dynamic after a shape changed) the graph runs eagerly, with one warning
naming the reason: aotcache compiles static shapes.

Options: torch.compile(..., options={"server": ..., "fallback": ...,
"rng": ...}), as aot_function takes them; the environment variables it reads
(AOTCACHE_SERVER, ...) apply. Dynamo finds the backend through the package's
`torch_dynamo_backends` entry point (the build tree has one too).

Thread-safety: as aot_function's.
"""

import threading
import warnings
import weakref
from typing import Any, Callable, Dict, List, Optional, Set

import torch

from . import front_key
from .torch import AotFunction, _check_options

_OPTIONS = ("server", "fallback", "rng")
_warned: Set[str] = set()
_lock = threading.Lock()
_graphs: List["weakref.ref[AotFunction]"] = []  # Every graph compiled, in order.


def aotcache_backend(gm: torch.fx.GraphModule, example_inputs: List[Any],
                     options: Optional[Dict[str, Any]] = None) -> Callable:
    """Dynamo's compiler function: the callable that runs `gm`."""
    options = dict(options or {})
    unknown = sorted(set(options) - set(_OPTIONS))
    if unknown:
        raise ValueError("aotcache: unknown option(s) %s; it takes %s"
                         % (", ".join(unknown), ", ".join(_OPTIONS)))
    reason = _dynamic_reason(gm, example_inputs)
    if reason is not None:
        if reason not in _warned:
            _warned.add(reason)
            warnings.warn("aotcache: running a graph eagerly: %s" % reason)
        return gm.forward
    scalars = _read_as_numbers(gm)
    _check_options(None, options.get("fallback"), options.get("rng", "philox"))
    # Dynamo's graph is its own: no one replaces the tensors it holds, so
    # calls need not look for them (the trace's guards still hold them).
    compiled = AotFunction(gm, options.get("server"), options.get("fallback"),
                           options.get("rng", "philox"), watch_captures=False,
                           front=front_key.graph_material(gm))
    with _lock:
        _graphs.append(weakref.ref(compiled))
    if not scalars:
        return compiled

    def run(*args):
        args = list(args)
        for i in scalars:
            args[i] = args[i].item()
        return compiled(*args)

    return run


def _read_as_numbers(gm: torch.fx.GraphModule) -> List[int]:
    """The inputs Dynamo made of Python numbers that changed between calls
    (a module's float attribute: a 0-d tensor the graph reads with .item()):
    the graph is rewritten to take the number itself, which aot_function
    then compiles per value, as eager reads it anew at every call. Their
    positions among the inputs."""
    positions = []
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    for i, node in enumerate(placeholders):
        users = list(node.users)
        if users and all(u.op == "call_method" and u.target == "item" for u in users):
            for u in users:
                u.replace_all_uses_with(node)
                gm.graph.erase_node(u)
            positions.append(i)
    if positions:
        gm.recompile()
    return positions


def cache_info() -> List[Dict[str, Any]]:
    """aot_function's cache_info() rows of every graph Dynamo handed to
    aotcache in this process (those still alive), in order, each with the
    graph's number ("graph") among them."""
    with _lock:
        graphs = [(n, ref()) for n, ref in enumerate(_graphs)]
    return [dict(row, graph=n) for n, g in graphs if g is not None for row in g.cache_info()]


def _dynamic_reason(gm: torch.fx.GraphModule, example_inputs: List[Any]) -> Optional[str]:
    """Why aotcache cannot compile the graph, or None: symbolic sizes."""
    symbolic = (torch.SymInt, torch.SymFloat, torch.SymBool)
    if any(isinstance(a, symbolic) for a in example_inputs):
        return ("it has dynamic shapes (torch.compile(dynamic=True), or a size that "
                "changed between calls); aotcache compiles static shapes: pass "
                "dynamic=False to compile each size on its own")
    for node in gm.graph.nodes:
        value = node.meta.get("example_value") if node.op == "placeholder" else None
        if isinstance(value, torch.Tensor) and any(
                isinstance(s, symbolic) for s in value.shape):
            return "an input of dynamic shape %s" % (tuple(value.shape),)
    return None
