"""Latency readiness, CPU by CPU and as a checklist (issue 37): the static frame's tuning (parse.readiness)
against kubelet's sets (exclusive, reserved), the pinned containers and whether irqbalance runs.

Which CPUs are judged (`target`): the exclusive CPUs; on a node with none, the isolated set the node names
itself (tuned's isolated_cores, isolcpus=, nohz_full=); else none, and every check is not applicable.
A check is "ok", "no", "n/a" (the node does not use the mechanism: no cpufreq in a VM, no irqbalance) or
"unknown" (not read); the score counts "ok" of ("ok" + "no").

`reasons` are the defects the findings name (findings/readiness.py), per CPU, gated on intent (never cry
wolf): kernel isolation only where the node isolates some CPUs; IRQ steering, power and C-states where
exclusive CPUs exist (pinning them is the intent) and the mechanism is there.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..model import Role
from ..parse.cpuset import format_cpuset as fmt
from ..parse.readiness import deepest_allowed, irqbalance_banned
from ..readinessmodel import (NA, NO, OK, UNKNOWN, ContainerReadiness, CpuReadiness, IdleState, NodeReadiness,
                              Readiness, ReadinessCheck)

DEEP_CSTATE_US = 10  # exit latency above this (µs) is a deep C-state (C1E is ~10 µs, C6 ~100 µs on Xeons)


def _isolated(raw: Readiness) -> frozenset[int]:
    return (raw.isolated or frozenset()) | (raw.kernel.isolcpus or frozenset())


def _nohz(raw: Readiness) -> frozenset[int] | None:
    """sysfs, else the command line; with neither, none when the command line was read (a kernel without
    CONFIG_NO_HZ_FULL has no file, and no CPU is tickless without nohz_full=)."""
    if raw.nohz_full is not None:
        return raw.nohz_full
    if raw.kernel.nohz_full is not None:
        return raw.kernel.nohz_full
    return frozenset() if raw.kernel.read else None


def domain_isolated(raw: Readiness) -> frozenset[int] | None:
    """The CPUs taken out of the scheduler's load balancing: /sys/devices/system/cpu/isolated (the kernel's
    domain isolation) and isolcpus= with the domain flag (none given is domain: kernel sched/isolation.c);
    isolcpus=managed_irq alone keeps only managed IRQs off. None: neither read."""
    cmd = raw.kernel.isolcpus if "domain" in raw.kernel.isolcpus_flags else None
    if raw.isolated is None and not raw.kernel.read:
        return None
    return (raw.isolated or frozenset()) | (cmd or frozenset())


def intent_of(raw: Readiness) -> frozenset[int]:
    return _isolated(raw) | (_nohz(raw) or frozenset()) | (raw.tuned_isolated or frozenset())


def _cover(name: str, title: str, target, have, source: str, fix: str) -> ReadinessCheck:
    if not target:
        return ReadinessCheck(name, title, NA, "no CPU to judge")
    if have is None:
        return ReadinessCheck(name, title, UNKNOWN, f"{source}: not read")
    miss = target - have
    if not miss:
        return ReadinessCheck(name, title, OK, f"{source} = {fmt(have) or '(empty)'}")
    return ReadinessCheck(name, title, NO, f"{fmt(miss)} not in {source} = {fmt(have) or '(empty)'}", fix)


def _avoid(name: str, title: str, target, have, source: str, fix: str) -> ReadinessCheck:
    if not target:
        return ReadinessCheck(name, title, NA, "no CPU to judge")
    if have is None:
        return ReadinessCheck(name, title, UNKNOWN, f"{source}: not read")
    over = target & have
    if not over:
        return ReadinessCheck(name, title, OK, f"{fmt(target)} not in {source} = {fmt(have) or '(empty)'}")
    return ReadinessCheck(name, title, NO, f"{fmt(over)} in {source} = {fmt(have)}", fix)


def irqbalance_running(all_tasks) -> bool | None:
    """From the every-task scan pinscope already reads (its comm); None when that was not read."""
    if all_tasks is None:
        return None
    return any(t.comm == "irqbalance" and not t.kthread for t in all_tasks)


@dataclass(frozen=True, slots=True)
class _Sets:
    """What the checks judge by, worked out once."""

    raw: Readiness
    target: frozenset[int]
    reserved: frozenset[int]
    running: bool | None
    nohz: frozenset[int] | None
    rcu: frozenset[int] | None
    isolated: frozenset[int] | None
    banned: frozenset[int] | None
    banned_from: str


def _sets(raw: Readiness, parts: dict, target) -> _Sets:
    nohz = _nohz(raw)
    banned, banned_from = irqbalance_banned(raw.irqbalance, raw.isolated, nohz)
    rcu = None
    if raw.kernel.read or nohz is not None:
        rcu = (raw.kernel.rcu_nocbs or frozenset()) | (nohz or frozenset())  # nohz_full implies rcu_nocbs
    iso_known = raw.isolated is not None or raw.kernel.read or raw.tuned_isolated is not None
    isolated = (_isolated(raw) | (raw.tuned_isolated or frozenset())) if iso_known else None
    return _Sets(raw, target, parts.get("reserved") or frozenset(), irqbalance_running(parts.get("all_tasks")),
                 nohz, rcu, isolated, banned, banned_from)


def build(raw: Readiness, parts: dict) -> NodeReadiness:
    """raw + {topology, reserved, roles, pods, memory_state, all_tasks} -> NodeReadiness."""
    topo = parts["topology"]
    excl = frozenset(r.id for r in parts["roles"] if r.role == Role.EXCLUSIVE)
    intent = intent_of(raw)
    target, target_from = (excl, "exclusive") if excl else ((intent, "isolated") if intent else (frozenset(), ""))
    st = _sets(raw, parts, target)
    cpus = {c: _cpu(st, c) for c in sorted(topo.online)}
    ctrs = _containers(raw, parts, topo)
    checks = (*_kernel_checks(st), *_irq_checks(st), *_power_checks(st, cpus), *_sysctl_checks(st),
              *_container_checks(ctrs))
    reasons = _reasons(raw, excl, intent, cpus, st.running, st.banned)
    mstate = parts.get("memory_state")
    return NodeReadiness(raw, target, target_from, intent, cpus, checks, st.running, st.banned, st.banned_from,
                         tuple(ctrs), reasons, mstate.machine if mstate is not None else {})


def _cpu(st: _Sets, c: int) -> CpuReadiness:
    raw = st.raw
    p = raw.power.get(c)
    irq_ok = None  # new IRQs may start here (default_smp_affinity), or irqbalance may move IRQs here
    if raw.default_irq_affinity is not None:
        irq_ok = c in raw.default_irq_affinity or bool(st.running and st.banned is not None and c not in st.banned)
    return CpuReadiness(
        c, (c in st.isolated) if st.isolated is not None else None, (c in st.nohz) if st.nohz is not None else None,
        (c in st.rcu) if st.rcu is not None else None, irq_ok,
        p.governor if p else None, p.min_khz if p else None, p.max_khz if p else None, p.hw_max_khz if p else None,
        deepest_allowed(raw.idle.get(c, ()), raw.pm_qos_us.get(c)) if c in raw.idle else None, raw.pm_qos_us.get(c))


def _kernel_checks(st: _Sets) -> list[ReadinessCheck]:
    t = st.target
    return [
        _cover("isolated", "isolated from the kernel's housekeeping", t, st.isolated,
               "isolcpus / isolated / tuned isolated_cores",
               "isolcpus=managed_irq,<list> (or tuned cpu-partitioning isolated_cores=<list>)"),
        _cover("nohz_full", "tickless (nohz_full)", t, st.nohz, "nohz_full", "nohz_full=<list> on the kernel command line"),
        _cover("rcu_nocbs", "RCU callbacks offloaded", t, st.rcu, "rcu_nocbs ∪ nohz_full", "rcu_nocbs=<list>"),
        _housekeeping(st.reserved if t else frozenset(), st.nohz, domain_isolated(st.raw)),
    ]


def _housekeeping(reserved: frozenset[int], nohz, domain) -> ReadinessCheck:
    """The reserved (housekeeping) CPUs are where the kernel's own work and the system run: never tickless
    (nohz_full), never out of the scheduler's load balancing (isolcpus domain)."""
    key, title = "housekeeping", "reserved CPUs not isolated nor tickless"
    if not reserved:
        return ReadinessCheck(key, title, NA, "no CPU to judge")
    if nohz is None and domain is None:
        return ReadinessCheck(key, title, UNKNOWN, "nohz_full, isolated: not read")
    said = [(name, have) for name, have in (("nohz_full", nohz), ("isolcpus (domain) / isolated", domain))
            if have is not None]
    over = [f"{fmt(reserved & have)} in {name} = {fmt(have)}" for name, have in said if reserved & have]
    if over:
        return ReadinessCheck(key, title, NO, "; ".join(over),
                              "keep reservedSystemCPUs out of nohz_full= and isolcpus= (and tuned isolated_cores)")
    return ReadinessCheck(key, title, OK, f"{fmt(reserved)} not in " + ", ".join(
        f"{name} = {fmt(have) or '(empty)'}" for name, have in said))


def _irq_checks(st: _Sets) -> list[ReadinessCheck]:
    title = "irqbalance keeps IRQs off"
    if not st.target:
        first = ReadinessCheck("irqbalance", title, NA, "no CPU to judge")
    elif st.running is None:
        first = ReadinessCheck("irqbalance", title, UNKNOWN, "process list not read")
    elif not st.running:
        first = ReadinessCheck("irqbalance", title, NA, "irqbalance does not run")
    else:
        first = _cover("irqbalance", title, st.target, st.banned, f"banned CPUs ({st.banned_from})",
                       "IRQBALANCE_BANNED_CPULIST=<list> in /etc/default/irqbalance or /etc/sysconfig/irqbalance")
    return [first, _avoid("irq_default", "new IRQs kept off", st.target, st.raw.default_irq_affinity,
                          "/proc/irq/default_smp_affinity", "irqaffinity=<reserved list> on the kernel command line")]


def _power_checks(st: _Sets, cpus: dict) -> list[ReadinessCheck]:
    raw, target = st.raw, st.target
    out = []
    gov = {c: raw.power[c].governor for c in target if c in raw.power}
    title = "frequency governor performance"
    if not gov:
        out.append(ReadinessCheck("governor", title, NA, "no cpufreq on these CPUs" if target else "no CPU to judge"))
    else:
        bad = {c for c, g in gov.items() if g != "performance"}
        by: dict[str, set[int]] = {}
        for c in bad:
            by.setdefault(str(gov[c]), set()).add(c)
        out.append(ReadinessCheck("governor", title, NO if bad else OK,
                                  "; ".join(f"scaling_governor = {g} on {fmt(cs)}" for g, cs in sorted(by.items()))
                                  if bad else "scaling_governor = performance",
                                  "tuned profile cpu-partitioning, or scaling_governor=performance" if bad else ""))
    deep: dict[int, IdleState] = {c: d for c in target if c in cpus and (d := cpus[c].deepest) is not None}
    title = f"no C-state over {DEEP_CSTATE_US} µs"
    if not deep:
        out.append(ReadinessCheck("cstates", title, NA, "no cpuidle on these CPUs" if target else "no CPU to judge"))
    else:
        far = {c: s for c, s in deep.items() if (s.latency_us or 0) > DEEP_CSTATE_US}
        out.append(ReadinessCheck("cstates", title, NO if far else OK,
                                  ", ".join(f"cpu{c} {s.name} {s.latency_us} µs" for c, s in sorted(far.items())[:8])
                                  if far else f"deepest {max((s.latency_us or 0) for s in deep.values())} µs",
                                  "disable deep states (cpuidle/stateN/disable, pm_qos_resume_latency_us, "
                                  "CRI-O cpu-c-states.crio.io)" if far else ""))
    return out


def _sysctl(target, key, title, val, good, source, fix) -> ReadinessCheck:
    if not target:
        return ReadinessCheck(key, title, NA, "no CPU to judge")
    if val is None:
        return ReadinessCheck(key, title, UNKNOWN, f"{source}: not read")
    return ReadinessCheck(key, title, OK if good(val) else NO, f"{source} = {val}", "" if good(val) else fix)


def _sysctl_checks(st: _Sets) -> list[ReadinessCheck]:
    raw, t = st.raw, st.target
    return [
        _sysctl(t, "rt_throttling", "RT throttling off", raw.rt_runtime_us, lambda v: v == -1,
                "/proc/sys/kernel/sched_rt_runtime_us", "kernel.sched_rt_runtime_us=-1"),
        _sysctl(t, "timer_migration", "timer migration off", None if raw.timer_migration is None else int(raw.timer_migration),
                lambda v: v == 0, "/proc/sys/kernel/timer_migration", "kernel.timer_migration=0"),
        _avoid("workqueue", "unbound workqueues kept off", t, raw.workqueue_cpumask,
               "/sys/devices/virtual/workqueue/cpumask", "echo <reserved mask> > /sys/devices/virtual/workqueue/cpumask"),
        _sysctl(t, "thp", "THP not always", raw.thp, lambda v: v != "always",
                "/sys/kernel/mm/transparent_hugepage/enabled", "transparent_hugepage=madvise (or never)"),
    ]


def _who(c) -> str:
    return f"{c.pod or c.pod_uid[:8]}/{c.container}"


def _container_checks(ctrs: list[ContainerReadiness]) -> list[ReadinessCheck]:
    out = []
    pinned = [c for c in ctrs if c.cgroup is not None]
    lb = [c for c in pinned if c.partition is not None or c.load_balance is not None]
    title = "pinned containers not load-balanced"
    if not lb:
        out.append(ReadinessCheck("load_balance", title, NA if not pinned else UNKNOWN,
                                  "no pinned container" if not pinned else "their cpuset files not read"))
    else:
        bad = [c for c in lb if not (c.load_balance is False or (c.partition or "").startswith("isolated"))]
        out.append(ReadinessCheck("load_balance", title, NO if bad else OK,
                                  ", ".join(_who(c) + (f": cpuset.cpus.partition {c.partition}" if c.partition is not None
                                                       else ": cpuset.sched_load_balance 1") for c in bad[:4])
                                  if bad else "partition isolated / sched_load_balance 0",
                                  "CRI-O runtime class with cpu-load-balancing.crio.io: disable" if bad else ""))
    q = [c for c in pinned if c.quota_known]
    title = "pinned containers without CFS quota"
    if not q:
        out.append(ReadinessCheck("cfs_quota", title, NA if not pinned else UNKNOWN,
                                  "no pinned container" if not pinned else "cpu.max not read yet"))
    else:
        qb = [c for c in q if c.quota_us is not None]
        out.append(ReadinessCheck("cfs_quota", title, NO if qb else OK,
                                  ", ".join(f"{_who(c)}: quota {c.quota_us} µs" for c in qb[:4]) if qb else "cpu.max max",
                                  "CRI-O cpu-quota.crio.io: disable, or kubelet disableCPUQuotaWithExclusiveCPUs" if qb else ""))
    out.append(_numa_check(ctrs))
    return out


def _numa_check(ctrs: list[ContainerReadiness]) -> ReadinessCheck:
    """Hugepages in use (hugetlb numa_stat, v1 usage through cpuset.mems) and the memory manager's blocks, on
    the NUMA nodes of the container's CPUs. v1 usage with several mems nodes: unknown, never a guess."""
    title = "memory on the CPUs' NUMA node"
    numa = [c for c in ctrs if c.hugetlb_nodes or c.memory_manager_blocks or c.hugetlb_unplaced]
    if not numa:
        return ReadinessCheck("numa_memory", title, NA, "no pinned container with hugepages or a memory manager assignment")
    bad = [c for c in numa if c.remote_hugepages or c.remote_assignments]
    if bad:
        return ReadinessCheck("numa_memory", title, NO, ", ".join(_who(c) for c in bad[:4]),
                              "topologyManagerPolicy single-numa-node with memoryManagerPolicy Static")
    why = [f"{_who(c)}: CPUs {fmt(c.cpus_unplaced or c.cpus)}: NUMA node unknown (no "
           "/sys/devices/system/node/node*/cpulist names them)" for c in numa if not c.cpu_nodes_known][:4]
    why += [f"{_who(c)}: hugetlb.{s}.usage_in_bytes = {b}, cpuset mems {fmt(c.mems) if c.mems is not None else '?'}: "
            "NUMA node unknown" for c in numa if c.hugetlb_unplaced for s, b in sorted(c.hugetlb_unplaced.items())][:4]
    if why:
        return ReadinessCheck("numa_memory", title, UNKNOWN, "; ".join(why))
    return ReadinessCheck("numa_memory", title, OK, "hugepages and memory on the CPUs' nodes")


def _reasons(raw, excl, intent, cpus, running, banned) -> dict:
    out: dict[int, list[str]] = {}
    for c in sorted(excl):
        r = cpus.get(c)
        if r is None:
            continue
        why = []
        if intent and r.nohz_full is False and r.isolated is not True:
            why.append("not isolated")
        if running and banned is not None and c not in banned:
            why.append("irqbalance may steer IRQs here")
        if r.governor is not None and r.governor == "powersave":
            why.append("governor powersave")
        if r.deepest is not None and (r.deepest.latency_us or 0) > DEEP_CSTATE_US:
            why.append(f"C-state {r.deepest.name} {r.deepest.latency_us} µs")
        if why:
            out[c] = why
    return {c: tuple(v) for c, v in out.items()}


def _tuning(raw: Readiness, path: str | None):
    """The container's CgroupTuning (its leaf, a "container" child on v2, or its pod's cgroup)."""
    if not path:
        return None
    for d in (path, path + "/container", path.rsplit("/", 1)[0]):
        if d in raw.cgroups:
            return raw.cgroups[d]
    return None


def _hugetlb(t, mems: frozenset[int] | None) -> tuple[dict, frozenset[str], dict]:
    """-> (size -> {node: bytes}, the sizes placed through cpuset mems, size -> bytes not placed). numa_stat
    where the kernel has it (v2; v1 since late 2021); else v1's usage_in_bytes, on the one NUMA node its
    cpuset.mems allows (the kernel takes hugetlb pages only from the cpuset's mems), unknown with more."""
    if t is None:
        return {}, frozenset(), {}
    nodes = {size: dict(per) for size, per in t.hugetlb_numa.items()}
    via: set[str] = set()
    unplaced: dict[str, int] = {}
    for size, used in t.hugetlb_bytes.items():
        if size in nodes or not used:
            continue
        if mems is not None and len(mems) == 1:
            nodes[size] = {next(iter(mems)): used}
            via.add(size)
        else:
            unplaced[size] = used
    return nodes, frozenset(via), unplaced


def _containers(raw: Readiness, parts: dict, topo) -> list[ContainerReadiness]:
    node_of = {c.id: c.numa_node for c in topo.cpus}
    mstate = parts.get("memory_state")
    out = []
    for p in parts["pods"]:
        for c in p.containers:
            if not c.assigned:
                continue
            t = _tuning(raw, c.cgroup_path)
            cg = c.cgroup
            mems = cg.mems_effective if cg is not None else None
            blocks = mstate.entries.get(p.uid, {}).get(c.name) if mstate is not None and c.name else None
            huge, via, unplaced = _hugetlb(t, mems)
            out.append(ContainerReadiness(
                p.uid, p.namespace, p.name, c.name, c.assigned,
                frozenset(n for n in (node_of.get(x) for x in c.assigned) if n is not None), c.cgroup_path,
                t.partition if t else None, t.load_balance if t else None,
                cg.quota_us if cg is not None else None,
                cg is not None and ("cpu.max" in cg.raw or "cpu.cfs_quota_us" in cg.raw),
                mems, huge, frozenset(n for a in blocks for n in a.numa_nodes) if blocks else None,
                t.hugetlb_dir if t else None, via, unplaced, tuple(blocks or ()),
                frozenset(x for x in c.assigned if node_of.get(x) is None)))
    return out


def to_json(r: NodeReadiness | None) -> dict | None:
    """The `readiness` object of `snapshot --json` (docs/readiness.md). null: not assembled."""
    if r is None:
        return None
    raw = r.raw
    k = raw.kernel

    def ls(s):
        return sorted(s) if s is not None else None

    ok, of = r.score
    return {
        "target": sorted(r.target), "target_from": r.target_from or None, "score": {"ok": ok, "applicable": of},
        "checks": [{"check": c.key, "title": c.title, "status": c.status, "detail": c.detail, "fix": c.fix or None}
                   for c in r.checks],
        "kernel": {"isolcpus": ls(k.isolcpus), "isolcpus_flags": list(k.isolcpus_flags) if k.isolcpus is not None else None,
                   "nohz_full": ls(k.nohz_full), "rcu_nocbs": ls(k.rcu_nocbs), "irqaffinity": ls(k.irqaffinity)},
        "isolated": ls(raw.isolated), "nohz_full": ls(raw.nohz_full),
        "default_irq_affinity": ls(raw.default_irq_affinity),
        "irqbalance": {"running": r.irqbalance_running, "banned": ls(r.irq_banned), "banned_from": r.irq_banned_from,
                       "files": [{"path": c.path, **c.raw} for c in raw.irqbalance]},
        "intel_pstate": raw.intel_pstate, "no_turbo": raw.no_turbo,
        "sched_rt_runtime_us": raw.rt_runtime_us, "sched_rt_period_us": raw.rt_period_us,
        "timer_migration": raw.timer_migration, "workqueue_cpumask": ls(raw.workqueue_cpumask), "thp": raw.thp,
        "tuned": {"profile": raw.tuned_profile, "isolated_cores": raw.tuned_isolated_raw},
        "hugepages": [{"node": n, "size_kb": s, "total": t, "free": f} for n, s, t, f in raw.hugepages],
        "memory_manager": {str(n): {res: {"total": t.total, "system_reserved": t.system_reserved,
                                          "allocatable": t.allocatable, "reserved": t.reserved, "free": t.free}
                                    for res, t in per.items()}
                           for n, per in r.memory_manager.items()},
        "cpus": [{"id": c.cpu, "isolated": c.isolated, "nohz_full": c.nohz_full, "rcu_nocb": c.rcu_nocb,
                  "irqs_allowed": c.irqs_allowed, "governor": c.governor, "min_khz": c.min_khz, "max_khz": c.max_khz,
                  "hw_max_khz": c.hw_max_khz, "deepest_cstate": c.deepest.name if c.deepest else None,
                  "deepest_cstate_latency_us": c.deepest.latency_us if c.deepest else None,
                  "pm_qos_resume_latency_us": c.qos_us, "not_ready": list(r.reasons.get(c.cpu, ()))}
                 for c in r.cpus.values()],
        "containers": [{"pod_uid": c.pod_uid, "namespace": c.namespace, "pod": c.pod, "container": c.container,
                        "cpus": sorted(c.cpus), "cpu_nodes": sorted(c.cpu_nodes), "partition": c.partition,
                        "sched_load_balance": c.load_balance, "quota_us": c.quota_us if c.quota_known else None,
                        "hugetlb_numa": {s: {str(n): b for n, b in sorted(v.items())} for s, v in sorted(c.hugetlb_nodes.items())},
                        "hugetlb_via_mems": sorted(c.hugetlb_via_mems),
                        "hugetlb_numa_unknown": dict(sorted(c.hugetlb_unplaced.items())),
                        "memory_manager_nodes": ls(c.memory_manager_nodes),
                        "memory_manager": [{"type": b.type, "numa_nodes": list(b.numa_nodes), "size": b.size}
                                           for b in c.memory_manager_blocks]} for c in r.containers],
    }
