"""pinscope's roles and owners on the real node (issue 33, part two), for each kubelet release: every CPU's role
and owner (pod, namespace, container, QoS) in `snapshot --json local` and `check local` equal to what the API,
kubelet's real cpu_manager_state and the containers' real cgroups say, with the workloads a real node has (a
Guaranteed pod holding one exclusive CPU, with an init container that asked for it too; a Burstable and a
BestEffort pod: the node's one allocatable CPU leaves no room for a second CPU request); the checkpoint's
checksum verified under the name the release's own checkpoint.go hashes; no false finding.

Every expected fact is read from kubelet or the kernel by tests/cluster/realnode.py, never from pinscope.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from cluster import realnode as rn
from cluster.pytest_cluster import Cluster

# What each release's pkg/kubelet/cm/{cpu,memory}manager/state/checkpoint.go writes (read in the Go module
# cache, k8s.io/kubernetes@VERSION): 1.35 hashes CPUManagerCheckpoint / MemoryManagerCheckpoint; 1.37 writes
# v4 / memory v3, whose authoritative checksum is dataChecksum over `data` (pinscope's name for it: "data").
CHECKSUM_AS = {"v1.35.4": ("CPUManagerCheckpoint", "MemoryManagerCheckpoint"), "v1.37.2": ("data", "data")}
STATE_VERSION = {"v1.35.4": 2, "v1.37.2": 4}


@pytest.fixture(scope="module")
def node(cluster: Cluster):
    """The three workloads running -> (cluster, {role: pod object}); deleted at the end."""
    specs = rn.workloads(cluster)
    try:
        pods = rn.start(cluster, list(specs.values()))
        yield cluster, dict(zip(specs, pods))
    finally:
        rn.delete(cluster, list(specs.values()))


@pytest.fixture(scope="module")
def snap(node) -> dict:
    """`snapshot --json local` with the workloads running, taken once for the tests that compare it with kubelet
    and the kernel (nothing changes on the node between them; each run of pinscope takes seconds here)."""
    return rn.snapshot()


def expected_cpus(c: Cluster, pods: dict[str, dict]) -> dict[int, tuple[str, set]]:
    """{cpu: (role, {(pod, namespace, container, pod uid)})} from kubelet's config, its checkpoint, the API and
    the containers' cgroups."""
    conf = rn.kubelet_config(c)
    reserved = rn.cpuset(conf["reservedSystemCPUs"])
    state = rn.cpu_state(c)
    by_uid = {p["metadata"]["uid"]: p for p in pods.values()}
    out: dict[int, tuple[str, set]] = {}
    owners: dict[int, set] = {}
    for uid, entries in (state.get("entries") or {}).items():
        pod = by_uid.get(uid)
        assert pod is not None, f"an entry for a pod this test did not make: {uid} ({state})"
        running = rn.running_containers(pod)
        inits = {s["name"]: s for s in pod["status"].get("initContainerStatuses", [])}
        for name, cpus in entries.items():
            if name in running:  # the kernel agrees with kubelet's checkpoint
                assert rn.container_cpus(uid, running[name]) == rn.cpuset(cpus), (name, cpus)
            else:
                # kubelet keeps an init container's entry after it exited (its CPUs are reused by the app
                # containers: policy_static.go cpusToReuse); the API says it completed, its cgroup is gone.
                # pinscope lists it among the CPU's owners, as kubelet's state does (assemble/roles.py).
                assert inits[name]["state"]["terminated"]["reason"] == "Completed", inits
                assert not list(rn.CPUSET_ROOT.glob(f"kubepods*/**/pod{uid}/{inits[name]['containerID'].split('://', 1)[1]}"))
            for cpu in rn.cpuset(cpus):
                owners.setdefault(cpu, set()).add(
                    (pod["metadata"]["name"], pod["metadata"]["namespace"], name, uid))
    default = rn.cpuset(state["defaultCpuSet"])
    for cpu in sorted(rn.online_cpus()):
        if cpu in reserved:
            out[cpu] = ("reserved", set())
        elif cpu in owners:
            out[cpu] = ("exclusive", owners[cpu])
        else:
            assert cpu in default, (cpu, state)
            out[cpu] = ("shared", set())
    return out


def test_roles_and_owners(node, snap) -> None:
    c, pods = node
    want = expected_cpus(c, pods)
    assert any(role == "exclusive" for role, _ in want.values()), want  # the Guaranteed pod holds one
    got = {cpu["id"]: (cpu["role"], {(o["pod"], o["namespace"], o["container"], o["pod_uid"])
                                     for o in cpu["owners"]}) for cpu in snap["cpus"] if cpu["online"]}
    assert got == want, (got, want)
    assert set(snap["shared_pool"]) == rn.cpuset(rn.cpu_state(c)["defaultCpuSet"])


def test_pods_qos_and_cpusets(node, snap) -> None:
    """Each pod's QoS as the API says; each running container's id, kubelet's assignment as its checkpoint says
    (`cpuset`: null when it holds none), its effective CPUs as its cgroup says, exclusive exactly when kubelet's
    checkpoint holds it."""
    c, pods = node
    entries = rn.cpu_state(c).get("entries") or {}
    seen = {p["uid"]: p for p in snap["pods"]}
    for role, pod in pods.items():
        uid = pod["metadata"]["uid"]
        assert uid in seen, (role, uid, sorted(seen))
        sp = seen[uid]
        assert (sp["name"], sp["namespace"]) == (pod["metadata"]["name"], "default")
        assert sp["qos"] == pod["status"]["qosClass"], (sp["qos"], pod["status"]["qosClass"])
        running = rn.running_containers(pod)
        got = {ct["name"]: ct for ct in sp["containers"] if ct["name"] in running}
        assert set(got) == set(running), (role, sp["containers"])
        for name, cid in running.items():
            ct = got[name]
            cg = rn.container_cgroup(uid, cid)
            assert ct["id"] == cid
            want = rn.cpuset(entries[uid][name]) if name in entries.get(uid, {}) else None
            assert (None if ct["cpuset"] is None else set(ct["cpuset"])) == want, (role, name, ct)
            assert set(ct["cpus_effective"]) == rn.cpuset((cg / "cpuset.effective_cpus").read_text()), ct
            assert ct["exclusive"] is (name in entries.get(uid, {})), (role, name, ct, entries)


def test_checkpoints_verified(node, snap) -> None:
    c, _ = node
    k = snap["kubelet"]
    conf = rn.kubelet_config(c)
    assert k["found"] is True
    assert k["root_dir"] == str(c.kubelet_root)
    assert k["cpu_manager_policy"] == conf["cpuManagerPolicy"]
    assert k["topology_manager_policy"] == conf["topologyManagerPolicy"]
    assert set(k["reserved_cpus"]) == rn.cpuset(conf["reservedSystemCPUs"])
    assert k["state_status"] == "ok"
    state = rn.cpu_state(c)
    s = k["state"]
    assert s["version"] == STATE_VERSION[c.version]
    assert s["policy"] == state["policyName"]
    assert set(s["default_cpuset"]) == rn.cpuset(state["defaultCpuSet"])
    assert (s["checksum_ok"], s["checksum_as"]) == (True, CHECKSUM_AS[c.version][0])
    mem = k["memory_state"]
    assert Path(c.kubelet_root / "memory_manager_state").exists()
    assert (mem["checksum_ok"], mem["checksum_as"]) == (True, CHECKSUM_AS[c.version][1]), mem


def test_no_false_finding(node) -> None:
    """`check local` on the real node says only what the kernel and kubelet confirm: every finding's claim is
    checked here against its own source (rn.verify_finding), and any code it does not know fails the test."""
    c, pods = node
    res = rn.check()
    assert res.errors == [], res.errors
    for f in res.findings:
        rn.verify_finding(c, f)
    worst = {f["severity"] for f in res.findings}
    assert res.rc == (2 if "critical" in worst else 1 if "warning" in worst else 0), (res.rc, res.codes())
