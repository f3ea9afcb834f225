"""What still fits where: per NUMA node and socket, the free CPUs, the free whole cores, and the largest
Guaranteed container kubelet could give from that place alone (pure functions of a started Kubelet).

"From that place alone": kubelet's own decision, made as if every CPU outside the place were taken (the
port is asked, on a copy of the shared pool narrowed to the place). That answers "will a 16-CPU pod still
fit on NUMA 1": kubelet's next container may well go elsewhere (it fills the fullest NUMA node first, see
predict()), but that is the prediction's answer, not this one; asking "where would the next one go"
per place read 0 for a NUMA node with 32 free CPUs, which is not what fits there.
"""

from __future__ import annotations

from .kubelet import CORE, NUMA, SOCKET, Kubelet, cpuset_str


def _whole_cores(k: Kubelet, cpus: set[int]) -> bool:
    d = k.topo.details
    return all(d.cpus_in(CORE, d.info[c][CORE]) <= cpus for c in cpus)


def largest_alone(k: Kubelet, place: set[int], whole_cores: bool) -> int:
    """The largest container kubelet would admit with only `place`'s free CPUs free (with whole_cores:
    given as whole cores only). kubelet's shared pool is put back as it was."""
    saved = k.default
    k.default = (saved & place) | (saved & k.policy.reserved)
    try:
        free = k.default - k.policy.reserved
        per_core = k.topo.cpus_per_core() or 1
        for n in range(len(free), 0, -1):
            if whole_cores and n % per_core:
                continue
            d = k.admit([n])
            if d.error is not None or not d.sets or d.sets[0] is None:
                continue
            if whole_cores and not _whole_cores(k, d.sets[0]):
                continue
            return n
        return 0
    finally:
        k.default = saved


def places(k: Kubelet, with_largest: bool = True) -> tuple[list[dict], list[dict]]:
    """Per NUMA node and per socket: the free CPUs (the shared pool minus the reserved set), the free
    whole cores, and (with_largest) the largest container kubelet could give there: any CPUs, whole
    cores only."""
    d = k.topo.details
    free_all = k.default - k.policy.reserved
    per_core = k.topo.cpus_per_core() or 1
    per_numa: list[dict] = []
    per_socket: list[dict] = []
    for level, out, key in ((NUMA, per_numa, "numa_node"), (SOCKET, per_socket, "socket")):
        for i in sorted(d.idx[level]):
            cpus = set(d.cpus_in(level, i))
            free = free_all & cpus
            whole = [c for c in d.ids_in(CORE, level, i)
                     if d.cpus_in(CORE, c) <= free and len(d.cpus_in(CORE, c)) == per_core]
            entry: dict = {key: i, "free_cpus": cpuset_str(free), "free_count": len(free), "free_whole_cores": len(whole)}
            if with_largest:
                entry["largest_fit"] = {"cpus": largest_alone(k, cpus, False),
                                        "whole_cores": largest_alone(k, cpus, True)}
            out.append(entry)
    return per_numa, per_socket
