"""How values are written in an ``aotcache.v1.Graph`` (proto3 JSON form):
dtypes and devices by name, tensor metas, node arguments, and the node
results' layouts as the trace saw them; each raises ExportError naming the
value a graph cannot hold. fx_export writes graphs with them, and
node_refusals asks them which nodes a graph cannot hold.

Thread-safety: pure functions.
"""

import math
from typing import Any, Dict, List, Tuple

import torch
import torch.fx

from .errors import ExportError
from .torch_version import RESULT_META_KEY, Layout, result_layouts


_DTYPES = {
    torch.float32: "DTYPE_FLOAT32",
    torch.float64: "DTYPE_FLOAT64",
    torch.int64: "DTYPE_INT64",
    torch.bool: "DTYPE_BOOL",
    torch.int32: "DTYPE_INT32",
    torch.uint8: "DTYPE_UINT8",
}


def dtype_of_name(name: str) -> torch.dtype:
    """The torch dtype of an aotcache dtype name ("DTYPE_FLOAT32")."""
    for dtype, n in _DTYPES.items():
        if n == name:
            return dtype
    raise ExportError("unknown dtype %s" % name)


def dtype_name(dtype: torch.dtype, what: str) -> str:
    try:
        return _DTYPES[dtype]
    except KeyError:
        raise ExportError(
            "%s has dtype %s; aotcache supports only float32, float64, int64, int32, uint8 "
            "and bool"
            % (what, dtype)) from None


def device_name(device: torch.device, what: str) -> str:
    if device.type != "cpu":
        raise ExportError("%s is on device %s; aotcache supports only cpu" % (what, device))
    return "cpu"


def tensor_meta(t: torch.Tensor, what: str, *, requires_grad: bool = False,
                 is_leaf: bool = False, contiguous: bool = False,
                 origin: int = 0) -> Dict[str, Any]:
    """t's meta, its offset counted from element `origin` of its storage
    (see storage_spans)."""
    if contiguous:
        stride, acc = [], 1
        for size in reversed(list(t.shape)):
            stride.insert(0, acc)
            acc *= max(size, 1)
        offset = 0
    else:
        stride = list(t.stride())
        offset = t.storage_offset() - origin
    return layout_meta((tuple(t.shape), tuple(stride), offset, t.dtype, t.device), what,
                        requires_grad=requires_grad, is_leaf=is_leaf)


def layout_meta(layout: Layout, what: str, *, requires_grad: bool = False,
                 is_leaf: bool = False) -> Dict[str, Any]:
    shape, stride, offset, dtype, device = layout
    return {
        "shape": list(shape),
        "stride": list(stride),
        "storage_offset": offset,
        "dtype": dtype_name(dtype, what),
        "device": device_name(device, what),
        "requires_grad": bool(requires_grad),
        "is_leaf": bool(is_leaf),
    }


def _float(x: float):
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    return x


def argument(a: Any, where: str) -> Dict[str, Any]:
    """Map one make_fx node argument to an aotcache.v1.Argument."""
    if isinstance(a, torch.fx.Node):
        return {"node": a.name}
    if a is None:
        return {"none": True}
    if isinstance(a, bool):  # before int: bool is an int subclass
        return {"bool": a}
    if isinstance(a, int):
        return {"int": a}
    if isinstance(a, float):
        return {"float": _float(a)}
    if isinstance(a, str):
        return {"string": a}
    if isinstance(a, torch.dtype):
        return {"dtype": dtype_name(a, where)}
    if isinstance(a, torch.device):
        return {"device": device_name(a, where)}
    if isinstance(a, (torch.layout, torch.memory_format)):
        return {"string": str(a)}  # "torch.strided", "torch.contiguous_format"
    if isinstance(a, (list, tuple)):
        if all(isinstance(x, torch.fx.Node) for x in a) and len(a) > 0:
            return {"nodes": {"names": [x.name for x in a]}}
        if all(isinstance(x, int) and not isinstance(x, bool) for x in a):
            return {"ints": {"values": list(a)}}
        if all(isinstance(x, float) for x in a):
            # aotcache has no float lists; whole numbers cross as ints
            # (interpolate's scale_factor=2.0 gives [2.0, 2.0]).
            if all(math.isfinite(x) and x == int(x) for x in a):
                return {"ints": {"values": [int(x) for x in a]}}
            raise ExportError("%s: the float list %r: aotcache takes float lists of "
                              "whole numbers only (interpolate with scale_factor=2.0 "
                              "compiles, 1.5 does not)" % (where, a))
        raise ExportError("%s: list argument %r is neither a list of ints nor a list of "
                          "tensors" % (where, a))
    raise ExportError("%s: argument %r of type %s cannot be expressed as an "
                      "aotcache Argument" % (where, a, type(a).__name__))


# The plain overloads of interpolation's .vec forms, which torch 1.13 traces
# with the scale factors as a float list (torch 2.x traces the plain ones).
_PLAIN_UPSAMPLE = {
    "aten.upsample_nearest2d.vec": "aten.upsample_nearest2d.default",
    "aten.upsample_bilinear2d.vec": "aten.upsample_bilinear2d.default",
    "aten.upsample_bicubic2d.vec": "aten.upsample_bicubic2d.default",
}


def without_fractional_scales(op: str, args: Tuple[Any, ...],
                               n: torch.fx.Node) -> Tuple[str, Tuple[Any, ...]]:
    """An interpolation by fractional scale factors (F.interpolate with
    scale_factor=1.5 on torch 1.13: a .vec call with a float list, which
    aotcache's graphs do not hold) as the plain overload that .vec calls:
    the output size it computed (the node's result's) and each factor as
    its dim's scale. Every other call as it is."""
    plain = _PLAIN_UPSAMPLE.get(op)
    scales = args[-1] if args else None
    if plain is None or not isinstance(scales, (list, tuple)) or \
            not all(isinstance(x, float) for x in scales) or \
            all(math.isfinite(x) and x == int(x) for x in scales):
        return op, args
    layouts = result_layouts(n)
    if len(layouts) != 1:
        return op, args
    size = list(layouts[0][0][2:])  # (shape, stride, offset, dtype, device)
    return plain, (args[0], size, *args[2:-1], *scales)


def declared_layouts(n: torch.fx.Node) -> List[Layout]:
    """The layouts node n's output_meta declares: every result's, or none
    when a result is undefined (torch 2.x's mkldnn_rnn_layer under no_grad
    returns no workspace), since the metas are matched to results by
    position. The server infers what is not declared."""
    result = n.meta.get(RESULT_META_KEY)
    if isinstance(result, list) and any(r is None for r in result):
        return []
    return result_layouts(n)
