"""Assembly stage: the role of every CPU and who owns it.

Roles come from kubelet's view when the state file is readable, else they are inferred from the cgroups
and the snapshot says so (`roles_from`, and a problem). An entry of one pod that overlaps another entry
of the same pod is legit (init containers' CPUs are reused by app containers: k/k policy_static.go
cpusToReuse); every owner is listed. A pod's pod-level CPUs (checkpoint v3+ podEntries) that none of its
containers holds are exclusive to the pod: an owner without a container (`pod_level`).
"""
from __future__ import annotations

import math
from collections import Counter

from ..errors import Problem
from ..model import CpuRole, Owner


def _owners_from_state(state, pods) -> dict[int, list[Owner]]:
    owners: dict[int, list[Owner]] = {}
    names = {p.uid: (p.namespace, p.name) for p in pods}
    for uid, ctrs in state.entries.items():
        for cname, cs in ctrs.items():
            if uid == "":  # v1 keys by container id: find its pod through the cgroups
                uid2, ns, pn, cn = _by_id(pods, cname)
                o = Owner(uid2, ns, pn, cn or cname)
            else:
                ns, pn = names.get(uid, (None, None))
                o = Owner(uid, ns, pn, cname)
            for c in cs:
                owners.setdefault(c, []).append(o)
    for uid in state.pod_entries:  # pod-level resources: the pod's CPUs none of its containers holds
        ns, pn = names.get(uid, (None, None))
        for c in state.pod_level(uid):
            owners.setdefault(c, []).append(Owner(uid, ns, pn, None, pod_level=True))
    return owners


def _owners_inferred(pods, online):
    """Static policy but no readable state: the shared pool is the most common effective cpuset of the
    containers (the largest on a tie), of Burstable and BestEffort ones first (they always run there);
    a Guaranteed container outside it owns its CPUs. With one set only, and smaller than the online
    CPUs, it is an exclusive one and the pool is the rest."""
    owners: dict[int, list[Owner]] = {}
    shared = None
    sets = [c.cgroup.cpus_effective for p, c in _iter(pods)
            if c.cgroup and c.cgroup.cpus_effective and p.qos != "Guaranteed" and not c.unresolved]
    sets = sets or [c.cgroup.cpus_effective for _, c in _iter(pods)
                    if c.cgroup and c.cgroup.cpus_effective and not c.unresolved]
    if sets:
        common = Counter(sets).most_common()
        shared = max((s for s, n in common if n == common[0][1]), key=len)
        if len(common) == 1 and shared < online and all(p.qos == "Guaranteed" for p in pods):
            shared = online - shared
    for p in pods:
        if p.qos != "Guaranteed":
            continue
        for c in p.containers:
            eff = c.cgroup.cpus_effective if c.cgroup else None
            if eff and shared is not None and not (eff & shared):
                for cpu in eff:
                    owners.setdefault(cpu, []).append(Owner(p.uid, p.namespace, p.name, c.name))
    return owners, shared


def _role(cpu, online, owners, reserved, isolated, shared) -> str:
    if cpu not in online:
        return "offline"
    if cpu in owners:
        return "exclusive"
    if cpu in reserved:
        return "reserved"
    if cpu in isolated:
        return "isolated"
    if shared is not None and cpu in shared:
        return "shared"
    return "unassigned"


class RolesStage:
    """Roles change when the state file, the topology or the pods' names change, not every tick: the last
    result is kept while those hold (and, for roles inferred from cgroups, the containers' cpusets)."""

    def __init__(self) -> None:
        self._key: tuple | None = None
        self._out: tuple | None = None

    def run(self, topo, kubelet, state, pods, state_file):
        """-> (roles per CPU, the shared pool, where roles came from, problems)."""
        key = (topo, kubelet, state, state_file, _owner_inputs(pods, state))
        if self._key is None or key != self._key:
            problems: list[Problem] = []
            roles, shared, roles_from = roles_stage(topo, kubelet, state, pods, problems, state_file)
            self._key, self._out = key, (roles, shared, roles_from, tuple(problems))
        return self._out


def _owner_inputs(pods, state) -> tuple:
    """What the owners depend on besides the state: names (and container ids, for v1 keys); for roles
    inferred from cgroups, the QoS, effective cpusets and resolution too."""
    if state is not None and state.policy == "static":
        return tuple((p.uid, p.namespace, p.name, tuple((c.id, c.name) for c in p.containers)) for p in pods)
    return tuple((p.uid, p.namespace, p.name, p.qos, tuple(
        (c.name, c.cgroup.cpus_effective if c.cgroup else None, c.unresolved) for c in p.containers)) for p in pods)


def roles_stage(topo, kubelet, state, pods, problems, state_file):
    """-> (roles per CPU, the shared pool, where roles came from)."""
    online = topo.online
    owners: dict[int, list[Owner]] = {}
    shared = None
    roles_from = "state"
    policy = state.policy if state else kubelet.cpu_manager_policy
    if state is not None and policy == "static":
        shared = state.default_cpuset
        owners = _owners_from_state(state, pods)
    elif policy == "none":
        shared = online
        roles_from = "policy-none"
    else:
        roles_from = "cgroups"
        problems.append(Problem(state_file, "roles inferred from cgroups: kubelet's assignment is unknown"))
        owners, shared = _owners_inferred(pods, online)
    reserved = kubelet.reserved_cpus or frozenset()
    out = tuple(CpuRole(cpu, _role(cpu, online, owners, reserved, topo.isolated, shared), tuple(owners.get(cpu, ())))
                for cpu in sorted(topo.possible | online))
    if policy == "static" and not kubelet.reserved_cpus:
        # a config that could not be read (policy None) says nothing of reservedSystemCPUs: not "not set"
        problems.append(_reserved_problem(kubelet) if kubelet.cpu_manager_policy is not None else
                        Problem(kubelet.config_path or "kubelet", "reservedSystemCPUs unknown (kubelet's config was "
                                "not read): the CPUs kubelet reserves are shown as shared"))
    return out, shared, roles_from


def _reserved_problem(kubelet) -> Problem:
    n = _reserved_count(kubelet)
    return Problem(kubelet.config_path or "kubelet",
                   "reservedSystemCPUs is not set: kubelet reserves "
                   + (f"{n} CPU{'s' if n != 1 else ''}" if n else "CPUs")
                   + " of its own choosing (whole cores from the lowest-numbered, policy_static.go"
                   " takeByTopology); they are shown as shared")


def _reserved_count(kubelet) -> int | None:
    """ceil(kubeReserved.cpu + systemReserved.cpu), as the static policy counts it; None if unknown."""
    total = 0.0
    seen = False
    for m in (kubelet.kube_reserved, kubelet.system_reserved):
        v = str(m.get("cpu", "")).strip()
        if not v:
            continue
        try:
            total += float(v[:-1]) / 1000 if v.endswith("m") else float(v)
            seen = True
        except ValueError:
            return None
    return math.ceil(total - 1e-9) if seen else None


def _iter(pods):
    for p in pods:
        for c in p.containers:
            yield p, c


def _by_id(pods, cid):
    for p, c in _iter(pods):
        if c.id == cid:
            return p.uid, p.namespace, p.name, c.name
    return "", None, None, None
