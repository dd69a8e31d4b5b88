"""/metrics as Prometheus reads it. A real aotcached with --http_listen and a
tokens file takes a mixed load through the aotcache CLI -- a miss, hits, a
backward, a read-only caller's miss, a bad graph -- then /metrics is parsed
with prometheus_client's text parser (Debian's python3-prometheus-client)
and its counters are checked against `aotcache stats --json`, read at the
same quiet moment. /healthz and /readyz answer; /metrics needs the admin
scope.

usage: metrics_scrape_test.py AOTCACHED AOTCACHE_CLI SOURCE_DIR"""

import hashlib
import json
import os
import re
import secrets
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

AOTCACHED, CLI, SOURCE = sys.argv[1:4]
TOKENS = {name: secrets.token_urlsafe(32) for name in ("builders", "readers", "ops")}
SCOPES = {"builders": "read,compile", "readers": "read", "ops": "admin"}


def get(url, token=None):
    request = urllib.request.Request(url)
    if token is not None:
        request.add_header("Authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def cli(server, token, *args):
    env = dict(os.environ, AOTCACHE_TOKEN=TOKENS[token])
    return subprocess.run([CLI, *args, "--server=" + server], env=env,
                          capture_output=True, text=True, timeout=120)


def main():
    with tempfile.TemporaryDirectory() as d:
        tokens = os.path.join(d, "tokens")
        with open(tokens, "w") as f:
            for name, token in TOKENS.items():
                f.write("%s %s %s\n" % (name, SCOPES[name],
                                        hashlib.sha256(token.encode()).hexdigest()))
        os.chmod(tokens, 0o600)
        daemon = subprocess.Popen(
            [AOTCACHED, "--listen=127.0.0.1:0", "--http_listen=127.0.0.1:0",
             "--backend=reference", "--data_dir=" + os.path.join(d, "data"),
             "--tokens_file=" + tokens],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            port = re.search(r"\(port (\d+)\)", daemon.stdout.readline()).group(1)
            metrics = re.search(r"metrics on (\S+)", daemon.stdout.readline()).group(1)
            check(daemon, "127.0.0.1:" + port, metrics, d)
        finally:
            daemon.terminate()
            daemon.wait(timeout=60)
    print("ok")


def check(daemon, server, metrics, d):
    base = metrics[: -len("/metrics")]
    assert get(base + "/healthz") == (200, "ok\n")
    assert get(base + "/readyz") == (200, "ready\n")

    mlp = os.path.join(SOURCE, "examples", "mlp.json")
    assert cli(server, "builders", "compile", mlp).returncode == 0       # miss
    assert cli(server, "builders", "compile", mlp).returncode == 0       # hit
    assert cli(server, "readers", "compile", mlp).returncode == 0        # hit
    assert cli(server, "builders", "compile", "--backward", mlp).returncode == 0
    other = os.path.join(SOURCE, "tests", "fixtures", "graphs", "assorted_ops__rg.json")
    refused = cli(server, "readers", "compile", other)  # may not compile
    assert refused.returncode == 1, refused.stderr
    with open(os.path.join(SOURCE, "examples", "mlp.json")) as f:
        bad = f.read().replace("aten.relu.default", "aten.no_such_op.default")
    bad_path = os.path.join(d, "bad.json")
    with open(bad_path, "w") as f:
        f.write(bad)
    assert cli(server, "builders", "compile", bad_path).returncode == 1

    status, text = get(metrics)
    assert status == 401 and "needs the admin scope" in text, (status, text)
    status, text = get(metrics, TOKENS["readers"])
    assert status == 403 and "'readers' does not hold" in text, (status, text)
    stats_run = cli(server, "ops", "stats", "--json")
    assert stats_run.returncode == 0, stats_run.stderr
    stats = {k: float(v) for k, v in json.loads(stats_run.stdout).items()
             if isinstance(v, (int, str)) and str(v).lstrip("-").replace(".", "").isdigit()}
    status, text = get(metrics, TOKENS["ops"])
    assert status == 200, (status, text)

    samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value

    def value(name, **labels):
        return samples.get((name, tuple(sorted(labels.items()))), 0.0)

    def total(name, **labels):
        return sum(v for (n, l), v in samples.items()
                   if n == name and set(labels.items()) <= set(l))

    for metric, field in [("aotcache_hits_total", "hits"),
                          ("aotcache_misses_total", "misses"),
                          ("aotcache_misses_not_compiled_total", "misses_not_compiled"),
                          ("aotcache_backward_compiles_total", "backward_compiles"),
                          ("aotcache_saves_total", "saves"),
                          ("aotcache_store_entries", "store_entries"),
                          ("aotcache_store_bytes", "store_bytes"),
                          ("aotcache_artifact_bytes_written_total", "artifact_bytes_written")]:
        assert value(metric) == stats.get(field, 0.0), (metric, value(metric), stats)
    assert stats["hits"] == 3 and stats["misses"] == 1, stats
    # Compile's answers by mode and status agree with the counters too.
    assert total("aotcache_compile_answers_total", status="hit") == stats["hits"]
    assert total("aotcache_compile_answers_total", status="miss") == stats["misses"]
    assert value("aotcache_compile_answers_total", mode="training", status="miss",
                 reason="", caller="builders") == 1
    assert value("aotcache_compile_answers_total", mode="training", status="hit",
                 reason="", caller="readers") == 1
    # Every call, by caller and code; the latency histogram counted each.
    assert value("aotcache_rpc_calls_total", rpc="Compile", code="NOT_FOUND",
                 caller="readers") == 1
    assert value("aotcache_rpc_calls_total", rpc="Compile", code="INVALID_ARGUMENT",
                 caller="builders") == 1
    assert value("aotcache_rpc_calls_total", rpc="GetBackward", code="OK",
                 caller="builders") == 1
    compiles = total("aotcache_rpc_calls_total", rpc="Compile")
    assert compiles == 6, compiles
    assert value("aotcache_rpc_seconds_count", rpc="Compile") == compiles
    assert value("aotcache_forward_compile_seconds_count") == 1


if __name__ == "__main__":
    main()
