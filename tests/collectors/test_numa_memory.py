"""MEMS_NOT_LOCAL, hand-written expectations: with memoryManagerPolicy Static, a pinned container whose
memory may come from every NUMA node (the unrestricted default) is flagged, since the memory manager should
have pinned its memory beside its CPUs; under policy None the same container is the node's default and is
not flagged (it would fire on every multi-NUMA node)."""
from __future__ import annotations

import pytest
from helpers import read_sim

from pinscope.collectors.sim.node import CtrSpec, NodeSpec, PodSpec


def node(flags: list[str]) -> NodeSpec:
    """2 sockets x 2 cores x 2 threads (NUMA 0: CPUs 0,1,4,5; NUMA 1: 2,3,6,7); rt/app pinned to 1,5 on
    NUMA 0, its cpuset.mems 0-1 (every node)."""
    return NodeSpec(hostname="t", sockets=2, cores=2, threads=2, reserved="0,4", init_affinity="0,4", flags=flags,
                    pods=[PodSpec("rt", "prod", containers=[CtrSpec("app", cpus="1,5", mems="0-1")])])


@pytest.mark.parametrize("flags, fires", [
    (["--memory-manager-policy=Static"], True),
    ([], False),
], ids=["static", "none"])
def test_mems_not_local_under_the_memory_managers_static_policy(tmp_path, flags, fires):
    r = read_sim(node(flags), tmp_path, samples=1)
    assert r.snapshot.kubelet.memory_manager_policy == ("Static" if fires else "None")
    got = [(f.code, f.severity, f.pod, f.container, f.cpus) for f in r.findings if f.code == "MEMS_NOT_LOCAL"]
    assert got == ([("MEMS_NOT_LOCAL", "warning", "rt", "app", (1, 5))] if fires else [])
    assert [f.code for f in r.findings if f.severity != "info"] == (["MEMS_NOT_LOCAL"] if fires else [])
