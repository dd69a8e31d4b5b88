"""torch's own OpInfo database (op_db, shipped in the torch 2.x wheel)
through aotcache: each op's first samples on CPU float32, compiled with
aot_function (default options), forward and backward against eager.

Each op ends in one of:
  compiled  every sample compiled whole, values and gradients as eager's;
  island    some sample ran some node eagerly (graph_split.py), values and
            gradients as eager's; the reason is the island's;
  eager     some sample ran wholly eagerly (it cannot be traced), with why;
  failed    a sample's values or gradients differ from eager's, or the
            compiled call raised where eager did not;
  skipped   no float32 sample runs in eager here.

    OPENBLAS_NUM_THREADS=1 build/venv-torch2/bin/python tests/python/opinfo_coverage.py
        [--samples 1] [--ops name,...] (AOTCACHE_SERVER: the daemon; it
        starts build/server/aotcached with --backend=reference otherwise)

tests/python/test_opinfo_coverage.py runs it and requires that none fail.

Thread-safety: a run is one thread's.
"""

import argparse
import collections
import os
import subprocess
import sys
import tempfile
import time
import warnings
from typing import Any, Dict, List, Optional, Tuple

import torch
from torch.utils import _pytree as pytree

RESULTS = ("compiled", "island", "eager", "failed", "skipped")


def _op_db():
    from torch.testing._internal.common_methods_invocations import op_db
    return op_db


def _samples(op, count: int) -> List[Any]:
    if torch.float32 not in op.supported_dtypes("cpu"):
        return []
    out = []
    try:
        for sample in op.sample_inputs("cpu", torch.float32,
                                       requires_grad=op.supports_autograd):
            out.append(sample)
            if len(out) >= count:
                break
    except Exception:  # noqa: BLE001 - an op whose samples do not build here
        return []
    return out


def _clone(tree):
    def one(x):
        if isinstance(x, torch.Tensor):
            c = x.detach().clone()
            return c.requires_grad_(x.requires_grad) if c.is_floating_point() else c
        return x
    return pytree.tree_map(one, tree)


def _grads(out, inputs) -> Optional[List[Optional[torch.Tensor]]]:
    """The gradients of sum(out * weights) for the inputs that require
    grad (fixed weights), or None when nothing is differentiable."""
    outs = [o for o in pytree.tree_leaves(out)
            if isinstance(o, torch.Tensor) and o.requires_grad and o.is_floating_point()]
    leaves = [x for x in pytree.tree_leaves(inputs)
              if isinstance(x, torch.Tensor) and x.requires_grad]
    if not outs or not leaves:
        return None
    g = torch.Generator().manual_seed(0)
    total = sum((o * torch.randn(o.shape, generator=g)).sum() for o in outs)
    return list(torch.autograd.grad(total, leaves, allow_unused=True))


def _close(a, b) -> Optional[str]:
    la, lb = pytree.tree_leaves(a), pytree.tree_leaves(b)
    if len(la) != len(lb):
        return "%d results against eager's %d" % (len(la), len(lb))
    for x, y in zip(la, lb):
        if isinstance(y, torch.Tensor):
            if not isinstance(x, torch.Tensor):
                return "a %s against eager's tensor" % type(x).__name__
            try:
                torch.testing.assert_close(x.detach(), y.detach(), rtol=1e-4, atol=1e-5,
                                           equal_nan=True)
            except AssertionError as e:
                return str(e).splitlines()[0] + " " + " ".join(str(e).splitlines()[1:4])
        elif x != y and not (x != x and y != y):
            return "%r against eager's %r" % (x, y)
    return None


# Ops whose results hold whatever memory they were given: the same garbage
# twice in a row as often as not, so only their layouts are compared.
_UNINITIALIZED = frozenset({"empty", "empty_like", "empty_strided", "empty_permuted",
                            "new_empty", "new_empty_strided"})


def _layouts(tree):
    return [(tuple(x.shape), x.dtype) if isinstance(x, torch.Tensor) else type(x).__name__
            for x in pytree.tree_leaves(tree)]


def run_sample(op, sample, server: str) -> Tuple[str, str]:
    """One sample through aotcache: (result, detail)."""
    from aotcache.torch import aot_function

    def fn(inp, args, kwargs):
        return op.op(inp, *args, **kwargs)

    def eager(seed):
        torch.manual_seed(seed)
        args = _clone((sample.input, sample.args, sample.kwargs))
        out = fn(*args)
        return out, args

    try:
        want, eager_args = eager(0)
        uninitialized = op.name in _UNINITIALIZED
        want_grads = _grads(want, eager_args)
        # Random ops (or memory left uninitialized, as empty_like's) have no
        # values to compare: their results' shapes and dtypes are compared.
        # (OpInfo's random ops seed torch themselves: a compiled random op
        # draws from Philox, seeded from torch's generator at each call,
        # as documented: see the second call below.)
        random = uninitialized or _close(eager(0)[0], want) is not None or \
            _close(eager(1)[0], want) is not None
    except Exception:  # noqa: BLE001 - eager itself refuses this sample
        return "skipped", ""
    torch.manual_seed(0)
    mine = _clone((sample.input, sample.args, sample.kwargs))
    compiled = aot_function(fn, server=server)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = compiled(*mine)
            got_grads = _grads(got, mine) if want_grads is not None else None
            torch.manual_seed(1)
            random |= _close(compiled(*_clone((sample.input, sample.args, sample.kwargs))),
                             got) is not None
    except Exception as e:  # noqa: BLE001 - what a user would meet
        return "failed", "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:300])
    if random:
        wrong = _close(_layouts(got), _layouts(want))
        if wrong is None and (got_grads is None) != (want_grads is None):
            wrong = "gradients where eager has none, or none where it has"
    else:
        wrong = _close(got, want)
    if wrong is None and want_grads is not None and not random:
        if got_grads is None:
            wrong = "no gradient where eager has one"
        else:
            wrong = _close([g if g is not None else 0 for g in got_grads],
                           [g if g is not None else 0 for g in want_grads])
            wrong = wrong and "gradient: " + wrong
    if wrong is not None:
        return "failed", wrong
    rows = compiled.cache_info()
    islands = [r for r in rows if "op" in r]
    if islands:
        return "island", "; ".join(sorted({"%s: %s" % (r["op"], r["eager"][:200])
                                            for r in islands}))
    eager = [r["eager"] for r in rows if r["eager"]]
    if eager:
        return "eager", eager[0][:300]
    return "compiled", ""


def run(server: str, samples: int = 1, names: Optional[List[str]] = None,
        progress=None) -> Dict[str, Tuple[str, str]]:
    """Per op (name.variant): (result, detail), the worst of its samples'."""
    rank = {r: k for k, r in enumerate(("compiled", "island", "eager", "failed"))}
    results: Dict[str, Tuple[str, str]] = {}
    for op in _op_db():
        name = op.name + ("." + op.variant_test_name if op.variant_test_name else "")
        if names and name not in names and op.name not in names:
            continue
        verdict = ("skipped", "")
        for sample in _samples(op, samples):
            torch.manual_seed(0)
            got = run_sample(op, sample, server)
            if got[0] != "skipped" and (verdict[0] == "skipped" or
                                        rank[got[0]] > rank[verdict[0]]):
                verdict = got
        results[name] = verdict
        if progress:
            progress(name, verdict)
    return results


def summary(results: Dict[str, Tuple[str, str]]) -> str:
    counts = collections.Counter(r for r, _ in results.values())
    lines = ["OpInfo ops on CPU float32: " + ", ".join(
        "%d %s" % (counts[r], r) for r in RESULTS)]
    for kind in ("failed", "eager", "island"):
        for name, (r, detail) in sorted(results.items()):
            if r == kind:
                lines.append("  %-8s %-40s %s" % (kind, name, detail))
    return "\n".join(lines)


def _start_daemon(tmp: str) -> Tuple[subprocess.Popen, str]:
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    binary = os.environ.get("AOTCACHED") or os.path.join(root, "build/server/aotcached")
    socket = os.path.join(tmp, "d.sock")
    proc = subprocess.Popen([binary, "--listen=unix:" + socket, "--data_dir=" + tmp,
                             "--backend=reference"], stderr=subprocess.DEVNULL)
    while not os.path.exists(socket):
        if proc.poll() is not None:
            raise SystemExit("aotcached did not start")
        time.sleep(0.02)
    return proc, "unix:" + socket


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=1)
    parser.add_argument("--ops", default="")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        server, proc = os.environ.get("AOTCACHE_SERVER"), None
        if not server:
            proc, server = _start_daemon(tmp)
        try:
            report = (lambda n, v: print(n, *v, flush=True)) if args.verbose else None
            results = run(server, args.samples, args.ops.split(",") if args.ops else None,
                          report)
        finally:
            if proc is not None:
                proc.terminate()
                proc.wait()
    print(summary(results))


if __name__ == "__main__":
    sys.exit(main())
