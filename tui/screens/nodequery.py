"""What the node screen asks of a snapshot, as pure functions: the CPUs of a pod, the containers a filter
matches and the CPUs it lights, the busiest softirqs. No Textual."""
from __future__ import annotations


def pod_cpus(snap, uid: str) -> frozenset[int]:
    out: set[int] = set()
    for p in snap.pods:
        if p.uid == uid:
            for c in p.containers:
                if c.assigned:
                    out |= c.assigned
    return frozenset(out)


def matches(snap, query: str):
    """(pod, container) pairs whose namespace, pod or container name contains the query."""
    q = query.strip().lower()
    if not q:
        return []
    out = []
    for p in snap.pods:
        for c in p.containers:
            hay = f"{p.namespace or ''}/{p.name or p.uid}/{c.name or ''}".lower()
            if q in hay:
                out.append((p, c))
    return out


def busiest_softirqs(rates, n: int = 3) -> str:
    """The CPUs that take the most softirqs per second, with their top kind: "cpu1 NET_RX 3200/s, ..." """
    if rates is None or not rates.softirqs:
        return ""
    per_cpu = sorted(((sum(k.values()), cpu, k) for cpu, k in rates.softirqs.items()), reverse=True)[:n]
    out = []
    for total, cpu, kinds in per_cpu:
        if total <= 0:
            continue
        kind, rate = max(kinds.items(), key=lambda kv: kv[1])
        out.append(f"cpu{cpu} {total:.0f}/s ({kind} {rate:.0f}/s)")
    return ", ".join(out)


def filter_cpus(found) -> set[int]:
    """The CPUs a filter lights: the exclusive CPUs of the matches; only when none of them is pinned,
    the CPUs the (shared) matches may run on."""
    pinned: set[int] = set()
    for _, c in found:
        pinned |= c.assigned or set()
    if pinned:
        return pinned
    out: set[int] = set()
    for _, c in found:
        if c.cgroup and c.cgroup.cpus_effective:
            out |= c.cgroup.cpus_effective
    return out


def matches_one(p, c, q: str) -> bool:
    return q.strip().lower() in f"{p.namespace or ''}/{p.name or p.uid}/{c.name or ''}".lower()
