#!/usr/bin/python3
"""The model zoo (tests/python/zoo.py) through aotcache against torch eager,
in one run (compare the ratios: these machines are shared and noisy).

Per model, each measured in a process of its own (a user runs one or the
other):
  1. cold: the first call in a process against a daemon that has never seen
     the model (trace, export, the native compile, the store), its status;
  2. warm: the first call in a second process (trace, export, a hit, loading
     the artifacts, the first run): what it spent beyond tracing (make_fx
     and the export), split into the request and loading (measured inside
     that call) and the rest (the first run), and beside it eager's first
     forward in a process of its own;
  3. step: a training step (zero_grad, forward, loss, backward, Adam step)
     of aot_module(model) with the loss outside, against eager's, median
     over --steps steps after 3 discarded. Processes take turns, eager,
     aotcache, eager again, for --rounds rounds; the ratio is the median of
     the rounds' ratios, and eager against its second run is the noise
     floor beside it.

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=build/python /usr/bin/python3 bench/models.py
    ... bench/models.py --models cnn,gpt --steps 20 --rounds 3
    ... bench/models.py --dropout 0.1   (the models' dropout layers on; the
        compiled side draws its masks with Philox, so only times compare)

It starts its own aotcached (AOTCACHED, else build/server/aotcached) with
--backend=native on a unix socket in a temp dir.
"""

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))

import torch  # noqa: E402

import zoo  # noqa: E402


def _workload(name):
    torch.manual_seed(0)
    w = zoo.ZOO[name](float(os.environ.get("BENCH_DROPOUT", "0")))
    return w._replace(module=w.module.train())


def step_ms(name, side, steps, server):
    from aotcache.torch import aot_module
    w = _workload(name)
    model = aot_module(w.module, server=server) if side == "aotcache" else w.module
    opt = torch.optim.Adam(w.module.parameters(), lr=1e-3)
    times = []
    for i in range(steps + 3):
        start = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        w.loss(model(*w.inputs), w.target).backward()
        opt.step()
        if i >= 3:
            times.append(time.perf_counter() - start)
    return {"ms": statistics.median(times) * 1e3}


def first_call(name, server):
    """The first call's time and status, and what it spent tracing (make_fx
    and the export) and on the request and loading (cache_info's trace_ms
    and compile_ms, measured inside that call)."""
    from aotcache.torch import aot_module
    w = _workload(name)
    model = aot_module(w.module, server=server)
    gc.collect()  # As before eager's: neither pays for what came before.
    start = time.perf_counter()
    model(*w.inputs)
    total = time.perf_counter() - start
    info = model.cache_info()[0]
    return {"ms": total * 1e3, "status": info["status"], "trace_ms": info["trace_ms"],
            "compile_ms": info["compile_ms"]}


def eager_first_forward(name):
    """Eager's first forward in a new process."""
    w = _workload(name)
    # A full collection falls inside a first call or outside it by what
    # the process allocated before it: none is pending on either side.
    gc.collect()
    start = time.perf_counter()
    w.module(*w.inputs)
    return {"ms": (time.perf_counter() - start) * 1e3}


def run_worker(args):
    kind, name, side = args
    if kind == "first":
        return first_call(name, os.environ["BENCH_SERVER"])
    if kind == "eager_first":
        return eager_first_forward(name)
    return step_ms(name, side, int(os.environ["BENCH_STEPS"]), os.environ["BENCH_SERVER"])


def worker(kind, name, side, steps, server):
    env = dict(os.environ, BENCH_SERVER=server, BENCH_STEPS=str(steps))
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", kind, name,
                          side], capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise RuntimeError("%s %s %s: %s" % (kind, name, side, out.stderr[-2000:]))
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", default="mlp,cnn,resnet18,gpt,encoder,lstm")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dropout", type=float, default=0.0,
                        help="the probability of the models' dropout layers")
    parser.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(run_worker(args.worker)))
        return
    os.environ["BENCH_DROPOUT"] = str(args.dropout)
    print("OPENBLAS_NUM_THREADS=%s; torch threads %d; %d steps per process, %d rounds; "
          "dropout %g" % (os.environ.get("OPENBLAS_NUM_THREADS", "unset"),
                          torch.get_num_threads(), args.steps, args.rounds, args.dropout))
    binary = os.environ.get("AOTCACHED", os.path.join(ROOT, "build/server/aotcached"))
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["XDG_CACHE_HOME"] = tmp
        socket = os.path.join(tmp, "bench.sock")
        daemon = subprocess.Popen([binary, "--listen=unix:" + socket, "--data_dir=" + tmp,
                                   "--backend=native"], stderr=subprocess.DEVNULL)
        try:
            while not os.path.exists(socket):
                time.sleep(0.02)
            server = "unix:" + socket
            print("\n%-9s %-22s %-52s %-20s %s" % (
                "model", "cold first call (ms)",
                "warm first call ms: beyond tracing [hit+load, run]",
                "eager first fwd ms", "train step ms: eager, aotcache, ratio (floor)"))
            for name in args.models.split(","):
                cold = worker("first", name, "", 0, server)
                warm = worker("first", name, "", 0, server)
                eager_first = worker("eager_first", name, "", 0, server)
                beyond = warm["ms"] - warm["trace_ms"]
                eager, mine, again = [], [], []
                for _ in range(args.rounds):
                    for side, times in (("eager", eager), ("aotcache", mine), ("eager", again)):
                        times.append(worker("step", name, side, args.steps, server)["ms"])
                ratio = statistics.median(m / e for m, e in zip(mine, eager))
                floor = statistics.median(a / e for a, e in zip(again, eager))
                print("%-9s %9.0f (%s)%8s %6.0f (%s, trace %.0f): %5.1f [%.1f, %.1f]%6s %8.1f"
                      "%11s %8.2f %8.2f  %.2fx (%.2f)"
                      % (name, cold["ms"], cold["status"], "", warm["ms"], warm["status"],
                         warm["trace_ms"], beyond, warm["compile_ms"],
                         beyond - warm["compile_ms"], "", eager_first["ms"], "",
                         statistics.median(eager), statistics.median(mine), ratio, floor))
        finally:
            daemon.terminate()
            daemon.wait()


if __name__ == "__main__":
    main()
