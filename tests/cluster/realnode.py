"""What the real-node checks (issue 33, part two) share: the workloads a real node has, pinscope run as a user
runs it, and the expected facts read from kubelet and the kernel, never from pinscope.

The sources of truth, each read here by its own small code (no pinscope import):
- the API (`kubectl get pod -o json`): pod uid, namespace, QoS class, each container's id and state;
- kubelet's own files: `cpu_manager_state` under its root-dir (the v4 `data` payload where the release wrote
  one: kubelet reads only that), its device checkpoint (DEVICE_CHECKPOINT), the KubeletConfiguration the
  cluster runs it with (`reservedSystemCPUs`, `cpuManagerReconcilePeriod`);
- the kernel: `/sys/devices/system/cpu/online`, each container's cgroup v1 `cpuset.cpus` (cgroupfs driver),
  `/proc/PID/status`.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cluster.pytest_cluster import Cluster

REPO = Path(__file__).resolve().parents[2]
CPUSET_ROOT = Path("/sys/fs/cgroup/cpuset")
# kubelet's device manager checkpoint: a constant of the device plugin API, whatever the root-dir
DEVICE_CHECKPOINT = Path("/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint")
DEADLINE = 120  # s: every poll's guard on this loaded two-core machine


def cpuset(text: str) -> set[int]:
    """A kernel/kubelet cpuset list ("0-2,5") -> its CPUs (written here, not pinscope's parser)."""
    out: set[int] = set()
    for part in text.strip().split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


def kubelet_config(c: Cluster) -> dict[str, str]:
    """The flat `key: value` lines of the KubeletConfiguration the cluster's kubelet runs with."""
    conf: dict[str, str] = {}
    for line in (c.kubelet_root / "config.yaml").read_text().splitlines():
        m = re.match(r"^([A-Za-z]+):\s*(.*?)\s*$", line)
        if m:
            conf[m.group(1)] = m.group(2).strip('"')
    return conf


def reconcile_period(c: Cluster) -> float:
    """cpuManagerReconcilePeriod, in seconds (kubelet's default 10s when the config does not say)."""
    v = kubelet_config(c).get("cpuManagerReconcilePeriod", "10s")
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s|m)", v)
    assert m, f"cpuManagerReconcilePeriod {v!r}"
    return float(m.group(1)) * {"ms": 0.001, "s": 1, "m": 60}[m.group(2)]


def cpu_state(c: Cluster) -> dict[str, Any]:
    """kubelet's cpu_manager_state as kubelet reads it: the v4 `data` payload when there is one."""
    doc = json.loads((c.kubelet_root / "cpu_manager_state").read_text())
    if doc.get("data"):
        inner = json.loads(doc["data"])
        inner["_outer"] = doc
        return inner
    doc["_outer"] = doc.copy()
    return doc


def online_cpus() -> set[int]:
    return cpuset(Path("/sys/devices/system/cpu/online").read_text())


def container_cgroup(uid: str, cid: str) -> Path:
    """The container's cgroup v1 cpuset directory (cgroupfs driver: kubepods[/burstable|/besteffort]/pod<uid>/<id>)."""
    found = [p for p in CPUSET_ROOT.glob(f"kubepods*/**/pod{uid}/{cid}") if p.is_dir()]
    assert len(found) == 1, f"container {cid} of pod {uid}: cgroups {found}"
    return found[0]


def container_cpus(uid: str, cid: str) -> set[int]:
    return cpuset((container_cgroup(uid, cid) / "cpuset.cpus").read_text())


def running_containers(pod: dict) -> dict[str, str]:
    """{container name: container id} of the pod's running containers, as the API says."""
    return {s["name"]: s["containerID"].split("://", 1)[1] for s in pod["status"].get("containerStatuses", [])
            if "running" in s.get("state", {})}


def spec(c: Cluster, name: str, containers: list[dict], init: list[dict] | None = None) -> dict:
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"pinscope-test": "realnode"}},
        "spec": {
            "nodeName": c.node_name, "automountServiceAccountToken": False, "terminationGracePeriodSeconds": 1,
            "restartPolicy": "Always",
            "initContainers": init or [],
            "containers": containers,
        },
    }


# What a test pod's container runs: a shell that ends on SIGTERM (kubelet's stop), waiting on a sleep. A bare
# `sleep` as the container's PID 1 ignores SIGTERM (the kernel delivers no signal PID 1 has no handler for), so
# every deletion waited out the grace period (kubelet gives at least 2 s: minimumGracePeriodInSeconds), then
# SIGKILL.
IDLE = ["sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"]


def box(c: Cluster, name: str, cpu: str | None = None, memory: str | None = None, limits: bool = True,
        command: list[str] | None = None) -> dict:
    """A busybox container; neither `cpu` nor `memory`: no resources at all (BestEffort)."""
    out: dict[str, Any] = {"name": name, "image": c.busybox_image, "command": command or IDLE}
    req = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v}
    if req:
        out["resources"] = {"requests": req, **({"limits": req} if limits else {})}
    return out


def workloads(c: Cluster) -> dict[str, dict]:
    """The pods a real node has: Guaranteed with one exclusive CPU (an init container that asks for it too, then
    the container that keeps it), Burstable, BestEffort -> {role: spec}. The node's allocatable CPU is 1 (2 CPUs,
    1 reserved): the Guaranteed pod takes all of it, so nothing else may request CPU (the Burstable pod
    requests memory only; a second CPU-requesting container anywhere is refused OutOfcpu)."""
    tag = uuid.uuid4().hex[:6]
    return {
        "guaranteed": spec(c, f"g-{tag}", [box(c, "work", "1", "64Mi")],
                           init=[box(c, "init", "1", "32Mi", command=["true"])]),
        "burstable": spec(c, f"b-{tag}", [box(c, "web", memory="16Mi", limits=False)]),
        "besteffort": spec(c, f"e-{tag}", [box(c, "idle")]),
    }


def start(c: Cluster, specs: list[dict], timeout: float = DEADLINE) -> list[dict]:
    """Create the pods and wait for each to run; their API objects."""
    for s in specs:
        c.apply(s)
    return [c.wait_pod(s["metadata"]["name"], timeout=timeout) for s in specs]


def delete(c: Cluster, specs: list[dict]) -> None:
    """Delete the pods, then wait until kubelet's CPU manager lets their CPUs go: the API object goes first, the
    checkpoint a reconcile later, and a Guaranteed pod admitted in between is refused (TopologyAffinityError:
    single-numa-node finds no CPU for it)."""
    names = [s["metadata"]["name"] for s in specs]
    uids = [u for u in c.kubectl("get", "pod", "-n", "default", *names, "--ignore-not-found", "-o",
                                 "jsonpath={.items[*].metadata.uid}", check=False).stdout.split() if u]
    c.kubectl("delete", "pod", "-n", "default", *names, "--ignore-not-found", "--wait=true", "--timeout=120s",
              timeout=180)
    released(c, uids)


def released(c: Cluster, uids: list[str]) -> None:
    """Wait until no pod of `uids` is in kubelet's cpu_manager_state. (Its memory_manager_state keeps a deleted
    pod's entry until the next admission: the memory manager removes stale state only in Allocate.)"""
    def gone() -> bool:
        text = (c.kubelet_root / "cpu_manager_state").read_text()
        return not any(u in text for u in uids)
    poll(f"kubelet's checkpoints to let pods {uids} go", gone)


# pinscope's CLI whose local probe (the only part that reads the node) runs as another user through runuser: the
# venv's interpreter lives under root's 0700 home, so the Python side stays root's, as in
# tests/collectors/test_unlistable_dirs.py
AS_USER = """import sys
from pinscope.collectors.transport import base, local
user = sys.argv[1]
local.probe_command = lambda root=None, sudo=False: f"exec runuser -u {user} -- " + base.probe_command(root, sudo)[5:]
from pinscope.cli import main
sys.exit(main(sys.argv[2:]))
"""


def pinscope(*args: str, timeout: float = 120, user: str | None = None, env: dict | None = None
             ) -> subprocess.CompletedProcess:
    """pinscope as a user runs it (the venv's interpreter; `user`: its probe runs as that user)."""
    cmd = [sys.executable, "-m", "pinscope.cli", *args]
    if user:
        cmd = [sys.executable, "-c", AS_USER, user, *args]
    e = {**os.environ, **(env or {})}
    e.pop("PINSCOPE_DEBUG", None)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=REPO, env=e,
                          stdin=subprocess.DEVNULL)


def snapshot(*extra: str, user: str | None = None) -> dict:
    p = pinscope("snapshot", "--json", *extra, "local", user=user)
    assert p.returncode == 0, f"snapshot: exit {p.returncode}: {p.stderr}"
    assert "Traceback" not in p.stderr, p.stderr
    return json.loads(p.stdout)


@dataclass
class Check:
    rc: int
    findings: list[dict]
    errors: list[dict]
    stderr: str

    def codes(self) -> list[str]:
        return [f["code"] for f in self.findings]


def check(*extra: str, user: str | None = None) -> Check:
    p = pinscope("check", "--json", *extra, "local", user=user)
    assert "Traceback" not in p.stderr, p.stderr
    doc = json.loads(p.stdout)
    doc = doc[0] if isinstance(doc, list) else doc
    return Check(p.returncode, doc.get("findings", []), doc.get("errors", []), p.stderr)


def poll(what: str, fn, timeout: float = DEADLINE, every: float = 0.2):
    """fn() until it returns something true, at most `timeout` s (asked again `every` s after each answer: the
    conditions polled here are cheap, and a second a poll added up to minutes over the suite); fails naming
    `what` and fn's last value."""
    end = time.monotonic() + timeout
    last = None
    while time.monotonic() < end:
        last = fn()
        if last:
            return last
        time.sleep(every)
    raise AssertionError(f"not within {timeout:.0f} s: {what} (last: {last!r})")


def exclusive_cpus(c: Cluster) -> set[int]:
    """Every CPU some entry of kubelet's checkpoint holds."""
    return {cpu for cs in (cpu_state(c).get("entries") or {}).values() for v in cs.values() for cpu in cpuset(v)}


def allowed_cpus(pid: int | str) -> set[int]:
    """/proc/PID/status Cpus_allowed_list."""
    m = re.search(r"^Cpus_allowed_list:\s*(\S+)", Path(f"/proc/{pid}/status").read_text(), re.M)
    assert m, pid
    return cpuset(m.group(1))


def verify_finding(c: Cluster, f: dict) -> None:
    """A finding of `check local` on the real node, checked against the source its claim comes from (the kernel,
    kubelet's files); a code without a check here fails: every finding on the real node is looked at."""
    code = f["code"]
    exclusive = exclusive_cpus(c)
    if code == "SAMPLES_NEEDED":  # info: one sample gives no rates (check's default)
        assert f["severity"] == "info", f
    elif code == "SYSTEM_NOT_CONFINED":  # PID 1 (and so the system's processes) may run on exclusive CPUs
        assert allowed_cpus(1) & exclusive, (f, allowed_cpus(1), exclusive)
    elif code == "IRQ_ON_EXCLUSIVE":  # the kernel steers that IRQ to an exclusive CPU, and it fired there
        irq = re.match(r"IRQ (\d+) ", f["message"])
        assert irq, f
        aff = cpuset(Path(f"/proc/irq/{irq.group(1)}/effective_affinity_list").read_text())
        assert set(f["cpus"]) <= aff & exclusive, (f, aff, exclusive)
        assert all(irq_count(irq.group(1), cpu) > 0 for cpu in f["cpus"]), f
    elif code == "SHARED_POOL_STARVED":  # kubelet's shared pool holds no CPU beyond the reserved ones
        reserved = cpuset(kubelet_config(c)["reservedSystemCPUs"])
        assert not cpuset(cpu_state(c)["defaultCpuSet"]) - reserved, f
    elif code == "IDENTITY_UNRESOLVED" and f["severity"] == "info" and not f.get("pod"):
        # tasks seen on an exclusive CPU whose /proc/<pid>/cgroup was gone by the time it was read: true when
        # each has exited since (short-lived processes, the probe's own sh and awk among them)
        for line in f["evidence"]:
            m = re.search(r"\(pid (\d+), .*not read \(the process may have exited\)", line)
            assert m and gone(int(m.group(1))), (line, f)
    elif code == "DEVICE_CHECKPOINT_ORPHAN":  # info: kubelet's device checkpoint still names a pod the node no longer
        # has (kubelet writes the file only when it hands out devices or a plugin's devices change)
        uid = f["message"].split(":", 1)[0].removeprefix("pod ")
        entries = json.loads(DEVICE_CHECKPOINT.read_text())["Data"]["PodDeviceEntries"] or []
        assert f["severity"] == "info" and any(e["PodUID"] == uid for e in entries), (f, entries)
        assert uid not in {p["metadata"]["uid"] for p in c.get("pods", "--all-namespaces")["items"]}, f
        assert not list(CPUSET_ROOT.glob(f"kubepods*/**/pod{uid}")), f
    elif code == "READ_PARTIAL":  # info: what it names is root's only (kubelet's checkpoint: 0600)
        assert f["severity"] == "info" and "cpu_manager_state" in f["message"], f
        assert os.stat(c.kubelet_root / "cpu_manager_state").st_mode & 0o077 == 0
    else:
        raise AssertionError(f"a finding nobody verified against the real node: {json.dumps(f, indent=1)}")


def irq_count(irq: str, cpu: int) -> int:
    """How often IRQ `irq` fired on `cpu` (/proc/interrupts)."""
    lines = Path("/proc/interrupts").read_text().splitlines()
    cpus = lines[0].split()
    for line in lines[1:]:
        cols = line.split()
        if cols and cols[0] == f"{irq}:":
            return int(cols[1 + cpus.index(f"CPU{cpu}")])
    raise AssertionError(f"IRQ {irq} not in /proc/interrupts")


def gone(pid: int) -> bool:
    """The process has ended: reaped, or a zombie (this machine's PID 1 reaps orphans late or never: kubelet,
    started in a session of its own by tests/cluster/up, stays a zombie after SIGTERM)."""
    try:
        return bool(re.search(r"^State:\s*Z", Path(f"/proc/{pid}/status").read_text(), re.M))
    except OSError:
        return True
