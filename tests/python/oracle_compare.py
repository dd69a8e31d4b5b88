"""Runs a scenario variant eagerly or compiled and compares what a user can
observe: output values, dtypes, shapes and requires_grad; each output's
aliasing with the inputs (shares a storage, is the input object); each
input's values, layout, requires_grad and whether its version counter moved;
and the gradients that reach the leaves behind the inputs (None exactly
where eager has None).

Float tolerance: rtol 1e-5, atol 1e-6 (float32; the reference runtime sums in
another order than ATen).
"""

from typing import Any, Callable, Dict, List, Optional

import torch

RTOL, ATOL = 1e-5, 1e-6


def storage_key(t: torch.Tensor) -> int:
    s = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
    return s.data_ptr()


def leaves_of(tensors: List[torch.Tensor]) -> List[torch.Tensor]:
    """The leaves that require grad behind `tensors`, in a fixed order."""
    out: List[torch.Tensor] = []
    seen = set()

    def add(t):
        if id(t) not in seen:
            seen.add(id(t))
            out.append(t)

    for t in tensors:
        if t.is_leaf:
            if t.requires_grad:
                add(t)
            continue
        stack, visited = [t.grad_fn], set()
        while stack:
            fn = stack.pop()
            if fn is None or id(fn) in visited:
                continue
            visited.add(id(fn))
            if hasattr(fn, "variable"):
                add(fn.variable)
            stack.extend(f for f, _ in reversed(fn.next_functions))
    return out


def flatten(out) -> List[torch.Tensor]:
    if isinstance(out, torch.Tensor):
        return [out]
    flat: List[torch.Tensor] = []
    for o in out:
        flat.extend(flatten(o))
    return flat


def observe(variant, call: Optional[Callable] = None, seed: int = 0) -> Dict[str, Any]:
    """What running variant.fn (or call(*inputs), its compiled form) lets one
    observe."""
    inputs = variant.fresh_inputs(seed)
    versions = [t._version for t in inputs]
    leaves = leaves_of(inputs)
    obs: Dict[str, Any] = {}
    try:
        with torch.set_grad_enabled(variant.caller_grad):
            outs = flatten((call or variant.fn)(*inputs))
    except Exception as e:  # noqa: BLE001 - eager's errors are part of the semantics
        obs["error"] = "%s: %s" % (type(e).__name__, str(e).split("\n")[0])
        return obs
    obs["outputs"] = [(o.detach().clone(), o.requires_grad, tuple(o.shape), o.dtype)
                      for o in outs]
    obs["aliasing"] = [[storage_key(o) == storage_key(i) for i in inputs] for o in outs]
    obs["identity"] = [[o is i for i in inputs] for o in outs]
    obs["inputs"] = [(i.detach().clone(), i.requires_grad, tuple(i.shape), i.stride(),
                      i.storage_offset(), i._version > v) for i, v in zip(inputs, versions)]
    obs["grads"] = _grads(outs, inputs, leaves)
    return obs


def _grads(outs, inputs, leaves):
    g = torch.Generator().manual_seed(1)
    terms = []
    for t in outs + inputs:
        if t.requires_grad and t.dtype.is_floating_point:
            w = torch.randn(t.shape, generator=g, dtype=t.dtype)
            terms.append((t * w).sum())
    if not terms or not leaves:
        return None
    try:
        grads = torch.autograd.grad(sum(terms), leaves, allow_unused=True)
    except RuntimeError as e:
        return "error: %s" % str(e).split("\n")[0]
    return [None if x is None else x.detach().clone() for x in grads]


def _close(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if not a.dtype.is_floating_point:
        return bool(torch.equal(a, b))
    return bool(torch.allclose(a, b, rtol=RTOL, atol=ATOL, equal_nan=True))


def differences(eager: Dict[str, Any], compiled: Dict[str, Any]) -> List[str]:
    """What differs, one line each; empty when the compiled run behaves as
    eager."""
    if "error" in eager or "error" in compiled:
        if ("error" in eager) != ("error" in compiled):
            return ["error: eager %r, compiled %r" % (eager.get("error"), compiled.get("error"))]
        return []
    diffs = []
    if len(eager["outputs"]) != len(compiled["outputs"]):
        return ["%d outputs, eager %d" % (len(compiled["outputs"]), len(eager["outputs"]))]
    for j, (e, c) in enumerate(zip(eager["outputs"], compiled["outputs"])):
        if e[1] != c[1]:
            diffs.append("output %d: requires_grad %s, eager %s" % (j, c[1], e[1]))
        if e[2:] != c[2:]:
            diffs.append("output %d: shape/dtype %s, eager %s" % (j, c[2:], e[2:]))
        elif not _close(e[0], c[0]):
            diffs.append("output %d: values differ" % j)
    for key in ("aliasing", "identity"):
        if eager[key] != compiled[key]:
            diffs.append("%s %s, eager %s" % (key, compiled[key], eager[key]))
    names = ["values", "requires_grad", "shape", "stride", "offset", "version moved"]
    for i, (e, c) in enumerate(zip(eager["inputs"], compiled["inputs"])):
        for k, name in enumerate(names):
            if k == 0:
                if not _close(e[0], c[0]):
                    diffs.append("input %d: values differ after the call" % i)
            elif e[k] != c[k]:
                diffs.append("input %d: %s %s, eager %s" % (i, name, c[k], e[k]))
    eg, cg = eager["grads"], compiled["grads"]
    if isinstance(eg, str) or isinstance(cg, str) or eg is None or cg is None:
        if (eg is None) != (cg is None) or isinstance(eg, str) != isinstance(cg, str):
            diffs.append("grads: %s, eager %s" % (_show(cg), _show(eg)))
        return diffs
    for n, (e, c) in enumerate(zip(eg, cg)):
        if (e is None) != (c is None):
            diffs.append("leaf %d: gradient %s, eager %s" % (n, _show(c), _show(e)))
        elif e is not None and not _close(e, c):
            diffs.append("leaf %d: gradients differ" % n)
    return diffs


def _show(x) -> str:
    if x is None:
        return "None"
    if isinstance(x, str):
        return x
    if isinstance(x, list):
        return "[%s]" % ", ".join(_show(y) for y in x)
    return "a tensor"
