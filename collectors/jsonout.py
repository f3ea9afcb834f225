"""NodeSnapshot (+ Rates, + findings) -> the `pinscope snapshot --json` object (schema 1).

Field names are a contract users' scripts build on: add fields, never rename them.
"""
from __future__ import annotations

from .assemble.readiness import to_json as readiness_json
from .model import NodeSnapshot
from .rates import Rates

SCHEMA = 1


def _l(s):
    return sorted(s) if s is not None else None


def _r(v, nd=3):
    return round(v, nd) if v is not None else None


def _cpu_noise(cpu: int, rates: Rates | None) -> dict:
    """Kernel noise on one CPU over the window: shares of its time, softirqs and timer/IPIs per second,
    and the run-queue wait of the threads read there (schedstat)."""
    if rates is None:
        return {"noise": None, "softirqs_per_s": None, "ipis_per_s": None, "runq_wait_ms_per_s": None}
    n = rates.noise.get(cpu)
    soft = rates.softirqs.get(cpu)
    ipis = rates.ipis.get(cpu)
    return {
        "noise": {"irq": _r(n.irq, 4), "softirq": _r(n.softirq, 4), "steal": _r(n.steal, 4),
                  "total": _r(n.total, 4)} if n else None,
        "softirqs_per_s": {k: _r(v, 1) for k, v in sorted(soft.items())} if soft else None,
        "ipis_per_s": {k: _r(v, 1) for k, v in sorted(ipis.items())} if ipis else None,
        "runq_wait_ms_per_s": _r(rates.cpu_wait.get(cpu), 1),
    }


def _task_runq(t, tr) -> dict:
    q = t.runq
    return {"run_delay_ns": q.wait_ns if q else None, "exec_runtime_ns": q.run_ns if q else None,
            "runq_source": q.source if q else None,
            "runq_wait_ms_per_s": _r(tr.wait_ms_per_s, 1) if tr else None,
            "oncpu_ms_per_s": _r(tr.run_ms_per_s, 1) if tr else None}


def to_json(snap: NodeSnapshot, rates: Rates | None = None, findings=()) -> dict:
    topo = snap.topology
    devices = _numa_devices(snap)
    held = snap.state.pod_entries if snap.state is not None else {}
    pods = [{"uid": p.uid, "namespace": p.namespace, "name": p.name, "qos": p.qos, "cgroup": p.cgroup_path,
             "sources": list(p.sources),
             "pod_cpus": _l(held.get(p.uid)),  # kubelet's pod-level assignment (podEntries), else null
             "containers": [_container_json(p, c, rates, snap.assignment_known) for c in p.containers],
             # DRA ResourceClaims kubelet prepared for the pod (which container uses which: the pod's spec)
             "claims": [_claim_json(c) for c in p.claims]}
            for p in snap.pods]
    return {
        "schema": SCHEMA,
        "node": snap.node,
        "cgroup": {"version": snap.cgroup_version, "driver": snap.cgroup_driver},
        "kubelet": _kubelet_json(snap),
        "roles_from": snap.roles_from,
        "shared_pool": _l(snap.shared_pool),
        "isolated": sorted(topo.isolated),
        "nohz_full": sorted(topo.nohz_full),
        "numa_nodes": [{"id": n.id, "cpus": list(n.cpus), "distances": list(n.distances),
                        "numa_miss_per_s": _r(rates.numa.get(n.id, {}).get("numa_miss_per_s")) if rates else None,
                        "miss_ratio": _r(rates.numa.get(n.id, {}).get("miss_ratio"), 4) if rates else None,
                        "devices": devices.get(n.id, [])}
                       for n in topo.numa_nodes],
        "cpus": _cpus_json(snap, rates),
        "pods": pods,
        "window_s": _r(rates.dt) if rates else None,
        "findings": [f.to_json() for f in findings],
        "readiness": readiness_json(snap.readiness),
        "errors": [{"source": p.source, "message": p.message, **({"kind": p.kind} if p.kind else {})}
                   for p in snap.problems],
    }


def _numa_devices(snap: NodeSnapshot) -> dict:
    """NUMA node -> the devices placed on it and who holds them (kubelet's device checkpoint)."""
    out: dict = {}
    for p, c in snap.containers():
        for d in c.devices:
            if d.numa_node is not None:
                out.setdefault(d.numa_node, []).append({
                    "resource": d.resource, "id": d.device, "pod_uid": p.uid, "namespace": p.namespace,
                    "pod": p.name, "container": c.name})
    return out


def _claim_json(c) -> dict:
    return {"name": c.name, "namespace": c.namespace, "uid": c.uid,
            "devices": [{"driver": d.driver, "pool": d.pool, "device": d.device, "requests": list(d.requests),
                         "cdi_ids": list(d.cdi_ids)} for d in c.devices]}


def _dra_checkpoint_json(snap: NodeSnapshot) -> dict | None:
    cp = snap.dra_state
    if cp is None:
        return None
    known = {p.uid for p in snap.pods}
    return {"checksum_ok": cp.checksum_ok, "version": cp.version or None, "claims": len(cp.claims),
            # as DRA_CLAIM_ORPHAN judges: none when no pod is known at all (cgroups unread), nor a claim for no pod
            "orphans": [{**_claim_json(c), "pod_uids": list(c.pod_uids)} for c in cp.claims
                        if known and c.pod_uids and not known.intersection(c.pod_uids)]}


def _device_checkpoint_json(snap: NodeSnapshot) -> dict | None:
    cp = snap.device_state
    if cp is None:
        return None
    return {"checksum_ok": cp.checksum_ok, "allocations": len(cp.allocations),
            "registered": {r: len(ids) for r, ids in cp.registered},
            "orphans": [{"pod_uid": a.pod_uid, "container": a.container, "resource": a.resource, "id": a.device,
                         "numa_node": a.numa_node} for a in snap.device_orphans]}


def _cpus_json(snap: NodeSnapshot, rates: Rates | None) -> list[dict]:
    """Every CPU: its place in the topology, its role and owners, its utilisation and noise."""
    roles = {r.id: r for r in snap.roles}
    cpus = []
    for c in snap.topology.cpus:
        r = roles.get(c.id)
        cpus.append({
            "id": c.id, "online": c.online, "socket": c.socket, "die": c.die, "numa_node": c.numa_node,
            "core": c.core, "siblings": list(c.siblings), "l3": c.l3,
            "role": r.role if r else ("offline" if not c.online else "unassigned"),
            # a CPU the pod holds as a whole (podEntries): container null and "pod_level": true (absent else)
            "owners": [{"pod_uid": o.pod_uid, "namespace": o.namespace, "pod": o.pod, "container": o.container,
                        **({"pod_level": True} if o.pod_level else {})} for o in (r.owners if r else ())],
            "util": _r(rates.util.get(c.id)) if rates else None,
            **_cpu_noise(c.id, rates),
        })
    return cpus


def _container_json(p, c, rates: Rates | None, known: bool = True) -> dict:
    """One container of pod `p`: identity, cpuset and quota, its rates, and its tasks. `known`: is kubelet's
    assignment known (NodeSnapshot.assignment_known)?"""
    cg = c.cgroup
    cr = rates.containers.get((p.uid, c.id)) if rates else None
    quota = None
    if cg and cg.quota_us is not None and cg.period_us:
        quota = round(cg.quota_us / cg.period_us, 3)
    return {
        "name": c.name, "id": c.id, "runtime": c.runtime, "cgroup": c.cgroup_path,
        "unresolved": c.unresolved,
        # memory per NUMA node (memory.numa_stat): the container in focus only, else null
        "memory_numa": None if c.memory_numa is None else {
            "unit": c.memory_numa["unit"],
            "nodes": {str(n): v for n, v in c.memory_numa["nodes"].items()}},
        "cpuset": _l(c.assigned), "cpus_effective": _l(cg.cpus_effective) if cg else None,
        "mems_effective": _l(cg.mems_effective) if cg else None,
        # null: kubelet's assignment is unknown (its state file was not read: roles_from "cgroups")
        "exclusive": (c.assigned is not None) if known else None,
        "cpu_quota_cores": quota,
        "throttled_per_s": _r(cr.throttled_per_s) if cr else None,
        "migrations_per_s": _r(cr.migrations_per_s) if cr else None,
        "migrations_source": cr.migrations_source if cr else None,
        "ctx_switches_per_s": _r(cr.ctx_switches_per_s) if cr else None,
        "cpu_usage_cores": _r(cr.cpu_usage) if cr else None,
        "nr_throttled": cg.nr_throttled if cg else None,
        "runq_wait_ms_per_s": _r(cr.runq_wait_ms_per_s, 1) if cr else None,
        "runq_worst": ({"tid": cr.runq_worst[0], "comm": cr.runq_worst[1],
                        "ms_per_s": _r(cr.runq_worst[2], 1), "cpu": cr.runq_worst[3]}
                       if cr and cr.runq_worst else None),
        "cpu_pressure_some_ms_per_s": _r(cr.pressure_some_ms_per_s, 1) if cr else None,
        "tasks": [_task_json(t, rates.tasks if rates else {}) for t in c.tasks],
        # kubelet's device manager: what it gave this container, on which NUMA node (null: unknown) and how
        # that is known (pci: sysfs numa_node, nvidia: /proc/driver/nvidia + sysfs, checkpoint: the plugin's)
        "devices": [{"resource": d.resource, "id": d.device, "numa_node": d.numa_node, "numa_from": d.numa_from,
                     "pci": d.pci} for d in c.devices],
    }


def _task_json(t, tr: dict) -> dict:
    return {
        "tid": t.tid, "pid": t.pid, "comm": t.comm, "last_cpu": t.last_cpu,
        "cpus_allowed": _l(t.allowed), "nr_migrations": t.nr_migrations,
        "voluntary_switches": t.voluntary, "involuntary_switches": t.involuntary,
        "migrations_per_s": _r(tr[t.tid].migrations_per_s) if t.tid in tr else None,
        **_task_runq(t, tr.get(t.tid)),
    }


def _kubelet_json(snap: NodeSnapshot) -> dict:
    """What kubelet was configured with and what its checkpoint says, with where each came from."""
    k = snap.kubelet
    return {
        "found": k.found, "pid": k.pid, "config": k.config_path, "root_dir": k.root_dir,
        "cpu_manager_policy": k.cpu_manager_policy,
        "cpu_manager_policy_options": dict(k.cpu_manager_policy_options),
        "topology_manager_policy": k.topology_manager_policy,
        "topology_manager_scope": k.topology_manager_scope,
        "memory_manager_policy": k.memory_manager_policy,
        "cgroup_driver": k.cgroup_driver,
        "cgroup_root": k.cgroup_root,
        "reserved_cpus": _l(k.reserved_cpus) or [],
        "kube_reserved": dict(k.kube_reserved), "system_reserved": dict(k.system_reserved),
        "sources": dict(k.sources),
        "state_file": snap.state_file,
        "state_status": snap.state_status,
        "state": None if snap.state is None else {
            "version": snap.state.version, "policy": snap.state.policy,
            "default_cpuset": sorted(snap.state.default_cpuset), "checksum_ok": snap.state.checksum_ok,
            "checksum_as": snap.state.checksum_as or None,
            "pod_entries": {uid: sorted(cs) for uid, cs in sorted(snap.state.pod_entries.items())},
        },
        "device_checkpoint": _device_checkpoint_json(snap),
        "dra_checkpoint": _dra_checkpoint_json(snap),
        "memory_state": _memory_json(snap),
    }


def _memory_json(snap: NodeSnapshot) -> dict | None:
    """memory_manager_state: its version, policy and whether its checksum is one kubelet accepts."""
    m = snap.memory_state
    if m is None:
        return None
    return {"version": m.version, "policy": m.policy, "checksum_ok": m.checksum_ok,
            "checksum_as": m.checksum_as or None, "pod_entries": sorted(m.pod_entries)}


def _name_by_api(p: dict, ap) -> None:
    """A leaf no node source named, named by the API's containerStatuses[].containerID; kubelet's state
    entry for that name (listed apart, without a cgroup, when the name was unknown) joins it."""
    for c in list(p["containers"]):
        name = ap.ids.get(c["id"]) if c["name"] is None and c["id"] else None
        if name is None:
            continue
        c["name"], c["unresolved"], c["named_by"] = name, None, "kubernetes API containerStatuses"
        entry = next((e for e in p["containers"] if e["name"] == name and e["id"] is None), None)
        if entry is not None:
            c["cpuset"], c["exclusive"] = entry["cpuset"], entry["exclusive"]
            p["containers"].remove(entry)


def enrich(o: dict, api_pods: dict) -> dict:
    """Add what the API knows (owner workload, QoS, requests and limits) to a snapshot object."""
    for p in o["pods"]:
        ap = api_pods.get(p["uid"])
        if ap is None:
            continue
        p["owner"] = ap.owner
        p["api_qos"] = ap.qos
        p["namespace"] = p["namespace"] or ap.namespace
        p["name"] = p["name"] or ap.name
        _name_by_api(p, ap)
        byname = {c.name: c for c in ap.containers}
        for c in p["containers"]:
            ac = byname.get(c["name"])
            if ac is not None:
                c["requests"], c["limits"] = ac.requests, ac.limits
    return o


def api_json(window) -> dict:
    """What the Kubernetes API said of the node (a collectors.kube.ApiWindow) -> the `kubernetes` object of
    `snapshot --json` (with --kube or node/NAME only; absent without). A part that failed is null with its
    `*_error` line; kubelet's counters are since kubelet started, `window_s` the time between two rounds."""
    a = window.now
    m = a.metrics
    return {
        "node": a.node,
        "allocatable_cpu": a.allocatable_cpu,
        "kubelet_version": a.kubelet_version,
        "rejected_pods": [{"uid": r.uid, "namespace": r.namespace, "name": r.name, "reason": r.reason,
                           "message": r.message} for r in a.rejected],
        "kubelet_metrics": None if m is None else {
            "cpu_manager_pinning_requests_total": m.pinning_requests,
            "cpu_manager_pinning_errors_total": m.pinning_errors,
            "topology_manager_admission_requests_total": m.admission_requests,
            "topology_manager_admission_errors_total": m.admission_errors,
            "cpu_manager_exclusive_cpu_allocation_count": m.exclusive_cpus},
        "window_s": _r(window.seconds),
        "pods_error": a.pods_error,
        "node_error": a.node_error,
        "metrics_error": a.metrics_error or (f"kubelet metrics: {m.problem}" if m and m.problem else None),
    }
