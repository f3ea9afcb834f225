"""A real node's files, captured once (tests/trees/real-kubelet-v1.37.2, by tests/cluster/capture: README there),
read through the real probe under --root as every fixture tree is: the suite keeps a real kubelet's and a real
kernel's shape (issue 33) on machines where no cluster can run.

The expectations are written by hand from kubelet's own state in the tree, not from pinscope:
- cpu_manager_state (v4): defaultCpuSet "0", entries {9b4f04ac-…: {init: "1", work: "1"}} (kubelet keeps the
  init container's assignment beside the container that reuses its CPU); reservedSystemCPUs "0" (config.yaml);
- the pods as the API named them at capture (kubectl get pod -o json): name, namespace, qosClass;
- the kernel: /sys/devices/system/cpu/online 0-1, the container's cpuset.cpus, /proc/irq/N/effective_affinity_list,
  /proc/1/status.
"""
from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest

from pinscope.collectors.collect import Options, snapshot

TREE = Path(__file__).resolve().parents[1] / "trees" / "real-kubelet-v1.37.2"
G, B, E = ("9b4f04ac-7e85-45dc-a07f-e666ff500ed9", "ff9c977a-019d-40a3-a417-d38264c63f15",
           "3df497db-945b-40e2-99d4-30df1312a45b")
# uid -> (namespace, name, QoS class), as the API said
PODS = {G: ("default", "g-5ef742", "Guaranteed"), B: ("default", "b-5ef742", "Burstable"),
        E: ("default", "e-5ef742", "BestEffort")}
# CPU -> (role, owners (pod uid, container)): reserved = reservedSystemCPUs; exclusive = the state's entries
CPUS = {0: ("reserved", set()), 1: ("exclusive", {(G, "init"), (G, "work")})}
CONTAINERS = {G: {"work", "init"}, B: {"web"}, E: {"idle"}}
# IRQs whose effective affinity is CPU 1 in the tree (this VM's virtio, serial and ACPI IRQs)
IRQS_ON_1 = {25, 26, 31, 35, 36, 38, 42}


@pytest.fixture(scope="module")
def snap() -> dict:
    return asyncio.run(asyncio.wait_for(snapshot("local", Options(root=str(TREE), frame_timeout=20)), 60)).to_json()


def test_the_tree_is_small_whole_and_holds_no_secret():
    files = [p for p in TREE.rglob("*") if p.is_file() and not p.is_symlink()]
    assert sum(p.stat().st_size for p in files) < 400_000  # bytes: KB, not MB
    assert not [p for p in TREE.rglob("*") if p.is_dir() and not any(p.iterdir())]  # git keeps none
    assert not [p for p in TREE.rglob("*") if re.search(r"pki|token|kubeconfig|\.key$|\.crt$", p.name, re.I)]
    assert not [p for p in files if b"PRIVATE KEY" in p.read_bytes()]


def test_every_cpus_role_and_owner_is_kubelets(snap):
    assert [c["id"] for c in snap["cpus"]] == sorted(CPUS)
    for c in snap["cpus"]:
        role, owners = CPUS[c["id"]]
        assert c["role"] == role, c
        assert {(o["pod_uid"], o["container"]) for o in c["owners"]} == owners, c
        for o in c["owners"]:
            assert (o["namespace"], o["pod"]) == PODS[o["pod_uid"]][:2], o
    assert snap["roles_from"] == "state"
    assert snap["shared_pool"] == [0]


def test_every_pod_its_namespace_name_qos_and_containers(snap):
    got = {p["uid"]: (p["namespace"], p["name"], p["qos"]) for p in snap["pods"]}
    assert got == PODS
    for p in snap["pods"]:
        assert {c["name"] for c in p["containers"]} == CONTAINERS[p["uid"]], p
    work = next(c for p in snap["pods"] if p["uid"] == G for c in p["containers"] if c["name"] == "work")
    kernel = (TREE / work["cgroup"].lstrip("/") / "cpuset.cpus").read_text().strip()
    assert kernel == "1" and work["cpus_effective"] == [1] and work["exclusive"] is True


def test_kubelets_checkpoints_verify_under_the_name_kubelet_used(snap):
    k = snap["kubelet"]
    assert (k["found"], k["root_dir"], k["cgroup_driver"], k["reserved_cpus"]) == (
        True, "/var/lib/kubelet", "cgroupfs", [0])
    assert k["state_status"] == "ok"
    st, mem = k["state"], k["memory_state"]
    assert (st["version"], st["checksum_ok"], st["checksum_as"], st["default_cpuset"]) == (4, True, "data", [0])
    assert (mem["version"], mem["checksum_ok"], mem["checksum_as"]) == (3, True, "data")
    raw = json.loads((TREE / "var/lib/kubelet/cpu_manager_state").read_text())
    assert json.loads(raw["data"])["entries"] == {G: {"init": "1", "work": "1"}}  # what CPUS above says
    assert snap["cgroup"] == {"version": 1, "driver": "cgroupfs"}
    assert snap["errors"] == []


def test_no_false_finding(snap):
    """Each finding is true of the captured node, checked at its source in the tree:
    - IRQ_ON_EXCLUSIVE (warning), one per IRQ whose effective_affinity_list is the exclusive CPU 1;
    - SHARED_POOL_STARVED: 2 CPUs, 0 reserved, 1 exclusive: nothing left for the Burstable/BestEffort pods;
    - SYSTEM_NOT_CONFINED: /proc/1/status says Cpus_allowed_list 0-1 (no CPUAffinity for system services);
    - SAMPLES_NEEDED (info): one sample, so no rate findings can be judged.
    No other (no INTRUDER_TASK, no STATE_CGROUP_DRIFT, no IDENTITY_UNRESOLVED, no checksum finding)."""
    codes = [f["code"] for f in snap["findings"]]
    assert sorted(set(codes)) == ["IRQ_ON_EXCLUSIVE", "SAMPLES_NEEDED", "SHARED_POOL_STARVED", "SYSTEM_NOT_CONFINED"]
    irqs = {int(re.match(r"IRQ (\d+)", f["message"]).group(1)) for f in snap["findings"] if f["code"] == "IRQ_ON_EXCLUSIVE"}
    assert irqs == IRQS_ON_1 and codes.count("IRQ_ON_EXCLUSIVE") == len(IRQS_ON_1)
    for n in IRQS_ON_1:
        assert (TREE / f"proc/irq/{n}/effective_affinity_list").read_text().strip() == "1"
    for code in ("SHARED_POOL_STARVED", "SYSTEM_NOT_CONFINED", "SAMPLES_NEEDED"):
        assert codes.count(code) == 1, code
    init = (TREE / "proc/1/status").read_text()
    assert re.search(r"^Cpus_allowed_list:\s*0-1$", init, re.M)
