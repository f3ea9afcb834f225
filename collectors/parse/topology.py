"""CPU and NUMA topology from sysfs (kdoc ABI/stable/sysfs-devices-system-cpu, sysfs-devices-node).

Input is the frame's {path: text}. Offline CPUs have no topology/ directory (skip, don't fail); cpu0 may
lack an `online` file; physical_package_id may be -1; core_id repeats across packages and has gaps;
cache `id` may be missing (arm64): then the L3 group is the lowest CPU of shared_cpu_list.
Values the kernel prints for "nothing" read as nothing, without a problem: an empty file, "(null)"
(nohz_full on a kernel built with NO_HZ_FULL but booted without nohz_full=: the mask was never
allocated, kernel/time/tick-sched.c / drivers/base/cpu.c), -1 package or die ids, a NUMA node without CPUs
(memory-only: CXL, PMEM).
"""
from __future__ import annotations

import re

from ..errors import Problem
from ..model import Cpu, NumaNode, Topology
from .cpuset import CpusetError, parse_cpuset

CPU = "/sys/devices/system/cpu"
NODE = "/sys/devices/system/node"
_CPU_DIR = re.compile(r"^/sys/devices/system/cpu/cpu(\d+)/")
_NODE_DIR = re.compile(r"^/sys/devices/system/node/node(\d+)/")


def _int(text: str | None) -> int | None:
    if text is None:
        return None
    t = text.strip()
    try:
        return int(t)
    except ValueError:
        return None


def _id(text: str | None) -> int | None:
    """A topology id; -1 ("unknown" on odd platforms) is nothing."""
    v = _int(text)
    return v if v is not None and v >= 0 else None


def _set(files: dict, path: str, problems: list, nmax: int | None = None) -> frozenset[int] | None:
    text = files.get(path)
    if text is None:
        return None
    if text.strip() in ("", "(null)"):
        return frozenset()
    try:
        return parse_cpuset(text, nmax)
    except CpusetError as err:
        problems.append(Problem(path, str(err)))
        return None


def parse_topology(files: dict, problems: list[Problem]) -> Topology:
    cpu_ids, node_ids = _dir_ids(files)
    kmax = _int(files.get(f"{CPU}/kernel_max"))
    possible = _set(files, f"{CPU}/possible", problems, kmax)
    online = _set(files, f"{CPU}/online", problems, kmax)
    if online is None:
        problems.append(Problem(f"{CPU}/online", "missing: online CPUs taken from /sys/devices/system/cpu/cpuN" if cpu_ids
                                else "missing, and no /sys/devices/system/cpu/cpuN: the CPU topology is unknown "
                                     "(no finding about CPUs is made from it)"))
        online = frozenset(c for c in cpu_ids if files.get(f"{CPU}/cpu{c}/online", "1").strip() != "0")
    nmax = max(possible) if possible else (max(cpu_ids | online) if (cpu_ids or online) else None)
    isolated = _set(files, f"{CPU}/isolated", problems, nmax) or frozenset()
    nohz = _set(files, f"{CPU}/nohz_full", problems, nmax)
    cmdline = files.get("/proc/cmdline", "").strip()
    if f"{CPU}/isolated" not in files and cmdline:  # an empty file is no isolation, not "ask the command line"
        isolated = _cmdline_isolated(cmdline, nmax)
    nodes, cpu_node = _numa_nodes(files, node_ids, problems, nmax)
    all_ids = sorted(cpu_ids | online | (possible or frozenset()))
    cpus = [_cpu(files, c, c in online, cpu_node.get(c), problems, nmax) for c in all_ids]
    return Topology(
        cpus=tuple(cpus),
        numa_nodes=tuple(nodes),
        online=online,
        possible=possible if possible is not None else frozenset(all_ids),
        isolated=isolated,
        nohz_full=nohz or frozenset(),
        cmdline=cmdline,
    )


def _dir_ids(files: dict) -> tuple[set[int], set[int]]:
    """The ids of the cpuN and nodeN directories the frame has files of."""
    cpu_ids: set[int] = set()
    node_ids: set[int] = set()
    for p in files:
        m = _CPU_DIR.match(p)
        if m:
            cpu_ids.add(int(m.group(1)))
            continue
        m = _NODE_DIR.match(p)
        if m:
            node_ids.add(int(m.group(1)))
    return cpu_ids, node_ids


def _numa_nodes(files: dict, node_ids: set[int], problems: list[Problem],
                nmax: int | None) -> tuple[list[NumaNode], dict[int, int]]:
    """The NUMA nodes (cpulist, distances) and each CPU's node."""
    nodes: list[NumaNode] = []
    cpu_node: dict[int, int] = {}
    for n in sorted(node_ids):
        cl = _set(files, f"{NODE}/node{n}/cpulist", problems, nmax) or frozenset()
        for c in cl:
            cpu_node[c] = n
        dist_t = files.get(f"{NODE}/node{n}/distance", "")
        dists = tuple(int(x) for x in dist_t.split() if x.isdecimal())
        nodes.append(NumaNode(n, tuple(sorted(cl)), dists))
    return nodes, cpu_node


def _cpu(files: dict, c: int, is_on: bool, numa: int | None, problems: list[Problem], nmax: int | None) -> Cpu:
    """One CPU's place: socket, die, core, SMT siblings, L3; an offline CPU (or one without a topology
    directory) has only its id and node."""
    base = f"{CPU}/cpu{c}"
    t = f"{base}/topology"
    if not is_on or f"{t}/core_id" not in files:
        return Cpu(c, is_on, numa_node=numa)
    sib = _set(files, f"{t}/core_cpus_list", problems, nmax)
    if sib is None:
        sib = _set(files, f"{t}/thread_siblings_list", problems, nmax)
    return Cpu(
        id=c,
        online=True,
        socket=_id(files.get(f"{t}/physical_package_id")),
        die=_id(files.get(f"{t}/die_id")),
        core=_int(files.get(f"{t}/core_id")),
        siblings=tuple(sorted(sib)) if sib else (c,),
        l3=_l3(files, base, problems, nmax),
        numa_node=numa,
    )


def _l3(files: dict, base: str, problems: list, nmax) -> int | None:
    for k in range(8):
        idx = f"{base}/cache/index{k}"
        lvl = files.get(f"{idx}/level")
        if lvl is None:
            if k > 4:
                break
            continue
        if lvl.strip() != "3":
            continue
        cid = _int(files.get(f"{idx}/id"))
        if cid is not None:
            return cid
        shared = _set(files, f"{idx}/shared_cpu_list", problems, nmax)
        return min(shared) if shared else None
    return None


def _cmdline_isolated(cmdline: str, nmax) -> frozenset[int]:
    """isolcpus=[flags,]<cpulist> from /proc/cmdline, when /sys/.../isolated is absent (old kernels)."""
    for word in cmdline.split():
        if word.startswith("isolcpus="):
            v = word[len("isolcpus="):]
            parts = v.split(",")
            flags = {"nohz", "domain", "managed_irq"}
            given = set()
            while parts and parts[0] in flags:
                given.add(parts.pop(0))
            if given and "domain" not in given:  # flags without "domain": the scheduler still balances there
                return frozenset()
            try:
                return parse_cpuset(",".join(parts), nmax)
            except CpusetError:
                return frozenset()
    return frozenset()
