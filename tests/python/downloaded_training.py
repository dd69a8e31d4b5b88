"""Training a downloaded model (downloaded.py) through
torch.compile(backend="aotcache") with default options, beside its eager
twin, in a process of its own: cold (a daemon and a front-key directory
that never saw the model), then warm (a new process, the same daemon and
directory). The tests of each library (test_models_*.py) call
`train_in_new_process`; run as a script, this module is that process and
prints what it saw as JSON.

    python downloaded_training.py MODEL SERVER

Thread-safety: one training per process.
"""

import copy
import json
import os
import subprocess
import sys
from typing import Any, Dict

HERE = os.path.dirname(os.path.abspath(__file__))
STEPS = 3


def train(name: str, server: str) -> Dict[str, Any]:
    import torch

    import aotcache.dynamo
    import downloaded

    torch.manual_seed(0)
    w = downloaded.MODELS[name]()
    model = w.module.train()
    twin = copy.deepcopy(model)
    compiled = torch.compile(model, backend="aotcache", options={"server": server})
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    opt_twin = torch.optim.AdamW(twin.parameters(), lr=1e-3)
    losses, eager_losses = [], []
    grads_differ = []
    for step in range(STEPS):
        for m, o, out in ((compiled, opt, losses), (twin, opt_twin, eager_losses)):
            o.zero_grad(set_to_none=True)
            loss = w.loss(m(*w.inputs), w.target)
            loss.backward()
            out.append(loss.item())
        # The first gradients, as accurate as eager's: against float64's
        # (the model and its inputs in float64), the compiled gradient's
        # error at most 3x eager's, plus 1e-6 (a gradient of rounding
        # size has no digits to compare), as torch._dynamo.utils.same
        # checks a compiler with fp64_ref. A float32 sum over thousands of
        # terms in another order moves about 1e-5 of a tensor's scale
        # through a dozen batch norms (mobilenetv3: eager itself is off
        # float64 by 8e-6 of the scale). Later, AdamW's first steps (about
        # lr * sign(grad)) amplify rounding, so parameters are not compared.
        if step == 0:
            exact = _float64_gradients(twin, w)
            for (n, p), q, r in zip(model.named_parameters(), twin.parameters(), exact):
                if (p.grad is None) != (q.grad is None) or (
                        p.grad is not None and (p.grad.double() - r).abs().max()
                        > 3 * (q.grad.double() - r).abs().max() + 1e-6):
                    grads_differ.append(n)
        opt.step()
        opt_twin.step()
    rows = aotcache.dynamo.cache_info()
    return {"losses": losses, "eager_losses": eager_losses, "grads_differ": grads_differ,
            "rows": [{k: r.get(k) for k in ("graph", "key", "mode", "status", "eager",
                                            "front", "trace_ms", "nodes", "op", "segment")}
                     for r in rows]}


def _float64_gradients(module, w):
    """The gradients of the workload's loss for a float64 copy of module."""
    import torch

    exact = copy.deepcopy(module).double()
    for p in exact.parameters():
        p.grad = None
    inputs = [x.double() if x.is_floating_point() else x for x in w.inputs]
    w.loss(exact(*inputs), w.target).backward()
    return [p.grad if p.grad is not None else torch.zeros_like(p) for p in exact.parameters()]


def train_in_new_process(name: str, server: str, env: Dict[str, str]) -> Dict[str, Any]:
    out = subprocess.run([sys.executable, os.path.abspath(__file__), name, server],
                         capture_output=True, text=True, env=dict(os.environ, **env),
                         timeout=900)
    if out.returncode != 0:
        raise AssertionError("training %s failed:\n%s" % (name, out.stderr[-4000:]))
    return json.loads(out.stdout.strip().splitlines()[-1])


def compiled_share(rows) -> float:
    """The share of the ATen nodes of every graph that ran compiled."""
    eager = sum(r["nodes"] for r in rows if r.get("op"))
    return 1 - eager / max(1, sum(r["nodes"] for r in rows))


def check_cold_then_warm(name: str, daemon: str, tmp_path) -> None:
    """The acceptance of issue 40 for one model: trained cold, then warm
    in a new process, its loss equal to eager's at every step and its
    first gradients too; most of its ATen nodes compiled; the warm process
    traces nothing and compiles nothing."""
    import torch

    env = {"XDG_CACHE_HOME": str(tmp_path), "OMP_NUM_THREADS": "1"}
    for run in ("cold", "warm"):
        seen = train_in_new_process(name, daemon, env)
        torch.testing.assert_close(torch.tensor(seen["losses"]),
                                   torch.tensor(seen["eager_losses"]))
        assert not seen["grads_differ"], (run, seen["grads_differ"])
        rows = seen["rows"]
        assert rows and not [r for r in rows if r["eager"] and not r["op"]], rows
        assert compiled_share(rows) >= 0.9, (run, compiled_share(rows), rows)
        compiled = [r for r in rows if not r["op"]]
        if run == "warm":
            assert all(r["front"] == "hit" and r["trace_ms"] == 0 and r["status"] == "hit"
                       for r in compiled), rows


if __name__ == "__main__":
    sys.path.insert(0, HERE)
    print(json.dumps(train(sys.argv[1], sys.argv[2])))
