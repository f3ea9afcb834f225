"""What the core grid shows of a node, as plain data: a NodeView in, a state per CPU out.

Pure functions, no Textual (nor Rich): the grid (tui/widgets/coregrid.py) lays the cells out and paints
what it is given; what each CPU is — its role, the share its shade shows (load or kernel noise), the tag of
the pod that owns it, its mark — is worked out here once per view and shade, and tested without Pilot
(tests/tui/test_presenter.py).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import NamedTuple

from pinscope.collectors.text import display
from pinscope.tui.state import NodeView

NOISE_FULL = 0.10  # the noise shade is full at 10 % of a CPU's time in irq + softirq + steal
# a core cell shows its most telling role: exclusive > isolated > reserved > unassigned > shared > offline
ROLE_ORDER = {"exclusive": 0, "isolated": 1, "reserved": 2, "unassigned": 3, "shared": 4, "offline": 5}
# a cell's mark, the worst of its CPUs': a finding's "!" (critical, warning), then "~" (pinned, not latency-ready)
MARK_RANK = {"critical": 0, "warning": 1, "notready": 2}


class CpuState(NamedTuple):
    """What one cell of the grid shows: a CPU's, or in the "cores" density a core's (merge).
    A NamedTuple, not a frozen dataclass: one is built per CPU per tick (collectors/model.py says why)."""

    role: str = "unassigned"  # a Role's word ("exclusive", "reserved", ...)
    share: float | None = None  # what the shade shows, 0-1 (load, or noise full at NOISE_FULL); None: unknown
    tag: str | None = None  # the owning pod's tag ("A"; lower case: held by the pod as a whole); None: no pod
    mark: str | None = None  # "critical" | "warning" ("!": a finding names it) | "notready" ("~") | None


UNASSIGNED = CpuState()  # a CPU no role names


@dataclass(frozen=True, slots=True)
class GridState:
    """Everything the grid draws of one view in one shade (besides the layout, a function of the topology)."""

    cpus: Mapping[int, CpuState]  # cpu -> its state (a CPU no role names: UNASSIGNED)
    devices: Mapping[int, str]  # NUMA node -> what its subheader adds: "  devices: gpu 0000:3b:00.0→A, ..."
    stale: bool  # the node stopped answering: the last frame shown, in the stale colour, marks left out


EMPTY = GridState({}, {}, False)


def present(view: NodeView | None, shade: str = "load") -> GridState:
    """The grid's plain data for `view` (EMPTY before the node's first frame)."""
    if view is None or view.snap is None:
        return EMPTY
    return GridState(cpu_states(view, shade), numa_devices(view), stale(view))


def stale(view: NodeView | None) -> bool:
    """The last frame is shown but the node is no longer up (stale or down)."""
    return view is not None and view.state != "up" and view.snap is not None


def shares(view: NodeView, shade: str = "load") -> Mapping[int, float]:
    """cpu -> the share its shade shows: "load" (busy share) or "noise" (irq + softirq + steal share, full at
    NOISE_FULL: a few per cent of kernel time is already the jitter an exclusive CPU is for)."""
    rates = view.rates
    if rates is None:
        return {}
    if shade == "noise":
        return {c: min(1.0, n.total / NOISE_FULL) for c, n in rates.noise.items()}
    return rates.util


def cpu_states(view: NodeView, shade: str = "load") -> dict[int, CpuState]:
    """cpu -> its state, for every CPU a role names (the grid shows the others UNASSIGNED)."""
    snap = view.snap
    if snap is None:
        return {}
    share = shares(view, shade)
    marks = view.cpu_marks()
    tags = view.tags
    out: dict[int, CpuState] = {}
    # tuple.__new__ builds the same CpuState without NamedTuple's Python-level __new__: half the cost, every CPU of
    # every tick (measured at 256 CPUs: 0.26 ms against 0.41 ms, the grid's whole update being ~3 ms)
    make = tuple.__new__
    for r in snap.roles:
        tag = tags.get(r.owners[0].pod_uid, "") if r.owners else None
        if tag and r.owners[0].pod_level:  # held by the pod as a whole: its tag in lower case
            tag = tag.lower()
        out[r.id] = make(CpuState, (r.role, share.get(r.id), tag, marks.get(r.id)))
    return out


def merge(members: Iterable[int], cpus: Mapping[int, CpuState]) -> CpuState:
    """The state of a cell that stands for several CPUs (a core, in the "cores" density): the most telling role
    (ROLE_ORDER), the highest share, the tag of the first member a pod owns, the worst mark (MARK_RANK)."""
    members = tuple(members)
    if len(members) == 1:
        return cpus.get(members[0], UNASSIGNED)
    role, share, tag, mark = None, None, None, None
    for m in members:
        st = cpus.get(m, UNASSIGNED)
        if role is None or ROLE_ORDER.get(st.role, 99) < ROLE_ORDER.get(role, 99):
            role = st.role
        if st.share is not None and (share is None or st.share > share):
            share = st.share
        if tag is None:
            tag = st.tag
        if st.mark in MARK_RANK and (mark is None or MARK_RANK[st.mark] < MARK_RANK[mark]):
            mark = st.mark
    return CpuState(role or "unassigned", share, tag, mark)


def numa_devices(view: NodeView) -> dict[int, str]:
    """NUMA node -> what its subheader adds: the devices kubelet handed out there and the pod tag holding
    each (ids come from the node: made safe for the terminal, long ones cut)."""
    if view.snap is None:
        return {}
    out: dict[int, list[str]] = {}
    for p, c in view.snap.containers():
        for d in c.devices:
            if d.numa_node is not None:
                who = view.tags.get(p.uid) or display(p.name or p.uid[:8])
                dev = display(d.device if len(d.device) <= 16 else d.device[:15] + "\u2026")
                out.setdefault(d.numa_node, []).append(f"{display(d.resource.rsplit('/', 1)[-1])} {dev}\u2192{who}")
    return {n: "  devices: " + ", ".join(sorted(items)) for n, items in out.items()}


def waiting_note(view: NodeView | None) -> str:
    """What the grid says before the node's first frame: why it is down, what it waits for, or that it waits."""
    if view is not None and view.state in ("down", "connecting") and view.message:
        return display(f"{view.target}: {view.message}")  # down: why; connecting: what it waits for
    return "waiting for the first frame from " + (display(view.target) if view else "the node") + " ..."
