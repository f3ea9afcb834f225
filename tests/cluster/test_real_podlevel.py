"""A pod with pod-level resources (spec.resources, KEP 2837) on the real node (issue 33, item 4), for each kubelet
release: what pinscope says of it (each CPU's role and owners, the pod's QoS and its containers' CPUs in
`snapshot --json local`; `check local` with no false finding) equals what kubelet did with it.

Pod-level resources are on by default in both releases (PodLevelResources, beta since 1.34). The pod: Guaranteed
by its pod-level resources (the node's one allocatable CPU), a container `app` that asks for one whole CPU of its
own (request == limit, memory too), a container `side` and an init container with no resources of their own.
What kubelet does with it (pkg/kubelet/cm/cpumanager/policy_static.go of each release, topology manager scope
`container`, the default, as on this node):
- 1.35: the static policy skips every pod with pod-level resources: all of it on the shared pool, nothing in
  cpu_manager_state.
- 1.37 with PodLevelResourceManagers (beta, off by default; tests/cluster/up turns it on): `app` is pinned to a
  CPU of its own (entries[uid][app]) as in any Guaranteed pod; `side` stays on the shared pool. (The pod's CPUs
  as a whole, podEntries, only under topologyManagerScope: pod, policy_static.go AllocatePod.)
In both, every container without a CPU limit of its own runs under the pod's limit as its CFS quota
(kuberuntime_container_linux.go getCPULimit): 1 CPU here, as a Guaranteed 1-CPU container's would be.

The expected facts come from the API, kubelet's config and checkpoint and the containers' cgroups
(tests/cluster/realnode.py), never from pinscope.
"""
from __future__ import annotations

import uuid

import pytest
import yaml

from cluster import realnode as rn
from cluster.pytest_cluster import Cluster


def pod_level_spec(c: Cluster) -> dict:
    """Guaranteed by its pod-level resources (the node's one allocatable CPU): `app` with one whole CPU of its own,
    `side` and an init container with none."""
    s = rn.spec(c, f"pl-{uuid.uuid4().hex[:6]}", [rn.box(c, "app", "1", "32Mi"), rn.box(c, "side")],
                init=[rn.box(c, "init", command=["true"])])
    res = {"cpu": "1", "memory": "96Mi"}
    s["spec"]["resources"] = {"requests": res, "limits": res}
    return s


def gates(c: Cluster) -> dict[str, bool]:
    """The feature gates kubelet's config turns on or off."""
    conf = yaml.safe_load((c.kubelet_root / "config.yaml").read_text())
    return dict(conf.get("featureGates") or {})


@pytest.fixture(scope="module")
def podlevel(cluster: Cluster):
    s = pod_level_spec(cluster)
    try:
        (pod,) = rn.start(cluster, [s])
        assert pod["spec"].get("resources"), "the API server dropped spec.resources (PodLevelResources off?)"
        yield cluster, pod
    finally:
        rn.delete(cluster, [s])


def expected(c: Cluster, pod: dict) -> dict[int, tuple[str, set]]:
    """{cpu: (role, {(pod, namespace, container or None, uid)})} from kubelet's config and checkpoint; every
    running container's cgroup agrees with the checkpoint."""
    conf = rn.kubelet_config(c)
    reserved = rn.cpuset(conf["reservedSystemCPUs"])
    state = rn.cpu_state(c)
    uid, name = pod["metadata"]["uid"], pod["metadata"]["name"]
    running = rn.running_containers(pod)
    entries = (state.get("entries") or {}).get(uid, {})
    pod_set = rn.cpuset(((state.get("podEntries") or {}).get(uid) or {}).get("cpuSet", ""))
    owners: dict[int, set] = {}
    for cname, cpus in entries.items():
        if cname in running:
            assert rn.container_cpus(uid, running[cname]) == rn.cpuset(cpus), (cname, cpus)
        for cpu in rn.cpuset(cpus):
            owners.setdefault(cpu, set()).add((name, "default", cname, uid))
    for cpu in pod_set - set(owners):  # the pod's CPUs none of its containers holds
        owners.setdefault(cpu, set()).add((name, "default", None, uid))
    out = {}
    for cpu in sorted(rn.online_cpus()):
        out[cpu] = ("reserved", set()) if cpu in reserved else ("exclusive", owners[cpu]) if cpu in owners \
            else ("shared", set())
    return out


def test_what_kubelet_did_is_what_its_release_does(podlevel) -> None:
    """The premise, from kubelet's own checkpoint: 1.37 with PodLevelResourceManagers pins `app` alone, 1.35
    leaves the whole pod on the shared pool; neither holds the pod's CPUs as a whole (scope container)."""
    c, pod = podlevel
    assert pod["status"]["qosClass"] == "Guaranteed", pod["status"]
    state = rn.cpu_state(c)
    uid = pod["metadata"]["uid"]
    assert uid not in (state.get("podEntries") or {}), state
    if gates(c).get("PodLevelResourceManagers"):
        assert set(state["entries"][uid]) == {"app"} and len(rn.cpuset(state["entries"][uid]["app"])) == 1, state
    else:
        assert uid not in (state.get("entries") or {}), state


def test_roles_owners_and_qos(podlevel) -> None:
    c, pod = podlevel
    want = expected(c, pod)
    snap = rn.snapshot()
    got = {x["id"]: (x["role"], {(o["pod"], o["namespace"], o["container"], o["pod_uid"]) for o in x["owners"]})
           for x in snap["cpus"] if x["online"]}
    assert got == want, (got, want)
    assert set(snap["shared_pool"]) == rn.cpuset(rn.cpu_state(c)["defaultCpuSet"])
    uid = pod["metadata"]["uid"]
    (sp,) = [p for p in snap["pods"] if p["uid"] == uid]
    assert (sp["name"], sp["namespace"], sp["qos"]) == (pod["metadata"]["name"], "default", pod["status"]["qosClass"])
    entries = (rn.cpu_state(c).get("entries") or {}).get(uid, {})
    running = rn.running_containers(pod)
    got_c = {ct["name"]: ct for ct in sp["containers"] if ct["name"] in running}
    assert set(got_c) == set(running) == {"app", "side"}, sp["containers"]
    for cname, cid in running.items():
        ct = got_c[cname]
        assert ct["id"] == cid
        assert (None if ct["cpuset"] is None else set(ct["cpuset"])) == (
            rn.cpuset(entries[cname]) if cname in entries else None), ct
        assert set(ct["cpus_effective"]) == rn.container_cpus(uid, cid), ct
        assert ct["exclusive"] is (cname in entries), (ct, entries)


def test_no_false_finding(podlevel) -> None:
    """Nothing pinscope finds on the node with this pod is unverified (rn.verify_finding). SHARED_POOL_STARVED is
    checked here as it is defined, "empty or a single CPU" outside the reserved ones (rn.verify_finding knows
    only the empty pool): on 1.35 nothing is pinned and this two-CPU node's pool keeps its one unreserved CPU."""
    c, _ = podlevel
    res = rn.check()
    assert res.errors == [], res.errors
    reserved = rn.cpuset(rn.kubelet_config(c)["reservedSystemCPUs"])
    for f in res.findings:
        if f["code"] == "SHARED_POOL_STARVED":
            left = rn.cpuset(rn.cpu_state(c)["defaultCpuSet"]) - reserved
            assert len(left) <= 1 and set(f["cpus"]) == left, (f, left)
            continue
        rn.verify_finding(c, f)


def test_kubelets_allocation_checkpoint_read_as_kubelet_reads_it(podlevel) -> None:
    """pinscope reads kubelet's allocation checkpoint (its checksum verified, as kubelet verifies it) and knows
    from it which pods have pod-level resources, as the API says: 1.37 records them (PodLevelResources), 1.35 does
    not, and a Guaranteed pod whose container has no limits of its own tells them there."""
    from pinscope.collectors.parse.allocstate import parse_allocated_pods_state

    c, pod = podlevel
    path = c.kubelet_root / "allocated_pods_state"
    problems: list = []
    got = parse_allocated_pods_state(path.read_text(), str(path), problems)
    assert problems == [] and got is not None, problems
    uid = pod["metadata"]["uid"]
    assert got[uid].pod_level is (c.version != "v1.35.4"), got[uid]
    api = {p["metadata"]["uid"]: p for p in c.get("pods", "-A")["items"]}
    assert uid in got, got
    for u, a in got.items():  # (a pod deleted a moment ago may still be there: kubelet forgets it later)
        if u in api:
            assert a.pod_level_in(api[u]["status"].get("qosClass")) is bool(api[u]["spec"].get("resources")), \
                (a, api[u])
