"""Checks per container: does the kernel run it where kubelet says, is a Guaranteed container left
unpinned, and are a pinned container's CPUs and memory where the topology wants them.

Legitimate setups are never flagged: exclusive containers with cpu.max "max"
(DisableCPUQuotaWithExclusiveCPUs, default since 1.33); reserved CPUs inside the shared pool."""
from __future__ import annotations

from ..parse.cpuset import cpus_named, format_cpuset as fmt
from .base import check, finding, who


@check({"STATE_CGROUP_DRIFT": ("critical", "a container's kernel effective cpuset differs from kubelet's assignment (exclusive) or from the shared pool (shared)",
                               "Something outside kubelet wrote cpuset.cpus. Since 1.22 kubelet does not re-read cgroupfs: the drift stays until the container's desired set changes or kubelet restarts. Find the writer; restart kubelet or the pod to restore.")}, reads=("assignment",))
def cgroup_drift(ctx):
    snap, sf, shared = ctx.snap, ctx.sf, ctx.snap.shared_pool
    if snap.roles_from == "cgroups":
        return  # roles were inferred from the cgroups themselves: nothing to compare them with
    for p, c in snap.containers():
        cg = c.cgroup
        eff = cg.cpus_effective if cg else None
        if eff is None:
            continue
        file = f"{cg.path}/{'cpuset.cpus.effective' if cg.version == 2 else 'cpuset.effective_cpus'}"
        pod_set = ctx.st.pod_entries.get(p.uid) if ctx.st is not None else None
        if c.assigned is None and pod_set:  # pod-level resources: it runs in its pod's CPUs, not the shared pool
            if not eff <= pod_set and not c.unresolved:
                yield finding("STATE_CGROUP_DRIFT", f"{who(p, c.name)}: kernel runs it on {fmt(eff)}, outside its "
                              f"pod's CPUs {fmt(pod_set)}", [f"{sf}: podEntries[{p.uid}] = {fmt(pod_set)}",
                                                             f"{file} = {fmt(eff)}"], eff - pod_set, p, c.name)
        elif c.assigned is not None and eff != c.assigned:
            yield finding("STATE_CGROUP_DRIFT", f"{who(p, c.name)}: kernel runs it on {fmt(eff)}, kubelet assigned {fmt(c.assigned)}",
                          [f"{sf}: entries[{p.uid}][{c.name}] = {fmt(c.assigned)}", f"{file} = {fmt(eff)}"],
                          eff ^ c.assigned, p, c.name)
        elif c.assigned is None and shared is not None and eff != shared and ctx.st is not None and not c.unresolved:
            # (a leaf no source names may be the pod sandbox, which kubelet does not pin: no claim)
            stolen = eff & ctx.exclusive
            yield finding("STATE_CGROUP_DRIFT",
                          f"{who(p, c.name)}: shared container runs on {fmt(eff)}, the shared pool is {fmt(shared)}"
                          + (f" (it may run on exclusive {cpus_named(stolen)})" if stolen else ""),
                          [f"{sf}: defaultCpuSet = {fmt(shared)}", f"{file} = {fmt(eff)}",
                           f"kubelet reconciles every {ctx.k.reconcile_period}: a change younger than that is not drift yet"],
                          eff ^ shared, p, c.name)


@check({"GUARANTEED_NOT_PINNED": ("warning", "a Guaranteed pod's container with an integer CPU limit runs on the shared pool (info under policy none; never in a pod with pod-level resources, which kubelet does not pin by default)",
                                  "Exclusive CPUs need cpuManagerPolicy: static on the node and an integer CPU request == limit in a Guaranteed pod.")},
       needs="gv", reads=("assignment", "policy"))
def guaranteed_not_pinned(ctx):
    """Never for a container the report itself shows on CPUs exclusive to it (roles inferred from the
    cgroups, kubelet's assignment unknown): a finding agrees with what the report shows. Never for a pod with
    pod-level resources (kubelet's allocation checkpoint says which): kubelet's static policy leaves such a
    pod on the shared pool (1.34, 1.35) or pins only a container of it that asks for whole CPUs of its own,
    and only with the PodLevelResourceManagers gate (1.36+, off by default); and a container without a CPU
    limit of its own runs under the pod's limit as its quota, a whole CPU that is not its own. Run again with
    the API's answer: a pod's ephemeral containers (which kubelets after 1.37 record without limits) are not
    taken for containers without limits of their own."""
    policy = ctx.policy
    pod_level = ctx.snap.pod_level or {}
    api_pods = (ctx.api.now.pods if ctx.api is not None else None) or {}
    for p, c in ctx.snap.containers():
        cg = c.cgroup
        if not (p.qos == "Guaranteed" and c.assigned is None and cg and cg.quota_us and cg.period_us) or c.unresolved:
            continue
        alloc = pod_level.get(p.uid)
        ap = api_pods.get(p.uid)
        if alloc is not None and alloc.pod_level_in(p.qos, getattr(ap, "ephemeral", ())):
            continue
        if ctx.snap.pod_level is not None and alloc is None:
            continue  # started after the checkpoint was read (read again next tick): pod-level or not, unknown yet
        if cg.cpus_effective and all(x in ctx.roles and any(o.pod_uid == p.uid and o.container == c.name
                                                            for o in ctx.roles[x].owners) for x in cg.cpus_effective):
            continue
        pod_set = ctx.st.pod_entries.get(p.uid) if ctx.st is not None else None
        if pod_set and cg.cpus_effective and cg.cpus_effective <= pod_set:
            continue  # on its pod's pod-level CPUs (exclusive to the pod), not on the shared pool
        cores = cg.quota_us / cg.period_us
        if abs(cores - round(cores)) < 1e-9 and cores >= 1:
            yield finding("GUARANTEED_NOT_PINNED", f"{who(p, c.name)}: Guaranteed with a {int(round(cores))}-CPU limit, but on the shared pool"
                          + (" (policy none)" if policy == "none" else ""),
                          [f"{cg.path}/{'cpu.max' if cg.version == 2 else 'cpu.cfs_quota_us'}: quota {cg.quota_us} / period {cg.period_us}",
                           f"cpuManagerPolicy = {policy}"], cg.cpus_effective or (), p, c.name,
                          severity="info" if policy == "none" else None)


@check({
    "EXCLUSIVE_CROSS_NUMA": ("warning", "one container's exclusive CPUs span several NUMA nodes",
                             "Use topologyManagerPolicy restricted or single-numa-node (scope pod or container) if the workload must stay on one node; static alone does not align."),
    "MEMS_NOT_LOCAL": ("warning", "a pinned container's memory nodes include nodes its CPUs are not on",
                       "Use memoryManagerPolicy: Static with the topology manager to align memory with CPUs."),
}, reads=("assignment",))
def numa_alignment(ctx):
    """MEMS_NOT_LOCAL stays silent when mems are unrestricted under memoryManagerPolicy None: that is the
    default and would fire on every multi-NUMA node."""
    k, topo = ctx.k, ctx.topo
    all_mem = frozenset(n.id for n in topo.numa_nodes)
    for p, c in ctx.snap.containers():
        if c.assigned is None:
            continue
        nodes = {ctx.cpu_node.get(x) for x in c.assigned if ctx.cpu_node.get(x) is not None}
        if len(nodes) > 1:
            yield finding("EXCLUSIVE_CROSS_NUMA", f"{who(p, c.name)}: exclusive CPUs {fmt(c.assigned)} span NUMA nodes {fmt(nodes)}",
                          [f"{ctx.sf}: entries[{p.uid}][{c.name}] = {fmt(c.assigned)}",
                           f"topologyManagerPolicy = {k.topology_manager_policy}"], c.assigned, p, c.name)
        cg = c.cgroup
        mems = cg.mems_effective if cg else None
        if mems and nodes and mems - nodes and (mems != all_mem or k.memory_manager_policy.lower() == "static"):
            yield finding("MEMS_NOT_LOCAL", f"{who(p, c.name)}: memory on NUMA {fmt(mems)}, CPUs on {fmt(nodes)}",
                          [f"{cg.path}/{'cpuset.mems.effective' if cg.version == 2 else 'cpuset.effective_mems'} = {fmt(mems)}"],
                          c.assigned, p, c.name)


@check({"THROTTLED_EXCLUSIVE": ("warning", "a container with exclusive CPUs is CFS-throttled",
                                "Exclusive CPUs should run without a quota (default since 1.33, DisableCPUQuotaWithExclusiveCPUs); on older kubelets raise the limit or disable cpuCFSQuota for the node.")},
       needs="gcr", reads=("assignment",))
def throttled_exclusive(ctx):
    rates = ctx.rates
    for p, c in ctx.snap.containers():
        cg = c.cgroup
        if c.assigned is None or cg is None:
            continue
        evidence = [f"{cg.path}/cpu.stat: nr_throttled = {cg.nr_throttled}", f"quota {cg.quota_us} / period {cg.period_us} µs"]
        cr = rates.containers.get((p.uid, c.id)) if rates else None
        if cr is not None and cr.throttled_per_s:
            yield finding("THROTTLED_EXCLUSIVE", f"{who(p, c.name)}: throttled {cr.throttled_per_s:.1f} periods/s on exclusive CPUs",
                          evidence, c.assigned, p, c.name)
        elif rates is None and cg.nr_throttled and cg.quota_us:
            yield finding("THROTTLED_EXCLUSIVE", f"{who(p, c.name)}: has been throttled {cg.nr_throttled} times (a rate needs two samples)",
                          evidence, c.assigned, p, c.name)
