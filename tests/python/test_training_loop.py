"""A realistic training loop (tests/python/training_loop.py: AdamW with
weight decay, clipping, a scheduler, gradient accumulation, evals in eval
mode with and without no_grad, an EMA copy, a checkpoint and a resume, a
layer frozen half way, tied weights, a dict result, keyword arguments)
through aot_module and aot_function, cold then warm in a second process
(every signature a hit). Every parameter, buffer and eval equals eager's
within the zoo's bound: float32's own rounding (eager float32 against eager
float64) times a small factor."""

import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
DRIFT_FACTOR = 4.0      # as tests/python/test_zoo.py
RELATIVE_FLOOR = 1e-6


def _run(form, server):
    p = subprocess.run([sys.executable, os.path.join(HERE, "training_loop.py"), form, server],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-4000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def _check(result):
    for section in ("loop", "resumed"):
        assert result[section], section
        for name, row in result[section].items():
            bound = DRIFT_FACTOR * row["drift"] + RELATIVE_FLOOR * max(row["scale"], 1.0)
            assert row["error"] <= bound, (section, name, row)
    assert not any(i["eager"] for i in result["cache_info"]), result["cache_info"]


@pytest.mark.parametrize("form", ["module", "function"])
def test_a_training_loop_equals_eager_cold_then_warm(form, daemon):
    cold = _run(form, daemon)
    _check(cold)
    assert "miss" in {i["status"] for i in cold["cache_info"]}
    warm = _run(form, daemon)
    _check(warm)
    assert [i["status"] for i in warm["cache_info"]] == ["hit"] * len(warm["cache_info"])
    assert sorted(i["key"] for i in warm["cache_info"]) == \
        sorted(i["key"] for i in cold["cache_info"])
