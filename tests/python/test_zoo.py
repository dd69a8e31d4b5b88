"""The model zoo trains through the cache as in eager (issue: the models
people train). Each model, through aot_module (loss outside) and aot_function
(loss inside), trains 5 Adam steps in a process of its own, cold (the daemon
compiles), then again in a second process, warm (every signature a hit). At
every step the compiled and the eager model start from identical parameters
and buffers; their losses and gradients must differ by no more than float32's
own rounding, measured as eager float32 against eager float64 at the same
parameters (the drift), times a small factor, once the flips of ReLU units
within that rounding of 0 are taken off (zoo._error_past_kinks)."""

import json
import os
import subprocess
import sys

import pytest
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from zoo import DRIFT_FACTOR, RELATIVE_FLOOR  # noqa: E402


def _train_in_a_process(name, form, server):
    p = subprocess.run([sys.executable, os.path.join(HERE, "zoo.py"), name, form, server],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-4000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def _check_against_eager(result):
    for i, s in enumerate(result["steps"]):
        assert s["loss_error"] <= DRIFT_FACTOR * s["loss_drift"] + RELATIVE_FLOOR * abs(s["loss"]), \
            "step %d loss: %r" % (i, s)
        # Past ReLU's kinks: a unit within rounding of 0 may flip (zoo.py).
        error = s["grad_error"] if s["grad_error_past_kinks"] is None \
            else s["grad_error_past_kinks"]
        assert error <= DRIFT_FACTOR * s["grad_drift"] + RELATIVE_FLOOR * s["grad_norm"], \
            "step %d gradients: %r" % (i, s)
        assert s["buffer_error"] <= DRIFT_FACTOR * s["buffer_drift"] + 1e-6, \
            "step %d buffers: %r" % (i, s)


@pytest.mark.parametrize("form", ["module", "function"])
@pytest.mark.parametrize("name", ["mlp", "cnn", "resnet18",
                                  "gpt", "encoder", "lstm"])
def test_trains_as_in_eager_cold_then_warm(name, form, daemon):
    cold = _train_in_a_process(name, form, daemon)
    _check_against_eager(cold)
    assert [c["status"] for c in cold["cache_info"]] == ["miss"], cold["cache_info"]
    warm = _train_in_a_process(name, form, daemon)
    _check_against_eager(warm)
    assert [c["status"] for c in warm["cache_info"]] == ["hit"], warm["cache_info"]
    assert warm["cache_info"][0]["key"] == cold["cache_info"][0]["key"]


@pytest.mark.skipif(not hasattr(torch, "compile"), reason="torch.compile needs torch 2")
@pytest.mark.parametrize("name", ["mlp", "cnn", "resnet18",
                                  "gpt", "encoder", "lstm"])
def test_trains_through_torch_compile_cold_then_warm(name, daemon):
    cold = _train_in_a_process(name, "compile", daemon)
    _check_against_eager(cold)
    assert cold["cache_info"] and all(
        c["status"] == "miss" and c["mode"] == "training" for c in cold["cache_info"]), \
        cold["cache_info"]
    assert all(c["front"] == "miss" for c in cold["cache_info"]), cold["cache_info"]
    warm = _train_in_a_process(name, "compile", daemon)
    _check_against_eager(warm)
    assert [c["status"] for c in warm["cache_info"]] == ["hit"] * len(cold["cache_info"])
    assert [c["key"] for c in warm["cache_info"]] == [c["key"] for c in cold["cache_info"]]
    # No make_fx trace in the warm process: each graph's front key found it.
    assert all(c["front"] == "hit" and c["trace_ms"] == 0 for c in warm["cache_info"]), \
        warm["cache_info"]


def test_resnet18_in_eval_under_no_grad_cold_then_warm(daemon):
    for status in ("miss", "hit"):
        result = _train_in_a_process("resnet18", "eval", daemon)
        for i, s in enumerate(result["steps"]):
            assert s["output_error"] <= DRIFT_FACTOR * s["output_drift"] + \
                RELATIVE_FLOOR * s["output_norm"], "batch %d: %r" % (i, s)
        info = result["cache_info"]
        assert [(c["status"], c["mode"]) for c in info] == [(status, "inference")], info
