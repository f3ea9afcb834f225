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
import os
import re
import signal
import time
import uuid
from pathlib import Path

from cluster.pytest_cluster import Cluster

from pinscope.collectors import podresources as pr
from pinscope.collectors.assemble.live import compare
from pinscope.collectors.collect import Options, snapshot
from pinscope.collectors.fit.active import inactive_pods
from pinscope.collectors.fit.predict import FitAnswer, predict
from pinscope.collectors.kube import node_pods


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
    finds no disagreement between kubelet's in-memory state and its checkpoint."""
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


def _kubelet_pid() -> int:
    """The running kubelet's pid (the cluster's: tests/cluster/up started it)."""
    for d in Path("/proc").iterdir():
        try:
            if d.name.isdigit() and (d / "comm").read_text().strip() == "kubelet":
                return int(d.name)
        except OSError:
            continue
    raise AssertionError("no running kubelet")


def test_a_deleted_pods_cpus_are_predicted_free_as_the_real_kubelet_frees_them(cluster: Cluster) -> None:
    """Pod A holds the node's one allocatable CPU (1). kubelet is frozen (SIGSTOP: it reconciles nothing, writes
    nothing) and A is deleted from the API at once (--force --grace-period=0): kubelet's checkpoint still lists
    A, A's cgroups and containers are still there. pinscope predicts a 1-CPU pod from the node's files, with the
    API's pods of the node read after them: CPU 1, saying A is gone (from the files alone, A's cgroup there, it
    is held: a refusal, the window held open). kubelet thawed, pod B created: the real kubelet gives B CPU 1
    (removeStaleState before B's hints and Allocate), with A's entry still in the checkpoint or not."""
    c = cluster
    a, b = (f"fit-{x}-{uuid.uuid4().hex[:6]}" for x in "ab")
    try:
        c.apply(_pod(c, a, 1))
        uid = c.wait_pod(a)["metadata"]["uid"]
        assert _given(c, uid) == {1}
        pid = _kubelet_pid()
        os.kill(pid, signal.SIGSTOP)
        try:
            c.kubectl("delete", "pod", "-n", "default", a, "--force", "--grace-period=0", "--wait=false")
            rep = asyncio.run(snapshot("local", Options(), samples=1, interval=1.0, timeout=60))
            api_pods = node_pods(c.node_name, kubeconfig=c.kubeconfig)  # read after the checkpoint
            assert _given(c, uid) == {1} and uid not in api_pods  # the window: checkpoint yes, API no
            gone = inactive_pods(rep.snapshot, api_pods, api_after=True)
            want = predict(rep.snapshot, 1, kubelet_version=c.version, inactive=gone)
            held = predict(rep.snapshot, 1, kubelet_version=c.version)
        finally:
            os.kill(pid, signal.SIGCONT)
        assert held.error is not None and held.error["kind"] == "TopologyAffinityError", held.as_json()
        assert want.error is None and want.cpus == [1], want.as_json()
        assert any(x.startswith(f"pod default/{a} is gone (the API lists no such pod") for x in want.assumed), want.assumed
        c.apply(_pod(c, b, 1))
        got = _given(c, c.wait_pod(b)["metadata"]["uid"])
        print(f"kubelet {c.version}: A deleted, its entry in the checkpoint: pinscope predicted {want.cpus}, "
              f"kubelet gave B {sorted(got or ())}")
        assert got == set(want.cpus)
    finally:
        for name in (a, b):
            cluster.delete_pod(name)


def _mem_nodes(c: Cluster, uid: str) -> list[int] | None:
    """The NUMA nodes the real memory manager's checkpoint gives the pod's container (v3 `data` where there is one)."""
    doc = json.loads((c.kubelet_root / "memory_manager_state").read_text())
    if "data" in doc:
        doc = json.loads(doc["data"])
    blocks = (doc.get("entries") or {}).get(uid, {}).get("app")
    if blocks is None:
        return None
    return sorted({n for b in blocks for n in b.get("numaAffinity") or ()})


def test_the_memory_prediction_is_what_the_real_memory_manager_does(cluster: Cluster) -> None:
    """The Static memory manager of the node (tests/cluster/up: reservedMemory on NUMA 0). A pod of 1 CPU and
    256Mi: pinscope predicts from memory_manager_state, before the pod exists, the NUMA node its memory comes
    from; the real kubelet's checkpoint then gives the pod's container that node. That pod deleted, one of 1
    CPU and more memory than the node's allocatable (bound past the scheduler): kubelet's memory manager has no
    hint, the topology manager none from it, and its Allocate refuses the pod with the words pinscope predicted
    (the first pod's stale entries freed as kubelet frees them: the API's pods read after the files)."""
    c = cluster
    small, big = (f"fit-mem-{x}-{uuid.uuid4().hex[:6]}" for x in "sb")
    try:
        rep = asyncio.run(snapshot("local", Options(), samples=1, interval=1.0, timeout=60))
        gone = inactive_pods(rep.snapshot, node_pods(c.node_name, kubeconfig=c.kubeconfig), api_after=True)
        want = predict(rep.snapshot, 1, kubelet_version=c.version, inactive=gone, memory={"memory": 256 * 2**20})
        assert want.error is None and want.memory and want.memory["numa_nodes"] is not None, want.as_json()
        pod = _pod(c, small, 1)
        pod["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1", "memory": "256Mi"},
                                                     "limits": {"cpu": "1", "memory": "256Mi"}}
        c.apply(pod)
        got = _mem_nodes(c, c.wait_pod(small)["metadata"]["uid"])
        print(f"kubelet {c.version}: pinscope predicted memory on NUMA {want.memory['numa_nodes']}, kubelet: {got}")
        assert got == want.memory["numa_nodes"]
        c.delete_pod(small)
        rep = asyncio.run(snapshot("local", Options(), samples=1, interval=1.0, timeout=60))
        allocatable = sum(p["allocatable"]["memory"] for p in want.memory["per_numa"])
        ask = allocatable + 2**30
        gone = inactive_pods(rep.snapshot, node_pods(c.node_name, kubeconfig=c.kubeconfig), api_after=True)
        want = predict(rep.snapshot, 1, kubelet_version=c.version, inactive=gone, memory={"memory": ask})
        assert want.error is not None and "[memorymanager]" in want.error["message"], want.as_json()
        pod = _pod(c, big, 1)
        pod["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1", "memory": str(ask)},
                                                     "limits": {"cpu": "1", "memory": str(ask)}}
        c.apply(pod)
        st = _rejected(c, big)
        print(f"kubelet {c.version}: pinscope predicted {want.error}; kubelet: {st['reason']}: {st.get('message')}")
        assert st["reason"] == want.error["kind"] and want.error["message"] in st.get("message", "")
    finally:
        for name in (small, big):
            cluster.delete_pod(name)


def _device_numa(uid: str, resource: str) -> dict[int, list[str]]:
    """The real device manager's checkpoint: the pod's container's devices of `resource`, by NUMA node."""
    from cluster import realnode as rn

    doc = json.loads(rn.DEVICE_CHECKPOINT.read_text())
    out: dict[int, list[str]] = {}
    for e in doc["Data"]["PodDeviceEntries"] or []:
        if e["PodUID"] == uid and e["ContainerName"] == "app" and e["ResourceName"] == resource:
            for numa, ids in e["DeviceIDs"].items():
                out.setdefault(int(numa), []).extend(ids)
    return out


def _with_devices(c: Cluster, name: str, n: int) -> dict:
    pod = _pod(c, name, 1)
    res = {"cpu": "1", "memory": "64Mi", c.device_resource: str(n)}
    pod["spec"]["containers"][0]["resources"] = {"requests": res, "limits": res}
    return pod


def test_the_device_prediction_is_what_the_real_device_manager_does(cluster: Cluster) -> None:
    """up's device plugin (its devices on NUMA node 0) under single-numa-node. A pod of 1 CPU and one device:
    pinscope predicts, from kubelet's PodResources view (the devices' NUMA nodes) and the files, before the pod
    exists, the CPUs and the NUMA node its device comes from; the real kubelet's checkpoints then give the
    container those CPUs and a device of that pool on that node. That pod deleted, one asking one device more
    than the plugin has: no NUMA node holds that many, so the device manager's hints are none, and the topology
    manager refuses the pod as pinscope predicted (TopologyAffinityError)."""
    c = cluster
    ok, big = (f"fit-dev-{x}-{uuid.uuid4().hex[:6]}" for x in "ob")
    try:
        live = pr.read_live(pr.socket_path(str(c.kubelet_root)))
        assert live.error is None, live.error
        total = sum(len(d.ids) for d in live.allocatable_devices if d.resource == c.device_resource)
        assert total > 0, live.allocatable_devices
        rep = asyncio.run(snapshot("local", Options(), samples=1, interval=1.0, timeout=60))
        # an earlier test's deleted pod may still hold CPU 1 in the checkpoint: kubelet frees it at this admission
        gone = inactive_pods(rep.snapshot, node_pods(c.node_name, kubeconfig=c.kubeconfig), api_after=True)
        want = predict(rep.snapshot, 1, kubelet_version=c.version, inactive=gone, devices={c.device_resource: 1},
                       live=live, count=False)
        assert want.error is None and want.devices, want.as_json()
        placed = want.devices["per_resource"][c.device_resource]
        assert placed["numa_nodes"] == [0], want.as_json()
        c.apply(_with_devices(c, ok, 1))
        uid = c.wait_pod(ok)["metadata"]["uid"]
        got, cpus = _device_numa(uid, c.device_resource), _given(c, uid)
        print(f"kubelet {c.version}: pinscope predicted CPUs {want.cpus}, a device on NUMA {placed['numa_nodes']} "
              f"of {placed['tiers'][0]['devices']}; kubelet gave CPUs {sorted(cpus or ())}, devices {got}")
        assert cpus == set(want.cpus)
        assert list(got) == [0] and len(got[0]) == 1 and got[0][0] in placed["tiers"][0]["devices"]
        c.delete_pod(ok)
        live = pr.read_live(pr.socket_path(str(c.kubelet_root)))
        rep = asyncio.run(snapshot("local", Options(), samples=1, interval=1.0, timeout=60))
        gone = inactive_pods(rep.snapshot, node_pods(c.node_name, kubeconfig=c.kubeconfig), api_after=True)
        want = predict(rep.snapshot, 1, kubelet_version=c.version, inactive=gone, devices={c.device_resource: total + 1},
                       live=live, count=False)
        assert want.error is not None and want.error["kind"] == "TopologyAffinityError", want.as_json()
        c.apply(_with_devices(c, big, total + 1))
        st = _rejected(c, big)
        print(f"kubelet {c.version}: pinscope predicted {want.error}; kubelet: {st['reason']}: {st.get('message')}")
        assert st["reason"] == want.error["kind"] and want.error["message"] in st.get("message", "")
    finally:
        for name in (ok, big):
            cluster.delete_pod(name)
