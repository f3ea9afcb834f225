"""Hugepages per NUMA node (issue 37 item 5), both ways, on trees shaped as real nodes write them.

Node: 2 sockets x 2 cores x 2 threads (intel numbering: NUMA 0 = CPUs 0,1,4,5; NUMA 1 = 2,3,6,7), reserved 0,
rt/engine pinned to 1,5 (NUMA 0). Expected values are worked out by hand in each test.

Shapes:
- the node: /sys/devices/system/node/nodeN/hugepages/hugepages-<kB>kB/{nr,free}_hugepages, pages.
- cgroup v2: hugetlb.<size>.numa_stat in the container's cgroup, one line "total=B N0=B N1=B" (bytes).
- cgroup v1: the hugetlb hierarchy's twin of the cpuset cgroup: hugetlb.<size>.usage_in_bytes (bytes, no NUMA
  split); since late 2021 also hugetlb.<size>.numa_stat, two lines: the cgroup's own ("total=") and
  "hierarchical_total=" (mm/hugetlb_cgroup.c hugetlb_cgroup_read_numa_stat, legacy).
- memory_manager_state: machineState[numa].memoryMap["hugepages-2Mi"/"hugepages-1Gi"/"memory"] tables and
  entries' blocks of type hugepages-<size>; v1 (checksum 0, accepted as is), v2 (podEntries; signed with the
  parser's spew, which test_checkpoints checks against kubelet's own sums) and v3 (data +
  dataChecksum, FNV-1a 32 of "(string)"+data) keep the same shapes (REAL_V3: the file a kubelet v1.37.2 wrote on
  this machine, 2026-12-06; REAL_V1: kubelet v1.35.4's, the v1 shape signed over the legacy name).
"""
import json
import shutil

from test_checkpoints import ENT, MS, mem
from test_readiness_findings import codes, read, spec, write

from pinscope.collectors.assemble.readiness import ContainerReadiness
from pinscope.collectors.model import MemoryAssignment, MemoryTable
from pinscope.collectors.parse.memstate import _struct, spew  # spew: checked against kubelet's sums (test_checkpoints)
from pinscope.collectors.parse.readiness import parse_hugetlb_numa
from pinscope.collectors.sim.node import CtrSpec, PodSpec, SimNode

NODE = "sys/devices/system/node"
GIB, MIB2 = 1 << 30, 2 << 20

# /var/lib/kubelet/memory_manager_state as kubelet v1.37.2 wrote it (memoryManagerPolicy Static, one NUMA node,
# one Guaranteed pod "work" with 64 MiB): the outer v1 fields and the same state inside "data".
REAL_V3 = (
    '{"policyName":"Static","machineState":{"0":{"numberOfAssignments":1,"memoryMap":{"hugepages-1Gi":{"total":0,'
    '"systemReserved":0,"allocatable":0,"reserved":0,"free":0},"hugepages-2Mi":{"total":0,"systemReserved":0,'
    '"allocatable":0,"reserved":0,"free":0},"memory":{"total":25276182528,"systemReserved":536870912,'
    '"allocatable":24739311616,"reserved":67108864,"free":24672202752}},"cells":[0]}},"entries":{'
    '"4ae770c2-edf5-4d78-84eb-bd8e46782f56":{"work":[{"numaAffinity":[0],"type":"memory","size":67108864}]}},'
    '"checksum":3468428568,"data":"{\\"policyName\\":\\"Static\\",\\"machineState\\":{\\"0\\":{\\"numberOfAssignments'
    '\\":1,\\"memoryMap\\":{\\"hugepages-1Gi\\":{\\"total\\":0,\\"systemReserved\\":0,\\"allocatable\\":0,\\"reserved'
    '\\":0,\\"free\\":0},\\"hugepages-2Mi\\":{\\"total\\":0,\\"systemReserved\\":0,\\"allocatable\\":0,\\"reserved\\":0,'
    '\\"free\\":0},\\"memory\\":{\\"total\\":25276182528,\\"systemReserved\\":536870912,\\"allocatable\\":24739311616,'
    '\\"reserved\\":67108864,\\"free\\":24672202752}},\\"cells\\":[0]}},\\"entries\\":{\\"4ae770c2-edf5-4d78-84eb-'
    'bd8e46782f56\\":{\\"work\\":[{\\"numaAffinity\\":[0],\\"type\\":\\"memory\\",\\"size\\":67108864}]}}}",'
    '"dataChecksum":1857879863}')


# The same node under kubelet v1.35.4 (2026-12-06, this machine): the v1 shape, signed over the legacy name.
REAL_V1 = (
    '{"policyName":"Static","machineState":{"0":{"numberOfAssignments":1,"memoryMap":{"hugepages-1Gi":{"total":0,'
    '"systemReserved":0,"allocatable":0,"reserved":0,"free":0},"hugepages-2Mi":{"total":0,"systemReserved":0,'
    '"allocatable":0,"reserved":0,"free":0},"memory":{"total":25276182528,"systemReserved":536870912,'
    '"allocatable":24739311616,"reserved":67108864,"free":24672202752}},"cells":[0]}},"entries":{'
    '"5f93e853-746a-4a19-a70d-f75e189da590":{"work":[{"numaAffinity":[0],"type":"memory","size":67108864}]}},'
    '"checksum":2023128669}')


def fnv1a32(text: str) -> int:
    """FNV-1a 32, written out here (not the parser's) to sign a v3 file the way kubelet does."""
    h = 2166136261
    for b in text.encode():
        h = ((h ^ b) * 16777619) & 0xFFFFFFFF
    return h


def two_numa(tmp_path, cgroup: int = 2, mems: str | None = None):
    kw = dict(sockets=2, cores=2, threads=2, numbering="intel", reserved="0", cgroup=cgroup,
              driver="systemd" if cgroup == 2 else "cgroupfs",
              pods=[PodSpec("engine-0", "rt", containers=[CtrSpec("engine", cpus="1,5", mems=mems)])])
    root = tmp_path / "node"
    SimNode(spec(**kw), root).write()
    o = read(root)
    pod = next(p for p in o["pods"] if p["name"] == "engine-0")
    return root, pod["uid"], pod["containers"][0]["cgroup"].lstrip("/")


def status(o) -> str:
    return {c["check"]: c["status"] for c in o["readiness"]["checks"]}["numa_memory"]


def node_pages(per: dict) -> dict:
    """{(node, kB): (nr, free)} -> the sysfs files."""
    out = {}
    for (n, kb), (nr, free) in per.items():
        d = f"{NODE}/node{n}/hugepages/hugepages-{kb}kB"
        out |= {f"{d}/nr_hugepages": f"{nr}\n", f"{d}/free_hugepages": f"{free}\n"}
    return out


# ----------------------------------------------------------------------------- parsing


def test_numa_stat_v2_line_and_v1_legacy_lines():
    assert parse_hugetlb_numa("total=4194304 N0=0 N1=4194304\n") == {0: 0, 1: 4194304}
    # v1: the cgroup's own pages (none: they are its child's) then the hierarchy's; the latter counts
    assert parse_hugetlb_numa("total=0 N0=0 N1=0\nhierarchical_total=2097152 N0=0 N1=2097152\n") == {0: 0, 1: 2097152}
    assert parse_hugetlb_numa("") == {}


def test_memory_manager_machine_state_in_every_checkpoint_version():
    """kubelet's own test fixtures (test_checkpoints: v1 and v2 signed, v3 in data) and the real v3 file: the
    per-NUMA memoryMap is kept, bytes as written."""
    v3 = '{"policyName":"other","checksum":1234,"data":' + json.dumps('{"policyName":"static",' + MS + ',' + ENT + '}')
    for text in ('{"policyName":"static",' + MS + ',' + ENT + ',"checksum":4215593881}',
                 '{"policyName":"static",' + MS + ',' + ENT + ',"podEntries":{"pod":{"memoryBlocks":[{"numaAffinity":[0],'
                 '"type":"memory","size":512}]}},"checksum":1278640530}',
                 v3 + ',"dataChecksum":1849615440}'):
        st, probs = mem(text)
        assert probs == [] and st.machine == {0: {"memory": MemoryTable(2048, 512, 1536, 512, 1024)}}
    for text, version in ((REAL_V3, 3), (REAL_V1, 1)):
        st, probs = mem(text)
        assert (st.version, st.checksum_ok, probs) == (version, True, [])
        assert st.machine == {0: {"hugepages-1Gi": MemoryTable(0, 0, 0, 0, 0), "hugepages-2Mi": MemoryTable(0, 0, 0, 0, 0),
                                  "memory": MemoryTable(25276182528, 536870912, 24739311616, 67108864, 24672202752)}}
        assert [b.type for e in st.entries.values() for b in e["work"]] == ["memory"]


# ----------------------------------------------------------------------------- cgroup v2


def test_v2_one_size_remote_the_other_local(tmp_path):
    """2 MiB pages on N0 (its CPUs' node): fine. 1 GiB pages on N1: the finding, with that file and value only.
    The node's pages: N0 512 x 2 MiB (510 free, two in use), N1 4 x 1 GiB (3 free)."""
    root, _, leaf = two_numa(tmp_path)
    write(root, {f"{leaf}/hugetlb.2MB.numa_stat": f"total={2 * MIB2} N0={2 * MIB2} N1=0\n",
                 f"{leaf}/hugetlb.1GB.numa_stat": f"total={GIB} N0=0 N1={GIB}\n"}
          | node_pages({(0, 2048): (512, 510), (1, 2048): (0, 0), (0, 1048576): (0, 0), (1, 1048576): (4, 3)}))
    o = read(root)
    f = codes(o)["PINNED_MEMORY_REMOTE"]
    assert f["message"] == "rt/engine-0/engine: hugepages 1GB on NUMA node 1, its CPUs on 0"
    assert f["evidence"] == [f"/{leaf}/hugetlb.1GB.numa_stat: N0=0, N1=1073741824 (bytes)", "CPUs 1,5 on NUMA node 0"]
    assert status(o) == "no"
    assert {(h["node"], h["size_kb"], h["total"], h["free"]) for h in o["readiness"]["hugepages"]} == {
        (0, 2048, 512, 510), (1, 2048, 0, 0), (0, 1048576, 0, 0), (1, 1048576, 4, 3)}
    c = o["readiness"]["containers"][0]
    assert c["hugetlb_numa"] == {"1GB": {"0": 0, "1": GIB}, "2MB": {"0": 2 * MIB2, "1": 0}}


def test_v2_all_local_is_silent_and_ok(tmp_path):
    root, _, leaf = two_numa(tmp_path)
    write(root, {f"{leaf}/hugetlb.1GB.numa_stat": f"total={GIB} N0={GIB} N1=0\n"})
    o = read(root)
    assert "PINNED_MEMORY_REMOTE" not in codes(o) and status(o) == "ok"


# ----------------------------------------------------------------------------- cgroup v1


def _v1(leaf: str) -> str:
    return leaf.replace("sys/fs/cgroup/cpuset/", "sys/fs/cgroup/hugetlb/", 1)


def test_v1_usage_placed_through_a_single_mems_node(tmp_path):
    """cpuset.effective_mems 1 (one node, not its CPUs'): its 4 MiB of 2 MiB pages can only be on N1."""
    root, _, leaf = two_numa(tmp_path, cgroup=1, mems="1")
    write(root, {f"{_v1(leaf)}/hugetlb.2MB.usage_in_bytes": f"{2 * MIB2}\n",
                 f"{_v1(leaf)}/hugetlb.1GB.usage_in_bytes": "0\n"})
    o = read(root)
    f = codes(o)["PINNED_MEMORY_REMOTE"]
    assert f["message"] == "rt/engine-0/engine: hugepages 2MB on NUMA node 1, its CPUs on 0"
    assert f["evidence"][0] == (f"/{_v1(leaf)}/hugetlb.2MB.usage_in_bytes = 4194304, "
                                f"/{leaf}/cpuset.effective_mems = 1 (its only NUMA node)")
    assert o["readiness"]["containers"][0]["hugetlb_via_mems"] == ["2MB"]


def test_v1_usage_on_its_cpus_node_is_silent(tmp_path):
    root, _, leaf = two_numa(tmp_path, cgroup=1, mems="0")
    write(root, {f"{_v1(leaf)}/hugetlb.2MB.usage_in_bytes": f"{2 * MIB2}\n"})
    o = read(root)
    assert "PINNED_MEMORY_REMOTE" not in codes(o) and status(o) == "ok"


def test_v1_usage_over_two_mems_nodes_is_unknown_not_a_finding(tmp_path):
    """mems 0-1: the 4 MiB may sit on either node: unknown, said so, no finding."""
    root, _, leaf = two_numa(tmp_path, cgroup=1, mems="0-1")
    write(root, {f"{_v1(leaf)}/hugetlb.2MB.usage_in_bytes": f"{2 * MIB2}\n"})
    o = read(root)
    assert "PINNED_MEMORY_REMOTE" not in codes(o) and status(o) == "unknown"
    assert o["readiness"]["containers"][0]["hugetlb_numa_unknown"] == {"2MB": 4194304}
    detail = next(c["detail"] for c in o["readiness"]["checks"] if c["check"] == "numa_memory")
    assert detail == "engine-0/engine: hugetlb.2MB.usage_in_bytes = 4194304, cpuset mems 0-1: NUMA node unknown"


def test_v1_numa_stat_wins_over_usage_where_the_kernel_has_it(tmp_path):
    """mems 0-1, but the kernel's numa_stat says where: the hierarchical line puts 2 MiB on N1."""
    root, _, leaf = two_numa(tmp_path, cgroup=1, mems="0-1")
    write(root, {f"{_v1(leaf)}/hugetlb.2MB.usage_in_bytes": f"{MIB2}\n",
                 f"{_v1(leaf)}/hugetlb.2MB.numa_stat": f"total={MIB2} N0=0 N1={MIB2}\nhierarchical_total={MIB2} N0=0 N1={MIB2}\n"})
    o = read(root)
    f = codes(o)["PINNED_MEMORY_REMOTE"]
    assert f["evidence"][0] == f"/{_v1(leaf)}/hugetlb.2MB.numa_stat: N0=0, N1=2097152 (bytes)"
    root2, _, leaf2 = two_numa(tmp_path / "b", cgroup=1, mems="0-1")
    write(root2, {f"{_v1(leaf2)}/hugetlb.2MB.numa_stat": f"total=0 N0=0 N1=0\nhierarchical_total={MIB2} N0={MIB2} N1=0\n"})
    assert status(read(root2)) == "ok"


# ----------------------------------------------------------------------------- the memory manager's hugepages


def _mm(uid: str, huge_numa: list[int], version: int) -> str:
    """Static policy; per node 4 x 1 GiB allocatable; engine holds 1 GiB of memory on N0 and one 1 GiB page on
    `huge_numa` (N0's table says 1 GiB reserved, or N1's)."""
    def table(n):
        held = GIB if n in huge_numa else 0
        return {"total": 4 * GIB, "systemReserved": 0, "allocatable": 4 * GIB, "reserved": held, "free": 4 * GIB - held}
    machine = {str(n): {"numberOfAssignments": 1, "cells": [n], "memoryMap": {
        "memory": {"total": 8 * GIB, "systemReserved": GIB, "allocatable": 7 * GIB, "reserved": GIB if n == 0 else 0,
                   "free": 6 * GIB if n == 0 else 7 * GIB}, "hugepages-1Gi": table(n)}} for n in (0, 1)}
    entries = {uid: {"engine": [{"numaAffinity": [0], "type": "memory", "size": GIB},
                                {"numaAffinity": huge_numa, "type": "hugepages-1Gi", "size": GIB}]}}
    state = {"policyName": "Static", "machineState": machine, "entries": entries}
    if version == 1:
        return json.dumps(state | {"checksum": 0})
    if version == 2:  # podEntries (none here), signed over the legacy name as kubelet v1.3x does
        doc = state | {"podEntries": {}}
        return json.dumps(doc | {"checksum": fnv1a32(spew("MemoryManagerCheckpoint", _struct(doc, pods=True)))})
    data = json.dumps(state, separators=(",", ":"))
    return json.dumps({"policyName": "Static", "checksum": 0, "data": data, "dataChecksum": fnv1a32("(string)" + data)})


def test_memory_manager_hugepages_on_another_node_v1_v2_v3(tmp_path):
    for version in (1, 2, 3):
        root, uid, _ = two_numa(tmp_path / f"v{version}")
        write(root, {"var/lib/kubelet/memory_manager_state": _mm(uid, [1], version)})
        o = read(root)
        f = codes(o)["PINNED_MEMORY_REMOTE"]
        assert f["message"] == "rt/engine-0/engine: hugepages-1Gi on NUMA node 1, its CPUs on 0", version
        assert f["evidence"] == [f"/var/lib/kubelet/memory_manager_state: entries[{uid}][engine]: type hugepages-1Gi, "
                                 "size 1073741824, numaAffinity 1", "CPUs 1,5 on NUMA node 0"]
        assert o["kubelet"]["memory_state"]["version"] == version
        assert o["kubelet"]["memory_state"]["checksum_ok"] is (None if version == 1 else True)
        mm = o["readiness"]["memory_manager"]
        assert mm["1"]["hugepages-1Gi"] == {"total": 4 * GIB, "system_reserved": 0, "allocatable": 4 * GIB,
                                            "reserved": GIB, "free": 3 * GIB}
        assert mm["0"]["hugepages-1Gi"]["reserved"] == 0 and mm["0"]["memory"]["reserved"] == GIB
        assert [b["type"] for b in o["readiness"]["containers"][0]["memory_manager"]] == ["memory", "hugepages-1Gi"]


def test_memory_manager_hugepages_beside_the_cpus_is_silent(tmp_path):
    for version in (1, 2, 3):
        root, uid, _ = two_numa(tmp_path / f"v{version}")
        write(root, {"var/lib/kubelet/memory_manager_state": _mm(uid, [0], version)})
        o = read(root)
        assert "PINNED_MEMORY_REMOTE" not in codes(o) and status(o) == "ok", version


# ----------------------------------------------------------------------------- the CPUs' NUMA node unknown


def test_no_remote_memory_when_the_cpus_numa_nodes_are_not_all_known():
    """CPUs whose numa_node is None (no /sys/devices/system/node: CONFIG_NUMA=n, or a --root tree without
    node*/cpulist) say nothing of "far": every node in use counted as remote before ("hugepages 2MB on NUMA
    node 0, its CPUs on " blank). All known: judged as before."""
    huge = {"2MB": {0: MIB2}}
    block = MemoryAssignment("hugepages-1Gi", (1,), GIB)
    c = ContainerReadiness("uid", "rt", "engine-0", "engine", frozenset({1, 5}), frozenset(), None,
                           hugetlb_nodes=huge, memory_manager_blocks=(block,))
    assert (c.remote_hugepages, c.remote_assignments) == ({}, ())  # before: {"2MB": {0: 2097152}}
    for nodes, unplaced in ((frozenset(), frozenset()), (frozenset(), frozenset({1, 5})), (frozenset({0}), frozenset({5}))):
        c = ContainerReadiness("uid", "rt", "engine-0", "engine", frozenset({1, 5}), nodes, None,
                               hugetlb_nodes=huge, memory_manager_blocks=(block,), cpus_unplaced=unplaced)
        assert (c.cpu_nodes_known, c.remote_hugepages, c.remote_assignments) == (False, {}, ()), (nodes, unplaced)
    c = ContainerReadiness("uid", "rt", "engine-0", "engine", frozenset({1, 5}), frozenset({1}), None,
                           hugetlb_nodes=huge, memory_manager_blocks=(block,))
    assert (c.cpu_nodes_known, c.remote_hugepages, c.remote_assignments) == (True, huge, ())


def test_a_tree_without_numa_nodes_is_silent_and_the_check_unknown(tmp_path):
    """The two-socket tree with /sys/devices/system/node removed: 2 MiB pages in use on N0 (numa_stat) and the
    memory manager's 1 GiB page on N1. Where its CPUs sit is unknown: no finding, numa_memory unknown, saying why
    (before: PINNED_MEMORY_REMOTE "... on NUMA node 0-1, its CPUs on " and the check no)."""
    root, uid, leaf = two_numa(tmp_path)
    shutil.rmtree(root / NODE)
    write(root, {f"{leaf}/hugetlb.2MB.numa_stat": f"total={MIB2} N0={MIB2} N1=0\n",
                 "var/lib/kubelet/memory_manager_state": _mm(uid, [1], 3)})
    o = read(root)
    assert "PINNED_MEMORY_REMOTE" not in codes(o), codes(o).get("PINNED_MEMORY_REMOTE")
    assert status(o) == "unknown"
    detail = next(c["detail"] for c in o["readiness"]["checks"] if c["check"] == "numa_memory")
    assert detail == "engine-0/engine: CPUs 1,5: NUMA node unknown (no /sys/devices/system/node/node*/cpulist names them)"
