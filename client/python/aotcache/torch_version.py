"""Everything in aotcache's Python package that depends on the torch
release: make_fx and its tracer, op names, storage access, functional_call.
Supporting another release means changing this module only.

torch 1.13 (Debian 12):
  * make_fx lives in torch.fx.experimental.proxy_tensor and builds a fresh
    PythonKeyTracer per call; we hook PythonKeyTracer.create_node (the
    class attribute) for the duration of one trace.  For torch 2.x, check
    that make_fx still instantiates PythonKeyTracer (not verified here:
    only 1.13 is installed) and whether it records detach_/requires_grad_
    (see _RefuseUnrecorded).
  * real-mode make_fx records no grad-mode switches, no detach_() and no
    requires_grad changes; it does record autograd's own `detach` of saved
    outputs (relu, _softmax, amax, rsqrt ...) as dead nodes, two `detach`
    nodes per `.detach()`, one per `.data`.
  * str(OpOverload) is the printed overload form, "aten.add_.Tensor",
    "aten.relu.default"; multi-output results are read with
    operator.getitem, printed "getitem".
  * Tensor.untyped_storage() does not exist yet; Tensor.storage() returns a
    TypedStorage whose nbytes()/data_ptr() are what we need.  torch 2.x has
    untyped_storage() (and warns on storage()).
  * node.meta["tensor_meta"] (shape, stride, dtype, but no storage offset)
    is filled for single-tensor results only; we do not rely on it.
    Instead we hook proxy_tensor.track_tensor_tree (a module global, which
    make_fx calls with each op's real results and the op's proxy) for the
    duration of one trace, and keep the results' layouts in the node's meta
    (RESULT_META_KEY).  For torch 2.x, check that the op path still calls
    track_tensor_tree(real results, op proxy, ...).

torch 2.x (2.13 run here through aotcache._core):
  * make_fx still builds a PythonKeyTracer and calls track_tensor_tree as
    above; Function.apply is a Python classmethod of Function.
  * ops whose semantics changed are recorded through make_fx's
    decomposition_table with the running release's (_DECOMPOSITIONS):
    hardswish's gradient at -3 and 3.
  * Dynamo records a custom Function as the higher-order op
    autograd_function_apply (its forward and backward traced into graphs)
    and torch.utils.checkpoint as tag_activation_checkpoint; their classes'
    __call__ is ours while a trace may split (_REGION_OPS).
"""

import contextlib
import functools
import operator
import threading
from typing import Any, Callable, Dict, FrozenSet, List, Optional, Tuple

import torch
import torch.fx
from torch.fx.experimental import proxy_tensor as _proxy_tensor
from torch.fx.experimental.proxy_tensor import make_fx as _make_fx
from torch.overrides import TorchFunctionMode

from . import fast_paths, traceable_ops
from .errors import ExportError


try:  # torch 1.13 and 2.x
    from torch.fx.experimental.proxy_tensor import PythonKeyTracer as _Tracer
except ImportError:  # pragma: no cover - future torch
    _Tracer = None

GRAD_META_KEY = "grad_enabled"
# A call_function node's real result, as it was when the op returned: a
# Layout for a tensor, or a list with one per element (None for those that
# are not tensors) for a tuple or list.
RESULT_META_KEY = "aotcache_result"

# (shape, stride, storage offset, dtype, device)
Layout = Tuple[Tuple[int, ...], Tuple[int, ...], int, torch.dtype, torch.device]


def _layout(t: torch.Tensor) -> Layout:
    return (tuple(t.shape), t.stride(), t.storage_offset(), t.dtype, t.device)


def trace(fn: Callable, args: List[torch.Tensor],
          supported: Optional[FrozenSet[str]] = None) -> torch.fx.GraphModule:
    """make_fx(fn, tracing_mode="real")(*args), labelling every node with the
    grad mode in force when the tracer created it. Given the ops aotcache
    compiles (`supported`), the others are recorded as torch's
    decompositions write them, where torch 2.x has one (missing_op_decompositions)."""
    if _Tracer is None:
        raise ExportError("this torch has no PythonKeyTracer; update aotcache.torch_version")
    original = _Tracer.create_node

    def create_node(self, kind, target, args, kwargs, name=None, type_expr=None):
        node = original(self, kind, target, args, kwargs, name, type_expr)
        node.meta[GRAD_META_KEY] = torch.is_grad_enabled()
        return node

    original_track = _proxy_tensor.track_tensor_tree

    def track_tensor_tree(inner_res, proxy_res, *, constant, tracer):
        if isinstance(proxy_res, torch.fx.Proxy):
            if isinstance(inner_res, torch.Tensor):
                proxy_res.node.meta[RESULT_META_KEY] = _layout(inner_res)
            elif isinstance(inner_res, (tuple, list)):
                proxy_res.node.meta[RESULT_META_KEY] = [
                    _layout(e) if isinstance(e, torch.Tensor) else None for e in inner_res]
        return original_track(inner_res, proxy_res, constant=constant, tracer=tracer)

    _Tracer.create_node = create_node
    _proxy_tensor.track_tensor_tree = track_tensor_tree
    try:
        with _RefuseUnrecorded(), _CustomFunctions(regions=supported is not None):
            table = _DECOMPOSITIONS if supported is None else \
                missing_op_decompositions(supported)
            return _make_fx(fn, decomposition_table=table, tracing_mode="real")(*args)
    finally:
        _Tracer.create_node = original
        _proxy_tensor.track_tensor_tree = original_track


@contextlib.contextmanager
def traceable_mode():
    """Under torch.inference_mode tensors keep no version counter, which
    tracing reads: trace outside it, with grad off as inside it (a function
    called in inference mode compiles as under no_grad, and its results,
    made by the runtime in the caller's mode, are inference tensors as in
    eager)."""
    if torch.is_inference_mode_enabled():
        with torch.inference_mode(False), torch.no_grad():
            yield
    else:
        yield


def result_layouts(node: torch.fx.Node) -> List[Layout]:
    """The layouts of a traced call_function node's tensor results, in
    order (a getitem's: that of the element it reads)."""
    if node.target is operator.getitem:
        parent, index = node.args
        result = parent.meta.get(RESULT_META_KEY)
        if isinstance(result, list) and isinstance(index, int) and -len(result) <= index < len(result):
            element = result[index]
            return [element] if element is not None else []
        return []
    result = node.meta.get(RESULT_META_KEY)
    if isinstance(result, list):
        return [r for r in result if r is not None]
    return [result] if result is not None else []


# Tensor methods that change autograd state without reaching the dispatcher:
# make_fx (1.13) records nothing for them, so the graph would silently
# disagree with eager (e.g. `out.detach_()` vanishes and `out` would still
# require grad).  Refused while tracing.
_SET_REQUIRES_GRAD = torch.Tensor.requires_grad.__set__
_SET_DATA = torch.Tensor.data.__set__


class _RefuseUnrecorded(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch.Tensor.detach_:
            raise ExportError("Tensor.detach_() is not recorded by make_fx; use "
                              "`x = x.detach()` instead")
        if func is torch.Tensor.requires_grad_ or func == _SET_REQUIRES_GRAD:
            flag = args[1] if len(args) > 1 else kwargs.get("requires_grad", True)
            if bool(flag) != args[0].requires_grad:
                raise ExportError("changing requires_grad inside the function is not "
                                  "recorded by make_fx; set it on the argument instead")
        if func == _SET_DATA:
            raise ExportError("assigning Tensor.data inside the function is not "
                              "recorded by make_fx")
        traceable = traceable_ops.replacement(func, args, kwargs)
        if traceable is not None:
            return traceable
        if func is torch.Tensor.register_hook:
            raise ExportError("Tensor.register_hook inside the function: the compiled "
                              "backward would never call the hook; register it on an "
                              "argument or a result outside the function")
        if func is torch.Tensor.backward or func is torch.autograd.grad:
            raise ExportError("%s inside the function: aotcache compiles one forward and "
                              "derives its backward, it does not trace autograd itself; "
                              "call it on the compiled function's results"
                              % ("Tensor.backward()" if func is torch.Tensor.backward
                                 else "torch.autograd.grad"))
        return func(*args, **kwargs)


def _hardswish_2x(x: torch.Tensor) -> torch.Tensor:
    """hardswish as torch 2.x computes it, x * min(max(x + 3, 0), 6) / 6,
    written so that autograd of its ops gives 2.x's gradient: 0 for x <= -3,
    1 for x >= 3, x / 3 + 1/2 between. torch 1.13's gradient, which the
    server's rule for aten.hardswish keeps, takes the formula at -3 and 3
    too (-1/2 and 3/2)."""
    return torch.where(x <= -3, x * 0 / 6,
                       torch.where(x >= 3, x * 6 / 6, x * (x + 3) / 6))


# Ops whose semantics changed between releases, recorded as ops with the
# running release's semantics (make_fx's decomposition_table).
_DECOMPOSITIONS: Dict[Any, Callable[..., Any]] = fast_paths.decompositions()
if int(torch.__version__.split(".")[0]) >= 2:
    _DECOMPOSITIONS[torch.ops.aten.hardswish.default] = _hardswish_2x
    _DECOMPOSITIONS[torch.ops.aten.hardswish_.default] = \
        lambda x: x.copy_(_hardswish_2x(x))


def _rsub(self, other, alpha=1):
    """rsub(self, number): other - alpha * self, in ops a graph holds
    (torch's core decomposition writes sub(number, self), and no graph
    takes a number as sub's self). The same roundings: alpha * self, then
    one addition."""
    return torch.add(torch.mul(self, -alpha), other)


@functools.lru_cache(maxsize=4)
def missing_op_decompositions(supported: FrozenSet[str]) -> Dict[Any, Callable[..., Any]]:
    """_DECOMPOSITIONS, and torch's core ATen decompositions (the table
    Inductor and ExecuTorch build on; torch 2.x) of the ops outside
    `supported`: a graph then reaches aotcache in ops it compiles wherever
    torch can write it so."""
    table = dict(_DECOMPOSITIONS)
    try:
        from torch._decomp import core_aten_decompositions
    except ImportError:  # torch 1.13: none
        return table
    if "aten.rsub.Scalar" not in supported:
        table[torch.ops.aten.rsub.Scalar] = _rsub
    for op, decomposition in core_aten_decompositions().items():
        name = str(op)
        if op not in table and name not in supported and name not in _NOT_DIFFERENTIATED_SO:
            table[op] = decomposition
    return table


# Decompositions whose ops, differentiated one by one, do not give eager's
# gradient (found by tests/python/opinfo_coverage.py): log_ndtr's takes
# where() between two formulas, and the one not taken has an infinite
# derivative where the other is taken (0 * inf: NaN), where eager
# differentiates log_ndtr itself. These run eagerly instead.
_NOT_DIFFERENTIATED_SO = frozenset({"aten.special_log_ndtr.default"})


class _CustomFunctions:
    """While tracing, torch.autograd.Function.apply is ours (and so is
    Dynamo's autograd_function_apply). make_fx records a custom Function's
    forward as plain ops run under no_grad (autograd runs forward so) and
    never its backward, so the derived gradient would be wrong or missing:
    the call is recorded as a region of its own instead
    (custom_functions.py), or refused, naming the Function. The reentrant
    torch.utils.checkpoint is the exception: it only recomputes its
    function in the backward, so tracing the function itself (with grad
    mode on when some tensor argument requires grad, as the Function's
    outputs then do) gives eager's gradients.

    The replacement is installed while any thread traces, and acts only in
    the threads that trace: others get the original apply.

    torch 1.13: apply is the C classmethod of torch._C._FunctionBase (not
    in Function.__dict__); torch 2.x: a Python classmethod of Function."""

    _lock = threading.Lock()
    _active = 0
    _tracing = threading.local()
    # (whether Function has an apply of its own, the original apply): in a
    # tuple, because a classmethod stored as a class attribute here would
    # come back bound to this class.
    _saved: Tuple[bool, Any] = (False, None)

    def __init__(self, regions: bool):
        # Whether the trace records custom Functions as regions (when it
        # may split), or refuses them.
        self._regions = regions
        self._outer = False

    @classmethod
    def original_apply(cls, function: type) -> Callable:
        """function.apply as torch defines it, even while a trace has ours."""
        with cls._lock:
            if cls._active:
                return cls._saved[1].__get__(None, function)
        return function.apply

    @classmethod
    def regions(cls) -> bool:
        return getattr(cls._tracing, "regions", False)

    def __enter__(self) -> "_CustomFunctions":
        cls = type(self)
        self._outer = cls.regions()
        cls._tracing.regions = self._regions
        with cls._lock:
            if cls._active == 0:
                own = torch.autograd.Function.__dict__.get("apply")
                cls._saved = (own is not None, own if own is not None else
                              torch._C._FunctionBase.__dict__["apply"])
                torch.autograd.Function.apply = classmethod(_traced_apply)
                for op_class, (_, traced) in _REGION_OPS.items():
                    op_class.__call__ = traced
            cls._active += 1
        cls._tracing.depth = getattr(cls._tracing, "depth", 0) + 1
        return self

    def __exit__(self, *exc) -> None:
        cls = type(self)
        cls._tracing.depth -= 1
        cls._tracing.regions = self._outer
        with cls._lock:
            cls._active -= 1
            if cls._active == 0:
                had_own, original = cls._saved
                if had_own:
                    torch.autograd.Function.apply = original
                else:
                    del torch.autograd.Function.apply
                for op_class, (original, _) in _REGION_OPS.items():
                    op_class.__call__ = original


def _traced_apply(cls, *args, **kwargs):
    if not getattr(_CustomFunctions._tracing, "depth", 0):
        return _CustomFunctions._saved[1].__get__(None, cls)(*args, **kwargs)
    from torch.utils.checkpoint import CheckpointFunction
    if cls is CheckpointFunction:
        function, _preserve_rng_state, *inputs = args
        tracked = torch.is_grad_enabled() and any(
            isinstance(a, torch.Tensor) and a.requires_grad for a in inputs)
        with torch.set_grad_enabled(tracked):
            return function(*inputs)
    if _CustomFunctions.regions():
        from . import custom_functions
        return custom_functions.record_function(cls, args)
    raise ExportError(
        "custom autograd.Function %s.%s: its backward cannot be traced, so aotcache "
        "would compute another gradient than it; pass fallback='eager' to run the "
        "function eagerly" % (cls.__module__, cls.__qualname__))


function_apply = _CustomFunctions.original_apply


@contextlib.contextmanager
def below_autograd():
    """Ops called within skip autograd's dispatch keys (torch 1.13's guard
    is no context manager: it holds while it lives)."""
    guard = torch._C._AutoDispatchBelowAutograd()
    if hasattr(guard, "__enter__"):
        with guard:
            yield
    else:
        try:
            yield
        finally:
            del guard


# torch 2.x: the higher-order ops Dynamo records a custom Function and a
# checkpointed region as; while a trace may split, each call is recorded as a
# region of its own (custom_functions.py). Per op class: (its __call__, ours).
_REGION_OPS: Dict[type, Tuple[Callable, Callable]] = {}


def _region_op(import_op: Callable[[], type], record: str) -> None:
    try:
        op_class = import_op()
    except (ImportError, AttributeError):  # torch 1.13
        return
    original = op_class.__call__

    def traced(self, body, *args, **kwargs):
        if not getattr(_CustomFunctions._tracing, "depth", 0) or not _CustomFunctions.regions():
            return original(self, body, *args, **kwargs)
        from . import custom_functions
        result = getattr(custom_functions, record)(body, *args, **kwargs)
        return original(self, body, *args, **kwargs) if result is NotImplemented else result

    _REGION_OPS[op_class] = (original, traced)


def _function_apply_op() -> type:
    from torch._functorch.autograd_function import AutogradFunctionApply
    return AutogradFunctionApply


def _checkpoint_op() -> type:
    from torch._higher_order_ops.wrap import TagActivationCheckpoint
    return TagActivationCheckpoint


_region_op(_function_apply_op, "record_dynamo")
_region_op(_checkpoint_op, "record_checkpoint")


def op_name(target: Any) -> str:
    """The op overload in torch's printed form, or "getitem"."""
    if target is operator.getitem:
        return "getitem"
    if isinstance(target, torch._ops.OpOverload):
        return str(target)  # "aten.add_.Tensor"
    raise ExportError(
        "node target %r is not an ATen op overload; make_fx should only record "
        "OpOverloads and operator.getitem" % (target,))


if hasattr(torch.Tensor, "untyped_storage"):  # torch >= 2.0
    def storage_of(t: torch.Tensor):
        """t's storage, untyped (data_ptr() and nbytes() are all we use)."""
        return t.untyped_storage()
else:
    def storage_of(t: torch.Tensor):
        """t's storage, untyped (data_ptr() and nbytes() are all we use)."""
        return t._storage()  # torch 1.13 (t.storage() wraps it, at 6x the cost)


_creation_meta = getattr(torch._C._autograd, "CreationMeta", None)
if _creation_meta is not None:  # torch >= 2.0
    def as_multi_output_view(view: torch.Tensor) -> torch.Tensor:
        """view, which eager made with unbind/split/chunk, marked as autograd
        marks those: changing it in place raises (and, after its base
        changes, so does reading its grad_fn)."""
        autograd = torch._C._autograd
        if autograd._get_creation_meta(view) == _creation_meta.DEFAULT:
            autograd._set_creation_meta(view, _creation_meta.MULTI_OUTPUT_NODE)
        return view
else:
    def as_multi_output_view(view: torch.Tensor) -> torch.Tensor:
        """view, which eager made with unbind/split/chunk, made again through
        an unbind of its own (torch 1.13 cannot mark a view): changing it in
        place raises as in eager."""
        if not torch.is_grad_enabled():
            return view  # A view made under no_grad is marked so already.
        return view.unsqueeze(0).unbind(0)[0]


def storage_key(t: torch.Tensor) -> Tuple[Any, int]:
    ptr = storage_of(t).data_ptr()
    if ptr == 0:  # empty storage: nothing to alias
        return ("empty", id(t))
    return (t.device, ptr)


def storage_numel(t: torch.Tensor) -> int:
    """Storage size in elements of t's dtype (untyped nbytes / itemsize)."""
    return storage_of(t).nbytes() // t.element_size()


# torch 2.x: a GraphModule that writes its Python code at its first call
# (a compiled segment found by front key is never called itself); torch
# 1.13 writes it at once.
try:
    from torch.fx._lazy_graph_module import _LazyGraphModule as _LazyGraphModuleClass
except ImportError:  # torch 1.13
    _LazyGraphModuleClass = torch.fx.GraphModule


def graph_module(root: torch.nn.Module, graph: torch.fx.Graph) -> torch.fx.GraphModule:
    return _LazyGraphModuleClass(root, graph)


def write_code(module: Any) -> None:
    """Writes a lazy GraphModule's code (and its submodules') now."""
    if hasattr(module, "real_recompile"):
        module.real_recompile()


# torch 1.13: functional_call is torch.nn.utils.stateless's; torch 2.x has
# torch.func.functional_call (and warns on the other).
if hasattr(torch, "func") and hasattr(torch.func, "functional_call"):
    functional_call = torch.func.functional_call
else:
    functional_call = torch.nn.utils.stateless.functional_call
