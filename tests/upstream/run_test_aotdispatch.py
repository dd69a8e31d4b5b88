#!/usr/bin/env python3
"""PyTorch's own TestAOTAutograd through aotcache: runs upstream
test/functorch/test_aotdispatch.py with its `aot_function`, `aot_module` and
their aliases `compiled_function`/`compiled_module` rebound to
aotcache.torch's, with aotcache's default options (every compiler,
partitioner, decomposition and dynamic option the tests pass is ignored;
`aot_module_simplified` stays torch's: aotcache has no counterpart).

The upstream file is not in the torch wheel or this repository: pass its
path (a checkout of PyTorch's test/functorch/ of 2025). Its
test/functorch/common_utils.py is not needed: this script provides the
names the file imports from it, and a stand-in for
`functorch.experimental.control_flow`, which torch 2.13 no longer has.

    build/venv-torch2/bin/python tests/upstream/run_test_aotdispatch.py \\
        PATH/test_aotdispatch.py [--torch] [--neutralize] [pytest args...]

--torch runs torch's own aot_function instead (the baseline).
--neutralize makes `assertExpectedInline` a no-op and fills the graph
cells of torch's fw/bw compiler callbacks with an empty graph, as
upstream's TestAOTAutogradWithDynamo does: those checks compare torch's
own generated graph text, which no other compiler can produce; nothing
else is relaxed. It prints the pass count and each failure's first line.
"""

import collections
import os
import sys
import types
import unittest

USAGE = "usage: run_test_aotdispatch.py PATH/test_aotdispatch.py [--torch] [--neutralize] ..."


def _common_utils() -> types.ModuleType:
    """The names test_aotdispatch.py imports from functorch's test
    common_utils.py (only TestEagerFusion* uses skipOps and
    decorateForModules, so they decorate nothing)."""
    module = types.ModuleType("common_utils")
    DecorateMeta = collections.namedtuple(
        "DecorateMeta", ["op_name", "variant_name", "decorator", "device_type", "dtypes"])

    def decorate(op_name, variant_name="", *, decorator=None, device_type=None, dtypes=None):
        return DecorateMeta(op_name, variant_name, decorator, device_type, dtypes)

    def xfail(op_name, variant_name="", *, device_type=None, dtypes=None):
        return decorate(op_name, variant_name, decorator=unittest.expectedFailure,
                        device_type=device_type, dtypes=dtypes)

    def skip(op_name, variant_name="", *, device_type=None, dtypes=None):
        return decorate(op_name, variant_name, decorator=unittest.skip("Skipped!"),
                        device_type=device_type, dtypes=dtypes)

    def saved_tensors_hooks_to_gm(*args, **kwargs):
        raise NotImplementedError("saved_tensors_hooks_to_gm: not provided by this runner")

    module.decorate, module.xfail, module.skip = decorate, xfail, skip
    module.skipOps = lambda *a, **k: (lambda fn: fn)
    module.decorateForModules = lambda *a, **k: (lambda fn: fn)
    module.saved_tensors_hooks_to_gm = saved_tensors_hooks_to_gm
    return module


def _control_flow_stub() -> None:
    import functorch.experimental as experimental
    import torch._higher_order_ops.map as hop_map

    if not hasattr(experimental, "control_flow"):
        control_flow = types.ModuleType("functorch.experimental.control_flow")
        control_flow.map = getattr(hop_map, "map", None)
        experimental.control_flow = control_flow
        sys.modules["functorch.experimental.control_flow"] = control_flow


def _torchvision_or_none() -> None:
    """The file imports torchvision in a try/except ImportError; a
    torchvision that fails otherwise beside this torch (its operators
    missing) is made an ImportError, so the file goes on without it."""
    try:
        import torchvision  # noqa: F401
    except ImportError:
        pass
    except Exception:  # noqa: BLE001 (RuntimeError: an operator does not exist)
        for name in [n for n in sys.modules if n.split(".")[0] == "torchvision"]:
            del sys.modules[name]
        sys.modules["torchvision"] = None


def _rebind_to_aotcache(t: types.ModuleType) -> None:
    import aotcache.torch

    t.aot_function = lambda fn, *args, **kwargs: aotcache.torch.aot_function(fn)
    t.aot_module = lambda mod, *args, **kwargs: aotcache.torch.aot_module(mod)
    t.compiled_function, t.compiled_module = t.aot_function, t.aot_module


def _neutralize(t: types.ModuleType) -> None:
    real_partial = t.partial

    class NoGraph:
        code = ""

        class graph:  # noqa: N801 (read as gm.graph.nodes)
            nodes = []

    def partial(func, *args, **kwargs):
        cell = kwargs.get("graph_cell")
        if func is t.extract_graph and isinstance(cell, list) and cell and cell[0] is None:
            cell[0] = NoGraph()
        return real_partial(func, *args, **kwargs)

    t.partial = partial
    t.TestAOTAutograd.assertExpectedInline = lambda self, *args, **kwargs: None


class _Outcomes:
    """pytest plugin: each test's outcome and first error line."""

    def __init__(self):
        self.outcome = {}
        self.error = {}

    def pytest_runtest_logreport(self, report):
        if report.when == "call" or report.outcome != "passed":
            self.outcome[report.nodeid] = report.outcome
            crash = getattr(report.longrepr, "reprcrash", None)
            if report.outcome == "failed" and crash is not None:
                self.error[report.nodeid] = (crash.message or "").splitlines()[0][:160]


def main() -> int:
    args = sys.argv[1:]
    if not args or not args[0].endswith(".py") or not os.path.exists(args[0]):
        print(USAGE, file=sys.stderr)
        return 2
    path, args = os.path.abspath(args[0]), args[1:]
    use_torch = "--torch" in args
    neutralize = "--neutralize" in args
    args = [a for a in args if a not in ("--torch", "--neutralize")]
    sys.path.insert(0, os.path.dirname(path))
    sys.modules["common_utils"] = _common_utils()
    _control_flow_stub()
    _torchvision_or_none()
    import importlib.util

    import pytest

    spec = importlib.util.spec_from_file_location("test_aotdispatch", path)
    t = importlib.util.module_from_spec(spec)
    sys.modules["test_aotdispatch"] = t
    spec.loader.exec_module(t)
    if not use_torch:
        _rebind_to_aotcache(t)
    if neutralize:
        _neutralize(t)
    outcomes = _Outcomes()
    selection = args or [path + "::TestAOTAutograd"]
    pytest.main(["-p", "no:cacheprovider", "-q", "-W", "ignore::DeprecationWarning"]
                + selection, plugins=[outcomes])
    counts = collections.Counter(outcomes.outcome.values())
    print("%s%s: %s" % ("torch's aot_function" if use_torch else "aotcache",
                        " (graph text neutralized)" if neutralize else "",
                        ", ".join("%d %s" % (n, k) for k, n in sorted(counts.items()))))
    for nodeid, message in sorted(outcomes.error.items()):
        print("  %s: %s" % (nodeid.split("::")[-1], message))
    return 0


if __name__ == "__main__":
    sys.exit(main())
