"""Front keys: a torch.compile graph's warm start without its make_fx trace.

Dynamo hands the backend an FX graph of torch-level calls. The first time a
graph compiles for a signature, make_fx traces it to ATen (hundreds of
milliseconds for a ResNet) and the daemon answers the exported graph. The
front key names what that trace depended on: the Dynamo graph canonicalized
(calls by qualified name, values by position, constants by value; no node
names), the call's signature (each tensor's layout, dtype, requires_grad,
leaf status and storage sharing; each number by value), the global switches
that change what make_fx records (grad mode, autocast, the default dtype,
deterministic algorithms, oneDNN, the attention kernels), and the versions
of torch and of aotcache. The exported graph and what running it needs are
kept under that key in a directory only this user can read
($XDG_CACHE_HOME/aotcache/front-keys, 0700); a warm start sends that graph
to the daemon (a hit) instead of tracing.

A graph whose canonical form cannot be written (a call outside torch,
operator, math and builtins; a module or attribute it reads; a constant of
another type) gets no front key: it is traced every time, as before. A
record that cannot be read, or that the daemon refuses, costs a trace.
The map is private rather than the daemon's because nothing but the trace
can check that a front key and a graph belong together: a shared map would
let any client with the compile scope point others' front keys at a graph
of its choosing.

Thread-safety: the functions are pure; FrontStore's writes are atomic
renames, so concurrent processes may share a directory.
"""

import functools
import hashlib
import json
import os
import stat
import tempfile
from typing import Any, Dict, List, Optional

import torch
from torch.utils import _pytree as pytree

FORMAT = 1

_CALLABLE_MODULES = ("operator", "_operator", "math", "builtins")
_CONSTANT_TYPES = (bool, int, float, str, type(None))


def graph_material(gm: torch.fx.GraphModule) -> Optional[List[Any]]:
    """The canonical form of a Dynamo graph, or None when it holds
    something that cannot be named by value (see the module's doc)."""
    position: Dict[torch.fx.Node, int] = {}
    out: List[Any] = []

    def value(a: Any) -> Any:
        if isinstance(a, torch.fx.Node):
            return ["node", position[a]]
        if isinstance(a, float):
            return ["float", a.hex()]
        if isinstance(a, _CONSTANT_TYPES):
            return a
        if isinstance(a, (list, tuple)):
            return [type(a).__name__] + [value(x) for x in a]
        if isinstance(a, dict):
            return ["dict"] + [[str(k), value(v)] for k, v in sorted(a.items())]
        if isinstance(a, slice):
            return ["slice", value(a.start), value(a.stop), value(a.step)]
        if a is Ellipsis:
            return ["..."]
        if isinstance(a, (torch.dtype, torch.device, torch.layout, torch.memory_format)):
            return [type(a).__name__, str(a)]
        raise _NotCanonical()

    try:
        for node in gm.graph.nodes:
            if node.op == "call_function":
                target = _callable_name(node.target)
            elif node.op in ("placeholder", "output", "call_method"):
                target = node.target if node.op == "call_method" else ""
            else:  # call_module, get_attr: state the graph does not show
                return None
            out.append([node.op, target, value(node.args), value(node.kwargs)])
            position[node] = len(position)
    except (_NotCanonical, TypeError):  # TypeError: dict keys that do not sort
        return None
    return out


class _NotCanonical(Exception):
    pass


def _callable_name(f: Any) -> str:
    module = getattr(f, "__module__", None) or ""
    name = getattr(f, "__qualname__", None) or getattr(f, "__name__", None)
    if not name or not (module == "torch" or module.startswith("torch.")
                        or module in _CALLABLE_MODULES):
        raise _NotCanonical()
    return "%s.%s" % (module, name)


@functools.lru_cache(maxsize=None)
def _package_digest() -> str:
    """aotcache's export code as it is (a changed file changes every key)."""
    here = os.path.dirname(os.path.abspath(__file__))
    digest = hashlib.sha256()
    for name in sorted(os.listdir(here)):
        if name.endswith(".py"):
            with open(os.path.join(here, name), "rb") as f:
                digest.update(name.encode() + b"\0" + f.read() + b"\0")
    return digest.hexdigest()


@functools.lru_cache(maxsize=None)
def _registry_digest() -> str:
    """The ops this aotcache compiles: the trace decomposes the others, and
    the split runs them eagerly."""
    from .graph_split import nondifferentiable_ops, supported_ops
    text = "\n".join(sorted(supported_ops())) + "\n\n" + "\n".join(
        sorted(nondifferentiable_ops()))
    return hashlib.sha256(text.encode()).hexdigest()


def global_state() -> List[Any]:
    """The process-wide switches that change what make_fx records, and the
    versions of torch and of aotcache's export and registry."""
    return [
        torch.__version__, _package_digest(), _registry_digest(), torch.get_default_dtype(),
        torch.is_autocast_enabled("cpu"), torch.get_autocast_dtype("cpu"),
        torch.are_deterministic_algorithms_enabled(), torch.backends.mkldnn.enabled,
        torch.backends.cuda.flash_sdp_enabled(), torch.backends.cuda.math_sdp_enabled(),
        torch.backends.cuda.mem_efficient_sdp_enabled(),
    ]


def plain(x: Any) -> Any:
    """An aot_function signature as JSON values (TypeError for what has
    none)."""
    if isinstance(x, float):
        return ["float", x.hex()]
    if x is None or isinstance(x, (bool, int, str)):
        return x
    if isinstance(x, (tuple, list)):
        return [plain(v) for v in x]
    if isinstance(x, type):
        return ["type", x.__qualname__]
    if isinstance(x, (torch.dtype, torch.device)):
        return [type(x).__name__, str(x)]
    raise TypeError("no plain form: %s" % type(x).__name__)


def key(graph: List[Any], signature: List[Any], options: List[Any]) -> str:
    """The hex front key of a canonical graph, a call's signature (plain
    values) and the options that shape the compile."""
    material = [FORMAT, graph, signature, options, [str(x) for x in global_state()]]
    text = json.dumps(material, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def dumps_spec(spec: Any) -> Optional[str]:
    try:
        return pytree.treespec_dumps(spec)
    except Exception:  # noqa: BLE001 - a spec pytree cannot write: no record
        return None


def loads_spec(text: str) -> Any:
    return pytree.treespec_loads(text)


class FrontStore:
    """Records by front key, one file each, in a directory of this user's;
    each holds its key and its graph's digest, checked when it is read."""

    def __init__(self, directory: str):
        self.directory = directory

    def load(self, front_key: str) -> Optional[Dict[str, Any]]:
        if not self._private():
            return None
        try:
            with open(os.path.join(self.directory, front_key + ".json")) as f:
                record = json.load(f)
        except (OSError, ValueError):
            return None
        if not (isinstance(record, dict) and record.get("format") == FORMAT
                and record.get("key") == front_key and isinstance(record.get("graph"), str)
                and record.get("graph_sha256") == _sha256(record["graph"])):
            return None
        return record

    def save(self, front_key: str, record: Dict[str, Any]) -> None:
        """Best effort: a record not written costs the next start a trace."""
        try:
            os.makedirs(self.directory, mode=0o700, exist_ok=True)
            if not self._private():
                return
            fd, tmp = tempfile.mkstemp(dir=self.directory, suffix=".tmp")
            with os.fdopen(fd, "w") as f:
                json.dump(dict(record, format=FORMAT, key=front_key,
                               graph_sha256=_sha256(record["graph"])), f)
            os.replace(tmp, os.path.join(self.directory, front_key + ".json"))
        except OSError:
            pass


    def _private(self) -> bool:
        """Whether the directory is this user's alone (not a symlink):
        records another user could write would name graphs of theirs."""
        try:
            st = os.lstat(self.directory)
        except OSError:
            return False
        return (stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid()
                and not st.st_mode & 0o077)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def default_store() -> FrontStore:
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return FrontStore(os.path.join(cache, "aotcache", "front-keys"))
