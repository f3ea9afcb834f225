"""Checks per CPU and core: SMT siblings split between owners, IRQs firing on exclusive CPUs, isolated CPUs
left in the shared pool, a starved shared pool, and system services allowed on exclusive CPUs."""
from __future__ import annotations

from ..model import Role
from ..parse.cpuset import cpus_named, format_cpuset as fmt
from .base import check, finding


@check({"SMT_SIBLING_SHARED": ("warning", "the SMT siblings of one core are exclusive to different containers, or split between exclusive and shared",
                               "Enable cpuManagerPolicyOptions full-pcpus-only: true so containers get whole physical cores.")})
def smt_sibling_shared(ctx):
    seen = set()
    excl = ctx.exclusive
    if not excl:
        return
    live_owner = {(p.uid, c.name) for p, c in ctx.snap.containers() if c.cgroup is not None}
    for cpu in ctx.topo.cpus:
        sib = cpu.siblings
        if len(sib) < 2 or sib in seen:
            continue
        seen.add(sib)
        if excl.isdisjoint(sib):  # no sibling exclusive: nothing split (the costly part is for the others)
            continue
        kinds = _sibling_kinds(ctx, sib, live_owner)
        vals = set(kinds.values())
        if len(vals) > 1 and any(isinstance(v, frozenset) for v in vals):
            desc = "; ".join(f"cpu{s}: " + (", ".join(sorted(f"{ctx.pod_name(u)}/{n or '?'}" for u, n in v))
                                            if isinstance(v, frozenset) else v) for s, v in sorted(kinds.items()))
            yield finding("SMT_SIBLING_SHARED", f"core {cpu.socket}/{cpu.core}: siblings {fmt(sib)} are split ({desc})",
                          [f"/sys/devices/system/cpu/cpu{cpu.id}/topology/core_cpus_list = {fmt(sib)}",
                           f"cpuManagerPolicyOptions = {dict(ctx.k.cpu_manager_policy_options) or '{}'}"], sib)


def _sibling_kinds(ctx, sib, live_owner) -> dict:
    """sibling -> its owners (exclusive; live ones preferred) or its role word."""
    kinds: dict[int, frozenset | str] = {}
    for s in sib:
        r = ctx.roles.get(s)
        if r is None or r.role == Role.OFFLINE:
            continue
        if r.role == Role.EXCLUSIVE:
            pods = ctx.st.pod_entries if ctx.st is not None else {}
            whole = frozenset((o.pod_uid, None) for o in r.owners if s in pods.get(o.pod_uid, ()))
            if whole:  # inside a pod's pod-level set: the pod's core, whichever of its containers runs there
                kinds[s] = whole
                continue
            own = frozenset((o.pod_uid, o.container) for o in r.owners if (o.pod_uid, o.container) in live_owner)
            kinds[s] = own or frozenset((o.pod_uid, o.container) for o in r.owners)
        else:
            kinds[s] = str(r.role)
    return kinds


@check({"IRQ_ON_EXCLUSIVE": ("warning", "an IRQ's effective affinity includes an exclusive CPU, and it has fired there",
                             "Steer device IRQs to reserved CPUs (irqbalance banned CPUs, /proc/irq/N/smp_affinity_list, or the irqaffinity= kernel parameter).")},
       needs="gi")
def irq_on_exclusive(ctx):
    for irq in ctx.snap.irqs or ():
        hit = {c for c in irq.cpus & ctx.exclusive if irq.per_cpu.get(c, 0) > 0}
        if hit:
            yield finding("IRQ_ON_EXCLUSIVE", f"IRQ {irq.irq} ({irq.name or '?'}) fires on exclusive {cpus_named(hit)}",
                          [f"/proc/irq/{irq.irq}/effective_affinity_list = {fmt(irq.cpus)}",
                           "/proc/interrupts: " + ", ".join(f"CPU{c} {irq.per_cpu[c]}" for c in sorted(hit))], hit)


@check({"ISOLATED_IN_SHARED_POOL": ("warning", "isolcpus CPUs are in the shared pool (not reserved), where the scheduler does not balance load",
                                    "Kubelet ignores isolcpus: drop these CPUs from isolcpus= (isolate only CPUs meant for exclusive pods). "
                                    "Not into reservedSystemCPUs: the reserved (housekeeping) CPUs must never be isolated.")})
def isolated_in_shared_pool(ctx):
    """Reserved CPUs that are isolated are RESERVED_ISOLATED's (findings/readiness.py), not named twice."""
    shared, topo = ctx.snap.shared_pool, ctx.topo
    theirs = (ctx.k.reserved_cpus or frozenset()) if ctx.snap.readiness is not None else frozenset()
    iso = (topo.isolated & shared) - theirs if shared is not None else frozenset()
    if iso:
        yield finding("ISOLATED_IN_SHARED_POOL", f"isolated {cpus_named(iso)} {'is' if len(iso) == 1 else 'are'} in the shared pool: no load balancing there",
                      [f"/sys/devices/system/cpu/isolated = {fmt(topo.isolated)}", f"shared pool = {fmt(shared)}"], iso)


@check({"SHARED_POOL_STARVED": ("warning", "the shared pool outside the reserved CPUs is empty or a single CPU",
                                "Burstable and BestEffort pods (and non-integer Guaranteed ones) all share these CPUs: leave more CPUs unpinned.")}, reads=("assignment",))
def shared_pool_starved(ctx):
    shared = ctx.snap.shared_pool
    if ctx.policy == "static" and shared is not None:
        left = shared - (ctx.k.reserved_cpus or frozenset())
        if len(left) <= 1:
            yield finding("SHARED_POOL_STARVED", f"the shared pool outside reserved CPUs is {fmt(left) or 'empty'}",
                          [f"shared pool = {fmt(shared)}", f"reservedSystemCPUs = {fmt(ctx.k.reserved_cpus or ())}"], left)


@check({"SYSTEM_NOT_CONFINED": ("warning", "non-pod processes may run on exclusive CPUs, and tasks outside the owning pods were seen there: listed, one finding per node (info when none was seen)",
                                "Kubelet does not confine them; systemd CPUAffinity= (or the reserved set with a system cgroup cpuset) can.")},
       needs="gT")
def system_not_confined(ctx):
    """The passers-by of tasks.py (outsiders with no evidence of harm; another pod's named with its pod) are listed
    here, once per node: on a node whose PID 1 may run anywhere, the scheduler puts them on every CPU."""
    from .tasks import outsiders  # imported here: tasks registers its check after this module's

    allowed = ctx.snap.init_allowed
    if ctx.exclusive and allowed is not None and allowed & ctx.exclusive:
        over = allowed & ctx.exclusive
        seen = sorted((t for t, ev in outsiders(ctx) if not ev), key=lambda t: (t.last_cpu, t.pid, t.tid))
        ev = [f"/proc/1/status: Cpus_allowed_list = {fmt(allowed)}"]
        if not seen:
            yield finding("SYSTEM_NOT_CONFINED", f"PID 1 (and so system services) may run on exclusive {cpus_named(over)}",
                          ev, over, severity="info")
            return
        by_pid: dict[int, list] = {}
        for t in seen:
            by_pid.setdefault(t.pid, []).append(t)
        shown = [_passer(ctx, ts) for _, ts in sorted(by_pid.items())[:PASSERS_SHOWN]]
        ev.append("last ran there: " + ", ".join(shown)
                  + (f" and {len(by_pid) - PASSERS_SHOWN} more processes" if len(by_pid) > PASSERS_SHOWN else ""))
        ev.append("not INTRUDER_TASK: none is pinned to exclusive CPUs, took a measured share of one, or (outside "
                  "every pod) got there past a confined PID 1")
        yield finding("SYSTEM_NOT_CONFINED", f"{len(seen)} task(s) of {len(by_pid)} process(es) outside the owning pods last ran on "
                      f"exclusive {cpus_named({t.last_cpu for t in seen})}: PID 1 (and so system services) may run on {fmt(over)}",
                      ev, {t.last_cpu for t in seen})


PASSERS_SHOWN = 50  # processes named in SYSTEM_NOT_CONFINED's evidence (the message counts them all)


def _passer(ctx, ts) -> str:
    """One process's tasks seen on exclusive CPUs: `comm (pid N, tid N) on CPU 1`, its thread count when several,
    and its pod when it is another pod's (`pause (pid N, tid N, of ns/pod) on CPU 1`: its sandbox)."""
    from .tasks import theirs, whose

    t = ts[0]
    n = f", {len(ts)} threads" if len(ts) > 1 else f", tid {t.tid}"
    home = whose(ctx, t)
    of = f", of {theirs(home)}" if home is not None else ""
    return f"{t.comm} (pid {t.pid}{n}{of}) on CPU {fmt({x.last_cpu for x in ts})}"
