"""EXCLUSIVE_FRAGMENTED: the node has N free CPUs kubelet could give exclusively, yet kubelet would refuse
a container of N (N = the largest pinned request on the node, or --fit-cpus): the free CPUs are split over
NUMA nodes or cores in a way its policy does not accept. Judged by kubelet's own decision, ported
(collectors/fit): positive evidence, with kubelet's message and the free CPUs per NUMA node."""
from __future__ import annotations

from ..fit.active import inactive_pods
from ..fit.kubelet import Kubelet, KubeletError
from ..fit.predict import case_from_snapshot, release_of
from ..parse.cpuset import format_cpuset as fmt
from .base import check, finding

# the admission errors that mean "the CPUs are there, but not where kubelet may take them"
_REFUSALS = ("TopologyAffinityError", "SMTAlignmentError", "UnexpectedAdmissionError")
FIT_CPUS: int | None = None  # --fit-cpus: the request to judge by; None: the largest pinned request

_cache: dict = {}


def set_fit_cpus(n: int | None) -> None:
    global FIT_CPUS
    FIT_CPUS = n
    _cache.clear()


def _request(st, gone) -> int:
    """--fit-cpus, else the largest pinned request of the pods kubelet still counts (not those it frees first)."""
    sizes = [len(cpus) for uid, ctrs in st.entries.items() if uid not in gone for cpus in ctrs.values()]
    return FIT_CPUS or max(sizes, default=0)


def _decide(snap, n: int, version: str | None = None, gone: dict | None = None):
    """(free CPUs per NUMA node, kubelet's error, assumed) or None, by kubelet's release `version` (None:
    assumed); cached per node, release and state: the finding is evaluated every tick, the state changes
    when a pod comes or goes."""
    st, k = snap.state, snap.kubelet
    key = (snap.node, n, version, st.default_cpuset, tuple(sorted((u, c, s) for u, cs in st.entries.items() for c, s in cs.items())),
           tuple(sorted(k.cpu_manager_policy_options.items())), k.topology_manager_policy, k.topology_manager_scope,
           tuple(sorted(k.topology_manager_policy_options.items())), k.reserved_cpus,
           tuple(sorted(k.kube_reserved.items())), tuple(sorted(k.system_reserved.items())), tuple(sorted((gone or {}).items())))
    if key in _cache:
        return _cache[key]
    if len(_cache) > 64:
        _cache.clear()
    out = None
    case, assumed, problems = case_from_snapshot(snap, [n], gone or {})
    release, why = release_of(version)
    if not problems:
        try:
            kub = Kubelet(case, release)
        except KubeletError:
            kub = None  # kubelet would refuse its own config or state: other findings say so
        if kub is not None:
            free = kub.default - kub.policy.reserved
            if len(free) >= n:
                d = kub.admit([n])
                # an odd request under full-pcpus-only is refused wherever the CPUs are: not fragmentation
                odd = d.error is not None and "not multiple cpus per core" in d.error["message"]
                if d.error is not None and d.error["kind"] in _REFUSALS and not odd:
                    per: dict[int, set[int]] = {}
                    for c in free:
                        per.setdefault(kub.topo.details.info[c][0], set()).add(c)
                    out = (free, per, d.error, [*([why] if why else []), *assumed])
    _cache[key] = out
    return out


@check({"EXCLUSIVE_FRAGMENTED": (
    "warning",
    "the node has at least N free CPUs kubelet could give exclusively, yet it would refuse a container of N "
    "(N: the largest pinned request on the node, or --fit-cpus): the free CPUs are split over NUMA nodes or cores",
    "Free a NUMA node (or whole cores) by moving pinned pods, or size requests to what one NUMA node holds; "
    "`pinscope fit NODE --cpus N` shows what kubelet would give and the largest container per NUMA node.")},
    needs="gv", reads=("assignment", "policy"))
def exclusive_fragmented(ctx):
    snap, st = ctx.snap, ctx.st
    if ctx.k.cpu_manager_policy != "static" or st is None or st.policy != "static" or snap.state_status != "ok":
        return
    # the pods kubelet frees before it admits the next one (a deleted pod's checkpoint entry): not held, not N
    gone = inactive_pods(snap, ctx.api.now.pods if ctx.api is not None else None)
    n = _request(st, gone)
    if n <= 0:
        return
    got = _decide(snap, n, ctx.kubelet_version, gone)
    if got is None:
        return
    free, per, err, assumed = got
    evidence = [f"{ctx.sf}: {len(free)} CPUs free for exclusive use (the shared pool minus the reserved set)"]
    evidence += [f"NUMA {node}: free {fmt(cpus)} ({len(cpus)})" for node, cpus in sorted(per.items())]
    evidence.append(f"kubelet would answer a container of {n} CPUs: {err['kind']}: {err['message']}")
    evidence.append(f"topologyManagerPolicy = {ctx.k.topology_manager_policy}, scope {ctx.k.topology_manager_scope}; "
                    f"cpuManagerPolicyOptions = {dict(sorted(ctx.k.cpu_manager_policy_options.items())) or '{}'}")
    if ctx.kubelet_version:
        evidence.append(f"kubelet {ctx.kubelet_version}'s rules (the Kubernetes API: status.nodeInfo.kubeletVersion)")
    evidence += [f"assumed: {a}" for a in assumed]
    yield finding("EXCLUSIVE_FRAGMENTED",
                  f"{len(free)} CPUs are free for exclusive use, yet kubelet would refuse a container of {n} "
                  f"({err['kind']}): free per NUMA node " + ", ".join(f"{node}: {len(c)}" for node, c in sorted(per.items())),
                  evidence, free)
