"""A deleted pod's CPUs in the predictor (issue 36): kubelet's checkpoint keeps a gone pod's exclusive CPUs until
its next reconcile, but kubelet's CPU manager runs removeStaleState() before the next pod's hints and Allocate
(k/k v1.35.4, v1.37.2 pkg/kubelet/cm/cpumanager/cpu_manager.go), so they are free at admission. The predictor,
EXCLUSIVE_FRAGMENTED and the exporter's series count them free where the evidence says the pod is gone, say
so, and keep them held where it does not (collectors/fit/active.py).

The node: the real kubelet's tree (tests/trees/real-kubelet-v1.3x, 2 CPUs, CPU 0 reserved, CPU 1 the Guaranteed
pod g-…'s), copied, and the pod's deletion made as kubelet makes it: its pod cgroups gone (kubelet.go
SyncTerminatedPod), its checkpoint entry, kubelet pod directory and logs still there.
"""
from __future__ import annotations

import asyncio
import dataclasses
import shutil
from pathlib import Path

import pytest

from pinscope.collectors.collect import Options, snapshot
from pinscope.collectors.findings import evaluate
from pinscope.collectors.fit.active import inactive_pods
from pinscope.collectors.fit.predict import predict
from pinscope.collectors.fit.summary import node_fit
from pinscope.collectors.kube import ApiPod
from pinscope.collectors.podresources import LiveContainer, LivePod, LiveView
from pinscope.collectors.sim.node import CtrSpec, NodeSpec, PodSpec, SimNode

TREES = Path(__file__).resolve().parent.parent / "trees"


def _tree(tmp_path, version: str, deleted: bool):
    root = tmp_path / version
    shutil.copytree(TREES / f"real-kubelet-{version}", root, symlinks=True)
    uid = _g(root)[0]
    if deleted:
        for d in root.glob(f"sys/fs/cgroup/*/kubepods/pod{uid}"):
            shutil.rmtree(d)
    rep = asyncio.run(snapshot("local", Options(root=str(root)), samples=1, interval=1.0, timeout=60))
    return rep.snapshot


def _g(root: Path) -> tuple[str, str]:
    """The Guaranteed pod's (uid, name): its pod log directory default_g-…_<uid>."""
    (d,) = (root / "var/log/pods").glob("default_g-*")
    _, name, uid = d.name.split("_")
    return uid, name


RELEASES = ("v1.35.4", "v1.37.2")


@pytest.mark.parametrize("version", RELEASES)
def test_a_deleted_pods_cpus_are_what_kubelet_gives_next(tmp_path, version):
    """Fails before the fix: the checkpoint's entry held CPU 1, and the predictor said TopologyAffinityError."""
    held = predict(_tree(tmp_path / "a", version, deleted=False), 1, version)
    assert held.error is not None and held.error["kind"] == "TopologyAffinityError", held.as_json()
    snap = _tree(tmp_path / "b", version, deleted=True)
    uid, name = _g(tmp_path / "b" / version)
    assert uid in snap.state.entries  # the checkpoint still lists it, as kubelet leaves it until its reconcile
    ans = predict(snap, 1, version)
    assert ans.error is None and ans.cpus == [1], ans.as_json()
    (line,) = [a for a in ans.assumed if a.startswith("pod ")]
    assert line.startswith(f"pod default/{name} is gone (its pod cgroup is gone while its ") and "kubelet tore it down" in line
    assert "kubelet frees its CPU 1 before it admits the next pod, so it is counted free" in line
    assert ans.per_numa[0]["free_cpus"] == "1"


def _api(snap, uid: str, **kw) -> dict:
    p = next(p for p in snap.pods if p.uid == uid)
    return {uid: ApiPod(uid, p.namespace, p.name, "Guaranteed", None, **kw)}


def test_the_api_settles_it_either_way(tmp_path):
    version = "v1.37.2"
    gone = _tree(tmp_path / "a", version, deleted=True)
    there = _tree(tmp_path / "b", version, deleted=False)
    uid, _ = _g(tmp_path / "a" / version)
    # listed, running, not being deleted: active, cgroup or not (just admitted: kubelet writes the checkpoint first)
    assert inactive_pods(gone, _api(gone, uid, phase="Pending"), api_after=True) == {}
    assert predict(gone, 1, version, inactive={}).error["kind"] == "TopologyAffinityError"
    # the API read after the checkpoint lists it no more: gone, though its cgroups are still there
    assert "the API lists no such pod" in inactive_pods(there, {}, api_after=True)[uid]
    assert predict(there, 1, version, inactive=inactive_pods(there, {}, api_after=True)).cpus == [1]
    # an API round older than the checkpoint read (the TUI's, the exporter's) does not say it is gone
    assert inactive_pods(there, {}, api_after=False) == {}
    # finished: phase Succeeded or Failed, no deletion asked
    for phase in ("Succeeded", "Failed"):
        assert f"its phase is {phase}" in inactive_pods(there, _api(there, uid, phase=phase), api_after=True)[uid]
    # being deleted: kubelet counts it until its pod worker knows it terminated; the node's evidence decides
    deleting = _api(there, uid, phase="Running", deleting=True)
    assert inactive_pods(there, deleting, api_after=True) == {}
    assert uid in inactive_pods(gone, _api(gone, uid, phase="Running", deleting=True), api_after=True)


def test_a_static_pod_missing_from_the_api_is_not_freed(tmp_path):
    """A static pod is kubelet's from a file: the API not listing it (no mirror pod yet) says nothing."""
    snap = _tree(tmp_path, "v1.37.2", deleted=False)
    uid = next(iter(snap.state.entries))
    static = "0123456789abcdef0123456789abcdef"
    st = dataclasses.replace(snap.state, entries={static: snap.state.entries[uid]})
    mem = dataclasses.replace(snap.memory_state, entries={static: snap.memory_state.entries[uid]})  # its memory too
    snap = dataclasses.replace(snap, state=st, memory_state=mem,
                               pods=tuple(p._replace(uid=static) if p.uid == uid else p for p in snap.pods))
    assert inactive_pods(snap, {}, api_after=True) == {}


def test_kubelets_podresources_list_settles_it(tmp_path):
    version = "v1.37.2"
    gone = _tree(tmp_path / "a", version, deleted=True)
    there = _tree(tmp_path / "b", version, deleted=False)
    uid, name = _g(tmp_path / "a" / version)
    listed = LiveView("kubelet.sock", (LivePod("default", name, (LiveContainer("work", frozenset({1})),)),))
    assert inactive_pods(gone, live=listed) == {}  # kubelet's active pods name it: not freed
    assert "PodResources List" in inactive_pods(there, live=LiveView("kubelet.sock", ()))[uid]
    # kubelet not reached: no word from it; the node's evidence stands
    assert uid in inactive_pods(gone, live=LiveView("kubelet.sock", error="no such socket"))


def test_no_freeing_where_the_cgroup_tree_was_not_seen_whole(tmp_path):
    version = "v1.37.2"
    snap = _tree(tmp_path, version, deleted=True)
    # no pod cgroup found anywhere (a cgroupRoot pinscope does not find): an absent cgroup is unseen, not gone
    blind = dataclasses.replace(snap, pods=tuple(p._replace(cgroup_path=None) for p in snap.pods))
    assert inactive_pods(blind) == {}
    assert predict(blind, 1, version).error["kind"] == "TopologyAffinityError"


# --- EXCLUSIVE_FRAGMENTED and the exporter's series (tests/collectors/test_fit_finding.py's node) ---------------


def _frag(tmp_path, big_deleted: bool | None):
    """2 sockets x 8 cores x 2 threads, single-numa-node, 0,16 reserved; pods a (NUMA 0) and b (NUMA 1) of 6,
    and big (8, over both NUMA nodes): running, deleted (its cgroup gone, its logs left), or never there."""
    pods = [PodSpec("a", containers=[CtrSpec("app", cpus="1-3,17-19")]),
            PodSpec("b", containers=[CtrSpec("app", cpus="8-10,24-26")])]
    if big_deleted is not None:
        pods.append(PodSpec("big", containers=[CtrSpec("app", cpus="4-5,20-21,11-12,27-28")],
                            cgroup=not big_deleted))
    spec = NodeSpec(hostname="frag", sockets=2, cores=8, threads=2, topology_policy="single-numa-node",
                    reserved="0,16", pods=pods)
    sim = SimNode(spec, tmp_path / f"root-{big_deleted}").write()
    return asyncio.run(snapshot("local", Options(root=str(sim.root)), samples=1, interval=1.0, timeout=60))


def test_exclusive_fragmented_is_not_raised_by_a_deleted_pods_cpus(tmp_path):
    """Fails before the fix: the deleted 8-CPU pod made N 8 and held NUMA 1's CPUs, and the finding fired."""
    running = _frag(tmp_path, big_deleted=False)
    assert [f.code for f in evaluate(running.snapshot)].count("EXCLUSIVE_FRAGMENTED") == 1  # the control
    deleted = _frag(tmp_path, big_deleted=True)
    assert "EXCLUSIVE_FRAGMENTED" not in [f.code for f in evaluate(deleted.snapshot)]
    assert "EXCLUSIVE_FRAGMENTED" not in [f.code for f in deleted.findings]


def test_the_exporters_largest_fit_counts_a_deleted_pods_cpus_free(tmp_path):
    deleted = node_fit(_frag(tmp_path, big_deleted=True).snapshot)
    never = node_fit(_frag(tmp_path, big_deleted=None).snapshot)
    assert [p["largest_fit"] for p in deleted.per_numa] == [p["largest_fit"] for p in never.per_numa]
    assert [p["free_cpus"] for p in deleted.per_numa] == [p["free_cpus"] for p in never.per_numa]
    assert any(a.startswith("pod default/big is gone") for a in deleted.assumed), deleted.assumed
