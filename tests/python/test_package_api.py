"""The package's public surface: one exception hierarchy (aotcache.Error at
its root, a class per gRPC status code, CompileError and ExportError under
it), raised as such by the extension and the daemon, and _core.pyi true to
the extension it describes."""

import ast
import json
import os
import subprocess
import sys

import pytest
import torch

import aotcache
from aotcache import _binding
from aotcache.torch import aot_function

CODES = ["CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
         "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
         "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
         "UNAUTHENTICATED"]


def test_every_status_code_has_its_class_under_error():
    for code in CODES:
        cls = aotcache.for_code(code)
        assert issubclass(cls, aotcache.Error) and cls.code == code
        name = "".join(word.capitalize() for word in code.split("_"))
        assert getattr(aotcache, name) is cls
    assert aotcache.for_code("NOT_A_CODE") is aotcache.Unknown
    assert issubclass(aotcache.CompileError, aotcache.Error)
    assert issubclass(aotcache.CompileError, RuntimeError)
    assert issubclass(aotcache.ExportError, aotcache.Error)
    assert issubclass(aotcache.ExportError, ValueError)
    assert issubclass(aotcache.InvalidArgument, ValueError)
    assert issubclass(aotcache.Unimplemented, NotImplementedError)
    assert aotcache.torch.CompileError is aotcache.CompileError


def test_the_extension_raises_the_class_of_the_status_code():
    with pytest.raises(aotcache.InvalidArgument) as raised:
        _binding.parse_graph("{not json")
    assert raised.value.code == "INVALID_ARGUMENT"
    assert not str(raised.value).startswith("INVALID_ARGUMENT")


def test_the_daemon_s_refusal_arrives_as_its_code_naming_the_node(daemon):
    fixture = os.path.join(os.path.dirname(__file__), "..", "fixtures", "graphs",
                           "assorted_ops__mixed.json")
    with open(fixture) as f:
        graph = json.load(f)
    graph["nodes"][0]["op"] = "aten.no_such_op.default"
    with pytest.raises(aotcache.InvalidArgument, match="no_such_op") as raised:
        _binding.Client(daemon).compile(json.dumps(graph))
    assert "node 'cat' (nodes[0]" in str(raised.value)


def test_compile_error_carries_the_code_of_the_failure_behind_it(daemon):
    g = aot_function(lambda x: torch.logcumsumexp(x, 0), server=daemon, fallback="error")
    with pytest.raises(aotcache.CompileError, match="logcumsumexp") as raised:
        g(torch.randn(4))
    assert raised.value.code == "INVALID_ARGUMENT"


def test_export_error_is_a_compile_error_s_cause_without_a_code(daemon):
    g = aot_function(lambda x: x.to(torch.complex64).real, server=daemon, fallback="error")
    with pytest.raises(aotcache.CompileError, match="complex") as raised:
        g(torch.randn(4))
    assert raised.value.code is None


def _stub_names(tree: ast.Module):
    top, members = set(), {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            top.add(node.name)
            members[node.name] = {n.name for n in node.body if isinstance(n, ast.FunctionDef)
                                  and not n.name.startswith("__")}
        elif isinstance(node, ast.FunctionDef):
            top.add(node.name)
    return top, members


_LIST_CORE = """
import json
from aotcache import _core
names = {n: [m for m in dir(getattr(_core, n)) if not m.startswith("_")]
         if isinstance(getattr(_core, n), type) else None
         for n in dir(_core) if not n.startswith("_")}
print(json.dumps(names))
"""


def test_core_stub_names_what_the_extension_has():
    # In a process of its own: _core and _native cannot share one.
    listed = subprocess.run([sys.executable, "-c", _LIST_CORE], capture_output=True,
                            text=True, check=True)
    actual = json.loads(listed.stdout)
    path = os.path.join(os.path.dirname(aotcache.__file__), "_core.pyi")
    with open(path) as f:
        top, members = _stub_names(ast.parse(f.read()))
    assert top == set(actual)
    for cls, names in members.items():
        assert names == set(actual[cls]), cls
