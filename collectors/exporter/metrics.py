"""The metrics contract: one NodeReport -> samples, and the custom collector that serves the latest ones.

Names and labels are an interface (dashboards and alerts are written against them): docs/prometheus.md's table
is generated from CONTRACT and checked by tests/test_readme.py. Cardinality is bounded by the node's
CPUs, containers and finding codes: no task ids, no CPU lists, no free text in labels.

Counters are exported only where the kernel keeps a counter (cgroup cpu.stat, cpu.pressure); the kernel
keeps migrations per task, not per cgroup, and a container's tasks come and go, so the container's
migration figure is a rate (a gauge) taken over pinscope's own window.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Iterable

from prometheus_client.core import Metric
from prometheus_client.registry import Collector
from prometheus_client.samples import Sample

from ..fit.summary import node_fit
from ..model import ROLES

SEVERITIES = ("critical", "warning", "info")

CTR = ("node", "namespace", "pod", "container")


@dataclass(frozen=True, slots=True)
class Family:
    name: str  # without _total for counters (prometheus_client adds the suffix to the sample)
    type: str  # gauge | counter
    labels: tuple[str, ...]
    help: str

    @property
    def sample_name(self) -> str:
        return self.name + "_total" if self.type == "counter" else self.name


CONTRACT: tuple[Family, ...] = (
    Family("pinscope_cpu_info", "gauge", ("node", "cpu", "socket", "numa_node", "core", "role", "namespace", "pod", "container",
                                          "owner_level"),
           "1 per CPU: its place in the topology, its role and its owner (owner labels empty when it has none; "
           "owner_level \"pod\" for a CPU the pod holds as a whole, container empty, \"container\" else)"),
    Family("pinscope_cpus", "gauge", ("node", "role"),
           "CPUs of the node by role (every role present, 0 included)"),
    Family("pinscope_cpu_utilization_ratio", "gauge", ("node", "cpu"),
           "busy share of the CPU over the last read window, 0..1 (/proc/stat)"),
    Family("pinscope_node_cpu_utilization_ratio", "gauge", ("node",),
           "busy share of all the node's online CPUs over the last read window, 0..1 (what the fleet overview sorts and shows)"),
    Family("pinscope_node_info", "gauge", ("node", "cpu_manager_policy", "topology_manager_policy", "cgroup_version", "roles_from"),
           "1 per node: kubelet's policies as read on the node, and where the roles came from (state, cgroups or policy-none)"),
    Family("pinscope_container_exclusive_cpus", "gauge", CTR,
           "CPUs exclusive to the container (0 in the shared pool); each CPU counts once per pod: an exited init "
           "container's CPUs reused by its pod's running containers count for those (kubelet's cpusToReuse)"),
    Family("pinscope_pod_exclusive_cpus", "gauge", ("node", "namespace", "pod"),
           "CPUs kubelet assigned to the pod as a whole (pod-level resources, checkpoint podEntries) that none of "
           "its containers holds: exclusive to the pod (only pods that have them)"),
    Family("pinscope_container_cpu_cfs_periods", "counter", CTR,
           "CFS enforcement periods that elapsed (cpu.stat nr_periods)"),
    Family("pinscope_container_cpu_cfs_throttled_periods", "counter", CTR,
           "CFS periods in which the container was throttled (cpu.stat nr_throttled)"),
    Family("pinscope_container_cpu_cfs_throttled_seconds", "counter", CTR,
           "time the container was throttled (cpu.stat throttled_usec / v1 throttled_time)"),
    Family("pinscope_container_cpu_pressure_some_seconds", "counter", CTR,
           "time some task of the container waited for a CPU (cpu.pressure some total; kernels with PSI)"),
    Family("pinscope_container_migrations_per_second", "gauge", CTR,
           "CPU migrations of the container's tasks per second over the last window (se.nr_migrations, or observed last-CPU changes)"),
    Family("pinscope_container_cpu_usage_cpus", "gauge", CTR,
           "CPUs the container's tasks used over the last window (utime + stime)"),
    Family("pinscope_container_runqueue_wait_seconds_per_second", "gauge", CTR,
           "seconds the container's threads waited on a run queue per second, summed over its threads, over "
           "their last window (schedstat run_delay, or sched wait_sum; read with the task scan, every 10th read)"),
    Family("pinscope_container_device_info", "gauge", (*CTR, "resource", "device", "numa_node"),
           "1 per device kubelet's device manager gave a container (its checkpoint), with the NUMA node it sits on "
           "(empty: unknown); at most 512 per node, ids cut at 128 characters"),
    Family("pinscope_numa_node_devices", "gauge", ("node", "numa_node", "resource"),
           "devices held by containers per NUMA node and resource (numa_node empty: not placed)"),
    Family("pinscope_cpu_noise_ratio", "gauge", ("node", "cpu"),
           "share of the CPU's time taken by the kernel over the last read window, 0..1: irq + softirq + steal "
           "(/proc/stat; what KERNEL_NOISE_EXCLUSIVE measures)"),
    Family("pinscope_fit_largest_exclusive_cpus", "gauge", ("node", "numa_node", "alignment"),
           "the largest Guaranteed container kubelet could give exclusive CPUs from this NUMA node alone, as its own "
           "code decides (alignment \"cpus\": any CPUs, \"whole_cores\": whole cores only); static policy, checkpoint read"),
    Family("pinscope_readiness_check", "gauge", ("node", "check", "status"),
           "latency readiness (node pane's checklist): per check, 1 for its status now and 0 for the others (ok, no, "
           "n/a: the node does not use the mechanism, unknown: not read); check names as in snapshot --json readiness.checks"),
    Family("pinscope_readiness_checks", "gauge", ("node", "status"),
           "latency readiness checks of the node by status (every status present, 0 included); the score is ok of "
           "ok + no"),
    Family("pinscope_readiness_not_ready_cpus", "gauge", ("node",),
           "exclusive CPUs that are not latency-ready (not isolated where the node isolates others, irqbalance may "
           "steer IRQs there, powersave, a deep C-state allowed): the grid's \"~\" CPUs"),
    Family("pinscope_finding", "gauge", ("node", "code", "severity", "namespace", "pod", "container"),
           "1 per active finding (codes as in pinscope check; namespace/pod/container empty for node-wide ones)"),
    Family("pinscope_findings", "gauge", ("node", "severity"),
           "active findings of the node by severity (every severity present, 0 included)"),
    Family("pinscope_read_success", "gauge", ("node",),
           "1 when the last read of the node succeeded, 0 when it could not be read (the node's other series are then absent)"),
    Family("pinscope_read_duration_seconds", "gauge", ("node",),
           "wall time of the last read: the probe round trip plus pinscope's parsing and analysis"),
    Family("pinscope_probe_cpu_seconds", "counter", ("node",),
           "CPU the probes used on the node, as each says of itself (its shell and awk: ns on CPU from /proc/self/schedstat, else clock ticks from /proc/self/stat); rate() it"),
    Family("pinscope_last_read_timestamp_seconds", "gauge", ("node",),
           "when the node was last read successfully (Unix time)"),
)
BY_NAME = {f.name: f for f in CONTRACT}


def _s(x) -> str:
    return "" if x is None else str(x)


def _running(snap) -> set[tuple[str, str | None]]:
    """(pod uid, container) of the containers running now: a cgroup with processes in it. An exited init
    container's cgroup may linger, empty, until the runtime removes it; where no container of a pod lists
    a process (cgroup.procs not read at this depth), its cgroup is the sign."""
    out: set[tuple[str, str | None]] = set()
    for p in snap.pods:
        live = [c for c in p.containers if c.cgroup is not None]
        procs_read = any(c.pids for c in live)
        out.update((p.uid, c.name) for c in live if c.pids or not procs_read)
    return out


def _owner(running, owners):
    """The owner a CPU is labelled with: a running container first (an exited init container's CPUs are
    reused by its pod's app containers: kubelet's cpusToReuse, k/k cm/cpumanager/policy_static.go), then by
    namespace/pod/container; EXCLUSIVE_OVERLAP names the others."""
    if not owners:
        return None
    return min(owners, key=lambda o: ((o.pod_uid, o.container) not in running, _s(o.namespace), _s(o.pod), _s(o.container)))


def _exclusive_counts(snap, running) -> dict[tuple[str, str | None], int]:
    """(pod uid, container) -> its exclusive CPUs, each CPU counted once per pod (for the owner it is
    labelled with among that pod's owners), so a pod's sum is the CPUs it holds."""
    counts: dict[tuple[str, str | None], int] = {}
    for r in snap.roles:
        for uid in dict.fromkeys(o.pod_uid for o in r.owners):
            o = _owner(running, [x for x in r.owners if x.pod_uid == uid])
            if o is not None:
                counts[(uid, o.container)] = counts.get((uid, o.container), 0) + 1
    return counts


class _Out:
    """The samples of one node being built, by family name."""

    def __init__(self) -> None:
        self.by: dict[str, list[Sample]] = {f.name: [] for f in CONTRACT}

    def add(self, fam: str, labels: dict, value: float) -> None:
        self.by[fam].append(Sample(BY_NAME[fam].sample_name, labels, float(value), None, None))


def node_samples(node: str, report) -> dict[str, list[Sample]]:
    """The samples of one successfully read node, by family name (the read_* self metrics excluded)."""
    out = _Out()
    running = _running(report.snapshot)
    _cpus(out, node, report.snapshot, report.rates, running)
    _containers(out, node, report.snapshot, report.rates, _exclusive_counts(report.snapshot, running))
    _devices(out, node, report.snapshot)
    _fit(out, node, report.snapshot)
    _readiness(out, node, report.snapshot)
    _findings(out, node, report.findings)
    return out.by


READY_STATUSES = ("ok", "no", "n/a", "unknown")


def _readiness(out: _Out, node: str, snap) -> None:
    """Latency readiness: every check with every status (1 for the one it has), the count per status, and the
    pinned CPUs not ready; nothing where it was not assembled."""
    r = snap.readiness
    if r is None:
        return
    counts = dict.fromkeys(READY_STATUSES, 0)
    for c in r.checks:
        counts[c.status] = counts.get(c.status, 0) + 1
        for st in READY_STATUSES:
            out.add("pinscope_readiness_check", {"node": node, "check": c.key, "status": st}, 1 if c.status == st else 0)
    for st, n in counts.items():
        out.add("pinscope_readiness_checks", {"node": node, "status": st}, n)
    out.add("pinscope_readiness_not_ready_cpus", {"node": node}, len(r.not_ready))


def _fit(out: _Out, node: str, snap) -> None:
    """Per NUMA node: the largest container kubelet could give from it alone (collectors/fit, computed again only
    when the node's checkpoint or configuration changed); nothing where no prediction is made."""
    if snap.kubelet.cpu_manager_policy != "static" or snap.state is None:
        return
    ans = node_fit(snap)
    if not ans.readable or ans.note:
        return
    for p in ans.per_numa:
        largest = p.get("largest_fit") or {}
        for alignment in ("cpus", "whole_cores"):
            if alignment in largest:
                out.add("pinscope_fit_largest_exclusive_cpus",
                        {"node": node, "numa_node": str(p["numa_node"]), "alignment": alignment}, largest[alignment])


MAX_DEVICE_SERIES = 512  # a node with every SR-IOV VF handed out has a few hundred; labels stay bounded
MAX_LABEL = 128


def _devices(out: _Out, node: str, snap) -> None:
    """Per device a container holds (kubelet's checkpoint), and the count per NUMA node and resource."""
    counts: dict = {}
    n = 0
    for p, c in snap.containers():
        for d in c.devices:
            numa = _s(d.numa_node)
            counts[(numa, d.resource[:MAX_LABEL])] = counts.get((numa, d.resource[:MAX_LABEL]), 0) + 1
            if n >= MAX_DEVICE_SERIES:
                continue
            n += 1
            out.add("pinscope_container_device_info", {
                "node": node, "namespace": _s(p.namespace), "pod": _s(p.name or p.uid), "container": _s(c.name or c.id),
                "resource": d.resource[:MAX_LABEL], "device": d.device[:MAX_LABEL], "numa_node": numa}, 1)
    for (numa, res), k in sorted(counts.items()):
        out.add("pinscope_numa_node_devices", {"node": node, "numa_node": numa, "resource": res}, k)


def _cpus(out: _Out, node: str, snap, rates, running) -> None:
    """Per CPU and per node: topology, roles, utilisation, kernel noise, kubelet's policies."""
    topo = {c.id: c for c in snap.topology.cpus}
    counts = dict.fromkeys(ROLES, 0)
    for r in snap.roles:
        c = topo.get(r.id)
        o = _owner(running, r.owners)
        counts[r.role] = counts.get(r.role, 0) + 1
        out.add("pinscope_cpu_info", {
            "node": node, "cpu": str(r.id), "socket": _s(c and c.socket), "numa_node": _s(c and c.numa_node),
            "core": _s(c and c.core), "role": r.role, "namespace": _s(o and o.namespace), "pod": _s(o and o.pod),
            "container": _s(o and o.container),
            "owner_level": "" if o is None else ("pod" if o.pod_level else "container")}, 1)
    for role, n in counts.items():
        out.add("pinscope_cpus", {"node": node, "role": role}, n)
    if rates is not None and rates.util:
        for cpu, u in sorted(rates.util.items()):
            out.add("pinscope_cpu_utilization_ratio", {"node": node, "cpu": str(cpu)}, u)
        out.add("pinscope_node_cpu_utilization_ratio", {"node": node}, sum(rates.util.values()) / len(rates.util))
    if rates is not None:
        for cpu, nz in sorted(rates.noise.items()):
            out.add("pinscope_cpu_noise_ratio", {"node": node, "cpu": str(cpu)}, min(1.0, nz.total))
    k = snap.kubelet
    out.add("pinscope_node_info", {"node": node, "cpu_manager_policy": _s(k.cpu_manager_policy),
                                   "topology_manager_policy": _s(k.topology_manager_policy),
                                   "cgroup_version": _s(snap.cgroup_version), "roles_from": snap.roles_from}, 1)


def _pod_level(out: _Out, node: str, snap) -> None:
    """Per pod with pod-level CPUs (podEntries) none of its containers holds: how many."""
    st = snap.state
    if st is None or st.policy != "static":
        return
    names = {p.uid: p for p in snap.pods}
    for uid in sorted(st.pod_entries):
        n = len(st.pod_level(uid))
        if n:
            p = names.get(uid)
            out.add("pinscope_pod_exclusive_cpus", {"node": node, "namespace": _s(p and p.namespace),
                                                    "pod": _s(p and p.name) or uid}, n)


def _containers(out: _Out, node: str, snap, rates, exclusive: dict) -> None:
    """Per running container: its exclusive CPUs, the kernel's cgroup counters and pinscope's rates."""
    _pod_level(out, node, snap)
    seen = set()
    for p, c in snap.containers():
        if c.cgroup is None:
            continue  # an init container that has exited: kubelet's entry only, nothing to measure
        lab = {"node": node, "namespace": _s(p.namespace), "pod": _s(p.name or p.uid), "container": _s(c.name or c.id)}
        key = tuple(lab.values())
        if key in seen:
            continue  # two cgroups under one name (a restart in progress): the first read wins
        seen.add(key)
        out.add("pinscope_container_exclusive_cpus", lab, exclusive.get((p.uid, c.name), 0) if c.name else len(c.assigned or ()))
        cg = c.cgroup
        for fam, v, scale in (("pinscope_container_cpu_cfs_periods", cg.nr_periods, 1),
                              ("pinscope_container_cpu_cfs_throttled_periods", cg.nr_throttled, 1),
                              ("pinscope_container_cpu_cfs_throttled_seconds", cg.throttled_usec, 1e-6),
                              ("pinscope_container_cpu_pressure_some_seconds", cg.pressure_some_total_us, 1e-6)):
            if v is not None:
                out.add(fam, lab, v * scale)
        cr = rates.containers.get((p.uid, c.id)) if rates is not None else None
        if cr is None:
            continue
        for fam, v, scale in (("pinscope_container_migrations_per_second", cr.migrations_per_s, 1),
                              ("pinscope_container_cpu_usage_cpus", cr.cpu_usage, 1),
                              ("pinscope_container_runqueue_wait_seconds_per_second", cr.runq_wait_ms_per_s, 1e-3)):
            if v is not None:
                out.add(fam, lab, v * scale)


def _findings(out: _Out, node: str, findings) -> None:
    """One series per active finding (code, severity, owner) and the count per severity."""
    per_sev = dict.fromkeys(SEVERITIES, 0)
    active = set()
    for f in findings:
        sev = str(f.severity)
        per_sev[sev] = per_sev.get(sev, 0) + 1
        active.add((f.code, sev, _s(f.namespace), _s(f.pod), _s(f.container)))
    for code, sev, ns, pod, ctr in sorted(active):
        out.add("pinscope_finding", {"node": node, "code": code, "severity": sev, "namespace": ns, "pod": pod,
                                     "container": ctr}, 1)
    for sev, n in per_sev.items():
        out.add("pinscope_findings", {"node": node, "severity": sev}, n)


@dataclass(frozen=True, slots=True)
class NodeState:
    """What the exporter knows of one node: the samples of its last good read, and how the last read went."""

    node: str
    samples: dict  # family name -> [Sample] (empty while the node cannot be read)
    success: bool
    duration: float | None = None
    probe_cpu: float | None = None  # the probes' CPU on the node so far (a counter, seconds)
    last_success: float | None = None  # Unix time
    error: str | None = None


def self_samples(st: NodeState) -> dict[str, list[Sample]]:
    lab = {"node": st.node}
    out = {"pinscope_read_success": [Sample("pinscope_read_success", lab, 1.0 if st.success else 0.0, None, None)]}
    if st.duration is not None:
        out["pinscope_read_duration_seconds"] = [Sample("pinscope_read_duration_seconds", lab, st.duration, None, None)]
    if st.probe_cpu is not None:
        out["pinscope_probe_cpu_seconds"] = [Sample("pinscope_probe_cpu_seconds_total", lab, st.probe_cpu, None, None)]
    if st.last_success is not None:
        out["pinscope_last_read_timestamp_seconds"] = [
            Sample("pinscope_last_read_timestamp_seconds", lab, st.last_success, None, None)]
    return out


class LatestReports(Collector):
    """A prometheus_client custom collector over the latest state of every node.

    The reading loops call `put()` (samples are built once per read, not per scrape); `collect()` runs in
    the HTTP server's thread and only reads a dict swapped under a lock: it never waits for a node.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._nodes: dict[str, NodeState] = {}

    def put(self, st: NodeState) -> None:
        with self._lock:
            self._nodes = {**self._nodes, st.node: st}

    def drop(self, node: str) -> None:
        """The node is no longer served under this name (it took its own at its first read)."""
        with self._lock:
            self._nodes = {k: v for k, v in self._nodes.items() if k != node}

    def get(self, node: str) -> NodeState | None:
        return self._nodes.get(node)

    def describe(self) -> Iterable[Metric]:
        return ()  # the families are known, but describing them would make register() call collect()

    def collect(self) -> Iterable[Metric]:
        with self._lock:
            nodes = self._nodes
        fams = {f.name: Metric(f.name, f.help, f.type) for f in CONTRACT}
        for name in sorted(nodes):
            st = nodes[name]
            for part in (st.samples, self_samples(st)):
                for fam, samples in part.items():
                    fams[fam].samples.extend(samples)
        return [m for m in fams.values() if m.samples]
