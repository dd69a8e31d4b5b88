#!/usr/bin/env python3
"""The peer, side by side, on torch 2.x: each zoo model (tests/python/zoo.py)
and each downloaded model (tests/python/downloaded.py: HuggingFace
transformers, timm, torchvision; `--models downloaded` for all 15) trained eagerly, through torch.compile with Inductor (torch's own compiler,
with its FX-graph and AOTAutograd caches) and through
torch.compile(backend="aotcache"), in one run (compare the ratios: these
machines are shared and noisy).

Per model, each figure measured in a process of its own:
  1. cold first step: the first training step (zero_grad, forward, loss,
     backward, Adam step) in a new process, Inductor with an empty
     TORCHINDUCTOR_CACHE_DIR, aotcache with a daemon that has never seen the
     model;
  2. warm first step: the same in later new processes, Inductor with the
     caches the cold run left, aotcache with that daemon (and the client's
     local artifacts); beside them Dynamo's own cost, the warm first step of
     torch.compile(backend="eager"), and eager's first step;
  3. step: the median step over --steps steps after 5 discarded. Processes
     take turns, eager, Dynamo alone (torch.compile(backend="eager"): what
     any backend's step pays for Dynamo's frames and guards, the floor of
     both compilers), Inductor, aotcache, eager again, for --rounds rounds;
     each ratio is the median of the rounds' ratios against eager, and eager
     against its second run is the noise floor.

The loss is computed outside the compiled model, as users write it. The
LSTM compiles only with torch._dynamo.config.allow_rnn, set here for
aotcache and Dynamo's eager backend; Inductor fails with it on torch 2.13
(mkldnn_rnn_layer: "expected Tensor() for op"), so its LSTM runs eagerly as
by default. The warm first steps are the median of --warm processes each.

    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 build/venv-torch2/bin/python bench/peer.py
    ... bench/peer.py --models mlp,cnn --steps 20 --rounds 3

It starts its own aotcached (AOTCACHED, else the one beside the venv's
python, else build/server/aotcached) on a unix socket in a temp dir.
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

SIDES = ("eager", "dynamo", "inductor", "aotcache")


def _model(name, backend):
    import downloaded
    import torch
    import zoo

    torch.manual_seed(0)
    # Inductor fails on the LSTM's mkldnn_rnn_layer with allow_rnn
    # ("expected Tensor() for op"): it runs nn.LSTM eagerly, as by default.
    torch._dynamo.config.allow_rnn = backend != "inductor"
    w = zoo.ZOO[name](0.0) if name in zoo.ZOO else downloaded.MODELS[name]()
    module = w.module.train()
    if backend == "eager_python":
        return w, module
    options = {"server": os.environ["BENCH_SERVER"]} if backend == "aotcache" else None
    return w, torch.compile(module, backend=backend, options=options)


def _step(w, model, opt):
    opt.zero_grad(set_to_none=True)
    w.loss(model(*w.inputs), w.target).backward()
    opt.step()


def first_step(name, backend):
    """The first step's time in this process (Dynamo, the compile or the
    cache lookups, the first run)."""
    import torch

    w, model = _model(name, backend)
    opt = torch.optim.Adam(w.module.parameters(), lr=1e-3)
    # A full collection (100-140 ms with torch 2.13's modules loaded) falls
    # inside one step or outside it by what the process allocated before
    # (a module imported, say): collected before every side's step, each
    # step pays only the collections its own work triggers.
    gc.collect()
    start = time.perf_counter()
    _step(w, model, opt)
    return {"ms": (time.perf_counter() - start) * 1e3}


def step_ms(name, backend, steps):
    import torch

    w, model = _model(name, backend)
    opt = torch.optim.Adam(w.module.parameters(), lr=1e-3)
    times = []
    for i in range(steps + 5):
        start = time.perf_counter()
        _step(w, model, opt)
        if i >= 5:
            times.append(time.perf_counter() - start)
    result = {"ms": statistics.median(times) * 1e3}
    if backend == "aotcache":
        from aotcache import dynamo

        rows = dynamo.cache_info()
        whole = [r for r in rows if r.get("eager") and "op" not in r]
        if whole:
            raise RuntimeError("aotcache ran graphs eagerly: %s" % whole)
        eager = sum(r["nodes"] for r in rows if "op" in r)
        result["compiled"] = 1 - eager / max(1, sum(r["nodes"] for r in rows))
        result["eager_ops"] = sorted({r["op"] for r in rows if "op" in r})
    return result


BACKENDS = {"eager": "eager_python", "inductor": "inductor", "aotcache": "aotcache",
            "dynamo": "eager"}


def worker(kind, name, side, env_extra, steps=0):
    env = dict(os.environ, **env_extra)
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", kind, name,
                          side, str(steps)], capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise RuntimeError("%s %s %s: %s" % (kind, name, side, out.stderr[-3000:]))
    return json.loads(out.stdout.strip().splitlines()[-1])


def _daemon_binary():
    beside = os.path.join(os.path.dirname(sys.executable), "aotcached")
    for candidate in (os.environ.get("AOTCACHED"), beside,
                      os.path.join(ROOT, "build/server/aotcached")):
        if candidate and os.path.exists(candidate):
            return candidate
    raise SystemExit("no aotcached: set AOTCACHED")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", default="mlp,cnn,resnet18,gpt,encoder,lstm",
                        help="zoo or downloaded models, comma-separated; 'downloaded': "
                             "the 15 of tests/python/downloaded.py")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warm", type=int, default=3)
    parser.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        kind, name, side, steps = args.worker
        result = (first_step(name, BACKENDS[side]) if kind == "first"
                  else step_ms(name, BACKENDS[side], int(steps)))
        print(json.dumps(result))
        return
    import torch

    print("torch %s; OPENBLAS_NUM_THREADS=%s; torch threads %d; %d steps per process, "
          "%d rounds" % (torch.__version__, os.environ.get("OPENBLAS_NUM_THREADS", "unset"),
                         torch.get_num_threads(), args.steps, args.rounds))
    names = args.models.split(",")
    if names == ["downloaded"]:
        import downloaded
        names = list(downloaded.MODELS)
    width = max(9, *(len(n) for n in names))
    with tempfile.TemporaryDirectory() as tmp:
        socket = os.path.join(tmp, "bench.sock")
        daemon = subprocess.Popen([_daemon_binary(), "--listen=unix:" + socket,
                                   "--data_dir=" + os.path.join(tmp, "daemon"),
                                   "--backend=native"], stderr=subprocess.DEVNULL)
        try:
            while not os.path.exists(socket):
                if daemon.poll() is not None:
                    raise SystemExit("aotcached did not start")
                time.sleep(0.02)
            env = {"BENCH_SERVER": "unix:" + socket, "XDG_CACHE_HOME": os.path.join(tmp, "xdg"),
                   "AOTCACHE_SERVER": "unix:" + socket}
            print("\n%-*s %-25s %-42s %s" % (
                width, "model", "cold first step s",
                "warm first step ms",
                "train step ms: eager (floor), dynamo, inductor, aotcache; "
                "aotcache's ATen nodes compiled"))
            print("%-*s %-25s %-42s" % (width, "", "inductor aotcache ratio",
                                        "eager dynamo inductor aotcache"))
            for name in names:
                inductor_env = dict(env, TORCHINDUCTOR_CACHE_DIR=os.path.join(tmp, "ind-" + name))
                cold_ind = worker("first", name, "inductor", inductor_env)["ms"]
                cold_aot = worker("first", name, "aotcache", env)["ms"]
                warm = {side: [] for side in ("eager", "dynamo", "inductor", "aotcache")}
                for _ in range(args.warm):
                    for side in warm:
                        side_env = inductor_env if side == "inductor" else env
                        warm[side].append(worker("first", name, side, side_env)["ms"])
                eager_first, warm_dynamo, warm_ind, warm_aot = (
                    statistics.median(warm[side]) for side in warm)
                times = {side: [] for side in SIDES + ("again",)}
                for _ in range(args.rounds):
                    for side in SIDES + ("again",):
                        backend = "eager" if side == "again" else side
                        side_env = inductor_env if side == "inductor" else env
                        result = worker("step", name, backend, side_env, args.steps)
                        times[side].append(result["ms"])
                        if side == "aotcache":
                            split = result

                def ratio(side):
                    return statistics.median(
                        m / e for m, e in zip(times[side], times["eager"]))

                print("%-*s %8.2f %8.2f %6.1fx   %7.0f %6.0f %8.0f %8.0f   "
                      "%6.2f (%.2fx)  %6.2f %.2fx  %6.2f %.2fx  %6.2f %.2fx  %5.1f%%"
                      % (width, name, cold_ind / 1e3, cold_aot / 1e3, cold_ind / cold_aot,
                         eager_first, warm_dynamo, warm_ind, warm_aot,
                         statistics.median(times["eager"]), ratio("again"),
                         statistics.median(times["dynamo"]), ratio("dynamo"),
                         statistics.median(times["inductor"]), ratio("inductor"),
                         statistics.median(times["aotcache"]), ratio("aotcache"),
                         100 * split["compiled"]), flush=True)
                if split["eager_ops"]:
                    print("%-*s eager islands: %s" % (width, "", ", ".join(split["eager_ops"])),
                          flush=True)
        finally:
            daemon.terminate()
            daemon.wait()


if __name__ == "__main__":
    main()
