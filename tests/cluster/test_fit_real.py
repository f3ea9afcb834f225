"""Issue 36 against the real kubelet (tests/cluster, each pinned release): what pinscope predicts from the
node's files *before* a Guaranteed pod is created is what the real kubelet then does with it, the CPUs it
gives or the admission error it refuses the pod with.

The node (tests/cluster/up): 2 CPUs, one NUMA node, cpuManagerPolicy static, reservedSystemCPUs 0,
topologyManagerPolicy single-numa-node, the Static memory manager. So the first pod of 1 CPU gets CPU 1,
and a second one, bound to the node past the scheduler (nodeName: it would keep it Pending for want of
allocatable CPU), reaches kubelet's admission with no CPU left: kubelet's topology manager, which runs
before its resource predicates in both releases (pkg/kubelet/kubelet.go: the container manager's admit
handler is appended before NewPredicateAdmitHandler), refuses it with TopologyAffinityError.

What kubelet did is read from kubelet itself (its checkpoint under its root-dir, the pod's status in the
API), never from pinscope; pinscope's prediction is made with the cluster's release (`kubelet_version`).
While the first pod runs, kubelet's PodResources API is asked on its real socket by pinscope's client
(collectors/podresources.py): List, GetAllocatableResources, and no disagreement with the checkpoint.
"""
from __future__ import annotations

import asyncio
import json
import re
import time
import uuid
from pathlib import Path

from cluster.pytest_cluster import Cluster

from pinscope.collectors import podresources as pr
from pinscope.collectors.assemble.live import compare
from pinscope.collectors.collect import Options, snapshot
from pinscope.collectors.fit.predict import FitAnswer, predict


def _pod(c: Cluster, name: str, cpus: int) -> dict:
    res = {"cpu": str(cpus), "memory": "64Mi"}
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"pinscope-test": "fit-real"}},
        "spec": {
            "nodeName": c.node_name,  # straight to kubelet's admission (the scheduler would wait for room)
            "automountServiceAccountToken": False,
            "terminationGracePeriodSeconds": 1,
            "restartPolicy": "Never",
            "containers": [{"name": "app", "image": c.busybox_image, "command": ["sleep", "3600"],
                            "resources": {"requests": res, "limits": res}}],
        },
    }


def _given(c: Cluster, uid: str) -> set[int] | None:
    """The CPUs kubelet's checkpoint gives the pod's container (the v4 `data` payload where there is one)."""
    doc = json.loads((c.kubelet_root / "cpu_manager_state").read_text())
    if "data" in doc:
        doc = json.loads(doc["data"])
    text = (doc.get("entries") or {}).get(uid, {}).get("app")
    if text is None:
        return None
    out: set[int] = set()
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


def _predict(c: Cluster, n: int) -> FitAnswer:
    rep = asyncio.run(snapshot("local", Options(), samples=1, interval=1.0, timeout=60))
    return predict(rep.snapshot, n, kubelet_version=c.version)


def _rejected(c: Cluster, name: str, timeout: float = 90) -> dict:
    """The pod's status once kubelet refused it (phase Failed with a reason), else fails with its status."""
    end = time.monotonic() + timeout
    st: dict = {}
    while time.monotonic() < end:
        st = c.get("pod", "-n", "default", name).get("status", {})
        if st.get("phase") == "Failed" and st.get("reason"):
            return st
        assert st.get("phase") != "Running", f"kubelet admitted {name}: {st}"
        time.sleep(0.5)
    raise AssertionError(f"{name} not refused within {timeout:g} s: {json.dumps(st)}")


def _cpus(text: str) -> set[int]:
    out: set[int] = set()
    for part in filter(None, text.strip().split(",")):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


def _kubelet_config() -> str:
    """The configuration file the running kubelet was started with (its --config, read from /proc)."""
    for d in Path("/proc").iterdir():
        try:
            if not d.name.isdigit() or (d / "comm").read_text().strip() != "kubelet":
                continue
            argv = (d / "cmdline").read_bytes().decode().split("\0")
        except OSError:
            continue
        for i, arg in enumerate(argv):
            if arg.startswith("--config="):
                return Path(arg.split("=", 1)[1]).read_text()
            if arg == "--config" and i + 1 < len(argv):
                return Path(argv[i + 1]).read_text()
    raise AssertionError("no running kubelet with a --config")


def _live_agrees(c: Cluster, name: str, given: set[int]) -> None:
    """kubelet's PodResources API, asked on its real socket (pinscope's client): the container's exclusive
    CPUs are the checkpoint's, the allocatable CPUs are the online ones but the reserved set, and pinscope
    finds no disagreement between kubelet's memory and its checkpoint."""
    view = pr.read_live(pr.socket_path(str(c.kubelet_root)))
    assert view.error is None, view.error
    assert view.exclusive().get(("default", name, "app")) == given, view
    m = re.search(r'^reservedSystemCPUs:\s*"?([0-9,-]+)"?', _kubelet_config(), re.M)
    assert m, "the kubelet's configuration names no reservedSystemCPUs"
    online = _cpus(Path("/sys/devices/system/cpu/online").read_text())
    assert view.allocatable_cpus == online - _cpus(m.group(1)), view.allocatable_cpus
    rep = asyncio.run(snapshot("local", Options(), samples=1, interval=1.0, timeout=60))
    assert compare(view, rep.snapshot) == ()
    live = rep.to_json()["podresources"]  # asked by the snapshot itself, as every tick that reads cgroups does
    assert live["asked"] and live["disagreements"] == [], live
    print(f"kubelet {c.version}: PodResources List {sorted(view.exclusive().get(('default', name, 'app'), ()))}, "
          f"allocatable {sorted(view.allocatable_cpus)}")


def _one(c: Cluster, name: str) -> str:
    """Predict a 1-CPU Guaranteed pod from the node's files, then create it: kubelet must do just that.
    -> "fits" or the refusal's kind."""
    want = _predict(c, 1)
    assert want.readable, want.as_json()
    c.apply(_pod(c, name, 1))
    if want.error is None:
        assert want.cpus, want.as_json()
        pod = c.wait_pod(name)
        got = _given(c, pod["metadata"]["uid"])
        print(f"kubelet {c.version}: pinscope predicted CPUs {want.cpus}, kubelet gave {sorted(got or ())}")
        assert got == set(want.cpus)
        _live_agrees(c, name, got)
        return "fits"
    st = _rejected(c, name)
    print(f"kubelet {c.version}: pinscope predicted {want.error}; kubelet: {st['reason']}: {st.get('message')}")
    assert st["reason"] == want.error["kind"]
    assert want.error["message"] in st.get("message", "")
    return want.error["kind"]


def test_the_prediction_before_the_pod_is_what_the_real_kubelet_does(cluster: Cluster) -> None:
    """Two pods of 1 CPU, one after the other: on the node as up leaves it, the first gets CPU 1 and the
    second is refused; each was predicted from the files before it was created."""
    names = [f"fit-{uuid.uuid4().hex[:8]}" for _ in range(2)]
    try:
        seen = [_one(cluster, name) for name in names]
        assert seen[-1] == "TopologyAffinityError", seen  # the node's one allocatable CPU is taken by then
    finally:
        for name in names:
            cluster.delete_pod(name)
