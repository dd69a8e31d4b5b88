"""What a traced function can reach, and copies of it while it is traced.

A function compiled by aotcache.torch may capture tensors: in closure cells,
in the globals its code names, in a bound method's module, and recursively in
the modules and functions those hold. Tracing runs the function, so while it
is traced (Captured) each of them is replaced where it lives by a copy: the
caller's tensors and their version counters are never touched, and what the
trace wrote tells which captured tensors the function writes.
"""

import enum
import functools
import types
from typing import Any, Callable, Dict, List, Tuple

import torch

class Captured:
    """While active, every tensor a Reach holds (closure cells, globals,
    modules' parameters, buffers and tensor attributes) is replaced where
    it lives by a copy, so that tracing fn -- which runs it -- changes
    nothing the caller can observe (values, version counters).
    `original` maps a copy's id to (the caller's tensor, a name for
    messages); `grad_of` maps the id of a copy of a .grad to the name of its
    tensor, so that reading .grad can be refused. Not thread-safe towards
    other threads that use the same modules or closures meanwhile."""

    def __init__(self, reach: "Reach"):
        self._reach = reach
        self._undo: List[Callable[[], None]] = []
        self.original: Dict[int, Tuple[torch.Tensor, str]] = {}
        self.versions: Dict[int, int] = {}
        self.grad_of: Dict[int, str] = {}

    def _copy(self, t: torch.Tensor, name: str) -> torch.Tensor:
        with torch.no_grad():
            c = torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device=t.device)
            c.copy_(t)
        if isinstance(t, torch.nn.Parameter):
            c = torch.nn.Parameter(c, requires_grad=t.requires_grad)
        else:
            c.requires_grad_(t.requires_grad)
        if t.is_leaf and t.grad is not None:
            c.grad = t.grad.detach().clone()
            self.grad_of[id(c.grad)] = name
        self.original[id(c)] = (t, name)
        self.versions[id(c)] = c._version
        return c

    def __enter__(self) -> "Captured":
        for holder, key, t, name in self._reach.tensors:
            if isinstance(holder, dict):
                c = self._copy(t, name)
                holder[key] = c
                self._undo.append(lambda h=holder, k=key, v=t: h.__setitem__(k, v))
            else:  # a closure cell
                c = self._copy(t, name)
                holder.cell_contents = c
                self._undo.append(lambda h=holder, v=t: setattr(h, "cell_contents", v))
        return self

    def __exit__(self, *exc) -> None:
        for undo in reversed(self._undo):
            undo()

    def written(self, copy: torch.Tensor) -> bool:
        return copy._version != self.versions[id(copy)]


class Reach:
    """Everything fn can reach, walked once: its closure cells, the globals
    its code names (torch's own functions excepted), its bound module, and
    recursively the modules and functions those hold.

    tensors: (holder, key, tensor, name), holder a dict (a module's
      _parameters, _buffers or __dict__, or a function's globals) or a
      closure cell (key None);
    modules: (name, module), every module reached and its submodules;
    values: (holder, key, value) for the other globals and cells, which a
      trace may read as constants (guards.plain_globals_and_cells keeps
      the plain ones);
    objects: (holder, key, object) for instances of plain Python classes
      (a config dataclass, a namespace) held by a module, a global or a
      cell, and by those objects in turn, up to OBJECT_DEPTH: whose
      attributes a trace may read as constants too (guards.ReadRecorder)."""

    OBJECT_DEPTH = 3

    def __init__(self, fn: Callable, tensors_only: bool = False):
        self._tensors_only = tensors_only  # Skips values and objects.
        self.tensors: List[Tuple[Any, Any, torch.Tensor, str]] = []
        self.modules: List[Tuple[str, torch.nn.Module]] = []
        self.values: List[Tuple[Any, Any, Any]] = []
        self.objects: List[Tuple[Any, Any, Any]] = []
        self._seen: set = set()
        self._walk(fn)

    def _object(self, holder, key, value, depth: int = 1) -> None:
        if self._tensors_only or depth > self.OBJECT_DEPTH or id(value) in self._seen or not _plain_object(value):
            return
        self._seen.add(id(value))
        self.objects.append((holder, key, value))
        table = value.__dict__
        for name, v in list(table.items()):
            self._object(table, name, v, depth + 1)

    def _tensor(self, holder, key, t: torch.Tensor, name: str) -> None:
        if id(t) not in self._seen:
            self._seen.add(id(t))
            self.tensors.append((holder, key, t, name))

    def _walk(self, fn: Callable) -> None:
        pending: List[Tuple[Any, str]] = [(fn, getattr(fn, "__name__", "fn"))]
        while pending:
            v, name = pending.pop()
            if id(v) in self._seen:
                continue
            self._seen.add(id(v))
            if isinstance(v, torch.nn.Module):
                for prefix, m in v.named_modules():
                    qualified = "%s.%s" % (name, prefix) if prefix else name
                    self.modules.append((qualified, m))
                    for table in (m._parameters, m._buffers, m.__dict__):
                        for key, t in list(table.items()):
                            if isinstance(t, torch.Tensor):
                                self._tensor(table, key, t, "%s.%s" % (qualified, key))
                    if not self._tensors_only:
                        for key, value in list(m.__dict__.items()):
                            self._object(m.__dict__, key, value)
                continue
            if not callable(v) or isinstance(v, torch.Tensor):
                continue
            code = getattr(v, "__code__", None)
            cells = getattr(v, "__closure__", None) or ()
            names = code.co_freevars if code is not None else ()
            for cell_name, c in zip(names, cells):
                if not _cell_filled(c):
                    continue
                value = c.cell_contents
                if isinstance(value, torch.Tensor):
                    self._tensor(c, None, value, cell_name)
                else:
                    self.values.append((c, None, value))
                    self._object(c, None, value)
                    pending.append((value, cell_name))
            scope = getattr(v, "__globals__", None)
            if code is not None and scope is not None and not str(
                    getattr(v, "__module__", "")).startswith("torch"):
                for global_name in code.co_names:
                    if global_name not in scope:
                        continue
                    value = scope[global_name]
                    if isinstance(value, torch.Tensor):
                        self._tensor(scope, global_name, value, global_name)
                        continue
                    self.values.append((scope, global_name, value))
                    self._object(scope, global_name, value)
                    if isinstance(value, torch.nn.Module) or (
                            callable(value) and hasattr(value, "__code__")):
                        pending.append((value, global_name))
            owner = getattr(v, "__self__", None)
            if owner is not None:
                pending.append((owner, "self"))


def captured_tensors(fn: Callable) -> List[torch.Tensor]:
    """The tensors fn can reach (Reach's tensors)."""
    return [t for _, _, t, _ in Reach(fn, tensors_only=True).tensors]


def _plain_object(value: Any) -> bool:
    """Whether value is an instance of a plain Python class (its own
    __dict__, not a module, tensor, function, class or torch object): a
    holder of settings whose attributes a trace may read."""
    cls = type(value)
    return (isinstance(getattr(value, "__dict__", None), dict)
            # collections: a module's _parameters, _buffers and hook tables
            # (OrderedDicts have a __dict__ too).
            and cls.__module__ not in ("builtins", "enum", "collections")
            and not cls.__module__.startswith(("torch", "numpy", "aotcache"))
            and not isinstance(value, (torch.nn.Module, torch.Tensor, type, types.ModuleType,
                                       types.FunctionType, types.MethodType, enum.Enum,
                                       functools.partial)))


def _cell_filled(cell) -> bool:
    try:
        cell.cell_contents
    except ValueError:  # an empty cell (a name assigned later)
        return False
    return True
