"""aotcache.torch.aot_function on every traced scenario of SEMANTICS.md §7
and §2 (tests/fixtures/scenarios), each with inputs that do and do not
require grad, against torch eager: cold in this process, then warm in a
second process against the same daemon, where every scenario must hit.
"""

import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import run_scenarios  # noqa: E402

VARIANTS = run_scenarios.traced_variants()
MODES = {"MODE_TRAINING": "training", "MODE_INFERENCE": "inference"}

# Where aotcache does not (yet) behave as eager: strict xfails, so that a
# fix shows up as XPASS.
KNOWN = {
    "inplace_ops_mix__rg": ("eager's backward raises (relu_ saves its result, sub_ then "
                            "overwrites it); the functional compiled graph computes "
                            "gradients, as PyTorch's AOTAutograd does"),
}


def _param(v):
    marks = [pytest.mark.xfail(strict=True, reason=KNOWN[v.name])] if v.name in KNOWN else []
    return pytest.param(v, id=v.name, marks=marks)


@pytest.mark.parametrize("variant", [_param(v) for v in VARIANTS])
def test_cold_matches_eager(daemon, variant):
    result = run_scenarios.run(variant, daemon)
    assert result["differences"] == []
    assert result["mode"] == MODES[variant.expected["mode"]]
    assert result["status"] in ("miss", "hit")  # Variants may share a graph.


def test_warm_process_hits_every_scenario(daemon):
    env = dict(os.environ)
    proc = subprocess.run([sys.executable, os.path.join(HERE, "run_scenarios.py"),
                           "--server", daemon], env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    results = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [r["name"] for r in results] == [v.name for v in VARIANTS]
    for r in results:
        assert (r["name"], r["status"]) == (r["name"], "hit")
        if r["name"] not in KNOWN:
            assert (r["name"], r["differences"]) == (r["name"], [])
