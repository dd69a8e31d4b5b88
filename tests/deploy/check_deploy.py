"""Checks what can be checked here of deploy/: the systemd unit with
systemd-analyze verify (any complaint fails; skipped where systemd-analyze is
absent), and the Kubernetes manifests' structure (no cluster here for kubectl
to validate against): a Service and a StatefulSet that agree on the port,
gRPC health probes, a persistent volume on the data dir the args name.

usage: check_deploy.py AOTCACHED_BINARY
"""
import os
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
                "--tokens_file=", "--tls_cert=", "--tls_key=", "ExecReload="):
        assert key in unit, key
    print("systemd unit verified")


def check_kubernetes():
    with open(os.path.join(ROOT, "deploy/kubernetes/aotcached.yaml")) as f:
        docs = {d["kind"]: d for d in yaml.safe_load_all(f)}
    service, sts = docs["Service"], docs["StatefulSet"]
    assert sts["spec"]["replicas"] == 1, "the store has one writer"
    pod = sts["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    port = container["ports"][0]
    assert service["spec"]["ports"][0]["targetPort"] == port["name"]
    for probe in ("readinessProbe", "livenessProbe"):
        assert container[probe]["tcpSocket"]["port"] == port["name"], probe
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
    print("kubernetes manifests consistent")


if __name__ == "__main__":
    check_systemd(os.path.abspath(sys.argv[1]))
    check_kubernetes()
