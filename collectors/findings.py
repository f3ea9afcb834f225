"""Findings: every CPU-pinning fault pinscope can name on a node, with the evidence beside it.

Pure functions of a NodeSnapshot (and the Rates over a window, for the checks that need two samples).
Codes are a contract (users script on them). Hints come from shared/reference/node-files.md, never
from the myths of its section 10. Legitimate setups are never flagged:
- an init container's CPUs reused by its pod's app containers (k/k policy_static.go cpusToReuse);
- reserved CPUs inside the shared pool (normal without strict-cpu-reservation);
- exclusive containers with cpu.max "max" (DisableCPUQuotaWithExclusiveCPUs, default since 1.33);
- kernel threads (per-CPU kworker/N, ksoftirqd/N, migration/N, cpuhp/N ...) on exclusive CPUs;
- the pod's own tasks (sandbox included); kubelet and daemons on reserved or shared CPUs.
"""
from __future__ import annotations

from dataclasses import dataclass

from .model import NodeSnapshot
from .parse.cpuset import format_cpuset as fmt

SEVERITIES = ("critical", "warning", "info")


@dataclass(frozen=True, slots=True)
class Finding:
    code: str
    severity: str  # critical | warning | info
    message: str
    hint: str
    evidence: tuple = ()
    cpus: tuple = ()
    pod_uid: str | None = None
    namespace: str | None = None
    pod: str | None = None
    container: str | None = None

    def to_json(self) -> dict:
        return {"code": self.code, "severity": self.severity, "message": self.message, "hint": self.hint,
                "evidence": list(self.evidence), "cpus": list(self.cpus), "pod_uid": self.pod_uid,
                "namespace": self.namespace, "pod": self.pod, "container": self.container}


# code -> (severity, meaning, fix): the README's table is generated from this (tests/test_readme.py)
CODES = {
    "STATE_UNREADABLE": ("critical", "cpu_manager_state exists but cannot be parsed, or the policy is static and it is missing or unreadable",
                         "Run with --sudo if it is only unreadable (mode 0600). A corrupt checkpoint stops kubelet's CPU manager: drain the node, delete the file, restart kubelet."),
    "KUBELET_CONFIG_UNREADABLE": ("warning", "kubelet's config file was found but cannot be read or parsed: the policy is unknown",
                                  "Check the file named by kubelet's --config (YAML syntax); run with --sudo if it is not readable."),
    "STATE_POLICY_MISMATCH": ("critical", "the state file's policy differs from the configured one: kubelet will refuse to restart",
                              "Drain the node, delete <root-dir>/cpu_manager_state, then restart kubelet (kubelet's own message asks for exactly this)."),
    "STATE_CGROUP_DRIFT": ("critical", "a container's kernel effective cpuset differs from kubelet's assignment (exclusive) or from the shared pool (shared)",
                           "Something outside kubelet wrote cpuset.cpus. Since 1.22 kubelet does not re-read cgroupfs: the drift stays until the container's desired set changes or kubelet restarts. Find the writer; restart kubelet or the pod to restore."),
    "EXCLUSIVE_OVERLAP": ("critical", "exclusive CPU sets of two different pods intersect",
                          "The checkpoint is inconsistent: drain the node, delete cpu_manager_state, restart kubelet."),
    "OFFLINE_ASSIGNED": ("critical", "an offline CPU is in an assignment or in the shared pool",
                         "The CPU manager does not support CPU hot-plug: bring the CPU back online, or drain, delete the state file and restart kubelet."),
    "INTRUDER_TASK": ("critical", "a task outside the owning container last ran on an exclusive CPU",
                      "Pin system services away from exclusive CPUs (systemd CPUAffinity=, the reserved set), or move the process; kubelet does not confine non-pod processes."),
    "GUARANTEED_NOT_PINNED": ("warning", "a Guaranteed pod's container with an integer CPU limit runs on the shared pool (info under policy none)",
                              "Exclusive CPUs need cpuManagerPolicy: static on the node and an integer CPU request == limit in a Guaranteed pod."),
    "EXCLUSIVE_CROSS_NUMA": ("warning", "one container's exclusive CPUs span several NUMA nodes",
                             "Use topologyManagerPolicy restricted or single-numa-node (scope pod or container) if the workload must stay on one node; static alone does not align."),
    "MEMS_NOT_LOCAL": ("warning", "a pinned container's memory nodes include nodes its CPUs are not on",
                       "Use memoryManagerPolicy: Static with the topology manager to align memory with CPUs."),
    "SMT_SIBLING_SHARED": ("warning", "the SMT siblings of one core are exclusive to different containers, or split between exclusive and shared",
                           "Enable cpuManagerPolicyOptions full-pcpus-only: true so containers get whole physical cores."),
    "IRQ_ON_EXCLUSIVE": ("warning", "an IRQ's effective affinity includes an exclusive CPU, and it has fired there",
                         "Steer device IRQs to reserved CPUs (irqbalance banned CPUs, /proc/irq/N/smp_affinity_list, or the irqaffinity= kernel parameter)."),
    "ISOLATED_IN_SHARED_POOL": ("warning", "isolcpus CPUs are in the shared pool, where the scheduler does not balance load",
                                "Kubelet ignores isolcpus: put isolated CPUs in reservedSystemCPUs, or drop them from isolcpus."),
    "THROTTLED_EXCLUSIVE": ("warning", "a container with exclusive CPUs is CFS-throttled",
                            "Exclusive CPUs should run without a quota (default since 1.33, DisableCPUQuotaWithExclusiveCPUs); on older kubelets raise the limit or disable cpuCFSQuota for the node."),
    "SHARED_POOL_STARVED": ("warning", "the shared pool outside the reserved CPUs is empty or a single CPU",
                            "Burstable and BestEffort pods (and non-integer Guaranteed ones) all share these CPUs: leave more CPUs unpinned."),
    "NUMA_MISS_HIGH": ("warning", "numa_miss / (numa_hit + numa_miss) over the window is above 5 % on a node",
                       "Memory is allocated away from the preferred node: align memory (memoryManagerPolicy: Static) and check the pod's mems."),
    "ORPHAN_STATE_ENTRY": ("warning", "a state entry names a pod that has no cgroup on the node",
                           "Kubelet normally removes stale entries; a lasting one holds CPUs nobody uses. It clears on kubelet restart."),
    "STATE_CHECKSUM_MISMATCH": ("warning", "the state file's checksum does not match its content",
                                "The file may have been edited by hand; kubelet verifies the checksum when it restores the checkpoint."),
    "SYSTEM_NOT_CONFINED": ("info", "non-pod processes are allowed on exclusive CPUs",
                            "Kubelet does not confine them; systemd CPUAffinity= (or the reserved set with a system cgroup cpuset) can."),
    "KUBELET_NOT_FOUND": ("info", "no kubelet process was found: its files were looked for in the default places",
                          "Inside kubectl debug node/x, use --root /host; with a non-default --root-dir the files may be elsewhere."),
    "SAMPLES_NEEDED": ("info", "some checks need a rate over a window and were not run with one sample",
                       "Run with --samples 2 (or more) and --interval S."),
}


def _f(code, message, evidence=(), cpus=(), pod=None, container=None, severity=None) -> Finding:
    sev, _, hint = CODES[code]
    return Finding(code, severity or sev, message, hint, tuple(evidence), tuple(sorted(cpus)),
                   pod.uid if pod else None, pod.namespace if pod else None, pod.name if pod else None,
                   container)


def _who(pod, cname) -> str:
    return f"{pod.namespace or '?'}/{pod.name or pod.uid}" + (f"/{cname}" if cname else "")


def evaluate(snap: NodeSnapshot, rates=None) -> list[Finding]:
    out: list[Finding] = []
    k = snap.kubelet
    st = snap.state
    topo = snap.topology
    online = topo.online
    cpu_node = {c.id: c.numa_node for c in topo.cpus}
    sf = snap.state_file or f"{k.root_dir}/cpu_manager_state"
    roles = {r.id: r for r in snap.roles}
    exclusive = {c for c, r in roles.items() if r.role == "exclusive"}

    if not k.pid:
        out.append(_f("KUBELET_NOT_FOUND", "no kubelet process found; looked in /var/lib/kubelet",
                      ["no /proc/<pid>/comm == kubelet"]))
    if not k.parsed or (k.config_path and any(p.source == k.config_path and "not readable" in p.message for p in snap.problems)):
        why = [f"{p.source}: {p.message}" for p in snap.problems if p.source == k.config_path]
        out.append(_f("KUBELET_CONFIG_UNREADABLE", f"kubelet config {k.config_path} cannot be read: CPU manager policy unknown", why))

    # --- the state file
    if snap.state_status == "invalid" or (k.cpu_manager_policy == "static" and snap.state_status in ("missing", "unreadable")):
        why = [f"{p.source}: {p.message}" for p in snap.problems if p.source == sf] or [f"{sf}: {snap.state_status}"]
        out.append(_f("STATE_UNREADABLE", f"cpu_manager_state is {snap.state_status}: kubelet's CPU assignments are unknown",
                      why + [f"policy {k.cpu_manager_policy!r} ({k.sources.get('cpu_manager_policy', 'default')})"]))
    if st is not None and st.checksum_ok is False:
        out.append(_f("STATE_CHECKSUM_MISMATCH", f"{sf}: checksum {st.checksum} does not match the content",
                      [p.message for p in snap.problems if p.source == sf and "checksum" in p.message]))
    if st is not None and k.cpu_manager_policy and st.policy != k.cpu_manager_policy:
        out.append(_f("STATE_POLICY_MISMATCH",
                      f"state file says policy {st.policy!r}, kubelet is configured with {k.cpu_manager_policy!r}",
                      [f"{sf}: policyName={st.policy}",
                       f"{k.sources.get('cpu_manager_policy', 'default')}: cpuManagerPolicy={k.cpu_manager_policy}"]))

    pods_by_uid = {p.uid: p for p in snap.pods}
    if st is not None:
        # --- overlaps between pods (within one pod, init-container reuse is legit)
        owner_pod: dict[int, str] = {}
        for uid, ctrs in st.entries.items():
            if uid == "":
                continue
            cs = frozenset().union(*ctrs.values()) if ctrs else frozenset()
            for c in cs:
                other = owner_pod.get(c)
                if other is not None and other != uid:
                    a, b = pods_by_uid.get(other), pods_by_uid.get(uid)
                    out.append(_f("EXCLUSIVE_OVERLAP", f"CPU {c} is exclusive to two pods: "
                                  f"{_who(a, None) if a else other} and {_who(b, None) if b else uid}",
                                  [f"{sf}: entries[{other}] and entries[{uid}] both hold {c}"], [c], b))
                owner_pod[c] = uid
        # --- offline CPUs in assignments or the pool
        for uid, ctrs in st.entries.items():
            for cname, cs in ctrs.items():
                off = cs - online
                if off:
                    p = pods_by_uid.get(uid)
                    out.append(_f("OFFLINE_ASSIGNED", f"offline CPUs {fmt(off)} assigned to {_who(p, cname) if p else uid + '/' + cname}",
                                  [f"{sf}: entries[{uid}][{cname}] = {fmt(cs)}", f"online = {fmt(online)}"], off, p, cname))
        off = st.default_cpuset - online
        if off and st.policy == "static":
            out.append(_f("OFFLINE_ASSIGNED", f"offline CPUs {fmt(off)} are in the shared pool",
                          [f"{sf}: defaultCpuSet = {fmt(st.default_cpuset)}", f"online = {fmt(online)}"], off))
        # --- orphans
        for uid, ctrs in st.entries.items():
            p = pods_by_uid.get(uid)
            if uid and (p is None or p.cgroup_path is None):
                cs = frozenset().union(*ctrs.values()) if ctrs else frozenset()
                out.append(_f("ORPHAN_STATE_ENTRY", f"state entry for pod {uid} ({', '.join(sorted(ctrs))}) but no such pod cgroup",
                              [f"{sf}: entries[{uid}] = {', '.join(f'{n}: {fmt(s)}' for n, s in sorted(ctrs.items()))}",
                               "no kubepods*/…pod<uid> directory"], cs, p))

    policy = st.policy if st is not None else k.cpu_manager_policy
    shared = snap.shared_pool
    for p, c in snap.containers():
        cg = c.cgroup
        who = _who(p, c.name)
        eff = cg.cpus_effective if cg else None
        # --- drift between kubelet and the kernel
        if eff is not None and snap.roles_from != "cgroups":
            file = f"{cg.path}/{'cpuset.cpus.effective' if cg.version == 2 else 'cpuset.effective_cpus'}"
            if c.assigned is not None and eff != c.assigned:
                out.append(_f("STATE_CGROUP_DRIFT", f"{who}: kernel runs it on {fmt(eff)}, kubelet assigned {fmt(c.assigned)}",
                              [f"{sf}: entries[{p.uid}][{c.name}] = {fmt(c.assigned)}", f"{file} = {fmt(eff)}"],
                              eff ^ c.assigned, p, c.name))
            elif c.assigned is None and shared is not None and eff != shared and st is not None:
                stolen = eff & exclusive
                out.append(_f("STATE_CGROUP_DRIFT",
                              f"{who}: shared container runs on {fmt(eff)}, the shared pool is {fmt(shared)}"
                              + (f" (it may run on exclusive CPUs {fmt(stolen)})" if stolen else ""),
                              [f"{sf}: defaultCpuSet = {fmt(shared)}", f"{file} = {fmt(eff)}",
                               f"kubelet reconciles every {k.reconcile_period}: a change younger than that is not drift yet"],
                              eff ^ shared, p, c.name))
        # --- Guaranteed, integer limit, but shared
        if p.qos == "Guaranteed" and c.assigned is None and cg and cg.quota_us and cg.period_us:
            cores = cg.quota_us / cg.period_us
            if abs(cores - round(cores)) < 1e-9 and cores >= 1:
                sev = "info" if policy == "none" else None
                out.append(_f("GUARANTEED_NOT_PINNED", f"{who}: Guaranteed with a {int(round(cores))}-CPU limit, but on the shared pool"
                              + (" (policy none)" if policy == "none" else ""),
                              [f"{cg.path}/{'cpu.max' if cg.version == 2 else 'cpu.cfs_quota_us'}: quota {cg.quota_us} / period {cg.period_us}",
                               f"cpuManagerPolicy = {policy}"], eff or (), p, c.name, severity=sev))
        if c.assigned is None:
            continue
        # --- exclusive containers
        nodes = {cpu_node.get(x) for x in c.assigned if cpu_node.get(x) is not None}
        if len(nodes) > 1:
            out.append(_f("EXCLUSIVE_CROSS_NUMA", f"{who}: exclusive CPUs {fmt(c.assigned)} span NUMA nodes {fmt(nodes)}",
                          [f"{sf}: entries[{p.uid}][{c.name}] = {fmt(c.assigned)}",
                           f"topologyManagerPolicy = {k.topology_manager_policy}"], c.assigned, p, c.name))
        mems = cg.mems_effective if cg else None
        if mems and nodes:
            all_mem = frozenset(n.id for n in topo.numa_nodes)
            remote = mems - nodes
            if remote and (mems != all_mem or k.memory_manager_policy.lower() == "static"):
                out.append(_f("MEMS_NOT_LOCAL", f"{who}: memory on NUMA {fmt(mems)}, CPUs on {fmt(nodes)}",
                              [f"{cg.path}/{'cpuset.mems.effective' if cg.version == 2 else 'cpuset.effective_mems'} = {fmt(mems)}"],
                              c.assigned, p, c.name))
        if cg is not None:
            cr = rates.containers.get((p.uid, c.id)) if rates else None
            if cr is not None and cr.throttled_per_s:
                out.append(_f("THROTTLED_EXCLUSIVE", f"{who}: throttled {cr.throttled_per_s:.1f} periods/s on exclusive CPUs",
                              [f"{cg.path}/cpu.stat: nr_throttled = {cg.nr_throttled}",
                               f"quota {cg.quota_us} / period {cg.period_us} µs"], c.assigned, p, c.name))
            elif rates is None and cg.nr_throttled and cg.quota_us:
                out.append(_f("THROTTLED_EXCLUSIVE", f"{who}: has been throttled {cg.nr_throttled} times (a rate needs two samples)",
                              [f"{cg.path}/cpu.stat: nr_throttled = {cg.nr_throttled}",
                               f"quota {cg.quota_us} / period {cg.period_us} µs"], c.assigned, p, c.name))

    # --- SMT siblings split
    seen = set()
    live_owner = {(p.uid, c.name) for p, c in snap.containers() if c.cgroup is not None}
    for cpu in topo.cpus:
        sib = cpu.siblings
        if len(sib) < 2 or sib in seen:
            continue
        seen.add(sib)
        kinds = {}
        for s in sib:
            r = roles.get(s)
            if r is None or r.role == "offline":
                continue
            if r.role == "exclusive":
                own = frozenset((o.pod_uid, o.container) for o in r.owners if (o.pod_uid, o.container) in live_owner)
                kinds[s] = own or frozenset((o.pod_uid, o.container) for o in r.owners)
            else:
                kinds[s] = r.role
        vals = set(kinds.values())
        if len(vals) > 1 and any(isinstance(v, frozenset) for v in vals):
            desc = "; ".join(f"cpu{s}: " + (", ".join(sorted(f"{_name(snap, u)}/{n or '?'}" for u, n in v)) if isinstance(v, frozenset) else v)
                             for s, v in sorted(kinds.items()))
            out.append(_f("SMT_SIBLING_SHARED", f"core {cpu.socket}/{cpu.core}: siblings {fmt(sib)} are split ({desc})",
                          [f"/sys/devices/system/cpu/cpu{cpu.id}/topology/core_cpus_list = {fmt(sib)}",
                           f"cpuManagerPolicyOptions = {dict(k.cpu_manager_policy_options) or '{}'}"], sib))

    # --- IRQs that fire on exclusive CPUs
    for irq in snap.irqs or ():
        hit = {c for c in irq.cpus & exclusive if irq.per_cpu.get(c, 0) > 0}
        if hit:
            out.append(_f("IRQ_ON_EXCLUSIVE", f"IRQ {irq.irq} ({irq.name or '?'}) fires on exclusive CPUs {fmt(hit)}",
                          [f"/proc/irq/{irq.irq}/effective_affinity_list = {fmt(irq.cpus)}",
                           "/proc/interrupts: " + ", ".join(f"CPU{c} {irq.per_cpu[c]}" for c in sorted(hit))], hit))

    # --- isolated CPUs in the shared pool
    if shared is not None and topo.isolated & shared:
        iso = topo.isolated & shared
        out.append(_f("ISOLATED_IN_SHARED_POOL", f"isolated CPUs {fmt(iso)} are in the shared pool: no load balancing there",
                      [f"/sys/devices/system/cpu/isolated = {fmt(topo.isolated)}", f"shared pool = {fmt(shared)}"], iso))

    # --- starved pool
    if policy == "static" and shared is not None:
        left = shared - (k.reserved_cpus or frozenset())
        if len(left) <= 1:
            out.append(_f("SHARED_POOL_STARVED", f"the shared pool outside reserved CPUs is {fmt(left) or 'empty'}",
                          [f"shared pool = {fmt(shared)}", f"reservedSystemCPUs = {fmt(k.reserved_cpus or ())}"], left))

    # --- intruders: tasks outside the owning container on exclusive CPUs
    if snap.all_tasks is not None and exclusive:
        owner_pids: dict[int, set] = {}
        for p in snap.pods:
            owner_pids[p.uid] = set(p.pids)
        for t in snap.all_tasks:
            if t.kthread or t.last_cpu not in exclusive:
                continue
            r = roles[t.last_cpu]
            if any(t.pid in owner_pids.get(o.pod_uid, ()) for o in r.owners):
                continue
            o = r.owners[0]
            p = pods_by_uid.get(o.pod_uid)
            out.append(_f("INTRUDER_TASK", f"{t.comm} (pid {t.pid}, tid {t.tid}) last ran on CPU {t.last_cpu}, exclusive to "
                          f"{_who(p, o.container) if p else o.pod_uid}",
                          [f"/proc/{t.pid}/task/{t.tid}/stat: processor = {t.last_cpu}, state {t.state}",
                           "not in any cgroup.procs of that pod; not a kernel thread",
                           "every task's last CPU is scanned at the slow cadence (each 10th tick live; each sample in snapshot/check)"],
                          [t.last_cpu], p, o.container))

    # --- system processes allowed on exclusive CPUs
    if exclusive and snap.init_allowed is not None and snap.init_allowed & exclusive:
        over = snap.init_allowed & exclusive
        out.append(_f("SYSTEM_NOT_CONFINED", f"PID 1 (and so system services) may run on exclusive CPUs {fmt(over)}",
                      [f"/proc/1/status: Cpus_allowed_list = {fmt(snap.init_allowed)}"], over))

    # --- rates over the window
    if rates is None:
        out.append(_f("SAMPLES_NEEDED", "NUMA_MISS_HIGH and THROTTLED_EXCLUSIVE rates need two samples (--samples 2)"))
    else:
        for n, r in sorted(rates.numa.items()):
            if r["miss_ratio"] > 0.05 and r["numa_miss_per_s"] > 0:
                out.append(_f("NUMA_MISS_HIGH", f"NUMA node {n}: {r['miss_ratio'] * 100:.1f} % of allocations missed over {rates.dt:.1f} s",
                              [f"/sys/devices/system/node/node{n}/numastat: numa_miss {r['numa_miss_per_s']:.0f}/s, "
                               f"numa_hit {r['numa_hit_per_s']:.0f}/s"], next((x.cpus for x in topo.numa_nodes if x.id == n), ())))
    order = {s: i for i, s in enumerate(SEVERITIES)}
    out.sort(key=lambda f: (order[f.severity], f.code, f.cpus, f.pod or "", f.container or ""))
    return out


def _name(snap, uid):
    for p in snap.pods:
        if p.uid == uid:
            return p.name or uid[:8]
    return uid[:8]


def worst(findings) -> str | None:
    for s in SEVERITIES:
        if any(f.severity == s for f in findings):
            return s
    return None
