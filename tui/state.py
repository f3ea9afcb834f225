"""What the UI knows about one node: the last snapshot, rates, findings, histories, connection state.

Built from messages only (workers never touch widgets). Pure data plus small derivations; no Textual.
"""
from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field, replace
from itertools import count

from pinscope.collectors.findings import Finding, worst
from pinscope.collectors.findings.readiness import NOT_READY_CODES
from pinscope.collectors.model import NodeSnapshot
from pinscope.collectors.naming import node_name
from pinscope.collectors.pipeline import NodeReport
from pinscope.collectors.rates import ContainerRates, Rates

HISTORY = 60
NODE_WIDE = frozenset({"NUMA_MISS_HIGH", "SAMPLES_NEEDED", "KUBELET_NOT_FOUND"})
LETTERS = "ABCDEFGHJKLMNPQRSTUVWXYZ"  # no I or O: they read as 1 and 0 beside CPU ids
_SERIALS = count(1)  # every NodeView's own number (NodeView.serial)


def pod_tag(i: int) -> str:
    """A, B, ... Z, AA, AB, ... ZZ, AAA, ...: as short as it can be, never repeated (bijective base 24)."""
    out = ""
    i += 1
    while i:
        i, r = divmod(i - 1, len(LETTERS))
        out = LETTERS[r] + out
    return out


@dataclass
class NodeView:
    target: str
    report: NodeReport | None = None
    snap: NodeSnapshot | None = None
    rates: Rates | None = None
    findings: list[Finding] = field(default_factory=list)
    state: str = "connecting"  # connecting | up | stale | down
    message: str | None = None
    last_update: float | None = None  # monotonic
    generation: int = 0  # bumps on every new snapshot and state: widgets key their caches on it (data_key)
    util_hist: dict = field(default_factory=dict)  # cpu -> deque of util
    mig_hist: dict = field(default_factory=dict)  # tid -> deque of migrations/s
    crates: dict = field(default_factory=dict)  # (pod uid, container id) -> last known ContainerRates
    noise_hist: dict = field(default_factory=dict)  # cpu -> deque of kernel noise share (irq+softirq+steal)
    cpu_wait_hist: dict = field(default_factory=dict)  # cpu -> deque of run-queue wait ms/s (focused CPU)
    runq_hist: dict = field(default_factory=dict)  # (pod uid, container id) -> deque of run-queue wait ms/s
    ipis: dict = field(default_factory=dict)  # cpu -> {"LOC"|"RES": per s}, last known (read at its own cadence)
    tags: dict = field(default_factory=dict)  # pod uid -> short tag, stable while the pod lives
    ticks: int = 0
    label: str | None = None  # the inventory's (or the API's) name for the node, when it has one
    api_pods: dict = field(default_factory=dict)  # pod uid -> collectors.kube.ApiPod (with --kube)
    api_error: str | None = None
    # this view's own number, never another's (an id() is reused once its object is gone: a cache keyed by it
    # could serve a new view what an old one showed)
    serial: int = field(default_factory=lambda: next(_SERIALS), repr=False, compare=False)
    _marks: tuple = field(default=(None, {}), repr=False, compare=False)  # (its generation, cpu_marks())

    @property
    def data_key(self) -> tuple[int, int]:
        """What a cache of anything worked out from this view's data is keyed by: which view (serial) and which
        of its data (generation). Equal keys, equal data: snap, rates, findings and tags change only in apply()."""
        return (self.serial, self.generation)

    @property
    def name(self) -> str:
        """The hostname the node reported, else the inventory's name or the target."""
        return node_name(None, self.snap.node if self.snap else None, self.label or self.target)

    @property
    def title(self) -> str:
        """The node's one name (collectors/naming.py: the inventory's, else the hostname it reported, else the
        target), with the hostname beside an inventory name that differs from it"""
        own = node_name(self.label, self.snap.node if self.snap else None, self.target)
        if self.label and self.snap and self.label != self.snap.node:
            return f"{own} ({self.snap.node})"
        return own

    def apply(self, report: NodeReport) -> None:
        self.report = report
        snap, rates = report.snapshot, report.rates
        self.snap = snap
        self.rates = rates
        self.findings = list(report.findings)
        self.state = "up"
        self.message = None
        self.last_update = time.monotonic()
        self.generation += 1
        self.ticks += 1
        if rates:
            for cpu, u in rates.util.items():
                self.util_hist.setdefault(cpu, deque(maxlen=HISTORY)).append(u)
            for cpu, n in rates.noise.items():
                self.noise_hist.setdefault(cpu, deque(maxlen=HISTORY)).append(n.total)
            for cpu, w in rates.cpu_wait.items():
                self.cpu_wait_hist.setdefault(cpu, deque(maxlen=HISTORY)).append(w)
            self.ipis.update(rates.ipis)
            for tid, tr in rates.tasks.items():
                if tr.migrations_per_s is not None or tr.moved:
                    v = tr.migrations_per_s if tr.migrations_per_s is not None else (1.0 if tr.moved else 0.0)
                    self.mig_hist.setdefault(tid, deque(maxlen=HISTORY)).append(v)
            for key, cr in rates.containers.items():
                old = self.crates.get(key)
                if old is None or cr.migrations_per_s is not None:
                    new = cr
                else:  # tasks not re-read this tick: keep their last rates, take the fresh cgroup ones
                    new = ContainerRates(cr.throttled_per_s, cr.throttled_us_per_s, old.migrations_per_s,
                                         old.migrations_source, old.ctx_switches_per_s, old.cpu_usage,
                                         old.runq_wait_ms_per_s, old.runq_worst)
                if new.pressure_some_ms_per_s is None and old is not None:  # read at its own cadence
                    new = replace(new, pressure_some_ms_per_s=old.pressure_some_ms_per_s)
                self.crates[key] = new
                if cr.runq_wait_ms_per_s is not None:
                    self.runq_hist.setdefault(key, deque(maxlen=HISTORY)).append(cr.runq_wait_ms_per_s)
        self._tag_pods(snap)

    def _tag_pods(self, snap: NodeSnapshot) -> None:
        """The tag allocator: a pod keeps its tag while it lives; pods new this tick take the lowest free
        tags in the order of their first CPU (A on the lowest pinned CPU), so on a fresh screen the
        letters run with the grid, whatever order the node listed the pods in."""
        live = {p.uid for p in snap.pods}
        for uid in [u for u in self.tags if u not in live]:
            del self.tags[uid]
        # pod uid -> its lowest pinned CPU (pods pinned to nothing get no tag): the CPUs the roles give it, as the
        # grid shows them (kubelet's assignment, its pod-level CPUs, or, its state file not read, the cgroups')
        first: dict[str, int] = {}
        for r in sorted(snap.roles, key=lambda r: r.id):
            for o in r.owners:
                if o.pod_uid and o.pod_uid not in self.tags and o.pod_uid in live:
                    first.setdefault(o.pod_uid, r.id)
        used = set(self.tags.values())
        i = 0
        for uid in sorted(first, key=lambda u: (first[u], u)):
            while pod_tag(i) in used:
                i += 1
            self.tags[uid] = pod_tag(i)
            used.add(pod_tag(i))

    def set_state(self, state: str, message: str | None) -> None:
        if state == "up" and self.snap is None:
            state = "connecting"
        if state == "connecting" and self.state == "down" and self.message:
            # a reconnect after a failure: the failure stays on screen (a silent port must not go back to
            # "waiting for the first frame" after its connect timeout), said to be retried
            state = "down"
            message = self.message if self.message.endswith("(retrying)") else f"{self.message} (retrying)"
        self.state = state
        self.message = message
        self.generation += 1

    def check_stale(self, interval: float, now: float | None = None) -> bool:
        """Stale after 3 missed intervals. Returns True when the state changed."""
        now = time.monotonic() if now is None else now
        if self.state == "up" and self.last_update is not None and now - self.last_update > 3 * interval:
            self.state = "stale"
            self.generation += 1
            return True
        return False

    def worst(self) -> str | None:
        return worst(self.findings)

    def cpu_marks(self) -> dict[int, str]:
        """cpu -> the grid's mark: "critical" or "warning" ("!": a finding names the CPU), else "notready"
        ("~": pinned but not latency-ready, collectors/assemble/readiness.py's reasons). The readiness findings
        that name those CPUs mark them "~", not "!": on a half-tuned node every pinned CPU has one, and an
        intruder's "!" would be lost among them. Worked out once per generation."""
        key = self.generation
        if self._marks[0] == key:
            return self._marks[1]
        ready = self.snap.readiness if self.snap is not None else None
        not_ready = ready.not_ready if ready is not None else frozenset()
        out: dict[int, str] = {}
        rank = {"critical": 0, "warning": 1}
        for f in self.findings:
            if f.code in NODE_WIDE or f.severity not in rank:
                continue
            for c in f.cpus:
                if f.code in NOT_READY_CODES and c in not_ready:
                    continue
                if c not in out or rank[f.severity] < rank[out[c]]:
                    out[c] = f.severity
        for c in not_ready:
            out.setdefault(c, "notready")
        self._marks = (key, out)
        return out

    def cpu_findings(self) -> dict[int, str]:
        """cpu -> worst severity of the findings that name it. Findings about a whole NUMA node are not
        marked on every CPU of it (they would drown the map); selecting them still lights the CPUs."""
        out: dict[int, str] = {}
        rank = {"critical": 0, "warning": 1, "info": 2}
        for f in self.findings:
            if f.code in NODE_WIDE:
                continue
            for c in f.cpus:
                if c not in out or rank[f.severity] < rank[out[c]]:
                    out[c] = f.severity
        return out
