"""The real node (issue 33), first contact, for each kubelet release: the node is Ready, a Guaranteed pod with
one CPU gets an exclusive CPU in the kubelet's real cpu_manager_state and in its container's real cpuset, and
`pinscope snapshot --json local` sees that CPU as exclusive to that pod. Then `tests/cluster/down` leaves
nothing behind (processes, mounts, cgroups, network namespaces, links), and `up` brings it back.

Every fact is read from the kubelet (its checkpoint, the API) or the kernel (cgroupfs), never from pinscope.
The checkpoint's shape each release writes is pinned here (CHECKPOINT_KEYS), from what the real releases
wrote.
"""
from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from cluster.pytest_cluster import Cluster, leftovers, run_down, run_up

REPO = Path(__file__).resolve().parents[2]

# the top-level keys of cpu_manager_state as each release wrote it (read from the real files): 1.35.4 writes
# the v2 shape; 1.37.2 the v4 shape, the v2 fields (with their checksum, not 0) beside `data` and `dataChecksum`
CHECKPOINT_KEYS = {
    "v1.35.4": {"policyName", "defaultCpuSet", "entries", "checksum"},
    "v1.37.2": {"policyName", "defaultCpuSet", "entries", "checksum", "data", "dataChecksum"},
}


def fnv1a32(s: str) -> int:
    h = 0x811C9DC5
    for b in s.encode():
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return h


def v2_checksum(state: dict) -> int:
    """kubelet's checksum of a v2 checkpoint: FNV-1a-32 of go-spew's rendering of the struct with Checksum 0,
    under the legacy type name CPUManagerCheckpoint (as collectors/parse/checkpoint.py verifies it), written out
    here from the algorithm, not from pinscope."""
    entries = " ".join(f"{pod}:map[{' '.join(f'{c}:{v}' for c, v in sorted(cs.items()))}]"
                       for pod, cs in sorted(state["entries"].items()))
    return fnv1a32(f"(*state.CPUManagerCheckpoint){{PolicyName:(string){state['policyName']} "
                   f"DefaultCPUSet:(string){state['defaultCpuSet']} "
                   f"Entries:(map[string]map[string]string)map[{entries}] Checksum:(checksum.Checksum)0}}")


def guaranteed_pod(c: Cluster, name: str) -> dict:
    res = {"cpu": "1", "memory": "64Mi"}
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "nodeName": c.node_name,  # also scheduled by the real kube-scheduler; bound here to be quick
            "automountServiceAccountToken": False,
            "terminationGracePeriodSeconds": 1,
            "containers": [{"name": "work", "image": c.busybox_image, "command": ["sleep", "3600"],
                            "resources": {"requests": res, "limits": res}}],
        },
    }


def test_node_ready(cluster: Cluster) -> None:
    node = cluster.get("node", cluster.node_name)
    ready = {c["type"]: c["status"] for c in node["status"]["conditions"]}
    assert ready["Ready"] == "True", node["status"]["conditions"]
    assert node["status"]["nodeInfo"]["kubeletVersion"] == cluster.version
    assert node["status"]["nodeInfo"]["containerRuntimeVersion"].startswith("containerd://2.")


def test_guaranteed_pod_gets_an_exclusive_cpu(cluster: Cluster) -> None:
    name = f"g-{uuid.uuid4().hex[:8]}"
    cluster.apply(guaranteed_pod(cluster, name))
    try:
        pod = cluster.wait_pod(name)
        assert pod["status"]["qosClass"] == "Guaranteed"
        uid = pod["metadata"]["uid"]
        cid = pod["status"]["containerStatuses"][0]["containerID"].split("://", 1)[1]

        # the kubelet's own checkpoint, under the root-dir the running kubelet was given
        state = json.loads((cluster.kubelet_root / "cpu_manager_state").read_text())
        print(f"kubelet {cluster.version} cpu_manager_state: {json.dumps(state)}")
        assert set(state) == CHECKPOINT_KEYS[cluster.version], state
        assert state["policyName"] == "static"
        assert state["entries"][uid] == {"work": "1"}, state
        assert state["defaultCpuSet"] == "0"
        assert state["checksum"] == v2_checksum(state)  # both releases: the legacy struct name
        if "data" in state:  # v4: the same content as a JSON string, and its own checksum
            assert json.loads(state["data"]) == {k: state[k] for k in ("policyName", "defaultCpuSet", "entries")}
            assert state["dataChecksum"] == fnv1a32("(string)" + state["data"])

        # the kernel: the container's cpuset is the exclusive CPU (cgroup v1, cgroupfs driver)
        cpuset = Path(f"/sys/fs/cgroup/cpuset/kubepods/pod{uid}/{cid}/cpuset.cpus")
        assert cpuset.read_text().strip() == "1"

        # pinscope, on this machine, finds the kubelet and its root-dir by itself
        p = subprocess.run([sys.executable, "-m", "pinscope.cli", "snapshot", "--json", "--root", "/", "local"],
                           capture_output=True, text=True, timeout=60, cwd=REPO)
        assert p.returncode in (0, 2), p.stderr  # 2: findings (a 2-CPU node may have some); never a crash
        snap = json.loads(p.stdout)
        assert snap["kubelet"]["found"] is True, snap["kubelet"]
        assert snap["kubelet"]["root_dir"] == str(cluster.kubelet_root)
        cpu1 = next(c for c in snap["cpus"] if c["id"] == 1)
        assert cpu1["role"] == "exclusive", cpu1
        assert [(o.get("pod"), o.get("namespace"), o.get("container")) for o in cpu1["owners"]] == [
            (name, "default", "work")], cpu1["owners"]
        assert 1 not in snap["shared_pool"]
    finally:
        cluster.delete_pod(name)


@pytest.mark.timeout(600)  # a pod, down, and a warm up (certificates, etcd, the API server's bootstrap)
def test_down_leaves_nothing(cluster: Cluster) -> None:
    """down with a pod running removes every trace; up brings the same release back for the tests after."""
    name = f"d-{uuid.uuid4().hex[:8]}"
    cluster.apply(guaranteed_pod(cluster, name))
    cluster.wait_pod(name)
    p = run_down()
    assert p.returncode == 0, p.stderr
    assert leftovers() == []
    again = run_up(cluster.version, timeout=600)
    assert again.version == cluster.version
    assert again.get("node", again.node_name)["status"]["nodeInfo"]["kubeletVersion"] == cluster.version
