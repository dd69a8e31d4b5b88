#!/usr/bin/python3
"""What aotcache.torch costs a Python caller, beside torch eager in the same
run (these machines are shared and noisy: compare the ratios).

  1. Per call, same process, after the first: a compiled function on a
     known signature (no round trip) against the eager call of the same
     function, forward only and forward+backward, for a small and a
     medium MLP-like function.
  2. First call in a new process on a warm cache (the daemon holds the
     entry): tracing, the round trip and loading, against the first eager
     call in a new process.

    PYTHONPATH=build/python /usr/bin/python3 bench/python_overhead.py [--calls=2000]

It starts its own aotcached (AOTCACHED, else build/server/aotcached) on a
unix socket in a temp dir.
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

FUNCTION = """
import torch
def f(x, w1, w2):
    return ((x @ w1).relu() @ w2).tanh().sum()
def inputs(n, width):
    g = torch.Generator().manual_seed(0)
    return (torch.randn(n, width, generator=g),
            torch.randn(width, width, generator=g, requires_grad=True),
            torch.randn(width, 1, generator=g, requires_grad=True))
"""

FIRST_CALL = FUNCTION + """
import sys, time
start = time.perf_counter()
if sys.argv[1] == "aotcache":
    from aotcache.torch import aot_function
    g = aot_function(f, server=sys.argv[2])
else:
    g = f
x, w1, w2 = inputs(32, 64)
g(x, w1, w2).backward()
print(time.perf_counter() - start)
if sys.argv[1] == "aotcache":
    print(g.cache_info()[0]["status"])
"""


def per_call(fn, args, calls, backward):
    times = []
    for i in range(calls + 50):
        start = time.perf_counter()
        out = fn(*args)
        if backward:
            out.backward()
        if i >= 50:
            times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


def first_call(kind, server, env):
    out = subprocess.run([sys.executable, "-c", FIRST_CALL, kind, server], env=env,
                         capture_output=True, text=True, check=True).stdout.split()
    return float(out[0]) * 1e3, (out[1] if len(out) > 1 else "")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    namespace = {}
    exec(FUNCTION, namespace)  # noqa: S102 - our own source, shared with FIRST_CALL
    f, inputs = namespace["f"], namespace["inputs"]
    from aotcache.torch import aot_function

    binary = os.environ.get("AOTCACHED", os.path.join(ROOT, "build/server/aotcached"))
    with tempfile.TemporaryDirectory() as tmp:
        socket = os.path.join(tmp, "bench.sock")
        daemon = subprocess.Popen([binary, "--listen=unix:" + socket, "--data_dir=" + tmp],
                                  stderr=subprocess.DEVNULL)
        try:
            while not os.path.exists(socket):
                time.sleep(0.02)
            server = "unix:" + socket
            print("torch %s, %d intra-op thread(s); median of %d calls"
                  % (torch.__version__, torch.get_num_threads(), args.calls))
            print("\n1. per call, same process, known signature (µs)")
            print("  %-26s %10s %10s %10s %8s" % ("", "eager", "aotcache", "overhead", "ratio"))
            for n, width in ((8, 16), (64, 256)):
                x, w1, w2 = inputs(n, width)
                g = aot_function(f, server=server)
                g(x, w1, w2).backward()  # Compile (a miss), outside the timing.
                for backward in (False, True):
                    e = per_call(f, (x, w1, w2), args.calls, backward)
                    c = per_call(g, (x, w1, w2), args.calls, backward)
                    label = "%dx%d %s" % (n, width, "fwd+bwd" if backward else "fwd")
                    print("  %-26s %10.1f %10.1f %10.1f %7.2fx" % (label, e, c, c - e, c / e))
            env = dict(os.environ)
            print("\n2. first call in a new process, warm cache (ms, fwd+bwd, 32x64)")
            eager_ms, _ = first_call("eager", server, env)
            aot_function(f, server=server)(*inputs(32, 64)).backward()  # Warm it.
            aot_ms, status = first_call("aotcache", server, env)
            print("  eager %.1f ms; aotcache %.1f ms (%s); difference %.1f ms"
                  % (eager_ms, aot_ms, status, aot_ms - eager_ms))
        finally:
            daemon.terminate()
            daemon.wait(timeout=30)


if __name__ == "__main__":
    main()
