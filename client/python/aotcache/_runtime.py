"""How a compiled function runs: PyTorch's AOTAutograd runtime wrappers
(SEMANTICS.md §5; runtime_wrappers.py), over the artifacts of aotcache.

The C++ runtime (aotcache._native) runs the forward and backward artifacts
on the caller's memory; this module applies the epilogue with torch's own
ops, so that version counters, autograd history, aliasing and requires_grad
come out as in eager:

* mutated inputs are written back with copy_ (under no_grad when every
  mutation ran under no_grad; through detach() for a leaf that requires
  grad) and as_strided_ for metadata mutations;
* outputs that alias inputs, intermediates or other outputs are regenerated
  as views of their base (view replay);
* in training mode one torch.autograd.Function runs the forward, and its
  backward runs the backward artifact on the tangents in PyTorch's order;
  an input no gradient reaches gets None.

Thread-safety: a CompiledEntry may run from several threads.
"""

import json
from typing import Any, List, Optional, Sequence, Tuple

import torch
from torch.utils.dlpack import from_dlpack

from . import fx_export
from .torch_version import storage_of

_DTYPE_NAMES = {
    torch.float32: "float32",
    torch.float64: "float64",
    torch.int64: "int64",
    torch.bool: "bool",
}

NON_ALIAS = "OUTPUT_TYPE_NON_ALIAS"
ALIAS_OF_INPUT = "OUTPUT_TYPE_ALIAS_OF_INPUT"
IS_INPUT = "OUTPUT_TYPE_IS_INPUT"
ALIAS_OF_INTERMEDIATE = ("OUTPUT_TYPE_ALIAS_OF_INTERMEDIATE_SAVE_AS_OUTPUT",
                         "OUTPUT_TYPE_ALIAS_OF_INTERMEDIATE")
BASE_IS_USER_OUTPUT = "OUTPUT_TYPE_ALIAS_OF_INTERMEDIATE_BASE_IS_USER_OUTPUT"

TANGENT_POSITION = {
    "TANGENT_SOURCE_MUTATED_INPUT": "mutated",
    "TANGENT_SOURCE_USER_OUTPUT": "user",
    "TANGENT_SOURCE_INTERMEDIATE_BASE": "base",
}


def spec(t: torch.Tensor) -> Tuple[int, int, List[int], List[int], int, str]:
    """The TensorSpec of t: its memory, for the C++ runtime to borrow."""
    storage = storage_of(t)
    return (storage.data_ptr(), storage.nbytes() // t.element_size(), list(t.shape),
            list(t.stride()), t.storage_offset(), _DTYPE_NAMES[t.dtype])


def _layout(meta) -> Tuple[List[int], List[int], int]:
    """(shape, stride, offset) of a TensorMeta in proto3 JSON (int64s are
    strings there)."""
    return ([int(x) for x in meta.get("shape", [])], [int(x) for x in meta.get("stride", [])],
            int(meta.get("storage_offset", 0)))


def _view(base: torch.Tensor, meta) -> Optional[torch.Tensor]:
    """base's memory seen as `meta`, if it fits; else None."""
    shape, stride, offset = _layout(meta)
    extent = offset + sum((s - 1) * st for s, st in zip(shape, stride)) + 1
    if any(s == 0 for s in shape):
        extent = offset
    if extent > storage_of(base).nbytes() // base.element_size():
        return None
    return base.as_strided(shape, stride, offset)


class CompiledEntry:
    """One compiled signature: the native function and what its metadata
    says about running it."""

    def __init__(self, native, lifted: Sequence[torch.Tensor],
                 version_moved: Sequence[bool] = ()):
        self.native = native
        self.lifted = list(lifted)
        # Inputs written only through `.data` in eager: written back the
        # same way, leaving their version counter and history alone.
        self.through_data = {i for i, moved in enumerate(version_moved) if not moved}
        metadata = json.loads(native.metadata_json())
        convention = json.loads(native.convention_json())
        vmd = metadata["view_and_mutation"]
        self.inputs = vmd.get("inputs", [])
        self.outputs = vmd.get("outputs", [])
        self.tangents = vmd.get("tangents", [])
        self.synthetic_bases = vmd.get("synthetic_bases", [])
        self.original_outputs = metadata.get("original_outputs", [])
        self.original_bases = metadata.get("original_intermediate_bases", [])
        self.inputs_after = metadata.get("inputs_after", [])
        self.mutated = [i for i, info in enumerate(self.inputs)
                        if info["mutates_data"] or info["mutates_metadata"]]
        self.num_user = int(convention["num_user_outputs"])
        self.num_bases = int(convention["num_intermediate_bases"])
        if int(convention["num_mutated_inputs"]) != len(self.mutated):
            raise RuntimeError("aotcache: the artifact returns %s mutated inputs, the "
                               "metadata names %d" % (convention["num_mutated_inputs"],
                                                     len(self.mutated)))
        self.training = native.mode == "training"
        self.members = {int(i) for sb in self.synthetic_bases for i in sb["inputs"]}
        # The user outputs the training Function returns: not those that lie
        # in an input's memory (regenerated as views of the caller's tensor).
        self.function_user = [j for j, o in enumerate(self.outputs)
                              if o["output_type"] not in (IS_INPUT, ALIAS_OF_INPUT)]
        # Fixed per entry, computed once rather than on every call: which
        # mutated inputs are written, where each tangent's output sits
        # among the Function's outputs (None: not one of them), the other
        # outputs (not differentiable), and each tangent's layout.
        self.mutated_data = {i for i in self.mutated if self.inputs[i]["mutates_data"]}
        positions = {("mutated", i): n for n, i in enumerate(self.mutated)}
        first_user = len(self.mutated)
        for n, j in enumerate(self.function_user):
            positions[("user", j)] = first_user + n
        first_base = first_user + len(self.function_user)
        for b in range(self.num_bases):
            positions[("base", b)] = first_base + b
        self.tangent_positions = [
            positions.get((TANGENT_POSITION[t["source"]], int(t.get("index", 0))))
            for t in self.tangents]
        needed = {p for p in self.tangent_positions if p is not None}
        self.non_differentiable = [n for n in range(first_base + self.num_bases)
                                   if n not in needed]
        self.tangent_layouts = [
            ([int(x) for x in t["meta"].get("shape", [])],
             fx_export.dtype_of_name(t["meta"]["dtype"])) for t in self.tangents]

    # -- running ---------------------------------------------------------

    def __call__(self, inputs: List[torch.Tensor]):
        if self.training:
            # The Function's inputs: the inputs, but one tensor covering the
            # storage in place of mutated inputs that share it (autograd
            # carries its gradient to them). Recorded whatever the caller's
            # grad mode: the function's own enable_grad regions made outputs
            # that require grad (those that must not are detached below).
            differentiable = [t for i, t in enumerate(inputs) if i not in self.members]
            bases = [_synthetic_base(inputs, sb) for sb in self.synthetic_bases]
            with torch.enable_grad():
                outs = list(_CompiledFunction.apply(self, inputs, *differentiable, *bases))
            k = len(self.mutated)
            new_values = outs[:k]
            user: List[Any] = [None] * self.num_user
            for n, j in enumerate(self.function_user):
                user[j] = outs[k + n]
            bases = outs[k + len(self.function_user):]
        else:
            with torch.no_grad():
                raw = self.forward_raw(inputs)
            k = len(self.mutated)
            new_values = raw[:k]
            user = raw[k:k + self.num_user]
            bases = raw[k + self.num_user:k + self.num_user + self.num_bases]
        self._write_back(inputs, new_values)
        return self._replay_outputs(inputs, user, bases)

    def forward_raw(self, inputs: Sequence[torch.Tensor]) -> List[Any]:
        """The forward artifact's results: torch tensors over the runtime's
        memory, or ("arg", i, shape, stride, offset) for results that lie in
        input i's memory."""
        return self.native.run_forward([spec(t) for t in inputs])

    def _write_back(self, inputs, new_values) -> None:
        for i, new in zip(self.mutated, new_values):
            info = self.inputs[i]
            inp = inputs[i]
            if info["mutates_metadata"]:
                # Recorded by autograd as eager records transpose_ and the
                # like, except on a leaf (whose layout eager changes only
                # where autograd does not see it).
                shape, stride, offset = _layout(self.inputs_after[i])
                with torch.set_grad_enabled(not inp.is_leaf and torch.is_grad_enabled()):
                    inp.as_strided_(shape, stride, offset)
            if not info["mutates_data"]:
                continue
            new = as_tensor(new, inputs)
            if i in self.through_data:
                inp.data.copy_(new)
            elif info["mutations_under_no_grad_or_inference_mode"]:
                with torch.no_grad():
                    inp.copy_(new)
            elif inp.is_leaf and inp.requires_grad:
                inp.detach().copy_(new)
            else:
                with torch.enable_grad():
                    inp.copy_(new)

    def _replay_outputs(self, inputs, user, bases) -> List[torch.Tensor]:
        outs: List[Optional[torch.Tensor]] = [None] * self.num_user
        for j, info in enumerate(self.outputs):
            kind = info["output_type"]
            replayed = None
            if kind == IS_INPUT:
                replayed = inputs[int(info["base_idx"])]
            elif kind == ALIAS_OF_INPUT:
                replayed = _view(inputs[int(info["base_idx"])], self.original_outputs[j])
            elif kind in ALIAS_OF_INTERMEDIATE:
                replayed = _view(bases[int(info["base_idx"])], self.original_outputs[j])
            outs[j] = replayed if replayed is not None else as_tensor(user[j], inputs)
        for j, info in enumerate(self.outputs):
            if info["output_type"] == BASE_IS_USER_OUTPUT:
                v = _view(outs[int(info["base_idx"])], self.original_outputs[j])
                if v is not None:
                    outs[j] = v
        for j, info in enumerate(self.outputs):
            if outs[j].requires_grad and not info["requires_grad"]:
                outs[j] = outs[j].detach()
        return outs  # type: ignore[return-value]


def _synthetic_base(inputs: Sequence[torch.Tensor], sb) -> torch.Tensor:
    """The tensor that stands for mutated inputs sharing a storage: one that
    covers the storage and that every member is (or is a view of), so that
    gradients reach the members through autograd's view tracking."""
    members = [inputs[int(i)] for i in sb["inputs"]]
    size = int(sb["size"])
    if not any(m.requires_grad for m in members):
        return members[0].detach().as_strided((size,), (1,), 0)
    for c in [m._base for m in members if m._base is not None] + members:
        covers = (c.storage_offset() == 0 and c.is_contiguous() and c.numel() == size)
        if covers and all(m is c or m._base is c for m in members):
            return c.view(-1)
    raise NotImplementedError(
        "aotcache: inputs %s share a storage, are mutated and require grad, but are not "
        "views of one tensor covering it; pass that tensor instead"
        % [int(i) for i in sb["inputs"]])


def _lies_in_input(result) -> bool:
    return isinstance(result, tuple) and result[0] == "arg"


def _owned(result, inputs: Sequence[torch.Tensor]) -> torch.Tensor:
    """as_tensor, copied when it lies in an input's memory (which the
    epilogue may write)."""
    t = as_tensor(result, inputs)
    return t.clone() if _lies_in_input(result) else t


def as_tensor(result, inputs: Sequence[torch.Tensor]) -> torch.Tensor:
    """A forward or backward result as a torch tensor: over the runtime's
    memory (a DLPack capsule torch takes over), or a view of the input it
    lies in."""
    if isinstance(result, torch.Tensor):
        return result
    if isinstance(result, tuple):
        if result[0] == "bool":  # Bytes: torch 1.13's DLPack has no bool.
            return from_dlpack(result[1]).view(torch.bool)
        _, i, shape, stride, offset = result
        return inputs[i].detach().as_strided(shape, stride, offset)
    return from_dlpack(result)


class _CompiledFunction(torch.autograd.Function):
    """Training mode: the forward artifact as one autograd node whose
    backward runs the backward artifact.

    Outputs: the new values of mutated inputs, the user outputs that do not
    lie in an input's memory (those are regenerated as views of the caller's
    tensors), then the intermediate bases.
    """

    @staticmethod
    def forward(ctx, entry: CompiledEntry, inputs, *differentiable):
        # `inputs` are the function's inputs (their memory); `differentiable`
        # are the inputs that are not members of a synthetic base, then the
        # synthetic bases: they get the gradients.
        raw = entry.forward_raw(inputs)
        k = len(entry.mutated)
        first_saved = k + entry.num_user + entry.num_bases
        mutated_data = entry.mutated_data
        # Saved values in an input's memory: the input goes through
        # save_for_backward (eager's in-place check still fires), unless the
        # epilogue is about to write it, in which case they are copied now.
        saved_inputs, saved = [], []
        for r in raw[first_saved:]:
            if (_lies_in_input(r) and r[1] not in mutated_data
                    and r[1] not in entry.members):
                saved.append(("input", len(saved_inputs), r[2:]))
                saved_inputs.append(inputs[r[1]])
            else:
                saved.append(("tensor", _owned(r, inputs), None))
        ctx.save_for_backward(*saved_inputs)
        ctx.saved = saved
        ctx.entry = entry

        # The new values of mutated inputs, the user outputs the Function
        # returns, the intermediate bases (as entry.tangent_positions count).
        outs = [as_tensor(raw[n], inputs) for n in range(k)]
        outs += [_owned(raw[k + j], inputs) for j in entry.function_user]
        outs += [as_tensor(raw[k + entry.num_user + b], inputs)
                 for b in range(entry.num_bases)]
        if entry.non_differentiable:
            ctx.mark_non_differentiable(*[outs[n] for n in entry.non_differentiable])
        return tuple(outs)

    @staticmethod
    def backward(ctx, *grads):
        entry = ctx.entry
        saved_inputs = ctx.saved_tensors
        saved = []
        for kind, value, layout in ctx.saved:
            if kind == "input":
                shape, stride, offset = layout
                saved.append(saved_inputs[value].detach().as_strided(shape, stride, offset))
            else:
                saved.append(value)
        tangents = []
        for (shape, dtype), position in zip(entry.tangent_layouts, entry.tangent_positions):
            g = grads[position] if position is not None else None
            if g is None:
                g = torch.zeros(shape, dtype=dtype)
            tangents.append(g)
        all_tensors = saved + tangents
        input_grads, base_grads = entry.native.run_backward(
            [spec(s) for s in saved], [spec(g) for g in tangents])
        out = [None if g is None else as_tensor(g, all_tensors)
               for i, g in enumerate(input_grads) if i not in entry.members]
        out += [None if g is None else as_tensor(g, all_tensors) for g in base_grads]
        return (None, None) + tuple(out)
