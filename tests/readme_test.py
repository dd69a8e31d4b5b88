#!/usr/bin/env python3
"""The README's commands run as shown, against a built tree (scripts/test
runs this after the Python suites).

Every ```sh block of README.md runs in order, each line as a new user types
it, with a fresh data dir, from the checkout itself when it has no `venv`
(the venv the README makes is removed afterwards; the pip install builds
incrementally in build/pip, the tree scripts/test-torch2 has just built, so
that only what changed since is compiled), else from a checkout of symlinks
(build/readme-checkout, building in build/readme-pip), so that a
developer's own `venv` is never touched:
`scripts/run` starts the daemon in the background (as in a first terminal)
and the blocks after it are the second terminal; `scripts/test` is skipped,
being what runs this; `KEY` stands for an entry `ls` prints. Each command
must exit 0, and the Python blocks print what they say they print.
"""

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BLOCK = re.compile(r"```sh\n(.*?)```", re.S)


def commands(readme):
    """The commands of the README's sh blocks: a heredoc stays one command."""
    out = []
    for block in BLOCK.findall(readme):
        lines = block.splitlines()
        i = 0
        while i < len(lines):
            line = lines[i]
            i += 1
            if not line.strip():
                continue
            heredoc = re.search(r"<<'(\w+)'", line)
            if heredoc:
                end = heredoc.group(1)
                body = [line]
                while i < len(lines) and lines[i] != end:
                    body.append(lines[i])
                    i += 1
                body.append(end)
                i += 1
                line = "\n".join(body)
            out.append(line)
    return out


# Marks a venv this test made in the checkout: one left by an interrupted run
# is removed, a developer's never.
MADE_HERE = ".made-by-readme-test"


def where_to_run(build):
    """(the tree, its pip build dir): the checkout when its venv is free."""
    venv = os.path.join(ROOT, "venv")
    if os.path.exists(os.path.join(venv, MADE_HERE)):
        shutil.rmtree(venv)
    if not os.path.lexists(venv):
        os.makedirs(venv)
        open(os.path.join(venv, MADE_HERE), "w").close()
        return ROOT, os.path.join(build, "pip")
    return symlink_checkout(build), os.path.join(build, "readme-pip")


def symlink_checkout(build):
    """build/readme-checkout: a symlink per entry of the checkout."""
    tree = os.path.join(build, "readme-checkout")
    os.makedirs(tree, exist_ok=True)
    for name in os.listdir(ROOT):
        if name in (".git", "venv"):
            continue
        link = os.path.join(tree, name)
        if not os.path.lexists(link):
            os.symlink(os.path.join(ROOT, name), link)
    return tree


def wait_for_port(port, daemon, seconds=600):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if daemon.poll() is not None:
            raise SystemExit("scripts/run exited with %d" % daemon.returncode)
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.2)
    raise SystemExit("scripts/run did not listen on %d" % port)


def main():
    build = os.environ.get("AOTCACHE_BUILD_DIR", os.path.join(ROOT, "build"))
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        cmds = commands(f.read())
    first = [c.split("#")[0].strip() for c in cmds[:2]]
    assert first == ["scripts/run", "scripts/test"], cmds[:2]
    tree, pip_build = where_to_run(build)
    data = tempfile.mkdtemp(prefix="aotcache-readme-")
    env = dict(os.environ, XDG_CACHE_HOME=data, PIP_CONFIG_SETTINGS="build-dir=" + pip_build)
    for name in ("AOTCACHE_SERVER", "AOTCACHED", "PYTHONPATH"):
        env.pop(name, None)
    daemon = subprocess.Popen(["bash", "-c", "exec scripts/run"], cwd=tree, env=env,
                              start_new_session=True)
    failures = []
    try:
        wait_for_port(50051, daemon)
        key = None
        for cmd in cmds[2:]:
            if "KEY" in cmd:
                if key is None:
                    failures.append("no entry to stand for KEY in: " + cmd)
                    continue
                cmd = cmd.replace("KEY", key)
            start = time.time()
            p = subprocess.run(["bash", "-euo", "pipefail", "-c", cmd], cwd=tree, env=env,
                               capture_output=True, text=True, timeout=1800)
            print("[%5.1f s] %s" % (time.time() - start, cmd.splitlines()[0]), flush=True)
            if p.returncode != 0:
                failures.append("%s\n  exit %d: %s" % (cmd, p.returncode,
                                                        (p.stderr or p.stdout)[-2000:]))
                continue
            if re.search(r"aotcache ls\b", cmd):
                found = re.search(r"\b[0-9a-f]{64}\b", p.stdout)
                key = found.group(0) if found else None
            if "cache_info()" in cmd and "'key'" not in p.stdout:
                failures.append("%s\n  printed no cache_info rows: %s" % (cmd, p.stdout[-500:]))
    finally:
        os.killpg(daemon.pid, signal.SIGINT)
        try:
            code = daemon.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(daemon.pid, signal.SIGKILL)
            code = "killed"
        shutil.rmtree(data, ignore_errors=True)
        if tree == ROOT:
            shutil.rmtree(os.path.join(ROOT, "venv"), ignore_errors=True)
    if code != 0:
        failures.append("scripts/run did not stop cleanly on Ctrl-C: %s" % code)
    if failures:
        print("README commands that failed:\n" + "\n".join(failures))
        return 1
    print("%d README commands ran as shown" % (len(cmds) - 1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
