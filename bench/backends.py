#!/usr/bin/python3
"""The native backend against torch eager and against its own cold compile,
in one run (compare the ratios: these machines are shared and noisy).

  1. Cold native compile (a miss: analysis, codegen, the C++ compiler,
     the store) against a warm hit through the daemon (a new process would
     see the same: the entry is stored), for the MLP and the block.
  2. Forward+backward step time of the compiled function against torch
     eager, each in a process of its own (a user runs one or the other),
     median over --steps steps (default 100) after 10 discarded:
       mlp    784-512-512-10 at batch 64 (ReLU, MSE loss)
       block  layer norm + softmax attention-like block, sequence 128,
              width 256
       chain  10 elementwise ops (sin, cos, tanh, sigmoid, ...) on 1M floats
     and the module forms users write, each module's parameters passed
     by aot_module (loss outside, as a training loop calls it) or captured
     by aot_function (loss inside):
       linear       nn.Sequential of nn.Linear (with bias) 784-512-512-10
                    and ReLU at batch 64, aot_module, cross-entropy outside
       linear_in    the same through aot_function, MSE loss inside
                    (cross-entropy inside needs nll_loss: issue 14)
       ln_block     nn.LayerNorm (affine) + attention with q, k, v
                    nn.Linear (bias) at 128x256, aot_module, loss .sum()
                    outside
       ln_block_in  the same through aot_function, loss .mean() inside
     The processes take turns, eager, native, eager again, for --rounds
     rounds (default 5); the ratio is the median of the rounds' ratios, so
     that a change in the machine's load falls on both sides alike. Eager
     against its second run gives the noise floor of the ratio at that
     moment. (Steps of both sides in one process disturb each other through
     the shared heap: in one such run eager's MLP step went from 2.9 ms to
     3.5-5.4 ms once native steps ran beside it, and in another native's
     went up instead.)

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=build/python /usr/bin/python3 bench/backends.py

It starts its own aotcached (AOTCACHED, else build/server/aotcached) with
--backend=native on a unix socket in a temp dir. Both sides use the system
BLAS (Debian's torch takes libblas through the alternatives system; with
libopenblas-dev installed that is OpenBLAS) with the thread counts printed.
"""

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn.functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def mlp_case():
    g = torch.Generator().manual_seed(0)
    w1 = (torch.randn(784, 512, generator=g) * 0.03).requires_grad_()
    w2 = (torch.randn(512, 512, generator=g) * 0.03).requires_grad_()
    w3 = (torch.randn(512, 10, generator=g) * 0.03).requires_grad_()
    x, y = torch.randn(64, 784, generator=g), torch.randn(64, 10, generator=g)

    def f(x, y, w1, w2, w3):
        h = (x @ w1).relu()
        h = (h @ w2).relu()
        return ((h @ w3 - y) ** 2).mean()
    return f, (x, y, w1, w2, w3)


def block_case():
    g = torch.Generator().manual_seed(1)
    n, d = 128, 256
    wq = (torch.randn(d, d, generator=g) * 0.05).requires_grad_()
    wk = (torch.randn(d, d, generator=g) * 0.05).requires_grad_()
    wv = (torch.randn(d, d, generator=g) * 0.05).requires_grad_()
    x = torch.randn(n, d, generator=g)

    def f(x, wq, wk, wv):
        h = F.layer_norm(x, (x.shape[-1],))
        q, k, v = h @ wq, h @ wk, h @ wv
        attn = torch.softmax((q @ k.t()) * (1.0 / 16.0), dim=-1)
        return (attn @ v).tanh().sum()
    return f, (x, wq, wk, wv)


def chain_case():
    g = torch.Generator().manual_seed(2)
    x = torch.randn(1 << 20, generator=g).requires_grad_()

    def f(x):
        y = torch.sin(x) * 1.5
        y = torch.cos(y) + x
        y = torch.tanh(y) * 0.5
        y = torch.sigmoid(y) - 0.25
        y = torch.exp(-y * y)
        return y.sum()
    return f, (x,)


class AttentionBlock(torch.nn.Module):
    """Layer norm and one softmax attention head, as people write it."""

    def __init__(self, d):
        super().__init__()
        self.norm = torch.nn.LayerNorm(d)
        self.q, self.k, self.v = (torch.nn.Linear(d, d) for _ in range(3))

    def forward(self, x):
        h = self.norm(x)
        q, k, v = self.q(h), self.k(h), self.v(h)
        attn = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
        return attn @ v


def linear_module(loss_inside):
    torch.manual_seed(3)
    model = torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.ReLU(),
                                torch.nn.Linear(512, 512), torch.nn.ReLU(),
                                torch.nn.Linear(512, 10))
    labels = torch.randint(0, 10, (64,))
    if loss_inside:
        target = F.one_hot(labels, 10).float()
        return model, (torch.randn(64, 784),), lambda out: F.mse_loss(out, target)
    return model, (torch.randn(64, 784),), lambda out: F.cross_entropy(out, labels)


def ln_block_module(reduce):
    torch.manual_seed(4)
    return AttentionBlock(256), (torch.randn(128, 256),), reduce


# Module cases: (module, inputs, loss) and whether the loss is compiled too.
MODULE_CASES = {
    "linear": (lambda: linear_module(False), False),
    "linear_in": (lambda: linear_module(True), True),
    "ln_block": (lambda: ln_block_module(lambda out: out.sum()), False),
    "ln_block_in": (lambda: ln_block_module(lambda out: out.mean()), True),
}
CASES = {"mlp": mlp_case, "block": block_case, "chain": chain_case}
CASES.update({name: None for name in MODULE_CASES})


def step_function(case, side, server):
    """A forward+backward step of `case` on one side and what to clear
    before each step (gradients set to None, as in eager's
    zero_grad(set_to_none=True))."""
    from aotcache.torch import aot_function, aot_module
    if case not in MODULE_CASES:
        fn, args = CASES[case]()
        if side == "native":
            fn = aot_function(fn, server=server)
        return lambda: fn(*args).backward(), args
    make, loss_inside = MODULE_CASES[case]
    module, inputs, loss = make()
    params = list(module.parameters())
    if side == "eager":
        return lambda: loss(module(*inputs)).backward(), params
    if loss_inside:
        fn = aot_function(lambda *xs: loss(module(*xs)), server=server)
        return lambda: fn(*inputs).backward(), params
    compiled = aot_module(module, server=server)
    return lambda: loss(compiled(*inputs)).backward(), params


def step_ms(case, side, steps, server):
    """Median forward+backward step time in ms of one side ("eager" or
    "native") on `case`, in this process, after 10 discarded steps (the
    first compiles or fetches)."""
    step, cleared = step_function(case, side, server)
    times = []
    for i in range(steps + 10):
        for a in cleared:
            a.grad = None
        start = time.perf_counter()
        step()
        if i >= 10:
            times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def step_ms_in_process(case, side, steps, server):
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", case, side,
                          "--steps", str(steps), "--server", server],
                         capture_output=True, text=True, check=True).stdout
    return float(out.split()[-1])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--cases", default=",".join(CASES),
                        help="comma-separated step cases (default all)")
    parser.add_argument("--skip-cold", action="store_true",
                        help="leave out part 1 (cold compile against hit)")
    parser.add_argument("--worker", nargs=2, metavar=("CASE", "SIDE"),
                        help=argparse.SUPPRESS)
    parser.add_argument("--server", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print("%.6f" % step_ms(*args.worker, args.steps, args.server))
        return
    from aotcache import fx_export
    from aotcache._binding import Client, parse_graph

    blas = subprocess.run(["update-alternatives", "--query",
                           "libblas.so.3-x86_64-linux-gnu"],
                          capture_output=True, text=True).stdout
    blas = [l.split(": ", 1)[1] for l in blas.splitlines() if l.startswith("Value:")]
    print("BLAS (both sides): %s; OPENBLAS_NUM_THREADS=%s; torch threads %d"
          % (blas[0] if blas else "unknown", os.environ.get("OPENBLAS_NUM_THREADS", "unset"),
             torch.get_num_threads()))
    binary = os.environ.get("AOTCACHED", os.path.join(ROOT, "build/server/aotcached"))
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["XDG_CACHE_HOME"] = tmp  # Loaded kernels go here.
        socket = os.path.join(tmp, "bench.sock")
        daemon = subprocess.Popen([binary, "--listen=unix:" + socket, "--data_dir=" + tmp,
                                   "--backend=native"], stderr=subprocess.DEVNULL)
        try:
            while not os.path.exists(socket):
                time.sleep(0.02)
            server = "unix:" + socket
            client = Client(server)
            cold_cases = () if args.skip_cold else (("mlp", mlp_case), ("block", block_case))
            if cold_cases:
                print("\n1. cold native compile vs warm hit (ms)")
            for name, case in cold_cases:
                fn, inputs = case()
                # Parsed once, as aot_function does per signature; the
                # parse is printed on its own.
                graph_json = json.dumps(fx_export.export_graph(fn, *inputs))
                start = time.perf_counter()
                graph = parse_graph(graph_json)
                parse_ms = (time.perf_counter() - start) * 1e3
                start = time.perf_counter()
                cold = client.compile(graph)
                cold_ms = (time.perf_counter() - start) * 1e3
                hits = []
                for _ in range(200):
                    start = time.perf_counter()
                    warm = client.compile(graph)
                    hits.append((time.perf_counter() - start) * 1e3)
                hit_ms = statistics.median(hits)
                print("  %-6s cold %8.1f (%s)   hit %6.3f (%s)   %6.0fx   (JSON parse %.3f)"
                      % (name, cold_ms, cold.status, hit_ms, warm.status, cold_ms / hit_ms,
                         parse_ms))
            print("\n2. forward+backward step vs torch eager (ms, median of %d steps per "
                  "process; %d rounds)" % (args.steps, args.rounds))
            for name in args.cases.split(","):
                eager, native, again = [], [], []
                for _ in range(args.rounds):
                    for side, times in (("eager", eager), ("native", native),
                                        ("eager", again)):
                        times.append(step_ms_in_process(name, side, args.steps, server))
                ratio = statistics.median(n / e for n, e in zip(native, eager))
                floor = statistics.median(a / e for a, e in zip(again, eager))
                print("  %-11s eager %8.2f   aotcache native %8.2f   %.2fx"
                      "   (eager vs itself %.2fx)"
                      % (name, statistics.median(eager), statistics.median(native), ratio,
                         floor))
        finally:
            daemon.terminate()
            daemon.wait(timeout=30)


if __name__ == "__main__":
    main()
