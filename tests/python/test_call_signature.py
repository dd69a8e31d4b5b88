"""_native's signature in C++ against call_signature.py's Python form: two
calls get equal signatures under one exactly when they do under the other
(the Python form is what _core uses on every other torch release)."""

import itertools

import pytest
import torch

from aotcache import call_signature
from aotcache._binding import USES_NATIVE, extension

pytestmark = pytest.mark.skipif(not USES_NATIVE, reason="_native is built for Debian's torch")


def _calls():
    """(name, leaves, captured, grad mode) per call, many of which differ
    from another in one property only."""
    base = torch.randn(6, 8)
    data = torch.randn(100)
    w = torch.randn(4, requires_grad=True)
    v = torch.randn(4, requires_grad=True)
    nonleaf = w * 2
    calls = [
        ("plain", [torch.randn(3, 4)], [], True),
        ("plain again", [torch.randn(3, 4)], [], True),
        ("under no_grad", [torch.randn(3, 4)], [], False),
        ("other shape", [torch.randn(4, 3)], [], True),
        ("transposed", [torch.randn(4, 3).t()], [], True),
        ("float64", [torch.randn(3, 4, dtype=torch.float64)], [], True),
        ("int64", [torch.zeros(3, 4, dtype=torch.int64)], [], True),
        ("requires grad", [torch.randn(3, 4, requires_grad=True)], [], True),
        ("not a leaf", [torch.randn(3, 4, requires_grad=True) * 1], [], True),
        ("0-d", [torch.tensor(1.0)], [], True),
        ("empty", [torch.zeros(0, 4)], [], True),
        ("empty again", [torch.zeros(0, 4)], [], True),
        ("two slices at 0", [data[0:10], data[10:20]], [], True),
        ("two slices at 40", [data[40:50], data[50:60]], [], True),
        ("two slices apart", [data[0:10], data[20:30]], [], True),
        ("two storages", [torch.randn(10), torch.randn(10)], [], True),
        ("one tensor twice", [base, base], [], True),
        ("two equal tensors", [base, base.clone()], [], True),
        ("a row of a matrix", [base[2]], [], True),
        ("another row", [base[3]], [], True),
        ("a row that requires grad", [w[1:3]], [], True),
        ("another row that requires grad", [v[2:4]], [], True),
        ("a non-leaf's slice", [nonleaf[1:]], [], True),
        ("int 1", [torch.randn(2), 1], [], True),
        ("int 2", [torch.randn(2), 2], [], True),
        ("True", [torch.randn(2), True], [], True),
        ("float 1.0", [torch.randn(2), 1.0], [], True),
        ("str", [torch.randn(2), "1"], [], True),
        ("None", [torch.randn(2), None], [], True),
        ("dtype", [torch.randn(2), torch.float32], [], True),
        ("device", [torch.randn(2), torch.device("cpu")], [], True),
        ("scalar first", [1, torch.randn(2)], [], True),
        ("captured w", [torch.randn(4)], [w], True),
        ("captured v", [torch.randn(4)], [v], True),
        ("captured w in its storage", [w[:2].detach()], [w], True),
    ]
    return calls


def test_equal_under_one_exactly_when_equal_under_the_other():
    calls = _calls()
    forms = []
    for name, leaves, captured, grad in calls:
        with torch.set_grad_enabled(grad):
            forms.append((name, call_signature.signature_in_python(leaves, None, captured),
                          extension.signature(leaves, None, captured)))
    equal_pairs = 0
    for (a, py_a, c_a), (b, py_b, c_b) in itertools.combinations(forms, 2):
        assert (py_a == py_b) == (c_a == c_b), (a, b, py_a == py_b)
        equal_pairs += py_a == py_b
    # Some pairs are the same signature (else the test shows nothing).
    assert equal_pairs >= 4
    # The module uses the C++ form here.
    assert call_signature.signature is extension.signature


def test_both_refuse_the_same_leaves():
    for leaf in (object(), torch.randn(2).numpy(), 1 + 2j):
        with pytest.raises(TypeError, match="not "):
            call_signature.signature_in_python([torch.randn(2), leaf], None, [])
        with pytest.raises(TypeError, match="not "):
            extension.signature([torch.randn(2), leaf], None, [])
