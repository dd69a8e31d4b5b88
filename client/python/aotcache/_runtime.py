"""How a compiled function runs: PyTorch's AOTAutograd runtime wrappers
(SEMANTICS.md §5; runtime_wrappers.py), over the artifacts of aotcache.

The C++ runtime (the extension _binding.py chooses) runs the forward and
backward artifacts on the caller's memory; in training mode it runs them as
one node of torch's autograd graph (_native.TrainingStep in C++, or
_torch_node.TrainingPlan), whose backward runs the backward artifact on the
tangents in PyTorch's order, and an input no gradient reaches gets None. This module applies the epilogue with torch's
own ops, so that version counters, autograd history, aliasing and
requires_grad come out as in eager:

* mutated inputs are written back with copy_ (under no_grad when every
  mutation ran under no_grad; through detach() for a leaf that requires
  grad) and as_strided_ for metadata mutations;
* outputs that alias inputs, intermediates or other outputs are regenerated
  as views of their base (view replay).

Thread-safety: a CompiledEntry may run from several threads.
"""

import json
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch

from . import _torch_node
from ._binding import USES_NATIVE, extension, set_blas_threads
from .errors import Internal, Unimplemented
from .torch_version import as_multi_output_view, storage_of

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


def _layout(meta) -> Tuple[List[int], List[int], int]:
    """(shape, stride, offset) of a TensorMeta in proto3 JSON (int64s are
    strings there)."""
    return ([int(x) for x in meta.get("shape", [])], [int(x) for x in meta.get("stride", [])],
            int(meta.get("storage_offset", 0)))


def _numel(meta) -> int:
    n = 1
    for s in _layout(meta)[0]:
        n *= s
    return n


def _check_growth(t: torch.Tensor, i: int, numel: int) -> None:
    """The compiled resize_ fills the elements it adds with zeros; eager's
    shows what the storage holds there when it reaches past the tensor."""
    if numel > t.numel() and storage_of(t).nbytes() // t.element_size() > \
            t.storage_offset() + t.numel():
        raise Unimplemented(
            "aotcache: resize_ grows input %d into memory its storage holds past it, "
            "which eager would show; resize only tensors that end their storage (or "
            "call the function eagerly)" % i)


def _view(base: torch.Tensor, meta, delta: int = 0) -> Optional[torch.Tensor]:
    """base's memory seen as `meta` (its offset moved by `delta`: where the
    memory the trace saw begins in base's storage), if it fits; else None."""
    shape, stride, offset = _layout(meta)
    offset += delta
    extent = offset + sum((s - 1) * st for s, st in zip(shape, stride)) + 1
    if any(s == 0 for s in shape):
        extent = offset
    if extent > storage_of(base).nbytes() // base.element_size():
        return None
    return base.as_strided(shape, stride, offset)


_blas_threads = [0]  # what set_blas_threads was last given
_BLAS_THREADS_FROM_ENV = bool(os.environ.get("OPENBLAS_NUM_THREADS"))


def _follow_torch_threads() -> None:
    """Compiled code's matrix products use the threads torch may use
    (torch.set_num_threads), as eager's operators do, unless the process
    set OpenBLAS's own (OPENBLAS_NUM_THREADS), which then rules both."""
    if _BLAS_THREADS_FROM_ENV:
        return
    n = torch.get_num_threads()
    if n != _blas_threads[0]:
        set_blas_threads(n)
        _blas_threads[0] = n


def _draw_seed() -> int:
    """A seed from torch's default generator (which it advances)."""
    return int(torch.randint(0, 1 << 62, (), dtype=torch.int64))


class CompiledEntry:
    """One compiled signature: the native function and what its metadata
    says about running it."""

    def __init__(self, native, lifted: Sequence[torch.Tensor],
                 version_moved: Sequence[bool] = (), uses_rng: bool = False,
                 groups: Sequence[Optional[int]] = ()):
        self.native = native
        self.lifted = list(lifted)
        # Per input, its storage's number: the inputs of one storage were
        # compiled as if it began at the first element any of them reaches
        # (input_copies.storage_spans), their origin; the layouts the metadata
        # gives are counted from there. None: a storage compiled whole.
        self.groups = list(groups)
        self.shared = None in self.groups or len(set(self.groups)) != len(self.groups)
        # Random ops draw from a seed taken from torch's default generator
        # on every call, so torch.manual_seed makes runs reproducible.
        self.uses_rng = uses_rng
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
            raise Internal("aotcache: the artifact returns %s mutated inputs, the "
                           "metadata names %d" % (convention["num_mutated_inputs"],
                                                 len(self.mutated)))
        # Inputs whose layout changes, with their element count after (more
        # than before: resize_ grew them).
        self.grown = [(i, _numel(self.inputs_after[i])) for i in self.mutated
                      if self.inputs[i]["mutates_metadata"]]
        self.training = native.mode == "training"
        self.members = {int(i) for sb in self.synthetic_bases for i in sb["inputs"]}
        # The inputs that are not members of a synthetic base, by position.
        self.non_members = [i for i in range(len(self.inputs)) if i not in self.members]
        # The user outputs the training node returns: not those that lie
        # in an input's memory (regenerated as views of the caller's tensor).
        self.function_user = [j for j, o in enumerate(self.outputs)
                              if o["output_type"] not in (IS_INPUT, ALIAS_OF_INPUT)]
        # Whether some output aliases something (else the node's outputs
        # are the user's as they are), and the outputs that must not
        # require grad: what _replay_outputs reads at every call.
        self.aliased_outputs = any(o["output_type"] != NON_ALIAS for o in self.outputs)
        self.no_grad_outputs = [j for j, o in enumerate(self.outputs)
                                if not o["requires_grad"]]
        # Nothing written, nothing aliased: the results are the user's
        # outputs as they are (the common call, kept short).
        self.plain = not (self.mutated or self.num_bases or self.aliased_outputs)
        if self.training:
            self.step = self._training_step(native)

    def _training_step(self, native):
        """The autograd node's plan, fixed per entry: which mutated inputs
        are written, where each tangent's output sits among the node's
        outputs (-1: not one of them), the other outputs (not
        differentiable), and each tangent's layout."""
        positions = {("mutated", i): n for n, i in enumerate(self.mutated)}
        first_user = len(self.mutated)
        for n, j in enumerate(self.function_user):
            positions[("user", j)] = first_user + n
        first_base = first_user + len(self.function_user)
        for b in range(self.num_bases):
            positions[("base", b)] = first_base + b
        tangent_positions = [
            positions.get((TANGENT_POSITION[t["source"]], int(t.get("index", 0))), -1)
            for t in self.tangents]
        step = extension.TrainingStep if USES_NATIVE else _torch_node.TrainingPlan
        return step(
            native, num_mutated=len(self.mutated), num_user=self.num_user,
            num_bases=self.num_bases, function_user=self.function_user,
            member=[i in self.members for i in range(len(self.inputs))],
            mutated_data=[i in self.mutated and info["mutates_data"]
                          for i, info in enumerate(self.inputs)],
            tangent_positions=tangent_positions,
            tangent_shapes=[[int(x) for x in t["meta"].get("shape", [])]
                            for t in self.tangents],
            tangent_dtypes=[t["meta"]["dtype"] for t in self.tangents],
            non_differentiable=[n for n in range(first_base + self.num_bases)
                                if n not in tangent_positions])

    # -- running ---------------------------------------------------------

    def _origins(self, inputs: List[torch.Tensor]) -> List[int]:
        """Per input, where the runtime sees its storage begin; [] for
        _native when each is at its own offset (it needs no list then)."""
        if not self.shared:
            return [] if USES_NATIVE else _offsets(inputs)
        first: Dict[Optional[int], int] = {None: 0}
        for g, t in zip(self.groups, inputs):
            if g is not None:
                first[g] = min(first.get(g, t.storage_offset()), t.storage_offset())
        return [first[g] for g in self.groups]

    def __call__(self, inputs: List[torch.Tensor]):
        _follow_torch_threads()
        for i, numel in self.grown:
            _check_growth(inputs[i], i, numel)
        seed = _draw_seed() if self.uses_rng else 0
        origins = self._origins(inputs)
        if self.training:
            # The node's inputs: the inputs, but one tensor covering the
            # storage in place of mutated inputs that share it (autograd
            # carries its gradient to them). Recorded whatever the caller's
            # grad mode (outputs that must not require grad are detached
            # below).
            if self.synthetic_bases:
                differentiable = [inputs[i] for i in self.non_members] + [
                    _synthetic_base(inputs, sb, origins or _offsets(inputs))
                    for sb in self.synthetic_bases]
            else:
                differentiable = None if USES_NATIVE else inputs
            outs = self.step.run(inputs, differentiable, seed, origins)
            if self.plain:
                return self._detached(outs)
            k = len(self.mutated)
            new_values = outs[:k]
            user: List[Any] = [None] * self.num_user
            for n, j in enumerate(self.function_user):
                user[j] = outs[k + n]
            bases = outs[k + len(self.function_user):]
        else:
            with torch.no_grad():
                if USES_NATIVE:
                    raw = self.native.run_forward(inputs, seed, origins)
                else:
                    raw = _torch_node.run_forward(self.native, inputs, seed, origins)
            if self.plain:
                return self._detached(raw[:self.num_user])
            k = len(self.mutated)
            new_values = raw[:k]
            user = raw[k:k + self.num_user]
            bases = raw[k + self.num_user:k + self.num_user + self.num_bases]
        deltas = origins or _offsets(inputs)
        self._write_back(inputs, new_values, deltas)
        return self._replay_outputs(inputs, user, bases, deltas)

    def _write_back(self, inputs, new_values, deltas) -> None:
        for i, new in zip(self.mutated, new_values):
            info = self.inputs[i]
            inp = inputs[i]
            if info["mutates_metadata"]:
                # Recorded by autograd as eager records transpose_ and the
                # like, except on a leaf (whose layout eager changes only
                # where autograd does not see it).
                shape, stride, offset = _layout(self.inputs_after[i])
                with torch.set_grad_enabled(not inp.is_leaf and torch.is_grad_enabled()):
                    if _numel(self.inputs_after[i]) != inp.numel():
                        inp.resize_(shape)  # Only resize_ changes the count.
                    else:
                        inp.as_strided_(shape, stride, offset + deltas[i])
            if not info["mutates_data"]:
                continue
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

    def _replay_outputs(self, inputs, user, bases, deltas) -> List[torch.Tensor]:
        if not self.aliased_outputs:
            return self._detached(list(user))
        outs: List[Optional[torch.Tensor]] = [None] * self.num_user
        # Per output: where the memory the trace saw it in begins in its
        # storage (an input's origin for a view of that input).
        out_deltas = [0] * self.num_user
        for j, info in enumerate(self.outputs):
            kind = info["output_type"]
            replayed = None
            if kind == IS_INPUT:
                replayed = inputs[int(info["base_idx"])]
                out_deltas[j] = deltas[int(info["base_idx"])]
            elif kind == ALIAS_OF_INPUT:
                out_deltas[j] = deltas[int(info["base_idx"])]
                replayed = self._regenerate(j, inputs[int(info["base_idx"])], out_deltas[j])
            elif kind in ALIAS_OF_INTERMEDIATE:
                replayed = self._regenerate(j, bases[int(info["base_idx"])])
            outs[j] = replayed if replayed is not None else user[j]
        for j, info in enumerate(self.outputs):
            if info["output_type"] == BASE_IS_USER_OUTPUT:
                v = self._regenerate(j, outs[int(info["base_idx"])],
                                     out_deltas[int(info["base_idx"])])
                if v is not None:
                    outs[j] = v
        return self._detached(outs)  # type: ignore[arg-type]

    def _detached(self, outs: List[torch.Tensor]) -> List[torch.Tensor]:
        """outs, detached where the metadata says an output does not require
        grad (the node records every output it returns)."""
        for j in self.no_grad_outputs:
            if outs[j].requires_grad:
                outs[j] = outs[j].detach()
        return outs

    def _regenerate(self, j: int, base: torch.Tensor, delta: int = 0) -> Optional[torch.Tensor]:
        """User output j, an alias of `base`, as eager made it: a view made
        under no_grad requires grad but has no history (gradients stop); a
        view of unbind/split/chunk may not be changed in place."""
        info = self.outputs[j]
        if info["created_in_no_grad"]:
            with torch.no_grad():
                return _view(base, self.original_outputs[j], delta)
        view = _view(base, self.original_outputs[j], delta)
        if view is not None and info.get("multi_output_view"):
            return as_multi_output_view(view)
        return view


def _offsets(inputs: Sequence[torch.Tensor]) -> List[int]:
    return [t.storage_offset() for t in inputs]


def _synthetic_base(inputs: Sequence[torch.Tensor], sb, origins: Sequence[int]) -> torch.Tensor:
    """The tensor that stands for mutated inputs sharing a storage: one that
    covers the storage as compiled (from its origin) and that every member
    is (or is a view of), so that gradients reach the members through
    autograd's view tracking."""
    members = [inputs[int(i)] for i in sb["inputs"]]
    size = int(sb["size"])
    origin = origins[int(sb["inputs"][0])]
    if not any(m.requires_grad for m in members):
        return members[0].detach().as_strided((size,), (1,), origin)
    for c in [m._base for m in members if m._base is not None] + members:
        covers = (c.storage_offset() == origin and c.is_contiguous() and c.numel() == size)
        if covers and all(m is c or m._base is c for m in members):
            return c.view(-1)
    raise Unimplemented(
        "aotcache: inputs %s share a storage, are mutated and require grad, but are not "
        "views of one tensor covering it; pass that tensor instead"
        % [int(i) for i in sb["inputs"]])
