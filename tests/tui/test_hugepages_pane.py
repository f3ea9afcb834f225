"""The container pane shows a pinned container's hugepages per NUMA node and the memory manager's blocks
(issue 37 item 5), marking a node none of its CPUs sit on; nothing where it has neither.

Node: 2 sockets x 2 cores x 2 threads (intel numbering: NUMA 0 = CPUs 0,1,4,5), reserved 0, rt/engine pinned
to 1,5 (NUMA 0); its cgroup's hugetlb.2MB.numa_stat "N0=4194304 N1=0" and hugetlb.1GB.numa_stat
"N0=0 N1=1073741824"; memory_manager_state v1 (checksum 0) gives it 1 GiB of memory on N0 and one 1 GiB page
on N1. By hand: "2MB N0 4.0 MiB", "1GB N1 1.0 GiB (not its CPUs' NUMA node)"; "memory 1.0 GiB on N0",
"hugepages-1Gi 1.0 GiB on N1 (not its CPUs' NUMA node)".
"""
import asyncio
import json
import shutil
from pathlib import Path

from pinscope.collectors.collect import Options, snapshot
from pinscope.collectors.sim.node import CtrSpec, NodeSpec, PodSpec, SimNode
from pinscope.tui.screens import container
from pinscope.tui.state import NodeView

GIB = 1 << 30


def _read(root: Path):
    return asyncio.run(asyncio.wait_for(snapshot("local", Options(root=str(root), frame_timeout=10)), 30))


def _pane(tmp_path, extra: bool, numa: bool = True) -> str:
    spec = NodeSpec(hostname="rt-node", sockets=2, cores=2, threads=2, numbering="intel", cgroup=2, driver="systemd",
                    policy="static", reserved="0",
                    pods=[PodSpec("engine-0", "rt", containers=[CtrSpec("engine", cpus="1,5")])])
    root = tmp_path / "node"
    SimNode(spec, root).write()
    first = _read(root).snapshot
    p = next(p for p in first.pods if p.name == "engine-0")
    c = p.containers[0]
    if extra:
        leaf = root / c.cgroup_path.lstrip("/")
        (leaf / "hugetlb.2MB.numa_stat").write_text("total=4194304 N0=4194304 N1=0\n")
        (leaf / "hugetlb.1GB.numa_stat").write_text(f"total={GIB} N0=0 N1={GIB}\n")
        mm = {"policyName": "Static", "machineState": {}, "checksum": 0,
              "entries": {p.uid: {"engine": [{"numaAffinity": [0], "type": "memory", "size": GIB},
                                             {"numaAffinity": [1], "type": "hugepages-1Gi", "size": GIB}]}}}
        (root / "var/lib/kubelet/memory_manager_state").write_text(json.dumps(mm))
    if not numa:  # CONFIG_NUMA=n, or a --root tree without node*/cpulist: where its CPUs sit is unknown
        shutil.rmtree(root / "sys/devices/system/node")
    v = NodeView("rt-node")
    v.apply(_read(root))
    p = next(p for p in v.snap.pods if p.name == "engine-0")
    return container.container_info(v, p, p.containers[0]).plain


def test_the_container_pane_shows_hugepages_per_numa_node(tmp_path):
    info = _pane(tmp_path, True)
    assert "\nhugepages in use: 1GB N1 1.0 GiB (not its CPUs' NUMA node)   2MB N0 4.0 MiB" in info
    assert "\nmemory manager: memory 1.0 GiB on N0   hugepages-1Gi 1.0 GiB on N1 (not its CPUs' NUMA node)" in info


def test_nothing_said_without_hugepages_or_memory_manager(tmp_path):
    info = _pane(tmp_path, False)
    assert "hugepages" not in info and "memory manager" not in info


def test_no_node_marked_far_when_its_cpus_numa_node_is_unknown(tmp_path):
    """/sys/devices/system/node missing: the same usage and blocks shown, none marked as another node than its
    CPUs' (before: every node was, its CPUs' node set being empty)."""
    info = _pane(tmp_path, True, numa=False)
    assert "\nhugepages in use: 1GB N1 1.0 GiB   2MB N0 4.0 MiB" in info, info
    assert "\nmemory manager: memory 1.0 GiB on N0   hugepages-1Gi 1.0 GiB on N1" in info, info
    assert "not its CPUs' NUMA node" not in info
