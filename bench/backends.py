#!/usr/bin/python3
"""The native backend against torch eager and against its own cold compile,
in one run (compare the ratios: these machines are shared and noisy).

  1. Cold native compile (a miss: analysis, codegen, the C++ compiler,
     the store) against a warm hit through the daemon (a new process would
     see the same: the entry is stored), for the MLP and the block.
  2. Forward+backward step time of the compiled function against torch
     eager, median over --steps steps (default 50),
     the two taking turns in blocks of 10:
       mlp    784-512-512-10 at batch 64 (ReLU, MSE loss)
       block  layer norm + softmax attention-like block, sequence 128,
              width 256
       chain  10 elementwise ops (sin, cos, tanh, sigmoid, ...) on 1M floats
     Each row also gives eager against itself, measured the same way: the
     noise floor of the ratio at that moment.

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=build/python /usr/bin/python3 bench/backends.py

It starts its own aotcached (AOTCACHED, else build/server/aotcached) with
--backend=native on a unix socket in a temp dir. Both sides use the system
BLAS (Debian's torch takes libblas through the alternatives system; with
libopenblas-dev installed that is OpenBLAS) with the thread counts printed.
"""

import argparse
import json
import os
import statistics
import subprocess
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


def step_ms(fns, args, steps, block=10):
    """Median forward+backward step time of each of fns, in ms. The
    functions take turns in blocks of `block` steps, the first of each
    block discarded: a change in the machine's load falls on all of them
    alike, and each runs in its steady state, as in training (one step
    after the other's evicts caches and moves the allocator's memory)."""
    times = [[] for _ in fns]
    while len(times[0]) < steps:
        for fn, samples in zip(fns, times):
            for i in range(block + 1):
                for a in args:
                    a.grad = None
                start = time.perf_counter()
                fn(*args).backward()
                if i > 0:
                    samples.append(time.perf_counter() - start)
    return [statistics.median(t) * 1e3 for t in times]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=50)
    args = parser.parse_args()
    from aotcache import fx_export
    from aotcache._native import Client, parse_graph
    from aotcache.torch import aot_function

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
            print("\n1. cold native compile vs warm hit (ms)")
            for name, case in (("mlp", mlp_case), ("block", block_case)):
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
                for _ in range(20):
                    start = time.perf_counter()
                    warm = client.compile(graph)
                    hits.append((time.perf_counter() - start) * 1e3)
                hit_ms = statistics.median(hits)
                print("  %-6s cold %8.1f (%s)   hit %6.3f (%s)   %6.0fx   (JSON parse %.3f)"
                      % (name, cold_ms, cold.status, hit_ms, warm.status, cold_ms / hit_ms,
                         parse_ms))
            print("\n2. forward+backward step vs torch eager (ms, median of %d)" % args.steps)
            for name, case in (("mlp", mlp_case), ("block", block_case), ("chain", chain_case)):
                fn, inputs = case()
                compiled = aot_function(fn, server=server)
                compiled(*inputs).backward()  # Compile (forward and backward).
                eager, native = step_ms((fn, compiled), inputs, args.steps)
                # Eager against itself, in the same turns: the noise floor
                # of the ratio on this machine at this moment.
                first, second = step_ms((fn, lambda *a: fn(*a)), inputs, args.steps)
                print("  %-6s eager %8.2f   aotcache native %8.2f   %.2fx"
                      "   (eager vs itself %.2fx)"
                      % (name, eager, native, native / eager, second / first))
        finally:
            daemon.terminate()
            daemon.wait(timeout=30)


if __name__ == "__main__":
    main()
