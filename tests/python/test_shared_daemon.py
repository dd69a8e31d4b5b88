"""A shared daemon as a build farm runs it: TLS on TCP, tokens with scopes.
The zoo's MLP trains through it as in eager (aot_module, 5 Adam steps, in a
process of its own): cold with a token that may compile (a miss), then warm
with a read-only token (a hit); a read-only token's miss compiles in
process and trains as in eager all the same. The certificates come from the
openssl CLI; the daemon is the real aotcached."""

import hashlib
import json
import os
import re
import secrets
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from test_zoo import _check_against_eager  # noqa: E402


def _openssl(cwd, *args):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def _certificates(d):
    key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
    _openssl(d, "req", "-x509", *key, "-keyout", "ca.key", "-out", "ca.pem",
             "-days", "2", "-subj", "/CN=test-ca")
    _openssl(d, "req", *key, "-keyout", "server.key", "-out", "server.csr",
             "-subj", "/CN=localhost")
    (d / "server.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    _openssl(d, "x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
             "-CAcreateserial", "-out", "server.pem", "-days", "2", "-extfile", "server.ext")


class TlsDaemon:
    """aotcached on 127.0.0.1 (a free port) with TLS and a tokens file."""

    def __init__(self, d):
        _certificates(d)
        self.ca = str(d / "ca.pem")
        self.builder, self.reader = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        tokens = d / "tokens"
        tokens.write_text("builders read,compile %s\nreaders read %s\n" % (
            hashlib.sha256(self.builder.encode()).hexdigest(),
            hashlib.sha256(self.reader.encode()).hexdigest()))
        tokens.chmod(0o600)
        self.proc = subprocess.Popen(
            [os.environ["AOTCACHED"], "--listen=127.0.0.1:0", "--data_dir=%s" % (d / "data"),
             "--tokens_file=%s" % tokens, "--tls_cert=%s" % (d / "server.pem"),
             "--tls_key=%s" % (d / "server.key")],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        line = self.proc.stdout.readline()
        port = re.search(r"\(port (\d+)\)", line)
        if port is None:
            self.proc.kill()
            raise RuntimeError("aotcached did not start: %r" % line)
        self.server = "tls://127.0.0.1:%s" % port.group(1)

    def train(self, token, form="module"):
        env = dict(os.environ, AOTCACHE_TOKEN=token, AOTCACHE_CA=self.ca)
        p = subprocess.run([sys.executable, os.path.join(HERE, "zoo.py"), "mlp", form,
                            self.server], capture_output=True, text=True, timeout=600, env=env)
        assert p.returncode == 0, p.stderr[-4000:]
        return json.loads(p.stdout.strip().splitlines()[-1])

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)


@pytest.fixture
def tls_daemon(tmp_path):
    d = TlsDaemon(tmp_path)
    yield d
    d.stop()


def test_the_mlp_trains_through_a_tls_daemon_with_tokens(tls_daemon):
    cold = tls_daemon.train(tls_daemon.builder)
    _check_against_eager(cold)
    assert [c["status"] for c in cold["cache_info"]] == ["miss"], cold["cache_info"]
    warm = tls_daemon.train(tls_daemon.reader)
    _check_against_eager(warm)
    assert [c["status"] for c in warm["cache_info"]] == ["hit"], warm["cache_info"]
    assert warm["cache_info"][0]["key"] == cold["cache_info"][0]["key"]


def test_a_read_only_tokens_miss_trains_compiled_in_process(tls_daemon):
    result = tls_daemon.train(tls_daemon.reader, form="function")
    _check_against_eager(result)
    info = result["cache_info"]
    assert len(info) == 1 and info[0]["source"] == "in_process", info
    assert "needs the compile scope" in info[0]["fallback_reason"], info
