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


class Daemon:
    """An aotcached on a unix socket in data_dir; `target` is its address."""

    def __init__(self, data_dir, *flags: str):
        socket = data_dir / "test.sock"
        self.proc = subprocess.Popen([os.environ["AOTCACHED"], "--listen=unix:%s" % socket,
                                      "--data_dir=%s" % data_dir, *flags],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.time() + 30
        while not socket.exists():
            if self.proc.poll() is not None or time.time() > deadline:
                raise RuntimeError("aotcached did not start: %s" % self.proc.stderr.read())
            time.sleep(0.02)
        self.target = "unix:%s" % socket

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=30)


@pytest.fixture(scope="session")
def daemon(tmp_path_factory):
    d = Daemon(tmp_path_factory.mktemp("daemon"))
    yield d.target
    d.stop()


@pytest.fixture(scope="session")
def reference_daemon(tmp_path_factory):
    """A daemon compiling with the reference backend (the runtime's kernels)."""
    d = Daemon(tmp_path_factory.mktemp("reference"), "--backend=reference")
    yield d.target
    d.stop()


@pytest.fixture
def own_daemon(tmp_path):
    """A daemon of the test's own, which the test may stop (own_daemon.stop())."""
    d = Daemon(tmp_path)
    yield d
    d.stop()
