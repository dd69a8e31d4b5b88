"""Compiled functions run through aotcache._core, the extension with no
torch in it (_binding.py): tensors go in as raw descriptions of their
memory, borrowed without a copy, and results come back as views of the
argument they lie in or through DLPack over the runtime's memory. Training
mode's node is a torch.autograd.Function doing what _native's C++ node does
(client/python/native/training_function.cc): the forward artifact runs as
one node of torch's autograd graph, whose backward runs the backward
artifact on the tangents. The values the forward saves for the backward
stay in the runtime's memory (_core.KeptTensor), never torch tensors.

Thread-safety: a TrainingPlan may run from several threads at once.
"""

from typing import Any, List, Optional, Sequence, Tuple

import torch

from ._binding import USES_NATIVE, extension
from .errors import Internal, Unimplemented
from .torch_version import storage_of

_DTYPE_NAMES = {torch.float32: "float32", torch.float64: "float64",
                torch.int64: "int64", torch.int32: "int32",
                torch.uint8: "uint8", torch.bool: "bool"}


def _raw(t: torch.Tensor, origin: int = 0) -> Tuple[Any, ...]:
    """t as _core borrows it (raw_tensors.h's RawTensor)."""
    if not t.is_cpu:
        raise ValueError("aotcache runs on the CPU; got a %s tensor" % t.device)
    dtype = _DTYPE_NAMES.get(t.dtype)
    if dtype is None:
        raise ValueError("aotcache supports float32, float64, int64, int32, uint8 "
                         "and bool, not %s" % str(t.dtype).replace("torch.", ""))
    storage = storage_of(t)
    return (storage.data_ptr(), storage.nbytes(), t.storage_offset(), t.shape, t.stride(),
            dtype, origin)


# A saved value _core keeps in the runtime's memory. Under _native (whose
# node is C++) nothing here runs, and _core is not loaded beside it.
_KEPT = () if USES_NATIVE else extension.KeptTensor

# What torch.utils.dlpack.from_dlpack calls for a capsule, past its checks
# for other producers.
_from_dlpack = torch._C._from_dlpack


def _tensor(result: Tuple[Any, ...], args: Sequence[torch.Tensor]) -> torch.Tensor:
    """A result of _core (raw_tensors.h's ToPython) as a torch tensor."""
    if isinstance(result[0], int):  # In args[i]'s memory: a view of it.
        i, shape, stride, offset = result
        return args[i].detach().as_strided(shape, stride, offset)
    capsule, dtype, shape, stride, offset = result
    t = _from_dlpack(capsule)
    if dtype == "bool":
        t = t.view(torch.bool)
    return t.as_strided(shape, stride, offset) if offset else t


def run_forward(function, inputs: List[torch.Tensor], seed: int,
                origins: Sequence[int]) -> List[torch.Tensor]:
    """The forward artifact's results for `inputs`."""
    raw = function.run_forward([_raw(t, o) for t, o in zip(inputs, origins)], seed)
    return [_tensor(r, inputs) for r in raw]


class TrainingPlan:
    """What the metadata says about running one function in training mode
    (the arguments of _native.TrainingStep), and its run."""

    def __init__(self, function, *, num_mutated: int, num_user: int, num_bases: int,
                 function_user: List[int], member: List[bool], mutated_data: List[bool],
                 tangent_positions: List[int], tangent_shapes: List[List[int]],
                 tangent_dtypes: List[str], non_differentiable: List[int]):
        self.function = function
        self.num_mutated = num_mutated
        self.num_user = num_user
        self.num_bases = num_bases
        self.function_user = function_user
        self.member = member
        self.mutated_data = mutated_data
        self.tangent_positions = tangent_positions
        self.tangent_shapes = tangent_shapes
        self.tangent_dtypes = [getattr(torch, d[len("DTYPE_"):].lower())
                               for d in tangent_dtypes]
        self.non_differentiable = non_differentiable

    def run(self, inputs: List[torch.Tensor], differentiable: List[torch.Tensor],
            seed: int = 0, origins: Sequence[int] = ()) -> List[torch.Tensor]:
        """The node's outputs: new values of mutated inputs, the user
        outputs it returns, the intermediate bases. origins[i]: where the
        runtime sees inputs[i]'s storage begin (none: at its start)."""
        if len(inputs) != len(self.member):
            raise ValueError("the training step takes %d inputs, not %d"
                             % (len(self.member), len(inputs)))
        origins = origins or [0] * len(inputs)
        memory = (inputs, origins, seed)
        if torch.is_grad_enabled():
            return list(_BASE_APPLY(self, memory, *differentiable))
        with torch.enable_grad():
            return list(_BASE_APPLY(self, memory, *differentiable))


def _owned(result: Tuple[Any, ...], args: Sequence[torch.Tensor]) -> torch.Tensor:
    """A result for the caller to own: copied when it lies in an input's
    memory, which the epilogue may write."""
    t = _tensor(result, args)
    return t.clone() if isinstance(result[0], int) else t


class _CompiledStep(torch.autograd.Function):
    @staticmethod
    def forward(ctx, plan: TrainingPlan, memory, *differentiable):  # type: ignore[override]
        inputs, origins, seed = memory
        k = plan.num_mutated
        first_saved = k + plan.num_user + plan.num_bases
        raw = plan.function.run_forward(
            [_raw(t, o) for t, o in zip(inputs, origins)], seed, first_saved)
        saved_inputs: List[torch.Tensor] = []
        # Per saved value: (index among the saved inputs, shape, stride,
        # offset, origin) for a view of an input (saved through
        # save_for_backward, so that eager's check against in-place writes
        # fires); a copy of it, for an input the epilogue writes; else the
        # runtime's KeptTensor, handed back to the backward as it is.
        values: List[Any] = []
        for r in raw[first_saved:]:
            if not isinstance(r, tuple):
                values.append(r)
                continue
            arg = r[0]
            if not plan.mutated_data[arg] and not plan.member[arg]:
                values.append((len(saved_inputs), r[1], r[2], r[3], origins[arg]))
                saved_inputs.append(inputs[arg])
            else:
                values.append(_owned(r, inputs))
        ctx.save_for_backward(*saved_inputs)
        ctx.plan = plan
        ctx.values = values
        outs = [_tensor(r, inputs) for r in raw[:k]]
        outs += [_owned(raw[k + j], inputs) for j in plan.function_user]
        outs += [_tensor(r, inputs) for r in raw[k + plan.num_user:first_saved]]
        if plan.non_differentiable:
            ctx.mark_non_differentiable(*[outs[n] for n in plan.non_differentiable])
        return tuple(outs)

    @staticmethod
    def backward(ctx, *grads):  # type: ignore[override]
        if torch.is_grad_enabled():
            raise Unimplemented(
                "aotcache: double backward (create_graph=True) through a compiled "
                "function is not supported: its backward is compiled and not "
                "differentiable. Compute the gradient penalty eagerly (call the "
                "uncompiled function for that step).")
        plan: TrainingPlan = ctx.plan
        saved_inputs = ctx.saved_tensors
        saved: List[Any] = []
        # The torch tensors a gradient may lie in (None for a KeptTensor:
        # the runtime gives no gradient as a view of one).
        values: List[Optional[torch.Tensor]] = []
        for v in ctx.values:
            if isinstance(v, _KEPT):
                values.append(None)
                saved.append(v)
            elif isinstance(v, torch.Tensor):
                values.append(v)
                saved.append(_raw(v))
            else:
                index, shape, stride, offset, origin = v
                t = saved_inputs[index].detach().as_strided(shape, stride, offset)
                values.append(t)
                saved.append(_raw(t, origin))
        tangents = []
        for position, shape, dtype in zip(plan.tangent_positions, plan.tangent_shapes,
                                          plan.tangent_dtypes):
            g: Optional[torch.Tensor] = grads[position] if position >= 0 else None
            tangents.append(g if g is not None else torch.zeros(shape, dtype=dtype))
        values += tangents
        input_grads, base_grads = plan.function.run_backward(
            saved, [_raw(t) for t in tangents])
        if len(input_grads) != len(plan.member):
            raise Internal("the backward returned %d input gradients, not %d"
                           % (len(input_grads), len(plan.member)))
        out: List[Optional[torch.Tensor]] = [None, None]
        for i, g in enumerate(input_grads):
            if not plan.member[i]:
                out.append(None if g is None else _tensor(g, values))
        out += [None if g is None else _tensor(g, values) for g in base_grads]
        return tuple(out)


# _CompiledStep.apply past Function.apply's Python layer (torch._C's
# _FunctionBase.apply, which it ends in): that layer serves functorch's
# transforms and setup_context and costs a third of a bare node's apply; a
# compiled function refuses to run under a transform (AotFunction.__call__)
# before it gets here.
_BASE_APPLY = super(torch.autograd.Function, _CompiledStep).apply
