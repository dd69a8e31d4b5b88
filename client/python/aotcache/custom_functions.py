"""Custom autograd.Functions and checkpointed regions in a traced graph,
as regions of their own.

make_fx records a custom Function's forward as plain ops and never its
backward, so a graph holding one would differentiate the wrong thing. The
trace records each call instead as one node of the op `aotcache::region`
(its tensor arguments and the region's key), which no aotcache graph
holds: graph_split.py leaves it out of the segments, and SplitGraph runs
the region there with the Function's own backward:

* torch.compile: Dynamo hands a Function over as the higher-order op
  `autograd_function_apply` with its forward and backward traced into
  graphs of their own. Both are compiled (each an aot_function of its own,
  with its own cache entries) and run as one autograd node: the compiled
  forward under no_grad, the compiled backward on its gradients.
* torch.compile: torch.utils.checkpoint arrives as
  `tag_activation_checkpoint` with its body traced: the body is compiled
  and run without autograd in the forward, and again with it in the
  backward (recomputed, as eager does), under the random state it first
  ran with.
* aot_function: the Function's Python class. It runs through
  `Function.apply` itself, eagerly, between the compiled segments.

A Function that writes its input in place (mark_dirty) is refused as
before (the whole function runs eagerly).

Thread-safety: the registry is guarded by a lock; regions run from any
thread.
"""

import hashlib
import itertools
import json
import threading
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import torch
import torch.fx

from . import front_key
from .errors import ExportError
from .torch_version import below_autograd, function_apply, storage_key

_lock = threading.Lock()
_regions: Dict[str, "Region"] = {}
_numbers = itertools.count()
_library: List[Any] = []  # The torch.library.Library defining the op, once.


class Region:
    """One custom Function call site: what the trace records and how the
    split graph runs it."""

    name = "custom autograd.Function"
    compiled = False  # Whether its forward and backward are compiled.

    def values(self, args: Sequence[torch.Tensor]) -> List[torch.Tensor]:
        """The forward's results for `args`, without autograd (at the trace)."""
        raise NotImplementedError

    def runner(self, compile_graph: Callable[[torch.fx.GraphModule], Any]) -> "RegionRunner":
        raise NotImplementedError


class RegionRunner:
    """A region made runnable: called with its tensor arguments (and its
    key, which the node also carries), it returns its results, recorded
    by autograd with the Function's backward."""

    def __call__(self, args: List[torch.Tensor], key: str) -> List[torch.Tensor]:
        raise NotImplementedError

    def cache_info(self) -> List[Dict[str, Any]]:
        return []


def _define_op() -> None:
    with _lock:
        if _library:
            return
        lib = torch.library.Library("aotcache", "DEF")
        lib.define("region(Tensor[] args, str key) -> Tensor[]")
        lib.impl("region", _traced_values, "CPU")
        _library.append(lib)


def _traced_values(args: List[torch.Tensor], key: str) -> List[torch.Tensor]:
    return lookup(key).values(args)


def lookup(key: str) -> Region:
    """KeyError for a region this process never recorded."""
    with _lock:
        return _regions[key]


def is_region(target: Any) -> bool:
    return bool(_library) and target is torch.ops.aotcache.region.default


def record(region: Region, key: str, args: Sequence[Any]) -> List[torch.Tensor]:
    """Within a trace: the region's call as one node of the region op."""
    if not all(isinstance(a, torch.Tensor) for a in args):
        raise ExportError("%s takes an argument that is not a tensor" % region.name)
    _define_op()
    with _lock:
        _regions.setdefault(key, region)
    with below_autograd():
        return torch.ops.aotcache.region.default(list(args), key)


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.is_floating_point():
        return torch.equal(a.isnan(), b.isnan()) and torch.equal(a.nan_to_num(), b.nan_to_num())
    return torch.equal(a, b)


def _fresh(outs: Sequence[Any], args: Sequence[torch.Tensor], name: str) -> List[torch.Tensor]:
    """outs as the region op returns them at the trace: tensors (a result
    sharing memory with an argument copied, as the op's schema promises;
    the graph only reads their values, and the region run gives the
    Function's own results)."""
    storages = {storage_key(a) for a in args}
    result = []
    for o in outs:
        if not isinstance(o, torch.Tensor):
            raise ExportError("%s returns %r, not a tensor" % (name, type(o).__name__))
        result.append(o.clone() if storage_key(o) in storages else o)
    return result


# -- torch.compile: Dynamo's autograd_function_apply ------------------------


class DynamoRegion(Region):
    """A Function as Dynamo traced it: forward and backward graphs."""

    compiled = True

    def __init__(self, fwd: torch.fx.GraphModule, bwd: torch.fx.GraphModule,
                 options: Dict[str, Any]):
        self.fwd = fwd
        self.bwd = bwd
        self.non_differentiable = [int(i) for i in options.get("non_differentiable_idx", [])]
        self.checked = [int(i) for i in options.get("saved_for_backward_idx", [])]
        self.name = "custom autograd.Function (%s)" % type(fwd).__name__

    def values(self, args):
        with torch.no_grad():
            output, _ = torch.fx.Interpreter(self.fwd).run(*args)
        single = isinstance(output, torch.Tensor)
        return _fresh([output] if single else list(output), args, self.name)

    def runner(self, compile_graph):
        return _DynamoRunner(self, compile_graph(self.fwd), compile_graph(self.bwd))


def _key(kind: str, graphs: Sequence[torch.fx.GraphModule], options: Dict[str, Any]) -> str:
    """A region's key: its graphs' canonical form and options, hashed (the
    same in every process), or a number of this process's."""
    material = [front_key.graph_material(g) for g in graphs]
    if None in material:
        return "%s#%d" % (kind, next(_numbers))
    text = json.dumps([material, sorted((k, repr(v)) for k, v in options.items())])
    return "%s:%s" % (kind, hashlib.sha256(text.encode()).hexdigest())


def record_dynamo(fwd: torch.fx.GraphModule, bwd: torch.fx.GraphModule, *args: Any,
                  **options: Any) -> Tuple[torch.Tensor, ...]:
    """autograd_function_apply(fwd, bwd, *args, **options) within a trace."""
    if options.get("dirty_idx"):
        raise ExportError("custom autograd.Function (%s) writes its input in place "
                          "(mark_dirty)" % type(fwd).__name__)
    key = _key("dynamo", [fwd, bwd], options)
    return tuple(record(DynamoRegion(fwd, bwd, options), key, args))


class _DynamoRunner(RegionRunner):
    def __init__(self, region: DynamoRegion, forward: Any, backward: Any):
        self.region = region
        self.forward = forward
        self.backward = backward

    def __call__(self, args, key):
        return list(_DynamoApply.apply(self, *args))

    def cache_info(self):
        return [dict(row, custom_function=part)
                for part, f in (("forward", self.forward), ("backward", self.backward))
                for row in f.cache_info()]


class _DynamoApply(torch.autograd.Function):
    """torch's ApplyTemplate (autograd_function_apply) over the compiled
    forward and backward."""

    @staticmethod
    def forward(ctx, run: _DynamoRunner, *args):
        output, saved = run.forward(*args)
        outs = [output] if isinstance(output, torch.Tensor) else list(output)
        region = run.region
        ctx.run = run
        # save_for_backward's values are checked for in-place changes at
        # the backward, the others (stashed on ctx in eager) are not.
        ctx.save_for_backward(*[saved[i] for i in region.checked])
        ctx.saved = [None if i in region.checked else s for i, s in enumerate(saved)]
        ctx.mark_non_differentiable(*[outs[i] for i in region.non_differentiable])
        return tuple(outs)

    @staticmethod
    def backward(ctx, *grads):
        saved = list(ctx.saved)
        for i, value in zip(ctx.run.region.checked, ctx.saved_tensors):
            saved[i] = value
        result = ctx.run.backward(*grads, *saved)
        if isinstance(result, torch.Tensor):
            result = (result,)
        return (None,) + tuple(result)


# -- aot_function: the Function's class --------------------------------------


class FunctionRegion(Region):
    """A Function's class and the arguments of one call that are not
    tensors, run through Function.apply itself."""

    def __init__(self, cls: type, args: Sequence[Any]):
        self.cls = cls
        self.template = [None if isinstance(a, torch.Tensor) else a for a in args]
        self.single: Optional[bool] = None
        self.name = "custom autograd.Function %s.%s" % (cls.__module__, cls.__qualname__)

    def call_args(self, tensors: Sequence[torch.Tensor]) -> List[Any]:
        it = iter(tensors)
        return [next(it) if a is None else a for a in self.template]

    def values(self, args):
        # Below autograd, in-place writes move no version counter: compare.
        before = [a.clone() for a in args]
        with torch.no_grad():
            output = function_apply(self.cls)(*self.call_args(args))
        if not all(_same(b, a) for b, a in zip(before, args)):
            raise ExportError("%s writes its input in place" % self.name)
        self.single = isinstance(output, torch.Tensor)
        outs = [output] if self.single else list(output)
        return _fresh(outs, args, self.name)

    def runner(self, compile_graph):
        return _FunctionRunner(self)


def record_function(cls: type, args: Sequence[Any]) -> Any:
    """cls.apply(*args) within a trace."""
    region = FunctionRegion(cls, args)
    key = "function#%d" % next(_numbers)
    outs = record(region, key, [a for a in args if isinstance(a, torch.Tensor)])
    return outs[0] if region.single else tuple(outs)


class _FunctionRunner(RegionRunner):
    def __init__(self, region: FunctionRegion):
        self.region = region

    def __call__(self, args, key):
        output = function_apply(self.region.cls)(*self.region.call_args(args))
        return [output] if isinstance(output, torch.Tensor) else list(output)


# -- torch.compile: torch.utils.checkpoint (tag_activation_checkpoint) -------


class CheckpointRegion(Region):
    """A checkpointed region as Dynamo traced it: its body, compiled, runs
    under no_grad in the forward (keeping only its inputs) and again,
    recorded, in the backward, with the random state it first ran with,
    as torch.utils.checkpoint recomputes it."""

    compiled = True
    name = "torch.utils.checkpoint"

    def __init__(self, body: torch.fx.GraphModule):
        self.body = body

    def values(self, args):
        with torch.no_grad():
            return _fresh(list(self.body(*args)), args, self.name)

    def runner(self, compile_graph):
        return _CheckpointRunner(compile_graph(self.body))


def record_checkpoint(body: torch.fx.GraphModule, *args: Any, **options: Any) -> Any:
    """tag_activation_checkpoint(body, *args, **options) within a trace;
    NotImplemented (traced through) for a selective checkpoint's policy."""
    if "_checkpoint_context_fn" in body.meta or \
            not all(isinstance(a, torch.Tensor) for a in args):
        return NotImplemented
    return tuple(record(CheckpointRegion(body), _key("checkpoint", [body], options), args))


class _CheckpointRunner(RegionRunner):
    def __init__(self, body: Any):
        self.body = body

    def __call__(self, args, key):
        return list(_Recompute.apply(self, *args))

    def cache_info(self):
        return [dict(row, checkpoint=True) for row in self.body.cache_info()]


class _Recompute(torch.autograd.Function):
    """The checkpointed body: run without autograd, then recomputed with
    it at the backward (torch.utils.checkpoint's contract)."""

    @staticmethod
    def forward(ctx, run: _CheckpointRunner, *args):
        ctx.run = run
        ctx.rng = torch.get_rng_state()
        ctx.save_for_backward(*args)
        return tuple(run.body(*args))

    @staticmethod
    def backward(ctx, *grads):
        inputs = [a.detach().requires_grad_(a.requires_grad) for a in ctx.saved_tensors]
        state = torch.get_rng_state()
        torch.set_rng_state(ctx.rng)
        try:
            with torch.enable_grad():
                outs = ctx.run.body(*inputs)
        finally:
            torch.set_rng_state(state)
        pairs = [(o, g) for o, g in zip(outs, grads) if o.requires_grad and g is not None]
        wanted = [i for i in inputs if i.requires_grad]
        found = iter(torch.autograd.grad([o for o, _ in pairs], wanted, [g for _, g in pairs],
                                         allow_unused=True) if pairs and wanted else ())
        return (None,) + tuple(next(found, None) if i.requires_grad else None for i in inputs)
