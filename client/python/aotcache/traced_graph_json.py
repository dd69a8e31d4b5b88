"""A traced ATen graph (a torch.fx.GraphModule of ATen ops, getitem and
submodules of the same kind) as JSON values, and back: how a split graph
(graph_split.py) is kept under its front key, so that a new process runs it
without tracing again.

Targets are written by name ("aten.add.Tensor", "getitem") and looked up in
torch.ops when read; values by kind (a tuple and a list stay apart, floats
exactly); the tensors the graph reads with get_attr by value, when they are
constants a trace made (no parameter, nothing that requires grad, at most
1 MiB). What cannot be written raises TypeError (the caller then keeps no
record). A node's grad mode (torch_version.GRAD_META_KEY) goes with it.

Thread-safety: pure functions.
"""

import base64
import operator
from typing import Any, Dict, List

import torch
import torch.fx

from .torch_version import GRAD_META_KEY, graph_module, op_name

_MAX_CONSTANT_BYTES = 1 << 20
_TORCH_ENUMS = (torch.dtype, torch.layout, torch.memory_format)


def dumps(gm: torch.fx.GraphModule) -> Dict[str, Any]:
    """gm as JSON values (TypeError for what has none)."""
    nodes: List[Dict[str, Any]] = []
    constants: Dict[str, Any] = {}
    modules: Dict[str, Any] = {}
    for n in gm.graph.nodes:
        entry: Dict[str, Any] = {"name": n.name, "op": n.op}
        if n.op == "call_function":
            entry["target"] = op_name(n.target)
            if GRAD_META_KEY in n.meta:
                entry["grad"] = bool(n.meta[GRAD_META_KEY])
        elif n.op == "call_module":
            entry["target"] = n.target
            modules[n.target] = dumps(getattr(gm, n.target))
        elif n.op == "get_attr":
            entry["target"] = n.target
            constants[n.target] = _tensor(getattr(gm, n.target), n.target)
        elif n.op != "placeholder" and n.op != "output":
            raise TypeError("node %s: %s" % (n.name, n.op))
        entry["args"] = _value(n.args)
        entry["kwargs"] = _value(n.kwargs)
        nodes.append(entry)
    return {"nodes": nodes, "constants": constants, "modules": modules}


def loads(data: Dict[str, Any]) -> torch.fx.GraphModule:
    """The GraphModule dumps wrote (KeyError, TypeError, ValueError or
    AttributeError for data it did not write)."""
    root = torch.nn.Module()
    for name, tensor in data["constants"].items():
        root.register_buffer(name, _tensor_of(tensor))
    for name, module in data["modules"].items():
        root.add_module(name, loads(module))
    graph = torch.fx.Graph()
    env: Dict[str, torch.fx.Node] = {}
    for entry in data["nodes"]:
        op = entry["op"]
        args = _of_value(entry["args"], env)
        kwargs = _of_value(entry["kwargs"], env)
        if op == "placeholder":
            node = graph.placeholder(entry["name"])
        elif op == "output":
            node = graph.output(args[0])
        elif op == "get_attr":
            node = graph.get_attr(entry["target"])
        elif op == "call_module":
            node = graph.call_module(entry["target"], args, kwargs)
        elif op == "call_function":
            node = graph.call_function(_op(entry["target"]), args, kwargs)
            if "grad" in entry:
                node.meta[GRAD_META_KEY] = bool(entry["grad"])
        else:
            raise ValueError("node kind %r" % (op,))
        env[entry["name"]] = node
    return graph_module(root, graph)


def _op(name: str) -> Any:
    if name == "getitem":
        return operator.getitem
    namespace, op, overload = name.split(".")
    return getattr(getattr(getattr(torch.ops, namespace), op), overload)


def _value(a: Any) -> Any:
    if isinstance(a, torch.fx.Node):
        return {"node": a.name}
    if a is None or isinstance(a, (bool, int, str)):
        return a
    if isinstance(a, float):
        return {"float": a.hex()}
    if isinstance(a, tuple):
        return {"tuple": [_value(x) for x in a]}
    if isinstance(a, list):
        return {"list": [_value(x) for x in a]}
    if isinstance(a, dict):
        return {"dict": [[k, _value(v)] for k, v in a.items() if isinstance(k, str)]}
    if isinstance(a, torch.device):
        return {"device": str(a)}
    if isinstance(a, _TORCH_ENUMS):
        return {"torch": str(a).split(".", 1)[1]}
    raise TypeError("a value of type %s" % type(a).__name__)


def _of_value(v: Any, env: Dict[str, torch.fx.Node]) -> Any:
    if not isinstance(v, dict):
        return v
    (kind, x), = v.items()
    if kind == "node":
        return env[x]
    if kind == "float":
        return float.fromhex(x)
    if kind == "tuple":
        return tuple(_of_value(e, env) for e in x)
    if kind == "list":
        return [_of_value(e, env) for e in x]
    if kind == "dict":
        return {k: _of_value(e, env) for k, e in x}
    if kind == "device":
        return torch.device(x)
    if kind == "torch":
        value = getattr(torch, x)
        if not isinstance(value, _TORCH_ENUMS):
            raise TypeError("torch.%s" % x)
        return value
    raise ValueError("value kind %r" % (kind,))


def _tensor(t: Any, name: str) -> Dict[str, Any]:
    if not isinstance(t, torch.Tensor) or isinstance(t, torch.nn.Parameter) or \
            t.requires_grad or t.device.type != "cpu" or t.layout != torch.strided:
        raise TypeError("get_attr %s is no constant a trace made" % name)
    c = t.detach().contiguous()
    if c.numel() * c.element_size() > _MAX_CONSTANT_BYTES:
        raise TypeError("constant %s is over %d bytes" % (name, _MAX_CONSTANT_BYTES))
    raw = c.reshape(-1).view(torch.uint8).numpy().tobytes()
    return {"dtype": str(c.dtype).split(".", 1)[1], "shape": list(c.shape),
            "data": base64.b64encode(raw).decode("ascii")}


def _tensor_of(data: Dict[str, Any]) -> torch.Tensor:
    dtype = getattr(torch, data["dtype"])
    if not isinstance(dtype, torch.dtype):
        raise TypeError("dtype %s" % data["dtype"])
    raw = bytearray(base64.b64decode(data["data"]))
    if not raw:
        return torch.empty(data["shape"], dtype=dtype)
    return torch.frombuffer(raw, dtype=torch.uint8).view(dtype).reshape(data["shape"])
