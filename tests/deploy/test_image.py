"""deploy/Dockerfile, .dockerignore and deploy/publish.sh, checked without a container daemon.

No docker, podman or buildkit runs here. So the Dockerfile is read instruction by instruction and its
steps are carried out as a builder would, on this machine: the build context filtered by .dockerignore,
COPY into the same absolute paths (a private mount namespace with a tmpfs over /opt: nothing on this
machine changes), each RUN's own text run by `sh -c`, with Debian's /usr/bin/python3 as the `python3` of
the base image (the same minor version, 3.11). Then the installed `pinscope` runs as the image's non-root
USER: `--help`, the exporter's `--help`, and a snapshot of a simulated node (the probe's text and the
themes are packaged). publish.sh runs with a stand-in for docker that records its arguments.

Needs root (unshare -m, mount), setpriv, and pip's package index (pip installs the dependencies): skipped without them on
a laptop, FAILS in CI.
"""
from __future__ import annotations

import fnmatch
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pinscope.collectors.sim.node import SimNode
from helpers import need
from nodes import dual_socket_intel

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "deploy/Dockerfile"


def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order; continuation lines joined, comments dropped."""
    out, cur = [], ""
    for line in text.splitlines():
        if not cur and (not line.strip() or line.lstrip().startswith("#")):
            continue
        cur += line.rstrip("\\").rstrip() + " " if line.endswith("\\") else line
        if not line.endswith("\\"):
            word, _, rest = cur.strip().partition(" ")
            out.append((word.upper(), rest.strip()))
            cur = ""
    return out


def ignored(rel: str, patterns: list[str]) -> bool:
    """Docker's .dockerignore rule: the last pattern that matches the path or one of its parents wins."""
    parts = rel.split("/")
    verdict = False
    for pat in patterns:
        neg = pat.startswith("!")
        p = pat[1:] if neg else pat
        p = p.rstrip("/")
        for i in range(1, len(parts) + 1):
            prefix = "/".join(parts[:i])
            if fnmatch.fnmatchcase(prefix, p) or (p.startswith("**/") and fnmatch.fnmatchcase(parts[i - 1], p[3:])):
                verdict = not neg
                break
    return verdict


def context_files() -> list[str]:
    patterns = [x.strip() for x in (ROOT / ".dockerignore").read_text().splitlines()
                if x.strip() and not x.startswith("#")]
    files = []
    for dirpath, dirs, names in os.walk(ROOT):
        links = [d for d in dirs if os.path.islink(os.path.join(dirpath, d))]  # sent as links (pinscope/*)
        for n in names + links:
            rel = os.path.relpath(os.path.join(dirpath, n), ROOT)
            if not ignored(rel, patterns):
                files.append(rel)
    return sorted(files)


DOC = instructions(DOCKERFILE.read_text())


def test_the_build_context_holds_the_package_and_nothing_else():
    files = context_files()
    tops = {f.split("/")[0] for f in files}
    assert tops == {"pyproject.toml", "README.md", "cli", "collectors", "tui", "themes", "pinscope"}, tops
    assert "collectors/probe.sh" in files and any(f.endswith(".tcss") for f in files)
    assert not any("__pycache__" in f or f.endswith(".pyc") or ".egg-info" in f for f in files)
    for secret in (".git/config", ".venv/bin/python", "tests/conftest.py", "bench", "screenshots"):
        assert secret not in files and not any(f.startswith(secret) for f in files)


def test_the_dockerfile_is_multi_stage_pinned_labelled_and_non_root():
    froms = [a for i, a in DOC if i == "FROM"]
    assert froms == ["${BASE} AS build", "${BASE}"]
    (base,) = [a for i, a in DOC if i == "ARG" and a.startswith("BASE=")]
    # an exact release, not a moving tag (python:3.11-slim): major.minor.patch and the Debian release
    assert re.fullmatch(r"BASE=python:3\.11\.\d+-slim-(bookworm|trixie)(@sha256:[0-9a-f]{64})?", base), base
    labels = " ".join(a for i, a in DOC if i == "LABEL")
    for key in ("title", "description", "version", "source", "revision", "base.name"):
        assert f"org.opencontainers.image.{key}=" in labels
    (user,) = [a for i, a in DOC if i == "USER"]
    assert user.split(":")[0] not in ("0", "root")
    final = DOC[[i for i, (w, _) in enumerate(DOC) if w == "FROM"][1]:]
    assert ("COPY", "--from=build /opt/pinscope /opt/pinscope") in final
    assert not any(w == "RUN" for w, _ in final)  # nothing built in the final stage: no pip, no compiler
    assert json.loads(dict(DOC)["ENTRYPOINT"]) == ["pinscope"]


def _script(ctx: Path, node: Path) -> str:
    """The Dockerfile's steps as one sh script, in order; then the checks, as the image's USER."""
    lines = ["set -e", "mount -t tmpfs tmpfs /opt", "cd /"]
    user = "0:0"
    for word, arg in DOC:
        if word == "WORKDIR":
            lines.append(f"mkdir -p {arg} && cd {arg}")
        elif word == "COPY" and not arg.startswith("--from="):
            *srcs, dest = shlex.split(arg)
            for s in srcs:
                if (ctx / s).is_dir():
                    lines.append(f"mkdir -p {dest} && cp -R {ctx / s}/. {dest}")
                else:
                    lines.append(f"cp {ctx / s} {dest}")
        elif word == "COPY":
            _, src, dest = shlex.split(arg)
            assert src == dest  # the build stage's files, at the same path: here they are already there
            lines.append(f"test -d {dest}")
        elif word == "RUN":
            lines.append(f"sh -ec {shlex.quote(arg)}")
        elif word == "ENV":
            for kv in shlex.split(arg):
                k, v = kv.split("=", 1)
                lines.append(f'export {k}="{v}"')
        elif word == "USER":
            user = arg
    uid, gid = user.split(":")
    run_as = f"setpriv --reuid {uid} --regid {gid} --clear-groups"
    entry = " ".join(json.loads(dict(DOC)["ENTRYPOINT"]))
    lines += [
        "cd /",
        f"{run_as} {entry} --help > /dev/null && echo HELP-OK",
        f"{run_as} {entry} exporter --help | grep -q -- --listen && echo EXPORTER-HELP-OK",
        "test ! -e /opt/pinscope/bin/pip && echo NO-PIP",
        f"{run_as} python3 -c 'import sys; print(\"PREFIX\", sys.prefix)'",
        f"cp -R {node} /opt/node && mkdir -m 777 /opt/out",  # where the image's user may read and write
        f"{run_as} {entry} snapshot --json --root /opt/node local > /opt/out/snap.json && echo SNAPSHOT-OK",
        "echo SNAPSHOT-JSON && cat /opt/out/snap.json",
    ]
    return "\n".join(lines) + "\n"


@pytest.mark.timeout(900)  # a venv and pip install of every dependency: minutes on a loaded machine
def test_the_dockerfile_steps_build_an_image_that_runs(tmp_path):
    need(os.geteuid() == 0, "runs the build in a private mount namespace (unshare -m): needs root")
    for tool in ("unshare", "setpriv", "/usr/bin/python3"):
        need(shutil.which(tool) is not None, f"{tool} not found")
    idx = subprocess.run([sys.executable, "-m", "pip", "index", "versions", "textual"], capture_output=True,
                         text=True, timeout=120)  # the package index pip is configured with answers
    need(idx.returncode == 0, f"pip needs its package index for the dependencies ({idx.stderr.strip()[-200:]})")
    ctx = tmp_path / "context"
    for rel in context_files():
        (ctx / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, ctx / rel, follow_symlinks=False)  # a link stays a link, as docker sends it
    node = tmp_path / "node"
    SimNode(dual_socket_intel(), node).write()
    # Debian's python3 is the base image's python3 (both 3.11): first in PATH, as /usr/local/bin is there
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "HOME": str(tmp_path), "LANG": "C.UTF-8"}
    r = subprocess.run(["unshare", "-m", "sh", "-c", _script(ctx, node)], capture_output=True, text=True,
                       env=env, timeout=900)
    out = r.stdout
    assert r.returncode == 0, (out[-3000:], r.stderr[-3000:])
    for ok in ("HELP-OK", "EXPORTER-HELP-OK", "SNAPSHOT-OK", "NO-PIP", "PREFIX /opt/pinscope"):
        assert ok in out, (ok, out[-2000:], r.stderr[-2000:])
    snap = json.loads(out.split("SNAPSHOT-JSON\n", 1)[1])
    assert snap["node"] == "xeon-2s" and len(snap["cpus"]) == 48 and snap["pods"]
    assert not Path("/opt/pinscope").exists()  # the build stayed in its mount namespace


def test_publish_builds_pushes_and_sets_the_image_in_the_kustomization(tmp_path):
    """`sh deploy/publish.sh REF` with a recording stand-in for docker: build with the Dockerfile and the
    repository as context, push, and `kubectl kustomize deploy/` renders the DaemonSet with REF."""
    need(shutil.which("kubectl") is not None, "kubectl renders the kustomization")
    repo = tmp_path / "repo"
    shutil.copytree(ROOT / "deploy", repo / "deploy")
    shutil.copy2(ROOT / "pyproject.toml", repo / "pyproject.toml")
    log = tmp_path / "calls"
    fake = tmp_path / "fake-docker"
    fake.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> {log}\n')
    fake.chmod(0o755)
    env = {**os.environ, "CONTAINER_TOOL": str(fake), "PATH": "/usr/bin:/bin"}  # no kustomize: the sed path
    ref = "registry.example.com:5000/team/pinscope:0.1.0-rc1"
    r = subprocess.run(["sh", str(repo / "deploy/publish.sh"), ref], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    build, push = log.read_text().splitlines()
    assert build.startswith(f"build -f {repo}/deploy/Dockerfile -t {ref} --build-arg VERSION=0.1.0 ")
    assert build.endswith(f" {repo}") and push == f"push {ref}"
    docs = list(yaml.safe_load_all(subprocess.run(["kubectl", "kustomize", str(repo / "deploy")],
                                                  capture_output=True, text=True, check=True).stdout))
    (ds,) = [d for d in docs if d["kind"] == "DaemonSet"]
    assert ds["spec"]["template"]["spec"]["containers"][0]["image"] == ref
    for bad in ("pinscope", "x;rm -rf /:1", "localhost:5000/pinscope", "p:"):
        r = subprocess.run(["sh", str(repo / "deploy/publish.sh"), bad], capture_output=True, text=True, env=env)
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, (bad, r.stderr)
    assert len(log.read_text().splitlines()) == 2  # nothing built for a refused reference
