"""Checks an editable install (`pip install -e .`), as scripts/test-torch2
makes one before the suite's regular install: the package's Python runs
from client/python/aotcache, its extension and aotcached are built beside
it in the environment, Dynamo finds the backend through the entry point,
and a model trains through it as eager does.

    venv/bin/python tests/python/editable_install_check.py
"""

import os
import subprocess
import sys
import tempfile
import time

import torch

import aotcache
import aotcache._core
from aotcache import dynamo
from aotcache.torch import _packaged_daemon

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main() -> None:
    source = os.path.join(ROOT, "client", "python", "aotcache")
    assert os.path.dirname(os.path.abspath(aotcache.__file__)) == source, aotcache.__file__
    assert os.path.exists(aotcache._core.__file__), aotcache._core.__file__
    daemon_binary = _packaged_daemon()
    assert daemon_binary.startswith(sys.prefix), (daemon_binary, sys.prefix)
    assert "aotcache" in torch._dynamo.list_backends(), torch._dynamo.list_backends()

    with tempfile.TemporaryDirectory() as tmp:
        socket = os.path.join(tmp, "d.sock")
        daemon = subprocess.Popen([daemon_binary, "--listen=unix:" + socket,
                                   "--data_dir=" + os.path.join(tmp, "data")],
                                  stderr=subprocess.DEVNULL)
        try:
            for _ in range(100):
                if os.path.exists(socket):
                    break
                time.sleep(0.05)
            torch.manual_seed(0)
            model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(),
                                        torch.nn.Linear(16, 2))
            x = torch.randn(4, 8)
            want = torch.autograd.grad(model(x).square().sum(), list(model.parameters()))
            compiled = torch.compile(model, backend="aotcache",
                                     options={"server": "unix:" + socket})
            got = torch.autograd.grad(compiled(x).square().sum(), list(model.parameters()))
            for g, w in zip(got, want):
                torch.testing.assert_close(g, w)
            rows = dynamo.cache_info()
            assert [r["source"] for r in rows] == ["server"], rows
        finally:
            daemon.terminate()
            daemon.wait()
    print("editable install: ok (%s)" % source)


if __name__ == "__main__":
    main()
