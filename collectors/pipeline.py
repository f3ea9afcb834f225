"""One pipeline, one report: frame -> NodeSnapshot -> Rates -> findings -> NodeReport.

Every frontend reads NodeReports and computes nothing of its own: the live TUI, record/replay, `snapshot`,
`check`, the exporter and any web view. A `Pipeline` holds what one node's frames carry between ticks
(the static frame, the names frame, deeper frames from earlier ticks) and the previous snapshot for the
rates; `feed(frame)` returns the report of that tick.
"""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

from .errors import ProbeFailed, Problem
from .findings import Finding, evaluate, evaluate_api, evaluate_live, ordered, worst
from .findings.base import API_CODES, LIVE_CODES, RELEASE_CODES
from .frames import Frame, FrameStore
from .model import NodeSnapshot, Severity
from .assemble import Assembler
from .assemble.live import LiveRound, LiveWindow, compare, named
from .kube import ApiWindow
from .rates import Rates, compute


@dataclass(frozen=True, slots=True)
class Timings:
    """Seconds. `read` is the request's round trip (None for a recorded frame); `build` the client's
    parse + assemble + rates + findings; `probe_cpu_total` the CPU the probe (its shell and its awk) used on
    the node since it started, as it says at the end of each frame (`probe_cpu_source`: "schedstat", ns on
    CPU, or "stat", clock ticks of 10 ms), None when it did not say; `probe_cpu` the part of it since the
    previous frame of the same probe. A running task's own counters are brought up to date when it sleeps,
    so the total lags by at most the frame being read: exact over many frames, coarse for one."""

    read: float | None = None
    build: float = 0.0
    probe_cpu: float | None = None
    probe_cpu_total: float | None = None
    probe_cpu_source: str | None = None


@dataclass(frozen=True, slots=True)
class NodeReport:
    """Everything pinscope knows about one node at one tick. Frozen: frontends only read it."""

    target: str  # how the node is reached (address, `local`, node/NAME)
    name: str  # what the user calls it (inventory or API name; recordings are keyed by it)
    t: float  # wall clock (epoch seconds) when the frame arrived, or when it was recorded
    snapshot: NodeSnapshot
    rates: Rates | None
    findings: tuple[Finding, ...]
    timings: Timings = Timings()
    api: ApiWindow | None = None  # what the Kubernetes API said of the node (--kube, node/NAME), else None
    live: LiveWindow | None = None  # kubelet's PodResources API, this tick's round and the one before; None: not asked

    def with_api(self, api: ApiWindow | None) -> NodeReport:
        """This report with what the API said of the node: its findings are the node's own and those of the
        API checks over `api` (none without an answer); those judged by kubelet's release follow the one it says."""
        if api is None and self.api is None:
            return self
        own = [f for f in self.findings if f.code not in API_CODES and f.code not in RELEASE_CODES]
        found = own + evaluate_api(self.snapshot, self.rates, api)
        return dataclasses.replace(self, findings=tuple(ordered(found)), api=api)

    def with_live(self, live: LiveWindow | None) -> NodeReport:
        """This report with kubelet's live view: its findings are the node's own, the API checks' and those of
        the checks over `live` (none when kubelet was not asked)."""
        own = [f for f in self.findings if f.code not in LIVE_CODES]
        return dataclasses.replace(self, findings=tuple(ordered(own + evaluate_live(self.snapshot, self.rates, live))),
                                   live=live)

    @property
    def node(self) -> str:
        """The node's own hostname, as it reported it."""
        return self.snapshot.node

    @property
    def problems(self) -> tuple[Problem, ...]:
        """What could not be read on the node (each a source and a message)."""
        return self.snapshot.problems

    @property
    def worst(self) -> Severity | None:
        return worst(self.findings)

    def to_json(self, api_pods: dict | None = None) -> dict:
        """The `snapshot --json` object; with an API answer, pods enriched from it and its `kubernetes` object
        (each part that failed also in `errors`, source "kubernetes")."""
        from .jsonout import api_json, enrich, to_json

        o = to_json(self.snapshot, self.rates, self.findings)
        if self.live is not None:
            o["podresources"] = self.live.to_json()
        if api_pods is None and self.api is not None:
            api_pods = self.api.now.pods
        if api_pods:
            enrich(o, api_pods)
        if self.api is not None:
            o["kubernetes"] = api_json(self.api)
            a = self.api.now
            o["errors"].extend({"source": "kubernetes", "message": f"{p}: node-local names only" if p == a.pods_error else p}
                               for p in a.problems)
        return o


def unread_reason(report: NodeReport) -> str | None:
    """Why a report that arrived says nothing of the node, else None. A Linux node always has a CPU
    online: with none known, its /sys (and /proc) were not there to read (--root removed, a mount lost,
    no permission). Such a report is no reading of the node: `snapshot`/`check` say the node could not be
    read, the exporter reads 0 (zero CPUs under policy "none" would resolve every alert instead of firing
    the unreadable one)."""
    snap = report.snapshot
    if snap.topology.online or snap.topology.cpus or snap.roles:
        return None
    said = [f"{p.source}: {p.message}" for p in snap.problems
            if p.source in ("probe", "/sys/devices/system/cpu/online", "/proc/stat") and "kubelet" not in p.message]
    return "nothing of the node could be read (no CPU)" + (": " + "; ".join(said) if said else "")


class Pipeline:
    """frames -> NodeReports for one node. Keeps the static, names and deeper frames between ticks, and the
    previous snapshot for rates (reset it with `reset()` after a reconnect: rates never span a gap)."""

    def __init__(self, target: str, name: str | None = None) -> None:
        self.target = target
        self.name = name or target
        self.frames = FrameStore()  # static, names and deeper frames between ticks
        self.assembler = Assembler(target)  # the assembly's stages, kept between ticks
        self.want_names = True
        self.want_static = False  # a file said unchanged could not be resolved: read everything whole
        self.unnamed_at_names: set = set()
        self.unallocated_at_static: set = set()
        self.ticks = 0
        self.topology_changed = False
        self.prev: NodeSnapshot | None = None
        self.prev_t: float | None = None
        self.prev_rates: Rates | None = None  # counters read at a slower cadence keep their last rate
        self.probe_cpu: float | None = None  # the probe's CPU total at the previous frame (this connection)
        self.live_prev: LiveRound | None = None  # kubelet's live view at the previous asking (this connection)

    def reset(self) -> None:
        """A new connection: everything is read again, and no rate spans the gap."""
        self.frames = FrameStore()
        self.assembler = Assembler(self.target)
        self.want_names = True
        self.want_static = False
        self.unallocated_at_static = set()
        self.prev = self.prev_t = self.prev_rates = self.probe_cpu = None
        self.live_prev = None

    @property
    def static(self) -> Frame | None:
        """The last static frame (None until one came)."""
        return self.frames.static

    def ingest(self, frame: Frame) -> NodeSnapshot:
        """A frame (fresh, or from a recording) -> the node's snapshot; keeps static/names/carry state."""
        letters = frame.letters
        self.ticks += 1
        if self.static is None and "s" not in letters:
            raise ProbeFailed("a frame before any static frame")
        view = self.frames.add(frame)
        self.want_static = bool(view.tick.lost)
        snap = self.assembler.build(view)
        # a pod or container we could not name when the layout was last listed: list it again next tick
        unnamed = {(p.uid, c.id) for p in snap.pods for c in p.containers if p.name is None or c.name is None}
        if "n" in letters:
            self.unnamed_at_names = unnamed
        self.want_names = bool(unnamed - self.unnamed_at_names)
        # a Guaranteed pod that kubelet's allocation checkpoint (read on static frames) did not know when it was
        # read last: read it again next tick (does the pod have pod-level resources? GUARANTEED_NOT_PINNED asks)
        if snap.pod_level is not None:
            unknown = {p.uid for p in snap.pods if p.qos == "Guaranteed" and p.uid not in snap.pod_level}
            if "s" in letters:
                self.unallocated_at_static = unknown
            self.want_static = self.want_static or bool(unknown - self.unallocated_at_static)
        online = "/sys/devices/system/cpu/online"
        self.topology_changed = "s" not in letters and view.static.files.get(online) != frame.files.get(online)
        return snap

    def feed(self, frame: Frame, t: float | None = None, read: float | None = None,
             window_from: tuple[NodeSnapshot, float] | None = None) -> NodeReport:
        """One frame -> its NodeReport. Rates are over the previous fed frame (or over `window_from`, a
        (snapshot, monotonic time) pair, for `snapshot --samples N`)."""
        t0 = time.perf_counter()
        now = time.monotonic()
        snap = self.ingest(frame)
        prev, prev_t = window_from if window_from is not None else (self.prev, self.prev_t)
        rates = compute(prev, snap, now - prev_t if prev_t is not None else None,
                        carry=self.prev_rates if window_from is None else None) if prev is not None else None
        self.prev, self.prev_t, self.prev_rates = snap, now, rates
        findings = tuple(evaluate(snap, rates))
        return NodeReport(self.target, self.name, time.time() if t is None else t, snap, rates, findings,
                          self._timings(frame, read, time.perf_counter() - t0))

    def add_live(self, report: NodeReport, view, t: float | None = None) -> NodeReport:
        """The tick's report with kubelet's answer (a podresources.LiveView) compared with its snapshot, over
        this round and the one before. An answer that could not be had breaks the window: a disagreement
        must hold over two rounds in a row."""
        snap = report.snapshot
        now = LiveRound(view, time.monotonic() if t is None else t, compare(view, snap), report.t, named(view, snap))
        before = self.live_prev if self.live_prev is not None and not self.live_prev.view.error else None
        self.live_prev = now
        return report.with_live(LiveWindow(now, before))

    def _timings(self, frame: Frame, read: float | None, build: float) -> Timings:
        """The tick's timings, with the probe's own CPU when the frame says it ("I probe_cpu <s> <source>")."""
        total, source = _probe_cpu(frame.info.get("probe_cpu"))
        if total is None:
            return Timings(read, build)
        delta = total - self.probe_cpu if self.probe_cpu is not None and total >= self.probe_cpu else None
        self.probe_cpu = total
        return Timings(read, build, delta, total, source)


def _probe_cpu(text: str | None) -> tuple[float | None, str | None]:
    """"0.001751883 schedstat" -> (seconds, source); (None, None) for anything else."""
    secs, _, source = (text or "").partition(" ")
    try:
        value = float(secs)
    except ValueError:
        return None, None
    if not (value >= 0 and value < 1e12) or source not in ("schedstat", "stat"):  # nan, inf, garbage
        return None, None
    return value, source
