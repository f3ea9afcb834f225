"""Latency readiness findings (issue 37): the node's own tuning contradicts its intent for the pinned CPUs.

Raised only where the node shows intent and reality contradicts it, or the effect is there (never cry wolf):
kernel isolation where the node isolates some CPUs (isolcpus=, nohz_full=, tuned's isolated_cores) but not
the ones kubelet pins; IRQ steering, power and C-states where exclusive CPUs exist (pinning them is the
intent) and the mechanism is present (irqbalance runs, cpufreq/cpuidle are there: a VM without them is not
wrong); hugepages in use on another NUMA node than the container's CPUs (measured). The judging is
assemble/readiness.py's (the same reasons the grid marks); here they become findings with the file and value.
"""
from __future__ import annotations

from ..assemble.readiness import DEEP_CSTATE_US, domain_isolated
from ..parse.cpuset import cpus_named, format_cpuset as fmt
from .base import check, finding

# The codes that name exactly the CPUs NodeReadiness.reasons names (pinned, not latency-ready): the grid marks
# those CPUs "~" for them, not "!" (tui/state.py cpu_marks), so a finding of another kind still stands out.
NOT_READY_CODES = frozenset({"EXCLUSIVE_NOT_ISOLATED", "IRQBALANCE_NOT_BANNED", "PINNED_CPU_POWERSAVE",
                             "PINNED_CPU_DEEP_CSTATE"})


def _iso_evidence(raw) -> list[str]:
    k = raw.kernel
    ev = []
    for name in ("isolcpus", "nohz_full", "rcu_nocbs"):
        if name in k.raw:
            ev.append(f"/proc/cmdline: {name}={k.raw[name]}")
    if raw.isolated is not None:
        ev.append(f"/sys/devices/system/cpu/isolated = {fmt(raw.isolated) or '(empty)'}")
    if raw.nohz_full is not None:
        ev.append(f"/sys/devices/system/cpu/nohz_full = {fmt(raw.nohz_full) or '(empty)'}")
    if raw.tuned_isolated_raw is not None:
        ev.append(f"/etc/tuned/cpu-partitioning-variables.conf: isolated_cores={raw.tuned_isolated_raw}"
                  + (f" (active profile {raw.tuned_profile})" if raw.tuned_profile else ""))
    return ev


@check({"EXCLUSIVE_NOT_ISOLATED": ("warning", "the node isolates some CPUs from the kernel (isolcpus=, nohz_full=, tuned isolated_cores) but not the exclusive CPUs kubelet pins",
                                   "Put the pinned CPUs (every CPU but reservedSystemCPUs) in nohz_full= and rcu_nocbs= (and isolcpus=managed_irq,<list>), "
                                   "or tuned cpu-partitioning isolated_cores=<list>; reboot.")})
def exclusive_not_isolated(ctx):
    r = ctx.snap.readiness
    if r is None or not r.intent:
        return
    miss = {c for c, why in r.reasons.items() if "not isolated" in why}
    if miss:
        yield finding("EXCLUSIVE_NOT_ISOLATED", f"exclusive {cpus_named(miss)} {'is' if len(miss) == 1 else 'are'} not isolated, "
                      f"while the node isolates {fmt(r.intent)}",
                      _iso_evidence(r.raw) + [f"exclusive CPUs = {fmt(ctx.exclusive)}"], miss)


@check({"RESERVED_TICKLESS": ("warning", "reserved (housekeeping) CPUs are in nohz_full: the kernel's own work has no ticking CPU left there",
                              "Keep reservedSystemCPUs out of nohz_full= (and isolcpus=): nohz_full= lists the CPUs kubelet pins, never the reserved ones.")})
def reserved_tickless(ctx):
    r = ctx.snap.readiness
    reserved = ctx.k.reserved_cpus
    if r is None or not reserved:
        return
    nohz = r.raw.nohz_full if r.raw.nohz_full is not None else r.raw.kernel.nohz_full
    over = (nohz or frozenset()) & reserved
    if over:
        yield finding("RESERVED_TICKLESS", f"reserved {cpus_named(over)} {'is' if len(over) == 1 else 'are'} tickless (nohz_full)",
                      _iso_evidence(r.raw) + [f"reservedSystemCPUs = {fmt(reserved)}"], over)


@check({"RESERVED_ISOLATED": ("warning", "reserved (housekeeping) CPUs are isolated from the scheduler (isolcpus= domain, /sys/devices/system/cpu/isolated): kubelet, the runtime and system daemons there get no load balancing",
                              "Keep reservedSystemCPUs out of isolcpus= (and tuned isolated_cores): isolate only the CPUs kubelet pins, never the reserved ones; reboot.")})
def reserved_isolated(ctx):
    r = ctx.snap.readiness
    reserved = ctx.k.reserved_cpus
    if r is None or not reserved:
        return
    over = (domain_isolated(r.raw) or frozenset()) & reserved
    if over:
        yield finding("RESERVED_ISOLATED", f"reserved {cpus_named(over)} {'is' if len(over) == 1 else 'are'} isolated "
                      "from the scheduler (isolcpus)", _iso_evidence(r.raw) + [f"reservedSystemCPUs = {fmt(reserved)}"], over)


@check({"IRQBALANCE_NOT_BANNED": ("warning", "irqbalance runs and may move device IRQs onto exclusive CPUs: they are not in its banned set",
                                  "Set IRQBALANCE_BANNED_CPULIST=<the pinned CPUs> in /etc/default/irqbalance (Debian) or /etc/sysconfig/irqbalance (RHEL) "
                                  "and restart irqbalance; or isolate them (irqbalance bans isolated and nohz_full CPUs when neither variable is set).")},
       needs="ga")
def irqbalance_not_banned(ctx):
    r = ctx.snap.readiness
    if r is None or not r.irqbalance_running or r.irq_banned is None:
        return
    miss = ctx.exclusive - r.irq_banned
    if miss:
        yield finding("IRQBALANCE_NOT_BANNED", f"irqbalance runs and may steer IRQs onto exclusive {cpus_named(miss)}",
                      ["irqbalance runs (process list)", f"banned CPUs = {fmt(r.irq_banned) or '(none)'} ({r.irq_banned_from})",
                       f"exclusive CPUs = {fmt(ctx.exclusive)}"], miss)


@check({"IRQ_DEFAULT_ON_EXCLUSIVE": ("info", "the node steers IRQs (irqaffinity=, or isolates CPUs) yet new IRQs may start on exclusive CPUs (/proc/irq/default_smp_affinity)",
                                     "irqaffinity=<reserved CPUs> on the kernel command line (or write their mask to /proc/irq/default_smp_affinity).")})
def irq_default_on_exclusive(ctx):
    r = ctx.snap.readiness
    if r is None or r.raw.default_irq_affinity is None or not ctx.exclusive:
        return
    if not (r.intent or r.raw.kernel.irqaffinity is not None):
        return
    over = ctx.exclusive & r.raw.default_irq_affinity
    if over:
        ev = [f"/proc/irq/default_smp_affinity = {fmt(r.raw.default_irq_affinity)} (as a list)"]
        if "irqaffinity" in r.raw.kernel.raw:
            ev.append(f"/proc/cmdline: irqaffinity={r.raw.kernel.raw['irqaffinity']}")
        yield finding("IRQ_DEFAULT_ON_EXCLUSIVE", f"new IRQs may start on exclusive {cpus_named(over)}", ev, over)


@check({"PINNED_CPU_POWERSAVE": ("warning", "an exclusive CPU runs the powersave frequency governor: it is clocked down when it idles and ramps up late",
                                 "scaling_governor=performance on the pinned CPUs (tuned profile cpu-partitioning / latency-performance, "
                                 "or CRI-O cpu-freq-governor.crio.io: performance).")})
def pinned_cpu_powersave(ctx):
    r = ctx.snap.readiness
    if r is None:
        return
    hit = sorted(c for c in ctx.exclusive if c in r.raw.power and r.raw.power[c].governor == "powersave")
    if hit:
        ev = []
        for c in hit[:8]:
            p = r.raw.power[c]
            ev.append(f"/sys/devices/system/cpu/cpu{c}/cpufreq/scaling_governor = powersave ({p.driver or '?'}; "
                      f"min {_mhz(p.min_khz)}, max {_mhz(p.max_khz)} of {_mhz(p.hw_min_khz)}-{_mhz(p.hw_max_khz)})")
        if r.raw.intel_pstate:
            ev.append(f"/sys/devices/system/cpu/intel_pstate/status = {r.raw.intel_pstate}")
        yield finding("PINNED_CPU_POWERSAVE", f"exclusive {cpus_named(hit)} run{'s' if len(hit) == 1 else ''} the powersave governor",
                      ev, hit)


def _mhz(khz) -> str:
    return f"{khz // 1000} MHz" if khz is not None else "?"


@check({"PINNED_CPU_DEEP_CSTATE": ("warning", f"an exclusive CPU may enter an idle state slower than {DEEP_CSTATE_US} µs to leave: its first wake-up after idling waits that long",
                                   "Disable the deep states on the pinned CPUs: pm_qos_resume_latency_us (CRI-O cpu-c-states.crio.io: max_latency:10), "
                                   "cpuidle/stateN/disable, tuned's force_latency, or intel_idle.max_cstate=1 on the kernel command line.")})
def pinned_cpu_deep_cstate(ctx):
    r = ctx.snap.readiness
    if r is None:
        return
    hit = {c: r.cpus[c].deepest for c in sorted(ctx.exclusive) if c in r.cpus and r.cpus[c].deepest is not None
           and (r.cpus[c].deepest.latency_us or 0) > DEEP_CSTATE_US}
    if hit:
        ev = []
        for c, s in list(hit.items())[:8]:
            q = r.cpus[c].qos_us
            ev.append(f"/sys/devices/system/cpu/cpu{c}/cpuidle/state{s.index}: {s.name}, latency {s.latency_us} µs, disable 0; "
                      f"power/pm_qos_resume_latency_us = {'0 (no limit)' if q is None else q}")
        worst = max((s.latency_us or 0) for s in hit.values())
        yield finding("PINNED_CPU_DEEP_CSTATE", f"exclusive {cpus_named(hit)} may sleep in C-states up to {worst} µs to leave",
                      ev, set(hit))


@check({"RT_THROTTLING_ON": ("info", "the node isolates CPUs for latency work, yet RT throttling is on: a real-time task there is stopped for the rest of each period once it has run its share",
                             "sysctl kernel.sched_rt_runtime_us=-1 (tuned's realtime profiles set it), if the pinned work runs SCHED_FIFO/RR.")})
def rt_throttling_on(ctx):
    r = ctx.snap.readiness
    if r is None or not r.intent or not ctx.exclusive or r.raw.rt_runtime_us in (None, -1):
        return
    yield finding("RT_THROTTLING_ON", f"RT throttling on: {r.raw.rt_runtime_us} µs of every {r.raw.rt_period_us or '?'} µs",
                  [f"/proc/sys/kernel/sched_rt_runtime_us = {r.raw.rt_runtime_us}",
                   f"/proc/sys/kernel/sched_rt_period_us = {r.raw.rt_period_us}"] + _iso_evidence(r.raw))


@check({"PINNED_MEMORY_REMOTE": ("warning", "a pinned container's hugepages are in use on, or its memory or hugepages assigned to, another NUMA node than its CPUs",
                                 "topologyManagerPolicy single-numa-node (or restricted) with memoryManagerPolicy Static, and hugepages reserved "
                                 "on the node of the CPUs (/sys/devices/system/node/nodeN/hugepages).")})
def pinned_memory_remote(ctx):
    """Measured (hugetlb numa_stat; v1 usage_in_bytes on the one node its cpuset.mems allows) or assigned
    (memory_manager_state's blocks of type memory or hugepages-<size>); v1 usage over several mems nodes is
    not placed, so never a finding."""
    r = ctx.snap.readiness
    if r is None:
        return
    mm_file = f"{ctx.k.root_dir.rstrip('/')}/memory_manager_state"
    for c in r.containers:
        ev = _hugetlb_evidence(c) + [
            f"{mm_file}: entries[{c.pod_uid}][{c.container}]: type {b.type}, size {b.size}, "
            f"numaAffinity {fmt(frozenset(b.numa_nodes))}" for b in c.remote_assignments]
        if not ev:
            continue
        far = frozenset(n for v in c.remote_hugepages.values() for n in v)
        far |= frozenset(n for b in c.remote_assignments for n in b.numa_nodes) - c.cpu_nodes
        what = sorted({f"hugepages {s}" for s in c.remote_hugepages} | {b.type for b in c.remote_assignments})
        yield finding("PINNED_MEMORY_REMOTE", f"{c.namespace or '?'}/{c.pod or c.pod_uid[:8]}/{c.container}: "
                      f"{', '.join(what)} on NUMA node {fmt(far)}, its CPUs on {fmt(c.cpu_nodes)}",
                      ev + [f"CPUs {fmt(c.cpus)} on NUMA node {fmt(c.cpu_nodes)}"], c.cpus,
                      ctx.pods_by_uid.get(c.pod_uid), c.container)


def _hugetlb_evidence(c) -> list[str]:
    """The hugetlb file and value that place a container's hugepages off its CPUs' nodes."""
    ev = []
    for size in sorted(c.remote_hugepages):
        per = c.hugetlb_nodes[size]
        if size in c.hugetlb_via_mems:
            ev.append(f"{c.hugetlb_dir}/hugetlb.{size}.usage_in_bytes = {sum(per.values())}, "
                      f"{c.cgroup}/cpuset.effective_mems = {fmt(frozenset(per))} (its only NUMA node)")
        else:
            ev.append(f"{c.hugetlb_dir}/hugetlb.{size}.numa_stat: "
                      + ", ".join(f"N{n}={b}" for n, b in sorted(per.items())) + " (bytes)")
    return ev
