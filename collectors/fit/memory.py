"""kubelet's memory manager, Static policy, for the next Guaranteed container (pure functions).

A port of k/k pkg/kubelet/cm/memorymanager/policy_static.go at v1.35.4 and v1.37.2 (the same code for a
Guaranteed pod of container-level resources; 1.37's pod-level resources and Windows' skipExtend are not
ported): calculateHints (every NUMA mask in IterateBitMasks' order; a mask is a hint when its allocatable
memory covers the request, its free memory too, and it respects the groups kubelet keeps: a node in a
multi-node group is never a single-node hint, a node used alone never joins a group, a used node only in
its own group; preferred: the masks of the fewest nodes whose *allocatable* memory covers the request),
the same hints for `memory` and each `hugepages-<size>`; and Allocate (the topology manager's hint, else
the narrowest preferred default hint, extended to a hint that covers the request, refused when it breaks
a group), which fills the hint's nodes in ascending order. Its errors are kubelet's words.

The state is memory_manager_state's machineState as kubelet writes it (checkpoint JSON: per NUMA node
numberOfAssignments, memoryMap {resource: {total, systemReserved, allocatable, reserved, free}}, cells).
The topology manager merges these hints with the CPU manager's (kubelet.py TopologyManager.merge).
"""

from __future__ import annotations

import copy
import itertools
from dataclasses import dataclass

from .kubelet import Hint, KubeletError

NIL_DEREF = "runtime error: invalid memory address or nil pointer dereference"


def _bits(mask: int) -> list[int]:
    return [i for i in range(mask.bit_length()) if mask >> i & 1]


def _mask(nodes) -> int:
    m = 0
    for n in nodes:
        m |= 1 << n
    return m


def _narrower(a: int, b: int) -> bool:
    """bitmask IsNarrowerThan: fewer nodes, then the lower mask."""
    ca, cb = a.bit_count(), b.bit_count()
    return a < b if ca == cb else ca < cb


def find_best(hints: list[Hint]) -> Hint:
    """findBestHint: preferred first, then the narrowest (the first of equals)."""
    best: Hint | None = None
    for h in hints:
        if best is None or (h.preferred and not best.preferred):
            best = h
        elif h.preferred == best.preferred and _narrower(h.mask or 0, best.mask or 0):
            best = h
    return best if best is not None else Hint(None, False)


@dataclass
class MemNode:
    """One NUMA node of machineState: its assignments count, its group (cells) and per resource its
    free and allocatable bytes (reserved is what the assignments took)."""

    assignments: int
    cells: list[int]
    free: dict[str, int]
    allocatable: dict[str, int]
    reserved: dict[str, int]


def _uint(v) -> int:
    return int(v or 0)


def node_from_checkpoint(raw: dict) -> MemNode:
    """A machineState node as memory_manager_state writes it (a nil table left out: kubelet would
    dereference nil, which MemoryPolicy says as such)."""
    tables = {r: t for r, t in (raw.get("memoryMap") or {}).items() if t is not None}
    return MemNode(_uint(raw.get("numberOfAssignments")), list(raw.get("cells") or ()),
                   {r: _uint(t.get("free")) for r, t in tables.items()},
                   {r: _uint(t.get("allocatable")) for r, t in tables.items()},
                   {r: _uint(t.get("reserved")) for r, t in tables.items()})


class MemoryPolicy:
    """The Static policy on one machineState (mutated by allocate, as kubelet's is)."""

    def __init__(self, machine: dict[int, MemNode]):
        self.machine = dict(sorted(machine.items()))
        # per request: the masks whose allocatable memory covers it, and the fewest nodes of those (allocatable
        # never changes: allocate and release move free and reserved only)
        self.covering: dict[tuple[tuple[str, int], ...], tuple[list[tuple[int, int, tuple[int, ...]]], int]] = {}

    @classmethod
    def from_case(cls, mem: dict) -> MemoryPolicy:
        return cls({int(k): node_from_checkpoint(v) for k, v in (mem.get("machine_state") or {}).items()
                    if v is not None})

    def copy(self) -> MemoryPolicy:
        return MemoryPolicy(copy.deepcopy(self.machine))

    def _node(self, n: int) -> MemNode:
        node = self.machine.get(n)
        if node is None:
            raise KubeletError("Panic", NIL_DEREF)
        return node

    def _sum(self, bits: list[int], req: dict[str, int], what: str) -> dict[str, int]:
        out = dict.fromkeys(req, 0)
        for n in bits:
            node = self._node(n)
            table = node.free if what == "free" else node.allocatable
            for r in req:
                if r not in table:
                    raise KubeletError("Panic", NIL_DEREF)
                out[r] += table[r]
        return out

    def _usable(self, bits: list[int]) -> bool:
        """calculateHints' group rules for one mask."""
        if len(bits) == 1:
            return len(self._node(bits[0]).cells) <= 1
        for n in bits:
            node = self._node(n)
            if node.assignments > 0 and (len(node.cells) == 1 or sorted(node.cells) != bits):
                return False
        return True

    def hints(self, req: dict[str, int]) -> dict[str, list[Hint]]:
        """calculateHints: {resource: hints} for every requested resource, or {} when no mask fits
        (the topology manager then takes the provider as having no preference)."""
        masks, min_size = self._masks_at_once(req) if _no_nil(self.machine, req) else self._masks_one_by_one(req)
        if not masks:
            return {}
        hints = [Hint(m, m.bit_count() == min_size) for m in masks]
        return {r: list(hints) for r in req}

    def _masks_at_once(self, req: dict[str, int]) -> tuple[list[int], int]:
        """_masks_one_by_one's answer where it cannot dereference nil: the masks whose allocatable memory covers
        the request kept per request, the group rules as masks, the free memory summed for those left."""
        nodes = list(self.machine)
        per_node = list(self.machine.values())
        key = tuple(req.items())
        got = self.covering.get(key)
        if got is None:
            got = self.covering[key] = _covering(nodes, [[m.allocatable[r] for m in per_node] for r in req],
                                                 list(req.values()))
        rows, min_size = got
        used = 0  # positions of nodes with assignments: in a hint of several nodes only as exactly their group
        in_group: dict[int, int] = {}  # group mask -> the positions of the used nodes whose group it is
        for i, m in enumerate(per_node):
            if m.assignments > 0:
                used |= 1 << i
                if len(m.cells) != 1 and len(set(m.cells)) == len(m.cells):
                    g = _mask(m.cells)
                    in_group[g] = in_group.get(g, 0) | 1 << i
        free = [([m.free[r] for m in per_node], want) for r, want in req.items()]
        out: list[int] = []
        for pm, mask, pos in rows:
            if len(pos) == 1:
                if len(per_node[pos[0]].cells) > 1:
                    continue
            elif pm & used & ~in_group.get(mask, 0):
                continue
            if all(sum(vals[i] for i in pos) >= want for vals, want in free):
                out.append(mask)
        return out, min_size

    def _masks_one_by_one(self, req: dict[str, int]) -> tuple[list[int], int]:
        """calculateHints' loop as kubelet runs it, mask by mask (where a table is missing it dereferences nil
        at the mask kubelet would)."""
        nodes = sorted(self.machine)
        masks: list[int] = []
        min_size = len(nodes)
        for bits in _iterate(nodes):
            alloc = self._sum(bits, req, "allocatable")
            if any(alloc[r] < size for r, size in req.items()):
                continue
            min_size = min(min_size, len(bits))
            if not self._usable(bits):
                continue
            free = self._sum(bits, req, "free")
            if any(free[r] < size for r, size in req.items()):
                continue
            masks.append(_mask(bits))
        return masks, min_size

    def _satisfies(self, mask: int, req: dict[str, int]) -> bool:
        free = self._sum(_bits(mask), req, "free")
        return all(free[r] >= size for r, size in req.items())

    def _violates(self, mask: int) -> bool:
        """isAffinityViolatingNUMAAllocations."""
        bits = _bits(mask)
        for n in bits:
            node = self._node(n)
            if node.assignments == 0 or len(bits) == 1:
                continue
            if len(node.cells) == 1 or sorted(node.cells) != bits:
                return True
        return False

    def allocate(self, hint: Hint, req: dict[str, int]) -> list[int]:
        """Allocate for one container under the topology manager's hint: the NUMA nodes its memory comes
        from; the machine state is updated. KubeletError("alloc", kubelet's message) when refused."""
        best = hint
        if best.mask is None:
            hints = self.hints(req)
            if not hints:
                raise KubeletError("alloc", "[memorymanager] failed to get the default NUMA affinity, "
                                   "no NUMA nodes with enough memory is available")
            default = find_best(hints.get("memory") or [])
            if not default.preferred and best.preferred:
                raise KubeletError("alloc", "[memorymanager] failed to find the default preferred hint")
            best = default
        if not self._satisfies(best.mask or 0, req):
            want = set(_bits(best.mask or 0))
            wider = [h for h in self.hints(req).get("memory") or [] if want <= set(_bits(h.mask or 0))]
            if not wider:
                raise KubeletError("alloc", "[memorymanager] failed to find NUMA nodes to extend the current topology hint")
            ext = find_best(wider)
            if not ext.preferred and best.preferred:
                raise KubeletError("alloc", "[memorymanager] failed to find the extended preferred hint")
            best = ext
        if self._violates(best.mask or 0):
            raise KubeletError("alloc", "[memorymanager] preferred hint violates NUMA node allocation")
        bits = _bits(best.mask or 0)
        for r, size in req.items():
            self._take(bits, r, size)
        return bits

    def _take(self, bits: list[int], resource: str, size: int) -> None:
        """updateMachineState: each node of the hint counts the assignment and joins the group; the
        bytes come from the nodes in ascending order."""
        for n in bits:
            node = self._node(n)
            node.assignments += 1
            node.cells = list(bits)
            if size == 0:
                continue
            if resource not in node.free:
                raise KubeletError("Panic", NIL_DEREF)
            free = node.free[resource]
            if free <= 0:
                continue
            got = min(free, size)
            node.free[resource] -= got
            node.reserved[resource] = node.reserved.get(resource, 0) + got
            size -= got

    def release(self, blocks: list[tuple[str, list[int], int]]) -> None:
        """releaseMemory (RemoveContainer of a pod kubelet no longer counts active): blocks (type, nodes, size)."""
        for resource, nodes, size in blocks:
            for n in nodes:
                node = self.machine.get(n)
                if node is None:
                    continue
                node.assignments -= 1
                if node.assignments == 0:
                    node.cells = [n]
                if size == 0 or not node.reserved.get(resource):
                    continue
                back = min(node.reserved[resource], size)
                node.reserved[resource] -= back
                node.free[resource] = node.free.get(resource, 0) + back
                size -= back

    def free_per_node(self) -> list[dict]:
        """Per NUMA node its free and allocatable bytes per resource and its group (for `fit`)."""
        return [{"numa_node": n, "free": dict(node.free), "allocatable": dict(node.allocatable),
                 "group": sorted(node.cells), "assignments": node.assignments}
                for n, node in self.machine.items()]


def _no_nil(machine: dict[int, MemNode], req: dict[str, int]) -> bool:
    """Every node has a table for every requested resource (kubelet's loop dereferences none), and the node
    ids and groups are ids a mask holds."""
    for n, m in machine.items():
        if n < 0 or any(not isinstance(c, int) or c < 0 for c in m.cells):
            return False
        if any(r not in m.allocatable or r not in m.free for r in req):
            return False
    return True


def _covering(nodes: list[int], alloc: list[list[int]], want: list[int]) -> tuple[list[tuple[int, int, tuple[int, ...]]], int]:
    """The rows of _mask_table whose allocatable sums (alloc: per resource, per node) reach `want`, and the
    fewest nodes among them (len(nodes) when none)."""
    rows = [row for row in _mask_table(tuple(nodes))
            if all(sum(per_node[i] for i in row[2]) >= w for per_node, w in zip(alloc, want))]
    return rows, min((len(r[2]) for r in rows), default=len(nodes))


_MASK_TABLES: dict[tuple[int, ...], list[tuple[int, int, tuple[int, ...]]]] = {}


def _mask_table(nodes: tuple[int, ...]) -> list[tuple[int, int, tuple[int, ...]]]:
    """IterateBitMasks over `nodes`: (position mask, NUMA mask, positions) in its order, kept per node list."""
    table = _MASK_TABLES.get(nodes)
    if table is None:
        table = []
        for size in range(1, len(nodes) + 1):
            for pos in itertools.combinations(range(len(nodes)), size):
                table.append((sum(1 << i for i in pos), _mask(nodes[i] for i in pos), pos))
        if len(_MASK_TABLES) > 64:
            _MASK_TABLES.clear()
        _MASK_TABLES[nodes] = table
    return table


def _iterate(nodes: list[int]):
    """bitmask.IterateBitMasks: every non-empty subset, by size, each size in lexicographic order."""
    import itertools

    for size in range(1, len(nodes) + 1):
        for combo in itertools.combinations(nodes, size):
            yield list(combo)


def requests_of(container: dict) -> dict[str, int]:
    """The memory manager's requested resources of a container: memory and hugepages-<size>, in bytes."""
    return {r: int(v) for r, v in container.items() if r == "memory" or r.startswith("hugepages-")}


def pod_requests(containers: list[dict]) -> dict[str, int]:
    """getPodRequestedResources for a pod of app containers only: the sum per resource."""
    out: dict[str, int] = {}
    for c in containers:
        for r, v in requests_of(c).items():
            out[r] = out.get(r, 0) + v
    return out


# --- from the node's files (predict.py, cli/fit.py) ----------------------------------------------


def memory_case(snap, request: dict[str, int]) -> tuple[dict | None, str | None]:
    """The case's "memory" for the next container's `request` (bytes per resource) from the node's
    memory_manager_state, or (None, why the memory's NUMA nodes are not predicted)."""
    policy = getattr(snap.kubelet, "memory_manager_policy", None) or "None"
    if policy.lower() == "none":
        return None, ("memoryManagerPolicy is None: kubelet does not pin memory to NUMA nodes (no cpuset.mems of "
                      "its choosing: the kernel places the memory), so there is no placement to predict")
    if policy != "Static":
        return None, f"memoryManagerPolicy is {policy!r}: only the Static policy's placement is ported"
    st = snap.memory_state
    bad = [p.message for p in snap.problems if p.source.endswith("/memory_manager_state")]
    if st is None and bad:  # read, but not a checkpoint kubelet accepts (it would not start on it)
        return None, f"memory_manager_state cannot be used: {bad[0]}: which NUMA node has free memory is unknown"
    if st is None:
        return None, ("memory_manager_state was not read (missing, or mode 0600 and root's: run with --sudo, or as root): "
                      "which NUMA node has free memory is unknown")
    if st.policy != policy:  # state_checkpoint.go restoreState refuses it: kubelet does not start
        return None, (f"memory_manager_state says policy {st.policy!r} while the configuration says {policy}: kubelet "
                      "refuses such a checkpoint at start (configured policy differs from state checkpoint policy), so "
                      "no placement is predicted")
    if st.checksum_ok is False:
        return None, "memory_manager_state's checksum does not match: kubelet would refuse it, so no placement is predicted"
    if not st.machine:
        return None, "memory_manager_state has no machineState yet: which NUMA node has free memory is unknown"
    why = _machine_not_the_nodes(snap.topology, set(st.machine) | set(st.groups or {}))
    if why:
        return None, why
    machine = {}
    for n, tables in st.machine.items():
        count, cells = (st.groups or {}).get(n, (0, (n,)))
        machine[str(n)] = {"numberOfAssignments": count, "cells": list(cells), "memoryMap": {
            r: {"total": t.total, "systemReserved": t.system_reserved, "allocatable": t.allocatable,
                "reserved": t.reserved, "free": t.free} for r, t in tables.items()}}
    assignments = {uid: {c: [{"numaAffinity": list(b.numa_nodes), "type": b.type, "size": b.size} for b in blocks]
                         for c, blocks in ctrs.items()} for uid, ctrs in st.entries.items()}
    pods = {uid: [{"numaAffinity": list(b.numa_nodes), "type": b.type, "size": b.size} for b in blocks]
            for uid, blocks in (st.pod_entries or {}).items() if blocks}
    return {"machine_state": machine, "assignments": assignments, "pod_assignments": pods,
            "containers": [dict(request)]}, None


MAX_NUMA = 16  # calculateHints walks all 2^N NUMA masks per hint: beyond this a prediction costs seconds


def _machine_not_the_nodes(topo, have: set[int]) -> str | None:
    """Why machineState's NUMA nodes cannot be used, or None. kubelet's Static policy checks them at start
    against the machine's (validateState: "the expected machine state is different from the real one") and
    refuses to start on a mismatch; its bitmasks hold only NUMA ids 0-63."""
    nodes = {n.id for n in topo.numa_nodes} | {c.numa_node for c in topo.cpus if c.numa_node is not None}
    shown = ", ".join(str(n) for n in sorted(have)[:10]) + (" …" if len(have) > 10 else "")
    if any(n < 0 or n > 63 for n in have) or (nodes and have != nodes):
        return (f"memory_manager_state's machineState has NUMA nodes {shown}, the node "
                f"{', '.join(map(str, sorted(nodes))) or 'none read'}: kubelet refuses such a checkpoint at start "
                "(the expected machine state is different from the real one), so no placement is predicted")
    if len(have) > MAX_NUMA:
        return (f"memory_manager_state has {len(have)} NUMA nodes: kubelet's memory manager weighs all 2^{len(have)} "
                f"NUMA masks, which pinscope does not predict above {MAX_NUMA} nodes")
    return None


def memory_answer(k, request: dict[str, int], placed: list | None, note: str | None) -> dict:
    """`fit --json`'s "memory": the request, the NUMA nodes kubelet would take it from (None: refused or not
    predicted), why not predicted, and per NUMA node the memory manager's free memory."""
    out: dict = {"request": dict(request), "numa_nodes": None, "note": note, "per_numa": []}
    if placed:
        out["numa_nodes"] = placed[0]
    if k is not None and getattr(k, "memory", None) is not None:
        out["per_numa"] = k.memory.free_per_node()
    return out


MEMORY_UNKNOWN = "the next pod's memory"  # an `unknown` line's start: `fit` adds how to give it (--memory)


def with_memory(case: dict, snap, request: dict[str, int] | None, unknown: list[str]) -> tuple[list[dict] | None, str | None]:
    """Put the memory manager into `case` for the next container's `request` (None: not asked): (the memory
    requests Kubelet.admit takes, None) or (None, why the placement is not predicted)."""
    policy = getattr(snap.kubelet, "memory_manager_policy", None) or "None"
    if request is None:
        if policy.lower() != "none":
            unknown.append(f"{MEMORY_UNKNOWN}: memoryManagerPolicy {policy} places it on NUMA nodes too, "
                           "and its hints can move the CPUs")
        return None, None
    mem, note = memory_case(snap, request)
    if mem is None:
        return None, note
    case["memory"] = mem
    return [dict(request)], None
