"""The device plugin and kubelet's device checkpoint on the real node (issue 33), for each kubelet release.

tests/cluster/up runs our device plugin beside the kubelet (tests/cluster/src/device-plugin, written to kubelet's
device plugin API: DEVICE_COUNT devices of DEVICE_RESOURCE, each on NUMA node 0). A Guaranteed pod asks for one
CPU and one device; the real kubelet's device manager hands it a device, its topology manager (single-numa-node)
aligning it with the CPU on NUMA node 0, and writes its checkpoint, /var/lib/kubelet/device-plugins/
kubelet_internal_checkpoint (a constant of the API, whatever the root-dir). Then:
- the checkpoint's shape is what each release's pkg/kubelet/cm/devicemanager/checkpoint/checkpoint.go writes
  (SHAPE: 1.35.4 and 1.37.2 alike, Data {PodDeviceEntries, RegisteredDevices} with DeviceIDs keyed by NUMA node,
  and Checksum), its checksum the one device_samples.kubelet_checksum computes from the algorithm (FNV-1a 32
  over go-spew's rendering of checkpoint.checkpointData), the device the plugin's, the container's own environment names it;
- pinscope (`snapshot --json local`) reads it, checksum verified, and shows the device on its pod and container,
  on NUMA node 0, equal to the checkpoint and to what kubelet's PodResources List says; `check local` has no
  false finding;
- once the pod is deleted, kubelet keeps its entry in the checkpoint file (it rewrites the file only when it
  allocates, or a plugin's devices change), while its memory (PodResources) has let the device go: pinscope
  says so as an info finding whose every claim is true, never as devices held;
- up, asked to restart a process that died (the plugin), hands it no descriptor of its caller (a lock).

Every expected fact is read from kubelet (the API, its checkpoint, its PodResources socket), the plugin's
devices or the container, never from pinscope.
"""
from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import uuid
from pathlib import Path

import pytest

from cluster import realnode as rn
from cluster.pytest_cluster import UP, Cluster, _lib
from device_samples import kubelet_checksum

from pinscope.collectors import podresources as pr

CHECKPOINT = rn.DEVICE_CHECKPOINT
COUNT = int(_lib("DEVICE_COUNT"))
DEVICES = [f"widget-{i}" for i in range(COUNT)]  # the plugin's ids (its -prefix and 0, 1, ...)
ENV = "WIDGET_DEVICES"  # what the plugin's Allocate sets in the container

# The checkpoint's keys as each release wrote it (read from the real files; both releases' checkpoint.go have the
# V2 layout since 1.20: DeviceIDs keyed by NUMA node)
SHAPE = {
    "v1.35.4": ({"Data", "Checksum"}, {"PodDeviceEntries", "RegisteredDevices"},
                {"PodUID", "ContainerName", "ResourceName", "DeviceIDs", "AllocResp"}),
    "v1.37.2": ({"Data", "Checksum"}, {"PodDeviceEntries", "RegisteredDevices"},
                {"PodUID", "ContainerName", "ResourceName", "DeviceIDs", "AllocResp"}),
}


def read_checkpoint() -> dict:
    return json.loads(CHECKPOINT.read_text())


def entries_of(uid: str) -> list[dict]:
    return [e for e in read_checkpoint()["Data"]["PodDeviceEntries"] or [] if e["PodUID"] == uid]


def live(c: Cluster) -> pr.LiveView:
    """kubelet's PodResources API on its real socket, under the root-dir up gave it (List, GetAllocatableResources)."""
    view = pr.read_live(pr.socket_path(str(c.kubelet_root)))
    assert view.error is None, view.error
    return view


def device_pod(c: Cluster, name: str, guaranteed: bool = True) -> dict:
    """A pod whose container holds one device: Guaranteed (one CPU, 64 MiB), or else BestEffort (the device
    only: extended resources do not count for the QoS class)."""
    res = {"cpu": "1", "memory": "64Mi"} if guaranteed else {}
    box = rn.box(c, "work")
    box["resources"] = {"requests": {**res, c.device_resource: "1"}, "limits": {**res, c.device_resource: "1"}}
    return rn.spec(c, name, [box])


@pytest.fixture(scope="module")
def held(cluster: Cluster):
    """The device pod running -> (cluster, its API object, the device kubelet gave it); deleted at the end."""
    s = device_pod(cluster, f"dev-{uuid.uuid4().hex[:6]}")
    try:
        pod = rn.start(cluster, [s])[0]
        got = rn.poll("kubelet's device checkpoint to hold the pod's device", lambda: entries_of(pod["metadata"]["uid"]))
        assert len(got) == 1, got
        ids = [d for ds in got[0]["DeviceIDs"].values() for d in ds]
        assert len(ids) == 1, got
        yield cluster, pod, ids[0]
    finally:
        rn.delete(cluster, [s])


def test_kubelet_offers_the_plugins_devices(cluster: Cluster) -> None:
    """The plugin registered with this kubelet: the node's capacity and allocatable, the checkpoint's
    RegisteredDevices and kubelet's allocatable devices (PodResources) all name its devices, on NUMA node 0."""
    st = cluster.get("node", cluster.node_name)["status"]
    assert st["capacity"].get(cluster.device_resource) == str(COUNT), st["capacity"]
    assert st["allocatable"].get(cluster.device_resource) == str(COUNT), st["allocatable"]
    reg = read_checkpoint()["Data"]["RegisteredDevices"]
    assert sorted(reg[cluster.device_resource]) == DEVICES, reg
    offered = [d for d in live(cluster).allocatable_devices if d.resource == cluster.device_resource]
    assert sorted(i for d in offered for i in d.ids) == DEVICES, offered
    assert all(d.numa_nodes == (0,) for d in offered), offered


def test_the_checkpoint_kubelet_wrote(held) -> None:
    """Its shape per release, its checksum as kubelet computes it, the device on NUMA node 0 for the pod's
    container, and the device the container was really given (the plugin's Allocate answer, in its env)."""
    c, pod, dev = held
    text = CHECKPOINT.read_text()
    print(f"kubelet {c.version} kubelet_internal_checkpoint: {text}")
    doc = json.loads(text)
    top, data, entry = SHAPE[c.version]
    assert set(doc) == top, doc
    assert set(doc["Data"]) == data, doc
    mine = entries_of(pod["metadata"]["uid"])
    assert all(set(e) == entry for e in mine), mine
    assert doc["Checksum"] == kubelet_checksum(doc["Data"]), doc
    assert [(e["ContainerName"], e["ResourceName"], e["DeviceIDs"]) for e in mine] == [
        ("work", c.device_resource, {"0": [dev]})], mine
    assert dev in DEVICES
    # the plugin's answer, as kubelet keeps it (a ContainerAllocateResponse, protobuf) and as the container got it
    assert f"{ENV}".encode() in base64.b64decode(mine[0]["AllocResp"]), mine
    env = c.kubectl("exec", "-n", "default", pod["metadata"]["name"], "-c", "work", "--", "sh", "-c",
                    f"echo ${ENV}").stdout.strip()
    assert env == dev


def test_snapshot_shows_the_device_on_its_pod(held) -> None:
    """pinscope reads the checkpoint, its checksum verified, and puts the device on its pod's container and
    NUMA node: what the checkpoint says, and what kubelet's in-memory state says (PodResources List)."""
    c, pod, dev = held
    name, uid = pod["metadata"]["name"], pod["metadata"]["uid"]
    snap = rn.snapshot()
    cp = snap["kubelet"]["device_checkpoint"]
    assert cp == {"checksum_ok": True, "allocations": 1, "registered": {c.device_resource: COUNT}, "orphans": []}, cp
    assert not [e for e in snap["errors"] if "device" in (e["source"] + e["message"]).lower()], snap["errors"]
    p = next(p for p in snap["pods"] if p["uid"] == uid)
    assert (p["namespace"], p["name"]) == ("default", name)
    devices = {ctr["name"]: ctr["devices"] for ctr in p["containers"]}
    want = {"resource": c.device_resource, "id": dev, "numa_node": 0, "numa_from": "checkpoint", "pci": None}
    assert devices == {"work": [want]}, devices
    on_node = [d for n in snap["numa_nodes"] for d in n["devices"]]
    assert on_node == [{"resource": c.device_resource, "id": dev, "pod_uid": uid, "namespace": "default",
                        "pod": name, "container": "work"}], snap["numa_nodes"]
    # kubelet's in-memory state: the same container holds the same device, on the same NUMA node
    lp = next(x for x in live(c).pods if (x.namespace, x.name) == ("default", name))
    said = {ctr.name: [(d.resource, d.ids, d.numa_nodes) for d in ctr.devices] for ctr in lp.containers}
    assert said == {"work": [(c.device_resource, (dev,), (0,))]}, lp


def test_check_finds_nothing_false(held) -> None:
    """`check local` with a device held: the device's NUMA node is its CPU's (single-numa-node aligned them), the
    checkpoint is sound: no device finding, and every other finding true of the real node."""
    out = rn.check()
    assert not [f for f in out.findings if f["code"].startswith("DEVICE_")], out.findings
    assert not [e for e in out.errors if "device" in (e["source"] + e["message"]).lower()], out.errors
    for f in out.findings:
        rn.verify_finding(held[0], f)


def test_a_deleted_pods_entry_stays_in_the_file_its_device_free(cluster: Cluster) -> None:
    """Real behaviour no fixture had: kubelet writes its device checkpoint only when it hands out devices or a
    plugin's devices change, so a deleted pod's entry stays in the file while kubelet's in-memory state has let the device
    go (PodResources List). pinscope says it as an info finding whose claims are true, never as devices held."""
    c = cluster
    s = device_pod(c, f"dev-{uuid.uuid4().hex[:6]}", guaranteed=False)  # the node's one exclusive CPU may be held
    uid = rn.start(c, [s])[0]["metadata"]["uid"]
    rn.poll("kubelet's device checkpoint to hold the pod's device", lambda: entries_of(uid))
    rn.delete(c, [s])
    view = live(c)  # List: kubelet's UpdateAllocatedDevices drops the gone pod from its memory, not from the file
    assert not [p for p in view.pods if p.name == s["metadata"]["name"]], view.pods
    assert entries_of(uid), "kubelet rewrote its device checkpoint after the pod was deleted"
    out = rn.check()
    mine = [f for f in out.findings if f["code"] == "DEVICE_CHECKPOINT_ORPHAN" and uid in f["message"]]
    assert len(mine) == 1, out.findings
    f = mine[0]
    assert f["severity"] == "info" and "still names" in f["message"] and " holds " not in f["message"], f
    assert "kubelet was down" not in f["hint"] and "restart kubelet" not in f["hint"], f
    for f in out.findings:
        rn.verify_finding(c, f)


def test_up_hands_the_processes_it_starts_no_descriptor_of_its_caller(cluster: Cluster, tmp_path) -> None:
    """`flock LOCK tests/cluster/up` (tests/cluster's rule for the machine's one cluster) runs up with the lock's
    descriptor open: a daemon up starts must not keep it, or the lock stays held until `down`, which waits for
    it. up restarts a daemon that died (here the device plugin) given an open descriptor: the new one has none."""
    pids = cluster.run / "pids" / "device-plugin"
    old = int(pids.read_text())
    os.kill(old, signal.SIGTERM)
    rn.poll("the device plugin to stop", lambda: rn.gone(old))
    lock = tmp_path / "caller.lock"
    with open(lock, "w") as held:
        p = subprocess.run([str(UP), "--kubelet", cluster.version], capture_output=True, text=True, timeout=600,
                           stdin=subprocess.DEVNULL, pass_fds=(held.fileno(),))
    assert p.returncode == 0, p.stderr[-3000:]
    new = int(pids.read_text())
    assert new != old and not rn.gone(new)
    fds = [os.readlink(f) for f in Path(f"/proc/{new}/fd").iterdir()]
    assert str(lock) not in fds, fds
