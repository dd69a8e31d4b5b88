"""aotcache.torch: functorch's aot_function and aot_module, through the
aotcache service.

    from aotcache.torch import aot_function
    f = aot_function(fn)      # server=None: the embedded default daemon
    loss = f(x, w).sum()      # traced, compiled (or a cache hit), run
    loss.backward()           # the backward is fetched on first use
    f.cache_info()            # one dict per compiled signature

The first call with a new input signature (each tensor's shape, stride,
dtype, device, requires_grad and is_leaf, which tensors share a storage and
where they lie relative to each other, the grad mode, the structure of the
arguments and their non-tensor leaves, and the identity of the tensors fn
captures) traces fn with make_fx on copies of the inputs, exports the ATen
graph, and compiles it through the cache; later calls with the signature
run the compiled function with no round trip, as long as what the trace
read still holds (guards.py: module attributes such as `training`, plain
globals, no hooks). Compiling changes nothing a caller can observe: not its
tensors, their version counters, or torch's RNG state.

Tensors fn captures (closures, globals, a bound module) are inputs of the
graph, passed on every call, so that their gradients flow, their writes
are applied, and what is written into them outside fn is read by the next
call. Random ops (dropout) run compiled, drawing from a counter-based
generator (Philox) seeded from torch's default generator on every call:
torch.manual_seed makes runs reproducible, but the values are not eager's
(as with torch.compile); rng="eager" runs such functions eagerly instead,
bit for bit as eager.

Thread-safety: a compiled function may be called from several threads.
"""

import functools
import json
import logging
import os
import sysconfig
import threading
import time
import warnings
from typing import Any, Callable, Dict, List, Optional

import torch
from torch.utils import _pytree as pytree

from . import call_signature, front_key, fx_export, graph_split, torch_version
from ._binding import Client
from ._runtime import CompiledEntry
from .errors import CompileError, Error, Unimplemented
from .guards import Guards

__all__ = ["CompileError", "aot_function", "aot_module"]


_log = logging.getLogger("aotcache")
_clients: Dict[str, Client] = {}
_clients_lock = threading.Lock()
_warned_in_process = False


def _packaged_daemon() -> str:
    """The aotcached shipped beside this package: in a build tree
    (build/python/aotcache beside build/server/aotcached), installed
    (PREFIX/lib/pythonX/dist-packages/aotcache beside PREFIX/bin/aotcached),
    or in this environment's scripts (pip's, also for `pip install -e`).
    "" when none is there (the client then looks beside the interpreter
    and on PATH)."""
    here = os.path.dirname(os.path.abspath(__file__))
    for candidate in (os.path.join(here, "..", "..", "server", "aotcached"),
                      os.path.join(here, "..", "..", "..", "..", "bin", "aotcached"),
                      os.path.join(sysconfig.get_path("scripts"), "aotcached")):
        if os.access(candidate, os.X_OK):
            return os.path.normpath(candidate)
    return ""


def _client(server: Optional[str]) -> Client:
    """One Client per server per process (the default: "")."""
    key = server or ""
    with _clients_lock:
        if key not in _clients:
            _clients[key] = Client(key, daemon_binary=_packaged_daemon())
        return _clients[key]


def _warn_if_in_process(native, client: Client) -> None:
    """Once per process: compiling in process (no daemon reached) means no
    shared cache, and without a C++ compiler the reference backend, which a
    user should know."""
    global _warned_in_process
    if native.source != "in_process" or _warned_in_process:
        return
    _warned_in_process = True
    if native.backend == "native":
        warnings.warn("aotcache: no daemon answered; compiling in this process with the "
                      "native backend, without the shared cache (%s). cache_info() tells "
                      "per function." % native.fallback_reason, stacklevel=4)
        return
    warnings.warn("aotcache: no daemon answered and this machine cannot build native "
                  "kernels (%s): compiling in this process on the REFERENCE backend, "
                  "whose training steps run 10 to 100 times slower than eager torch's, "
                  "without the shared cache "
                  "(%s). Install a C++ compiler and libopenblas-dev, or reach a daemon "
                  "(AOTCACHE_SERVER). cache_info() tells per function."
                  % (client.why_reference(), native.fallback_reason), stacklevel=4)


def aot_function(fn: Callable, *, server: Optional[str] = None,
                 backend: Optional[str] = None,
                 fallback: Optional[str] = None,
                 rng: str = "philox") -> "AotFunction":
    """fn compiled through aotcache, called like fn.

    server: a gRPC target; None follows the embedded-default rule
      (AOTCACHE_SERVER, else the local daemon on the default data dir's
      unix socket, started if absent).
    backend: None: the daemon compiles with its backend (aotcached
      --backend: native when it has a C++ compiler, else reference).
    fallback: None (the default: the nodes aotcache cannot compile run
      eagerly between compiled segments, graph_split.py, and a function
      that cannot be traced or split runs eagerly; each with a warning and
      its reason in cache_info()), "eager" (fn runs eagerly whenever it
      cannot be traced or compiled whole, never split) or "error" (what
      aotcache cannot trace or compile raises CompileError naming it).
    rng: "philox" (random ops run compiled, seeded from torch's default
      generator each call) or "eager" (a function with random ops runs
      eagerly: torch's own random stream, bit for bit).
    """
    _check_options(backend, fallback, rng)
    return AotFunction(fn, server, fallback, rng)


def _check_options(backend: Optional[str], fallback: Optional[str], rng: str) -> None:
    if backend is not None:
        raise ValueError("backend: the daemon chooses (aotcached --backend); pass None, "
                         "not %r" % (backend,))
    if fallback not in (None, "eager", "error"):
        raise ValueError("fallback must be None, 'error' or 'eager', not %r" % (fallback,))
    if rng not in ("philox", "eager"):
        raise ValueError("rng must be 'philox' or 'eager', not %r" % (rng,))


class _Compiled:
    """What one signature compiled to, and the guards it holds under."""

    def __init__(self, entry: Optional[CompiledEntry], native, out_spec,
                 guards: Optional[Guards] = None, eager_reason: str = "",
                 trace_ms: float = 0.0, compile_ms: float = 0.0):
        self.entry = entry          # None: run fn eagerly
        self.native = native        # None when the compile itself failed
        self.out_spec = out_spec
        self.guards = guards if guards is not None else Guards()
        self.eager_reason = eager_reason
        # The positions of the tensor arguments that are inputs of the
        # graph, when a tensor was passed more than once (dupes_of).
        self.unique: Optional[List[int]] = None
        self.trace_ms = trace_ms        # make_fx and the export
        self.compile_ms = compile_ms    # the request (a hit or a compile) and loading
        self.front = ""                 # "hit", "miss" (and traced), "" (no front key)
        self.nodes = 0                  # The graph's ATen nodes (getitem aside)
        self.split: Optional[graph_split.SplitGraph] = None  # entry, when split


class AotFunction:
    """The callable aot_function returns."""

    def __init__(self, fn: Callable, server: Optional[str], fallback: Optional[str],
                 rng: str = "philox", watch_captures: bool = True,
                 front: Optional[List[Any]] = None):
        functools.update_wrapper(self, fn)
        self._fn = fn
        # Whether each call's signature holds the identity and layout of
        # every tensor fn captures (a captured tensor replaced retraces).
        # aot_module passes its parameters and buffers as arguments instead.
        self._watch_captures = watch_captures
        self._server = server
        self._fallback = fallback
        self._rng = rng
        self._lock = threading.Lock()
        # Per signature, what it compiled to under other guard values (a
        # module in train and in eval mode), most recent first.
        self._compiled: Dict[Any, List[_Compiled]] = {}
        self._order: List[_Compiled] = []
        # The canonical form of fn when front keys can stand for its
        # traces (front_key.py; the torch.compile backend's graphs).
        self._front = front
        self._warned_uncompiled = False

    def __call__(self, *args, **kwargs):
        if torch._C._are_functorch_transforms_active():
            raise Unimplemented(
                "aotcache: %s is compiled and cannot run under a torch.func transform "
                "(grad, vjp, vmap, ...): call the function itself there"
                % getattr(self._fn, "__name__", "the function"))
        leaves, spec = call_signature.flatten_arguments(args, kwargs)
        try:
            signature = self._signature(leaves, spec)
        except (TypeError, NotImplementedError) as e:  # An argument no graph takes
            if self._fallback == "error":
                raise
            return self._uncompiled_call(e, args, kwargs)
        compiled = _holding(self._compiled.get(signature))
        if compiled is None:
            with self._lock:
                compiled = _holding(self._compiled.get(signature))
                if compiled is None:
                    compiled = self._compile(args, kwargs, leaves, spec, signature)
                    self._compiled.setdefault(signature, []).insert(0, compiled)
                    self._order.append(compiled)
        if compiled.entry is None:
            return self._fn(*args, **kwargs)
        tensors = [a for a in leaves if isinstance(a, torch.Tensor)]
        if compiled.unique is not None:
            tensors = [tensors[n] for n in compiled.unique]
        outs = compiled.entry(tensors + compiled.entry.lifted)
        return pytree.tree_unflatten(outs, compiled.out_spec)

    def _uncompiled_call(self, error: Exception, args, kwargs):
        """fn run eagerly for a call whose arguments no graph can take
        (a sparse tensor, an object of a type of the caller's), with a
        warning the first time."""
        if not self._warned_uncompiled:
            self._warned_uncompiled = True
            warnings.warn("aotcache: running %s eagerly for arguments it cannot compile: %s"
                          % (getattr(self._fn, "__name__", "the function"), error),
                          stacklevel=3)
        return self._fn(*args, **kwargs)

    def cache_info(self) -> List[Dict[str, Any]]:
        """One dict per compiled signature, in the order they compiled: key,
        mode ("inference"/"training"), status ("hit"/"miss"/"bypass"),
        backward ("none"/"pending"/"ready"), source ("server"/"in_process"),
        the backend that compiled it ("native"/"reference"),
        why it runs eagerly, if it does ("eager"), and what its first call
        spent tracing (make_fx and the export, "trace_ms") and on the
        request and loading the artifacts ("compile_ms"); for a
        torch.compile graph, whether its front key found the exported graph
        and skipped the trace ("front": "hit", "miss" or "" for none); its
        count of ATen nodes ("nodes"). A signature split at nodes aotcache
        cannot compile (graph_split.py) has a row per compiled segment,
        with its number ("segment"), then one per island of eager nodes:
        status "eager", the op ("op"), how many nodes ("nodes"), and why
        ("eager")."""
        rows = []
        with self._lock:
            compiled = list(self._order)
        for c in compiled:
            if c.split is not None:
                rows.extend(c.split.cache_info(c.front))
                continue
            n = c.native
            rows.append({
                "key": n.key if n is not None else "",
                "mode": n.mode if n is not None else "",
                "status": n.status if n is not None else "",
                "backward": n.backward if n is not None else "none",
                "source": n.source if n is not None else "",
                "backend": n.backend if n is not None else "",
                "fallback_reason": n.fallback_reason if n is not None else "",
                "eager": c.eager_reason,
                "trace_ms": c.trace_ms,
                "compile_ms": c.compile_ms,
                "front": c.front,
                "nodes": c.nodes,
            })
        return rows

    # -- compiling ---------------------------------------------------------

    def _signature(self, leaves: List[Any], spec: Any) -> tuple:
        captured = fx_export.captured_tensors(self._fn) if self._watch_captures else []
        return call_signature.signature(leaves, spec, captured)

    def _compile(self, args, kwargs, leaves, spec, signature) -> _Compiled:
        tensor_at = [i for i, a in enumerate(leaves) if isinstance(a, torch.Tensor)]
        unique, source = call_signature.dupes_of([leaves[i] for i in tensor_at])
        front = self._front_key(signature)
        compiled = self._from_front(front) if front else None
        if compiled is None:
            compiled = self._trace_and_compile(args, kwargs, leaves, spec, tensor_at, unique,
                                               source, front)
        if len(unique) < len(tensor_at):
            compiled.unique = unique
        return compiled

    def _front_key(self, signature: tuple) -> str:
        """The front key of this call's trace, or "" (front_key.py)."""
        if self._front is None or fx_export.captured_tensors(self._fn):
            return ""
        try:
            plain = front_key.plain(signature)
        except TypeError:
            return ""
        return front_key.key(self._front, plain, [self._rng])

    def _from_front(self, key: str) -> Optional[_Compiled]:
        """The function the graph recorded under front key `key` compiles
        to, without a trace; None when there is none (or it is not usable:
        the trace then runs and records it anew)."""
        record = front_key.default_store().load(key)
        if record is None:
            return None
        start = time.perf_counter()
        hooks = [self._fn] if isinstance(self._fn, torch.nn.Module) else []
        if record.get("split"):
            try:
                plan = graph_split.SplitPlan.from_json(json.loads(record["graph"]))
                compiled = self._run_split(plan, front_key.loads_spec(record["out_spec"]),
                                           Guards(hookless=hooks))
            except (AttributeError, KeyError, TypeError, ValueError):
                return None
            compiled.front = "hit"
            compiled.compile_ms = (time.perf_counter() - start) * 1e3
            return compiled
        try:
            out_spec = front_key.loads_spec(record["out_spec"])
            client = _client(self._server)
            native = client.compile(record["graph"])
            entry = CompiledEntry(native, [], record["version_moved"], record["uses_rng"],
                                  record["groups"])
        except (Error, KeyError, TypeError, ValueError):
            return None
        _warn_if_in_process(native, client)
        compiled = _Compiled(entry, native, out_spec, Guards(hookless=hooks),
                             compile_ms=(time.perf_counter() - start) * 1e3)
        compiled.front = "hit"
        compiled.nodes = int(record.get("nodes", 0))
        return compiled

    def _trace_and_compile(self, args, kwargs, leaves, spec, tensor_at, unique, source,
                           front: str) -> _Compiled:
        out_spec = []

        def traced(*tensors):
            call_leaves = list(leaves)
            for i, s in zip(tensor_at, source):
                call_leaves[i] = tensors[s]
            call_args, call_kwargs = call_signature.unflatten_arguments(
                call_leaves, spec, args, kwargs)
            flat, out = pytree.tree_flatten(self._fn(*call_args, **call_kwargs))
            out_spec.append(out)
            return flat

        tensors = [leaves[tensor_at[n]] for n in unique]
        name = getattr(self._fn, "__name__", "the function")
        start = time.perf_counter()
        split_at = graph_split.supported_ops() if self._fallback is None else None
        exported = None
        try:
            with torch.random.fork_rng(devices=[]):
                exported = fx_export.export_function(
                    traced, tensors, captures=self._fn, split_at=split_at,
                    nondifferentiable=graph_split.nondifferentiable_ops())
            traced_at = time.perf_counter()
            if exported.refused:
                return self._split(exported, exported.refused, out_spec[0], start, front)
            uses_rng = fx_export.uses_random_ops(exported.graph)
            if uses_rng and self._rng == "eager":
                return _Compiled(None, None, out_spec[0], exported.guards,
                                 eager_reason="random ops with rng='eager': torch's own "
                                              "random stream")
            client = _client(self._server)
            native = client.compile(json.dumps(exported.graph))
            _warn_if_in_process(native, client)
            _log.info("aotcache: %s: a new signature, %s %s from %s (%s backend)", name,
                      native.mode, native.status or "compiled", native.source,
                      native.backend)
            timings = dict(trace_ms=(traced_at - start) * 1e3,
                           compile_ms=(time.perf_counter() - traced_at) * 1e3)
        except Error as e:
            refused = graph_split.refused_nodes(exported.traced, str(e)) \
                if split_at is not None and exported is not None and \
                e.code == "INVALID_ARGUMENT" else {}
            if refused:
                return self._split(exported, refused, out_spec[0], start, front)
            if self._fallback == "error":
                raise CompileError("aotcache cannot compile %s: %s (fallback='error'; by "
                                   "default what aotcache cannot compile runs eagerly)"
                                   % (name, e), e.code) from None
            return self._eager(name, str(e))
        except Exception as e:  # make_fx's own: .item(), data-dependent control flow
            if self._fallback == "error":
                raise
            return self._eager(name, "%s: %s" % (type(e).__name__, e))
        entry = CompiledEntry(native, exported.lifted, exported.version_moved, uses_rng,
                              exported.groups)
        compiled = _Compiled(entry, native, out_spec[0], exported.guards, **timings)
        compiled.nodes = sum(1 for n in exported.graph["nodes"] if n["op"] != "getitem")
        if front:
            compiled.front = "miss"
            spec_text = front_key.dumps_spec(out_spec[0])
            if not exported.lifted and spec_text is not None:
                front_key.default_store().save(front, {
                    "graph": json.dumps(exported.graph), "out_spec": spec_text,
                    "version_moved": exported.version_moved, "uses_rng": uses_rng,
                    "groups": exported.groups, "nodes": compiled.nodes})
        return compiled

    def _split(self, exported: fx_export.Exported, refused, out_spec, start: float,
               front: str) -> _Compiled:
        """fn's trace split at the `refused` nodes (graph_split.py): its
        segments compiled as functions of their own. The split is kept
        under the front key, if any."""
        plan = graph_split.plan(exported.traced, refused, exported.grad_enabled)
        record = None  # Written before the split is run, which takes the plan.
        spec_text = front_key.dumps_spec(out_spec) if front else None
        if spec_text is not None and not exported.lifted:
            try:
                record = {"graph": json.dumps(plan.to_json()), "split": True,
                          "out_spec": spec_text}
            except TypeError:  # A graph traced_graph_json cannot write: no record.
                pass
        compiled = self._run_split(plan, out_spec, exported.guards)
        compiled.trace_ms = (time.perf_counter() - start) * 1e3
        if front:
            compiled.front = "miss"
            if record is not None:
                front_key.default_store().save(front, record)
        return compiled

    def _run_split(self, plan: graph_split.SplitPlan, out_spec, guards: Guards) -> _Compiled:
        def compile_graph(graph: torch.fx.GraphModule, front: bool) -> AotFunction:
            return AotFunction(graph, self._server, self._fallback, self._rng,
                               watch_captures=False,
                               front=front_key.graph_material(graph) if front else None)

        # A region's graphs are Dynamo's (custom_functions.py): found by
        # front key as Dynamo's graphs are.
        split = graph_split.SplitGraph(
            plan, functools.partial(compile_graph, front=self._front is not None),
            functools.partial(compile_graph, front=True))
        graph_split.warn(getattr(self._fn, "__name__", "the function"), plan)
        compiled = _Compiled(split, None, out_spec, guards)
        compiled.split = split
        return compiled

    def _eager(self, name: str, reason: str) -> _Compiled:
        warnings.warn("aotcache: running %s eagerly: %s" % (name, reason))
        return _Compiled(None, None, None, eager_reason=reason)


def _holding(candidates: Optional[List[_Compiled]]) -> Optional[_Compiled]:
    """The first of a signature's compiled forms whose guards hold."""
    for c in candidates or ():
        if c.guards.hold():
            return c
    return None


def aot_module(module: torch.nn.Module, **kwargs) -> torch.nn.Module:
    """module with its forward compiled through aotcache: parameters and
    buffers become inputs of the graph (their gradients flow into .grad as
    in eager). kwargs as aot_function's."""
    return _AotModule(module, **kwargs)


class _AotModule(torch.nn.Module):
    def __init__(self, module: torch.nn.Module, server: Optional[str] = None,
                 backend: Optional[str] = None, fallback: Optional[str] = None,
                 rng: str = "philox"):
        super().__init__()
        _check_options(backend, fallback, rng)
        self.orig_module = module
        names = tuple([n for n, _ in module.named_parameters()] +
                      [n for n, _ in module.named_buffers()])
        # Per name, the (module._parameters or _buffers, key) holding it: a
        # walk of the module tree at each call cost more than the call.
        self._places = []
        for name in names:
            prefix, _, key = name.rpartition(".")
            owner = module.get_submodule(prefix)
            table = owner._parameters if key in owner._parameters else owner._buffers
            self._places.append((table, key))

        def call(*flat, **kwargs):
            state = dict(zip(names, flat[:len(names)]))
            return torch_version.functional_call(module, state, tuple(flat[len(names):]),
                                                 kwargs)

        call.__name__ = type(module).__name__
        # The module's tensors are arguments of every call, so that a
        # parameter replaced needs no new trace: call's captures (those same
        # tensors) need no watching.
        self._compiled = AotFunction(call, server, fallback, rng, watch_captures=False)

    def forward(self, *args, **kwargs):
        # Read from the tables at each call: a replaced parameter is seen.
        state = [table[key] for table, key in self._places]
        return self._compiled(*state, *args, **kwargs)

    def cache_info(self) -> List[Dict[str, Any]]:
        return self._compiled.cache_info()

    # The wrapped module's state, under its own names: a checkpoint saved
    # from either loads into the other.
    def state_dict(self, *args, **kwargs):
        return self.orig_module.state_dict(*args, **kwargs)

    def load_state_dict(self, state_dict, strict: bool = True):
        return self.orig_module.load_state_dict(state_dict, strict)

    def __getattr__(self, name: str):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self.orig_module, name)
