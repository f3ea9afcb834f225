"""Kubelet's CPU decisions, ported line by line from its Go code (pure functions, no I/O).

Sources, per release (k8s.io/kubernetes v1.35.4 and v1.37.2):
  pkg/kubelet/cm/cpumanager/cpu_assignment.go   takeByTopologyNUMAPacked / ...NUMADistributed
  pkg/kubelet/cm/cpumanager/policy_static.go    NewStaticPolicy, Start, hints, Allocate
  pkg/kubelet/cm/cpumanager/policy_options.go   option parsing and checks
  pkg/kubelet/cm/cpumanager/topology/topology.go  Discover, CPUDetails
  pkg/kubelet/cm/topologymanager/               NewManager, policies, Merge, scopes, Admit
The port keeps kubelet's order of operations and its quirks, because pinscope is judged by
agreeing with kubelet, not by being right: the aliasing of Go slices in iterateCombinations,
the double counting when an uncore cache spans NUMA nodes, and the loops that never end
(reported here as the error kind "Hang", where kubelet's admission would hang). Where
1.35 and 1.37 differ (distribute-cpus-across-numa with align-by-socket), `release` says
which code runs. tests/kubeletsim holds the oracle built from kubelet's own packages;
tests/collectors/test_fit_differential.py checks this module against it.

A case is the oracle's JSON (see tests/kubeletsim/main.go `Case`):
  cpus           [[id, socket, numa, core, uncore], ...] online CPUs (uncore < 0: unknown)
  topology       instead of cpus: kubelet's CPUTopology as its tests write it ({num_cpus, num_cores,
                 num_uncore_cache, num_sockets, num_numa_nodes, cpu_details: {cpu: [numa, socket,
                 core, uncore]}}), counts as given, no Discover
  cpuless_numa   NUMA node ids without CPUs (cadvisor lists them; kubelet's hints do not)
  distances      {"numa": [distance to node 0, 1, ...]} (prefer-closest-numa-nodes)
  cpu_options, tm_policy, tm_scope, tm_options, reserved, num_reserved,
  assignments    {pod: {container: cpuset}}, default (cpuset or absent), containers [N, ...]
  inactive       pods of `assignments` kubelet no longer counts active (see predict.py): removed before the
                 admission, as kubelet's removeStaleState does (the oracle calls its RemoveContainer for them)
  memory         the memory manager's Static policy (memory.py): {machine_state (memory_manager_state's
                 machineState), assignments (its entries), containers [{resource: bytes}] (the next pod's
                 memory and hugepages-<size> per container), nodes and reserved (the oracle's, for Start)}
  devices        the device manager (devices.py), the first hint provider as in kubelet: {resources, unhealthy,
                 allocated, containers [{resource: count}]}
The result: {"cpus": [cpuset per container] | None, "error": {"kind", "message"} | None}, and with memory
"memory": [the NUMA nodes of each container's memory] when admitted; with devices "devices": per container,
resource -> [{"pool": ids, "take": n, "numa_nodes"}] (how many kubelet takes from each pool) when admitted.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

from .devices import DeviceManager

RELEASES = ("1.35", "1.37")
DEFAULT_RELEASE = "1.37"

NUMA, SOCKET, CORE, UNCORE = 0, 1, 2, 3
MAX_FLOAT = 1.7976931348623157e308


class Hang(Exception):
    """Kubelet's code would loop for ever on this case (its admission hangs)."""


class KubeletError(Exception):
    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind
        self.message = message


# --- cpuset (k8s.io/utils/cpuset) -------------------------------------------------------------


def cpuset_str(cpus) -> str:
    """cpuset.String(): sorted, runs collapsed into ranges."""
    ids = sorted(set(cpus))
    out = []
    i = 0
    while i < len(ids):
        j = i
        while j + 1 < len(ids) and ids[j + 1] == ids[j] + 1:
            j += 1
        out.append(str(ids[i]) if i == j else f"{ids[i]}-{ids[j]}")
        i = j + 1
    return ",".join(out)


def cpuset_parse(text: str) -> set[int]:
    """cpuset.Parse(): "" is empty; elements N or N-M; errors as ValueError."""
    out: set[int] = set()
    if text == "":
        return out
    for part in text.split(","):
        if "-" in part:
            a, b = part.split("-", 1)
            lo, hi = int(a), int(b)
            if lo > hi:
                raise ValueError(f'invalid range "{part}" ({lo} > {hi})')
            out.update(range(lo, hi + 1))
        else:
            out.add(int(part))
    return out


# --- topology (cpumanager/topology) -----------------------------------------------------------


class Details:
    """CPUDetails: cpu -> (numa, socket, core, uncore), with indices kept in step."""

    __slots__ = ("info", "idx")

    def __init__(self, info: dict[int, tuple[int, int, int, int]], idx: tuple | None = None):
        self.info = info
        if idx is None:  # the four levels written out: built for every cpuAccumulator, ~2 per admission
            numa: dict[int, set[int]] = {}
            socket: dict[int, set[int]] = {}
            core: dict[int, set[int]] = {}
            uncore: dict[int, set[int]] = {}
            for cpu, (n, s, c, u) in info.items():
                if n in numa:
                    numa[n].add(cpu)
                else:
                    numa[n] = {cpu}
                if s in socket:
                    socket[s].add(cpu)
                else:
                    socket[s] = {cpu}
                if c in core:
                    core[c].add(cpu)
                else:
                    core[c] = {cpu}
                if u in uncore:
                    uncore[u].add(cpu)
                else:
                    uncore[u] = {cpu}
            idx = (numa, socket, core, uncore)
        self.idx: tuple[dict[int, set[int]], ...] = idx

    def keep_only(self, cpus) -> Details:
        info = self.info
        keep = cpus if isinstance(cpus, (set, frozenset)) else set(cpus)
        if len(keep) * 4 < len(info):
            return Details({c: info[c] for c in keep if c in info})
        idx = []
        for level in range(4):
            d = {}
            for k, g in self.idx[level].items():
                g2 = g & keep
                if g2:
                    d[k] = g2
            idx.append(d)
        return Details({c: info[c] for c in keep if c in info}, tuple(idx))

    def remove(self, cpus) -> None:
        info, idx = self.info, self.idx
        for c in cpus:
            t = info.pop(c, None)
            if t is None:
                continue
            for level in range(4):
                group = idx[level][t[level]]
                group.discard(c)
                if not group:
                    del idx[level][t[level]]

    def cpus(self) -> set[int]:
        return set(self.info)

    def ids(self, level: int) -> list[int]:
        return list(self.idx[level])

    def cpus_in(self, level: int, *ids: int) -> set[int]:
        if len(ids) == 1:
            return self.idx[level].get(ids[0], set())
        out: set[int] = set()
        for i in ids:
            out |= self.idx[level].get(i, set())
        return out

    def count_in(self, level: int, i: int) -> int:
        group = self.idx[level].get(i)
        return len(group) if group else 0

    def ids_in(self, level: int, of_level: int, *ids: int) -> set[int]:
        """e.g. ids_in(SOCKET, NUMA, n): SocketsInNUMANodes(n)."""
        info, groups = self.info, self.idx[of_level]
        if len(ids) == 1:
            return {info[c][level] for c in groups.get(ids[0], ())}
        return {info[c][level] for i in ids for c in groups.get(i, ())}

    def cores_needed_in_uncore(self, num_cores_needed: int, uncore: int) -> set[int]:
        core_ids = self.ids_in(CORE, UNCORE, uncore)
        if len(core_ids) <= num_cores_needed:
            return core_ids
        return set(sorted(core_ids)[:num_cores_needed])

    def numa_nodes_in_same_socket(self, numas) -> bool:
        present = self.idx[NUMA]
        for n in numas:
            if n not in present:
                return False
        return len(self.ids_in(SOCKET, NUMA, *numas)) <= 1


@dataclass
class Topology:
    """CPUTopology as topology.Discover builds it from cadvisor's machine info."""

    num_cpus: int
    num_cores: int
    num_sockets: int
    num_numa: int
    num_uncore: int
    details: Details
    # NUMANodesInSameSocket per combination of NUMA nodes (details is the machine's: it never changes)
    one_socket: dict[tuple[int, ...], bool] = field(default_factory=dict, repr=False, compare=False)

    def numa_nodes_in_same_socket(self, numas: list[int]) -> bool:
        key = tuple(numas)
        got = self.one_socket.get(key)
        if got is None:
            got = self.one_socket[key] = self.details.numa_nodes_in_same_socket(numas)
        return got

    def cpus_per_core(self) -> int:
        return self.num_cpus // self.num_cores if self.num_cores else 0

    def cpus_per_socket(self) -> int:
        return self.num_cpus // self.num_sockets if self.num_sockets else 0

    def cpus_per_uncore(self) -> int:
        return self.num_cpus // self.num_uncore if self.num_uncore else 0


def discover(cpus: list) -> Topology:
    """topology.Discover over the case's CPUs grouped as cadvisor does (a core = its threads;
    its id = its lowest thread; its uncore cache = the socket when none is known)."""
    if not cpus:
        raise KubeletError("TopologyError", "could not detect number of cpus")
    cores: dict[tuple[int, int, int], list] = {}
    sockets = set()
    for cpu_id, socket, numa, core, uncore in cpus:
        key = (numa, socket, core)
        if key not in cores:
            cores[key] = [socket, uncore, []]
        cores[key][2].append(cpu_id)
        sockets.add(socket)
    info: dict[int, tuple[int, int, int, int]] = {}
    for (numa, _s, _c), (socket, uncore, threads) in cores.items():
        if len(set(threads)) != len(threads):
            raise KubeletError("TopologyError", "cpus provided are not unique")
        core_id = min(threads)
        for t in threads:
            info[t] = (numa, socket, core_id, uncore if uncore >= 0 else socket)
    d = Details(info)
    return Topology(
        num_cpus=len(cpus),
        num_cores=len(cores),
        num_sockets=len(sockets),
        num_numa=len(d.idx[NUMA]),
        num_uncore=len(d.idx[UNCORE]),
        details=d,
    )


def topology_of(details: dict, num_cpus: int, num_sockets: int, num_cores: int, num_uncore: int = 0,
                num_numa: int = 0) -> Topology:
    """A CPUTopology given as kubelet's tests give it: CPUDetails {cpu: (numa, socket, core, uncore)}
    and the counts as written (NumNUMANodes may be left 0 there, and is kept so)."""
    info = {int(c): (int(t[0]), int(t[1]), int(t[2]), int(t[3])) for c, t in details.items()}
    return Topology(num_cpus=num_cpus, num_cores=num_cores, num_sockets=num_sockets, num_numa=num_numa,
                    num_uncore=num_uncore, details=Details(info))


# --- Go helpers -------------------------------------------------------------------------------


def _go_round(x: float) -> float:
    """math.Round: half away from zero."""
    t = float(math.trunc(x))
    if abs(x - t) >= 0.5:
        t += math.copysign(1.0, x)
    return t


def _mean(xs: list[int]) -> float:
    s = 0.0
    for x in xs:
        s += float(x)
    return _go_round(s / float(len(xs)) * 1000) / 1000


def _stddev(xs: list[int]) -> float:
    m = _mean(xs)
    s = 0.0
    for x in xs:
        s += (float(x) - m) * (float(x) - m)
    return _go_round(math.sqrt(s / float(len(xs))) * 1000) / 1000


class _Slice:
    """A Go []int as iterateCombinations' `append(accum, n[i])` shares it: the combination a
    callback keeps is a view on an array that later appends may overwrite."""

    __slots__ = ("arr", "n")

    def __init__(self, arr: list, n: int):
        self.arr = arr
        self.n = n

    def append(self, x: int) -> _Slice:
        if self.n < len(self.arr):
            self.arr[self.n] = x
            return _Slice(self.arr, self.n + 1)
        cap = max(self.n + 1, 2 * len(self.arr)) if len(self.arr) < 256 else self.n + 1 + len(self.arr) // 4
        arr = self.arr[: self.n] + [x] + [0] * (cap - self.n - 1)
        return _Slice(arr, self.n + 1)

    def list(self) -> list[int]:
        return self.arr[: self.n]


def _iterate_combinations(n: list[int], k: int, f) -> None:
    """cpuAccumulator.iterateCombinations; f gets a _Slice and returns True to stop."""
    if k < 1:
        return
    ln = len(n)

    def helper(k: int, start: int, accum: _Slice) -> bool:
        if k == 0:
            return bool(f(accum))
        for i in range(start, ln - k + 1):
            if helper(k - 1, i + 1, accum.append(n[i])):
                return True
        return False

    helper(k, 0, _Slice([], 0))


# --- cpu_assignment.go --------------------------------------------------------------------------


class _Acc:
    """cpuAccumulator."""

    def __init__(self, topo: Topology, available, num_cpus: int, spread: bool):
        self.topo = topo
        self.details = topo.details.keep_only(available)
        self.needed = num_cpus
        self.result: set[int] = set()
        self.numa_first = topo.num_sockets >= topo.num_numa
        self.spread = spread

    # sorting: fewest free CPUs first, then lowest id
    def _sort(self, ids, level: int) -> list[int]:
        groups = self.details.idx[level]  # count_in, inline: a group left empty is removed
        return sorted(ids, key=lambda i: (len(groups.get(i, ())), i))

    def sort_numa(self) -> list[int]:
        d = self.details
        if self.numa_first:
            return self._sort(d.ids(NUMA), NUMA)
        out: list[int] = []
        for s in self.sort_sockets():
            out.extend(self._sort(d.ids_in(NUMA, SOCKET, s), NUMA))
        return out

    def sort_sockets(self) -> list[int]:
        d = self.details
        if self.numa_first:
            out: list[int] = []
            for n in self.sort_numa():
                out.extend(self._sort(d.ids_in(SOCKET, NUMA, n), SOCKET))
            return out
        return self._sort(d.ids(SOCKET), SOCKET)

    def sort_cores(self) -> list[int]:
        d = self.details
        out: list[int] = []
        if self.numa_first:
            for s in self.sort_sockets():
                out.extend(self._sort(d.ids_in(CORE, SOCKET, s), CORE))
        else:
            for n in self.sort_numa():
                out.extend(self._sort(d.ids_in(CORE, NUMA, n), CORE))
        return out

    def sort_uncore(self) -> list[int]:
        d = self.details
        out: list[int] = []
        for n in self.sort_numa():
            out.extend(self._sort(d.ids_in(UNCORE, NUMA, n), UNCORE))
        return out

    def sort_cpus(self) -> list[int]:
        d = self.details
        out: list[int] = []
        if self.spread:
            for s in self.sort_sockets():
                out.extend(sorted(d.cpus_in(SOCKET, s)))
        else:
            for c in self.sort_cores():
                out.extend(sorted(d.cpus_in(CORE, c)))
        return out

    def take(self, cpus) -> None:
        self.result |= cpus
        self.details.remove(cpus)
        self.needed -= len(cpus)

    def needs_at_least(self, n: int) -> bool:
        return self.needed >= n

    def satisfied(self) -> bool:
        return self.needed < 1

    def failed(self) -> bool:
        return self.needed > len(self.details.info)

    def take_full(self, level: int) -> None:
        full = self.topo.details
        d = self.details
        if level == NUMA:
            order = self.sort_numa()
            free = [i for i in order if d.count_in(NUMA, i) == full.count_in(NUMA, i)]
        elif level == SOCKET:
            per = self.topo.cpus_per_socket()
            free = [i for i in self.sort_sockets() if d.count_in(SOCKET, i) == per]
        elif level == UNCORE:
            free = [i for i in self.sort_uncore() if d.count_in(UNCORE, i) == full.count_in(UNCORE, i)]
        else:
            per = self.topo.cpus_per_core()
            free = [i for i in self.sort_cores() if d.count_in(CORE, i) == per]
        for i in free:
            cpus = full.cpus_in(level, i)
            if not self.needs_at_least(len(cpus)):
                continue
            self.take(set(cpus))

    def take_first_levels(self) -> bool:
        first, second = (NUMA, SOCKET) if self.numa_first else (SOCKET, NUMA)
        self.take_full(first)
        if self.satisfied():
            return True
        self.take_full(second)
        return self.satisfied()

    def take_partial_uncore(self, uncore: int) -> None:
        per_core = self.topo.cpus_per_core()
        num_cores_needed = (self.needed + per_core - 1) // per_core if per_core else 0
        free_cores = self.details.cores_needed_in_uncore(num_cores_needed, uncore)
        free_cpus = self.details.cpus_in(CORE, *free_cores) if free_cores else set()
        if self.needed % 2 != 0 and per_core > 1:
            ordered = sorted(free_cpus)
            if len(ordered) > self.needed:
                ordered = ordered[: len(free_cpus) - 1]
            free_cpus = set(ordered)
        if self.needed != len(free_cpus):
            return
        self.take(set(free_cpus))

    def take_uncore_cache(self) -> None:
        per_uncore = self.topo.cpus_per_uncore()
        for uncore in self.sort_uncore():
            if self.needs_at_least(per_uncore):
                self.take_full(UNCORE)
            if self.satisfied():
                return
            self.take_partial_uncore(uncore)
            if self.satisfied():
                return

    def take_remaining(self) -> None:
        for cpu in self.sort_cpus():
            self.take({cpu})
            if self.satisfied():
                return

    def range_numa_needed(self, group: int) -> tuple[int, int]:
        full = self.topo.details
        num_numa = len(full.idx[NUMA])
        num_numa_available = len(self.details.idx[NUMA])
        num_cpus = len(full.info)
        groups = (num_cpus - 1) // group + 1
        groups_per_numa = (groups - 1) // num_numa + 1
        groups_needed = (self.needed - 1) // group + 1
        return (groups_needed - 1) // groups_per_numa + 1, min(groups_needed, num_numa_available)


def _not_enough(num_cpus: int, available) -> KubeletError:
    return KubeletError(
        "alloc", f"not enough cpus available to satisfy request: requested={num_cpus}, available={len(available)}"
    )


def take_packed(topo: Topology, available, num_cpus: int, spread: bool, uncore: bool) -> set[int]:
    """takeByTopologyNUMAPacked."""
    acc = _Acc(topo, available, num_cpus, spread)
    if acc.satisfied():
        return acc.result
    if acc.failed():
        raise _not_enough(num_cpus, available)
    if acc.take_first_levels():
        return acc.result
    if uncore:
        acc.take_uncore_cache()
        if acc.satisfied():
            return acc.result
    if not spread:
        acc.take_full(CORE)
        if acc.satisfied():
            return acc.result
    acc.take_remaining()
    if acc.satisfied():
        return acc.result
    raise KubeletError("alloc", "failed to allocate cpus")


def _packed_or_empty(topo: Topology, available, n: int, spread: bool) -> set[int]:
    try:
        return take_packed(topo, available, n, spread, False)
    except KubeletError:
        return set()


class _Best:
    __slots__ = ("balance", "remainder", "combo", "one_socket")

    def __init__(self) -> None:
        self.balance = MAX_FLOAT
        self.remainder: _Slice | None = None
        self.combo: _Slice | None = None
        self.one_socket = False


@dataclass
class _Dist:
    """takeByTopologyNUMADistributed's inputs, shared by its parts."""

    topo: Topology
    acc: _Acc
    numas: list[int]
    num_cpus: int
    group: int
    spread: bool
    align: bool  # align-by-socket (1.37+)
    new: bool  # 1.37+: the final cap of the distribution


def take_distributed(
    topo: Topology, available, num_cpus: int, group: int, spread: bool, align_by_socket: bool, release: str
) -> set[int]:
    """takeByTopologyNUMADistributed (1.35: no align-by-socket branch, no final cap)."""
    new = release != "1.35"
    if num_cpus % group != 0:
        return take_packed(topo, available, num_cpus, spread, False)
    acc = _Acc(topo, available, num_cpus, spread)
    if acc.satisfied():
        return acc.result
    if acc.failed():
        raise _not_enough(num_cpus, available)
    dist = _Dist(topo, acc, acc.sort_numa(), num_cpus, group, spread, align_by_socket and new, new)
    min_numas, max_numas = acc.range_numa_needed(group)
    for k in range(min_numas, max_numas + 1):
        best = _Best()
        _iterate_combinations(dist.numas, k, lambda combo_s, best=best: _score_combo(dist, best, combo_s))
        if best.combo is None:
            continue
        return _take_best(dist, best)
    return take_packed(topo, available, num_cpus, spread, False)


def _score_combo(dist: _Dist, best: _Best, combo_s: _Slice) -> bool:
    """The callback over each combination of k NUMA nodes; True stops the iteration."""
    if best.balance == 0 and (not dist.align or best.one_socket):
        return True
    d, group, num_cpus = dist.acc.details, dist.group, dist.num_cpus
    combo = combo_s.list()
    if len(d.cpus_in(NUMA, *combo)) < num_cpus:
        return False
    groups = 0
    for n in combo:
        groups += d.count_in(NUMA, n) // group
    if groups * group < num_cpus:
        return False
    distribution = (num_cpus // len(combo) // group) * group
    if dist.align:
        for n in combo:
            avail_in = d.count_in(NUMA, n) // group * group
            if distribution > avail_in:
                distribution = avail_in
    for n in combo:
        if d.count_in(NUMA, n) < distribution:
            return False
    after = {n: d.count_in(NUMA, n) for n in dist.numas}
    for n in combo:
        after[n] -= distribution
    remainder = num_cpus - distribution * len(combo)
    local = _best_remainder(dist, combo, after, remainder)
    in_same_socket = False
    if dist.align:
        in_same_socket = dist.topo.numa_nodes_in_same_socket(combo)
    better = local.balance < best.balance
    if dist.align and in_same_socket != best.one_socket:
        better = in_same_socket
    if better:
        best.balance = local.balance
        best.remainder = local.remainder
        best.combo = combo_s
        if dist.align:
            best.one_socket = in_same_socket
    return False


def _best_remainder(dist: _Dist, combo: list[int], after: dict, remainder: int) -> _Best:
    """Where the remainder goes: the subset of the combination with the best balance."""
    group = dist.group
    remainder_combo = [n for n in combo if after[n] >= group]
    local = _Best()
    if remainder == 0:
        local.balance = _stddev(list(after.values()))
        local.remainder = None

    def per_subset(subset_s: _Slice) -> bool:
        subset = subset_s.list()
        rem = remainder
        aa = dict(after)
        if sum(aa[n] for n in subset) < rem:
            return False
        while rem > 0:
            moved = False
            for n in subset:
                if rem == 0:
                    break
                if aa[n] < group:
                    continue
                aa[n] -= group
                rem -= group
                moved = True
            if not moved and rem > 0:
                raise Hang("distribute-cpus-across-numa: the remainder cannot be placed")
        balance = _stddev(list(aa.values()))
        if balance < local.balance:
            local.balance = balance
            local.remainder = subset_s
        return False

    kk = len(remainder_combo)
    while remainder > 0 and kk >= 1:
        _iterate_combinations(remainder_combo, kk, per_subset)
        kk -= 1
    return local


def _take_best(dist: _Dist, best: _Best) -> set[int]:
    acc, group, num_cpus, topo = dist.acc, dist.group, dist.num_cpus, dist.topo
    assert best.combo is not None
    best_combo = best.combo.list()
    best_remainder = best.remainder.list() if best.remainder is not None else []
    distribution = (num_cpus // len(best_combo) // group) * group
    if dist.new:
        for n in best_combo:
            avail_in = acc.details.count_in(NUMA, n) // group * group
            if distribution > avail_in:
                distribution = avail_in
    for n in best_combo:
        acc.take(_packed_or_empty(topo, set(acc.details.cpus_in(NUMA, n)), distribution, dist.spread))
    remainder = num_cpus - distribution * len(best_combo)
    while remainder > 0:
        moved = False
        for n in best_remainder:
            if remainder == 0:
                break
            if acc.details.count_in(NUMA, n) < group:
                continue
            acc.take(_packed_or_empty(topo, set(acc.details.cpus_in(NUMA, n)), group, dist.spread))
            remainder -= group
            moved = True
        if not moved and remainder > 0:
            raise Hang("distribute-cpus-across-numa: the remainder is never allocated")
    if acc.needed > 0:
        raise KubeletError("alloc", f"accounting error, not enough CPUs allocated, remaining: {acc.needed}")
    if acc.needed < 0:
        raise KubeletError("alloc", f"accounting error, too many CPUs allocated, remaining: {acc.needed}")
    return acc.result


# --- policy_options.go --------------------------------------------------------------------------

CPU_OPTIONS = (
    "full-pcpus-only",
    "distribute-cpus-across-numa",
    "align-by-socket",
    "distribute-cpus-across-cores",
    "strict-cpu-reservation",
    "prefer-align-cpus-by-uncorecache",
)


def _parse_bool(name: str, value: str) -> bool:
    """strconv.ParseBool."""
    if value in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if value in ("0", "f", "F", "FALSE", "false", "False"):
        return False
    raise KubeletError("PolicyError", f'bad value for option "{name}": strconv.ParseBool: parsing "{value}": invalid syntax')


@dataclass(frozen=True)
class CpuOptions:
    full_pcpus_only: bool = False
    distribute_numa: bool = False
    align_by_socket: bool = False
    distribute_cores: bool = False
    strict_reservation: bool = False
    uncore: bool = False


def parse_cpu_options(opts: dict) -> CpuOptions:
    """NewStaticPolicyOptions (every option available: kubelet run with the alpha gate on)."""
    names = dict(zip(CPU_OPTIONS, ("full_pcpus_only", "distribute_numa", "align_by_socket", "distribute_cores",
                                   "strict_reservation", "uncore")))
    vals: dict[str, bool] = {}
    for name, value in opts.items():
        if name not in names:
            raise KubeletError("PolicyError", f'unknown CPU Manager Policy option: "{name}"')
        vals[names[name]] = _parse_bool(name, str(value))
    o = CpuOptions(**vals)
    pairs = (
        (o.full_pcpus_only and o.distribute_cores, "full-pcpus-only", "distribute-cpus-across-cores"),
        (o.distribute_numa and o.distribute_cores, "distribute-cpus-across-numa", "distribute-cpus-across-cores"),
        (o.uncore and o.distribute_cores, "prefer-align-cpus-by-uncorecache", "distribute-cpus-across-cores"),
        (o.uncore and o.distribute_numa, "prefer-align-cpus-by-uncorecache", "distribute-cpus-across-numa"),
    )
    for bad, a, b in pairs:
        if bad:
            raise KubeletError("PolicyError", f"static policy options {a} and {b} can not be used at the same time")
    return o


# --- topology manager -------------------------------------------------------------------------


@dataclass(frozen=True)
class Hint:
    mask: int | None  # NUMA bitmask; None: no preference
    preferred: bool


def _bits(mask: int) -> list[int]:
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


def _count(mask: int) -> int:
    return mask.bit_count()


def _narrower(a: int, b: int) -> bool:
    ca, cb = _count(a), _count(b)
    return a < b if ca == cb else ca < cb


@dataclass
class TopologyManager:
    policy: str  # none, best-effort, restricted, single-numa-node
    scope: str
    nodes: list[int]
    prefer_closest: bool = False
    distances: dict = field(default_factory=dict)

    def default_mask(self) -> int:
        m = 0
        for n in self.nodes:
            m |= 1 << n
        return m

    def _avg_distance(self, mask: int) -> float:
        cache = self.__dict__.setdefault("_avg_cache", {})
        if mask not in cache:
            cache[mask] = self._avg_distance_of(mask)
        return cache[mask]

    def _avg_distance_of(self, mask: int) -> float:
        bits = _bits(mask)
        if not bits:
            return 0.0
        s = 0.0
        c = 0.0
        for a in bits:
            for b in bits:
                row = self.distances.get(a)
                if row is None or b >= len(row):
                    raise KubeletError("Panic", "runtime error: index out of range (NUMA distances)")
                s += float(row[b])
                c += 1
        return s / c

    def _closest(self, m1: int, m2: int) -> int:
        if _count(m1) != _count(m2):
            return m1 if _narrower(m1, m2) else m2
        d1, d2 = self._avg_distance(m1), self._avg_distance(m2)
        if d1 == d2:
            return m1 if m1 < m2 else m2
        return m1 if d1 < d2 else m2

    def merge(self, providers: list[dict | None]) -> tuple[Hint, bool]:
        """policy.Merge for best-effort, restricted and single-numa-node."""
        filtered: list[list[Hint]] = []
        for hints in providers:
            if not hints:
                filtered.append([Hint(None, True)])
                continue
            for res in hints:
                if hints[res] is None:
                    filtered.append([Hint(None, True)])
                elif len(hints[res]) == 0:
                    filtered.append([Hint(None, False)])
                else:
                    filtered.append(hints[res])
        single = self.policy == "single-numa-node"
        if single:
            filtered = [
                [h for h in r if (h.mask is None and h.preferred) or (h.mask is not None and _count(h.mask) == 1 and h.preferred)]
                for r in filtered
            ]
        best = self._merge(filtered, single)
        if single and best.mask == self.default_mask():
            best = Hint(None, best.preferred)
        admit = True if self.policy == "best-effort" else best.preferred
        return best, admit

    def _merge(self, hints: list[list[Hint]], single: bool) -> Hint:
        best_np = 0
        for r in hints:
            # narrowestHint: fewest NUMA nodes, then the lower mask (the first of equals)
            counts = [h.mask.bit_count() for h in r if h.mask is not None]
            if counts:
                best_np = max(best_np, min(counts))
        closest = (not single) and self.prefer_closest

        def cmp_masks(cur: Hint, cand: Hint) -> Hint:
            cm, dm = cur.mask or 0, cand.mask or 0
            if dm == cm:
                return cur
            b = self._closest(cm, dm) if closest else (cm if _narrower(cm, dm) else dm)
            return cur if b == cm else cand

        default = self.default_mask()
        best: Hint | None = None
        if len(hints) == 1:  # one provider, one resource: each hint is its own permutation
            # a hint whose mask is inside the default one is its own permutation (Hint is frozen: kept as is)
            cands = [h if h.mask is not None and h.mask & default == h.mask else
                     Hint(default if h.mask is None else default & h.mask, h.preferred) for h in hints[0]]
            # compare() never lets an unpreferred hint replace a preferred one, and the first preferred one
            # replaces any unpreferred: with a preferred candidate (of a mask compare() counts), folding over
            # the preferred alone, in the same order, gives the same hint (and spares ~250 compares a call)
            if any(c.preferred and c.mask for c in cands):
                cands = [c for c in cands if c.preferred]
            for c in cands:
                best = _compare(best, c, best_np, cmp_masks)
            return best if best is not None else Hint(default, False)
        preferred = _preferred_merges(hints, default)
        # a preferred merge beats every unpreferred one: those need not be built when there is one
        cands = preferred if any(h.mask for h in preferred) else _unpreferred_merges(hints, default)
        for cand in cands:
            best = _compare(best, cand, best_np, cmp_masks)
        return best if best is not None else Hint(default, False)


def _preferred_merges(hints: list[list[Hint]], default: int) -> list[Hint]:
    """The preferred hints of mergePermutation over the cross product: every mask of the permutation the same
    (or none) and every hint preferred. A state: the mask so far (None: none yet)."""
    states: set[int | None] = {None}
    for resource in hints:
        masks = {h.mask for h in resource if h.preferred and h.mask is not None}
        any_numa = any(h.preferred and h.mask is None for h in resource)
        nxt: set[int | None] = set()
        for first in states:
            if first is None:
                nxt |= masks
                if any_numa:
                    nxt.add(None)
            elif any_numa or first in masks:
                nxt.add(first)
        states = nxt
    return sorted((Hint(default if f is None else default & f, True) for f in states), key=lambda h: h.mask or 0)


def _unpreferred_merges(hints: list[list[Hint]], default: int) -> list[Hint]:
    """_merged_permutations where no preferred merge has a mask: a permutation whose merge is preferred then
    counts no NUMA node (compare() passes it over), so the candidates are the distinct ANDs of one mask from
    each provider (none: the default), each unpreferred; plain integers, not _merged_permutations' states."""
    accs = {default}
    for resource in hints:
        masks = {h.mask for h in resource if h.mask is not None}
        keep = any(h.mask is None for h in resource)
        accs = {a & m for a in accs for m in masks} | (accs if keep else set())
    return [Hint(a, False) for a in sorted(accs) if a]


def _merged_permutations(hints: list[list[Hint]], default: int) -> list[Hint]:
    """mergePermutation over the cross product of every provider's hints, as the set of distinct merged
    hints: HintMerger.compare is a total order on (mask, preferred), so which permutation comes first does
    not change the one it keeps (test_fit_memory checks this against the product itself). The product of
    CPU, memory and hugepages hints on 8 NUMA nodes is 255^3 permutations; these states stay a few hundred.
    A state: (first mask or None, the AND so far, all masks equal, all preferred)."""
    states: set[tuple[int | None, int, bool, bool]] = {(None, default, True, True)}
    for resource in hints:
        nxt: set[tuple[int | None, int, bool, bool]] = set()
        for first, acc, equal, pref in states:
            for h in resource:
                p = pref and h.preferred
                if h.mask is None:
                    nxt.add((first, acc, equal, p))
                elif first is None:
                    nxt.add((h.mask, acc & h.mask, equal, p))
                elif equal and h.mask == first:
                    nxt.add((first, acc, True, p))
                else:  # masks differ: never preferred, and the first no longer matters
                    nxt.add((-1, acc & h.mask, False, False))
        states = nxt
    return sorted({Hint(acc, equal and pref) for _first, acc, equal, pref in states}, key=lambda h: (h.mask, h.preferred))


def _compare(cur: Hint | None, cand: Hint, best_np: int, cmp_masks) -> Hint | None:
    """HintMerger.compare."""
    cc = _count(cand.mask or 0)
    if cc == 0:
        return cur
    if cur is None:
        return cand
    if not cur.preferred and cand.preferred:
        return cand
    if cur.preferred and not cand.preferred:
        return cur
    if cur.preferred and cand.preferred:
        return cmp_masks(cur, cand)
    cu = _count(cur.mask or 0)
    if cu > best_np:
        return cmp_masks(cur, cand)
    if cu == best_np:
        if cc != best_np:
            return cur
        return cmp_masks(cur, cand)
    if cc > best_np:
        return cur
    if cc == best_np:
        return cand
    if cc > cu:
        return cand
    if cc < cu:
        return cur
    return cmp_masks(cur, cand)


def new_topology_manager(topo_nodes: list[int], policy: str, scope: str, options: dict, distances: dict) -> TopologyManager:
    """topologymanager.NewManager."""
    if policy == "none":
        return TopologyManager("none", scope, topo_nodes)
    prefer_closest = False
    max_numa = 8
    for name, value in options.items():
        if name == "prefer-closest-numa-nodes":
            prefer_closest = _parse_bool(name, str(value))
        elif name == "max-allowable-numa-nodes":
            try:
                v = int(str(value), 10)
            except ValueError:
                raise KubeletError("TopologyManagerError", f'unable to convert policy option to integer "{name}": strconv.Atoi: parsing "{value}": invalid syntax') from None
            if v < 8:
                raise KubeletError("TopologyManagerError", f'the minimum value of "{name}" should not be less than 8')
            max_numa = v
        else:
            raise KubeletError("TopologyManagerError", f'unknown Topology Manager Policy option: "{name}"')
    dist: dict = {}
    for n in topo_nodes:
        row = distances.get(n)
        if prefer_closest and row is None:
            raise KubeletError("TopologyManagerError", "cannot discover NUMA topology: error getting NUMA distances from cadvisor")
        dist[n] = row
    if len(topo_nodes) > max_numa:
        raise KubeletError("TopologyManagerError", f"unsupported on machines with more than {max_numa} NUMA Nodes")
    if policy not in ("best-effort", "restricted", "single-numa-node"):
        raise KubeletError("TopologyManagerError", f'unknown policy: "{policy}"')
    if scope not in ("container", "pod"):
        raise KubeletError("TopologyManagerError", f'unknown scope: "{scope}"')
    return TopologyManager(policy, scope, topo_nodes, prefer_closest, dist)


# --- policy_static.go ---------------------------------------------------------------------------


class StaticPolicy:
    def __init__(self, topo: Topology, num_reserved: int, reserved: set[int], tm: TopologyManager, opts: CpuOptions, release: str):
        """NewStaticPolicy."""
        if opts.align_by_socket:
            if tm.policy == "single-numa-node":
                raise KubeletError("PolicyError", "Topolgy manager single-numa-node policy is incompatible with CPUManager align-by-socket policy option")
            if topo.num_sockets > topo.num_numa:
                raise KubeletError("PolicyError", "Align by socket is not compatible with hardware where number of sockets are more than number of NUMA")
        self.topo = topo
        self.tm = tm
        self.opts = opts
        self.release = release
        self.group = topo.cpus_per_core()
        all_cpus = topo.details.cpus()
        if reserved:
            res = set(reserved)
        else:
            try:
                res = self.take_by_topology(all_cpus, num_reserved)
            except KubeletError:
                res = set()
        if len(res) != num_reserved:
            raise KubeletError("PolicyError", f"[cpumanager] unable to reserve the required amount of CPUs (size of {cpuset_str(res)} did not equal {num_reserved})")
        phys: set[int] = set()
        for cpu in res:
            t = topo.details.info.get(cpu)
            if t is None:
                raise KubeletError("PolicyError", f"[cpumanager] unable to build the reserved physical CPUs from the reserved set: unknown CPU ID: {cpu}")
            phys |= topo.details.cpus_in(CORE, t[CORE])
        self.reserved = res
        self.reserved_physical = phys
        self.numa_sockets = {n: frozenset(topo.details.ids_in(SOCKET, NUMA, n)) for n in topo.details.idx[NUMA]}

    def sockets_of(self, numas) -> set[int]:
        """SocketsInNUMANodes."""
        out: set[int] = set()
        for n in numas:
            out |= self.numa_sockets.get(n, frozenset())
        return out

    def take_by_topology(self, available, n: int) -> set[int]:
        spread = self.opts.distribute_cores
        if self.opts.distribute_numa:
            group = self.group if self.opts.full_pcpus_only else 1
            return take_distributed(self.topo, available, n, group, spread, self.opts.align_by_socket, self.release)
        return take_packed(self.topo, available, n, spread, self.opts.uncore)

    def start(self, default: set[int], assignments: dict) -> set[int]:
        """validateState: returns the default set kubelet would run with."""
        all_cpus = self.topo.details.cpus()
        if self.opts.strict_reservation:
            all_cpus -= self.reserved
        if not default:
            if assignments:
                raise KubeletError("StateError", "default cpuset cannot be empty")
            return set(all_cpus)
        if self.opts.strict_reservation:
            inter = self.reserved & default
            if inter:
                raise KubeletError("StateError", f'some of strictly reserved cpus: "{cpuset_str(inter)}" are present in defaultCpuSet: "{cpuset_str(default)}"')
        elif (self.reserved & default) != self.reserved:
            raise KubeletError("StateError", f'not all reserved cpus: "{cpuset_str(self.reserved)}" are present in defaultCpuSet: "{cpuset_str(default)}"')
        known = set(default)
        for pod, ctrs in assignments.items():
            for name, cset in ctrs.items():
                if default & cset:
                    raise KubeletError("StateError", f'pod: {pod}, container: {name} cpuset: "{cpuset_str(cset)}" overlaps with default cpuset "{cpuset_str(default)}"')
                known |= cset
        if known != all_cpus:
            raise KubeletError("StateError", f'current set of available CPUs "{cpuset_str(all_cpus)}" doesn\'t match with CPUs in state "{cpuset_str(known)}"')
        return default

    def _masks(self) -> list[tuple[int, int, int, int, int]]:
        """Every NUMA mask in IterateBitMasks' order: (mask, position mask, size, CPUs in it,
        sockets under it); the machine does not change, so this is computed once."""
        cached = self.__dict__.get("_mask_table")
        if cached is not None:
            return cached
        full = self.topo.details
        numas = sorted(full.idx[NUMA])
        table = []
        for size in range(1, len(numas) + 1):
            for pos in itertools.combinations(range(len(numas)), size):
                mask = pm = total = 0
                for i in pos:
                    mask |= 1 << numas[i]
                    pm |= 1 << i
                    total += full.count_in(NUMA, numas[i])
                table.append((mask, pm, size, total, len(self.sockets_of(numas[i] for i in pos))))
        self.__dict__["_mask_table"] = table
        # per row its two possible hints (Hint is frozen: one object serves every call), and the CPUs of
        # each NUMA node in position order (a node's free count is one set intersection)
        self.__dict__["_row_hints"] = [(Hint(row[0], False), Hint(row[0], True)) for row in table]
        self.__dict__["_numa_cpus"] = [frozenset(full.cpus_in(NUMA, n)) for n in numas]
        return table

    def _min_sizes(self, request: int) -> tuple[int, int]:
        """The fewest NUMA nodes (and sockets) whose CPUs, free or not, could hold `request`: the
        machine's alone, so kept per request."""
        cache = self.__dict__.setdefault("_min_size_cache", {})
        got = cache.get(request)
        if got is None:
            table = self._masks()
            min_size = len(self.topo.details.idx[NUMA])
            for _mask, _pm, size, total, _s in table:
                if total >= request and size < min_size:
                    min_size = size
            per_socket = self.topo.num_numa // self.topo.num_sockets if self.topo.num_sockets else 0
            got = cache[request] = (min_size, (min_size + per_socket - 1) // per_socket if per_socket else -1)
        return got

    def _every_mask_hints(self, request: int) -> list[Hint]:
        """The hints when every NUMA node alone has `request` free CPUs: every mask, preferred as below."""
        cache = self.__dict__.setdefault("_every_mask_cache", {})
        got = cache.get(request)
        if got is None:
            min_size, min_sockets = self._min_sizes(request)
            per_socket = self.topo.num_numa // self.topo.num_sockets if self.topo.num_sockets else 0
            align = self.opts.align_by_socket and per_socket > 0
            got = cache[request] = [pair[(align and sockets == min_sockets) or size == min_size]
                                    for (_m, _pm, size, _t, sockets), pair in zip(self._masks(), self.__dict__["_row_hints"])]
        return got

    def hints(self, available: set[int], reusable: set[int], request: int) -> list[Hint]:
        """generateCPUTopologyHints (counted per NUMA node: the same answer, without the
        loop over every CPU for every mask)."""
        table = self._masks()
        numa_cpus, row_hints = self.__dict__["_numa_cpus"], self.__dict__["_row_hints"]
        full = self.topo.details
        pos_of = {n: i for i, n in enumerate(sorted(full.idx[NUMA]))}
        avail = [len(s.intersection(available)) for s in numa_cpus]
        reuse_pm = 0
        for c in reusable:
            reuse_pm |= 1 << pos_of[full.info[c][NUMA]]
        n_reuse = len(reusable)
        if not reuse_pm and min(avail, default=0) >= request:  # every mask holds it: the hints depend on request alone
            return list(self._every_mask_hints(request))
        sums = [0] * (1 << len(avail))  # free CPUs under each position mask
        for pm in range(1, len(sums)):
            low = pm & -pm
            sums[pm] = sums[pm ^ low] + avail[low.bit_length() - 1]
        min_size, min_sockets = self._min_sizes(request)
        per_socket = self.topo.num_numa // self.topo.num_sockets if self.topo.num_sockets else 0
        align = self.opts.align_by_socket and per_socket > 0
        need = request - n_reuse
        out: list[Hint] = []
        for (_mask, pm, size, _total, sockets), pair in zip(table, row_hints):
            if reuse_pm & ~pm or sums[pm] < need:
                continue
            out.append(pair[(align and sockets == min_sockets) or size == min_size])
        return out

    def _socket_aligned(self, h: Hint, min_size: int) -> bool:
        per_socket = self.topo.num_numa // self.topo.num_sockets if self.topo.num_sockets else 0
        if per_socket == 0:
            return False
        min_sockets = (min_size + per_socket - 1) // per_socket
        return len(self.sockets_of(_bits(h.mask or 0))) == min_sockets

    def aligned_cpus(self, mask: int, allocatable: set[int]) -> set[int]:
        d = self.topo.details
        bits = _bits(mask)
        out: set[int] = set()
        if self.opts.align_by_socket:
            for s in self.sockets_of(bits):
                out |= allocatable & d.cpus_in(SOCKET, s)
            return out
        for n in bits:
            out |= allocatable & d.cpus_in(NUMA, n)
        return out

    def smt_check(self, default: set[int], n: int) -> None:
        """enforceSMTAlignment."""
        if not self.opts.full_pcpus_only:
            return
        if self.group == 0 or n % self.group != 0:
            raise KubeletError("SMTAlignmentError", f"SMT Alignment Error: requested {n} cpus not multiple cpus per core = {self.group}")
        avail = len(default - self.reserved_physical)
        if n > avail:
            raise KubeletError(
                "SMTAlignmentError",
                f"SMT Alignment Error: not enough free physical CPUs: available physical CPUs = {avail}, requested CPUs = {n}, CPUs per core = {self.group}",
            )

    def allocate_cpus(self, default: set[int], n: int, mask: int | None, reusable: set[int]) -> set[int]:
        """allocateCPUs: aligned CPUs first, then the rest; returns the CPUs (default is updated)."""
        allocatable = (default - self.reserved) | reusable
        result: set[int] = set()
        if mask is not None:
            aligned = self.aligned_cpus(mask, allocatable)
            result |= self.take_by_topology(aligned, min(n, len(aligned)))
        if len(result) < n:  # asked for none, takeByTopology returns none: spare its copy of the free CPUs
            result |= self.take_by_topology(allocatable - result, n - len(result))
        default -= result
        return result


def _admission_error(e: KubeletError) -> dict:
    if e.kind == "alloc":
        return {"kind": "UnexpectedAdmissionError", "message": f"Allocate failed due to {e.message}, which is unexpected"}
    return {"kind": e.kind, "message": e.message}


TOPOLOGY_AFFINITY_MESSAGE = "Resources cannot be allocated with Topology locality"


@dataclass
class Decision:
    """What kubelet decides for the next pod, with the hint it admitted it under."""

    cpus: list[str] | None
    error: dict | None
    hints: list[Hint] = field(default_factory=list)
    best: Hint | None = None
    reserved: set[int] = field(default_factory=set)
    sets: list[set[int] | None] = field(default_factory=list)
    memory: list[list[int] | None] | None = None  # per container the NUMA nodes of its memory (memory manager)
    devices: list[dict] | None = None  # per container, resource -> its devices' tiers (devices.py allocate)
    device_errors: list[str] = field(default_factory=list)  # every refusal the device manager could word

    def as_json(self) -> dict:
        out: dict = {"cpus": self.cpus, "error": self.error}
        if self.memory is not None:
            out["memory"] = self.memory
        if self.devices is not None:  # per container, resource -> [{"pool": ids, "take": n, "numa_nodes": [...]}]
            out["devices"] = [{r: [{"pool": sorted(t.pool), "take": t.take, "numa_nodes": list(t.numa_nodes)} for t in tiers]
                               for r, tiers in c.items()} for c in self.devices]
        if self.device_errors:
            out["device_errors"] = self.device_errors
        return out


def decide(case: dict, release: str = DEFAULT_RELEASE) -> Decision:
    """Admit the next Guaranteed pod (containers of case["containers"] CPUs each) as kubelet
    `release` would, on the node and state of `case`."""
    try:
        k = Kubelet(case, release)
    except Hang as e:
        return Decision(None, {"kind": "Hang", "message": str(e)})
    except KubeletError as e:
        return Decision(None, {"kind": e.kind, "message": e.message})
    mem, dev = case.get("memory"), case.get("devices")
    return k.admit([int(n) for n in case.get("containers") or ()], memory=None if mem is None else mem.get("containers") or [],
                   devices=None if dev is None else dev.get("containers") or [])


class Kubelet:
    """A kubelet started on the case's node and state (NewManager, NewStaticPolicy, Start):
    setup errors raise KubeletError; admit() then answers for any pod, as often as asked."""

    def __init__(self, case: dict, release: str = DEFAULT_RELEASE):
        if release not in RELEASES:
            raise ValueError(f"no port of kubelet {release}")
        self.release = release
        spec = case.get("topology")
        if spec:  # a CPUTopology as kubelet's tests write it: no Discover
            topo = topology_of(spec["cpu_details"], spec.get("num_cpus", 0), spec.get("num_sockets", 0),
                               spec.get("num_cores", 0), spec.get("num_uncore_cache", 0), spec.get("num_numa_nodes", 0))
        else:
            topo = discover(case["cpus"])
        nodes = sorted(topo.details.idx[NUMA].keys() | set(case.get("cpuless_numa") or ()))
        distances = {int(k): v for k, v in (case.get("distances") or {}).items()}
        tm = new_topology_manager(nodes, case.get("tm_policy", "none"), case.get("tm_scope", "container"),
                                  case.get("tm_options") or {}, distances)
        try:
            reserved = cpuset_parse(case.get("reserved", ""))
        except ValueError as e:
            raise KubeletError("BadCase", str(e)) from None
        opts = parse_cpu_options(case.get("cpu_options") or {})
        policy = StaticPolicy(topo, case.get("num_reserved", 0), reserved, tm, opts, release)
        assignments = {p: {c: cpuset_parse(s) for c, s in ctrs.items()} for p, ctrs in (case.get("assignments") or {}).items()}
        if case.get("default") is not None:
            default = cpuset_parse(case["default"])
        elif assignments:
            default = topo.details.cpus()
            for ctrs in assignments.values():
                for s in ctrs.values():
                    default -= s
            if opts.strict_reservation:
                default -= policy.reserved
        else:
            default = set()
        self.topo, self.tm, self.policy = topo, tm, policy
        self.memory = None if case.get("memory") is None else memory_policy(case["memory"], case.get("inactive") or ())
        self.devices = None if case.get("devices") is None else DeviceManager.from_case(
            case["devices"], nodes, case.get("inactive") or (), release)
        self.default = set(policy.start(default, assignments))
        # removeStaleState (cpu_manager.go), run before the next pod's hints and Allocate: the containers of pods
        # kubelet no longer counts active leave the state, their CPUs back to the shared pool (RemoveContainer;
        # a whole pod's containers release the union of their CPUs, whatever the order)
        for pod in case.get("inactive") or ():
            for cset in assignments.pop(pod, {}).values():
                self.default |= cset

    def admit(self, containers: list[int], commit: bool = False, memory: list[dict] | None = None,
              devices: list[dict] | None = None) -> Decision:
        """The pod's admission; with commit, its CPUs leave the shared pool (the next pod sees that), and its
        memory the memory manager's free memory. `memory`: per container its requests (= limits) in bytes,
        {"memory": .., "hugepages-2Mi": ..}, placed by the memory manager when the case has one; None: the
        memory manager is not asked (the CPUs alone). `devices`: per container its device requests
        {resource: count}, for the case's device manager (devices.py)."""
        mem = None
        asked = self.memory is not None and memory is not None
        if self.memory is not None and memory is not None and len(memory) == len(containers) and _guaranteed(containers, memory):
            mem = self.memory if commit else self.memory.copy()
        try:
            default = self.default if commit else set(self.default)
            dev = None if self.devices is None or not devices else self.devices if commit else self.devices.copy()
            d = self._admit(default, containers, mem, memory or [], (dev, devices or []))
        except Hang as e:
            return Decision(None, {"kind": "Hang", "message": str(e)}, reserved=self.policy.reserved)
        if asked and d.error is None and d.memory is None:  # not a Guaranteed pod: the memory manager passes
            d.memory = [None] * len(containers)
        return d

    def _admit(self, default: set[int], containers: list[int], mem, reqs: list[dict], devs=(None, [])) -> Decision:
        """The topology manager's Admit with its providers in kubelet's order (device manager, CPU manager,
        memory manager): per container (or once per pod) their hints merged, then each provider's Allocate
        under the best."""
        from .memory import pod_requests, requests_of

        policy, tm = self.policy, self.tm
        decision = Decision(None, None, reserved=policy.reserved)
        got: list[set[int] | None] = []
        placed: list[list[int] | None] = []

        dev, dev_reqs = devs
        dev_reqs = [dev_reqs[i] if i < len(dev_reqs) else {} for i in range(len(containers))]
        placed_devices: list[dict] = []

        def allocate(i: int, n: int, hint: Hint) -> None:
            if dev is not None:
                decision.device_errors = dev.refusals(dev_reqs[i])
                placed_devices.append(dev.allocate(dev_reqs[i], hint.mask))
            if n == 0:
                got.append(None)
            else:
                policy.smt_check(default, n)
                got.append(policy.allocate_cpus(default, n, hint.mask, set()))
            if mem is not None:
                placed.append(mem.allocate(hint, requests_of(reqs[i])))

        def affinity(n: int, mem_req: dict, dev_req: dict) -> Hint:
            cpu = None if n == 0 else {"cpu": policy.hints(default - policy.reserved, set(), n)}
            decision.hints = cpu["cpu"] if cpu else []
            # the device manager's hints come first; with no device asked it has no preference, which changes
            # no merge, and is left out
            dev_hints = [h] if dev is not None and (h := dev.hints(dev_req)) else []
            best, admit = tm.merge([*dev_hints, cpu] if mem is None else [*dev_hints, cpu, mem.hints(mem_req)])
            decision.best = best
            if not admit:
                raise KubeletError("TopologyAffinityError", TOPOLOGY_AFFINITY_MESSAGE)
            return best

        try:
            if tm.policy == "none":
                for i, n in enumerate(containers):
                    allocate(i, n, Hint(None, False))
            elif tm.scope == "pod":
                best = affinity(sum(containers), pod_requests(reqs) if mem is not None else {}, _summed(dev_reqs))
                for i, n in enumerate(containers):
                    allocate(i, n, best)
            else:
                for i, n in enumerate(containers):
                    allocate(i, n, affinity(n, requests_of(reqs[i]) if mem is not None else {}, dev_reqs[i]))
        except KubeletError as e:
            decision.error = _admission_error(e)
            return decision
        decision.sets = got
        decision.cpus = ["" if g is None else cpuset_str(g) for g in got]
        decision.memory = placed if mem is not None else None
        decision.devices = placed_devices if dev is not None else None
        return decision


def _summed(reqs: list[dict]) -> dict[str, int]:
    """The pod's device requests (resource.PodLimits over its app containers)."""
    out: dict[str, int] = {}
    for r in reqs:
        for res, n in r.items():
            out[res] = out.get(res, 0) + int(n)
    return out


def _guaranteed(containers: list[int], memory: list[dict]) -> bool:
    """The pod's QoS is Guaranteed (v1qos.GetPodQOS, requests = limits): every container has a CPU and a
    memory limit above zero; else the memory manager leaves it alone."""
    return bool(containers) and all(n > 0 for n in containers) and all(int(m.get("memory") or 0) > 0 for m in memory)


def memory_policy(mem: dict, inactive=()):
    """The memory manager's Static policy on the case's machineState, with the containers of pods kubelet no
    longer counts active released first (its removeStaleState: RemoveContainer, releaseMemory; a pod with
    pod-level memory, 1.37's podEntries, releases that once, not its containers' blocks)."""
    from .memory import MemoryPolicy

    policy = MemoryPolicy.from_case(mem)
    for pod in inactive:
        pod_blocks = (mem.get("pod_assignments") or {}).get(pod)
        per_ctr = [pod_blocks] if pod_blocks else ((mem.get("assignments") or {}).get(pod) or {}).values()
        for blocks in per_ctr:
            policy.release([(b.get("type", ""), list(b.get("numaAffinity") or ()), int(b.get("size") or 0))
                            for b in blocks or ()])
    return policy
