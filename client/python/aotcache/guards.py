"""What a trace read besides its tensors, checked before each compiled call.

A trace bakes in every Python value the function read: `self.training`
(dropout on or off, batch norm on the batch's or the running statistics),
`self.temperature`, a conv's padding, a global `SCALE`. Eager reads them
anew at every call, so a compiled signature holds only while each of them
still has the value the trace saw, and while no module it runs has gained a
hook (hooks are refused: a trace would run them once, on copies). This is
what Dynamo's guards do.

* ReadRecorder (a context manager around the trace) records the plain
  attributes of modules, and of the plain objects they hold (a config
  dataclass: captures.Reach.objects), that the function reads: each one's
  class is swapped for a subclass whose __getattribute__ notes them, and
  swapped back after. An object whose class cannot be swapped (__slots__
  beside a __dict__, say) is guarded on every plain attribute it has.
* Guards holds the values seen and tells whether they still hold.

Thread-safety: Guards.hold() may run from several threads; ReadRecorder
changes the modules' classes while it is active, like Captured.
"""

import math
from typing import Any, Dict, List, Sequence, Tuple

import torch

from .torch_version import ExportError, write_code

_MISSING = object()
_PLAIN_SCALARS = (bool, int, float, str, type(None), torch.dtype, torch.device)


def _plain(value: Any) -> bool:
    """Whether value is a plain constant a trace bakes in (a number, a
    string, a dtype, or a tuple or list of them)."""
    if isinstance(value, _PLAIN_SCALARS):
        return True
    if isinstance(value, (tuple, list)):
        return all(_plain(v) for v in value)
    return False


def _snapshot(value: Any) -> Any:
    """value as it is now: a list is copied (it may change in place)."""
    if isinstance(value, list):
        return tuple(_snapshot(v) for v in value)
    return value


def _same(current: Any, seen: Any) -> bool:
    if isinstance(current, list):
        current = _snapshot(current)
    elif current is seen:
        return True
    if type(current) is not type(seen):
        return False
    if isinstance(seen, float) and math.isnan(seen):
        return math.isnan(current)
    return current == seen


class Guards:
    """Per compiled signature: (holder, key, value) triples, each a dict (a
    module's __dict__, a function's globals) or a closure cell (key None)
    whose entry must still be `value`; the modules that must still have no
    hooks; and (holder, key, tensor) places that must still hold that very
    tensor (the captured tensors lifted to inputs)."""

    def __init__(self, values: Sequence[Tuple[Any, Any, Any]] = (),
                 hookless: Sequence[torch.nn.Module] = (),
                 identities: Sequence[Tuple[Any, Any, Any]] = ()):
        self._values = [(holder, key, _snapshot(value)) for holder, key, value in values]
        self._hookless = list(hookless)
        self._identities = list(identities)

    def hold(self) -> bool:
        # Runs before every compiled call: written for speed.
        for holder, key, seen in self._values:
            current = _current(holder, key)
            if current is not seen and not _same(current, seen):
                return False
        for holder, key, seen in self._identities:
            if _current(holder, key) is not seen:
                return False
        for m in self._hookless:
            d = m.__dict__
            for kind in _MODULE_HOOKS:
                if d.get(kind):
                    return False
        return not _global_hooks()


def _current(holder: Any, key: Any) -> Any:
    if key is None:  # a closure cell
        try:
            return holder.cell_contents
        except ValueError:
            return _MISSING
    return holder.get(key, _MISSING)


def plain_globals_and_cells(places: Sequence[Tuple[Any, Any, Any]]) -> List[Tuple[Any, Any, Any]]:
    """The (holder, key, value) places whose value is plain: what a guard
    keeps of the globals and closure cells a function reads."""
    return [(h, k, v) for h, k, v in places if _plain(v)]


class ReadRecorder:
    """While active, notes every plain attribute (an entry of the instance
    __dict__ that _plain accepts) read from `modules` and `objects`.
    `values()` gives them as (instance.__dict__, name, value) for Guards."""

    _subclasses: Dict[type, type] = {}

    def __init__(self, modules: Sequence[torch.nn.Module], objects: Sequence[Any] = ()):
        # Once each, in order.
        self._watched = list({id(x): x for x in list(modules) + list(objects)}.values())
        self._swapped: List[Any] = []
        self._reads: Dict[Tuple[int, str], Tuple[Dict[str, Any], str, Any]] = {}

    def __enter__(self) -> "ReadRecorder":
        # A lazy GraphModule writes its code (and its submodules') into its
        # class at its first call: not into a recording class.
        for x in self._watched:
            write_code(x)
        for x in self._watched:
            try:
                # Past a __setattr__ of its own (a frozen dataclass's).
                object.__setattr__(x, "__class__", self._recording_class(type(x)))
            except TypeError:  # Guarded on everything plain it holds.
                d = x.__dict__
                for name, value in list(d.items()):
                    if _plain(value):
                        self._reads.setdefault((id(d), name), (d, name, value))
                continue
            object.__setattr__(x, "_aotcache_reads", self._reads)
            self._swapped.append(x)
        return self

    def __exit__(self, *exc) -> None:
        for x in self._swapped:
            object.__setattr__(x, "__class__", x.__class__.__bases__[0])
            object.__delattr__(x, "_aotcache_reads")

    def values(self) -> List[Tuple[Dict[str, Any], str, Any]]:
        return list(self._reads.values())

    @classmethod
    def _recording_class(cls, base: type) -> type:
        sub = cls._subclasses.get(base)
        if sub is None:
            read = base.__getattribute__

            def __getattribute__(self, name):
                value = read(self, name)
                if _plain(value):
                    d = object.__getattribute__(self, "__dict__")
                    if d.get(name, _MISSING) is value:
                        reads = d.get("_aotcache_reads")
                        if reads is not None:
                            reads.setdefault((id(d), name), (d, name, value))
                return value

            sub = type(base.__name__, (base,), {
                "__getattribute__": __getattribute__,
                "__module__": base.__module__, "__qualname__": base.__qualname__})
            cls._subclasses[base] = sub
        return sub


# The hook tables of a module and the global ones, those this torch has
# (torch 2.x adds backward pre-hooks).
_MODULE_HOOKS = [kind for kind in ("_forward_pre_hooks", "_forward_hooks", "_backward_pre_hooks",
                                   "_backward_hooks")
                 if kind in torch.nn.Module().__dict__]
_GLOBAL_HOOKS = [name for name in ("_global_forward_pre_hooks", "_global_forward_hooks",
                                   "_global_backward_pre_hooks", "_global_backward_hooks")
                 if hasattr(torch.nn.modules.module, name)]


def _hooks_of(m: torch.nn.Module) -> List[str]:
    return [kind.strip("_").replace("_", " ") for kind in _MODULE_HOOKS
            if m.__dict__.get(kind)]


def _global_hooks() -> bool:
    module = torch.nn.modules.module
    for name in _GLOBAL_HOOKS:
        if getattr(module, name):
            return True
    return False


def refuse_hooks(modules: Sequence[Tuple[str, torch.nn.Module]]) -> None:
    """Raises ExportError naming the first module with a hook: a trace would
    run it once, on copies, and never again."""
    for name, m in modules:
        kinds = _hooks_of(m)
        if kinds:
            raise ExportError(
                "module %s (%s) has %s; aotcache would run them only while tracing. "
                "Remove them, register them on the compiled module itself, or pass "
                "fallback='eager'" % (name, type(m).__name__, " and ".join(kinds)))
    if _global_hooks():
        raise ExportError("global module hooks are registered "
                          "(torch.nn.modules.module.register_module_*_hook); aotcache would "
                          "run them only while tracing")
