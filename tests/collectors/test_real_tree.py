"""Real nodes' files, captured once by tests/cluster/capture (tests/trees/README.md says when and how), read
through the real probe under --root as every fixture tree is: the suite keeps a real kubelet's and a real
kernel's shape (issue 33) on machines where no cluster can run.

The expectations are written by hand from kubelet's own state in each tree, not from pinscope:
- cpu_manager_state (v4 from 1.37.2, v2 from 1.35.4): defaultCpuSet "0", entries {<g>: {init: "1", work: "1"}}
  (kubelet keeps the init container's assignment beside the container that reuses its CPU);
  reservedSystemCPUs "0" (config.yaml);
- device-plugins/kubelet_internal_checkpoint: one entry, {<g>, work, example.com/widget, {"0": [the widget]}},
  RegisteredDevices widget-0 and widget-1, its Checksum;
- the pods as the API named them at capture (what `capture --pods` printed from kubectl's JSON): name, namespace,
  qosClass;
- the kernel: /sys/devices/system/cpu/online 0-1, the container's cpuset.cpus, /proc/irq/N/effective_affinity_list,
  /proc/1/status.
"""
from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from pinscope.collectors.collect import Options, snapshot

from device_samples import kubelet_checksum

TREES = Path(__file__).resolve().parents[1] / "trees"


@dataclass(frozen=True)
class Real:
    """What kubelet and the API said of one captured node (the pods of cluster/realnode.py's `workloads`)."""

    g: str  # the Guaranteed pod's uid (init container `init`, container `work`, CPU 1 exclusive)
    b: str  # Burstable (container `web`, memory only)
    e: str  # BestEffort (container `idle`)
    tag: str  # the pods' names are g-TAG, b-TAG, e-TAG
    state: tuple[int, str]  # cpu_manager_state: (version, the struct name its checksum verifies under)
    memory: tuple[int, str]  # memory_manager_state: the same
    # the device checkpoint: (the widget kubelet gave the Guaranteed pod's `work`, on NUMA node 0; its Checksum)
    device: tuple[str, int]

    @property
    def pods(self) -> dict[str, tuple[str, str, str]]:  # uid -> (namespace, name, QoS class), as the API said
        return {self.g: ("default", f"g-{self.tag}", "Guaranteed"), self.b: ("default", f"b-{self.tag}", "Burstable"),
                self.e: ("default", f"e-{self.tag}", "BestEffort")}

    @property
    def cpus(self) -> dict[int, tuple[str, set[tuple[str, str]]]]:
        # CPU -> (role, owners (pod uid, container)): reserved = reservedSystemCPUs "0"; exclusive = the
        # state's entries {g: {init: "1", work: "1"}}
        return {0: ("reserved", set()), 1: ("exclusive", {(self.g, "init"), (self.g, "work")})}

    @property
    def containers(self) -> dict[str, set[str]]:
        return {self.g: {"work", "init"}, self.b: {"web"}, self.e: {"idle"}}


REAL = {
    # 1.37.2 writes the v4 CPU checkpoint (kubelet verifies only dataChecksum over `data`) and memory v3
    "real-kubelet-v1.37.2": Real("2e69c0a8-ec26-4ed7-aa5f-0586bc67c111", "f7f761e4-611b-4b41-b2f8-2698e7a678a3",
                                 "ccc5ca7f-9438-4d3f-b356-e70fd9e9071a", "d73c50", (4, "data"), (3, "data"),
                                 ("widget-0", 1982096820)),
    # 1.35.4 writes v2 (checksum over CPUManagerCheckpoint) and memory v1 (MemoryManagerCheckpoint)
    "real-kubelet-v1.35.4": Real("6938781f-209c-4d2c-9ff0-98b620b8eb28", "2b73af25-d0ef-4076-9e12-5accb6f1cb20",
                                 "261a7093-9e27-4679-8bb5-6a47c63909c5", "98e7e9", (2, "CPUManagerCheckpoint"),
                                 (1, "MemoryManagerCheckpoint"), ("widget-1", 3113619698)),
}
# IRQs whose effective affinity is CPU 1 in both trees and that fired there (/proc/interrupts' CPU1 column > 0):
# this VM's virtio, serial and ACPI IRQs; 33 and 40 (virtio4-config, virtio3-config) are on CPU 1 too, never fired
IRQS_ON_1 = {25, 26, 29, 31, 35, 36, 38, 42}
IRQS_SILENT_ON_1 = {33, 40}
WIDGET = "example.com/widget"  # tests/cluster's device plugin: widget-0 and widget-1, both on NUMA node 0
DEVICES = "var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"  # a fixed path, whatever the root-dir


@pytest.fixture(scope="module", params=sorted(REAL))
def tree(request) -> tuple[Path, Real, dict]:
    root = TREES / request.param
    rep = asyncio.run(asyncio.wait_for(snapshot("local", Options(root=str(root), frame_timeout=20)), 60))
    return root, REAL[request.param], rep.to_json()


def test_every_captured_tree_is_checked():
    assert sorted(p.name for p in TREES.iterdir() if p.is_dir()) == sorted(REAL)


@pytest.mark.parametrize("name", sorted(REAL))
def test_the_tree_is_small_whole_and_holds_no_secret(name):
    root = TREES / name
    files = [p for p in root.rglob("*") if p.is_file() and not p.is_symlink()]
    assert sum(p.stat().st_size for p in files) < 400_000  # bytes: KB, not MB
    assert not [p for p in root.rglob("*") if p.is_dir() and not any(p.iterdir())]  # git keeps none
    assert not [p for p in root.rglob("*") if re.search(r"pki|token|kubeconfig|\.key$|\.crt$", p.name, re.I)]
    assert not [p for p in files if b"PRIVATE KEY" in p.read_bytes()]


def test_every_cpus_role_and_owner_is_kubelets(tree):
    _, real, snap = tree
    assert [c["id"] for c in snap["cpus"]] == sorted(real.cpus)
    for c in snap["cpus"]:
        role, owners = real.cpus[c["id"]]
        assert c["role"] == role, c
        assert {(o["pod_uid"], o["container"]) for o in c["owners"]} == owners, c
        for o in c["owners"]:
            assert (o["namespace"], o["pod"]) == real.pods[o["pod_uid"]][:2], o
    assert snap["roles_from"] == "state"
    assert snap["shared_pool"] == [0]


def test_every_pod_its_namespace_name_qos_and_containers(tree):
    root, real, snap = tree
    got = {p["uid"]: (p["namespace"], p["name"], p["qos"]) for p in snap["pods"]}
    assert got == real.pods
    for p in snap["pods"]:
        assert {c["name"] for c in p["containers"]} == real.containers[p["uid"]], p
    work = next(c for p in snap["pods"] if p["uid"] == real.g for c in p["containers"] if c["name"] == "work")
    kernel = (root / work["cgroup"].lstrip("/") / "cpuset.cpus").read_text().strip()
    assert kernel == "1" and work["cpus_effective"] == [1] and work["exclusive"] is True


def test_kubelets_checkpoints_verify_under_the_name_kubelet_used(tree):
    root, real, snap = tree
    k = snap["kubelet"]
    assert (k["found"], k["root_dir"], k["cgroup_driver"], k["reserved_cpus"]) == (
        True, "/var/lib/kubelet", "cgroupfs", [0])
    assert k["state_status"] == "ok"
    st, mem = k["state"], k["memory_state"]
    assert (st["version"], st["checksum_as"], st["checksum_ok"], st["default_cpuset"]) == (*real.state, True, [0])
    assert (mem["version"], mem["checksum_as"], mem["checksum_ok"]) == (*real.memory, True)
    raw = json.loads((root / "var/lib/kubelet/cpu_manager_state").read_text())
    raw = json.loads(raw["data"]) if "data" in raw else raw  # kubelet reads only `data` where there is one
    assert raw["entries"] == {real.g: {"init": "1", "work": "1"}}  # what Real.cpus says
    assert snap["cgroup"] == {"version": 1, "driver": "cgroupfs"}
    assert snap["errors"] == []


def test_no_false_finding(tree):
    """Each finding is true of the captured node, checked at its source in the tree:
    - IRQ_ON_EXCLUSIVE (warning), one per IRQ whose effective_affinity_list is the exclusive CPU 1 and that fired
      there (not the two on CPU 1 that never fired);
    - SHARED_POOL_STARVED: 2 CPUs, 0 reserved, 1 exclusive: nothing left for the Burstable/BestEffort pods;
    - SYSTEM_NOT_CONFINED: /proc/1/status says Cpus_allowed_list 0-1 (no CPUAffinity for system services);
    - SAMPLES_NEEDED (info): one sample, so no rate findings can be judged.
    No other (no INTRUDER_TASK, no STATE_CGROUP_DRIFT, no IDENTITY_UNRESOLVED, no checksum finding, no DEVICE_*:
    the widget and CPU 1 are both on NUMA node 0)."""
    root, _, snap = tree
    codes = [f["code"] for f in snap["findings"]]
    assert sorted(set(codes)) == ["IRQ_ON_EXCLUSIVE", "SAMPLES_NEEDED", "SHARED_POOL_STARVED", "SYSTEM_NOT_CONFINED"]
    irqs = {int(m.group(1)) for f in snap["findings"] if (m := re.match(r"IRQ (\d+) .* exclusive CPU 1$", f["message"]))}
    assert irqs == IRQS_ON_1 and codes.count("IRQ_ON_EXCLUSIVE") == len(IRQS_ON_1)
    fired = {int(row[0].rstrip(":")): int(row[2]) for line in (root / "proc/interrupts").read_text().splitlines()[1:]
             if (row := line.split()) and row[0].rstrip(":").isdigit()}  # IRQ -> its count on CPU1
    for n in IRQS_ON_1 | IRQS_SILENT_ON_1:
        assert (root / f"proc/irq/{n}/effective_affinity_list").read_text().strip() == "1"
        assert (fired[n] > 0) == (n in IRQS_ON_1), n
    for code in ("SHARED_POOL_STARVED", "SYSTEM_NOT_CONFINED", "SAMPLES_NEEDED"):
        assert codes.count(code) == 1, code
    init = (root / "proc/1/status").read_text()
    assert re.search(r"^Cpus_allowed_list:\s*0-1$", init, re.M)


def test_the_device_kubelet_gave_is_shown_on_its_pod(tree):
    """kubelet's device checkpoint as the real kubelet wrote it: one entry, the Guaranteed pod's container `work`
    holding one widget on NUMA node 0 (single-numa-node put it beside CPU 1), the plugin's two widgets registered,
    its Checksum kubelet's (device_samples.kubelet_checksum: the algorithm written out, not pinscope's). pinscope
    verifies it and shows that device on that container and that NUMA node, and no other."""
    root, real, snap = tree
    dev, checksum = real.device
    raw = json.loads((root / DEVICES).read_text())
    assert raw["Checksum"] == checksum == kubelet_checksum(raw["Data"])
    assert [(e["PodUID"], e["ContainerName"], e["ResourceName"], e["DeviceIDs"])
            for e in raw["Data"]["PodDeviceEntries"]] == [(real.g, "work", WIDGET, {"0": [dev]})]
    assert {r: sorted(ids) for r, ids in raw["Data"]["RegisteredDevices"].items()} == {WIDGET: ["widget-0", "widget-1"]}
    assert snap["kubelet"]["device_checkpoint"] == {"checksum_ok": True, "allocations": 1, "registered": {WIDGET: 2},
                                                    "orphans": []}
    held = {(p["uid"], c["name"]): c["devices"] for p in snap["pods"] for c in p["containers"] if c["devices"]}
    assert held == {(real.g, "work"): [{"resource": WIDGET, "id": dev, "numa_node": 0, "numa_from": "checkpoint",
                                        "pci": None}]}
    ns, name, _ = real.pods[real.g]
    assert {n["id"]: n["devices"] for n in snap["numa_nodes"]} == {0: [
        {"resource": WIDGET, "id": dev, "pod_uid": real.g, "namespace": ns, "pod": name, "container": "work"}]}
