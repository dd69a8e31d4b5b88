"""A real aotcached for the Python tests: one per session, on a unix socket
in a temp data dir (AOTCACHED names the binary; XDG_CACHE_HOME is pointed at
a temp dir so that nothing touches the real cache)."""

import os
import subprocess
import time

import pytest


@pytest.fixture(scope="session", autouse=True)
def private_cache(tmp_path_factory):
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("xdg"))
    os.environ.pop("AOTCACHE_SERVER", None)


@pytest.fixture(scope="session")
def daemon(tmp_path_factory):
    data = tmp_path_factory.mktemp("daemon")
    socket = data / "test.sock"
    proc = subprocess.Popen([os.environ["AOTCACHED"], "--listen=unix:%s" % socket,
                             "--data_dir=%s" % data], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    deadline = time.time() + 30
    while not socket.exists():
        if proc.poll() is not None or time.time() > deadline:
            raise RuntimeError("aotcached did not start: %s" % proc.stderr.read())
        time.sleep(0.02)
    yield "unix:%s" % socket
    proc.terminate()
    proc.wait(timeout=30)
