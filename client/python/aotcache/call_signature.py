"""What a call of a compiled function is keyed by: its arguments flattened
(pytrees: lists, tuples, dicts, with keyword arguments by name) and its
signature (torch.py's module docstring says what it holds), and which of
its tensors are one tensor passed twice.

Thread-safety: pure functions.
"""

from typing import Any, Dict, List, Tuple

import torch
from torch.utils import _pytree as pytree

from .torch_version import storage_of
from ._binding import USES_NATIVE, extension

SCALARS = (bool, int, float, str, torch.dtype, torch.device)


# What a tensor's type has unless it is a subclass that takes over dispatch
# (a wrapper such as torch's TwoTensor, whose storage holds no data); the
# types of every call's tensors, checked once.
_PLAIN_DISPATCH = getattr(torch.Tensor, "__torch_dispatch__", None)
_PLAIN_TYPES = {torch.Tensor, torch.nn.Parameter}


def signature_in_python(leaves: List[Any], spec: Any,
                        captured: List[torch.Tensor]) -> tuple:
    """The call's signature: the grad mode, the arguments' structure
    (flatten_arguments' spec), per tensor leaf its layout, its storage's
    number, where it lies from the storage's first element any tensor
    reaches and which leaf it first is; per other leaf its type and value;
    and per captured tensor its identity and layout. TypeError for a leaf
    of another kind."""
    # Runs at every call (on torch 2.x: 1.13 has it in C++), written for
    # speed: each tensor's properties read once.
    parts: List[Any] = [torch.is_grad_enabled(), spec]
    # Per storage: its number and the first element its tensors reach.
    # Inputs are compiled with offsets counted from there, so where a
    # storage's tensors lie in it is no part of the signature
    # (input_copies.storage_spans): a batch sliced from a dataset tensor
    # at another offset is the same signature. A storage with a tensor
    # that requires grad is compiled whole: offsets from its start.
    storages: Dict[Any, List[int]] = {}
    facts = []  # Per tensor: its storage's [number, origin], offset, requires_grad, device.
    for t in [a for a in leaves if isinstance(a, torch.Tensor)] + captured:
        if type(t) not in _PLAIN_TYPES and \
                getattr(type(t), "__torch_dispatch__", _PLAIN_DISPATCH) is not _PLAIN_DISPATCH:
            raise TypeError("aot_function takes plain tensors, not a tensor subclass with a "
                            "__torch_dispatch__ of its own (%s)" % type(t).__name__)
        device, requires_grad, offset = t.device, t.requires_grad, t.storage_offset()
        ptr = storage_of(t).data_ptr()
        key = (device, ptr) if ptr else ("empty", id(t))  # As torch_version.storage_key.
        reach = 0 if requires_grad else offset
        group = storages.get(key)
        if group is None:
            group = storages[key] = [len(storages), reach]
        elif reach < group[1]:
            group[1] = reach
        facts.append((group, offset, requires_grad, device))
    first: Dict[int, int] = {}
    k = 0
    for a in leaves:
        if isinstance(a, torch.Tensor):
            group, offset, requires_grad, device = facts[k]
            k += 1
            # The same tensor passed twice is one input (dupes_of).
            parts.append((tuple(a.shape), a.stride(), offset - group[1], a.dtype, device,
                          requires_grad, a.is_leaf, group[0],
                          first.setdefault(id(a), len(first))))
        elif a is None or isinstance(a, SCALARS):
            parts.append((type(a), a))
        else:
            raise TypeError("aot_function takes tensors, numbers, strings and "
                            "(nested) lists, tuples and dicts of them, not %s"
                            % type(a).__name__)
    for t, (group, offset, requires_grad, device) in zip(captured, facts[k:]):
        parts.append((id(t), tuple(t.shape), t.stride(), offset - group[1], t.dtype, device,
                      requires_grad, t.is_leaf, group[0]))
    return tuple(parts)


# _native has it in C++ (client/python/native/call_signature.h): another
# value, equal exactly when this one is, at a fraction of the cost.
signature = extension.signature if USES_NATIVE else signature_in_python


def dupes_of(tensors: List[torch.Tensor]) -> Tuple[List[int], List[int]]:
    """The positions of the first occurrence of each tensor, and per
    position the index of its tensor among those: a tensor passed twice is
    one input of the graph, as AOTAutograd deduplicates arguments (eager's
    `y.resize_()` resizes `x` too when they are one tensor)."""
    first: Dict[int, int] = {}
    unique: List[int] = []
    source: List[int] = []
    for n, t in enumerate(tensors):
        if id(t) not in first:
            first[id(t)] = len(unique)
            unique.append(n)
        source.append(first[id(t)])
    return unique, source


def flatten_arguments(args: tuple, kwargs: Dict[str, Any]) -> Tuple[List[Any], Any]:
    """The leaves of (args, kwargs) and a hashable form of their structure:
    None for plain positional leaves (the common call, flattened cheaply)."""
    if not kwargs and not any(isinstance(a, CONTAINERS) for a in args):
        return list(args), None
    # Keyword arguments by name: their order is no part of the signature.
    leaves, spec = pytree.tree_flatten((args, dict(sorted(kwargs.items()))))
    return leaves, spec_key(spec)


CONTAINERS = (list, tuple, dict)


def unflatten_arguments(leaves: List[Any], spec: Any, args: tuple,
                         kwargs: Dict[str, Any]) -> Tuple[tuple, Dict[str, Any]]:
    if spec is None:
        return tuple(leaves), {}
    _, tree = pytree.tree_flatten((args, dict(sorted(kwargs.items()))))
    call_args, call_kwargs = pytree.tree_unflatten(leaves, tree)
    return tuple(call_args), dict(call_kwargs)


def spec_key(spec) -> Any:
    """A hashable form of a pytree TreeSpec (which is not hashable)."""
    # torch 2.x's children() (children_specs is deprecated there), 1.13's
    # children_specs.
    children = spec.children() if callable(getattr(spec, "children", None)) \
        else getattr(spec, "children_specs", None)
    if children is None or (not children and getattr(spec, "type", None) is None):
        return "*"
    context = spec.context
    if isinstance(context, list):
        context = tuple(context)
    try:
        hash(context)
    except TypeError:
        context = repr(context)
    return (spec.type, context, tuple(spec_key(c) for c in children))
