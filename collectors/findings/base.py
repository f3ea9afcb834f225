"""The findings registry: one small registered check per code (or family), the way node_exporter registers
one collector per subject. A check declares its codes (severity, meaning, fix: docs/findings.md's table and
`pinscope check`'s hints come from here) and the probe depth its data needs; `evaluate` runs them all.

Pure functions of a NodeSnapshot (and the Rates over a window, for the checks that need two samples).
Codes are a contract (users script on them). Hints rest on what the kernel and kubelet document and do (the
files they read: collectors/nodefiles.py), never on the myths of popular CPU-pinning guides.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Callable, Iterable

from ..errors import UNREAD
from ..model import NodeSnapshot, Pod, Role, Severity

SEVERITIES = tuple(Severity)


@dataclass(frozen=True, slots=True)
class Finding:
    code: str
    severity: Severity
    message: str
    hint: str
    evidence: tuple = ()
    cpus: tuple = ()
    pod_uid: str | None = None
    namespace: str | None = None
    pod: str | None = None
    container: str | None = None

    def to_json(self) -> dict:
        return {"code": self.code, "severity": str(self.severity), "message": self.message, "hint": self.hint,
                "evidence": list(self.evidence), "cpus": list(self.cpus), "pod_uid": self.pod_uid,
                "namespace": self.namespace, "pod": self.pod, "container": self.container}


@dataclass(frozen=True, slots=True)
class Code:
    severity: Severity
    meaning: str
    fix: str


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    codes: tuple[str, ...]
    needs: str  # probe depth letters the check's data comes from ("g" grid, "a" every task, "i" IRQs, "r" rates);
    # "k": the Kubernetes API's answer (ctx.api), run only when there is one (evaluate_api); "l": kubelet's live
    # view (ctx.live, its PodResources API over two rounds), run only when it was asked (evaluate_live); "v": judged
    # by kubelet's release or its pods as the API says them, run again with the API's answer (ctx.kubelet_version,
    # ctx.api); without one, by the node alone
    fn: Callable[["Context"], Iterable[Finding]]
    reads: tuple[str, ...] = ()  # node inputs (INPUTS) it judges by: not run when one was not read


# What a check may judge by that this user may fail to read (a 0600 file without --sudo). A check whose input
# was not read is not run (READ_PARTIAL names it): its silence or its finding would be a guess.
INPUTS = {"assignment": "kubelet's CPU assignment (cpu_manager_state)",
          "policy": "kubelet's CPU manager policy (its config)",
          "cgroups": "the cgroup tree (/sys/fs/cgroup: which cgroups exist)",
          "pods": "every place that knows the node's pods (their cgroups, pod log and kubelet pod directories)"}


CODES: dict[str, tuple[str, str, str]] = {}  # code -> (severity, meaning, fix), in registration order
API_CODES: set[str] = set()  # the codes of the checks on the Kubernetes API's answer (needs "k")
LIVE_CODES: set[str] = set()  # the codes of the checks on kubelet's live view (needs "l")
RELEASE_CODES: set[str] = set()  # the codes of the checks judged by kubelet's release (needs "v")
_CODE: dict[str, Code] = {}
REGISTRY: list[Check] = []


def check(codes: dict[str, tuple[str, str, str]], needs: str = "g", reads: tuple[str, ...] = ()):
    """Register a check. `codes`: code -> (severity, meaning, fix); `reads`: the INPUTS it judges by."""

    def deco(fn):
        for code, (sev, meaning, fix) in codes.items():
            if code in _CODE:
                raise ValueError(f"finding code {code} registered twice")
            _CODE[code] = Code(Severity(sev), meaning, fix)
            CODES[code] = (str(Severity(sev)), meaning, fix)
        REGISTRY.append(Check(fn.__name__, tuple(codes), needs, fn, tuple(reads)))
        if "k" in needs:
            API_CODES.update(codes)
        if "l" in needs:
            LIVE_CODES.update(codes)
        if "v" in needs:
            RELEASE_CODES.update(codes)
        return fn

    return deco


# A check that raised (a defect of pinscope's, met on some node's data): said, never taken for a clean bill,
# and the other checks' findings kept. Registered here, not by a check: no check yields it.
CHECK_FAILED = "CHECK_FAILED"
_failed = ("info", "one of pinscope's checks failed on this node's data (a defect of pinscope's, not of the node): "
           "the codes it judges are unknown this time; the other checks ran",
           "Nothing to do on the node for this alone. Please report it, with the evidence and `pinscope snapshot --json` "
           "of the node (or `pinscope record`).")
_CODE[CHECK_FAILED] = Code(Severity(_failed[0]), _failed[1], _failed[2])
CODES[CHECK_FAILED] = _failed


def finding(code, message, evidence=(), cpus=(), pod=None, container=None, severity=None) -> Finding:
    c = _CODE[code]
    return Finding(code, Severity(severity) if severity else c.severity, message, c.fix, tuple(evidence),
                   tuple(sorted(cpus)), pod.uid if pod else None, pod.namespace if pod else None,
                   pod.name if pod else None, container)


def who(pod, cname) -> str:
    return f"{pod.namespace or '?'}/{pod.name or pod.uid}" + (f"/{cname}" if cname else "")


class Context:
    """What several checks derive from one snapshot, computed once per evaluation (lazily)."""

    def __init__(self, snap: NodeSnapshot, rates=None, api=None, live=None) -> None:
        self.snap = snap
        self.rates = rates
        self.api = api  # collectors.kube.ApiWindow: the API's last two rounds for this node, or None
        self.live = live  # collectors.assemble.live.LiveWindow: kubelet's PodResources, last two rounds, or None
        self.k = snap.kubelet
        self.st = snap.state
        self.topo = snap.topology

    @property
    def kubelet_version(self) -> str | None:
        """kubelet's release as the API said it (the Node's status.nodeInfo.kubeletVersion), else None."""
        return self.api.now.kubelet_version if self.api is not None else None

    @cached_property
    def sf(self) -> str:
        return self.snap.state_file or f"{self.k.root_dir}/cpu_manager_state"

    @cached_property
    def roles(self) -> dict:
        return {r.id: r for r in self.snap.roles}

    @cached_property
    def exclusive(self) -> set[int]:
        return {c for c, r in self.roles.items() if r.role == Role.EXCLUSIVE}

    @cached_property
    def owned(self) -> dict[tuple[str, str | None], frozenset[int]]:
        """(pod uid, container) -> the CPUs the report's roles make exclusive to it (kubelet's assignment,
        or inferred from the cgroups when that was not read)."""
        out: dict[tuple[str, str | None], set[int]] = {}
        for r in self.snap.roles:
            for o in r.owners:
                out.setdefault((o.pod_uid, o.container), set()).add(r.id)
        return {k: frozenset(v) for k, v in out.items()}

    def exclusive_of(self, pod, container) -> frozenset[int] | None:
        """A container's exclusive CPUs as the report shows them: kubelet's assignment, else (roles
        inferred from the cgroups) the CPUs the roles give it; None when it has none."""
        if container.assigned is not None:
            return container.assigned
        if self.snap.roles_from != "cgroups":
            return None
        return self.owned.get((pod.uid, container.name)) or None

    @cached_property
    def pods_by_uid(self) -> dict:
        return {p.uid: p for p in self.snap.pods}

    @cached_property
    def pid_home(self) -> dict[int, tuple[Pod, str | None]]:
        """pid -> (its pod, its container's name or None: the sandbox, CRI-O's conmon), for every pid of the
        pods' cgroup.procs."""
        out: dict[int, tuple[Pod, str | None]] = {}
        for p in self.snap.pods:
            for pid in p.pids:
                out[pid] = (p, None)
            for c in p.containers:
                for pid in c.pids:
                    out[pid] = (p, c.name)
        return out

    @cached_property
    def cpu_node(self) -> dict:
        return {c.id: c.numa_node for c in self.topo.cpus}

    @property
    def policy(self) -> str | None:
        return self.st.policy if self.st is not None else self.k.cpu_manager_policy

    @cached_property
    def unread(self) -> frozenset[str]:
        """The INPUTS this user could not read. Under policy none kubelet assigns nothing: the assignment is
        known (empty) without its file."""
        unread = {p.source for p in self.snap.problems if p.kind == UNREAD}
        out = set()
        if self.k.config_path in unread and self.k.cpu_manager_policy is None:
            out.add("policy")
        if self.sf in unread and self.policy != "none":
            out.add("assignment")
        # a directory this user may not list (its source ends in "/"): what it holds is unknown, not absent
        dirs = [s for s in unread if s.endswith("/")]
        if any(d.startswith("/sys/fs/cgroup/") for d in dirs):
            out |= {"cgroups", "pods"}
        elif dirs:
            out.add("pods")
        return frozenset(out)

    @cached_property
    def not_run(self) -> dict[str, tuple[str, ...]]:
        """input -> the codes not run for want of it."""
        out: dict[str, tuple[str, ...]] = {}
        for c in REGISTRY:
            for r in c.reads:
                if r in self.unread:
                    out[r] = out.get(r, ()) + tuple(x for x in c.codes if x not in out.get(r, ()))
                    break
        return out

    def pod_name(self, uid: str) -> str:
        p = self.pods_by_uid.get(uid)
        return (p.name if p else None) or uid[:8]


def evaluate(snap: NodeSnapshot, rates=None) -> list[Finding]:
    """Every registered check on the node's own files over one snapshot, worst first (a stable order: code,
    CPUs, pod, container). The checks on the Kubernetes API's answer are evaluate_api's, those on kubelet's
    live view evaluate_live's."""
    return _run(Context(snap, rates), [c for c in REGISTRY if "k" not in c.needs and "l" not in c.needs])


def evaluate_api(snap: NodeSnapshot, rates, api) -> list[Finding]:
    """The checks on what the Kubernetes API said of the node (an ApiWindow), and again those judged by kubelet's
    release (which the API says). No answer: none of the first is run, and none is faked."""
    return _run(Context(snap, rates, api), [c for c in REGISTRY if ("k" in c.needs and api is not None)
                                            or "v" in c.needs])


def evaluate_live(snap: NodeSnapshot, rates, live) -> list[Finding]:
    """The checks on kubelet's live view (a LiveWindow). Not asked: none is run."""
    if live is None:
        return []
    return _run(Context(snap, rates, live=live), [c for c in REGISTRY if "l" in c.needs])


def _run(ctx: Context, checks: list[Check]) -> list[Finding]:
    out: list[Finding] = []
    for c in checks:
        if not ctx.unread.intersection(c.reads):
            try:
                for f in c.fn(ctx):  # what it found before it failed stands: each finding has its evidence
                    out.append(f)
            except Exception as err:  # noqa: BLE001 -- one check's defect must not take the report with it
                out.append(_check_failed(c, err))
    return ordered(out)


def _check_failed(c: Check, err: Exception) -> Finding:
    """CHECK_FAILED for check `c`: which codes are unknown, and the error in one line (where in pinscope)."""
    tb = err.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    where = f"{tb.tb_frame.f_code.co_filename.rpartition('/')[2]}:{tb.tb_lineno}" if tb is not None else "?"
    text = " ".join(str(err).split())[:200]
    return finding(CHECK_FAILED, f"check {c.name} failed: {', '.join(c.codes)} unknown this time",
                   [f"{type(err).__name__}: {text} (at {where})"])


def ordered(findings) -> list[Finding]:
    """Worst first, then a stable order: code, CPUs, pod, container."""
    return sorted(findings, key=lambda f: (f.severity.rank, f.code, f.cpus, f.pod or "", f.container or ""))


def worst(findings) -> Severity | None:
    best = None
    for f in findings:
        if best is None or f.severity.rank < best.rank:
            best = f.severity
    return best
