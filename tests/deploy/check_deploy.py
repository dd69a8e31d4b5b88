"""Checks what can be checked here of deploy/: the systemd unit with
systemd-analyze verify (any complaint fails; skipped where systemd-analyze is
absent), and the Kubernetes manifests' structure (no cluster here for kubectl
to validate against): a Service and a StatefulSet that agree on the ports,
HTTP probes on the daemon's /readyz and /healthz, a persistent volume on the
data dir the args name, a bounded store; the Prometheus scrape config and
the Grafana dashboard, whose every metric is one the daemon exports.

usage: check_deploy.py AOTCACHED_BINARY
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def check_systemd(binary):
    if shutil.which("systemd-analyze") is None:
        print("systemd-analyze absent: unit not verified")
        return
    with open(os.path.join(ROOT, "deploy/systemd/aotcached.service")) as f:
        unit = f.read()
    assert "/usr/local/bin/aotcached" in unit
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "aotcached.service")
        with open(path, "w") as f:
            f.write(unit.replace("/usr/local/bin/aotcached", binary))
        r = subprocess.run(["systemd-analyze", "verify", path],
                           capture_output=True, text=True, timeout=120)
    complaints = (r.stdout + r.stderr).strip()
    assert r.returncode == 0 and not complaints, complaints
    for key in ("DynamicUser=yes", "StateDirectory=aotcache",
                "ProtectSystem=strict", "--data_dir=/var/lib/aotcache",
                "--tokens_file=", "--tls_cert=", "--tls_key=", "ExecReload=",
                "--http_listen=0.0.0.0:9090", "--max_size="):
        assert key in unit, key
    print("systemd unit verified")


def check_kubernetes():
    with open(os.path.join(ROOT, "deploy/kubernetes/aotcached.yaml")) as f:
        docs = {d["kind"]: d for d in yaml.safe_load_all(f)}
    service, sts = docs["Service"], docs["StatefulSet"]
    assert sts["spec"]["replicas"] == 1, "the store has one writer"
    pod = sts["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert {p["targetPort"] for p in service["spec"]["ports"]} == set(ports)
    assert f"--listen=0.0.0.0:{ports['grpc']}" in container["args"]
    assert f"--http_listen=0.0.0.0:{ports['http']}" in container["args"]
    assert any(a.startswith("--max_size=") for a in container["args"])
    for probe, path in (("readinessProbe", "/readyz"), ("livenessProbe", "/healthz")):
        get = container[probe]["httpGet"]
        assert (get["path"], get["port"], get["scheme"]) == (path, "http", "HTTPS"), probe
    mount = container["volumeMounts"][0]
    # TLS and tokens, from the Secret mounted where the args look.
    credentials = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}["credentials"]
    for flag, file in (("--tokens_file", "tokens"), ("--tls_cert", "tls.crt"),
                       ("--tls_key", "tls.key")):
        assert f"{flag}={credentials}/{file}" in container["args"], flag
    secret = {v["name"]: v for v in pod["volumes"]}["credentials"]["secret"]
    assert secret["defaultMode"] & 0o022 == 0, "not writable by others"
    assert f"--data_dir={mount['mountPath']}" in container["args"]
    claim = sts["spec"]["volumeClaimTemplates"][0]["metadata"]["name"]
    assert mount["name"] == claim
    assert pod["terminationGracePeriodSeconds"] > 30, "above --drain_seconds"
    security = pod["securityContext"]
    assert security["runAsNonRoot"] and security["runAsUser"] > 0
    with open(os.path.join(ROOT, "deploy/container/Dockerfile")) as f:
        dockerfile = f.read()
    assert f"USER {security['runAsUser']}" in dockerfile, "numeric USER"
    assert "--tokens_file=" in dockerfile and "--tls_cert=" in dockerfile
    assert f"EXPOSE {ports['grpc']} {ports['http']}" in dockerfile
    print("kubernetes manifests consistent")


def check_monitoring():
    with open(os.path.join(ROOT, "server/daemon_metrics.cc")) as f:
        exported = set(re.findall(r'"(aotcache_[a-z_]+)"', f.read()))
    with open(os.path.join(ROOT, "deploy/grafana/aotcached-dashboard.json")) as f:
        dashboard = json.load(f)
    used = set()
    for panel in dashboard["panels"]:
        for target in panel["targets"]:
            used |= set(re.findall(r"aotcache_[a-z_]+", target["expr"]))
    used = {re.sub(r"_(bucket|count|sum)$", "", name) for name in used}
    assert used and used <= exported, sorted(used - exported)
    with open(os.path.join(ROOT, "deploy/prometheus/scrape.yaml")) as f:
        (job,) = yaml.safe_load(f)["scrape_configs"]
    assert job["scheme"] == "https" and job["metrics_path"] == "/metrics"
    assert job["authorization"]["credentials_file"], "an admin token"
    print(f"dashboard uses {len(used)} exported metrics; scrape config sound")


if __name__ == "__main__":
    check_systemd(os.path.abspath(sys.argv[1]))
    check_kubernetes()
    check_monitoring()
