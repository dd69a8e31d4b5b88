"""The copies of a traced function's arguments, and how their storages are
counted.

Real-mode tracing runs the function, so it runs on copies of the caller's
tensors that keep their aliasing (arguments sharing a storage share one in
the copies, with the same sizes, strides and offsets), their leaf status
and requires_grad. A storage is copied as the span its arguments reach
(storage_spans), so that where they lie in a larger tensor is no part of
what is compiled.

Thread-safety: pure functions.
"""

from typing import Any, Dict, List, Optional, Tuple

import torch

from .torch_version import storage_key, storage_numel


def storage_spans(tensors: List[torch.Tensor]) -> Dict[Any, Tuple[int, int]]:
    """Per storage the tensors lie in, unless one of them requires grad:
    (origin, size), the first element any of them reaches and how many
    elements from there they span. Inputs are traced and compiled as if
    their storage were that span (offsets counted from its origin): where
    they lie in a larger storage (a batch and its targets sliced from a
    dataset tensor) is no part of the signature or the key, and the runtime
    borrows them from the same origin. Storages with a tensor that requires
    grad are kept whole: a mutation of aliased inputs reaches their
    gradients through a tensor covering the storage."""
    spans: Dict[Any, Tuple[int, int]] = {}
    whole = set()
    for t in tensors:
        key = storage_key(t)
        if t.requires_grad:
            whole.add(key)
        first, end = t.storage_offset(), t.storage_offset() + extent(t)
        if key in spans:
            origin, size = spans[key]
            first, end = min(first, origin), max(end, origin + size)
        spans[key] = (first, end - first)
    return {key: span for key, span in spans.items() if key not in whole}


def extent(t: torch.Tensor) -> int:
    """The elements t spans from its first one (0 if it has none)."""
    if t.numel() == 0:
        return 0
    return 1 + sum((size - 1) * stride for size, stride in zip(t.shape, t.stride()))


@torch.enable_grad()  # non-leaf copies need autograd, whatever the caller's mode
def copy_inputs(args: List[torch.Tensor],
                 spans: Dict[Any, Tuple[int, int]]) -> List[torch.Tensor]:
    """Fresh copies of args that keep aliasing, layout, leaf status and
    requires_grad.

    Per storage: one fresh base holding the storage's current contents.  If
    some member is a non-leaf that requires grad, the base is itself such a
    non-leaf (`leaf.clone()`), so members cut from it stay non-leaves; members
    that are leaves are cut from its detached alias (and, if they require
    grad, detached again and made to require grad).  Members sharing a storage
    are views of the one base, as in the caller's usual setup
    (`x = base.add(1); a = x[0]; b = x.view(-1)`).  The same tensor passed
    twice stays one tensor. A storage in `spans` is copied as its span
    (storage_spans); any other whole.
    """
    groups: Dict[Any, List[int]] = {}
    for i, t in enumerate(args):
        groups.setdefault(storage_key(t), []).append(i)
    out: List[Optional[torch.Tensor]] = [None] * len(args)
    by_id: Dict[int, torch.Tensor] = {}
    for idxs in groups.values():
        t0 = args[idxs[0]]
        origin, n = spans.get(storage_key(t0), (0, storage_numel(t0)))
        # Shape of the base: that of a member covering the whole storage
        # contiguously, else 1-D.
        base_shape: Tuple[int, ...] = (n,)
        for i in idxs:
            t = args[i]
            if t.storage_offset() == origin and t.numel() == n and t.is_contiguous():
                base_shape = tuple(t.shape)
                break
        with torch.no_grad():  # `data` must be no view (views made under no_grad are special)
            data = torch.empty(base_shape, dtype=t0.dtype, device=t0.device)
            data.copy_(t0.detach().as_strided((n,), (1,), origin).view(base_shape))
        if any(args[i].requires_grad and not args[i].is_leaf for i in idxs):
            root = torch.zeros(base_shape, dtype=data.dtype, requires_grad=True)
            base = root.clone()
            with torch.no_grad():
                base.copy_(data)
        else:
            base = data
        base_used = False
        for i in idxs:
            t = args[i]
            if id(t) in by_id:
                out[i] = by_id[id(t)]
                continue
            offset = t.storage_offset() - origin
            same = (tuple(t.shape) == tuple(base.shape) and t.stride() == base.stride()
                    and offset == 0)
            if t.requires_grad and not t.is_leaf:
                if same and not base_used:
                    c = base
                    base_used = True
                else:
                    c = base.as_strided(t.shape, t.stride(), offset)
            else:
                src = base.detach() if base.requires_grad else base
                if same and not base_used and not t.requires_grad and not base.requires_grad:
                    c = base
                    base_used = True
                else:
                    c = src.as_strided(t.shape, t.stride(), offset)
                if t.requires_grad:  # a leaf that requires grad
                    c = c.detach().requires_grad_(True)
            assert c.requires_grad == t.requires_grad and c.is_leaf == t.is_leaf, (i, t, c)
            by_id[id(t)] = c
            out[i] = c
    return out  # type: ignore[return-value]
