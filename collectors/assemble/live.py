"""Kubelet's live view (its PodResources API, collectors/podresources.py) against what the node's files say:
its checkpoints (cpu_manager_state, the device manager's) and the kernel (each container's cgroup cpuset).

Kubelet acts on what it holds in memory; it writes its checkpoint on every change and a container's cpuset
when the container starts and whenever its assignment changes (pkg/kubelet/cm/cpumanager/cpu_manager.go
reconcileState: it compares with what it last wrote, never with the cgroup). So the three agree on a sound
node, except for an instant: a pod admitted between the probe's read of the checkpoint and kubelet's answer.
A disagreement is therefore judged over two rounds (`LiveWindow.held`): the same values in both.

What is compared, and what is not (each a way to be wrong):
  - only pods both name (namespace/name), and only the containers List names: kubelet lists a pod's app
    containers and its restartable (sidecar) init containers, never a plain init container (whose checkpoint
    entry stays while its CPUs are reused);
  - a container List gives no CPUs in a pod for which it gives pod-level CPUs (pod-level resources) is
    reported at the pod level by kubelet: its checkpoint entry is not compared;
  - the checkpoint side only when cpu_manager_state was read whole ("ok"); devices only when the device
    manager's checkpoint was read; the kernel side only for a container with exclusive CPUs in kubelet's
    memory and a cgroup read (cpuset.cpus.effective).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..podresources import LivePod, LiveView, fmt
from ..text import display


@dataclass(frozen=True, slots=True)
class Disagreement:
    """One container on which kubelet's in-memory state and its checkpoint or the kernel differ. `what`: "cpus", or a
    device resource (nvidia.com/gpu). Values: CPU ids, or device ids; None: that side was not read (or, for
    devices, the kernel has no say)."""

    pod_uid: str
    namespace: str
    pod: str
    container: str
    what: str
    podresources: frozenset
    checkpoint: frozenset | None
    kernel: frozenset | None

    def values(self) -> tuple[str, str, str]:
        """The three values as text (CPUs as a cpulist, devices as ids)."""
        return _text(self.what, self.podresources), _text(self.what, self.checkpoint), _text(self.what, self.kernel)

    def odd_one(self) -> str:
        """Which of the three differs, in words (device resource names escaped)."""
        pr, cp, k = self.values()
        if self.what != "cpus":
            return f"kubelet's in-memory state and its device checkpoint differ on {display(self.what)}"
        if k == "not read" or cp == "not read":
            other = "the kernel" if cp == "not read" else "its checkpoint"
            return f"kubelet's in-memory state and {other} differ"
        if pr == cp:
            return "the kernel differs from kubelet's in-memory state and checkpoint"
        if pr == k:
            return "the checkpoint differs from kubelet's in-memory state and the kernel"
        if cp == k:
            return "kubelet's in-memory state differs from its checkpoint and the kernel"
        return "all three differ"

    def to_json(self, held: bool) -> dict:
        pr, cp, k = self.values()
        return {"namespace": self.namespace, "pod": self.pod, "container": self.container, "what": self.what,
                "podresources": pr, "checkpoint": cp, "kernel": k, "held": held, "odd_one": self.odd_one()}


def _text(what: str, v: frozenset | None) -> str:
    if v is None:
        return "not read" if what == "cpus" else "-"
    return fmt(v) if what == "cpus" else (", ".join(sorted(v)) or "none")


@dataclass(frozen=True, slots=True)
class LiveRound:
    """One asking of kubelet, compared with the tick's snapshot. `t`: time.monotonic() when asked; `wall`: the
    wall clock (epoch seconds) of the report it was asked with (None: not known); `named`: how many containers
    kubelet's in-memory state, its checkpoint and the kernel all name (named())."""

    view: LiveView
    t: float
    disagreements: tuple[Disagreement, ...] = ()
    wall: float | None = None
    named: int = 0


@dataclass(frozen=True, slots=True)
class LiveWindow:
    """This tick's round and the one before (None after the first, or after a reconnect)."""

    now: LiveRound
    before: LiveRound | None = None

    @property
    def seconds(self) -> float | None:
        return self.now.t - self.before.t if self.before is not None else None

    def held(self) -> tuple[Disagreement, ...]:
        """The disagreements seen with the same values in both rounds."""
        if self.before is None:
            return ()
        seen = set(self.before.disagreements)
        return tuple(d for d in self.now.disagreements if d in seen)

    def to_json(self) -> dict:
        """`podresources` of `snapshot --json`: what kubelet said, or why it was not asked (a note, not an error)."""
        v = self.now.view
        if v.error:
            return {"socket": v.socket, "asked": False, "note": v.error}
        held = set(self.held())
        return {"socket": v.socket, "asked": True, "note": None, "allocatable_cpus": fmt(v.allocatable_cpus),
                "pods": len(v.pods), "containers": _containers(v.pods),
                "disagreements": [d.to_json(d in held) for d in self.now.disagreements], "notes": list(v.notes)}


def _containers(pods: tuple[LivePod, ...]) -> list[dict]:
    """The containers kubelet gives exclusive CPUs or devices (the others say nothing)."""
    out: list[dict] = []
    for p in pods:
        for c in p.containers:
            if c.cpus or c.devices:
                out.append({"namespace": p.namespace, "pod": p.name, "container": c.name, "cpus": fmt(c.cpus),
                            "devices": [{"resource": d.resource, "ids": list(d.ids), "numa_nodes": list(d.numa_nodes)}
                                        for d in c.devices]})
        if p.cpus:
            out.append({"namespace": p.namespace, "pod": p.name, "container": None, "cpus": fmt(p.cpus), "devices": []})
    return out


def _pairs(view: LiveView, snap):
    """(kubelet's pod, the snapshot's pod) for every pod both name. A name two pods hold (a StatefulSet's or
    static pod recreated while the old one's cgroup or checkpoint entry lingers) cannot say which pod
    kubelet's entry is of: not paired."""
    if view.error:
        return
    by_name: dict[tuple, list] = {}
    for p in snap.pods:
        if p.namespace and p.name:
            by_name.setdefault((p.namespace, p.name), []).append(p)
    mine = {k: ps[0] for k, ps in by_name.items() if len(ps) == 1}
    for lp in view.pods:
        p = mine.get((lp.namespace, lp.name))
        if p is not None:
            yield lp, p


def compare(view: LiveView, snap) -> tuple[Disagreement, ...]:
    """Every container on which kubelet's in-memory state differs from its checkpoint or the kernel, this tick."""
    out: list[Disagreement] = []
    for lp, p in _pairs(view, snap):
        out += _cpus(lp, p, snap)
        out += _devices(lp, p, snap)
    return tuple(out)


def named(view: LiveView, snap) -> int:
    """How many containers with exclusive CPUs (in kubelet's in-memory state or its checkpoint) kubelet's in-memory
    state, its checkpoint and the kernel all name: the ones compare() weighs all three values of. 0 when the checkpoint
    was not read."""
    st = snap.state if snap.state_status == "ok" else None
    if st is None:
        return 0
    n = 0
    for lp, p in _pairs(view, snap):
        ctrs = {c.name: c for c in p.containers if c.name}
        entries = st.entries.get(p.uid) or {}
        for lc in lp.containers:
            c = ctrs.get(lc.name)
            if c is None or c.cgroup is None or (lp.cpus and not lc.cpus):
                continue
            cp = c.assigned if c.assigned is not None else frozenset(entries.get(lc.name) or ())
            n += bool(lc.cpus or cp)
    return n


def _cpus(lp: LivePod, p, snap) -> list[Disagreement]:
    st = snap.state if snap.state_status == "ok" else None
    entries = (st.entries.get(p.uid) or {}) if st is not None else {}
    ctrs = {c.name: c for c in p.containers if c.name}
    out = []
    for lc in lp.containers:
        c = ctrs.get(lc.name)
        mem = lc.cpus
        cp: frozenset | None = None
        if st is not None and not (lp.cpus and not mem):  # a pod-level container is said at the pod level
            cp = c.assigned if c is not None and c.assigned is not None else frozenset(entries.get(lc.name) or ())
        cg = c.cgroup if c is not None else None
        kernel = cg.cpus_effective if cg is not None and mem else None
        if (cp is not None and cp != mem) or (kernel is not None and kernel != mem):
            out.append(Disagreement(p.uid, lp.namespace, lp.name, lc.name, "cpus", mem, cp,
                                    cg.cpus_effective if cg is not None else None))
    return out


def _devices(lp: LivePod, p, snap) -> list[Disagreement]:
    cp = snap.device_state
    if cp is None:
        return []  # absent or not read: not told apart, so nothing is claimed
    out = []
    for lc in lp.containers:
        mem: dict[str, set[str]] = {}
        for d in lc.devices:
            mem.setdefault(d.resource, set()).update(d.ids)
        ck: dict[str, set[str]] = {}
        for a in cp.allocations:
            if a.pod_uid == p.uid and a.container == lc.name:
                ck.setdefault(a.resource, set()).add(a.device)
        for res in sorted(set(mem) | set(ck)):
            if mem.get(res, set()) != ck.get(res, set()):
                out.append(Disagreement(p.uid, lp.namespace, lp.name, lc.name, res, frozenset(mem.get(res, ())),
                                        frozenset(ck.get(res, ())), None))
    return out
