"""EXCLUSIVE_FRAGMENTED on simulated nodes read by the real collector: it fires when N CPUs are free
but kubelet (its ported decision) would refuse a container of N, and stays silent when it would admit it."""

from __future__ import annotations

import asyncio

from pinscope.collectors.collect import Options, snapshot
from pinscope.collectors.findings import evaluate
from pinscope.collectors.sim.node import CtrSpec, NodeSpec, PodSpec, SimNode


def _node(tmp_path, topology_policy: str, pods: list[PodSpec]) -> list:
    # 2 sockets x 8 cores x 2 threads, one NUMA node per socket (intel numbering: siblings 16 apart)
    spec = NodeSpec(hostname="frag", sockets=2, cores=8, threads=2, topology_policy=topology_policy,
                    reserved="0,16", pods=pods)
    sim = SimNode(spec, tmp_path / "root").write()
    rep = asyncio.run(snapshot("local", Options(root=str(sim.root)), samples=1, interval=1.0, timeout=60))
    return [f for f in evaluate(rep.snapshot) if f.code == "EXCLUSIVE_FRAGMENTED"]


def _pods() -> list[PodSpec]:
    # NUMA 0 (CPUs 0-7,16-23): 6 pinned; NUMA 1 (8-15,24-31): 6 pinned, plus a 10-CPU pod spanning both
    return [
        PodSpec("a", containers=[CtrSpec("app", cpus="1-3,17-19")]),
        PodSpec("b", containers=[CtrSpec("app", cpus="8-10,24-26")]),
        PodSpec("big", containers=[CtrSpec("app", cpus="4-5,20-21,11-13,27-29")]),
    ]


def test_fires_when_the_free_cpus_are_split_over_numa_nodes(tmp_path):
    # the big pod holds 8: free NUMA 0 {6,7,22,23} = 4, NUMA 1 {13-15,29-31} = 6: 10 free >= 8, the largest
    # request; under single-numa-node kubelet cannot give 8 on one NUMA node
    pods = _pods()
    pods[2] = PodSpec("big", containers=[CtrSpec("app", cpus="4-5,20-21,11-12,27-28")])  # 8 CPUs
    found = _node(tmp_path, "single-numa-node", pods)
    assert len(found) == 1, found
    f = found[0]
    assert "TopologyAffinityError" in f.message and "0: 4" in f.message and "1: 6" in f.message
    assert set(f.cpus) == {6, 7, 22, 23, 13, 14, 15, 29, 30, 31}
    assert any(e.startswith("NUMA 0: free") for e in f.evidence)
    assert any("assumed" in e for e in f.evidence)


def test_silent_when_kubelet_would_admit_it(tmp_path):
    pods = _pods()
    pods[2] = PodSpec("big", containers=[CtrSpec("app", cpus="4-5,20-21,11-12,27-28")])
    assert _node(tmp_path, "none", pods) == []  # policy none spreads over NUMA nodes: 8 fit


def test_silent_when_fewer_cpus_are_free_than_requested(tmp_path):
    pods = _pods()  # the big pod holds 10: only 8 free, fewer than 10: not fragmentation, the node is full
    assert _node(tmp_path, "single-numa-node", pods) == []


def test_fit_cpus_sets_the_request_judged(tmp_path):
    """`check --fit-cpus N`: judge by a container of N (here 7: 8 CPUs free, 4 and 4 per NUMA node,
    none holds 7) instead of the largest pinned request (10: more than is free, so silent)."""
    import contextlib
    import io
    import json

    from pinscope.collectors.findings.fit import set_fit_cpus
    from pinscope.cli import main

    spec = NodeSpec(hostname="frag", sockets=2, cores=8, threads=2, topology_policy="single-numa-node",
                    reserved="0,16", pods=_pods())
    sim = SimNode(spec, tmp_path / "root").write()

    def fragmented(*extra) -> list:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            main(["check", "--root", str(sim.root), "local", "--json", *extra])
        return [f for f in json.loads(out.getvalue())["findings"] if f["code"] == "EXCLUSIVE_FRAGMENTED"]

    try:
        assert fragmented() == []
        (f,) = fragmented("--fit-cpus", "7")
        assert "refuse a container of 7" in f["message"]
    finally:
        set_fit_cpus(None)
