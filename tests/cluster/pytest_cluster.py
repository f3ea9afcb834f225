"""The real one-node cluster in the suite (issue 33): the `cluster` fixture, and how its tests share the machine.

`cluster` is session-scoped and parametrised over the kubelet releases (tests/cluster/lib.sh's
KUBELET_VERSIONS): its first use runs `tests/cluster/up --kubelet V` (which builds, or finds cached, the
pinned releases), a use with the other release runs `up` again (only the kubelet restarts), and the end of
the session runs `tests/cluster/down` and fails the run if anything was left behind (`leftovers()`).

Sharing the machine. A cluster's kubelet owns the machine's kubepods cgroups and is seen by every
`pinscope local`; the tests that make kubelet-shaped pods of their own (helpers.RealPod, host_lock,
kubelet_running) cannot run beside it. So every test that uses `cluster`, and every test in a module that
uses those helpers, is put in one xdist group ("realnode": one worker runs them one after the other,
`--dist loadgroup` in pyproject.toml), and the cluster's tests run last in it: the cluster comes up once the
others are done and stays up to the session's end. helpers.HOST_LOCK (machine-wide) is held while it is up.

The first use of each release may build for many minutes: that test's timeout is raised to UP_TIMEOUT
(pytest-timeout reads it), every other keeps the suite's. Without root, Go, buildah, runc, the CNI plugins or
a cgroup cpuset hierarchy the tests skip with one line; with CI=true they fail (helpers.need).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import helpers

HERE = Path(__file__).resolve().parent
UP = HERE / "up"
DOWN = HERE / "down"
GROUP = "realnode"
UP_TIMEOUT = 3600  # s: a cold build of every release on two shared cores, then up
DOWN_TIMEOUT = 300


def _lib(name: str) -> str:
    """A variable of tests/cluster/lib.sh (a plain NAME=value or NAME="value" line)."""
    m = re.search(rf'^{name}="?([^"\n#]*?)"?\s*(#.*)?$', (HERE / "lib.sh").read_text(), re.M)
    assert m, f"lib.sh: no {name}"
    return m.group(1).strip()


KUBELET_VERSIONS = _lib("KUBELET_VERSIONS").split()
NODE_NAME = _lib("NODE_NAME")
BRIDGE = _lib("BRIDGE")
# as tests/cluster/up lists them (kubelet's device plugin directory is that path whatever its root-dir)
HOST_PATHS = ("/var/lib/kubelet", "/var/lib/kubelet/device-plugins", "/var/log/pods", "/var/log/containers")


def run_dir() -> Path:
    return Path(os.environ.get("PINSCOPE_CLUSTER_RUN", _lib("CLUSTER_RUN").split(":-")[-1].rstrip("}")))


def cache_dir() -> Path:
    if os.environ.get("PINSCOPE_CLUSTER_CACHE"):
        return Path(os.environ["PINSCOPE_CLUSTER_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pinscope-cluster"


def available() -> tuple[bool, str]:
    """Whether this machine can run the cluster -> (ok, the one line why not)."""
    if os.geteuid() != 0:
        return False, "the real cluster needs root (cgroups, mounts, network namespaces)"
    if not (shutil.which("go") or Path("/usr/local/go/bin/go").exists()):
        return False, "no Go toolchain (go, or /usr/local/go/bin/go) to build the cluster's releases"
    for prog, pkg in (("buildah", "buildah"), ("runc", "runc"), ("openssl", "openssl"), ("curl", "curl")):
        if not shutil.which(prog):
            return False, f"{prog} not found (package {pkg}, tests/system-packages.sh)"
    if not Path("/usr/lib/cni/bridge").exists():
        return False, "CNI plugins not found in /usr/lib/cni (package containernetworking-plugins)"
    if not (Path("/sys/fs/cgroup/cpuset/cpuset.cpus").exists() or Path("/sys/fs/cgroup/cgroup.controllers").exists()):
        return False, "no cgroup cpuset hierarchy at /sys/fs/cgroup"
    foreign = [pid for pid, exe in _kubelets() if not exe.startswith(str(cache_dir()) + "/")]
    if foreign:
        return False, f"a kubelet not started by tests/cluster/up runs here (pid {foreign[0]})"
    return True, ""


def _kubelets() -> list[tuple[int, str]]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if (d / "comm").read_text().strip() == "kubelet":
                    out.append((int(d.name), os.readlink(d / "exe")))
            except OSError:
                pass
    return out


@dataclass(frozen=True)
class Cluster:
    """A running cluster, as `tests/cluster/up` printed it."""

    version: str  # the kubelet's release
    kubeconfig: str  # cluster-admin (system:masters) client certificate
    node_name: str
    kubelet_root: Path
    busybox_image: str  # any pod can run it; has sh
    pinscope_image: str  # deploy/Dockerfile, built locally ("" with PINSCOPE_CLUSTER_NO_PINSCOPE_IMAGE=1)
    kubectl_bin: str  # kubectl of the cluster's release
    cri_endpoint: str
    run: Path
    device_resource: str  # the extended resource of up's device plugin (tests/cluster/src/device-plugin)

    @classmethod
    def from_up(cls, text: str) -> Cluster:
        env = dict(line.split("=", 1) for line in text.splitlines() if re.match(r"^[A-Z_]+=", line))
        return cls(version=env["KUBELET_VERSION"], kubeconfig=env["KUBECONFIG"], node_name=env["NODE_NAME"],
                   kubelet_root=Path(env["KUBELET_ROOT"]), busybox_image=env["BUSYBOX_IMAGE"],
                   pinscope_image=env["PINSCOPE_IMAGE"], kubectl_bin=env["KUBECTL"],
                   cri_endpoint=env["CRI_ENDPOINT"], run=Path(env["CLUSTER_RUN"]),
                   device_resource=env["DEVICE_RESOURCE"])

    def kubectl(self, *args: str, input: str | None = None, timeout: float = 60,
                check: bool = True) -> subprocess.CompletedProcess:
        p = subprocess.run([self.kubectl_bin, "--kubeconfig", self.kubeconfig, "--request-timeout=30s", *args],
                           input=input, capture_output=True, text=True, timeout=timeout)
        if check and p.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)}: exit {p.returncode}: {p.stderr.strip()}")
        return p

    def get(self, *args: str) -> Any:
        return json.loads(self.kubectl("get", "-o", "json", *args).stdout)

    def apply(self, obj: dict) -> None:
        self.kubectl("apply", "-f", "-", input=json.dumps(obj))

    def wait_pod(self, name: str, namespace: str = "default", phase: str = "Running",
                 timeout: float = 90) -> dict:
        """The pod once its phase is `phase` (every container ready, for Running); fails past `timeout`
        with the pod's status and events."""
        end = time.monotonic() + timeout
        pod: dict = {}
        while time.monotonic() < end:
            pod = self.get("pod", "-n", namespace, name)
            st = pod.get("status", {})
            if st.get("phase") == phase and (phase != "Running" or all(
                    c.get("ready") for c in st.get("containerStatuses", []))):
                return pod
            if phase == "Running" and st.get("phase") in ("Failed", "Succeeded"):
                break
            time.sleep(0.2)
        events = self.kubectl("get", "events", "-n", namespace, "--field-selector",
                              f"involvedObject.name={name}", check=False).stdout
        raise AssertionError(f"pod {namespace}/{name} not {phase}: {json.dumps(pod.get('status'), indent=1)}\n"
                             f"{events}")

    def delete_pod(self, name: str, namespace: str = "default", timeout: float = 90) -> None:
        self.kubectl("delete", "pod", "-n", namespace, name, "--ignore-not-found", "--wait=true",
                     f"--timeout={int(timeout)}s", timeout=timeout + 30)


def leftovers() -> list[str]:
    """What a cluster left on the machine after `down`: its processes (executables in the cache), mounts
    under the run dir, kubepods cgroups, network namespaces, the pods' bridge and veths, kubelet's links to
    the pods' logs, the run dir."""
    out = []
    cache = str(cache_dir()) + "/"
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                exe = os.readlink(d / "exe")
            except OSError:
                continue
            if exe.startswith(cache):
                out.append(f"process {d.name}: {exe}")
    run = str(run_dir()) + "/"
    for line in Path("/proc/mounts").read_text().splitlines():
        where = line.split()[1]
        if where.startswith(run) or "/cni-" in where:
            out.append(f"mount {where}")
    for cg in list(Path("/sys/fs/cgroup").glob("*/kubepods")) + [Path("/sys/fs/cgroup/kubepods")]:
        if cg.is_dir():
            out.append(f"cgroup {cg}")
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=10).stdout
    out += [f"netns {n.split()[0]}" for n in netns.splitlines() if n.startswith("cni-")]
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True, timeout=10).stdout
    for line in links.splitlines():
        name = line.split(": ")[1].split("@")[0]
        if name == BRIDGE or f"master {BRIDGE} " in line:
            out.append(f"link {name}")
    for save in ("iptables-save", "ip6tables-save"):
        if shutil.which(save):
            rules = subprocess.run([save], capture_output=True, text=True, timeout=20).stdout
            out += [f"{save}: {r}" for r in rules.splitlines()
                    if re.search(r"KUBE-(FIREWALL|KUBELET-CANARY|IPTABLES-HINT)|CNI-|10\.217\.", r)]
    for path in HOST_PATHS:  # the node's usual paths up took (they did not exist before it)
        if Path(path).exists() and path not in _State.host_paths_before:
            out.append(f"path {path}")
    logs = Path("/var/log/containers")  # kubelet's fixed directory of links to the pods' logs
    if logs.is_dir():
        out += [f"log link {p}" for p in logs.iterdir() if p.is_symlink() and os.readlink(p).startswith(run)]
    if run_dir().exists():
        out.append(f"run dir {run_dir()}")
    return out


def run_up(version: str, timeout: float = UP_TIMEOUT - 60) -> Cluster:
    p = subprocess.run([str(UP), "--kubelet", version], capture_output=True, text=True, timeout=timeout,
                       stdin=subprocess.DEVNULL)
    if p.returncode != 0:
        pytest.fail(f"tests/cluster/up --kubelet {version}: exit {p.returncode}\n{p.stderr[-6000:]}", pytrace=False)
    return Cluster.from_up(p.stdout)


def run_down() -> subprocess.CompletedProcess:
    return subprocess.run([str(DOWN)], capture_output=True, text=True, timeout=DOWN_TIMEOUT, stdin=subprocess.DEVNULL)


class _State:
    up: str | None = None  # the kubelet release up in this process
    lock: int | None = None
    # which of the node's usual paths existed before the session's first up (up takes those that did not)
    host_paths_before: frozenset[str] = frozenset(HOST_PATHS)


@pytest.fixture(scope="session")
def _cluster_session():
    """Holds the machine for the cluster's tests; `down` at the end, and nothing may be left."""
    ok, why = available()
    helpers.need(ok, why)
    _State.lock = helpers.host_lock(timeout=300)
    if not run_dir().exists():
        _State.host_paths_before = frozenset(p for p in HOST_PATHS if Path(p).exists())
    try:
        yield
    finally:
        try:
            if _State.up is not None:
                _State.up = None
                p = run_down()
                left = leftovers()
                assert p.returncode == 0 and not left, (
                    f"tests/cluster/down: exit {p.returncode}\n{p.stderr[-3000:]}\nleft: {left}")
        finally:
            os.close(_State.lock)
            _State.lock = None


@pytest.fixture(scope="session", params=KUBELET_VERSIONS, ids=[f"kubelet-{v}" for v in KUBELET_VERSIONS])
def cluster(request, _cluster_session) -> Cluster:
    """The real cluster with the kubelet release of this parameter (up runs only when it is not already)."""
    c = run_up(request.param)
    _State.up = request.param
    return c


def _uses_real_machine(item: pytest.Item) -> bool:
    if "cluster" in getattr(item, "fixturenames", ()):
        return True
    mod = getattr(item, "module", None)
    return any(getattr(mod, n, None) is getattr(helpers, n) for n in ("RealPod", "host_lock", "kubelet_running"))


def pytest_itemcollected(item: pytest.Item) -> None:
    if _uses_real_machine(item):
        item.add_marker(pytest.mark.xdist_group(GROUP))


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The cluster's tests last (stable: pytest's grouping by kubelet release is kept)."""
    items[:] = ([i for i in items if "cluster" not in getattr(i, "fixturenames", ())]
                + [i for i in items if "cluster" in getattr(i, "fixturenames", ())])


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    """The test that brings up a release (maybe building it) gets UP_TIMEOUT; pytest-timeout reads the
    marker in its own wrapper of this hook, inside this one."""
    callspec = getattr(item, "callspec", None)
    if callspec is not None and "cluster" in callspec.params and callspec.params["cluster"] != _State.up:
        item.add_marker(pytest.mark.timeout(UP_TIMEOUT))
    yield
